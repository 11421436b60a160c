"""Each edge's own column emission (DESIGN.md 3, 5): protein's column cost with the reference rows
weighted by where they sit in the tree relative to the edge.

Why: the shared emission (column_costs.py) weighs every row of a column alike, but the rows near
the edge a read is aligned to are its best evidence: a subfamily's residues are likelier in its
reads. On the posterior step's candidate edges each edge therefore scores residue b in column c
by the emission of a mixture in which the rows near the edge count more
(notebook/accuracy-2026-11/edge-emission.md: +0.0006, SE 0.0002, on 32 new protein validation
sets; dense references +0.0008). The edge weights w_e still come from the shared emission: with
each edge's own emission deciding the weights too, reads on references with long branches
(Pfam) lost up to 0.05 of their columns on the fit sets.

For edge e (the branch above node e) and reference row t:

    d_t    the tree distance from e's midpoint to tip t (the input's branch lengths);
    omega_t  the share of an equal-split walk from e's midpoint that reaches t: half each way,
           and at each inner node the mass splits evenly among the branches onward;
    pi_t   = omega_t exp(-d_t / LOCAL_SCALE) + (1 - sum_u omega_u exp(-d_u / LOCAL_SCALE)) / R

so that a row keeps its walk share as far as it is near, and what the distance takes goes back
to all R rows alike (far from every row, the emission is the shared one). Then, as in
column_costs.py with pi_t in place of 1 / R:

    P_e(c, b) = 2 log2(sum over rows t of pi_t 2^(BLOSUM62(b, t's residue at c) / 2))
    X_e(c, b) = round(weight * (TOP - P_e(c, b)))      (round half to even; TOP as there)

The sum over rows is a pass up and a pass down the tree (message passing: the walk's shares and
decays multiply along a path), O(edges x columns x states) however many rows there are. Tables
are computed once per run on the host in float64, then rounded, so every device reads the same
bytes. A tree with a branch without a length has no distances: its run uses the shared emission.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from papara_py.model.column_costs import cost_codes, emission_costs, mean_odds, row_states, substitution_scores
from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.tree import EdgeTree

log = logging.getLogger(__name__)

#: The distance (substitutions per site) over which a row's weight falls by a factor e, fitted on
#: the 16 protein fit sets (notebook/accuracy-2026-11/edge-emission.md); 0 turns the local
#: emission off (every edge the shared one: the accuracy guard's test of it).
LOCAL_SCALE = 0.15
#: Messages held at once: nodes x columns x (states + 1) float64 values per array (two arrays).
_CHUNK_VALUES = 1 << 21


@dataclass(frozen=True, eq=False)
class EdgeColumnCosts:
    """X_e of the module docstring: `table` uint8 [edges, K, m], table[e] laid out as
    ColumnCosts.table (row k for read code `codes[k]`, the shared table's codes)."""

    table: np.ndarray
    codes: np.ndarray

    @property
    def largest(self) -> int:
        """The largest cost of any edge's table (the fixed-point bounds add it to every step)."""
        return int(self.table.max(initial=0))

    def of_edges(self, edges: np.ndarray) -> np.ndarray:
        """The tables of `edges` (uint8 [len(edges), K, m], C-contiguous), in that order: the
        posterior step's candidate edges, as EdgeProfiles.profiles gives their profiles."""
        return np.ascontiguousarray(self.table[np.asarray(edges, np.int64)])


def edge_column_costs(tree: EdgeTree, tip_rows: np.ndarray, alphabet: Alphabet,
                      weight: float) -> EdgeColumnCosts | None:
    """X_e of every edge of `tree` for the alignment rows `tip_rows` (uint8 [tips, m] ASCII, in the
    tree's tip order, validated) at column weight `weight`; None where the column cost is off
    (weight 0), LOCAL_SCALE is 0 or a branch has no length. ValueError for an alphabet without a
    substitution matrix (DNA), as column_costs."""
    if weight == 0 or LOCAL_SCALE == 0:
        return None
    if np.isnan(tree.lengths[:tree.n_edges]).any():
        log.info("the tree has branches without lengths: every edge uses the shared column emission")
        return None
    rows = np.asarray(tip_rows, np.uint8)
    n_states = alphabet.n_states
    shared = mean_odds(rows, alphabet)  # [m, S]: each row 1 / R (column_costs')
    state_of = row_states(rows, alphabet)  # [tips, m], n_states for no residue
    # odds of read state b (columns 0..S-1) against a row's residue (rows; the last: no residue,
    # odds 1), and a last column of ones that carries the walk's own mass
    odds = np.ones((n_states + 1, n_states + 1))
    odds[:n_states, :n_states] = np.exp2(substitution_scores(alphabet) / 2)
    m = rows.shape[1]
    table = np.empty((tree.n_edges, cost_codes(alphabet).size, m), np.uint8)
    chunk = max(1, _CHUNK_VALUES // (tree.n_nodes * (n_states + 1)))
    for c0 in range(0, m, chunk):
        c1 = min(m, c0 + chunk)
        local = _local_odds(tree, odds[state_of[:, c0:c1]])  # [edges, columns, S + 1]
        mixture = local[..., :n_states] + (1 - local[..., n_states:]) * shared[c0:c1]
        table[:, :, c0:c1] = emission_costs(mixture, alphabet, weight)
    return EdgeColumnCosts(table=table, codes=cost_codes(alphabet))


def _local_odds(tree: EdgeTree, tip_odds: np.ndarray) -> np.ndarray:
    """sum_t omega_t exp(-d_t / LOCAL_SCALE) tip_odds[t] for every edge (float64 [edges, ...]):
    tip_odds [tips, ...] in the tree's tip order.

    down[v] is what the walk collects below v, entering v from its parent, per unit of mass at v;
    up[v] what it collects beyond v's parent p, entering p from v: the rest of the tree. Nodes are
    numbered in postorder (children before parents, the top node last)."""
    n_nodes = tree.n_nodes
    decay = np.exp(-np.nan_to_num(tree.lengths) / LOCAL_SCALE)
    down = np.zeros((n_nodes, *tip_odds.shape[1:]))
    down[tree.tip_node] = tip_odds
    for v in range(n_nodes):
        kids = tree.children(v)
        if kids.size:  # an inner node (a tip has no children)
            down[v] = np.tensordot(decay[kids], down[kids], axes=1) / kids.size
    up = np.zeros_like(down)
    top = tree.top
    for p in range(n_nodes - 1, -1, -1):
        kids = tree.children(p)
        onward = kids.size - 1 + (p != top)  # the branches onward from p for a walk that came from a child
        if onward == 0:
            continue
        for v in kids:
            others = kids[kids != v]
            total = np.tensordot(decay[others], down[others], axes=1)
            if p != top:
                total = total + decay[p] * up[p]
            up[v] = total / onward
    edges = np.arange(tree.n_edges)  # edge e is the branch above node e
    half = 0.5 * np.exp(-np.nan_to_num(tree.lengths[edges]) / (2 * LOCAL_SCALE))
    return half.reshape((-1,) + (1,) * (tip_odds.ndim - 1)) * (down[edges] + up[edges])
