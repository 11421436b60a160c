"""Edge profiles: the ancestral state sets of a virtual root on every edge (DESIGN.md section 3).

Every edge (u, v) gets the set of states that minimise unit-cost parsimony with the root placed
on it. Rooting on each edge separately would cost O(E^2 m); instead two passes compute every
*directional* set once ("node x seen from neighbour y": x's optimal set on the subtree that
hangs from x away from y), and an edge's set is the combination of its two directional sets.

The combination rule (for unit cost it is exact, see DESIGN.md 3): count, per state, in how
many of the input sets it occurs, and keep the states with the maximal count; for two sets that
is "intersection if non-empty, else union".

Two characters travel together in one byte per (direction, column), so both passes handle them
with the same byte operations:
    bits 0-3  nucleotide state set (gaps = ACGT, no constraint)
    bit  4    state "gap" of the two-state gap character (tip has - . ?)
    bit  5    state "residue" of that character
The rule is applied to bits 0-3 and bits 4-5 separately. An edge's profile byte is its
nucleotide set plus CGAP_BIT where the gap character's optimal set is exactly {gap}.
"""

from __future__ import annotations

import numpy as np

from papara_py.phylo.encoding import CGAP_BIT, IS_GAP, REF_CODE, STATE_MASK
from papara_py.phylo.tree import EdgeTree

GAP_STATE = 0x10
RESIDUE_STATE = 0x20
GAP_CHAR_MASK = GAP_STATE | RESIDUE_STATE
_N_BITS = 6

#: ASCII -> packed tip byte; 0 for bytes that are not alignment characters.
_TIP_CODE = np.where(IS_GAP, GAP_STATE, RESIDUE_STATE).astype(np.uint8) | REF_CODE
_TIP_CODE[REF_CODE == 0] = 0

#: For an intersection byte: the bits of each character whose intersection is empty, i.e.
#: where the two-set rule must fall back to the union.
_UNION_WHERE_EMPTY = np.array(
    [
        (STATE_MASK if i & STATE_MASK == 0 else 0)
        | (GAP_CHAR_MASK if i & GAP_CHAR_MASK == 0 else 0)
        for i in range(256)
    ],
    dtype=np.uint8,
)

#: Packed byte of a virtual root -> profile byte (nucleotide set, CGAP_BIT iff set is {gap}).
_PROFILE_BYTE = np.array(
    [(s & STATE_MASK) | (CGAP_BIT if s & GAP_CHAR_MASK == GAP_STATE else 0) for s in range(256)],
    dtype=np.uint8,
)


def combine_two(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rule for two packed sets: per character, intersection if non-empty, else union."""
    both = a & b
    return both | ((a | b) & _UNION_WHERE_EMPTY[both])


def bit_counts(sets: np.ndarray) -> np.ndarray:
    """int32 [6, m]: for each state bit, in how many of the packed sets [k, m] it occurs.

    One bit at a time, so a large polytomy needs k x m temporary bytes, not 6 k m.
    """
    counts = np.empty((_N_BITS, sets.shape[1]), dtype=np.int32)
    for bit in range(_N_BITS):
        np.sum((sets >> bit) & 1, axis=0, dtype=np.int32, out=counts[bit])
    return counts


def _count_levels(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Packed sets [m] of the states at the maximal count and at one below it, per character."""
    best = np.empty(counts.shape, dtype=bool)
    runner_up = np.empty(counts.shape, dtype=bool)
    for lo, hi in ((0, 4), (4, _N_BITS)):
        part = counts[lo:hi]
        top = part.max(axis=0)
        best[lo:hi] = part == top
        runner_up[lo:hi] = part == top - 1
    return (
        np.packbits(best, axis=0, bitorder="little")[0],
        np.packbits(runner_up, axis=0, bitorder="little")[0],
    )


def combine_many(sets: np.ndarray) -> np.ndarray:
    """The rule for any number of packed sets [k, m] (k >= 1)."""
    return _count_levels(bit_counts(sets))[0]


def combine_all_but_one(sets: np.ndarray) -> np.ndarray:
    """[k, m]: row i is the rule applied to all packed sets except row i, in O(k m).

    A polytomy node of degree k needs this for each neighbour; recounting per neighbour would
    be O(k^2 m). Leaving one set out lowers each count by at most one, so per character: the
    states at the maximal count that the left-out set lacks win if there are any; otherwise
    (it held them all) the maximum drops by one and the runner-up states it lacks join them.
    """
    best, runner_up = _count_levels(bit_counts(sets))
    kept = best & ~sets
    return kept | ((best | (runner_up & ~sets)) & _UNION_WHERE_EMPTY[kept])


class ProfileBuilder:
    """Directional sets of every node, computed once; edge profiles combined on request.

    After __init__ nothing is written (the arrays are made read-only), so any number of threads
    may call `profiles` at once.
    """

    def __init__(self, edge_tree: EdgeTree, tip_rows: np.ndarray) -> None:
        """`tip_rows`: uint8 [n_tips, m] ASCII alignment rows in `edge_tree.tip_names` order."""
        tip_rows = np.asarray(tip_rows)
        n_tips = edge_tree.n_tips
        if tip_rows.dtype != np.uint8 or tip_rows.ndim != 2 or tip_rows.shape[0] != n_tips:
            raise ValueError(
                f"tip_rows must be uint8 [{n_tips}, m], got {tip_rows.dtype} {tip_rows.shape}"
            )
        if tip_rows.shape[1] == 0:
            raise ValueError("tip_rows has no columns")
        self._tree = edge_tree
        # Row v of `_down`: node v seen from its parent; row v of `_up`: parent[v] seen from v.
        self._down = self._down_pass(tip_rows)
        self._up = self._up_pass()
        self._down.flags.writeable = False
        self._up.flags.writeable = False

    @property
    def n_edges(self) -> int:
        return self._tree.n_edges

    @property
    def n_columns(self) -> int:
        return int(self._down.shape[1])

    def profiles(self, edge_ids: np.ndarray) -> np.ndarray:
        """uint8 [len(edge_ids), m] profile bytes (nucleotide set | CGAP_BIT) of these edges."""
        ids = np.asarray(edge_ids, dtype=np.intp).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_edges):
            raise IndexError(f"edge ids must lie in 0..{self.n_edges - 1}")
        return _PROFILE_BYTE[combine_two(self._down[ids], self._up[ids])]

    def _down_pass(self, tip_rows: np.ndarray) -> np.ndarray:
        """Post-order: each node seen from its parent, from its children seen from it."""
        tree = self._tree
        down = np.empty((tree.n_edges, tip_rows.shape[1]), dtype=np.uint8)
        for t, v in enumerate(tree.tip_node.tolist()):
            np.take(_TIP_CODE, tip_rows[t], out=down[v])
            if not down[v].all():
                col = int(np.flatnonzero(down[v] == 0)[0])
                raise ValueError(
                    f"tip {tree.tip_names[t]!r}, column {col + 1}: "
                    f"{chr(tip_rows[t, col])!r} is not an alignment character"
                )
        for v in range(tree.n_edges):  # ascending ids: children come before their parent
            kids = tree.children(v)
            if kids.size == 2:
                down[v] = combine_two(down[kids[0]], down[kids[1]])
            elif kids.size:
                down[v] = combine_many(down[kids])
        return down

    def _up_pass(self) -> np.ndarray:
        """Pre-order: for each child c of v, v seen from c, from v's other neighbours."""
        tree, down = self._tree, self._down
        up = np.empty_like(down)
        for v in range(tree.top, -1, -1):  # descending ids: a parent before its children
            kids = tree.children(v)
            if kids.size == 0:
                continue
            # v's neighbours seen from v: its children, and its parent unless v is the top.
            neighbours = [down[c] for c in kids]
            if v != tree.top:
                neighbours.append(up[v])
            if len(neighbours) == 3:  # the binary case: each child sees the other two
                x, y, z = neighbours
                for c, (a, b) in zip(kids, ((y, z), (x, z), (x, y))):
                    up[c] = combine_two(a, b)
            else:
                up[kids] = combine_all_but_one(np.stack(neighbours))[: kids.size]
        return up
