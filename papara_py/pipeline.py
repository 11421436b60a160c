"""The main job, start to finish, as named stages (`_run`): read_inputs -> choose_devices ->
edge_profiles -> plan_work -> score_trace_write (engine, traceback, HDF5) -> run_record.

Nothing waits for what it does not need. The reads are parsed on a thread of their own from the
moment the alignment is read (io/read_stream.py), and GPUs start (OpenCL context, queues) on
another while the profiles and the strand decision's k-mers are built; the first batch is scored as soon as it is parsed, while
the rest of the file is read. Reads are scored and traced in batches (input order), each batch's
rows going straight into the output file, so memory holds the compact reads, a few batches'
working arrays and the profiles of one queue's worth of edge blocks, whatever the read count.

Only the first batch's preparation and the last batch's traceback and writing stand outside the
scoring: a batch's strand decision runs on the engine's master thread while earlier batches are
scored, and its traceback and rows (with the names and sequences of its stretch of the input)
are written while later ones are. A run ends with at least MIN_BATCHES batches where the reads
allow it, so that the last batch is a small part of the whole.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import asdict, dataclass, field, replace
from itertools import chain, pairwise
from typing import NamedTuple

import numpy as np

from papara_py import __version__
from papara_py.cluster.prepared import EdgeProfiles, open_prepared
from papara_py.cluster.shards import Shard
from papara_py.engine.compile_watch import watch_compiles
from papara_py.engine.cpu import default_lane_width
from papara_py.engine.guided import GuidedOptions, GuidedSearch, SearchStats
from papara_py.engine.layout import block_count
from papara_py.engine.scheduler import Engine, EngineOptions, ReadBatch
from papara_py.errors import InputError
from papara_py.io.checksums import Digest, describe_input
from papara_py.io.inputs import iter_read_chunks, match_tips, read_alignment, read_tree
from papara_py.io.read_stream import ReadStream, Stretch
from papara_py.io.reads import STATUS_ALIGNED, STATUSES, ReadChunk, ReadSet
from papara_py.io.run_writer import RunWriter
from papara_py.pairwise.candidates import EMPTY_SCORE, Candidates, load_merges
from papara_py.pairwise.choice import load_choice, second_preferred
from papara_py.pairwise.location import load_location, relocate
from papara_py.pairwise.nearest import bonus_reads, load_nearest
from papara_py.pairwise.params import PenaltyChoice, ScoringParams
from papara_py.pairwise.paths import replace_paths, residue_columns
from papara_py.pairwise.profile_alignment import load_profile_alignment, profile_preferred
from papara_py.pairwise.reference_scorer import profile_near
from papara_py.pairwise.strand import (
    ReferenceKmers,
    StrandPlan,
    check_mode,
    mode_for,
    orient,
)
from papara_py.pairwise.traceback import align_many
from papara_py.pairwise.votes import load_votes, vote, vote_pairs
from papara_py.phylo.column_costs import kernel_costs
from papara_py.phylo.column_terms import ColumnTerms
from papara_py.phylo.encoding import IS_GAP, Alphabet
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.residues import residue_index_table
from papara_py.phylo.tree import EdgeTree
from papara_py.run_log import Reporter, RunLog
from papara_py.samples import Sample, SampleRun

# reads per GIL-free traceback call: large enough that Python overhead is noise, small enough
# that a batch spreads over every thread
TRACEBACK_SLICE = 256
#: Scored batches that may wait for their traceback or writing at once (BatchStages; at least one
#: more than the traceback threads): enough that a slow batch in either stage does not stop the
#: engine, few enough to bound the rows held.
TRACE_DEPTH = 3
#: Batches traced back at once per GPU (BatchStages); on the CPU one, which uses every thread.
GPU_TRACING_THREADS = 2
#: Batches a run is cut into at least (each at most --batch-reads), so that the traceback and
#: writing of the last batch, which nothing overlaps, is a small part of the run ...
MIN_BATCHES = 8
#: ... but no batch below this many reads, which keep a GPU launch of 40 blocks over a full device.
MIN_BATCH_READS = 2_000
#: --device auto starts no GPU for a run whose CPU scoring would take less than this: what a GPU
#: costs before its first result with warm caches (pyopencl's import, the context, the kernels from
#: the binary cache), about 1 s on the H100 host (BENCHMARKS.md, "identity and start-up").
GPU_STARTUP_SECONDS = 1.0
#: Cells a CPU worker thread scores per second, for that estimate (H100 host: 100 GCUPS on 16).
CPU_CELLS_PER_THREAD_SECOND = 6e9
#: How often CPython makes a thread that holds the GIL hand it over during a run (default 5 ms).
#: A GPU feeder whose launch ended waits for the GIL while the writer, traceback and master
#: threads run Python; 0.5 ms took the GPU's idle time in a 1M-read run from 5.2 s to 3.9-4.4 s
#: on one machine (BENCHMARKS.md, "Streaming the reads").
GIL_SWITCH_SECONDS = 0.0005

@dataclass
class RunConfig:
    """Everything the main job needs; the CLI fills it from the command line."""

    tree: str
    alignment: str
    reads: str
    output: str
    #: the penalties, or --preset and single penalties to resolve once the alphabet is known (the
    #: default preset is the alphabet's: pairwise/params.py)
    params: ScoringParams | PenaltyChoice = field(default_factory=PenaltyChoice)
    alphabet: str = "auto"  # --alphabet: auto | dna | protein (phylo/encoding.py)
    threads: int = 1
    gpus: tuple[int, ...] | None = None  # --gpus: which OpenCL GPUs (numbers of `papara-py devices`); None: all
    threads_source: str = "RunConfig.threads"  # why that many: --threads, or the CPUs the process may use
    log: str | None = None  # --log FILE: time-stamped lines of what the run did (papara_py/run_log.py)
    device: str = "cpu"
    gpu_chunk: int = 40
    gpu_profile: bool = False  # device time per GPU in the run record (OpenCL profiling events)
    candidates: int = 5
    search: str = "exhaustive"  # exhaustive | guided (papara_py/engine/guided.py)
    guided: GuidedOptions = field(default_factory=GuidedOptions)
    strand: str = "auto"  # auto | both | forward (papara_py/pairwise/strand.py; protein: forward)
    traceback: str = "auto"  # auto: on the run's GPUs where it has any (engine/gpu_trace.py) | cpu
    lanes: int | None = None
    batch_reads: int = 12_500
    quiet: bool = False
    verbose: bool = False
    command_line: str = ""
    engine_options: EngineOptions | None = None
    shard: Shard | None = None  # align only this slice of the reads (papara_py/cluster/shards.py)
    profiles: str | None = None  # edge profiles from `papara-py prepare` (papara_py/cluster/prepared.py)
    #: the reads files after `reads` (-r A B C --outdir DIR), each into a run file of its own (samples.py)
    more_samples: tuple[Sample, ...] = ()

    @property
    def samples(self) -> list[Sample]:
        return [Sample(self.reads, self.output), *self.more_samples]

    def for_sample(self, sample: Sample) -> RunConfig:
        """This configuration for one sample of the run (its reads and output)."""
        return replace(self, reads=sample.reads, output=sample.output, more_samples=())


@dataclass
class RunSummary:
    """One sample's outcome (`run` returns one per sample)."""

    output: str
    n_reads: int
    n_aligned: int
    status_counts: dict[str, int]
    timings: dict[str, float]
    gcups: float


class ReadsFile:
    """The reads the run aligns, as checked chunks (io/inputs.iter_read_chunks, for a ReadStream):
    those of the reads file, then the alignment taxa absent from the tree (gaps removed, DESIGN 9).

    A read named like a reference taxon is refused (exports would hold two rows of that name).
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
        alignment = self.alignment
        extra_names = {alignment.names[row] for row in self.extra_rows}
        reference_names = set(alignment.names)
        for chunk in iter_read_chunks(self.path, self.digest, alignment.alphabet):
            if not extra_names.isdisjoint(chunk.names):
                name = next(name for name in chunk.names if name in extra_names)
                raise InputError(alignment.path, f"taxon {name!r} is not in the tree and its name is "
                                 f"also a read name in {self.path}; rename one of them",
                                 where=f"sequence {name!r}")
            if not reference_names.isdisjoint(chunk.names):  # exports would hold two rows of that name
                q = next(q for q, name in enumerate(chunk.names) if name in reference_names)
                raise InputError(self.path, f"the read {chunk.names[q]!r} has the name of a reference taxon of "
                                 f"{alignment.path}; read names must differ from the reference's: rename it",
                                 where=f"line {chunk.lines[q]}")
            yield chunk

    def _extra_taxa(self) -> ReadChunk:
        alignment = self.alignment
        extra = [alignment.rows[row][~IS_GAP[alignment.rows[row]]].tobytes() for row in self.extra_rows]
        return ReadChunk([alignment.names[row] for row in self.extra_rows], b"".join(extra),
                         np.array([len(e) for e in extra], np.int64), np.zeros(len(extra), np.int64))


def resolve_scorers(config: RunConfig, reporter: Reporter) -> tuple[bool, list, dict[str, str]]:
    """(use_cpu, GPU consumers, GPUs that could not be used: name -> why) for --device
    auto|cpu|gpu|hybrid and --gpus."""
    if config.device == "cpu":
        return True, [], {}
    from papara_py.engine.opencl_devices import PYOPENCL_MISSING, discover_devices, opencl_installed

    if not opencl_installed():  # an optional dependency (the `gpu` extra)
        if config.device == "auto":
            reporter.detail(f"{PYOPENCL_MISSING}; running on the CPU")
            return True, [], {}
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU: {PYOPENCL_MISSING}")
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.gpu import GpuScorer

    try:
        devices = discover_devices("gpu")
    except Exception as error:  # noqa: BLE001 - a broken OpenCL installation is a missing GPU
        reporter.notice(f"OpenCL could not list the devices ({type(error).__name__}: {error})")
        devices = []
    if not devices:
        if config.device == "auto":
            reporter.detail("no OpenCL GPU found; running on the CPU")
            return True, [], {}
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU and none was found; "
                         "run `papara-py devices` to see what OpenCL reports")
    chosen = range(len(devices)) if config.gpus is None else config.gpus
    missing = [i for i in chosen if i >= len(devices)]
    if missing:
        raise InputError("--gpus", f"there is no GPU {missing[0]}: {len(devices)} usable OpenCL GPU(s), numbered "
                                   f"from 0 (`papara-py devices` lists them)")
    scorers, unusable = [], {}
    for i in chosen:
        device = devices[i]
        name = f"gpu-{i}:{device.name}"
        try:  # the context and queues: fails on a GPU that another process has filled or holds
            scorers.append(GpuChunkScorer(GpuScorer(device, profiling=config.gpu_profile), name, config.gpu_chunk))
        except Exception as error:  # noqa: BLE001 - any OpenCL fault makes this GPU unusable
            lines = str(error).strip().splitlines()
            unusable[name] = f"{type(error).__name__}: {lines[-1] if lines else ''}"
    if unusable:
        listed = "; ".join(f"{name}: {why}" for name, why in unusable.items())
        if not scorers and config.device == "gpu":
            raise InputError("--device", f"--device gpu found no usable GPU ({listed}); another process may "
                                         f"hold the device or its memory: try again later, or run with "
                                         f"--device auto or cpu")
        reporter.notice(f"{len(unusable)} GPU(s) cannot be used ({listed}); "
                        + ("running on the CPU" if not scorers else "running on the others"))
    # auto: the GPUs alone, as gpu (CPU workers start only if every GPU fails); hybrid: both
    return config.device == "hybrid" or not scorers, scorers, unusable


class Traced(NamedTuple):
    """A batch's traceback (`traceback_batch`), read by read."""

    scores: np.ndarray     # int32: the best edge's score
    starts: np.ndarray     # int32: the alignment's first column (DESIGN 5)
    cigars: list[str]
    rows: np.ndarray       # uint8 [reads, m]: the read in reference columns
    on_gpu: bool           # a GPU traced the batch back
    alignments: int        # alignments traced: a read's best edge, and more within its vote window
    voted: int             # reads whose columns the vote took from other edges than the best
    nearest: int           # reads traced back again with their nearest sequence's bonus
    relocated: int         # reads whose columns the location check took from their nearest sequence
    second: int = 0        # reads whose columns the second model's alignment gave (the choice)
    profile: int = 0       # reads whose columns the reference profile's own alignment gave (the choice)


def traceback_batch(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: Candidates,
                    builder: EdgeProfiles, params: ScoringParams, columns: ColumnTerms, threads: int,
                    tracer: Tracer | None = None) -> Traced:
    """Align each read, in its chosen orientation (`reverse`), as `trace_model` does under the
    run's model, and where `params.second_model` is on also under the second model
    (ScoringParams.second) on its candidate edges re-ranked by that model; each read then keeps
    the alignment the reference alignment's columns prefer (pairwise/choice.py), or that profile's
    own alignment where it passes pairwise/profile_alignment.py's margins (its cost under the run's
    model on the best edge `candidates` name). Scores, best edges and the counts of votes, bonuses
    and moved reads stay the run's model's.
    """
    if not params.second_model or columns.second_costs is None or not len(indices):
        return trace_model(reads, indices, reverse, candidates, builder, params, columns, threads, tracer)
    selected = reads.select_residues(indices, reverse)  # the batch's residues, for both models and the choice
    traced = trace_model(reads, indices, reverse, candidates, builder, params, columns, threads, tracer, selected)
    second, second_terms = params.second(), columns.second()
    ranked, ranking_on_gpu = _second_candidates(reads, indices, reverse, candidates, builder, second,
                                                second_terms, threads, tracer)
    other = trace_model(reads, indices, reverse, ranked, builder, second, second_terms, threads, tracer, selected)
    residues, offsets = selected
    indices_of = residue_index_table(reads.alphabet)[residues]
    first_columns = residue_columns(traced.starts, traced.cigars, offsets)
    second_columns = residue_columns(other.starts, other.cigars, offsets)
    take = second_preferred(columns.residues, indices_of, offsets, first_columns, second_columns, traced.rows,
                            reads.alphabet, threads)
    starts = np.where(take, other.starts, traced.starts).astype(np.int32)
    cigars = [b if t else a for a, b, t in zip(traced.cigars, other.cigars, take.tolist())]
    rows = np.where(take[:, None], other.rows, traced.rows)
    chosen = np.where(np.repeat(take, np.diff(offsets)), second_columns, first_columns)
    best_edges, edge_slot = np.unique(candidates.edge[:, 0], return_inverse=True)
    profiles = builder.profiles(best_edges)
    profiled, profile_columns = profile_preferred(
        columns.residues, indices_of, reads.alphabet.read_code[residues], offsets, chosen, rows, reads.alphabet,
        profiles, profile_near(profiles, columns.family), edge_slot, params, kernel_costs(columns.costs),
        candidates.score[:, 0], threads)
    starts, cigars, rows = replace_paths(starts, cigars, rows, residues, offsets, np.flatnonzero(profiled),
                                         profile_columns)
    return traced._replace(
        starts=starts, cigars=cigars, rows=rows, on_gpu=traced.on_gpu or ranking_on_gpu or other.on_gpu,
        alignments=traced.alignments + int((candidates.edge >= 0).sum()) + other.alignments,
        second=int((take & ~profiled).sum()), profile=int(profiled.sum()))


def _second_candidates(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: Candidates,
                       builder: EdgeProfiles, second: ScoringParams, columns: ColumnTerms, threads: int,
                       tracer: Tracer | None) -> tuple[Candidates, bool]:
    """Each read's candidate edges scored under the second model as its engine would score them
    (DESIGN 4's band: no band margin, bonus or votes; the traceback's score is the engine's) and
    sorted again by (score, edge): the second model's candidate lists, and whether a GPU scored."""
    ranking = replace(second, band_margin=0, nearest_bonus=0, vote_window=0)
    pair_read, pair_slot = np.nonzero(candidates.edge >= 0)
    scores, *_, on_gpu = trace_reads(reads, indices[pair_read], reverse[pair_read],
                                     candidates.edge[pair_read, pair_slot], builder, ranking, columns, threads, tracer)
    score = np.full(candidates.score.shape, EMPTY_SCORE, np.int32)
    score[pair_read, pair_slot] = scores
    order = np.lexsort((candidates.edge, score), axis=-1)
    return Candidates(np.take_along_axis(score, order, 1), np.take_along_axis(candidates.edge, order, 1)), on_gpu


def trace_model(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: Candidates,
                builder: EdgeProfiles, params: ScoringParams, columns: ColumnTerms, threads: int,
                tracer: Tracer | None = None, selected: tuple[np.ndarray, np.ndarray] | None = None) -> Traced:
    """Align each read, in its chosen orientation (`reverse`), to its best edge, or by vote over its
    candidate edges within `params.vote_window` of the best (pairwise/votes.py), with the nearest
    reference sequence's bonus where `params.nearest_bonus` is on and the read's best-edge
    alignment is near enough to one (pairwise/nearest.py), then the location check where
    `params.location_check` is on (pairwise/location.py); `columns`: the model's column terms
    (phylo/column_terms.py); `selected`: the batch's residues and offsets
    (`reads.select_residues(indices, reverse)`) where the caller has them already.

    Returns the batch's `Traced` results; CIGARs and rows describe the oriented read. Every traced
    alignment's score must equal its candidate's (the engine's), and a bonused one's may only be
    lower, by at most the bonus per residue and a gap opening between residues; with the band
    margin (DESIGN 5), whose paths may cost less than the band's best by any amount, every one may
    only be lower or equal: anything else is an internal error.
    """
    pair_read, pair_slot, group_ends = vote_pairs(candidates.score, candidates.edge, params.vote_window)
    firsts = group_ends - np.diff(group_ends, prepend=0)
    expected = candidates.score[pair_read, pair_slot]
    pair_edges = candidates.edge[pair_read, pair_slot]

    def trace(pairs: np.ndarray, bonus: tuple[np.ndarray, int] | None = None):
        return trace_reads(reads, indices[pair_read[pairs]], reverse[pair_read[pairs]], pair_edges[pairs], builder,
                           params, columns, threads, tracer, bonus)

    if params.nearest_bonus and columns.residues is not None:
        alignments, (scores, starts, cigars, rows, on_gpu), nearest = _trace_with_bonus(
            trace, reads, indices, pair_read, firsts, expected, params, columns.residues, threads)
    else:
        traced, starts, cigars, rows, on_gpu = trace(np.arange(pair_read.size))
        _check_scores(traced, expected, params)
        scores = expected.astype(np.int32)  # the engine's (a band margin's path may cost less)
        alignments, nearest = pair_read.size, 0
    voted = relocated = 0
    if len(pair_read) != len(indices) or params.location_check:
        residues, offsets = selected if selected is not None else reads.select_residues(indices, reverse)
    if len(pair_read) != len(indices):  # a read has a second edge to vote
        starts, cigars, rows, changed = vote(group_ends, starts, cigars, rows, residues, offsets)
        scores, voted = scores[firsts], int(changed.sum())
    if params.location_check and columns.sequences is not None:
        on_device = tracer.location_scores if tracer is not None and tracer.usable else None
        starts, cigars, rows, moved = relocate(starts, cigars, rows, residues, offsets, reads.alphabet,
                                               columns.residues, columns.sequences, params.location_check, threads,
                                               device_scores=on_device)
        relocated = int(moved.sum())
    return Traced(scores, starts, cigars, rows, on_gpu, alignments, voted, nearest, relocated)


def _trace_with_bonus(trace, reads: ReadSet, indices: np.ndarray, pair_read: np.ndarray, firsts: np.ndarray,
                      expected: np.ndarray, params: ScoringParams, reference: np.ndarray, threads: int):
    """`traceback_batch`'s alignments of every pair with the nearest-sequence bonus: each read's
    best edge first, which names its nearest reference rows (pairwise/nearest.bonus_reads), then in
    one more call every pair of the reads near enough to theirs with the bonus and the other pairs
    of the rest without (their tips -1). Returns (the alignments traced, a best edge traced twice
    counting twice; every pair's (scores, starts, CIGARs, rows, whether a GPU traced any), as
    trace_reads gives them; the reads given the bonus)."""
    scores, starts, cigars, rows, on_gpu = trace(firsts)
    _check_scores(scores, expected[firsts], params)
    tips = bonus_reads(rows, reads.alphabet, reference, threads)
    bonused = tips[:, 0] >= 0
    is_first = np.zeros(pair_read.size, bool)
    is_first[firsts] = True
    again = np.flatnonzero(bonused[pair_read] | ~is_first)
    all_scores, all_starts = expected.astype(np.int32), np.empty(pair_read.size, np.int32)
    all_cigars, all_rows = [""] * pair_read.size, np.empty((pair_read.size, rows.shape[1]), np.uint8)
    all_starts[firsts], all_rows[firsts] = starts, rows
    for k, cigar in zip(firsts.tolist(), cigars):
        all_cigars[k] = cigar
    if again.size:
        again_tips = tips[pair_read[again]]
        lower, starts, cigars, rows, again_on_gpu = trace(again, (again_tips, params.nearest_bonus))
        on_gpu = on_gpu or again_on_gpu
        plain = again_tips[:, 0] < 0
        _check_scores(lower[plain], expected[again][plain], params)
        # the bonus takes at most nearest_bonus off each residue and one opening off each gap between two
        lengths = np.diff(reads.offsets)[indices[pair_read[again]]]
        opening = params.gap_open + params.gap_extend
        floor = expected[again] - params.nearest_bonus * lengths - opening * (lengths - 1)
        if np.any(lower > expected[again]) or (not params.band_margin and np.any(lower < floor)):
            raise RuntimeError("internal error: a bonused traceback's score is out of its bounds")
        all_starts[again], all_rows[again] = starts, rows
        for k, cigar in zip(again.tolist(), cigars):
            all_cigars[k] = cigar
    return firsts.size + again.size, (all_scores, all_starts, all_cigars, all_rows, on_gpu), int(bonused.sum())


def _check_scores(traced: np.ndarray, expected: np.ndarray, params: ScoringParams) -> None:
    """The traced scores against the engine's: equal, or with a band margin no higher (the margin
    only adds paths, which may cost less than the band's best)."""
    if not (np.all(traced <= expected) if params.band_margin else np.array_equal(traced, expected)):
        raise RuntimeError("internal error: traceback score differs from the engine's score")


def trace_reads(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, edges: np.ndarray, builder: EdgeProfiles,
                params: ScoringParams, columns: ColumnTerms, threads: int, tracer: Tracer | None = None,
                bonus: tuple[np.ndarray, int] | None = None):
    """Reads `indices` (oriented by `reverse`) aligned to `edges` by DESIGN 5's traceback with the
    run's column terms `columns`: (scores, starts, cigars, rows, whether a GPU did it). bonus:
    each read's nearest tips [reads, k] and the amount of the nearest-sequence bonus
    (pairwise/nearest.py; the tips' rows are `columns.residues`), or None.

    With a tracer (`--traceback auto` and a GPU) the whole batch is one device call; otherwise
    slices of TRACEBACK_SLICE reads run as single GIL-free numba calls, so the threads scale.
    Both give the same results bit for bit.
    """
    unique_edges, edge_slot = np.unique(edges, return_inverse=True)
    profiles = builder.profiles(unique_edges)
    if bonus is not None:
        bonus = (columns.residues, *bonus)
    if tracer is not None and tracer.usable:
        residues, offsets = reads.select_residues(indices, reverse)
        done = tracer.align_many(reads.alphabet.read_code[residues], residues, offsets, edge_slot, profiles, params,
                                 columns.family, columns.costs, bonus=bonus)
        if done is not None:
            return (*done, True)
    pieces = [slice(a, a + TRACEBACK_SLICE) for a in range(0, len(indices), TRACEBACK_SLICE)]
    near = profile_near(profiles, columns.family)  # once for the batch's slices, which share the profiles

    def one(piece: slice):
        residues, offsets = reads.select_residues(indices[piece], reverse[piece])
        read_bonus = None if bonus is None else (bonus[0], bonus[1][piece], bonus[2])
        return align_many(reads.alphabet.read_code[residues], residues, offsets, edge_slot[piece], profiles, params,
                          near=near, costs=columns.costs, bonus=read_bonus)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(one, pieces))
    if not results:
        return (np.empty(0, np.int32), np.empty(0, np.int32), [], np.empty((0, profiles.shape[1]), np.uint8), False)
    return (np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results]),
            [cigar for r in results for cigar in r[2]], np.concatenate([r[3] for r in results]), False)


def run(config: RunConfig) -> list[RunSummary]:
    """Run the main job; raises InputError for bad input, leaves no output file on failure (with
    several samples: none but those of the samples complete before it failed, which are kept and
    named in a notice). Returns each sample's summary, in order."""
    log = RunLog(config.log)
    reporter = Reporter(config.quiet, config.verbose, log)
    reporter.record(f"papara-py {__version__}: {config.command_line or 'papara_py.pipeline.run'}")
    reporter.record(f"threads: {config.threads} ({config.threads_source})")
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, GIL_SWITCH_SECONDS))
    samples: list[SampleRun] = []
    try:
        with watch_compiles():  # a run that must compile numba's kernels says so (engine/compile_watch.py)
            return _run(config, reporter, samples)
    except BaseException as error:  # the log says how the run ended, whatever ended it
        log.write("ERROR", f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        kept = [sample.config.output for sample in samples if sample.complete]
        for sample in samples:
            sample.abandon(error)
        if kept:  # several samples: the CLI's "no output written" would not be the whole truth
            lost = len(config.samples) - len(kept)
            reporter.notice(f"kept the run file{'s' * (len(kept) > 1)} of the {len(kept)} sample"
                            f"{'s' * (len(kept) > 1)} complete before the run stopped ({', '.join(kept)}); "
                            f"the other {lost} {'were' if lost > 1 else 'was'} not written")
            error.papara_kept = kept
        raise
    finally:
        sys.setswitchinterval(switch)  # the caller's interpreter as it was (the Python API)
        log.close()


def _run(config: RunConfig, reporter: Reporter, samples: list[SampleRun]) -> list[RunSummary]:
    """The main job as its stages; `timings` collects each stage's seconds for the run record
    (the first sample's: the stages before the scoring are the run's, done once)."""
    check_mode(config.strand)
    timings: dict[str, float] = {}  # the first sample's (samples.py)
    started = time.perf_counter()
    # numba's JIT starts while the inputs are read, not on a consumer thread (pairwise/candidates.py)
    jit_loader = threading.Thread(target=_load_jit, name="papara-jit", daemon=True)
    jit_loader.start()
    inputs = read_inputs(config, reporter, timings)
    for number, sample in enumerate(config.samples, 1):  # `run` closes their reads, whatever happens
        samples.append(SampleRun(number, len(config.samples), config.for_sample(sample),
                                 timings if number == 1 else {}))
    samples[0].inputs = inputs
    starting = choose_devices(config, reporter, inputs)
    profiles = edge_profiles(config, inputs, timings)
    work = plan_work(config, reporter, inputs, profiles, timings)
    t0 = time.perf_counter()
    devices = starting.result()
    timings["devices_wait"] = time.perf_counter() - t0
    score_trace_write(config, reporter, samples, profiles, devices, work, jit_loader, started)
    return [sample.summary for sample in samples]


def _commit(sample: SampleRun, profiles: EdgeProfiles, devices: Devices, work: Work, tally: Tally,
            reporter: Reporter, run_started: float) -> None:
    """A sample's last batch written: its record, then its run file committed (writer thread)."""
    config, inputs, timings = sample.config, sample.inputs, sample.timings
    writer = sample.writer(work.k)
    writer.set_read_count(inputs.reads.rows)
    log_inputs(config, reporter, inputs)
    writer.write_run_record(run_record(config, inputs, profiles, devices, work, tally, timings)
                            | ({"sample": {"number": sample.number, "of": sample.count}} if sample.count > 1 else {}))
    timings["total"] = time.perf_counter() - run_started
    writer.write_run_record({"timings_seconds": timings})
    sample.commit()
    reporter.record(f"{sample.label}: phases (s): "
                    + ", ".join(f"{name} {seconds:.3f}" for name, seconds in timings.items())
                    + f"; {tally.cells} cells, {tally.gcups:.1f} GCUPS")
    counts = tally.status_counts
    reporter.notice(("" if sample.count == 1 else f"{sample.label}: ")
                    + f"{tally.n_alignable} of {tally.n_reads} reads aligned"
                    + "".join(f", {n} {s}" for s, n in counts.items() if s != STATUS_ALIGNED)
                    + f"; scoring {timings['scoring']:.2f} s ({tally.gcups:.1f} GCUPS); wrote {config.output}")
    sample.summary = RunSummary(config.output, tally.n_reads, tally.n_alignable, counts, dict(timings), tally.gcups)


def _load_jit() -> None:
    """Load (or compile) the numba functions every run calls, on a thread of their own while
    the inputs are read, instead of on the thread that first needs them (a GPU feeder or the
    engine's master, with the GPU waiting): the candidate merges (pairwise/candidates.py), the
    read gather (io/reads.py), the column votes (pairwise/votes.py), the nearest-sequence search
    (pairwise/nearest.py), the location check (pairwise/location.py) and the choice between two
    models' alignments and the reference profile's (pairwise/choice.py, pairwise/profile_alignment.py). A run that ends while
    numba still compiles (a stop signal, an input error) tears the interpreter down under this
    daemon thread, and numba's registries fail half-way: nothing to report then, as the run has
    said why it ended (tests/test_interrupts.py)."""
    try:
        load_merges()
        ReadSet([], np.zeros(0, np.uint8), np.zeros(1, np.int64)).select_residues(np.zeros(0, np.int64))
        load_votes()
        load_nearest()
        load_location()
        load_choice()
        load_profile_alignment()
    except Exception:
        if sys.is_finalizing() or not threading.main_thread().is_alive():
            return
        raise


@dataclass
class Inputs:
    """Stage 1, `read_inputs`: the parsed and checked tree and alignment, and the reads as they
    are parsed (a started ReadStream); each input read once and hashed as it is parsed."""

    edge_tree: EdgeTree
    alignment: object        # io.inputs.Alignment
    match: object            # io.inputs.match_tips: tip rows, extra taxa
    reads: ReadStream
    reads_file: ReadsFile
    digests: dict[str, Digest]
    params: ScoringParams    # the penalties used: as given, or the alphabet's default preset
    strand: str              # the strand mode used (pairwise/strand.mode_for: forward for protein)
    columns: ColumnTerms     # the column terms: family residues, column profile costs (phylo/column_terms.py)

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
    tree = read_tree(config.tree, digests["tree"])
    alignment = read_alignment(config.alignment, digests["alignment"], config.alphabet)
    params = resolve_params(config.params, alignment.alphabet)
    strand = mode_for(config.strand, alignment.alphabet, config.alignment)
    # reads shorter than the alignment are scored: their scores must fit the 32-bit kernels
    params.check_fits_int32(alignment.rows.shape[1] - 1)
    if params.second_model:  # its doubled penalties too
        params.second().check_fits_int32(alignment.rows.shape[1] - 1, "--mismatch/--cgap (doubled by --second-model)")
    edge_tree = EdgeTree.from_dendropy(tree)
    match = match_tips(edge_tree.tip_names, alignment, config.tree)
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
    columns = ColumnTerms.of(match.tip_rows, alignment.alphabet, params.column_weight, params.nearest_bonus > 0,
                             params.location_check > 0, params.second_model)
    return Inputs(edge_tree, alignment, match, reads, reads_file, digests, params, strand, columns)


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
    needing = {"column_weight": "the column profile cost (weight {:g}) scores read residues",
               "location_check": "the location check ({}%) aligns reads to the reference sequences",
               "second_model": "the second model (column weight {:g}) scores read residues"}
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


def edge_profiles(config: RunConfig, inputs: Inputs, timings: dict[str, float]) -> EdgeProfiles:
    """Stage 2: every edge's profile (DESIGN.md 3), built here or loaded from `papara-py prepare`."""
    started = time.perf_counter()
    profiles: EdgeProfiles = (
        open_prepared(config.profiles, inputs.edge_tree, inputs.n_columns, inputs.checksums, inputs.alphabet)
        if config.profiles else ProfileBuilder(inputs.edge_tree, inputs.match.tip_rows, inputs.alphabet))
    timings["profiles"] = time.perf_counter() - started
    return profiles


@dataclass
class Devices:
    """Stage 3, `choose_devices`: who scores, and the engine's shape."""

    use_cpu: bool
    gpu_scorers: list
    width: int               # lanes (edges per block)
    options: EngineOptions
    tracer: Tracer | None    # the traceback's GPU (--traceback auto with a GPU), or None: the CPU's
    choice: str = ""         # why, where --device auto decided against the GPU
    unusable: dict[str, str] = field(default_factory=dict)  # GPUs whose start failed: name -> why


def choose_devices(config: RunConfig, reporter: Reporter, inputs: Inputs) -> Future:
    """Stage 3, started: CPU workers and GPUs for --device, --gpus and -j; the Future's result
    is the Devices. GPUs start (OpenCL context, queues) on a thread of their own, while the
    profiles are built. With --device auto, a run of one sample whose CPU scoring is estimated below
    GPU_STARTUP_SECONDS stays on the CPU (the GPU would not repay its start-up), and the run
    record says so: the estimate waits for the reads parsed to reach that much work or end."""
    choice = ""
    if config.device == "auto":
        cells_per_residue = inputs.edge_tree.n_edges * inputs.n_columns
        enough = GPU_STARTUP_SECONDS * max(1, config.threads) * CPU_CELLS_PER_THREAD_SECOND
        residues, ended = inputs.reads.wait_for_residues(-(-int(enough) // cells_per_residue))
        cells = residues * cells_per_residue
        estimate = cells / (max(1, config.threads) * CPU_CELLS_PER_THREAD_SECOND)
        if ended and not config.more_samples and estimate < GPU_STARTUP_SECONDS:
            choice = (f"cpu: about {estimate:.2f} s of CPU scoring expected ({cells} cells on {config.threads} "
                      f"threads), less than a GPU's start-up (about {GPU_STARTUP_SECONDS:g} s)")
            reporter.detail(f"--device auto: {choice}")

    def start() -> Devices:
        use_cpu, gpu_scorers, unusable = (True, [], {}) if choice else resolve_scorers(config, reporter)
        reporter.record(f"device {config.device}: " + ", ".join(
            ([f"{max(1, config.threads - len(gpu_scorers))} CPU workers"] if use_cpu else [])
            + [scorer.name for scorer in gpu_scorers]))
        # each GPU keeps a core for its feeder threads (the paper's hybrid: 3 CPU workers + 1 GPU
        # thread on 4 cores); gpu-only runs start CPU workers only if every GPU fails
        options = config.engine_options or EngineOptions(cpu_workers=max(1, config.threads - len(gpu_scorers)))
        tracer = (Tracer([scorer.gpu.device for scorer in gpu_scorers], reporter)
                  if gpu_scorers and config.traceback == "auto" else None)
        width = config.lanes or default_lane_width()
        reporter.detail(f"{width} lanes, device {config.device}")
        return Devices(use_cpu, gpu_scorers, width, options, tracer, choice, unusable)

    if config.device == "cpu" or choice:
        done: Future = Future()
        done.set_result(start())
        return done
    starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="papara-gpu-start")
    try:
        return starter.submit(start)
    finally:
        starter.shutdown(wait=False)  # the thread ends when the GPUs are started


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


@dataclass
class Tally:
    """Stage 5, `score_trace_write`: what the scoring did for one sample, for its run record."""

    n_reads: int                   # rows of the output (the reads kept: a shard's slice)
    n_alignable: int
    status_counts: dict[str, int]
    cells: int
    gcups: float
    strand_counts: dict[str, int]
    consumers: dict[str, dict]     # the engine's consumers, over the run so far
    search: dict                   # the search's identity (mode, and the guided search's settings)
    edges_scored: dict[str, float]  # share of the edges each scored read met: mean, min, max
    traceback: dict                # where the batches were traced back: device, batches per device


def score_trace_write(config: RunConfig, reporter: Reporter, samples: list[SampleRun], profiles: EdgeProfiles,
                      devices: Devices, work: Work, jit_loader: threading.Thread, run_started: float) -> None:
    """Stage 5: stretches of the input as the reads are parsed (io/read_stream.py), each one's
    alignable reads a batch through the engine (strand decision on its master thread), then each
    finished batch traced back on its best edge and written, with its stretch's rows, while later
    batches are scored. Several samples go through one engine one after the other (samples.py),
    each committed after its last batch is written (on the writer thread)."""
    m, tracer = samples[0].inputs.n_columns, devices.tracer
    held: dict[int, tuple[SampleRun, Stretch, StrandPlan]] = {}  # batches made and not yet traced back
    deferred: list[BaseException] = []  # bad reads in a sample: raised once the samples before it are complete
    guided = config.search == "guided"
    blocks_per_batch = None if guided else block_count(profiles.n_edges, devices.width)
    with reporter.bar(None, "block", "scoring") as bar:
        scored = 0
        engine_started = time.perf_counter()

        def progress(blocks: int, block_cells: int) -> None:
            nonlocal scored
            scored += block_cells
            bar.update(blocks)
            elapsed = max(time.perf_counter() - engine_started, 1e-9)
            bar.set_postfix_str(f"{scored / elapsed / 1e9:.1f} GCUPS", refresh=False)

        def open_next(number: int) -> None:
            """The reads of the sample after samples[number] opened (their parsing started)."""
            if number + 1 < len(samples) and samples[number + 1].inputs is None:
                samples[number + 1].inputs = sample_inputs(samples[number + 1].config, samples[number].inputs)

        def batches() -> Iterator[ReadBatch]:
            """Each sample's stretches' alignable reads in their orientations (on the engine's
            master thread); the next sample's reads opened once the previous one's are parsed."""
            index = earlier = 0  # batches made; stretches of the samples before this one
            for number, sample in enumerate(samples):
                stretches = sample.inputs.reads.stretches(config.batch_reads, MIN_BATCHES, MIN_BATCH_READS)
                made = 0
                while True:
                    try:  # the first cut waits for enough reads (or all of them) to be parsed
                        stretch = next(stretches, None)
                    except Exception as error:  # noqa: BLE001 - bad reads: the samples before this one are finished
                        sample.failed = True
                        deferred.append(error)
                        return
                    if stretch is None:
                        break
                    made += 1
                    if sample.inputs.reads.ended:
                        open_next(number)
                    if not len(stretch.alignable):  # no read to score: the input ended in this stretch
                        write(sample, stretch)
                        continue
                    started = time.perf_counter()
                    plan = StrandPlan.for_batch(stretch.alignable, orient(sample.inputs.strand, stretch.reads,
                                                                          stretch.alignable, work.kmers))
                    held[index] = sample, stretch, plan
                    sample.timings["strand"] += time.perf_counter() - started
                    if blocks_per_batch is not None and number + 1 == len(samples) \
                            and sample.inputs.reads.stretch_count is not None:
                        bar.total = blocks_per_batch * (earlier + sample.inputs.reads.stretch_count)
                    if not sample.entered:
                        sample.first_batch_entering(search)
                    yield ReadBatch(*stretch.reads.select(plan.reads, plan.reverse))
                    index += 1
                if made == 0:  # no reads at all
                    finish(sample)
                earlier += made
                open_next(number)

        t0 = time.perf_counter()
        jit_loader.join()  # left to wait only when the inputs were read in less time
        samples[0].timings["jit_wait"] = time.perf_counter() - t0

        def new_engine(k: int) -> Engine:
            return Engine(profiles.profiles, profiles.n_edges, m, devices.width, samples[0].inputs.params, k,
                          devices.use_cpu, devices.gpu_scorers, devices.options, progress,
                          columns=samples[0].inputs.columns)

        search = GuidedSearch(samples[0].inputs.edge_tree, new_engine, m, work.k, config.guided) if guided else None
        engine = search or new_engine(work.k)
        stats = search.stats if search else engine

        def write(sample: SampleRun, stretch: Stretch, *traced) -> None:
            """One stretch's rows and its traced batch (`trace`'s results; none where it has no read
            to align) into the sample's run file (on the writer thread, in order), and the file
            committed after the sample's last stretch."""
            if sample.failed:
                return
            t0 = time.perf_counter()
            writer = sample.writer(work.k)
            reverse, candidates, scores, starts, cigars, rows = traced or (None,) * 6
            _write_stretch(writer, stretch, config.batch_reads, reverse, cigars)
            if traced:
                _write_batch(writer, stretch.first + stretch.alignable, candidates, scores, starts, rows)
            else:
                sample.statuses += np.bincount(stretch.statuses, minlength=len(STATUSES))
            sample.timings["output"] += time.perf_counter() - t0
            sample.written += 1
            reporter.record(f"{sample.label}, batch {sample.written}: rows {stretch.first + 1}-{stretch.end}, "
                            f"{len(stretch.alignable)} reads aligned, {time.perf_counter() - run_started:.2f} s "
                            f"into the run")
            if sample.all_stretches_made(sample.written):
                finish(sample)

        def finish(sample: SampleRun) -> None:
            """The sample's record and its run file committed (samples.py)."""
            tally = _sample_tally(sample, stats, search, tracer, several=len(samples) > 1, reporter=reporter)
            _commit(sample, profiles, devices, work, tally, reporter, run_started)

        def trace(sample: SampleRun, stretch: Stretch, reverse: np.ndarray, candidates: Candidates):
            """One scored batch aligned to its best edges, or by vote within the vote window (on a
            traceback thread)."""
            t0 = time.perf_counter()
            done = traceback_batch(stretch.reads, stretch.alignable, reverse, candidates, profiles,
                                   sample.inputs.params, sample.inputs.columns, config.threads,
                                   tracer)
            with sample.lock:  # summed over batches, which may overlap (BatchStages)
                sample.timings["traceback"] += time.perf_counter() - t0
                sample.traced["gpu" if done.on_gpu else "cpu"] += 1
                sample.votes["alignments"] += done.alignments
                sample.votes["voted"] += done.voted
                sample.votes["nearest"] += done.nearest
                sample.votes["relocated"] += done.relocated
                sample.votes["second"] += done.second
                sample.votes["profile"] += done.profile
            return sample, stretch, reverse, candidates, done.scores, done.starts, done.cigars, done.rows

        # batches arrive as they finish and go on to the traceback thread, then the writer thread
        # (BatchStages): the engine's batch slot is handed back at once, so neither stage's time
        # (a GPU traceback waits for the scoring launch in progress) keeps the GPU from its next batch
        stages = BatchStages(trace, write, TRACE_DEPTH, tracer.threads if tracer else 1)
        failed = True
        try:
            with closing(engine.run(batches())) as finished:
                for index, candidates in finished:
                    sample, stretch, plan = held.pop(index)
                    started = engine.batch_started.pop(index)  # noted at its first take (engine's)
                    if sample.failed:  # its reads turned out bad further on: it is not written
                        continue
                    reverse, candidates = plan.pick(candidates)
                    sample.count_batch(stretch, plan, reverse, 0 if search else profiles.n_edges * m)
                    sample.batch_scored(started)
                    if sample.all_stretches_made(sample.scored):  # its last batch: its scoring span
                        sample.last_batch_scored(time.perf_counter(), stats.scoring_seconds, search,
                                                 profiles.n_edges)
                    stages.submit(sample, stretch, reverse, candidates)
            stages.drain()
            failed = False
        finally:
            stages.close(failed)
    if deferred:
        raise deferred[0]


def _sample_tally(sample: SampleRun, stats: Engine | SearchStats, search: GuidedSearch | None,
                  tracer: Tracer | None, several: bool, reporter: Reporter) -> Tally:
    """A sample's Tally once its last batch is written, and its scoring timings (`stats`: the
    engine's, or the guided search's, consumers and times; `tracer`: the GPU traceback or None)."""
    timings = sample.timings
    timings["scoring"] = sample.own_scoring
    if several:
        timings["run_scoring"] = sample.run_scoring
    timings["build_blocks"] = stats.build_seconds
    timings["reads"] = sample.inputs.reads.read_seconds
    timings["reads_wait"] = sample.inputs.reads.wait_seconds
    if sample.inputs.params.vote_window:
        reporter.detail(f"{sample.label}: vote window {sample.inputs.params.vote_window}: "
                        f"{sample.votes['alignments']} alignments traced back for {sample.n_alignable} reads, "
                        f"{sample.votes['voted']} reads' columns changed by the vote")
    if sample.inputs.params.nearest_bonus:
        reporter.detail(f"{sample.label}: nearest bonus {sample.inputs.params.nearest_bonus}: {sample.votes['nearest']} "
                        f"of {sample.n_alignable} reads traced back again towards their nearest reference sequences")
    if sample.inputs.params.location_check:
        reporter.detail(f"{sample.label}: location check {sample.inputs.params.location_check}%: "
                        f"{sample.votes['relocated']} of {sample.n_alignable} reads moved to their nearest reference "
                        f"sequence's columns")
    if sample.inputs.params.second_model:
        reporter.detail(f"{sample.label}: second model (column weight {sample.inputs.params.second_model:g}): "
                        f"{sample.votes['second']} of {sample.n_alignable} reads took its alignment, "
                        f"{sample.votes['profile']} the reference profile's own")
    reporter.detail(f"{sample.label}: --strand {sample.inputs.strand}: {sample.strand_counts['scored_both']} "
                    f"of {sample.n_alignable} reads scored in both orientations ({timings['strand']:.3f} s)")
    if search:
        reporter.detail(f"--search guided: {search.clusters.n_clusters} clusters, {search.stats.rounds} "
                        f"rounds, {sample.edges_scored['mean']:.2%} of the edges per read on average")
    return Tally(
        n_reads=sample.inputs.reads.rows, n_alignable=sample.n_alignable, status_counts=sample.status_counts,
        cells=sample.cells, gcups=sample.cells / timings["scoring"] / 1e9 if timings["scoring"] > 0 else 0.0,
        strand_counts=sample.strand_counts, search=search.identity() if search else {"mode": "exhaustive"},
        edges_scored=sample.edges_scored,
        traceback={"device": tracer.describe() if tracer else "cpu", "batches": dict(sample.traced),
                   **sample.votes},
        consumers={consumer.name: {"blocks": consumer.blocks, "edges": consumer.edges,
                                   "cells": consumer.cells, "calls": consumer.calls,
                                   "busy_seconds": consumer.busy_seconds,
                                   **({"error": consumer.error} if consumer.error else {}),
                                   **({"retries": consumer.retries} if consumer.retries else {}),
                                   **({"faults": consumer.faults} if consumer.faults else {})}
                   for consumer in stats.consumers})


class BatchStages:
    """The two stages after scoring: traceback (`tracing_threads` batches at once: a GPU traceback
    mostly waits for the device to finish the scoring launch in progress, so with two threads one
    batch's wait overlaps the next's), then writing, one thread, batch after batch in order.
    `submit` returns at once unless `depth` batches (at least one more than the traceback
    threads, so that none of them idles) are already between the two (which bounds the memory
    held: each holds its rows); the first error of either stage is raised by the next
    `submit` or by `drain`. `close(failed=True)` drops the batches not yet started (an
    interrupted run writes nothing more)."""

    def __init__(self, trace, write, depth: int, tracing_threads: int = 1) -> None:
        self._trace, self._write, self._depth = trace, write, max(depth, tracing_threads + 1)
        self._tracing = ThreadPoolExecutor(max_workers=tracing_threads, thread_name_prefix="papara-traceback")
        self._writing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="papara-writer")
        self._pending: deque[Future] = deque()

    def submit(self, *batch) -> None:
        traced = self._tracing.submit(self._trace, *batch)
        self._pending.append(self._writing.submit(lambda: self._write(*traced.result())))
        while self._pending and (len(self._pending) > self._depth or self._pending[0].done()):
            self._pending.popleft().result()

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self, failed: bool) -> None:
        """Wait for the stages' threads; with `failed`, drop the batches not yet started."""
        for executor in (self._tracing, self._writing):
            executor.shutdown(wait=True, cancel_futures=failed)


class Tracer:
    """`--traceback auto` with GPUs: each batch traced back on one of the run's GPUs
    (engine/gpu_trace.py), the one with the fewest batches in hand (of those, the one given the
    fewest so far). A batch's traceback mostly waits for the scoring launches queued before it on
    its GPU; on the first GPU alone, two GPUs' batches kept its threads so busy that the engine
    waited for them (BENCHMARKS.md, "Two GPUs after the streaming work").

    A batch the device cannot take (scores beyond its int range) is traced back on the CPU; a
    device fault takes that GPU out of the traceback for the rest of the run, with a notice (the
    CPU takes over when none is left). Either way the results are the same as the CPU's."""

    def __init__(self, devices: list, reporter: Reporter) -> None:
        from papara_py.engine.gpu_trace import GpuTracer

        self.gpus = [GpuTracer(device) for device in devices]
        self.reporter = reporter
        self._in_hand = [0] * len(self.gpus)
        self._given = [0] * len(self.gpus)
        self._live = [True] * len(self.gpus)
        self._lock = threading.Lock()  # batches are traced back on several threads (BatchStages)

    @property
    def usable(self) -> bool:
        return any(self._live)

    @property
    def threads(self) -> int:
        """Traceback threads the run needs: GPU_TRACING_THREADS per GPU (one batch's wait for the
        device overlaps the next's)."""
        return GPU_TRACING_THREADS * len(self.gpus)

    def describe(self) -> str:
        """The traceback's devices for the run record: the GPUs' names."""
        return ", ".join(gpu.device.name for gpu in self.gpus)

    def align_many(self, *args, **options):
        """GpuTracer.align_many on the least busy live GPU, or None where the CPU must do it."""
        return self._on_a_gpu("align_many", "traceback", "tracing back", *args, **options)

    def location_scores(self, *args):
        """GpuTracer.location_scores (the location check's scoring pass) on the least busy live
        GPU, or None where the CPU must do it (pairwise/location.relocate's `device_scores`)."""
        return self._on_a_gpu("location_scores", "location check", "checking", *args)

    def _on_a_gpu(self, method: str, what: str, doing: str, *args, **options):
        """GpuTracer's `method` on the least busy live GPU, or None where the CPU must do it: no
        GPU left, a batch the device cannot take (ValueError), or a device fault, which takes that
        GPU out for the rest of the run with a notice."""
        with self._lock:
            live = [i for i, alive in enumerate(self._live) if alive]
            if not live:
                return None
            chosen = min(live, key=lambda i: (self._in_hand[i], self._given[i]))
            self._in_hand[chosen] += 1
            self._given[chosen] += 1
        try:
            done = getattr(self.gpus[chosen], method)(*args, **options)
        except ValueError as error:
            self.reporter.detail(f"{what} of a batch on the CPU: {error}")
            done = None
        except Exception as error:  # noqa: BLE001 - any OpenCL fault: the CPU gives the same results
            with self._lock:
                self._live[chosen] = False
                others = any(self._live)
            lines = str(error).strip().splitlines()
            self.reporter.notice(f"the GPU {what} failed ({type(error).__name__}: {lines[-1] if lines else ''}); "
                                 + (f"{doing} the remaining reads on the other GPUs" if others
                                    else f"{doing} the remaining reads on the CPU"))
            done = None
        with self._lock:
            self._in_hand[chosen] -= 1
        return done


def run_record(config: RunConfig, inputs: Inputs, profiles: EdgeProfiles, devices: Devices, work: Work,
               tally: Tally, timings: dict[str, float]) -> dict:
    """Stage 6: the /run attributes (README: the run file) of what was run, on what, and how fast."""
    record = {
        "parameters": asdict(inputs.params) | {"preset": inputs.params.preset_name()},
        "alphabet": inputs.alphabet.name,
        "near_states": inputs.alphabet.near_rule,
        "checksums_sha256": inputs.checksums,
        "inputs": {"tree": describe_input(config.tree), "alignment": describe_input(config.alignment),
                   "reads": describe_input(config.reads)},
        "timings_seconds": timings, "gcups": tally.gcups, "cells": tally.cells, "lanes": devices.width,
        "threads": {"count": config.threads, "source": config.threads_source},
        "device": config.device, **({"device_choice": devices.choice} if devices.choice else {}),
        "consumers": tally.consumers, "candidates_k": work.k,
        **({"unusable_gpus": devices.unusable} if devices.unusable else {}),
        **({"gpu_device_seconds": {scorer.name: scorer.device_seconds for scorer in devices.gpu_scorers}}
           if config.gpu_profile else {}),
        "status_counts": tally.status_counts, "n_edges": profiles.n_edges, "n_columns": inputs.n_columns,
        "strand": inputs.strand, "strand_counts": tally.strand_counts,
        "search": tally.search, "edges_scored_fraction": tally.edges_scored, "traceback": tally.traceback,
    }
    if config.shard is not None:  # the slice, for `papara-py merge` (papara_py/cluster/shards.py)
        record["shard"] = config.shard.record(inputs.n_reads_total)
    if config.profiles:
        record["profiles"] = os.path.abspath(config.profiles)
    return record


def _write_stretch(writer: RunWriter, stretch: Stretch, chunk: int, reverse: np.ndarray | None = None,
                   cigars: list[str] | None = None) -> None:
    """The string fields of a stretch's rows: names, statuses and sequences (as given), and the
    strand and CIGAR (of its aligned reads, `reverse` and `cigars` per alignable read; "+" and ""
    for the others), `chunk` rows at a time (a stretch may hold any number of reads that are not
    aligned; memory stays bounded). Each string field is written once: h5py's variable-length
    string writes are the writer thread's largest cost.
    """
    reads = stretch.reads
    strand = np.full(len(reads), "+", dtype=object)
    cigar = np.full(len(reads), "", dtype=object)
    if reverse is not None:
        strand[stretch.alignable] = np.where(reverse, "-", "+")
        cigar[stretch.alignable] = np.array(cigars, dtype=object)
    for lo in range(0, len(reads), chunk):
        hi = min(len(reads), lo + chunk)
        # the sequences: one decoded text and a str slice per read (a numpy slice, bytes and str
        # per read held the GIL three times as long)
        first, ends = reads.offsets[lo], reads.offsets[lo + 1:hi + 1]
        text = reads.residues[first:ends[-1]].tobytes().decode("ascii")
        bounds = (np.concatenate(([first], ends)) - first).tolist()
        writer.write_reads(stretch.first + lo, {
            "names": np.array(reads.names[lo:hi], dtype=object),
            "status": np.array(STATUSES, dtype=object)[stretch.statuses[lo:hi]],
            "strand": strand[lo:hi], "cigar": cigar[lo:hi],
            "sequence": np.array([text[a:b] for a, b in pairwise(bounds)], dtype=object)})


def _write_batch(writer: RunWriter, batch: np.ndarray, candidates: Candidates, scores, starts, rows) -> None:
    """Scatter one batch's numeric results into the per-read datasets (rows are in input order;
    its strings go with its stretch's, `_write_stretch`)."""
    # batches are slices of the alignable reads in input order; write contiguous runs
    breaks = np.flatnonzero(np.diff(batch) != 1) + 1
    for lo, hi in zip(np.concatenate(([0], breaks)), np.concatenate((breaks, [len(batch)]))):
        writer.write_reads(int(batch[lo]), {
            "best_edge": candidates.edge[lo:hi, 0], "score": scores[lo:hi], "start": starts[lo:hi],
            "aligned": rows[lo:hi], "candidates/edge": candidates.edge[lo:hi],
            "candidates/score": np.where(candidates.edge[lo:hi] >= 0, candidates.score[lo:hi], -1),
        })
