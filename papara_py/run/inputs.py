"""The run's inputs, stages 1, 2 and 4 of the main job: the tree and the alignment read and
checked, the reads' parsing started over the reads-file policy (`ReadsFile`: reference names
refused, a shard's slice, the extra taxa), the penalties resolved for the alphabet, the edge
profiles (built, or loaded from `papara-py prepare`), and K and the strand decision's k-mers.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np

from papara_py.cluster.prepared import open_prepared
from papara_py.cluster.shards import Shard
from papara_py.engine.strand import ReferenceKmers, mode_for
from papara_py.errors import InputError
from papara_py.io.alignment_input import match_tips, read_alignment
from papara_py.io.checksums import Digest
from papara_py.io.export_names import ReadNames, check_reference_names
from papara_py.io.read_input import iter_read_chunks
from papara_py.io.read_stream import ReadStream
from papara_py.io.reads import ReadChunk
from papara_py.io.tree_input import read_edge_tree
from papara_py.model.column_costs import ColumnCosts, column_costs
from papara_py.model.decode import posterior_tables
from papara_py.model.edge_emission import EdgeColumnCosts, edge_column_costs
from papara_py.model.fixed_point import check_fixed_point
from papara_py.model.params import PenaltyChoice, ScoringParams
from papara_py.phylo.encoding import IS_GAP, Alphabet
from papara_py.phylo.profiles import EdgeProfiles, ProfileBuilder
from papara_py.phylo.tree import EdgeTree
from papara_py.run.config import RunConfig
from papara_py.run.log import Reporter


class ReadsFile:
    """The reads the run aligns, as checked chunks (io/read_input.iter_read_chunks, for a ReadStream):
    those of the reads file, then the alignment taxa absent from the tree (gaps removed, DESIGN 9).

    A read named like a reference taxon, or that the exports would rename, is refused as its chunk
    is parsed, before its batch is scored (io/export_names.py).
    With a shard, every read is still parsed and validated (so bad input fails every shard alike)
    but only the shard's slice is kept (papara_py/cluster/shards.py). `total`: the reads of the
    file parsed so far, kept or not (all of them once the iteration ends).
    """

    def __init__(self, path: str, alignment, extra_rows: list[int], shard: Shard | None, digest: Digest) -> None:
        self.path, self.alignment, self.extra_rows, self.shard, self.digest = path, alignment, extra_rows, shard, digest
        self.total = 0

    def __iter__(self) -> Iterator[ReadChunk]:
        for chunk in chain(self._checked(), [self._extra_taxa()]):
            parsed = len(chunk.names)
            yield chunk if self.shard is None else chunk.take(self.shard.owned_among(self.total, parsed))
            self.total += parsed

    def _checked(self) -> Iterator[ReadChunk]:
        names = ReadNames(self.alignment, self.extra_rows, self.path)  # names the exports can write
        for chunk in iter_read_chunks(self.path, self.digest, self.alignment.alphabet):
            names.check(chunk.names, chunk.lines)
            yield chunk

    def _extra_taxa(self) -> ReadChunk:
        alignment = self.alignment
        extra = [alignment.rows[row][~IS_GAP[alignment.rows[row]]].tobytes() for row in self.extra_rows]
        return ReadChunk([alignment.names[row] for row in self.extra_rows], b"".join(extra),
                         np.array([len(e) for e in extra], np.int64), np.zeros(len(extra), np.int64))


@dataclass
class Inputs:
    """Stage 1, `read_inputs`: the parsed and checked tree and alignment, and the reads as they
    are parsed (a started ReadStream); each input read once and hashed as it is parsed."""

    edge_tree: EdgeTree
    alignment: object        # io.alignment_input.Alignment
    match: object            # io.alignment_input.match_tips: tip rows, extra taxa
    reads: ReadStream
    reads_file: ReadsFile
    digests: dict[str, Digest]
    params: ScoringParams    # the penalties used: as given, or the alphabet's default preset
    strand: str              # the strand mode used (engine/strand.mode_for: forward for protein)
    costs: ColumnCosts | None  # the column profile costs (model/column_costs.py; None: none)
    edge_costs: EdgeColumnCosts | None  # each edge's own, for the posterior step (model/edge_emission.py)

    @property
    def alphabet(self) -> Alphabet:
        return self.alignment.alphabet

    @property
    def n_columns(self) -> int:
        return self.alignment.rows.shape[1]

    @property
    def checksums(self) -> dict[str, str]:
        """sha256 of each input (the reads': complete once they are all parsed)."""
        return {name: digest.hexdigest() for name, digest in self.digests.items()}

    @property
    def n_reads_total(self) -> int:
        """Reads in the input (a shard keeps only its slice); final once they are all parsed."""
        return self.reads_file.total


def read_inputs(config: RunConfig, reporter: Reporter, timings: dict[str, float]) -> Inputs:
    """Stage 1: tree and alignment, validated, and the reads' parsing started (io/read_stream.py);
    every input read once and hashed as it is parsed (pipes, FIFOs and `-r -` work;
    io/checksums.py)."""
    started = time.perf_counter()
    digests = {name: Digest() for name in ("tree", "alignment", "reads")}
    edge_tree = read_edge_tree(config.tree, digests["tree"])
    alignment = read_alignment(config.alignment, digests["alignment"], config.alphabet)
    params = resolve_params(config.params, alignment.alphabet)
    strand = mode_for(config.strand, alignment.alphabet, config.alignment)
    # reads shorter than the alignment are scored: their scores must fit the 32-bit kernels
    params.check_fits_int32(alignment.rows.shape[1] - 1)
    match = match_tips(edge_tree.tip_names, alignment, config.tree)
    check_reference_names(alignment, match.extra)  # two taxa the exports would name alike
    reads_file, reads = _open_reads(config, alignment, match.extra, digests["reads"])
    timings["input"] = time.perf_counter() - started
    if match.extra:
        shown = ", ".join(alignment.names[r] for r in match.extra[:5])
        more = f" and {len(match.extra) - 5} more" if len(match.extra) > 5 else ""
        reporter.warning(f"{len(match.extra)} alignment taxa are not in the tree ({shown}{more}); "
                         f"they are aligned as extra reads, gaps removed")
    if config.alphabet == "auto" and not alignment.alphabet.stranded:
        reporter.detail(f"--alphabet auto: {config.alignment} holds {alignment.alphabet.residue_kind} data; reads "
                        f"are taken as given (no reverse strand)")
    costs = column_costs(match.tip_rows, alignment.alphabet, params.column_weight)
    edge_costs = edge_column_costs(edge_tree, match.tip_rows, alignment.alphabet, params.column_weight)
    check_posterior_fits(params, max(0 if c is None else c.largest for c in (costs, edge_costs)),
                         alignment.rows.shape[1])
    return Inputs(edge_tree, alignment, match, reads, reads_file, digests, params, strand, costs, edge_costs)


def sample_inputs(config: RunConfig, first: Inputs) -> Inputs:
    """A later sample's inputs (samples.py): the first sample's reference, this sample's reads
    (`config.reads`), their parsing started."""
    digests = {"tree": first.digests["tree"], "alignment": first.digests["alignment"], "reads": Digest()}
    reads_file, reads = _open_reads(config, first.alignment, first.match.extra, digests["reads"])
    return replace(first, reads=reads, reads_file=reads_file, digests=digests)


def _open_reads(config: RunConfig, alignment, extra_rows: list[int], digest: Digest) -> tuple[ReadsFile, ReadStream]:
    """`config.reads` as the run's ReadsFile (then the extra taxa `extra_rows`), parsing started."""
    reads_file = ReadsFile(config.reads, alignment, extra_rows, config.shard, digest)
    return reads_file, ReadStream(reads_file, alignment.alphabet, alignment.rows.shape[1]).start()


def log_inputs(config: RunConfig, reporter: Reporter, inputs: Inputs) -> None:
    """The log's record of the inputs, once the reads are all parsed (their count and sha256)."""
    for what in ("tree", "alignment", "reads"):
        reporter.record(f"input {what}: {os.path.abspath(getattr(config, what))} sha256 {inputs.checksums[what]}")
    reporter.record(f"reference: {inputs.edge_tree.n_tips} taxa, {inputs.edge_tree.n_edges} edges, "
                    f"{inputs.n_columns} columns, alphabet {inputs.alphabet.name} (--alphabet {config.alphabet}); "
                    f"{inputs.reads.rows} reads ({inputs.n_reads_total} in the input); penalties {inputs.params} "
                    f"(preset {inputs.params.preset_name()})")
    if config.shard is not None:
        reporter.notice(f"shard {config.shard} (from {config.shard.source}): {inputs.reads.rows} of "
                        f"{inputs.n_reads_total} reads")


def resolve_params(params: ScoringParams | PenaltyChoice, alphabet: Alphabet) -> ScoringParams:
    """The penalties a run uses: `params` as given, or a PenaltyChoice resolved with the
    alphabet's default preset (DESIGN 4: protein data get the `protein` preset unless a preset is
    given)."""
    resolved = params if isinstance(params, ScoringParams) else params.resolve(alphabet.default_preset)
    if alphabet.substitution_matrix is not None:
        return resolved
    needing = {"column_weight": "the column profile cost (weight {:g}) scores read residues"}
    on = [name for name in needing if getattr(resolved, name)]
    if not on:
        return resolved
    given = dict(params.given) if isinstance(params, PenaltyChoice) else {}
    options = [f"--{name.replace('_', '-')}" for name in on]
    if isinstance(params, PenaltyChoice) and not any(name in given for name in on):
        source, advice = f"--preset {params.preset}", f"give {' and '.join(o + ' 0' for o in options)} with it, or another preset"
    else:
        source, advice = " and ".join(options), f"leave {' and '.join(options)} out"
    what = " and ".join(needing[name].format(getattr(resolved, name)) for name in on)
    raise InputError(source, f"{what} with a substitution matrix, and {alphabet.residue_kind} data have none: "
                             f"{'they are' if len(on) > 1 else 'it is'} for protein data; {advice} for {alphabet.name}")


def check_posterior_fits(params: ScoringParams, largest_cost: int, m: int) -> None:
    """InputError unless the posterior step's fixed-point energies (model/fixed_point.py) fit
    int32 for every read the alignment takes (up to m - 1 residues) at the run's temperature,
    with column costs up to `largest_cost`."""
    if params.temperature == 0:
        return
    try:
        check_fixed_point(params.as_array(), largest_cost, m - 1, m,
                          posterior_tables(params))
    except ValueError as error:
        raise InputError("--temperature", f"{error}; or --temperature 0 (the Viterbi traceback)") from None


def edge_profiles(config: RunConfig, inputs: Inputs, timings: dict[str, float]) -> EdgeProfiles:
    """Stage 2: every edge's profile (DESIGN.md 3), built here or loaded from `papara-py prepare`."""
    started = time.perf_counter()
    profiles: EdgeProfiles = (
        open_prepared(config.profiles, inputs.edge_tree, inputs.n_columns, inputs.checksums, inputs.alphabet)
        if config.profiles else ProfileBuilder(inputs.edge_tree, inputs.match.tip_rows, inputs.alphabet))
    timings["profiles"] = time.perf_counter() - started
    return profiles


@dataclass
class Work:
    """Stage 4, `plan_work`: K and what the strand decision needs."""

    k: int                               # candidates kept per read
    kmers: ReferenceKmers | None         # for --strand auto


def plan_work(config: RunConfig, reporter: Reporter, inputs: Inputs, profiles: EdgeProfiles,
              timings: dict[str, float]) -> Work:
    """Stage 4 (while the GPUs start): K, and the reference k-mers the strand decision uses
    (each read's orientation depends only on the read and the reference, so sharded runs
    agree). How the reads are cut into batches: io/read_stream.py."""
    reporter.detail(f"{inputs.edge_tree.n_tips} taxa, {profiles.n_edges} edges, {inputs.n_columns} columns")
    k = max(1, config.candidates)
    if k > profiles.n_edges:
        reporter.notice(f"--candidates {config.candidates} is more than the tree's {profiles.n_edges} edges; "
                        f"keeping {profiles.n_edges} per read")
        k = profiles.n_edges
    started = time.perf_counter()
    kmers = ReferenceKmers(inputs.match.tip_rows) if inputs.strand == "auto" else None
    timings["strand"] = time.perf_counter() - started
    return Work(k, kmers)
