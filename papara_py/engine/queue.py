"""The one shared work queue of DESIGN 6: the master pushes work items, consumers compete.

A work item is one block of W edges against a range of reads of one batch. The master puts one
item per block against the whole batch. With GPUs and CPU workers together, the queue divides
each batch in two read ranges when the GPUs come to it (`divide`, supplied by the engine): the
GPU part, reads [0, r) of every block, stays in the main queue and goes out in GPU launches; the
CPU part, reads [r, Q) of every block (cut into a few pieces), goes to a second list that CPU
workers take one item at a time. Every block's items of one part share one read range, so a
GPU launch always scores one read set (DESIGN 6's chunk of consecutive blocks).

Why two parts decided up front, not a CPU worker handing back the rest of a block at a batch's
tail: the hand-backs came back as short GPU launches over mixed read ranges, and the device
idled around them (notebook/BENCHMARKS.md, Hybrid). Now the GPUs only ever launch over whole parts: CPU
pieces that no CPU worker took by the time every GPU item of their batch (and the batches
before) is taken are "stale", and a GPU takes them, an even launch over one read range, before
it moves on. The GPUs therefore never wait for the CPU workers, and the CPU workers never hold
back a batch: they leave a piece to the GPUs when the GPUs would finish everything left of its
batch first (the tail rule, asked through `take_for_cpu`'s `accept`).

The division is made as late as possible, so that it uses the rates measured so far: when a GPU
first takes an item of a batch, for that batch and the next (the lookahead gives the CPU
workers the next batch's pieces while the GPUs finish the last launches of this one). Items of a
divided batch put later are divided as they are put. Without GPUs (or once every GPU failed,
`release_to_cpus`) CPU workers take anything, the main queue's items included.

A consumer that fails hands its unfinished items back (`put_back`) so another finishes them. The
queue may be bounded, so that a master building faster than the consumers score cannot fill
memory with profiles (the engine bounds it when the blocks are not all kept anyway); items handed
back bypass the bound (the master may be waiting on it), and a full queue makes every CPU piece
stale, so the GPUs drain it even if the CPU workers do not.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable

from papara_py.engine.layout import Block


@dataclass(frozen=True)
class WorkItem:
    """One block of edges to score against reads [first, end) of batch `batch`.

    `cells` = E_block x residues of those reads x m (DESIGN 4). `cpu_piece` marks the CPU part
    of a divided batch (engine/queue.py's module docstring); the block is counted as done by
    whoever scores the item that is not a piece.
    """

    batch: int
    block: Block
    cells: int
    reads: tuple[int, int]
    cpu_piece: bool = False
    #: an item of a grouped batch (the guided search's rounds, engine/read_batch.EdgeGroups): its
    #: reads are its group's; a GPU launch takes items of several groups (`take`'s `grouped_cells`)
    grouped: bool = False

    @property
    def launch_key(self) -> tuple[int, tuple[int, int] | None]:
        """Items with one key can share a GPU launch: same batch, same reads (any reads of a
        grouped batch: the GPU scores each group's blocks against its own reads)."""
        return self.batch, None if self.grouped else self.reads


#: Divides one item of a batch into its GPU part and its CPU pieces (the engine's rule).
Divider = Callable[[WorkItem], tuple[WorkItem, list[WorkItem]]]


def even_launch(left: int, max_items: int) -> int:
    """The size of the next launch when `left` items remain: as even as possible, at most
    `max_items`. 67 items with max 40 go out as 34 + 33, not 40 + 27, and 82 as 28 + 27 + 27, not
    40 + 40 + 2: a small launch leaves most of a GPU idle, and each launch costs a fixed time."""
    if left < 1:
        return max_items
    return -(-left // -(-left // max(1, max_items)))


class WorkQueue:
    """Main FIFO (whole items, GPU parts) plus the CPU pieces, with a `close` that tells consumers
    no more will come. `divide(batch)` returns the divider of a batch, or None to leave it whole
    (no GPU, or no CPU worker); it is called under the queue's lock, once per batch."""

    def __init__(self, capacity: int | None, divide: Callable[[int], Divider | None] = lambda batch: None) -> None:
        self._items: deque[WorkItem] = deque()
        self._pieces: dict[int, deque[WorkItem]] = {}  # CPU pieces per batch
        self._capacity = None if capacity is None else max(1, capacity)
        self._divide = divide
        self._dividers: dict[int, Divider | None] = {}  # batches decided so far
        self._closed = False
        self.stopping = threading.Event()  # set by `cancel`: consumers end what they hold at its next slice
        self._sealed_batches: set[int] = set()  # batches whose every item has been put
        self._in_flight = 0  # taken, neither finished nor handed back: may still come back
        self._untaken_cells: dict[int, int] = {}  # per batch: cells planned but not taken yet
        self._untaken_items: dict[int, int] = {}  # per batch: main-queue items planned but not taken yet
        self._planned_cells: dict[int, int] = {}  # per batch: cells planned, and cells put so far
        self._put_cells: dict[int, int] = {}
        self._cpus_take_all = False
        self._changed = threading.Condition()

    def plan(self, batch: int, items: int, cells: int) -> None:
        """Announce the items of `batch` and their cells before putting them, so consumers can
        judge what remains of it."""
        with self._changed:
            self._untaken_items[batch] = self._untaken_items.get(batch, 0) + items
            self._untaken_cells[batch] = self._untaken_cells.get(batch, 0) + cells
            self._planned_cells[batch] = self._planned_cells.get(batch, 0) + cells

    def put(self, item: WorkItem) -> bool:
        """Add an item, waiting while the queue is full; False if the run was cancelled."""
        with self._changed:
            while self._full() and not self.stopping.is_set():
                self._changed.wait()
            if self.stopping.is_set():
                return False
            self._put_cells[item.batch] = self._put_cells.get(item.batch, 0) + item.cells
            divider = self._dividers.get(item.batch)
            if divider is None:
                self._items.append(item)
            else:
                gpu_part, pieces = divider(item)
                self._items.append(gpu_part)
                self._add_pieces(pieces)
            self._changed.notify_all()
            return True

    def seal(self, batch: int) -> None:
        """Every item of `batch` has been put (a GPU then stops waiting to fill a launch)."""
        with self._changed:
            self._sealed_batches.add(batch)
            self._changed.notify_all()

    def put_back(self, items: list[WorkItem]) -> None:
        """Return the items a failed consumer did not finish; they are taken first."""
        with self._changed:
            self._items.extendleft(reversed([item for item in items if not item.cpu_piece]))
            for item in reversed([item for item in items if item.cpu_piece]):
                self._pieces.setdefault(item.batch, deque()).appendleft(item)
            self._in_flight -= len(items)
            self._count_untaken(items, +1)
            self._changed.notify_all()

    def release_to_cpus(self) -> None:
        """No GPU is left: CPU workers may take any item from now on."""
        with self._changed:
            self._cpus_take_all = True
            self._changed.notify_all()

    def reconsider(self) -> None:
        """Something the consumers' `accept` looks at changed: let waiting consumers look again."""
        with self._changed:
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
            self.stopping.set()
            self._items.clear()
            self._pieces.clear()
            self._changed.notify_all()

    @property
    def cancelled(self) -> bool:
        return self.stopping.is_set()

    def take(self, max_items: int, fill: bool = False, grouped_cells: int | None = None) -> list[WorkItem]:
        """Items for one GPU launch, at most `max_items`, all of one launch key; waits for one.
        Items of a grouped batch go out by cells instead: about `grouped_cells` a launch, in even
        launches of what is left of the batch (as `even_launch` does by items), whatever their
        count.

        Stale CPU pieces of the oldest batch go first (module docstring), then the main queue's
        head: what is left of the head's batch goes out in even launches (`even_launch`).
        Returns [] when the queue is finished: closed, empty and nothing in flight (while another
        consumer holds items it might hand back after a failure, an idle consumer waits for
        them). With `fill`, waits until the launch's items are queued, unless the head's batch
        is sealed, the queue is full or closed: a GPU launch should not go out half empty just
        because the master is a moment behind.
        """
        with self._changed:
            if not self._wait_for(lambda: self._stale_batch() is not None
                                  or (bool(self._items) and (not fill or self._head_ready(max_items, grouped_cells)))):
                return []
            stale = self._stale_batch()
            if stale is not None:
                key = self._pieces[stale][0].launch_key
                same = [item for item in self._pieces[stale] if item.launch_key == key]
                taken = same[:even_launch(len(same), max_items)]
                self._remove_pieces(stale, taken)
                return self._hand_out(taken)
            self._decide(self._items[0].batch)
            self._decide(self._items[0].batch + 1)
            head = self._items[0]
            taken = []
            if head.grouped and grouped_cells:
                share = self._grouped_share(head.batch, grouped_cells)
                cells = 0
                while self._items and cells < share and self._items[0].launch_key == head.launch_key:
                    taken.append(self._items.popleft())
                    cells += taken[-1].cells
                return self._hand_out(taken)
            count = even_launch(self._untaken_items.get(head.batch, 0), max_items)
            while self._items and len(taken) < count and self._items[0].launch_key == head.launch_key:
                taken.append(self._items.popleft())
            return self._hand_out(taken)

    def take_for_cpu(self, accept: Callable[[WorkItem, int], bool] = lambda item, untaken: True) -> WorkItem | None:
        """The first CPU piece (any item, once no GPU is left or none ever was) that
        `accept(item, untaken cells of its batch and the ones before)` agrees to; waits for
        one; None when the queue is finished."""
        def first() -> WorkItem | None:
            # pieces of one batch are alike, so the first of each batch stands for all of them
            heads = [self._pieces[batch][0] for batch in sorted(self._pieces)]
            if self._cpus_take_all and self._items:
                heads.append(self._items[0])
            return next((item for item in heads if accept(item, self._untaken_through(item.batch))), None)

        chosen: list[WorkItem] = []

        def found() -> bool:
            item = first()
            if item is not None:
                chosen.append(item)
            return item is not None

        with self._changed:
            if not self._wait_for(found):
                return None
            item = chosen[-1]
            if item.cpu_piece:
                self._remove_pieces(item.batch, [item])
            else:
                self._items.popleft()
            return self._hand_out([item])[0]

    def _decide(self, batch: int) -> None:
        """Decide once whether and how `batch` is divided (once it is planned), and divide its
        queued items."""
        if batch in self._dividers or batch not in self._untaken_items:
            return
        divider = self._dividers[batch] = self._divide(batch)
        if divider is None:
            return
        kept: deque[WorkItem] = deque()
        for item in self._items:
            if item.batch == batch:
                gpu_part, pieces = divider(item)
                kept.append(gpu_part)
                self._add_pieces(pieces)
            else:
                kept.append(item)
        self._items = kept

    def _add_pieces(self, pieces: list[WorkItem]) -> None:
        for piece in pieces:
            self._pieces.setdefault(piece.batch, deque()).append(piece)

    def _stale_batch(self) -> int | None:
        """The batch whose CPU pieces a GPU should take now, if any: the oldest one with pieces,
        if its main items are all taken (and the batch is sealed) or the queue is full."""
        if not self._pieces:
            return None
        batch = min(self._pieces)
        if self._full() or (batch in self._sealed_batches and self._untaken_items.get(batch, 0) <= 0):
            return batch
        return None

    def _untaken_through(self, batch: int) -> int:
        """Cells of batches up to `batch` that nobody has taken yet, built or not."""
        return sum(cells for index, cells in self._untaken_cells.items() if index <= batch)

    def _full(self) -> bool:
        return self._capacity is not None and len(self._items) + self._piece_count() >= self._capacity

    def _piece_count(self) -> int:
        return sum(len(pieces) for pieces in self._pieces.values())

    def _wait_for(self, ready) -> bool:
        """Wait (holding the lock) until `ready()`; False if cancelled or finished first."""
        while not self.stopping.is_set():
            if ready():
                return True
            if not self._items and not self._pieces and self._closed and not self._in_flight:
                return False
            self._changed.wait()
        return False

    def _remove_pieces(self, batch: int, items: list[WorkItem]) -> None:
        """Remove these very pieces of `batch` (by identity: items compare by value, blocks
        hold arrays)."""
        pieces = self._pieces[batch]
        if len(items) == 1 and pieces[0] is items[0]:
            pieces.popleft()
            left = pieces
        else:
            ids = {id(item) for item in items}
            left = deque(item for item in pieces if id(item) not in ids)
        if left:
            self._pieces[batch] = left
        else:
            del self._pieces[batch]

    def _hand_out(self, taken: list[WorkItem]) -> list[WorkItem]:
        self._in_flight += len(taken)
        self._count_untaken(taken, -1)
        self._changed.notify_all()
        return taken

    def _count_untaken(self, items: list[WorkItem], sign: int) -> None:
        for item in items:
            if not item.cpu_piece:
                self._untaken_items[item.batch] = self._untaken_items.get(item.batch, 0) + sign
            self._untaken_cells[item.batch] = self._untaken_cells.get(item.batch, 0) + sign * item.cells

    def _grouped_share(self, batch: int, grouped_cells: int) -> float:
        """Cells of the next launch of grouped `batch`: what is left of it in even launches of
        about `grouped_cells`."""
        left = max(1, self._untaken_cells.get(batch, 0))
        return left / -(-left // max(1, grouped_cells))

    def _head_ready(self, max_items: int, grouped_cells: int | None = None) -> bool:
        head = self._items[0].batch
        if (self._closed or head in self._sealed_batches or self._full()
                or self._items[-1].batch != head):
            return True
        if self._items[0].grouped and grouped_cells:  # cells put and not taken yet
            queued = self._put_cells.get(head, 0) - (self._planned_cells.get(head, 0) - self._untaken_cells.get(head, 0))
            return queued >= self._grouped_share(head, grouped_cells)
        return len(self._items) >= even_launch(self._untaken_items.get(head, 0), max_items)
