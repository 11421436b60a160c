"""Per-read candidate lists: the K best (score, edge) pairs, merged deterministically.

A read's best edge is the lexicographic minimum of (score, edge number) (DESIGN 4), and the K
candidates are the K smallest pairs in that order (DESIGN 7). Keeping each list sorted by that
total order makes every merge associative and commutative: whichever consumer scored whichever
block, in whatever order, the merged lists are identical. A merge is a set union: a pair that
arrives twice (a GPU launch over a read range that a CPU worker partly scored) is kept once.
Empty slots hold (EMPTY_SCORE, -1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

EMPTY_SCORE = np.iinfo(np.int32).max


@njit(cache=True, nogil=True, inline="always")
def _insert(scores, edges, q, s, e):
    """Insert (s, e) into row q's sorted list if it beats the last entry and is not in it yet."""
    k = scores.shape[1]
    last = k - 1
    if s > scores[q, last] or (s == scores[q, last] and e >= edges[q, last] and edges[q, last] >= 0):
        return
    pos = last
    while pos > 0 and (s < scores[q, pos - 1] or (s == scores[q, pos - 1] and e < edges[q, pos - 1])):
        pos -= 1
    if pos > 0 and s == scores[q, pos - 1] and e == edges[q, pos - 1]:
        return  # the pair came twice (a read range scored by two consumers): keep one
    for slot in range(last, pos, -1):
        scores[q, slot] = scores[q, slot - 1]
        edges[q, slot] = edges[q, slot - 1]
    scores[q, pos] = s
    edges[q, pos] = e


@njit(cache=True, nogil=True)
def _merge_block(scores, edges, block_scores, first_edge, n_edges):
    for q in range(block_scores.shape[0]):
        for w in range(n_edges):
            _insert(scores, edges, q, block_scores[q, w], first_edge + w)


@njit(cache=True, nogil=True)
def _merge_lists(scores, edges, other_scores, other_edges):
    for q in range(other_scores.shape[0]):
        for c in range(other_scores.shape[1]):
            if other_edges[q, c] >= 0:
                _insert(scores, edges, q, other_scores[q, c], other_edges[q, c])


@njit(cache=True, nogil=True)
def merge_rows(scores, edges, rows, other_scores, other_edges):
    """Fold row i of the other lists into row rows[i] of these (rows may repeat)."""
    for i in range(other_scores.shape[0]):
        q = rows[i]
        for c in range(other_scores.shape[1]):
            if other_edges[i, c] >= 0:
                _insert(scores, edges, q, other_scores[i, c], other_edges[i, c])


def load_merges() -> None:
    """Load (or compile) the merge functions now, on tiny inputs.

    numba's first call in a process also starts its JIT (~0.5 s of CPU). The first merge of a
    run happens on a consumer thread after its first block; a GPU thread paying that start-up
    leaves the device idle for it (measured on the H100: one 0.75 s gap in a 9 s run). Called
    from a thread while the inputs are read, it costs the run nothing.
    """
    lists = Candidates.empty(1, 1)
    lists.add_block(np.zeros((1, 1), np.int32), 0, 1)
    lists.add(Candidates.empty(1, 1))


@dataclass
class Candidates:
    """K best (score, edge) per read, each row sorted by (score, edge); int32 [Q, K] each."""

    score: np.ndarray
    edge: np.ndarray

    @classmethod
    def empty(cls, n_reads: int, k: int) -> "Candidates":
        return cls(
            score=np.full((n_reads, k), EMPTY_SCORE, dtype=np.int32),
            edge=np.full((n_reads, k), -1, dtype=np.int32),
        )

    def add_block(self, block_scores: np.ndarray, first_edge: int, n_edges: int) -> None:
        """Fold a block's score matrix (int32 [Q, W], lanes past n_edges ignored) into the lists."""
        _merge_block(self.score, self.edge, block_scores, first_edge, n_edges)

    def add(self, other: "Candidates", first_read: int = 0) -> None:
        """Fold another candidate set, for this set's reads from `first_read` on, into this one."""
        end = first_read + other.score.shape[0]
        _merge_lists(self.score[first_read:end], self.edge[first_read:end], other.score, other.edge)
