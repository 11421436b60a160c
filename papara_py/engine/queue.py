"""The one shared work queue of DESIGN 6: the master pushes edge blocks, consumers compete.

CPU workers take one block at a time, the GPU thread up to `--gpu-chunk` blocks. A consumer that
fails hands its unfinished blocks back so another finishes them. The queue is bounded so that a
master building faster than the consumers score cannot fill memory with profiles; blocks handed
back bypass the bound (the master may be waiting on it).
"""

from __future__ import annotations

import threading
from collections import deque

from papara_py.engine.layout import Block


class BlockQueue:
    """A bounded FIFO of blocks with a `close` that tells consumers no more will come."""

    def __init__(self, capacity: int) -> None:
        self._blocks: deque[Block] = deque()
        self._capacity = max(1, capacity)
        self._closed = False
        self._cancelled = False
        self._in_flight = 0  # taken, neither finished nor handed back: may still come back
        self._changed = threading.Condition()

    def put(self, block: Block) -> bool:
        """Add a block, waiting while the queue is full; False if the run was cancelled."""
        with self._changed:
            while len(self._blocks) >= self._capacity and not self._cancelled:
                self._changed.wait()
            if self._cancelled:
                return False
            self._blocks.append(block)
            self._changed.notify_all()
            return True

    def put_back(self, blocks: list[Block]) -> None:
        """Return blocks a failed consumer could not finish; they are taken first."""
        with self._changed:
            self._blocks.extendleft(reversed(blocks))
            self._in_flight -= len(blocks)
            self._changed.notify_all()

    def finished(self, count: int) -> None:
        """A consumer is done with `count` blocks it took."""
        with self._changed:
            self._in_flight -= count
            self._changed.notify_all()

    def close(self) -> None:
        """No more blocks will be put (blocks handed back later are still served)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def cancel(self) -> None:
        """Stop the run: drop queued blocks and wake everyone (Ctrl-C, a fatal error)."""
        with self._changed:
            self._cancelled = True
            self._blocks.clear()
            self._changed.notify_all()

    def take(self, max_blocks: int) -> list[Block]:
        """Up to `max_blocks` blocks; waits for at least one; [] when the queue is finished.

        Finished means closed, empty and nothing in flight: while another consumer holds blocks
        it might hand back after a failure, an idle consumer keeps waiting for them.
        """
        with self._changed:
            while not self._blocks and not self._cancelled and (not self._closed or self._in_flight):
                self._changed.wait()
            if self._cancelled:
                return []
            taken = [self._blocks.popleft() for _ in range(min(max_blocks, len(self._blocks)))]
            self._in_flight += len(taken)
            self._changed.notify_all()
            return taken
