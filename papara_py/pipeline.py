"""The main job, start to finish: inputs -> edge profiles -> engine -> traceback -> HDF5.

Reads are scored and traced in batches (input order), and each batch's rows go straight into the
output file, so memory holds the compact reads, one batch's working arrays and the profiles of
one queue's worth of edge blocks, whatever the read count.

Only the first batch's preparation and the last batch's traceback and writing stand outside the
scoring: a batch's strand decision runs on the engine's master thread while earlier batches are
scored, and its traceback and rows (with the names and sequences of its stretch of the input)
are written while later ones are. A run is cut into at least MIN_BATCHES batches where the reads
allow it, so that the last batch is a small part of the whole.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import asdict, dataclass, field

import numpy as np
from tqdm import tqdm

from papara_py.cluster.prepared import EdgeProfiles, open_prepared
from papara_py.cluster.shards import Shard
from papara_py.engine.cpu import default_lane_width
from papara_py.engine.layout import block_count
from papara_py.engine.scheduler import Engine, EngineOptions, ReadBatch
from papara_py.errors import InputError
from papara_py.io.checksums import Digest, describe_input
from papara_py.io.inputs import iter_reads, match_tips, read_alignment, read_tree
from papara_py.io.reads import STATUS_ALIGNED, STATUSES, ReadSet
from papara_py.io.run_writer import RunWriter, run_writer
from papara_py.pairwise.candidates import Candidates, load_merges
from papara_py.pairwise.params import ScoringParams
from papara_py.pairwise.strand import ReferenceKmers, StrandPlan, check_mode, orient
from papara_py.pairwise.traceback import align_many
from papara_py.phylo.encoding import IS_GAP, READ_CODE
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

# reads per GIL-free traceback call: large enough that Python overhead is noise, small enough
# that a batch spreads over every thread
TRACEBACK_SLICE = 256
#: Batches a run is cut into at least (each at most --batch-reads), so that the traceback and
#: writing of the last batch, which nothing overlaps, is a small part of the run ...
MIN_BATCHES = 8
#: ... but no batch below this many reads, which keep a GPU launch of 40 blocks over a full device.
MIN_BATCH_READS = 2_000

@dataclass
class RunConfig:
    """Everything the main job needs; the CLI fills it from the command line."""

    tree: str
    alignment: str
    reads: str
    output: str
    params: ScoringParams = field(default_factory=ScoringParams)
    threads: int = 1
    device: str = "cpu"
    gpu_chunk: int = 40
    gpu_profile: bool = False  # device time per GPU in the run record (OpenCL profiling events)
    candidates: int = 5
    strand: str = "auto"  # auto | both | forward (papara_py/pairwise/strand.py)
    lanes: int | None = None
    batch_reads: int = 12_500
    quiet: bool = False
    verbose: bool = False
    command_line: str = ""
    engine_options: EngineOptions | None = None
    shard: Shard | None = None  # align only this slice of the reads (papara_py/cluster/shards.py)
    profiles: str | None = None  # edge profiles from `papara-py prepare` (papara_py/cluster/prepared.py)
    unusable_gpus: dict = field(default_factory=dict)  # filled by the run: GPUs that failed at start


@dataclass
class RunSummary:
    n_reads: int
    n_aligned: int
    status_counts: dict[str, int]
    timings: dict[str, float]
    gcups: float


class Reporter:
    """Notices on stderr (one line each) and tqdm progress bars that stay quiet off a tty."""

    def __init__(self, quiet: bool, verbose: bool) -> None:
        self.quiet = quiet
        self.verbose = verbose

    def notice(self, message: str) -> None:
        if not self.quiet:
            print(f"papara-py: {message}", file=sys.stderr)

    def detail(self, message: str) -> None:
        if self.verbose and not self.quiet:
            print(f"papara-py: {message}", file=sys.stderr)

    def bar(self, total: int, unit: str, desc: str) -> tqdm:
        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, leave=False,
                    disable=True if self.quiet else None, dynamic_ncols=True)


def load_reads(reads_path: str, alignment, extra_rows: list[int], reporter: Reporter,
               shard: Shard | None = None, digest: Digest | None = None) -> tuple[ReadSet, int]:
    """Reads from the file, then alignment taxa absent from the tree (gaps removed, DESIGN 9).

    A read named like a reference taxon is refused (exports would hold two rows of one name).

    Returns (the reads kept, the total read count). With a shard, every read is still parsed and
    validated (so bad input fails every shard alike) but only the shard's slice is kept in memory
    (papara_py/cluster/shards.py); without one, all reads are kept.
    """
    extra_names = {alignment.names[row] for row in extra_rows}
    reference_names = set(alignment.names)
    total = 0

    def records():
        nonlocal total
        for read in iter_reads(reads_path, digest):
            if read.name in extra_names:
                raise InputError(alignment.path, f"taxon {read.name!r} is not in the tree and its name is "
                                 f"also a read name in {reads_path}; rename one of them",
                                 where=f"sequence {read.name!r}")
            if read.name in reference_names:  # exports would hold two rows of that name
                raise InputError(reads_path, f"the read {read.name!r} has the name of a reference taxon of "
                                 f"{alignment.path}; read names must differ from the reference's: rename it",
                                 where=f"line {read.line}")
            if shard is None or shard.owns(total):
                yield read.name, read.sequence
            total += 1
        for row in extra_rows:
            if shard is None or shard.owns(total):
                yield alignment.names[row], alignment.rows[row][~IS_GAP[alignment.rows[row]]].tobytes()
            total += 1

    reads = ReadSet.from_sequences(records())
    if extra_rows:
        shown = ", ".join(alignment.names[r] for r in extra_rows[:5])
        more = f" and {len(extra_rows) - 5} more" if len(extra_rows) > 5 else ""
        reporter.notice(f"{len(extra_rows)} alignment taxa are not in the tree ({shown}{more}); "
                        f"they are aligned as extra reads, gaps removed")
    return reads, total


def resolve_scorers(config: RunConfig, reporter: Reporter):
    """(use_cpu, GPU consumers) for --device auto|cpu|gpu|hybrid."""
    if config.device == "cpu":
        return True, []
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.gpu import GpuScorer
    from papara_py.engine.opencl_devices import discover_devices

    try:
        devices = discover_devices("gpu")
    except Exception as error:  # noqa: BLE001 - a broken OpenCL installation is a missing GPU
        reporter.notice(f"OpenCL could not list the devices ({type(error).__name__}: {error})")
        devices = []
    if not devices:
        if config.device == "auto":
            reporter.detail("no OpenCL GPU found; running on the CPU")
            return True, []
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU and none was found; "
                         "run `papara-py devices` to see what OpenCL reports")
    scorers, unusable = [], {}
    for i, device in enumerate(devices):
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
    config.unusable_gpus = unusable
    return config.device != "gpu", scorers


def traceback_batch(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, best_edges: np.ndarray,
                    builder: EdgeProfiles, params: ScoringParams, threads: int):
    """Align each read, in its chosen orientation (`reverse`), to its best edge.

    Returns (scores, starts, cigars, aligned rows); CIGARs and rows describe the oriented read.
    Slices of TRACEBACK_SLICE reads run as single GIL-free numba calls, so the threads scale.
    """
    unique_edges, edge_slot = np.unique(best_edges, return_inverse=True)
    profiles = builder.profiles(unique_edges)
    pieces = [slice(a, a + TRACEBACK_SLICE) for a in range(0, len(indices), TRACEBACK_SLICE)]

    def one(piece: slice):
        residues, offsets = reads.select_residues(indices[piece], reverse[piece])
        return align_many(READ_CODE[residues], residues, offsets, edge_slot[piece], profiles, params)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(one, pieces))
    if not results:
        return (np.empty(0, np.int32), np.empty(0, np.int32), [], np.empty((0, profiles.shape[1]), np.uint8))
    return (np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results]),
            [cigar for r in results for cigar in r[2]], np.concatenate([r[3] for r in results]))


def run(config: RunConfig) -> RunSummary:
    """Run the main job; raises InputError for bad input, leaves no output file on failure."""
    reporter = Reporter(config.quiet, config.verbose)
    check_mode(config.strand)
    timings: dict[str, float] = {}
    run_started = t0 = time.perf_counter()
    # numba's JIT starts while the inputs are read, not on a consumer thread (pairwise/candidates.py)
    jit_loader = threading.Thread(target=load_merges, name="papara-jit", daemon=True)
    jit_loader.start()
    # every input is read once, hashed as it is parsed (pipes, FIFOs and `-r -` work; io/checksums.py)
    digests = {name: Digest() for name in ("tree", "alignment", "reads")}
    tree = read_tree(config.tree, digests["tree"])
    alignment = read_alignment(config.alignment, digests["alignment"])
    # reads shorter than the alignment are scored: their scores must fit the 32-bit kernels
    config.params.check_fits_int32(alignment.rows.shape[1] - 1)
    edge_tree = EdgeTree.from_dendropy(tree)
    match = match_tips(edge_tree.tip_names, alignment, config.tree)
    reads, n_reads_total = load_reads(config.reads, alignment, match.extra, reporter, config.shard,
                                      digests["reads"])
    m = alignment.rows.shape[1]
    checksums = {name: digest.hexdigest() for name, digest in digests.items()}
    timings["input"] = time.perf_counter() - t0
    if config.shard is not None:
        reporter.notice(f"shard {config.shard} (from {config.shard.source}): {len(reads)} of {n_reads_total} reads")

    t0 = time.perf_counter()
    builder: EdgeProfiles = open_prepared(config.profiles, edge_tree, m, checksums) if config.profiles \
        else ProfileBuilder(edge_tree, match.tip_rows)
    timings["profiles"] = time.perf_counter() - t0
    use_cpu, gpu_scorers = resolve_scorers(config, reporter)
    width = config.lanes or default_lane_width()
    # each GPU keeps a core for its feeder threads (the paper's hybrid: 3 CPU workers + 1 GPU
    # thread on 4 cores); gpu-only runs start CPU workers only if every GPU fails
    options = config.engine_options or EngineOptions(cpu_workers=max(1, config.threads - len(gpu_scorers)))
    statuses = reads.status_codes(m)
    alignable = np.flatnonzero(statuses == STATUSES.index(STATUS_ALIGNED))
    reporter.detail(f"{edge_tree.n_tips} taxa, {builder.n_edges} edges, {m} columns, {len(reads)} reads "
                    f"({len(alignable)} alignable), {width} lanes, device {config.device}")

    k = max(1, config.candidates)
    if k > builder.n_edges:
        reporter.notice(f"--candidates {config.candidates} is more than the tree's {builder.n_edges} edges; "
                        f"keeping {builder.n_edges} per read")
        k = builder.n_edges
    batches = split_batches(alignable, config.batch_reads)
    stretches = input_stretches(batches, len(reads))
    t0 = time.perf_counter()
    # each read's orientation depends only on the read and the reference (sharded runs agree)
    kmers = ReferenceKmers(match.tip_rows) if config.strand == "auto" else None
    timings["strand"] = time.perf_counter() - t0
    plans: dict[int, StrandPlan] = {}  # batches made and not yet traced back
    strand_counts = {"+": 0, "-": 0, "scored_both": 0}
    scored_residues = 0
    timings["traceback"] = timings["output"] = 0.0
    with run_writer(config.output, len(reads), m, k, config.command_line) as writer:
        t0 = time.perf_counter()
        writer.write_reference(alignment.names, alignment.rows, edge_tree.numbered_newick)
        if not batches:  # nothing to score: every read's identity now
            _write_read_identities(writer, reads, statuses, 0, len(reads), config.batch_reads)
        timings["output"] += time.perf_counter() - t0
        with reporter.bar(block_count(builder.n_edges, width) * len(batches), "block", "scoring") as bar:
            scored = 0
            engine_started = time.perf_counter()

            def progress(blocks: int, block_cells: int) -> None:
                nonlocal scored
                scored += block_cells
                bar.update(blocks)
                elapsed = max(time.perf_counter() - engine_started, 1e-9)
                bar.set_postfix_str(f"{scored / elapsed / 1e9:.1f} GCUPS", refresh=False)

            def make_batch(index: int) -> ReadBatch:
                """Batch `index` in its orientations (on the engine's master thread)."""
                started = time.perf_counter()
                plan = StrandPlan.for_batch(batches[index], orient(config.strand, reads, batches[index], kmers))
                plans[index] = plan
                timings["strand"] += time.perf_counter() - started
                return ReadBatch(*reads.select(plan.reads, plan.reverse))

            t0 = time.perf_counter()
            jit_loader.join()  # left to wait only when the inputs were read in less time
            timings["jit_wait"] = time.perf_counter() - t0
            engine = Engine(builder.profiles, builder.n_edges, m, width, config.params, k, use_cpu, gpu_scorers,
                            options, progress)
            # batches arrive as they finish; tracing back and writing one overlaps scoring the next
            with closing(engine.run(make_batch, len(batches))) as finished:
                for index, candidates in finished:
                    batch = batches[index]
                    plan = plans.pop(index)
                    scored_residues += int(reads.lengths[plan.reads].sum())
                    strand_counts["scored_both"] += len(plan.second)
                    reverse, candidates = plan.pick(candidates)
                    strand_counts["-"] += int(np.count_nonzero(reverse))
                    strand_counts["+"] += int(len(reverse) - np.count_nonzero(reverse))
                    t0 = time.perf_counter()
                    scores, starts, cigars, rows = traceback_batch(reads, batch, reverse, candidates.edge[:, 0],
                                                                   builder, config.params, config.threads)
                    if not np.array_equal(scores, candidates.score[:, 0]):
                        raise RuntimeError("internal error: traceback score differs from the engine's score")
                    timings["traceback"] += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    _write_read_identities(writer, reads, statuses, *stretches[index], config.batch_reads)
                    _write_batch(writer, batch, reverse, candidates, scores, starts, cigars, rows)
                    timings["output"] += time.perf_counter() - t0
        timings["scoring"] = engine.scoring_seconds
        timings["build_blocks"] = engine.build_seconds
        consumer_totals = {stats.name: {"blocks": stats.blocks, "edges": stats.edges, "cells": stats.cells,
                                        "calls": stats.calls, "busy_seconds": stats.busy_seconds,
                                        **({"error": stats.error} if stats.error else {}),
                                        **({"retries": stats.retries} if stats.retries else {}),
                                        **({"faults": stats.faults} if stats.faults else {})}
                           for stats in engine.consumers}
        cells = scored_residues * builder.n_edges * m
        gcups = cells / timings["scoring"] / 1e9 if timings["scoring"] > 0 else 0.0
        reporter.detail(f"--strand {config.strand}: {strand_counts['scored_both']} of {len(alignable)} reads "
                        f"scored in both orientations ({timings['strand']:.3f} s)")
        counts = {name: n for name, n in sorted(zip(STATUSES, np.bincount(statuses, minlength=len(STATUSES))
                                                         .tolist())) if n}
        writer.write_run_record({
            "parameters": asdict(config.params),
            "checksums_sha256": checksums,
            "inputs": {"tree": describe_input(config.tree), "alignment": describe_input(config.alignment),
                       "reads": describe_input(config.reads)},
            "timings_seconds": timings, "gcups": gcups, "cells": cells, "lanes": width,
            "device": config.device, "consumers": consumer_totals, "candidates_k": k,
            **({"unusable_gpus": config.unusable_gpus} if config.unusable_gpus else {}),
            **({"gpu_device_seconds": {scorer.name: scorer.device_seconds for scorer in gpu_scorers}}
               if config.gpu_profile else {}),
            "status_counts": counts, "n_edges": builder.n_edges, "n_columns": m,
            "strand": config.strand, "strand_counts": strand_counts,
        })
        if config.shard is not None:  # the slice, for `papara-py merge` (papara_py/cluster/shards.py)
            writer.write_run_record({"shard": config.shard.record(n_reads_total)})
        if config.profiles:
            writer.write_run_record({"profiles": os.path.abspath(config.profiles)})
        timings["total"] = time.perf_counter() - run_started
        writer.write_run_record({"timings_seconds": timings})
    reporter.notice(f"{len(alignable)} of {len(reads)} reads aligned"
                    + "".join(f", {n} {s}" for s, n in counts.items() if s != STATUS_ALIGNED)
                    + f"; scoring {timings['scoring']:.2f} s ({gcups:.1f} GCUPS); wrote {config.output}")
    return RunSummary(len(reads), len(alignable), counts, timings, gcups)


def split_batches(alignable: np.ndarray, batch_reads: int) -> list[np.ndarray]:
    """The alignable reads (input order) in equal batches of at most `batch_reads` reads: at
    least MIN_BATCHES of them where each keeps MIN_BATCH_READS reads (see the module docstring)."""
    n = len(alignable)
    if n == 0:
        return []
    count = max(-(-n // batch_reads), min(MIN_BATCHES, n // MIN_BATCH_READS), 1)
    return np.array_split(alignable, count)


def input_stretches(batches: list[np.ndarray], n_reads: int) -> list[tuple[int, int]]:
    """Per batch, the input rows [lo, hi) whose identities are written with it: from its first
    read to the next batch's (the first batch from row 0, the last to the end), so the rows of
    reads that are not aligned are written too, each once."""
    starts = [0] + [int(batch[0]) for batch in batches[1:]]
    return list(zip(starts, starts[1:] + [n_reads]))


def _write_read_identities(writer: RunWriter, reads: ReadSet, statuses: np.ndarray, lo: int, hi: int,
                           chunk: int) -> None:
    """Names, statuses and sequences (as given) of input rows [lo, hi), `chunk` rows at a time
    (a stretch may hold any number of reads that are not aligned; memory stays bounded).

    Strand starts as "+"; aligned reads get their chosen strand in `_write_batch`, afterwards.
    """
    for first in range(lo, hi, chunk):
        end = min(hi, first + chunk)
        writer.write_reads(first, {"names": np.array(reads.names[first:end], dtype=object),
                                   "status": np.array(STATUSES, dtype=object)[statuses[first:end]],
                                   "strand": np.full(end - first, "+", dtype=object),
                                   "cigar": np.full(end - first, "", dtype=object),
                                   "sequence": np.array([reads.sequence(q).decode("ascii")
                                                         for q in range(first, end)], dtype=object)})


def _write_batch(writer: RunWriter, batch: np.ndarray, reverse: np.ndarray, candidates: Candidates, scores, starts,
                 cigars, rows) -> None:
    """Scatter one batch's results into the per-read datasets (rows are in input order)."""
    # batches are slices of the alignable reads in input order; write contiguous runs
    breaks = np.flatnonzero(np.diff(batch) != 1) + 1
    for lo, hi in zip(np.concatenate(([0], breaks)), np.concatenate((breaks, [len(batch)]))):
        writer.write_reads(int(batch[lo]), {
            "best_edge": candidates.edge[lo:hi, 0], "score": scores[lo:hi], "start": starts[lo:hi],
            "cigar": np.array(cigars[lo:hi], dtype=object), "aligned": rows[lo:hi],
            "strand": np.where(reverse[lo:hi], "-", "+").astype(object),
            "candidates/edge": candidates.edge[lo:hi],
            "candidates/score": np.where(candidates.edge[lo:hi] >= 0, candidates.score[lo:hi], -1),
        })
