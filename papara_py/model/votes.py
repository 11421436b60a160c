"""Column votes over a read's near-best edges (DESIGN.md 5, `vote_window`).

A read's best edge decides its placement, but where several edges score within `vote_window` of
the best, their alignments often disagree about a residue's column, and the best edge's alone is
wrong more often than the column most of them choose (docs/ACCURACY.md, "Votes over near-best
edges"). So each such read is traced back on every candidate edge within the window (the run's
candidate list: at most K, in (score, edge) order), and its columns are the consensus:

- the column assignment (each residue a column or left out as an insertion; the placed columns
  strictly increasing) with the most votes, summed residue by residue over the alignments that
  agree with it;
- ties go to the assignment that agrees with the best edge's alignment at more residues, then to
  the smaller column (see `_better`); an assignment with no placed residue is never chosen (the
  best edge's alignment stands).

Only columns some alignment gives a residue can win (any other scores no vote), so the search is a
heaviest increasing path through at most K x n (residue, column) nodes: a Fenwick tree over the
nodes' columns finds each node's best predecessor in O(log) time, O(K n log(K n)) per read.

The consensus is written as DESIGN 5 writes a path: a start column (the first placed residue's)
and a CIGAR, with the read's inserted residues between two placed ones before the skipped columns
(DESIGN 5's walk back prefers D to I). A read whose consensus is its best edge's alignment keeps
that alignment's start and CIGAR unchanged. Runs on the host from the tracebacks' CIGARs, so CPU
and GPU tracebacks give the same consensus.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.model.paths import (
    cigar_strings,
    encode_cigar,
    output_space,
    path_ops,
    place_ops,
    read_columns,
)

_NONE = np.iinfo(np.int64).min


def vote_pairs(scores: np.ndarray, edges: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (read, candidate) pairs to trace back: each read's candidates (scores / edges: int32
    [Q, K], rows in (score, edge) order, -1 edges empty) within `window` of its best score.

    Returns (read of each pair, its candidate slot, group ends [Q]): read q's pairs are
    [ends[q - 1], ends[q]), its best edge (slot 0) first. Window 0 (no votes, even among edges
    scoring equal) or K = 1 gives one pair per read. A read with a single other candidate in the
    window is traced on its best edge alone: one other alignment weighs less than the best edge's
    at every residue (`_consensus`), so it can never change the columns."""
    taken = (edges >= 0) & (np.asarray(scores, np.int64) <= np.asarray(scores[:, :1], np.int64) + window)
    taken[:, 1:] &= window > 0
    taken[:, 0] = True
    taken[taken.sum(axis=1) == 2, 1:] = False
    reads, slots = np.nonzero(taken)  # row-major: each read's pairs in candidate order
    return reads, slots, np.cumsum(taken.sum(axis=1))


@njit(cache=True, nogil=True, inline="always")
def _better(value, node, than_value, than_node, node_column):
    """The tie order of the search: the higher value, then the smaller column, then the earlier
    residue (nodes are numbered by residue); node -1: none."""
    if node < 0:
        return False
    if than_node < 0 or value > than_value:
        return True
    if value < than_value:
        return False
    if node_column[node] != node_column[than_node]:
        return node_column[node] < node_column[than_node]
    return node < than_node


@njit(cache=True, nogil=True)
def _consensus(columns, out):
    """The consensus of alignments columns[a, j] (a = 0: the best edge's) into out[j]; returns
    False where no residue would be placed (out then undefined).

    Votes are integers: an alignment weighs n + 1, the best edge's n + 2, so agreeing with the best
    edge breaks ties but never outweighs one vote (it adds at most n over a read)."""
    count, n = columns.shape
    node_residue = np.empty(count * n, np.int64)
    node_column = np.empty(count * n, np.int64)
    node_votes = np.empty(count * n, np.int64)
    left_out = np.zeros(n + 1, np.int64)  # left_out[j]: votes to leave residues 0..j-1 out
    nodes = 0
    for j in range(n):
        left = 0
        for a in range(count):
            x = columns[a, j]
            weight = n + 2 if a == 0 else n + 1
            if x < 0:
                left += weight
                continue
            held = nodes - 1  # an earlier alignment's node for this column, if any
            while held >= 0 and node_residue[held] == j and node_column[held] != x:
                held -= 1
            if held >= 0 and node_residue[held] == j:
                node_votes[held] += weight
                continue
            node_residue[nodes], node_column[nodes], node_votes[nodes] = j, x, weight
            nodes += 1
        left_out[j + 1] = left_out[j] + left
    node_column = node_column[:nodes]
    places = np.unique(node_column)
    rank = np.searchsorted(places, node_column)
    # Fenwick tree over column ranks: best (value, node) among the nodes at ranks < r. A node's
    # value: the votes of residues 0..j with j at that node, less those of leaving 0..j out.
    tree_value = np.full(places.shape[0] + 1, _NONE, np.int64)
    tree_node = np.full(places.shape[0] + 1, -1, np.int64)
    value = np.empty(nodes, np.int64)
    before = np.full(nodes, -1, np.int64)
    first = 0
    while first < nodes:
        last = first
        while last < nodes and node_residue[last] == node_residue[first]:
            last += 1
        for t in range(first, last):  # a residue's nodes look only at earlier residues'
            best_value, best_node = _NONE, -1
            k = rank[t]
            while k > 0:
                if _better(tree_value[k], tree_node[k], best_value, best_node, node_column):
                    best_value, best_node = tree_value[k], tree_node[k]
                k -= k & -k
            j = node_residue[t]
            gain = node_votes[t] - (left_out[j + 1] - left_out[j])
            if best_node >= 0 and best_value >= 0:  # a tie with no predecessor places more residues
                value[t], before[t] = best_value + gain, best_node
            else:
                value[t] = gain
        for t in range(first, last):
            k = rank[t] + 1
            while k <= places.shape[0]:
                if _better(value[t], t, tree_value[k], tree_node[k], node_column):
                    tree_value[k], tree_node[k] = value[t], t
                k += k & -k
        first = last
    best = -1
    for t in range(nodes):
        if _better(value[t], t, value[best] if best >= 0 else _NONE, best, node_column):
            best = t
    if best < 0 or value[best] < 0:
        return False
    out[:] = -1
    while best >= 0:
        out[node_residue[best]] = node_column[best]
        best = before[best]
    return True


@njit(cache=True, nogil=True)
def _vote_many(group_ends, starts, cigar, cigar_ends, residues, offsets, rows, out_starts, out_rows, out_cigar,
               out_cigar_ends, voted):
    """Each read's consensus over its group of traced pairs (`vote_pairs`): start, row (out_rows
    pre-filled with gaps) and CIGAR (bytes into out_cigar, ends in out_cigar_ends); voted[q]: its
    consensus differs from the best edge's alignment."""
    m = rows.shape[1]
    position = 0
    group_start = 0
    for q in range(group_ends.shape[0]):
        group_end = group_ends[q]
        n = offsets[q + 1] - offsets[q]
        cigar_lo = cigar_ends[group_start - 1] if group_start > 0 else 0
        changed = False
        if group_end - group_start > 1:
            columns = np.empty((group_end - group_start, n), np.int64)
            for a in range(group_end - group_start):
                pair = group_start + a
                lo = cigar_ends[pair - 1] if pair > 0 else 0
                read_columns(cigar, lo, cigar_ends[pair], starts[pair], columns[a])
            chosen = np.empty(n, np.int64)
            if _consensus(columns, chosen):
                for j in range(n):
                    if chosen[j] != columns[0, j]:
                        changed = True
            if changed:
                ops = np.empty(n + m, np.uint8)
                start, length = path_ops(chosen, ops)
                out_starts[q] = start
                place_ops(ops[:length], start, residues[offsets[q]:offsets[q + 1]], out_rows[q])
                position = encode_cigar(ops[:length], out_cigar, position)
        if not changed:
            out_starts[q] = starts[group_start]
            out_rows[q] = rows[group_start]
            for i in range(cigar_lo, cigar_ends[group_start]):
                out_cigar[position] = cigar[i]
                position += 1
        out_cigar_ends[q] = position
        voted[q] = changed
        group_start = group_end


def vote(group_ends: np.ndarray, starts: np.ndarray, cigars: list[str], rows: np.ndarray, residues: np.ndarray,
         offsets: np.ndarray, gap: int = ord("-")) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """Each read's alignment from its traced pairs (`vote_pairs`' groups; starts, CIGARs and rows
    as `traceback.align_many` gives them, best edge first in each group): the consensus where a
    group has several, else the best edge's. residues / offsets: the oriented reads (ASCII).

    Returns (starts int32 [Q], CIGARs, rows uint8 [Q, m], bool [Q]: the consensus differs from
    the best edge's alignment)."""
    count = group_ends.shape[0]
    text = "".join(cigars).encode()
    cigar = np.frombuffer(text, np.uint8) if text else np.empty(0, np.uint8)
    cigar_ends = np.cumsum([len(c) for c in cigars], dtype=np.int64)
    out_rows, out_cigar, out_cigar_ends = output_space(offsets, rows.shape[1], gap)
    out_starts = np.empty(count, np.int32)
    voted = np.zeros(count, np.bool_)
    _vote_many(np.asarray(group_ends, np.int64), np.asarray(starts, np.int64), cigar, cigar_ends, residues,
               np.asarray(offsets, np.int64), rows, out_starts, out_rows, out_cigar, out_cigar_ends, voted)
    return out_starts, cigar_strings(out_cigar, out_cigar_ends), out_rows, voted


def load_votes() -> None:
    """Load (or compile) the vote's numba functions now, on a tiny group: a run calls this on its
    JIT thread while the inputs are read (model/decode.warm_up), so a first protein run in a fresh
    install does not compile them on the traceback thread (seconds, with the scorers waiting)."""
    rows = np.full((2, 4), ord("-"), np.uint8)
    vote(np.array([2]), np.array([0, 1]), ["1M", "1M"], rows, np.frombuffer(b"A", np.uint8), np.array([0, 1]))
