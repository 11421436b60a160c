"""The one shared work queue of DESIGN 6: the master pushes work items, consumers compete.

A work item is one block of W edges for a range of reads of one batch (the whole batch when the
master puts it; a CPU worker that stops part way hands back the rest). CPU workers take one item
at a time, a GPU feeder thread up to `--gpu-chunk` items of one batch and read range (one kernel
launch scores one set of reads).

Items a CPU worker handed back at a batch's tail are for the GPUs: CPU workers skip them (else
the worker that just left one would take it again) until `release_handed_back` says no GPU is
left. A GPU takes all handed-back items of one batch together, as one launch over the union of
their read ranges: the workers stopped at nearly the same read, and one wide launch costs far
less than one launch per block. The few reads a block then scores twice give the same pairs
again, which the candidate merge ignores (engine/topk.py).
Items of several batches may be queued at once, so that CPU workers can start on the next batch
while the previous one is traced back and written.

A consumer that fails hands its unfinished items back so another finishes them. The queue is
bounded so that a master building faster than the consumers score cannot fill memory with
profiles; items handed back bypass the bound (the master may be waiting on it).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from papara_py.engine.layout import Block


@dataclass(frozen=True)
class WorkItem:
    """One block of edges to score against reads [first, end) of batch `batch`.

    `cells` = E_block x residues of those reads x m (DESIGN 4).
    """

    batch: int
    block: Block
    cells: int
    reads: tuple[int, int]
    handed_back: bool = False  # the unscored rest of a CPU worker's item, left to the GPUs

    @property
    def launch_key(self) -> tuple[int, tuple[int, int]]:
        """Items with one key can share a GPU launch: same batch, same reads."""
        return self.batch, self.reads


def launch_reads(items: list[WorkItem]) -> tuple[int, int]:
    """The read range one launch over `items` (one batch) must score: the union of theirs."""
    return min(item.reads[0] for item in items), max(item.reads[1] for item in items)


class WorkQueue:
    """A bounded FIFO of work items with a `close` that tells consumers no more will come."""

    def __init__(self, capacity: int) -> None:
        self._items: deque[WorkItem] = deque()
        self._capacity = max(1, capacity)
        self._closed = False
        self._cancelled = False
        self._sealed_batches: set[int] = set()  # batches whose every item has been put
        self._in_flight = 0  # taken, neither finished nor handed back: may still come back
        self._untaken_cells: dict[int, int] = {}  # per batch: cells planned but not taken yet
        self._untaken_items: dict[int, int] = {}  # per batch: items planned but not taken yet
        self._handed_back_for_all = False
        self._changed = threading.Condition()

    def plan(self, batch: int, items: int, cells: int) -> None:
        """Announce the items of `batch` and their cells before putting them, so consumers can
        judge what remains of it."""
        with self._changed:
            self._untaken_items[batch] = self._untaken_items.get(batch, 0) + items
            self._untaken_cells[batch] = self._untaken_cells.get(batch, 0) + cells

    def put(self, item: WorkItem) -> bool:
        """Add an item, waiting while the queue is full; False if the run was cancelled."""
        with self._changed:
            while len(self._items) >= self._capacity and not self._cancelled:
                self._changed.wait()
            if self._cancelled:
                return False
            self._items.append(item)
            self._changed.notify_all()
            return True

    def seal(self, batch: int) -> None:
        """Every item of `batch` has been put (a GPU then stops waiting to fill a launch)."""
        with self._changed:
            self._sealed_batches.add(batch)
            self._changed.notify_all()

    def put_back(self, items: list[WorkItem]) -> None:
        """Return items a consumer did not finish. A failed consumer's items are taken first; a
        CPU worker's handed-back rest goes behind the queued items of its batch, so that the
        GPUs launch those first and the rests handed back meanwhile join one launch (queued
        first, they went out one or two at a time, as small launches that left the device
        idle between them; BENCHMARKS.md, Hybrid)."""
        with self._changed:
            for item in items:
                if item.handed_back:
                    later = next((i for i, queued in enumerate(self._items) if queued.batch > item.batch),
                                 len(self._items))
                    self._items.insert(later, item)
            self._items.extendleft(reversed([item for item in items if not item.handed_back]))
            self._in_flight -= len(items)
            self._count_untaken(items, +1)
            self._changed.notify_all()

    def release_handed_back(self) -> None:
        """No GPU is left: CPU workers may take items handed back to the GPUs from now on."""
        with self._changed:
            self._handed_back_for_all = True
            self._changed.notify_all()

    def finished(self, count: int) -> None:
        """A consumer is done with `count` items it took."""
        with self._changed:
            self._in_flight -= count
            self._changed.notify_all()

    def close(self) -> None:
        """No more items will be put (items handed back later are still served)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def cancel(self) -> None:
        """Stop the run: drop queued items and wake everyone (Ctrl-C, a fatal error)."""
        with self._changed:
            self._cancelled = True
            self._items.clear()
            self._changed.notify_all()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def untaken_cells(self, through_batch: int) -> int:
        """Cells of batches up to `through_batch` that nobody has taken yet, built or not."""
        with self._changed:
            return sum(cells for batch, cells in self._untaken_cells.items() if batch <= through_batch)

    def take(self, max_items: int, fill: bool = False) -> list[WorkItem]:
        """Items for one GPU launch, at most `max_items`; waits for at least one.

        The items share the head item's launch key, or are all handed-back items of its batch
        (see the module docstring; `launch_reads` gives the range to score). What is left of the
        head's batch goes out in even launches: 67 items with max_items 40 as 34 + 33, not
        40 + 27, and 82 as 28 + 27 + 27, not 40 + 40 + 2 (a small launch leaves most of a GPU
        idle, and each launch costs a fixed time). Returns [] when the queue is finished:
        closed, empty and nothing in flight (while another consumer holds items it might hand
        back after a failure, an idle consumer waits for them). With `fill`, waits until the
        launch's items are queued, unless the head's batch is sealed, the queue is full or
        closed: a GPU launch should not go out half empty just because the master is a moment
        behind.
        """
        def launch_size() -> int:
            left = self._untaken_items.get(self._items[0].batch, 0)
            if left < 1:  # a batch put without a plan (tests): no even split
                return max_items
            return -(-left // -(-left // max(1, max_items)))

        with self._changed:
            if not self._wait_for(lambda: bool(self._items) and (not fill or self._head_ready(launch_size()))):
                return []
            head = self._items[0]
            count = launch_size()
            if head.handed_back:
                taken = [item for item in self._items if item.handed_back and item.batch == head.batch]
                taken = taken[:max_items]
                self._remove(taken)
            else:
                taken = []
                while self._items and len(taken) < count and self._items[0].launch_key == head.launch_key:
                    taken.append(self._items.popleft())
            return self._hand_out(taken)

    def take_for_cpu(self) -> WorkItem | None:
        """The first item a CPU worker may take (not one handed back to the GPUs, while one is
        left); waits for it; None when the queue is finished."""
        def first() -> WorkItem | None:
            return next((item for item in self._items
                         if not item.handed_back or self._handed_back_for_all), None)

        with self._changed:
            if not self._wait_for(lambda: first() is not None):
                return None
            item = first()
            self._remove([item])
            return self._hand_out([item])[0]

    def _wait_for(self, ready) -> bool:
        """Wait (holding the lock) until `ready()`; False if cancelled or finished first."""
        while not self._cancelled:
            if ready():
                return True
            if not self._items and self._closed and not self._in_flight:
                return False
            self._changed.wait()
        return False

    def _remove(self, items: list[WorkItem]) -> None:
        """Remove these very items (by identity: items compare by value, blocks hold arrays)."""
        ids = {id(item) for item in items}
        self._items = deque(item for item in self._items if id(item) not in ids)

    def _hand_out(self, taken: list[WorkItem]) -> list[WorkItem]:
        self._in_flight += len(taken)
        self._count_untaken(taken, -1)
        self._changed.notify_all()
        return taken

    def _count_untaken(self, items: list[WorkItem], sign: int) -> None:
        for item in items:
            self._untaken_items[item.batch] = self._untaken_items.get(item.batch, 0) + sign
            self._untaken_cells[item.batch] = self._untaken_cells.get(item.batch, 0) + sign * item.cells

    def _head_ready(self, max_items: int) -> bool:
        head = self._items[0].batch
        if (self._closed or head in self._sealed_batches or len(self._items) >= self._capacity
                or self._items[-1].batch != head):
            return True
        return len(self._items) >= max_items
