"""The one shared work queue of DESIGN 6: the master pushes work items, consumers compete.

A work item is one block of W edges for a range of reads of one batch (the whole batch when the
master puts it; a CPU worker that stops part way hands back the rest). CPU workers take one item
at a time, a GPU thread up to `--gpu-chunk` items of one batch and read range (one kernel launch
scores one set of reads).
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

    @property
    def launch_key(self) -> tuple[int, tuple[int, int]]:
        """Items with one key can share a GPU launch: same batch, same reads."""
        return self.batch, self.reads


class WorkQueue:
    """A bounded FIFO of work items with a `close` that tells consumers no more will come."""

    def __init__(self, capacity: int) -> None:
        self._items: deque[WorkItem] = deque()
        self._capacity = max(1, capacity)
        self._closed = False
        self._cancelled = False
        self._sealed_batches: set[int] = set()  # batches whose every item has been put
        self._in_flight = 0  # taken, neither finished nor handed back: may still come back
        self._untaken_cells = 0  # cells of planned items not taken yet (queued or still to build)
        self._changed = threading.Condition()

    def plan(self, cells: int) -> None:
        """Announce work the master will put, so consumers can judge what remains."""
        with self._changed:
            self._untaken_cells += cells

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
        """Return items a consumer did not finish; they are taken first."""
        with self._changed:
            self._items.extendleft(reversed(items))
            self._in_flight -= len(items)
            self._untaken_cells += sum(item.cells for item in items)
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

    def untaken_cells(self) -> int:
        """Cells of the work nobody has taken yet, built or not."""
        with self._changed:
            return self._untaken_cells

    def take(self, max_items: int, fill: bool = False) -> list[WorkItem]:
        """Up to `max_items` items with the head item's launch key; waits for at least one.

        Returns [] when the queue is finished: closed, empty and nothing in flight (while another
        consumer holds items it might hand back after a failure, an idle consumer waits for
        them). With `fill`, waits until `max_items` of the head batch are queued, unless that
        batch is sealed, the queue is full or closed: a GPU launch should not go out half empty
        just because the master is a moment behind.
        """
        with self._changed:
            while not self._cancelled:
                if self._items:
                    if not fill or self._head_ready(max_items):
                        break
                elif self._closed and not self._in_flight:
                    break
                self._changed.wait()
            if self._cancelled:
                return []
            taken: list[WorkItem] = []
            key = self._items[0].launch_key if self._items else None
            while self._items and len(taken) < max_items and self._items[0].launch_key == key:
                taken.append(self._items.popleft())
            self._in_flight += len(taken)
            self._untaken_cells -= sum(item.cells for item in taken)
            self._changed.notify_all()
            return taken

    def _head_ready(self, max_items: int) -> bool:
        head = self._items[0].batch
        if (self._closed or head in self._sealed_batches or len(self._items) >= self._capacity
                or self._items[-1].batch != head):
            return True
        return len(self._items) >= max_items
