"""The reads the engine scores, as one batch: `ReadBatch` (encoded reads, optionally restricted
to some edges) and `EdgeGroups` (a grouped batch's groups: the guided search's rounds,
engine/guided.py). engine/scheduler.Engine takes an iterable of them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EdgeGroups:
    """The groups of a grouped batch (`ReadBatch.groups`): group g scores the batch's reads
    slot_ptr[g]..slot_ptr[g+1]-1 against the edges at positions edge_ptr[g]..edge_ptr[g+1]-1 of
    the batch's `edges` (ascending within the group). int64 [G + 1] each."""

    edge_ptr: np.ndarray
    slot_ptr: np.ndarray

    @property
    def count(self) -> int:
        return self.edge_ptr.shape[0] - 1


@dataclass(frozen=True)
class ReadBatch:
    """Encoded reads ready for the kernels: all have 0 < n < m.

    `edges`, where given, restricts the batch to those edges (ascending edge numbers: the guided
    search of engine/guided.py hands the engine its centres this way). The engine numbers them
    0..len-1 internally and maps its candidates back; an ascending subset keeps the (score, edge)
    order, so ties and the K kept are those of the real edge numbers.

    `groups`, where given (with `edges`), makes a grouped batch: one round of the guided search,
    each group (its edges, its reads) scored by itself, all groups in the same GPU launches
    (`EdgeGroups`; a read of several groups is a read of the batch once per group, a "slot"). A
    slot's candidates hold positions of its group's edges only, ascending with the edge numbers,
    so the mapping back keeps the (score, edge) order too.
    """

    codes: np.ndarray    # [total residues] state sets (the profiles' element type: uint8 DNA, uint32 protein)
    offsets: np.ndarray  # int64 [Q + 1]
    edges: np.ndarray | None = None  # int32, ascending (within each group); None: every edge
    groups: EdgeGroups | None = None

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
        return ReadBatch(self.codes[start:self.offsets[end]], self.offsets[first:end + 1] - start, self.edges)

    def group_reads(self, first: int, end: int) -> "ReadBatch":
        """Slots [first, end) as a batch of their own, without the groups (a launch's part)."""
        start = self.offsets[first]
        return ReadBatch(self.codes[start:self.offsets[end]], self.offsets[first:end + 1] - start)
