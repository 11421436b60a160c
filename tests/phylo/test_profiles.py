"""Edge profiles against a brute-force Sankoff parsimony with the root placed on each edge.

The brute force below shares nothing with papara_py.phylo.profiles: it walks an undirected graph
recursively with full cost vectors (unit cost, every pair of states), roots the tree on the
edge under test and keeps the root states of minimal total cost. The only things it takes from
the package are the character -> state-set table and EdgeTree.edge_split, to find which of its
edges is edge e.
"""

from __future__ import annotations

from pathlib import Path

import dendropy
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tree import RandomTree, random_trees

from papara_py.phylo.encoding import (
    CGAP_BIT,
    DNA,
    IS_GAP,
    PROTEIN,
    REF_CODE,
    STATE_MASK,
)
from papara_py.phylo.profiles import (
    ProfileBuilder,
    combine_all_but_one,
    combine_many,
    combine_two,
)
from papara_py.phylo.tree import EdgeTree

ALIGNMENT_CHARACTERS = "ACGTUacgtRYSWKMBDHVNn-.?"

#: Unit cost: changing state costs 1, staying costs 0 (the states' matrix is built per alphabet).
GAP_COST = 1.0 - np.eye(2)  # states: 0 = gap, 1 = residue


def tip_costs(rows: dict[str, bytes], ref_code: np.ndarray = REF_CODE,
              n_states: int = 4) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per tip, cost arrays [m, n_states] (residues) and [m, 2] (gap character): 0 allowed, inf not."""
    nucleotide, gap = {}, {}
    for name, row in rows.items():
        codes = ref_code[np.frombuffer(row, dtype=np.uint8)].astype(np.int64)
        allowed = (codes[:, None] >> np.arange(n_states)) & 1
        nucleotide[name] = np.where(allowed == 1, 0.0, np.inf)
        is_gap = IS_GAP[np.frombuffer(row, dtype=np.uint8)]
        gap[name] = np.where(np.stack([is_gap, ~is_gap], axis=1), 0.0, np.inf)
    return nucleotide, gap


def sankoff(graph: dict, names: dict, costs: dict, cost: np.ndarray, node, came_from) -> np.ndarray:
    """Cost array [m, k] of the subtree at `node` hanging away from `came_from`."""
    if node in names:
        return costs[names[node]]
    total = 0.0
    for child in graph[node]:
        if child != came_from:
            below = sankoff(graph, names, costs, cost, child, node)
            # for each parent state s: min over child states t of below[t] + cost[s, t]
            total = total + (below[:, None, :] + cost[None, :, :]).min(axis=2)
    return total


def root_extra_costs(
    graph: dict, names: dict, costs: dict, cost: np.ndarray, u, v
) -> np.ndarray:
    """[m, k]: each root state's cost above the minimum, with a root in the middle of edge (u, v)."""
    root = 0.0
    for x, y in ((u, v), (v, u)):
        below = sankoff(graph, names, costs, cost, x, y)
        root = root + (below[:, None, :] + cost[None, :, :]).min(axis=2)
    return root - root.min(axis=1, keepdims=True)


def optimal_root_states(
    graph: dict, names: dict, costs: dict, cost: np.ndarray, u, v
) -> np.ndarray:
    """bool [m, k]: the root states of minimal cost with a root in the middle of edge (u, v)."""
    return root_extra_costs(graph, names, costs, cost, u, v) == 0


def gap_only_view(graph: dict, names: dict, gap_costs: dict, x, away_from) -> np.ndarray:
    """bool [m]: whether the subtree at x (away from `away_from`) has {gap} as the optimal set of
    its gap character."""
    below = sankoff(graph, names, gap_costs, GAP_COST, x, away_from)
    best = below == below.min(axis=1, keepdims=True)
    return best[:, 0] & ~best[:, 1]


def near_field(state_set: np.ndarray, near: np.ndarray, shift: int) -> np.ndarray:
    """DESIGN 3's encoding of near states, written out: bit shift + k for the k-th state (in
    order) that the edge's set lacks, where that state is near."""
    field = np.zeros(state_set.shape[0], np.int64)
    for i in range(state_set.shape[0]):
        lacking = [s for s in range(state_set.shape[1]) if not state_set[i, s]]
        for k, s in enumerate(lacking):
            if near[i, s]:
                field[i] |= 1 << (shift + k)
    return field


def tips_beyond(graph: dict, names: dict, x, away_from) -> frozenset[str]:
    if x in names:
        return frozenset([names[x]])
    return frozenset().union(*(tips_beyond(graph, names, y, x) for y in graph[x] if y != away_from))


def brute_force_profiles(
    graph: dict, names: dict, rows: dict[str, bytes], edge_tree: EdgeTree, alphabet=DNA,
    cgap_bit: int = CGAP_BIT,
) -> np.ndarray:
    """[E, m] profile elements of `edge_tree`'s edges, by Sankoff on `graph` rooted on each, with
    the states of `alphabet` (its character table only) and the CGAP flag at `cgap_bit`; for DNA
    also the near states: the root states one step above the optimum, where neither side's gap
    character is {gap} only (DESIGN 3), encoded at bits 5-7 (`near_field`).

    `graph` may keep degree-two nodes (a rooted Newick's root): rooting beside such a node gives
    the same root sets, so any graph edge with the right bipartition will do.
    """
    edge_of_split = {}
    for u in graph:
        for v in graph[u]:
            edge_of_split[tips_beyond(graph, names, u, v)] = (u, v)
    n_states = len(alphabet.letters)
    nucleotide, gap = tip_costs(rows, alphabet.ref_code, n_states)
    state_cost = 1.0 - np.eye(n_states)
    out = []
    for e in range(edge_tree.n_edges):
        u, v = edge_of_split[edge_tree.edge_split(e)]
        extra = root_extra_costs(graph, names, nucleotide, state_cost, u, v)
        state_set = extra == 0
        gap_set = optimal_root_states(graph, names, gap, GAP_COST, u, v)
        bits = (state_set * (1 << np.arange(n_states, dtype=np.int64))).sum(axis=1)
        cgap = gap_set[:, 0] & ~gap_set[:, 1]
        element = bits | np.where(cgap, cgap_bit, 0)
        if alphabet is DNA:
            informative = ~gap_only_view(graph, names, gap, u, v) & ~gap_only_view(graph, names, gap, v, u)
            element |= near_field(state_set, (extra == 1) & informative[:, None], n_states + 1)
        out.append(element)
    return np.array(out, dtype=alphabet.dtype)


def builder_for(edge_tree: EdgeTree, rows: dict[str, bytes], alphabet=DNA) -> ProfileBuilder:
    tip_rows = np.array([np.frombuffer(rows[name], dtype=np.uint8) for name in edge_tree.tip_names])
    return ProfileBuilder(edge_tree, tip_rows, alphabet)


def parse(newick: str) -> dendropy.Tree:
    return dendropy.Tree.get(data=newick, schema="newick", preserve_underscores=True)


@st.composite
def trees_with_columns(draw) -> tuple[RandomTree, dict[str, bytes]]:
    tree = draw(random_trees(names=st.text(alphabet="abcdefgh", min_size=1, max_size=3)))
    m = draw(st.integers(1, 6))
    # Gaps and unambiguous bases are drawn more often, so columns agree often enough to matter.
    character = st.one_of(st.sampled_from("ACGT-"), st.sampled_from(ALIGNMENT_CHARACTERS))
    rows = {
        name: "".join(draw(st.lists(character, min_size=m, max_size=m))).encode()
        for name in tree.names.values()
    }
    return tree, rows


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees_with_columns())
def test_profiles_equal_brute_force_sankoff(case: tuple[RandomTree, dict[str, bytes]]) -> None:
    assert_equals_brute_force(*case)


def assert_equals_brute_force(tree: RandomTree, rows: dict[str, bytes], alphabet=DNA,
                              cgap_bit: int = CGAP_BIT) -> np.ndarray:
    """The builder's profiles of every edge equal `brute_force_profiles` (CGAP expected at
    `cgap_bit`, given here, not taken from the alphabet); returns them."""
    edge_tree = EdgeTree.from_dendropy(parse(tree.newick))
    builder = builder_for(edge_tree, rows, alphabet)
    expected = brute_force_profiles(tree.adjacency, tree.names, rows, edge_tree, alphabet, cgap_bit)
    got = builder.profiles(np.arange(builder.n_edges))
    np.testing.assert_array_equal(got, expected)
    return got


#: Amino-acid alignment characters: the 20 states, both cases, the ambiguity codes, gaps.
PROTEIN_CHARACTERS = "ARNDCQEGHILKMFPSTWYVarndcqeghilkmfpstwyvBZJXUObzjxuo-.?"


@st.composite
def trees_with_protein_columns(draw) -> tuple[RandomTree, dict[str, bytes]]:
    tree = draw(random_trees(names=st.text(alphabet="abcdefgh", min_size=1, max_size=3)))
    m = draw(st.integers(1, 5))
    # a few amino acids and gaps drawn more often, so that columns agree often enough to matter
    character = st.one_of(st.sampled_from("AKW-"), st.sampled_from(PROTEIN_CHARACTERS))
    rows = {name: "".join(draw(st.lists(character, min_size=m, max_size=m))).encode()
            for name in tree.names.values()}
    return tree, rows


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees_with_protein_columns())
def test_protein_profiles_equal_brute_force_sankoff(case: tuple[RandomTree, dict[str, bytes]]) -> None:
    """20 states in uint32 elements, the CGAP flag at bit 20 (DESIGN 2)."""
    assert assert_equals_brute_force(*case, PROTEIN, cgap_bit=1 << 20).dtype == np.uint32


def test_protein_ambiguity_codes_are_unions_of_the_20_states() -> None:
    code = {letter: int(PROTEIN.ref_code[ord(letter)]) for letter in "ARNDCQEGHILKMFPSTWYVBZJXUO-"}
    order = "ARNDCQEGHILKMFPSTWYV"
    assert [code[letter] for letter in order] == [1 << k for k in range(20)]
    assert code["B"] == code["N"] | code["D"] and code["Z"] == code["Q"] | code["E"]
    assert code["J"] == code["I"] | code["L"] and code["X"] == code["-"] == (1 << 20) - 1
    assert code["U"] == code["C"] and code["O"] == code["K"]
    assert PROTEIN.read_code[ord("*")] == 0 and PROTEIN.read_code[ord("-")] == 0


def read_fasta(path: Path) -> dict[str, bytes]:
    rows: dict[str, list[bytes]] = {}
    for line in path.read_bytes().splitlines():
        if line.startswith(b">"):
            current = rows.setdefault(line[1:].decode().strip(), [])
        elif line.strip():
            current.append(line.strip())
    return {name: b"".join(parts) for name, parts in rows.items()}


def dendropy_graph(tree: dendropy.Tree) -> tuple[dict, dict]:
    """Undirected adjacency of dendropy's nodes (root kept as it is) and the tip names."""
    graph: dict = {}
    for node in tree.preorder_node_iter():
        graph[node] = list(node.child_nodes()) + ([node.parent_node] if node.parent_node else [])
    return graph, {node: node.taxon.label for node in tree.leaf_node_iter()}


@pytest.mark.slow
def test_pyrg_profiles_equal_brute_force_on_sampled_columns(pyrg_dir: Path) -> None:
    tree = parse((pyrg_dir / "tree.nwk").read_text())
    rows = read_fasta(pyrg_dir / "ref.fasta")
    edge_tree = EdgeTree.from_dendropy(tree)
    assert edge_tree.n_tips == 65 and edge_tree.n_edges == 2 * 65 - 3
    builder = builder_for(edge_tree, rows)
    assert builder.n_columns == 2054
    columns = np.sort(np.random.default_rng(7).choice(2054, size=150, replace=False))
    sampled = {name: bytes(np.frombuffer(row, np.uint8)[columns]) for name, row in rows.items()}
    graph, names = dendropy_graph(tree)
    expected = brute_force_profiles(graph, names, sampled, edge_tree)
    got = builder.profiles(np.arange(builder.n_edges))[:, columns]
    np.testing.assert_array_equal(got, expected)
    # the sample is only a test if it holds both signals somewhere
    assert (got & CGAP_BIT).any() and not (got & CGAP_BIT).all()
    assert ((got & STATE_MASK) != STATE_MASK).any()


def packed(nucleotides: int, gap_states: int) -> int:
    return nucleotides | gap_states << 4


def test_combine_two_agrees_with_the_counting_rule_on_every_pair() -> None:
    """The two-set fast path must give what the general k-set rule gives, for every pair."""
    sets = np.array([packed(n, g) for n in range(1, 16) for g in (1, 2, 3)], dtype=np.uint8)
    a, b = np.repeat(sets, sets.size), np.tile(sets, sets.size)
    general = combine_many(np.stack([a, b]))
    np.testing.assert_array_equal(combine_two(a, b), general)
    for x, y, z in zip(a.tolist(), b.tolist(), general.tolist()):
        for mask in (0x0F, 0x30):
            both = x & y & mask
            assert z & mask == (both or (x | y) & mask)


def test_combine_many_keeps_the_most_frequent_states() -> None:
    rows = [packed(0b0011, 1), packed(0b0110, 1), packed(0b0100, 2), packed(0b1000, 2)]
    sets = np.array(rows, dtype=np.uint8)[:, None]
    # C and G occur twice (A, T once); gap and residue twice each
    assert combine_many(sets)[0] == packed(0b0110, 3)
    assert combine_many(sets[:1])[0] == sets[0, 0]


PACKED_SET = st.builds(packed, st.integers(1, 15), st.integers(1, 3))


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 7), st.integers(1, 4), st.data())
def test_combine_all_but_one_equals_recounting(k: int, m: int, data: st.DataObject) -> None:
    """The leave-one-out shortcut of polytomies against recounting without each set."""
    row = st.lists(PACKED_SET, min_size=m, max_size=m)
    sets = np.array(data.draw(st.lists(row, min_size=k, max_size=k)), dtype=np.uint8)
    got = combine_all_but_one(sets)
    for i in range(k):
        np.testing.assert_array_equal(got[i], combine_many(np.delete(sets, i, axis=0)))


def test_profiles_api() -> None:
    edge_tree = EdgeTree.from_dendropy(parse("((A,B),C,(D,E));"))
    rows = {"A": b"AC-G", "B": b"AT-G", "C": b"GT-T", "D": b"A--N", "E": b"A-TR"}
    builder = builder_for(edge_tree, rows)
    assert (builder.n_edges, builder.n_columns) == (7, 4)
    some = builder.profiles(np.array([6, 0, 6]))
    assert some.dtype == np.uint8 and some.shape == (3, 4)
    np.testing.assert_array_equal(some[0], some[2])
    np.testing.assert_array_equal(some, builder.profiles(np.arange(7))[[6, 0, 6]])
    assert builder.profiles(np.array([], dtype=np.int64)).shape == (0, 4)
    for bad in (-1, 7):
        with pytest.raises(IndexError):
            builder.profiles(np.array([bad]))


def test_bad_tip_rows_are_refused() -> None:
    edge_tree = EdgeTree.from_dendropy(parse("(A,B,C);"))
    good = np.frombuffer(b"ACGTACGTA", dtype=np.uint8).reshape(3, 3)
    with pytest.raises(ValueError, match="uint8"):
        ProfileBuilder(edge_tree, good[:2])
    with pytest.raises(ValueError, match="uint8"):
        ProfileBuilder(edge_tree, good.astype(np.int32))
    with pytest.raises(ValueError, match="'C', column 2: 'X'"):
        ProfileBuilder(edge_tree, np.frombuffer(b"ACGTACGXA", dtype=np.uint8).reshape(3, 3))
