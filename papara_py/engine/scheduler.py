"""The hybrid engine of DESIGN 6: a master builds edge blocks, CPU and GPU consumers compete.

A master thread builds blocks of W edge profiles (lazily, from the directional sets) for one
batch of reads after another and pushes them onto one queue while the consumers, each in its
own thread, already drain it. CPU workers take one item at a time; each GPU feeder takes up to
`gpu_chunk` blocks of one batch and read range. Results are folded into the batch's candidate
lists; the fold is order-independent (engine/candidates.py), so the result does not depend on the
schedule. A batch whose last block is scored is handed to the caller (`Engine.run` yields it)
while the consumers go on with the next batch, so traceback and output overlap scoring; at most
`batches_in_flight` batches are held at once (made, scored or with the caller), which bounds
memory. Five: the master makes a batch only when the caller hands one back, so the GPUs run
dry whenever the caller's traceback and output of one batch take longer than the GPUs' scoring
of the others in flight. Measured on the H100 host with batches of ~1 s of GPU work (notebook/BENCHMARKS.md,
Hybrid, fourth round): with three, the GPU waited for the master 0.6-1.0 s of a 8.4 s GPU-only
run and 1.4-2.0 s in hybrid; with five, 0.45-0.54 s and 0.72-0.82 s. A batch in flight holds its
reads and candidate lists, a few MB (the traceback's working memory is per batch traced back,
not here).

Balancing: one block against a batch of 12,500 reads of 100 bp and 1000 columns is several seconds
for a CPU core and ~15 ms for a GPU, and a GPU scores ~30 times as many cells as 15 CPU cores. So
with GPUs, the CPU workers never take whole blocks: when the GPUs come to a batch, the queue
divides it (`Engine._divider`): the last reads of the batch, as many as the CPU workers would
score while the GPUs score the rest (from each side's speed while it works), are the CPU part, cut into
pieces of one block each; the GPUs launch over the rest. CPU pieces the workers have not taken
when the GPUs run out of the batch's other items go to the GPUs as one launch, and a worker
leaves a piece to the GPUs when they would finish all that is left of its batch first (the tail
rule, `leave_to_gpus`). The GPUs thus never wait for a CPU worker, every GPU launch scores one
read range, and each batch ends when the GPUs end it, so its traceback overlaps the next batch's
scoring. (Before, CPU workers took whole blocks in read slices and handed the rest back at the
tail: those rests came back as short launches over mixed read ranges, 0.4-0.5 s more device time
in a 10 s run; notebook/BENCHMARKS.md, Hybrid, fourth round.) Before any rate is known the CPU part is a
first guess of `cpu_first_cells` per worker, at most `cpu_first_share` of the batch. While the
caller holds a batch, CPU workers take nothing (`_cpu_may_take`; the runner now hands each batch
on to its traceback threads at once, run/stages.BatchStages, so this holds only for callers that
trace back in the loop). Correctness never depends on any of this: any block and any read range
may be scored by any consumer.

Each GPU is fed by `gpu_feeders` threads (two): while one waits for its launch, the other takes
its items and prepares its launch on the host, then waits for the device (engine/gpu.py), and
merges its result after handing the device on. With one thread, the device idled during all of
that host work: 10-24 ms (median) per launch on the H100 host (notebook/BENCHMARKS.md, Hybrid, third
round).

A GPU consumer that fails (build error, lost device) hands its blocks back and stops; when none
is left, CPU workers may take any item, and if no CPU worker runs (gpu-only mode) CPU workers
are started to finish the queue. A launch that fails for lack of device memory (another process
filled the GPU; MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_RESOURCES) is not the end of the GPU: its
blocks go back to the queue, and the GPU tries again after a back-off that doubles from
`oom_backoff_seconds` (`oom_retries` times in a row at most, then it is dropped). Faults and
retries are counted in the consumer's stats, which the run record holds.
"""

from __future__ import annotations

import itertools
import logging
import queue as stdlib_queue
import random
import threading
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.engine.consumers import CpuScorer
from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.layout import Block, block_count, make_block
from papara_py.engine.queue import Divider, WorkItem, WorkQueue
from papara_py.engine.read_batch import ReadBatch
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import ScoringParams

_log = logging.getLogger(__name__)  # the run's messages (run/log.py)


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
    calls: int = 0  # scorer calls: GPU launches, or items a CPU worker scored
    busy_seconds: float = 0.0
    error: str | None = None
    retries: int = 0  # launches tried again after an out-of-memory fault
    faults: list = field(default_factory=list)  # every fault seen, as text (at most 20 kept)

    def rate(self) -> float:
        """Cells per second while busy; 0 before the first block."""
        return self.cells / self.busy_seconds if self.busy_seconds > 0 else 0.0


class _InjectedFault(RuntimeError):
    """Raised by the fault-injection hook of EngineOptions.fail_after_chunks."""


class _InjectedOutOfMemory(RuntimeError):
    """Raised by the fault-injection hook of EngineOptions.oom_after_chunks."""

    def __init__(self, chunks: int) -> None:
        super().__init__(f"injected MEM_OBJECT_ALLOCATION_FAILURE after {chunks} chunks")


#: OpenCL errors that mean "no device memory now" (worth trying again once memory comes back).
_OUT_OF_MEMORY = ("MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY")


def is_out_of_memory(error: BaseException) -> bool:
    """True for a GPU fault caused by a lack of memory (OpenCL error names, or an injected one)."""
    return isinstance(error, (_InjectedOutOfMemory, MemoryError)) or \
        any(name in str(error).upper() for name in _OUT_OF_MEMORY)


@dataclass
class _Batch:
    reads: ReadBatch
    candidates: Candidates
    cells_left: int
    n_edges: int  # edges scored for this batch (all, or its subset's)
    lock: threading.Lock = field(default_factory=threading.Lock)


class BlockCache:
    """Blocks kept for later batches, by block index (every edge's) or by their edges' bytes (a
    subset's), at most `limit` bytes of lanes beyond the ones kept `always` (every block of a
    run whose blocks all fit). One per Engine, or one for all the rounds of a guided search."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._blocks: dict[int | bytes, Block] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: int | bytes) -> Block | None:
        return self._blocks.get(key)

    def keep(self, key: int | bytes, block: Block, always: bool = False) -> None:
        with self._lock:
            if key in self._blocks or not (always or self._bytes + block.lanes.nbytes <= self.limit):
                return
            self._blocks[key] = block
            self._bytes += block.lanes.nbytes


class Engine:
    """One scoring run over a sequence of read batches (see the module docstring).

    `build_profiles(edge_ids)` returns [len, n_columns] profiles (uint8 DNA, uint32 protein)
    (profiles.ProfileBuilder.profiles). `use_cpu` False means GPU only, with CPU workers
    started only if every GPU fails. `on_progress(blocks, cells)` is called as blocks finish.
    After `run` is exhausted, `consumers`, `build_seconds` and `scoring_seconds` (start to the
    last block scored) describe the run, and `batch_started[b]` when a consumer first took work of
    batch b (the caller may pop it once b is yielded: a sample's own scoring span). `costs`: the
    run's column profile costs (model/column_costs.py; None: none), which every block carries to
    the scorers.
    """

    def __init__(self, build_profiles: Callable[[np.ndarray], np.ndarray], n_edges: int, n_columns: int,
                 width: int, params: ScoringParams, k: int, use_cpu: bool, gpu_scorers: Sequence[Scorer],
                 options: EngineOptions,
                 on_progress: Callable[[int, int], None] = lambda blocks, cells: None,
                 costs: ColumnCosts | None = None,
                 build_lanes: Callable[[np.ndarray, int], np.ndarray | None] | None = None,
                 block_cache: "BlockCache | None" = None) -> None:
        self.build_profiles = build_profiles
        #: a block's lanes in one call where the profiles have it (ProfileBuilder.lanes), else None
        self.build_lanes = build_lanes
        self.costs = costs
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
        self.batch_started: dict[int, float] = {}
        self._n_blocks = block_count(n_edges, width)
        # with every block kept, queued items hold no memory of their own: the batch slots bound them
        self._cache_blocks = self._n_blocks * width * n_columns <= options.block_cache_bytes
        self._queue = WorkQueue(None if self._cache_blocks else options.queue_capacity, self._divider)
        self._batches: dict[int, _Batch] = {}
        self._done: stdlib_queue.Queue[int | None] = stdlib_queue.Queue()  # finished batches; None: no more made
        self._made: int | None = None  # batches the master made, once it has made the last
        self._yielded = 0
        self._slots = threading.Semaphore(max(1, options.batches_in_flight))
        self._caller_idle = threading.Event()  # clear while the caller holds a yielded batch
        self._caller_idle.set()
        self._caller_seconds = 0.0  # how long the caller held batches so far
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._cpu_threads: list[threading.Thread] = []
        self._cpu_stats: list[ConsumerStats] = []
        self._gpu_stats: list[ConsumerStats] = []
        self._fatal: BaseException | None = None
        self._started = 0.0
        #: blocks kept for later batches (a guided search shares one across its rounds)
        self._cache = block_cache if block_cache is not None else BlockCache(options.block_cache_bytes)

    def share_blocks(self, cache: BlockCache) -> None:
        """Keep blocks in `cache` (a guided search's, for all its rounds) and queue a batch whole: a
        round's blocks are a grouped batch's items (engine/guided.py), about one pass over the
        edges, which GPU launches take by cells (`grouped_launch_cells`), not `queue_capacity`
        items at a time. Before `run`."""
        self._cache = cache
        self._queue = WorkQueue(None, self._divider)

    # -- the caller's side ------------------------------------------------------------------

    def run(self, batches: Iterable[ReadBatch]) -> Iterator[tuple[int, Candidates]]:
        """Score each batch of `batches`; yields (its position b in `batches`, its candidates)
        as batches finish. `batches` is iterated on the master thread (a generator there makes
        batch b + 1 while batch b is scored). Close the generator (or exhaust it) to stop the
        threads.
        """
        self._started = time.perf_counter()
        if not self.gpu_scorers:
            self._queue.release_to_cpus()
        feeders = max(1, self.options.gpu_feeders)
        for scorer in self.gpu_scorers:
            for feeder in range(feeders):
                self._start(scorer, is_gpu=True, name=f"{scorer.name}/feeder-{feeder}")
        for _ in range(self.options.cpu_workers if self.use_cpu else 0):
            self._start(CpuScorer(self._queue.stopping), is_gpu=False)
        master = threading.Thread(target=self._master, args=(batches,), name="papara-master", daemon=True)
        master.start()
        finished = False
        try:
            while (index := self._next_done()) is not None:
                batch = self._batches.pop(index)
                candidates = batch.candidates
                if batch.reads.edges is not None:  # subset positions -> edge numbers (ascending: order kept)
                    candidates.edge = np.where(candidates.edge >= 0, batch.reads.edges[candidates.edge], -1
                                               ).astype(np.int32)
                self._caller_idle.clear()
                held = time.perf_counter()
                yield index, candidates
                self._caller_seconds += time.perf_counter() - held
                self._caller_idle.set()
                self._queue.reconsider()
                self._slots.release()
            finished = True
        finally:
            self._caller_idle.set()
            self._queue.reconsider()
            if not finished:
                self._queue.cancel()
            master.join(timeout=None if finished else 1.0)
            for thread in self._threads:
                thread.join(timeout=None if finished else 1.0)
            self._report_faults()

    def _next_done(self) -> int | None:
        """The next finished batch (None after the last); meanwhile watch for fatal errors and
        dead GPUs."""
        while True:
            if self._fatal is not None:
                raise self._fatal
            if self._made is not None and self._yielded == self._made:
                return None
            try:
                index = self._done.get(timeout=0.1)
            except stdlib_queue.Empty:
                self._restart_cpu_if_needed()
                continue
            if index is not None:  # None: the master made its last batch
                self._yielded += 1
                return index

    def _restart_cpu_if_needed(self) -> None:
        """Every GPU failed and no CPU worker is left: start CPU workers to finish the queue."""
        if not self._gpus_failed():
            return
        if any(t.is_alive() for t in self._cpu_threads):
            return
        for _ in range(max(1, self.options.cpu_workers)):
            self._start(CpuScorer(self._queue.stopping), is_gpu=False)

    def _report_faults(self) -> None:
        for record in self._gpu_stats:
            if record.error:
                _log.warning(f"GPU consumer {record.name} failed ({record.error}); its blocks were returned to the "
                             f"queue and finished by the CPU workers")
            elif record.retries:
                _log.info(f"GPU consumer {record.name} ran out of device memory {record.retries} time(s) and went "
                          f"on after a back-off")

    # -- the master ------------------------------------------------------------------------

    def _master(self, batches: Iterable[ReadBatch]) -> None:
        """Build every batch's blocks in order and queue them; waits for a free batch slot."""
        try:
            made = iter(batches)
            for index in itertools.count():
                while not self._slots.acquire(timeout=0.1):
                    if self._queue.cancelled:
                        return
                reads = next(made, None)
                if reads is None:
                    self._made = index
                    self._done.put(None)
                    break
                if reads.groups is not None:
                    if not self._put_grouped(index, reads):
                        return
                    continue
                n_edges = self.n_edges if reads.edges is None else len(reads.edges)
                n_blocks = block_count(n_edges, self.width)
                cells = n_edges * reads.residues * self.n_columns
                self._batches[index] = _Batch(reads, Candidates.empty(reads.count, self.k), cells, n_edges)
                self._queue.plan(index, n_blocks, cells)
                for block_index in range(n_blocks):
                    if not self._queue.put(self._item(index, self._block(block_index, reads.edges), 0, reads.count)):
                        return
                self._queue.seal(index)
            self._queue.close()
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            self._fail(error)

    def _put_grouped(self, index: int, reads: ReadBatch) -> bool:
        """Queue a grouped batch (`ReadBatch.groups`): each group's edges in blocks of W, each
        block an item against the group's reads; False if the run was cancelled."""
        groups, offsets, m = reads.groups, reads.offsets, self.n_columns
        edge_ptr, slot_ptr = groups.edge_ptr, groups.slot_ptr
        sizes, residues = np.diff(edge_ptr), offsets[slot_ptr[1:]] - offsets[slot_ptr[:-1]]
        cells = int((sizes * residues).sum()) * m
        n_blocks = int(sum(block_count(int(size), self.width) for size in sizes))
        self._batches[index] = _Batch(reads, Candidates.empty(reads.count, self.k), cells, len(reads.edges))
        self._queue.plan(index, n_blocks, cells)
        for g in range(groups.count):
            first_slot, end_slot = int(slot_ptr[g]), int(slot_ptr[g + 1])
            if first_slot == end_slot or sizes[g] == 0:
                continue
            for position in range(int(edge_ptr[g]), int(edge_ptr[g + 1]), self.width):
                end = min(position + self.width, int(edge_ptr[g + 1]))
                block = self._block(position // self.width, reads.edges[position:end], first=position)
                item = WorkItem(index, block, block.n_edges * int(residues[g]) * m, (first_slot, end_slot),
                                grouped=True)
                if not self._queue.put(item):
                    return False
        self._queue.seal(index)
        return True

    def _block(self, index: int, subset: np.ndarray | None = None, first: int | None = None) -> Block:
        """Block `index` of every edge, or of the ascending edge `subset` (its lanes numbered from
        index * W within the subset; or, given `first`, the edges `subset` themselves, lanes
        numbered from `first`: a grouped batch's), built from the profiles; kept for later
        batches when they fit."""
        if first is not None:
            edge_ids = subset
            key = edge_ids.tobytes()
        else:
            first = index * self.width
            if subset is None:
                key, edge_ids = index, np.arange(first, min(first + self.width, self.n_edges))
            else:
                edge_ids = subset[first:first + self.width]
                key = edge_ids.tobytes()
        block = self._cache.get(key)
        if block is None:
            started = time.perf_counter()
            lanes = self.build_lanes(edge_ids, self.width) if self.build_lanes is not None else None
            if lanes is None:
                block = make_block(index, first, self.build_profiles(edge_ids), self.width, self.costs)
            else:
                block = Block(index, first, len(edge_ids), lanes, self.costs)
            self.build_seconds += time.perf_counter() - started
            if subset is None:  # every edge's blocks: all kept where they all fit, else none
                if self._cache_blocks:
                    self._cache.keep(key, block, always=True)
            else:
                self._cache.keep(key, block)
        elif block.first_edge != first:  # the same edges at another position of another subset
            block = replace(block, index=index, first_edge=first)
        return block

    # -- the consumers -----------------------------------------------------------------------

    def _start(self, scorer: Scorer, is_gpu: bool, name: str | None = None) -> None:
        record = ConsumerStats(name=name or scorer.name)
        self.consumers.append(record)
        thread = threading.Thread(target=self._consume, args=(scorer, record, is_gpu),
                                  name=f"papara-{record.name}", daemon=True)
        self._threads.append(thread)
        if is_gpu:
            self._gpu_stats.append(record)
        else:
            self._cpu_stats.append(record)
            self._cpu_threads.append(thread)
        thread.start()

    def _consume(self, scorer: Scorer, stats: ConsumerStats, is_gpu: bool) -> None:
        """Consumer loop: a CPU worker takes one item at a time, a GPU thread one launch's items
        (one read range); each scores them and folds the result into the batch's lists."""
        rng = random.Random(f"{self.options.jitter_seed}:{stats.name}")
        chunks = 0
        try:
            if not is_gpu:
                accept = lambda item, untaken: self._cpu_may_take(item, untaken, stats)  # noqa: E731
                while (item := self._queue.take_for_cpu(accept)) is not None:
                    batch = self._taken(item.batch)
                    try:
                        result = self._timed_score(scorer, stats, [item.block], batch.reads.slice(*item.reads), rng)
                    except CancelledError:  # the run stopped (the queue cancelled): nothing more to do
                        return
                    self._fold(stats, batch, item.batch, [(item.reads[0], result)], [item])
                    self._queue.finished(1)
                return
            injected_oom = 0
            in_a_row = 0  # out-of-memory faults since the last launch that worked
            while True:
                items = self._queue.take(scorer.max_blocks, fill=True, grouped_cells=self.options.grouped_launch_cells)
                if not items:
                    return
                batch = self._taken(items[0].batch)
                try:
                    if self.options.fail_after_chunks is not None and chunks >= self.options.fail_after_chunks:
                        raise _InjectedFault(f"injected fault after {chunks} chunks")
                    if self.options.oom_after_chunks is not None and chunks >= self.options.oom_after_chunks \
                            and injected_oom < self.options.oom_failures:
                        injected_oom += 1
                        raise _InjectedOutOfMemory(chunks)
                    if items[0].grouped:
                        results = self._timed_score_groups(scorer, stats, items, batch.reads, rng)
                    else:
                        results = [(items[0].reads[0], self._timed_score(scorer, stats, [item.block for item in items],
                                                                         batch.reads.slice(*items[0].reads), rng))]
                except Exception as error:  # a device fault: hand the blocks back
                    text = f"{type(error).__name__}: {error}"
                    if len(stats.faults) < 20:
                        stats.faults.append(text)
                    self._queue.put_back(items)
                    if is_out_of_memory(error) and in_a_row < self.options.oom_retries:
                        # memory another process holds may come back: wait, then try again
                        delay = self.options.oom_backoff_seconds * (2 ** in_a_row)
                        in_a_row += 1
                        stats.retries += 1
                        if self._queue.cancelled:
                            return
                        time.sleep(delay)
                        continue
                    stats.error = text  # stop this consumer
                    if self._gpus_failed():
                        self._queue.release_to_cpus()
                    return
                in_a_row = 0
                chunks += 1
                self._fold(stats, batch, items[0].batch, results, items)
                self._queue.finished(len(items))
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            self._fail(error)

    def _cpu_may_take(self, item: WorkItem, untaken_cells: int, stats: ConsumerStats) -> bool:
        """Whether a CPU worker takes `item` now. Not while the caller holds a yielded batch
        (with GPUs alive): the caller's traceback uses every core, and the GPUs wait for the
        caller, who hands back the slot for the master's next batch. Scoring beside it, 15
        workers slowed the traceback by half and left the GPU idle 2.0-2.5 s of a 10 s run, for
        1% of the cells (notebook/BENCHMARKS.md, Hybrid, fourth round). Nor when the GPUs would finish
        what is left first (the tail rule)."""
        if self.options.cpu_yields_to_caller and self.gpu_scorers and not self._gpus_failed() \
                and not self._caller_idle.is_set():
            return False
        return not self._leave_to_gpus(item, untaken_cells, stats)

    def _gpus_failed(self) -> bool:
        return bool(self._gpu_stats) and all(s.error for s in self._gpu_stats)

    def _divider(self, index: int) -> Divider | None:
        """How batch `index` is divided between the GPUs and the CPU workers (module docstring),
        or None when it is not (no CPU worker, or no GPU)."""
        if not (self.use_cpu and self.options.cpu_workers > 0 and self.gpu_scorers) or self._gpus_failed():
            return None
        batch = self._batches[index]
        if batch.reads.groups is not None:  # a grouped batch goes to the GPUs whole
            return None
        offsets = batch.reads.offsets
        residues = int(offsets[-1] - offsets[0])
        # what each side can score per second: the workers' own speed over the share of the run
        # they may work (not while the caller holds a batch). Cells delivered so far would not
        # do: a side given little delivers little and would be given less and less.
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        workable = 1.0 - min(self._caller_seconds / elapsed, 0.95) if self.options.cpu_yields_to_caller else 1.0
        cpu_rate = sum(s.rate() for s in self._cpu_stats) * workable
        gpu_rate = self._gpu_rate()
        if cpu_rate > 0 and gpu_rate > 0:
            cpu_residues = residues * cpu_rate / (cpu_rate + gpu_rate)
        else:
            cpu_residues = min(self.options.cpu_workers * self.options.cpu_first_cells / (batch.n_edges * self.n_columns),
                               self.options.cpu_first_share * residues)
        pieces = cpu_pieces(offsets, cpu_residues,
                            -(-2 * self.options.cpu_workers // block_count(batch.n_edges, self.width)))
        if not pieces:
            return None
        first_cpu_read = pieces[0][0]

        def divide(item: WorkItem) -> tuple[WorkItem, list[WorkItem]]:
            return (self._item(index, item.block, item.reads[0], first_cpu_read),
                    [self._item(index, item.block, first, end, cpu_piece=True) for first, end in pieces])
        return divide

    def _item(self, index: int, block: Block, first: int, end: int, cpu_piece: bool = False) -> WorkItem:
        """The work of `block` against reads [first, end) of batch `index`, with its cell count."""
        offsets = self._batches[index].reads.offsets
        return WorkItem(index, block, block.n_edges * int(offsets[end] - offsets[first]) * self.n_columns,
                        (first, end), cpu_piece)

    def _taken(self, index: int) -> _Batch:
        """Batch `index`, of which a consumer takes work now (the first take is its `batch_started`)."""
        with self._lock:
            self.batch_started.setdefault(index, time.perf_counter())
        return self._batches[index]

    def _timed_score(self, scorer: Scorer, stats: ConsumerStats, blocks: list[Block], reads: ReadBatch,
                     rng: random.Random) -> Candidates:
        if self.options.jitter_seconds:
            time.sleep(rng.uniform(0, self.options.jitter_seconds))
        started = time.perf_counter()
        result = scorer.score(blocks, reads, self.params, self.k)
        stats.busy_seconds += time.perf_counter() - started
        stats.calls += 1
        return result

    def _timed_score_groups(self, scorer: Scorer, stats: ConsumerStats, items: list[WorkItem], reads: ReadBatch,
                            rng: random.Random) -> list[tuple[int, Candidates]]:
        """One GPU launch of a grouped batch's items (several groups, each its blocks against its
        own reads): the scorer's `score_groups` where it has one, else a call per group; returns
        (first read, candidates of the group's reads) per group."""
        by_group: dict[tuple[int, int], list[Block]] = {}
        for item in items:
            by_group.setdefault(item.reads, []).append(item.block)
        groups = [(sorted(blocks, key=lambda b: b.first_edge), span) for span, blocks in by_group.items()]
        if self.options.jitter_seconds:
            time.sleep(rng.uniform(0, self.options.jitter_seconds))
        started = time.perf_counter()
        score_groups = getattr(scorer, "score_groups", None)
        if score_groups is not None:
            found = score_groups([(blocks, reads.group_reads(*span)) for blocks, span in groups], self.params, self.k)
        else:
            found = [scorer.score(blocks, reads.group_reads(*span), self.params, self.k) for blocks, span in groups]
        stats.busy_seconds += time.perf_counter() - started
        stats.calls += 1
        return [(span[0], result) for (_, span), result in zip(groups, found)]

    def _leave_to_gpus(self, item: WorkItem, untaken_cells: int, stats: ConsumerStats) -> bool:
        """True if the live GPUs would finish `untaken_cells` (what is left of `item`'s batch
        and the ones before it) before this worker finished `item`."""
        if not self.options.balance_tail:
            return False
        return leave_to_gpus(item.cells, stats.rate(), self._gpu_rate(), untaken_cells)

    def _gpu_rate(self) -> float:
        """Cells per second of the live GPUs while they work (their feeders' rates add up)."""
        return sum(s.rate() for s in self._gpu_stats if not s.error)

    def _fold(self, stats: ConsumerStats, batch: _Batch, index: int, results: list[tuple[int, Candidates]],
              items: list[WorkItem]) -> None:
        """Merge results (first read, candidates of the reads from there) for the items' reads into
        batch `index`; count the work in `stats` (a block counts for whoever scores the item that is
        not a CPU piece); hand over finished batches."""
        cells = sum(item.cells for item in items)
        blocks = [item for item in items if not item.cpu_piece]
        stats.cells += cells
        stats.blocks += len(blocks)
        stats.edges += sum(item.block.n_edges for item in blocks)
        with batch.lock:
            for first, result in results:
                batch.candidates.add(result, first)
            batch.cells_left -= cells
            done = batch.cells_left == 0
        with self._lock:
            self.on_progress(len(blocks), cells)
        if done:
            self.scoring_seconds = time.perf_counter() - self._started
            self._done.put(index)

    def _fail(self, error: BaseException) -> None:
        if self._fatal is None:
            self._fatal = error
        self._queue.cancel()


def cpu_pieces(offsets: np.ndarray, cpu_residues: float, pieces: int) -> list[tuple[int, int]]:
    """The CPU part of a batch with read `offsets`: the last reads, holding at most
    `cpu_residues` residues, as `pieces` read ranges of about equal residues (fewer where reads
    are too few). Empty when not one read fits; the first read always stays with the GPUs."""
    count = offsets.shape[0] - 1
    first = max(1, int(np.searchsorted(offsets, offsets[-1] - cpu_residues, side="left")))
    if first >= count:
        return []
    cuts = np.searchsorted(offsets, offsets[first] + (offsets[-1] - offsets[first]) * np.arange(1, pieces) / pieces)
    bounds = sorted({first, count, *(int(c) for c in cuts if first < c < count)})
    return list(zip(bounds[:-1], bounds[1:]))


def leave_to_gpus(cells: float, own_rate: float, gpu_rate: float, untaken_cells: float) -> bool:
    """The tail rule: a CPU worker leaves `cells` to the GPUs if they would score every untaken
    cell (at `gpu_rate` cells/s) before it scored `cells` at `own_rate`; never while a rate is
    still unknown (0)."""
    if own_rate <= 0 or gpu_rate <= 0:
        return False
    return cells / own_rate > untaken_cells / gpu_rate

