"""The hybrid engine of DESIGN 6: a master builds edge blocks, CPU and GPU consumers compete.

A master thread builds blocks of W edge profiles (lazily, from the directional sets) for one
batch of reads after another and pushes them onto one bounded queue while the consumers, each in
its own thread, already drain it. CPU workers take one block at a time; each GPU feeder takes up
to `gpu_chunk` blocks of one batch. Results are folded into the batch's candidate lists; the fold
is order-independent (engine/topk.py), so the result does not depend on the schedule. A batch
whose last block is scored is handed to the caller (`Engine.run` yields it) while the consumers
go on with the next batch, so traceback and output overlap scoring; at most
`batches_in_flight` batches are held at once, which bounds memory. Three: the master may
prepare batch b + 2 while batch b is traced back and b + 1 scored. Against two it measured the
same on the H100 (BENCHMARKS.md, Hybrid, third round), and every later measurement, the
paper-scale run included, used three; one more batch in flight holds its reads and candidate
lists, a few MB (the traceback's working memory is per batch traced back, not here).

Balancing: one block against a batch of 12,500 reads of 100 bp and 1000 columns is several seconds
for a CPU core and ~15 ms for a GPU, so a CPU worker scores its block in read slices of about
`cpu_slice_seconds` (measured on the H100 host with batches of 50,000 reads: without slices, 16
workers each held one block for 30 s while the GPU finished all the rest in 7 s). Before each
slice it asks the tail rule: when the GPUs (at their measured rate) would finish everything of
this batch and the earlier ones not yet taken before it finished the slice, it hands the rest of
its block back to the GPUs and takes an item of a later batch. Each batch thus ends when the GPUs end it, and its traceback overlaps the
next batch's scoring (with one rule for the whole run, the workers held the first batch's blocks
to the very end). The GPUs take the handed-back items of a batch as one launch (engine/queue.py).
Correctness never depends on any of this: any block and any read range may be scored by any
consumer, and scoring a pair twice changes nothing.

Each GPU is fed by `gpu_feeders` threads (two): while one waits for its launch, the other takes
its items and prepares its launch on the host, then waits for the device (engine/gpu.py), and
merges its result after handing the device on. With one thread, the device idled during all of
that host work: 10-24 ms (median) per launch on the H100 host (BENCHMARKS.md, Hybrid, third
round).

A GPU consumer that fails (build error, lost device, out of memory) hands its blocks back and
stops; when none is left, CPU workers may take handed-back items too, and if no CPU worker runs
(gpu-only mode) CPU workers are started to finish the queue.
"""

from __future__ import annotations

import queue as stdlib_queue
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol, Sequence

import numpy as np

from papara_py.engine.consumers import CpuScorer
from papara_py.engine.layout import Block, block_count, make_block
from papara_py.engine.queue import WorkItem, WorkQueue, launch_reads
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

    def slice(self, first: int, end: int) -> "ReadBatch":
        """Reads [first, end) as a batch of their own (codes shared, offsets from 0)."""
        if (first, end) == (0, self.count):
            return self
        start = self.offsets[first]
        return ReadBatch(self.codes[start:self.offsets[end]], self.offsets[first:end + 1] - start)


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
    cells: int = 0
    busy_seconds: float = 0.0
    error: str | None = None

    def rate(self) -> float:
        """Cells per second while busy; 0 before the first block."""
        return self.cells / self.busy_seconds if self.busy_seconds > 0 else 0.0


@dataclass
class EngineOptions:
    """Scheduling knobs; `jitter_seconds` and `fail_after_chunks` exist for tests only."""

    cpu_workers: int = 1
    gpu_feeders: int = 2
    queue_capacity: int = 64
    batches_in_flight: int = 3
    balance_tail: bool = True
    cpu_slice_seconds: float = 0.5
    cpu_first_slice_cells: int = 500_000_000
    block_cache_bytes: int = 256 << 20
    jitter_seconds: float = 0.0
    jitter_seed: int = 0
    fail_after_chunks: int | None = None


class _InjectedFault(RuntimeError):
    """Raised by the fault-injection hook of EngineOptions.fail_after_chunks."""


@dataclass
class _Batch:
    reads: ReadBatch
    candidates: Candidates
    cells_left: int
    lock: threading.Lock = field(default_factory=threading.Lock)


class Engine:
    """One scoring run over a sequence of read batches (see the module docstring).

    `build_profiles(edge_ids)` returns uint8 [len, n_columns] profiles
    (profiles.ProfileBuilder.profiles). `use_cpu` False means GPU only, with CPU workers
    started only if every GPU fails. `on_progress(blocks, cells)` is called as blocks finish.
    After `run` is exhausted, `consumers`, `build_seconds` and `scoring_seconds` (start to the
    last block scored) describe the run.
    """

    def __init__(self, build_profiles: Callable[[np.ndarray], np.ndarray], n_edges: int, n_columns: int,
                 width: int, params: ScoringParams, k: int, use_cpu: bool, gpu_scorers: Sequence[Scorer],
                 options: EngineOptions,
                 on_progress: Callable[[int, int], None] = lambda blocks, cells: None) -> None:
        self.build_profiles = build_profiles
        self.n_edges = n_edges
        self.n_columns = n_columns
        self.width = width
        self.params = params
        self.k = k
        self.use_cpu = use_cpu
        self.gpu_scorers = list(gpu_scorers)
        self.options = options
        self.on_progress = on_progress
        self.consumers: list[ConsumerStats] = []
        self.build_seconds = 0.0
        self.scoring_seconds = 0.0
        self._queue = WorkQueue(options.queue_capacity)
        self._batches: dict[int, _Batch] = {}
        self._done: stdlib_queue.Queue[int] = stdlib_queue.Queue()
        self._slots = threading.Semaphore(max(1, options.batches_in_flight))
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._cpu_threads: list[threading.Thread] = []
        self._gpu_stats: list[ConsumerStats] = []
        self._fatal: BaseException | None = None
        self._started = 0.0
        self._blocks: dict[int, Block] = {}

    # -- the caller's side ------------------------------------------------------------------

    def run(self, make_batch: Callable[[int], ReadBatch], n_batches: int) -> Iterator[tuple[int, Candidates]]:
        """Score batch b = make_batch(b) for b in 0 .. n_batches-1; yields (b, candidates) as
        batches finish. `make_batch` runs on the master thread, overlapping the scoring of the
        batches before. Close the generator (or exhaust it) to stop the threads.
        """
        self._started = time.perf_counter()
        feeders = max(1, self.options.gpu_feeders)
        for scorer in self.gpu_scorers:
            for feeder in range(feeders):
                self._start(scorer, is_gpu=True, name=f"{scorer.name}/feeder-{feeder}")
        for _ in range(self.options.cpu_workers if self.use_cpu else 0):
            self._start(CpuScorer(), is_gpu=False)
        master = threading.Thread(target=self._master, args=(make_batch, n_batches), name="papara-master",
                                  daemon=True)
        master.start()
        finished = False
        try:
            for _ in range(n_batches):
                index = self._next_done()
                batch = self._batches.pop(index)
                yield index, batch.candidates
                self._slots.release()
            finished = True
        finally:
            if not finished:
                self._queue.cancel()
            master.join(timeout=None if finished else 1.0)
            for thread in self._threads:
                thread.join(timeout=None if finished else 1.0)
            self._report_faults()

    def _next_done(self) -> int:
        """The next finished batch; meanwhile watch for fatal errors and dead GPUs."""
        while True:
            if self._fatal is not None:
                raise self._fatal
            try:
                return self._done.get(timeout=0.1)
            except stdlib_queue.Empty:
                self._restart_cpu_if_needed()

    def _restart_cpu_if_needed(self) -> None:
        """Every GPU failed and no CPU worker is left: start CPU workers to finish the queue."""
        if not self._gpus_failed():
            return
        if any(t.is_alive() for t in self._cpu_threads):
            return
        for _ in range(max(1, self.options.cpu_workers)):
            self._start(CpuScorer(), is_gpu=False, may_yield=False)

    def _report_faults(self) -> None:
        for record in self._gpu_stats:
            if record.error:
                print(f"papara-py: GPU consumer {record.name} failed ({record.error}); its blocks were "
                      f"returned to the queue and finished by the CPU workers", file=sys.stderr)

    # -- the master ------------------------------------------------------------------------

    def _master(self, make_batch: Callable[[int], ReadBatch], n_batches: int) -> None:
        """Build every batch's blocks in order and queue them; waits for a free batch slot."""
        try:
            n_blocks = block_count(self.n_edges, self.width)
            cache = n_blocks * self.width * self.n_columns <= self.options.block_cache_bytes
            for index in range(n_batches):
                while not self._slots.acquire(timeout=0.1):
                    if self._queue.cancelled:
                        return
                reads = make_batch(index)
                cells = self.n_edges * reads.residues * self.n_columns
                self._batches[index] = _Batch(reads, Candidates.empty(reads.count, self.k), cells)
                self._queue.plan(index, n_blocks, cells)
                for block_index in range(n_blocks):
                    if not self._queue.put(self._item(index, self._block(block_index, cache), 0, reads.count)):
                        return
                self._queue.seal(index)
            self._queue.close()
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            self._fail(error)

    def _block(self, index: int, cache: bool) -> Block:
        """Block `index`, built from the profiles (kept for later batches when they fit)."""
        block = self._blocks.get(index)
        if block is None:
            started = time.perf_counter()
            first = index * self.width
            edge_ids = np.arange(first, min(first + self.width, self.n_edges))
            block = make_block(index, first, self.build_profiles(edge_ids), self.width)
            self.build_seconds += time.perf_counter() - started
            if cache:
                self._blocks[index] = block
        return block

    # -- the consumers -----------------------------------------------------------------------

    def _start(self, scorer: Scorer, is_gpu: bool, may_yield: bool = True, name: str | None = None) -> None:
        record = ConsumerStats(name=name or scorer.name)
        self.consumers.append(record)
        thread = threading.Thread(target=self._consume, args=(scorer, record, is_gpu, may_yield),
                                  name=f"papara-{record.name}", daemon=True)
        self._threads.append(thread)
        if is_gpu:
            self._gpu_stats.append(record)
        else:
            self._cpu_threads.append(thread)
        thread.start()

    def _consume(self, scorer: Scorer, stats: ConsumerStats, is_gpu: bool, may_yield: bool) -> None:
        """Consumer loop: a CPU worker takes one item at a time, a GPU thread one launch's items;
        each scores them and folds the result into the batch's lists."""
        rng = random.Random(f"{self.options.jitter_seed}:{stats.name}")
        chunks = 0
        try:
            if not is_gpu:
                while (item := self._queue.take_for_cpu()) is not None:
                    self._consume_cpu_item(scorer, stats, item, may_yield, rng)
                return
            while True:
                items = self._queue.take(scorer.max_blocks, fill=True)
                if not items:
                    return
                batch = self._batches[items[0].batch]
                first, end = launch_reads(items)
                try:
                    if self.options.fail_after_chunks is not None and chunks >= self.options.fail_after_chunks:
                        raise _InjectedFault(f"injected fault after {chunks} chunks")
                    result = self._timed_score(scorer, stats, [item.block for item in items],
                                               batch.reads.slice(first, end), rng)
                except Exception as error:  # a device fault: hand the blocks back, stop this consumer
                    stats.error = f"{type(error).__name__}: {error}"
                    if self._gpus_failed():
                        self._queue.release_handed_back()
                    self._queue.put_back(items)
                    return
                chunks += 1
                self._fold(stats, batch, items[0].batch, result, first, items)
                self._queue.finished(len(items))
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            self._fail(error)

    def _gpus_failed(self) -> bool:
        return bool(self._gpu_stats) and all(s.error for s in self._gpu_stats)

    def _consume_cpu_item(self, scorer: Scorer, stats: ConsumerStats, item: WorkItem, may_yield: bool,
                          rng: random.Random) -> None:
        """Score one item in read slices of about `cpu_slice_seconds`.

        Before each slice the tail rule is asked; when the GPUs would finish the untaken work of
        this batch (and earlier ones) before this slice, the rest of the item goes back to the
        queue for the GPUs. (Slices that shrink as the GPUs near that point, so that the rest is
        queued before a GPU looks for it, were tried: the busier CPU workers slowed the GPU
        thread by more than they scored; BENCHMARKS.md, Hybrid.)
        """
        batch = self._batches[item.batch]
        first, end = item.reads
        cells_per_residue = item.block.n_edges * self.n_columns
        offsets = batch.reads.offsets
        while first < end:
            rate = stats.rate()
            target = rate * self.options.cpu_slice_seconds if rate > 0 else self.options.cpu_first_slice_cells
            stop = int(np.searchsorted(offsets, offsets[first] + target / cells_per_residue, side="left"))
            stop = min(end, max(first + 1, stop))
            piece = self._item(item.batch, item.block, first, stop)
            if may_yield and self._leave_to_gpus(piece, stats):
                self._queue.put_back([self._item(item.batch, item.block, first, end, handed_back=True)])
                return
            result = self._timed_score(scorer, stats, [item.block], batch.reads.slice(first, stop), rng)
            self._fold(stats, batch, item.batch, result, first, [piece], block_done=stop == end)
            first = stop
        self._queue.finished(1)

    def _item(self, index: int, block: Block, first: int, end: int, handed_back: bool = False) -> WorkItem:
        """The work of `block` against reads [first, end) of batch `index`, with its cell count."""
        offsets = self._batches[index].reads.offsets
        return WorkItem(index, block, block.n_edges * int(offsets[end] - offsets[first]) * self.n_columns,
                        (first, end), handed_back)

    def _timed_score(self, scorer: Scorer, stats: ConsumerStats, blocks: list[Block], reads: ReadBatch,
                     rng: random.Random) -> Candidates:
        if self.options.jitter_seconds:
            time.sleep(rng.uniform(0, self.options.jitter_seconds))
        started = time.perf_counter()
        result = scorer.score(blocks, reads, self.params, self.k)
        stats.busy_seconds += time.perf_counter() - started
        return result

    def _leave_to_gpus(self, piece: WorkItem, stats: ConsumerStats) -> bool:
        """True if the live GPUs would finish the untaken work of `piece`'s batch and the ones
        before it before this worker finishes `piece`."""
        if not self.options.balance_tail:
            return False
        gpu_rate = sum(s.rate() for s in self._gpu_stats if not s.error)
        return leave_to_gpus(piece.cells, stats.rate(), gpu_rate, self._queue.untaken_cells(piece.batch))

    def _fold(self, stats: ConsumerStats, batch: _Batch, index: int, result: Candidates, first_read: int,
              pieces: list[WorkItem], block_done: bool = True) -> None:
        """Merge a result for reads from `first_read` on into batch `index`; count the work in
        `stats` (a block counts for whoever scores its last reads); hand over finished batches."""
        cells = sum(piece.cells for piece in pieces)
        stats.cells += cells
        if block_done:
            stats.blocks += len(pieces)
            stats.edges += sum(piece.block.n_edges for piece in pieces)
        with batch.lock:
            batch.candidates.add(result, first_read)
            batch.cells_left -= cells
            done = batch.cells_left == 0
        with self._lock:
            self.on_progress(len(pieces) if block_done else 0, cells)
        if done:
            self.scoring_seconds = time.perf_counter() - self._started
            self._done.put(index)

    def _fail(self, error: BaseException) -> None:
        if self._fatal is None:
            self._fatal = error
        self._queue.cancel()


def leave_to_gpus(cells: float, own_rate: float, gpu_rate: float, untaken_cells: float) -> bool:
    """The tail rule: a CPU worker leaves `cells` to the GPUs if they would score every untaken
    cell (at `gpu_rate` cells/s) before it scored `cells` at `own_rate`; never while a rate is
    still unknown (0)."""
    if own_rate <= 0 or gpu_rate <= 0:
        return False
    return cells / own_rate > untaken_cells / gpu_rate

