"""The main job, start to finish: inputs -> edge profiles -> engine -> traceback -> HDF5.

Reads are scored and traced in batches (input order), and each batch's rows go straight into the
output file, so memory holds the compact reads, one batch's working arrays and the profiles of
one queue's worth of edge blocks, whatever the read count.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
from tqdm import tqdm

from papara_py.encoding import IS_GAP, READ_CODE
from papara_py.engine.cpu import default_lane_width
from papara_py.engine.scheduler import EngineOptions, ReadBatch, run_engine
from papara_py.engine.topk import Candidates
from papara_py.errors import InputError
from papara_py.inputs import iter_reads, match_tips, read_alignment, read_tree
from papara_py.outputs import RunWriter, run_writer
from papara_py.params import ScoringParams
from papara_py.profiles import ProfileBuilder
from papara_py.reads import STATUS_ALIGNED, ReadSet
from papara_py.traceback import align, place_read
from papara_py.tree import EdgeTree


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
    candidates: int = 5
    lanes: int | None = None
    batch_reads: int = 50_000
    quiet: bool = False
    verbose: bool = False
    command_line: str = ""
    engine_options: EngineOptions | None = None


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


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_reads(reads_path: str, alignment, extra_rows: list[int], reporter: Reporter) -> ReadSet:
    """Reads from the file, then alignment taxa absent from the tree (gaps removed, DESIGN 9)."""
    records = [(r.name, r.sequence) for r in iter_reads(reads_path)]
    if extra_rows:
        seen = {name for name, _ in records}
        for row in extra_rows:
            name = alignment.names[row]
            if name in seen:
                raise InputError(alignment.path, f"taxon {name!r} is not in the tree and its name is "
                                 f"also a read name in {reads_path}; rename one of them",
                                 where=f"sequence {name!r}")
            residues = alignment.rows[row][~IS_GAP[alignment.rows[row]]]
            records.append((name, residues.tobytes()))
        shown = ", ".join(alignment.names[r] for r in extra_rows[:5])
        more = f" and {len(extra_rows) - 5} more" if len(extra_rows) > 5 else ""
        reporter.notice(f"{len(extra_rows)} alignment taxa are not in the tree ({shown}{more}); "
                        f"they are aligned as extra reads, gaps removed")
    return ReadSet.from_sequences(records)


def resolve_scorers(config: RunConfig, reporter: Reporter):
    """(use_cpu, GPU consumers) for --device auto|cpu|gpu|hybrid."""
    if config.device == "cpu":
        return True, []
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.opencl_devices import discover_devices
    from papara_py.engine.gpu import GpuScorer

    devices = discover_devices("gpu")
    if not devices:
        if config.device == "auto":
            reporter.detail("no OpenCL GPU found; running on the CPU")
            return True, []
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU and none was found; "
                         "run `papara-py devices` to see what OpenCL reports")
    scorers = [GpuChunkScorer(GpuScorer(d), f"gpu-{i}:{d.name}", config.gpu_chunk) for i, d in enumerate(devices)]
    return config.device != "gpu", scorers


def traceback_batch(reads: ReadSet, indices: np.ndarray, best_edges: np.ndarray, builder: ProfileBuilder,
                    params: ScoringParams, threads: int):
    """Align each read to its best edge; returns (scores, starts, cigars, aligned rows)."""
    unique_edges, edge_slot = np.unique(best_edges, return_inverse=True)
    profiles = builder.profiles(unique_edges)
    m = profiles.shape[1]

    def one(slot: int):
        q = int(indices[slot])
        residues = reads.oriented(q, False)
        result = align(READ_CODE[residues], profiles[edge_slot[slot]], params)
        return result, place_read(residues.tobytes(), result.start, result.cigar, m)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(one, range(len(indices)), chunksize=64))
    scores = np.array([r.score for r, _ in results], dtype=np.int32)
    starts = np.array([r.start for r, _ in results], dtype=np.int32)
    cigars = [r.cigar for r, _ in results]
    rows = np.stack([row for _, row in results]) if results else np.empty((0, m), np.uint8)
    return scores, starts, cigars, rows


def run(config: RunConfig) -> RunSummary:
    """Run the main job; raises InputError for bad input, leaves no output file on failure."""
    reporter = Reporter(config.quiet, config.verbose)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    tree = read_tree(config.tree)
    alignment = read_alignment(config.alignment)
    edge_tree = EdgeTree.from_dendropy(tree)
    match = match_tips(edge_tree.tip_names, alignment, config.tree)
    reads = load_reads(config.reads, alignment, match.extra, reporter)
    m = alignment.rows.shape[1]
    timings["input"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    builder = ProfileBuilder(edge_tree, match.tip_rows)
    timings["profiles"] = time.perf_counter() - t0
    use_cpu, gpu_scorers = resolve_scorers(config, reporter)
    width = config.lanes or default_lane_width()
    options = config.engine_options or EngineOptions(cpu_workers=max(1, config.threads))
    statuses = np.array(reads.statuses(m), dtype=object)
    alignable = np.flatnonzero(statuses == STATUS_ALIGNED)
    reporter.detail(f"{edge_tree.n_tips} taxa, {builder.n_edges} edges, {m} columns, {len(reads)} reads "
                    f"({len(alignable)} alignable), {width} lanes, device {config.device}")

    k = max(1, config.candidates)
    cells = 0
    timings["scoring"] = timings["traceback"] = timings["output"] = 0.0
    consumer_totals: dict[str, dict] = {}
    with run_writer(config.output, len(reads), m, k, config.command_line) as writer:
        t0 = time.perf_counter()
        writer.write_reference(alignment.names, alignment.rows, edge_tree.numbered_newick)
        _write_read_identities(writer, reads, statuses, config.batch_reads)
        timings["output"] += time.perf_counter() - t0
        total_blocks = -(-builder.n_edges // width) * max(1, -(-len(alignable) // config.batch_reads))
        with reporter.bar(total_blocks, "block", "scoring") as bar:
            for first in range(0, len(alignable), config.batch_reads):
                batch = alignable[first:first + config.batch_reads]
                codes, offsets = reads.select(batch)
                t0 = time.perf_counter()
                batch_reads = ReadBatch(codes, offsets)
                cells_per_edge = batch_reads.residues * m

                def progress(blocks: int, edges: int) -> None:
                    bar.update(blocks)
                    done = cells + edges * cells_per_edge
                    elapsed = timings["scoring"] + time.perf_counter() - t0
                    bar.set_postfix_str(f"{done / max(elapsed, 1e-9) / 1e9:.1f} GCUPS", refresh=False)

                result = run_engine(builder.profiles, builder.n_edges, width, batch_reads, config.params, k,
                                    use_cpu, gpu_scorers, options, progress)
                timings["scoring"] += time.perf_counter() - t0
                cells += builder.n_edges * cells_per_edge
                for stats in result.consumers:
                    total = consumer_totals.setdefault(stats.name, {"blocks": 0, "edges": 0, "busy_seconds": 0.0})
                    total["blocks"] += stats.blocks
                    total["edges"] += stats.edges
                    total["busy_seconds"] += stats.busy_seconds
                    if stats.error:
                        total["error"] = stats.error
                t0 = time.perf_counter()
                best = result.candidates.edge[:, 0]
                scores, starts, cigars, rows = traceback_batch(reads, batch, best, builder, config.params,
                                                               config.threads)
                if not np.array_equal(scores, result.candidates.score[:, 0]):
                    raise RuntimeError("internal error: traceback score differs from the engine's score")
                timings["traceback"] += time.perf_counter() - t0
                t0 = time.perf_counter()
                _write_batch(writer, batch, result.candidates, scores, starts, cigars, rows)
                timings["output"] += time.perf_counter() - t0
        gcups = cells / timings["scoring"] / 1e9 if timings["scoring"] > 0 else 0.0
        counts = {s: int(np.count_nonzero(statuses == s)) for s in sorted(set(statuses.tolist()))}
        writer.write_run_record({
            "parameters": asdict(config.params),
            "checksums_sha256": {"tree": sha256_file(config.tree), "alignment": sha256_file(config.alignment),
                                 "reads": sha256_file(config.reads)},
            "inputs": {"tree": os.path.abspath(config.tree), "alignment": os.path.abspath(config.alignment),
                       "reads": os.path.abspath(config.reads)},
            "timings_seconds": timings, "gcups": gcups, "cells": cells, "lanes": width,
            "device": config.device, "consumers": consumer_totals, "candidates_k": k,
            "status_counts": counts, "n_edges": builder.n_edges, "n_columns": m,
        })
    reporter.notice(f"{len(alignable)} of {len(reads)} reads aligned"
                    + "".join(f", {n} {s}" for s, n in counts.items() if s != STATUS_ALIGNED)
                    + f"; scoring {timings['scoring']:.2f} s ({gcups:.1f} GCUPS); wrote {config.output}")
    return RunSummary(len(reads), len(alignable), counts, timings, gcups)


def _write_read_identities(writer: RunWriter, reads: ReadSet, statuses: np.ndarray, chunk: int) -> None:
    """Names, statuses and sequences of every read, `chunk` reads at a time (bounded memory)."""
    for lo in range(0, len(reads), chunk):
        hi = min(len(reads), lo + chunk)
        writer.write_reads(lo, {"names": np.array(reads.names[lo:hi], dtype=object), "status": statuses[lo:hi],
                                "strand": np.full(hi - lo, "+", dtype=object),
                                "cigar": np.full(hi - lo, "", dtype=object),
                                "sequence": np.array([reads.sequence(q).decode("ascii") for q in range(lo, hi)],
                                                     dtype=object)})


def _write_batch(writer: RunWriter, batch: np.ndarray, candidates: Candidates, scores, starts, cigars, rows) -> None:
    """Scatter one batch's results into the per-read datasets (rows are in input order)."""
    # batches are slices of the alignable reads in input order; write contiguous runs
    breaks = np.flatnonzero(np.diff(batch) != 1) + 1
    for lo, hi in zip(np.concatenate(([0], breaks)), np.concatenate((breaks, [len(batch)]))):
        writer.write_reads(int(batch[lo]), {
            "best_edge": candidates.edge[lo:hi, 0], "score": scores[lo:hi], "start": starts[lo:hi],
            "cigar": np.array(cigars[lo:hi], dtype=object), "aligned": rows[lo:hi],
            "candidates/edge": candidates.edge[lo:hi],
            "candidates/score": np.where(candidates.edge[lo:hi] >= 0, candidates.score[lo:hi], -1),
        })
