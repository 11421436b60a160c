"""The hybrid engine of DESIGN 6: a master builds edge blocks, CPU and GPU consumers compete.

The calling thread is the master: it builds blocks of W edge profiles (lazily, from the
directional sets) and pushes them onto one bounded queue while the consumers, each in its own
thread, already drain it. CPU workers take one block at a time; each GPU thread takes up to
`gpu_chunk` blocks. Every consumer folds its results into its own candidate lists, which are
merged at the end; the merge is order-independent (engine/topk.py), so the result does not
depend on the schedule.

A GPU consumer that fails (build error, lost device, out of memory) hands its blocks back and
stops; if no CPU worker is running (gpu-only mode), CPU workers are started to finish the queue.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from papara_py.engine.consumers import CpuScorer
from papara_py.engine.layout import Block, block_count, make_block
from papara_py.engine.queue import BlockQueue
from papara_py.engine.topk import Candidates
from papara_py.params import ScoringParams


@dataclass(frozen=True)
class ReadBatch:
    """Encoded reads ready for the kernels: all have 0 < n < m."""

    codes: np.ndarray    # uint8 [total residues], state sets
    offsets: np.ndarray  # int64 [Q + 1]

    @property
    def count(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def residues(self) -> int:
        return int(self.offsets[-1] - self.offsets[0])


class Scorer(Protocol):
    """What a consumer runs on the blocks it took: returns candidates for the whole batch."""

    name: str
    max_blocks: int

    def score(self, blocks: list[Block], reads: ReadBatch, params: ScoringParams, k: int) -> Candidates:
        ...


@dataclass
class ConsumerStats:
    """What one consumer did, for the run record and the device shares."""

    name: str
    blocks: int = 0
    edges: int = 0
    busy_seconds: float = 0.0
    error: str | None = None


@dataclass
class EngineOptions:
    """Scheduling knobs; `jitter_seconds` and `fail_after_chunks` exist for tests only."""

    cpu_workers: int = 1
    queue_capacity: int = 64
    jitter_seconds: float = 0.0
    jitter_seed: int = 0
    fail_after_chunks: int | None = None


@dataclass
class EngineResult:
    candidates: Candidates
    consumers: list[ConsumerStats] = field(default_factory=list)
    build_seconds: float = 0.0
    wall_seconds: float = 0.0


class _InjectedFault(RuntimeError):
    """Raised by the fault-injection hook of EngineOptions.fail_after_chunks."""


def _consume(queue: BlockQueue, scorer: Scorer, reads: ReadBatch, params: ScoringParams, k: int,
             stats: ConsumerStats, results: list[Candidates], options: EngineOptions,
             is_gpu: bool, on_progress: Callable[[int, int], None]) -> None:
    """Consumer loop: take blocks, score them, fold into a private candidate set."""
    local = Candidates.empty(reads.count, k)
    rng = random.Random(f"{options.jitter_seed}:{stats.name}")
    chunks = 0
    while True:
        blocks = queue.take(scorer.max_blocks)
        if not blocks:
            break
        try:
            if is_gpu and options.fail_after_chunks is not None and chunks >= options.fail_after_chunks:
                raise _InjectedFault(f"injected fault after {chunks} chunks")
            if options.jitter_seconds:
                time.sleep(rng.uniform(0, options.jitter_seconds))
            started = time.perf_counter()
            local.add(scorer.score(blocks, reads, params, k))
            stats.busy_seconds += time.perf_counter() - started
        except Exception as error:  # a device fault: hand the blocks back, stop this consumer
            if not is_gpu:
                raise
            queue.put_back(blocks)
            stats.error = f"{type(error).__name__}: {error}"
            break
        chunks += 1
        queue.finished(len(blocks))
        edges = sum(b.n_edges for b in blocks)
        stats.blocks += len(blocks)
        stats.edges += edges
        on_progress(len(blocks), edges)
    results.append(local)


def run_engine(build_profiles: Callable[[np.ndarray], np.ndarray], n_edges: int, width: int,
               reads: ReadBatch, params: ScoringParams, k: int, use_cpu: bool,
               gpu_scorers: list[Scorer], options: EngineOptions,
               on_progress: Callable[[int, int], None] = lambda blocks, edges: None) -> EngineResult:
    """Score every read against every edge; returns each read's k best (score, edge) pairs.

    `build_profiles(edge_ids)` returns uint8 [len, m] profiles (profiles.ProfileBuilder.profiles).
    `use_cpu` False means GPU only, with CPU workers started only if every GPU fails.
    """
    started = time.perf_counter()
    queue = BlockQueue(options.queue_capacity)
    results: list[Candidates] = []
    stats: list[ConsumerStats] = []
    threads: list[threading.Thread] = []
    lock = threading.Lock()

    def progress(blocks: int, edges: int) -> None:
        with lock:
            on_progress(blocks, edges)

    def start(scorer: Scorer, is_gpu: bool) -> None:
        record = ConsumerStats(name=scorer.name)
        stats.append(record)
        thread = threading.Thread(
            target=_consume, name=f"papara-{scorer.name}", daemon=True,
            args=(queue, scorer, reads, params, k, record, results, options, is_gpu, progress),
        )
        threads.append(thread)
        thread.start()

    cpu_workers = options.cpu_workers if use_cpu else 0
    for scorer in gpu_scorers:
        start(scorer, is_gpu=True)
    for _ in range(cpu_workers):
        start(CpuScorer(), is_gpu=False)
    try:
        build_seconds = 0.0
        for index in range(block_count(n_edges, width)):
            first = index * width
            t0 = time.perf_counter()
            edge_ids = np.arange(first, min(first + width, n_edges))
            block = make_block(index, first, build_profiles(edge_ids), width)
            build_seconds += time.perf_counter() - t0
            if not queue.put(block):
                break
        queue.close()
        fallback_started = cpu_workers > 0
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.1)
            if not fallback_started and gpu_scorers and all(s.error for s in stats):
                # every GPU failed and no CPU worker runs: CPU workers finish the queue
                fallback_started = True
                for _ in range(max(1, options.cpu_workers)):
                    start(CpuScorer(), is_gpu=False)
    except BaseException:
        queue.cancel()
        raise
    for record in stats:
        if record.error:
            print(f"papara-py: GPU consumer {record.name} failed ({record.error}); its blocks were "
                  f"returned to the queue and finished by the CPU workers", file=sys.stderr)
    merged = Candidates.empty(reads.count, k)
    for local in results:
        merged.add(local)
    return EngineResult(candidates=merged, consumers=stats, build_seconds=build_seconds,
                        wall_seconds=time.perf_counter() - started)
