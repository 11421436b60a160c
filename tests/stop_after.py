"""A stop set part-way through a call, for the tests of how a stopped run ends the work in hand
(engine/cpu.score_block, model/decode.decode_batch)."""

from __future__ import annotations

import threading


class StopAfter(threading.Event):
    """A threading.Event that reads as set from its `looks + 1`-th look on, as if a run were
    stopped while the call ran; `passed` counts the looks that let a slice start."""

    def __init__(self, looks: int) -> None:
        super().__init__()
        self.looks, self.seen, self.passed = looks, 0, 0

    def is_set(self) -> bool:
        self.seen += 1
        stopped = self.seen > self.looks or super().is_set()
        self.passed += not stopped
        return stopped
