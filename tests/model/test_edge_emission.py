"""Each edge's own column emission (papara_py/model/edge_emission.py, DESIGN 3) against its
definition spelled out path by path (literal_dp.literal_edge_column_cost), and what it is for:
a clade's residue is cheap on the clade's edges, and far from every row the emission is the
shared one."""

from __future__ import annotations

import math

import dendropy
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from literal_dp import literal_edge_column_cost

from papara_py.model import edge_emission
from papara_py.model.column_costs import column_costs, cost_codes
from papara_py.model.edge_emission import edge_column_costs
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.phylo.tree import EdgeTree

LETTERS = "ARNDCQEGHILKMFPSTWYVBXZ-"


def edge_tree(newick: str) -> EdgeTree:
    return EdgeTree.from_dendropy(dendropy.Tree.get(data=newick, schema="newick"))


def neighbours_of(tree: EdgeTree) -> dict[int, dict[int, float]]:
    """The unrooted tree as node -> {node: branch length} (edge v joins v and its parent)."""
    joined: dict[int, dict[int, float]] = {v: {} for v in range(tree.n_nodes)}
    for v in range(tree.n_edges):
        p = int(tree.parent[v])
        joined[v][p] = joined[p][v] = float(tree.lengths[v])
    return joined


@st.composite
def trees_and_rows(draw):
    """A random tree of 3..7 tips with branch lengths 0..0.6 and 1..5 columns of protein rows."""
    n_tips = draw(st.integers(3, 7))
    groups = [f"t{k}:{draw(st.sampled_from([0.0, 0.01, 0.1, 0.25, 0.6]))}" for k in range(n_tips)]
    while len(groups) > 3:
        a = groups.pop(draw(st.integers(0, len(groups) - 1)))
        b = groups.pop(draw(st.integers(0, len(groups) - 1)))
        groups.append(f"({a},{b}):{draw(st.sampled_from([0.0, 0.05, 0.2, 0.5]))}")
    m = draw(st.integers(1, 5))
    rows = {f"t{k}": draw(st.text(st.sampled_from(LETTERS), min_size=m, max_size=m)) for k in range(n_tips)}
    return "(" + ",".join(groups) + ");", rows


@settings(max_examples=60, deadline=None)
@given(trees_and_rows(), st.sampled_from([0.5, 1.0, 2.5]))
def test_every_edge_table_is_its_definition(case, weight):
    """Message passing up and down the tree gives, for every edge, column and read code, the cost
    that summing over every tip's path gives (an entry within 1e-9 of a rounding tie is left out:
    the two sum in different orders)."""
    newick, rows = case
    tree = edge_tree(newick)
    tip_rows = np.array([list(rows[name].encode()) for name in tree.tip_names], np.uint8)
    got = edge_column_costs(tree, tip_rows, PROTEIN, weight)
    neighbours = neighbours_of(tree)
    column_rows = [rows[name] for name in tree.tip_names]
    checked = 0
    for e in range(tree.n_edges):
        for i in range(tip_rows.shape[1]):
            for k, code in enumerate(cost_codes(PROTEIN).tolist()):
                exact = literal_edge_column_cost(neighbours, list(map(int, tree.tip_node)), (e, int(tree.parent[e])),
                                                 column_rows, edge_emission.LOCAL_SCALE, weight, i, code)
                if abs(exact - math.floor(exact) - 0.5) > 1e-9:
                    assert got.table[e, k, i] == round(exact), (e, i, code)
                    checked += 1
    assume(checked)  # a case of ties only (every row an ambiguity code, say) tests nothing


def test_a_clades_residue_is_cheap_on_its_edges_and_dear_across_the_tree():
    """Column W, W, A, A on ((a, b), (c, d)) with short branches: a read's A costs less on c's
    edge, where the rows near it hold A, than the shared emission charges it anywhere, and more
    on a's edge, where they hold W."""
    tree = edge_tree("((a:0.05,b:0.05):0.05,(c:0.05,d:0.05):0.05);")
    rows = {"a": "W", "b": "W", "c": "A", "d": "A"}
    tip_rows = np.array([list(rows[name].encode()) for name in tree.tip_names], np.uint8)
    own = edge_column_costs(tree, tip_rows, PROTEIN, 1.0)
    shared = column_costs(tip_rows, PROTEIN, 1.0)
    a_row = int(np.flatnonzero(cost_codes(PROTEIN) == 1 << PROTEIN.letters.index("A"))[0])
    edge = {name: int(tree.tip_node[tree.tip_names.index(name)]) for name in rows}
    assert own.table[edge["c"], a_row, 0] < shared.table[a_row, 0] < own.table[edge["a"], a_row, 0]


def test_far_from_every_row_the_emission_is_the_shared_one():
    """Branches of 30 substitutions per site: every row's decay is below 1e-80, so every edge's
    table is the shared emission's."""
    tree = edge_tree("((a:30,b:30):30,(c:30,d:30):30,e:30);")
    rng = np.random.default_rng(3)
    tip_rows = np.frombuffer(LETTERS.encode(), np.uint8)[rng.integers(0, len(LETTERS), (5, 40))]
    own = edge_column_costs(tree, tip_rows, PROTEIN, 1.0)
    shared = column_costs(tip_rows, PROTEIN, 1.0)
    for e in range(tree.n_edges):
        np.testing.assert_array_equal(own.table[e], shared.table)
    np.testing.assert_array_equal(own.of_edges([3, 0]), own.table[[3, 0]])


def test_no_table_without_a_column_cost_or_without_branch_lengths():
    rows = np.frombuffer(b"WWAA", np.uint8).reshape(4, 1)
    with_lengths = edge_tree("((a:0.1,b:0.1):0.1,(c:0.1,d:0.1):0.1);")
    assert edge_column_costs(with_lengths, rows, PROTEIN, 0.0) is None
    assert edge_column_costs(edge_tree("((a,b),(c,d));"), rows, PROTEIN, 1.0) is None
    assert edge_column_costs(edge_tree("((a:0.1,b),(c:0.1,d:0.1):0.1);"), rows, PROTEIN, 1.0) is None
    with pytest.raises(ValueError, match="substitution matrix"):
        edge_column_costs(with_lengths, np.frombuffer(b"ACGT", np.uint8).reshape(4, 1), DNA, 1.0)


def test_the_scale_is_what_the_decay_divides_by(monkeypatch):
    """A tip edge of length 2 x 0.15: with LOCAL_SCALE 0.15 its tip keeps exp(-1) of half the
    walk, with 0.3 exp(-1/2) of it, and a read's A, the tip's residue, costs less."""
    tree = edge_tree("(a:0.3,b:10,c:10);")
    tip_rows = np.frombuffer(b"AWW", np.uint8).reshape(3, 1)
    a_row = int(np.flatnonzero(cost_codes(PROTEIN) == 1 << PROTEIN.letters.index("A"))[0])
    a = int(tree.tip_node[tree.tip_names.index("a")])
    odds_a, odds_aw = 2 ** (4 / 2), 2 ** (-3 / 2)  # BLOSUM62 A-A 4, A-W -3
    got = {}
    for scale in (0.15, 0.3):
        monkeypatch.setattr(edge_emission, "LOCAL_SCALE", scale)
        got[scale] = edge_column_costs(tree, tip_rows, PROTEIN, 8.0).table[a, a_row, 0]
        keep = 0.5 * math.exp(-0.15 / scale)  # half the walk, half the edge away (b, c: 10 further)
        mixture = keep * odds_a + (1 - keep) * (odds_a + 2 * odds_aw) / 3
        assert got[scale] == round(8 * (11 - 2 * math.log2(mixture)))
    assert got[0.3] < got[0.15]
