"""Where the reads' best scores put them, and how clearly (`best_branch_counts`,
`placement_confidence`): computed from the stored candidate lists alone, for the report's tree,
table and confidence figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def best_branch_counts(candidate_edge: np.ndarray, candidate_score: np.ndarray, n_edges: int) -> np.ndarray:
    """float64 [n_edges]: each branch's best-branch count over the given reads (rows): a read adds
    1 to the branch of its best score, or 1/n to each of the n stored candidates that tie for it
    (none goes to the lowest branch number, as /reads/best_edge's tie-break would). With K = 1 a
    tie cannot be seen and the best edge takes the read. These are counts of where papara-py's
    scores are best, not placements: EPA-ng's likelihood weights are another measure."""
    if not len(candidate_edge):
        return np.zeros(n_edges)
    present = candidate_edge >= 0
    tied = present & (candidate_score == candidate_score[:, :1])
    share = tied / np.maximum(tied.sum(axis=1, keepdims=True), 1)
    return np.bincount(candidate_edge[tied], weights=share[tied], minlength=n_edges)


@dataclass
class PlacementConfidence:
    """How clearly the best branch wins, per placed read (only when K >= 2 candidates are kept).

    gap:       second-best minus best score (0 = tie), -1 where no second candidate exists.
    n_close:   candidates scoring within `margin` of the best, the best included (K: K or more).
    connected: the candidates within `margin` form one connected piece of the tree (neighbouring
               branches: the read's region is clear, only the exact branch is not), else they
               lie in different parts of the tree.
    margin:    one mismatch penalty: a single substitution in the read could swap the two.
    """

    gap: np.ndarray
    n_close: np.ndarray
    connected: np.ndarray
    margin: int
    k: int

    @property
    def tied(self) -> int:
        return int(np.count_nonzero(self.gap == 0))

    @property
    def close(self) -> int:
        return int(np.count_nonzero((self.gap > 0) & (self.gap <= self.margin)))

    @property
    def distant(self) -> int:
        """Reads whose near-equal branches lie in different parts of the tree."""
        return int(np.count_nonzero((self.n_close > 1) & ~self.connected))


def placement_confidence(candidate_edge: np.ndarray, candidate_score: np.ndarray, edge_ends: np.ndarray,
                         margin: int) -> PlacementConfidence | None:
    """Ties and near-ties among the stored candidates of the given reads (rows).

    `edge_ends[e]` are the two nodes edge e joins (NumberedTree.edge_ends). None when fewer than
    two candidates are kept per read.
    """
    k = candidate_score.shape[1] if candidate_score.ndim == 2 else 0
    if k < 2:
        return None
    scores = candidate_score.astype(np.int64)
    present = (scores >= 0) & (candidate_edge >= 0)
    gap = np.where(present[:, 1], scores[:, 1] - scores[:, 0], -1)
    close = present & (scores - scores[:, :1] <= margin)
    connected = np.ones(len(scores), dtype=bool)
    step = 1 << 16  # bounds the [rows, K, K, 2, 2] comparison below
    for start in range(0, len(scores), step):
        rows = slice(start, start + step)
        connected[rows] = _connected(candidate_edge[rows], close[rows], edge_ends)
    return PlacementConfidence(gap, np.count_nonzero(close, axis=1), connected, max(int(margin), 0), k)


def _connected(edges: np.ndarray, chosen: np.ndarray, edge_ends: np.ndarray) -> np.ndarray:
    """bool [rows]: the chosen edges of each row (column 0 always among them) touch as one piece."""
    ends = edge_ends[np.where(chosen, edges, 0)]  # [rows, K, 2]
    touch = (ends[:, :, None, :, None] == ends[:, None, :, None, :]).any(axis=(3, 4))  # [rows, K, K]
    reached = np.zeros_like(chosen)
    reached[:, 0] = chosen[:, 0]
    for _ in range(chosen.shape[1] - 1):
        reached = chosen & (reached | (touch & reached[:, None, :]).any(axis=2))
    return (reached == chosen).all(axis=1)
