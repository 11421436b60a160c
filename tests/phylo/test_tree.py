"""EdgeTree: unrooting, jplace post-order edge numbers, splits and the numbered Newick.

The random trees here are generated as plain undirected graphs, so their true bipartitions and
branch lengths are known independently of papara_py.phylo.tree, then written as Newick from a random
top node or with a bifurcating root on a random edge (tip edges included). test_profiles.py
reuses `random_trees` for its brute-force Sankoff check.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import dendropy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from papara_py.errors import InputError
from papara_py.phylo.tree import EdgeTree

HYPOTHESIS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class RandomTree:
    """An unrooted tree as an undirected graph, and one Newick rendering of it.

    adjacency[v] lists v's neighbours; tips are the nodes in `names`. lengths maps each edge
    frozenset({u, v}) to its length or None.
    """

    adjacency: dict[int, list[int]]
    names: dict[int, str]
    lengths: dict[frozenset[int], float | None]
    newick: str

    def side(self, x: int, away_from: int) -> frozenset[str]:
        """Tip names reachable from x without crossing the edge to `away_from`."""
        found, stack = set(), [(x, away_from)]
        while stack:
            v, came = stack.pop()
            if v in self.names:
                found.add(self.names[v])
            stack.extend((w, v) for w in self.adjacency[v] if w != came)
        return frozenset(found)

    def splits(self) -> dict[frozenset[frozenset[str]], float | None]:
        """Every edge as its bipartition {side, other side}, mapped to its length."""
        return {
            frozenset({self.side(u, v), self.side(v, u)}): length
            for (u, v), length in ((tuple(e), l) for e, l in self.lengths.items())
        }


def quote(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _write(tree: RandomTree, v: int, came: int | None) -> str:
    """Newick of the subtree at v seen from `came`, with v's branch length towards `came`."""
    length = None if came is None else tree.lengths[frozenset({v, came})]
    suffix = "" if length is None else f":{length}"
    if v in tree.names:
        return quote(tree.names[v]) + suffix
    return "(" + ",".join(_write(tree, w, v) for w in tree.adjacency[v] if w != came) + ")" + suffix


# dendropy's reader cannot read a quoted name that is one lone character of ":,();".
TIP_NAMES = st.text(alphabet="abcXYZ019 _'(),:;[]{}.-", min_size=1, max_size=5).filter(
    lambda s: s not in ":,();"
)


@st.composite
def random_trees(draw, min_tips=3, max_tips=9, polytomies=True, names=TIP_NAMES) -> RandomTree:
    """Random unrooted tree (optionally with polytomies), written from a random rooting."""
    rnd = draw(st.randoms(use_true_random=False))
    n_tips = draw(st.integers(min_tips, max_tips))
    tip_names = draw(st.lists(names, min_size=n_tips, max_size=n_tips, unique=True))
    # Start from a star of three tips around inner node 0, then attach one tip at a time,
    # either to the middle of an edge or (a polytomy) to an inner node.
    adjacency = {0: [1, 2, 3], 1: [0], 2: [0], 3: [0]}
    tips = [1, 2, 3]
    for _ in range(n_tips - 3):
        new_tip = len(adjacency)
        inner = [v for v in adjacency if v not in tips]
        if polytomies and rnd.random() < 0.3:
            hub = rnd.choice(inner)
        else:
            u = rnd.choice(sorted(adjacency))
            w = rnd.choice(adjacency[u])
            hub = new_tip + 1
            adjacency[u][adjacency[u].index(w)] = hub
            adjacency[w][adjacency[w].index(u)] = hub
            adjacency[hub] = [u, w]
        adjacency[hub].append(new_tip)
        adjacency[new_tip] = [hub]
        tips.append(new_tip)
        adjacency = {v: adjacency[v] for v in sorted(adjacency)}
    for neighbours in adjacency.values():
        rnd.shuffle(neighbours)
    names = dict(zip(tips, tip_names))
    lengths = {
        frozenset({u, w}): rnd.choice([None, round(rnd.uniform(0.001, 2), 3)])
        for u in adjacency
        for w in adjacency[u]
        if u < w
    }
    tree = RandomTree(adjacency, names, lengths, newick="")
    inner = [v for v in adjacency if v not in names]
    if rnd.random() < 0.5:  # top node = an inner node, no root edge
        tree.newick = _write(tree, rnd.choice(inner), None) + ";"
    else:  # bifurcating root in the middle of an edge
        u = rnd.choice(sorted(adjacency))
        w = rnd.choice(adjacency[u])
        length = lengths[frozenset({u, w})]
        halves = (None, None) if length is None else (length / 4, length - length / 4)
        sides = []
        for (x, y), half in zip(((u, w), (w, u)), halves):
            lengths[frozenset({x, y})] = half
            sides.append(_write(tree, x, y))
        lengths[frozenset({u, w})] = length
        tree.newick = "(" + ",".join(sides) + ");"
    return tree


def parse(newick: str) -> dendropy.Tree:
    return dendropy.Tree.get(data=newick, schema="newick", preserve_underscores=True)


def bipartitions(edge_tree: EdgeTree) -> dict[frozenset[frozenset[str]], float | None]:
    """Every edge of `edge_tree` as {split, complement}, mapped to its length."""
    everyone = frozenset(edge_tree.tip_names)
    out = {}
    for e in range(edge_tree.n_edges):
        split = edge_tree.edge_split(e)
        length = float(edge_tree.lengths[e])
        out[frozenset({split, everyone - split})] = None if math.isnan(length) else length
    return out


_TOKEN = re.compile(r"'(?:[^']|'')*'|[(),;]|:[^,(){};]+|\{\d+\}|[^'(),:;{}\s]+")


def read_numbered(numbered: str) -> list[tuple[int, frozenset[str], list[int]]]:
    """Parse a jplace-style Newick: per `{n}` in string order, (n, tips below, child numbers)."""
    found = []
    # Each open group: (tips so far, numbers of its direct children); the outermost is the top.
    stack: list[tuple[set[str], list[int]]] = [(set(), [])]
    last: tuple[set[str], list[int]] = (set(), [])  # the node just closed (a tip or a group)
    for token in _TOKEN.findall(numbered):
        if token == "(":
            stack.append((set(), []))
        elif token == ")":
            last = stack.pop()
            stack[-1][0].update(last[0])
        elif token.startswith("{"):
            n = int(token[1:-1])
            found.append((n, frozenset(last[0]), last[1]))
            stack[-1][1].append(n)
        elif token.startswith("'"):
            last = ({token[1:-1].replace("''", "'")}, [])
            stack[-1][0].update(last[0])
        elif token not in ",;" and not token.startswith(":"):
            last = ({token}, [])
            stack[-1][0].update(last[0])
    assert len(stack) == 1, "unbalanced parentheses"
    return found


def strip_numbers(numbered: str) -> str:
    """Remove the `{n}` labels, leaving quoted names (which may contain braces) alone."""
    return re.sub(r"('(?:[^']|'')*')|\{\d+\}", lambda m: m.group(1) or "", numbered)


@pytest.mark.slow
@HYPOTHESIS
@given(random_trees())
def test_splits_and_lengths_match_the_generated_tree(tree: RandomTree) -> None:
    edge_tree = EdgeTree.from_dendropy(parse(tree.newick))
    assert sorted(edge_tree.tip_names) == sorted(tree.names.values())
    assert edge_tree.n_tips == len(tree.names)
    assert edge_tree.n_edges == len(tree.lengths)
    got, want = bipartitions(edge_tree), tree.splits()
    assert got.keys() == want.keys()
    for split, length in want.items():
        assert (got[split] is None) == (length is None)
        if length is not None:
            assert got[split] == pytest.approx(length)


@pytest.mark.slow
@HYPOTHESIS
@given(random_trees(min_tips=3, max_tips=12, polytomies=False))
def test_binary_trees_have_2n_minus_3_edges(tree: RandomTree) -> None:
    edge_tree = EdgeTree.from_dendropy(parse(tree.newick))
    assert edge_tree.n_edges == 2 * len(tree.names) - 3


@pytest.mark.slow
@HYPOTHESIS
@given(random_trees())
def test_numbered_newick_is_postorder_and_matches_edge_split(tree: RandomTree) -> None:
    edge_tree = EdgeTree.from_dendropy(parse(tree.newick))
    found = read_numbered(edge_tree.numbered_newick)
    assert [n for n, _, _ in found] == list(range(edge_tree.n_edges))
    for n, tips, children in found:
        assert tips == edge_tree.edge_split(n)
        assert all(c < n and edge_tree.parent[c] == n for c in children)


@pytest.mark.slow
@HYPOTHESIS
@given(random_trees())
def test_numbered_newick_round_trips(tree: RandomTree) -> None:
    """Reading the written tree back (numbers stripped) gives the same tree and the same string."""
    edge_tree = EdgeTree.from_dendropy(parse(tree.newick))
    again = EdgeTree.from_dendropy(parse(strip_numbers(edge_tree.numbered_newick)))
    assert again.tip_names == edge_tree.tip_names
    assert bipartitions(again) == bipartitions(edge_tree)
    assert again.numbered_newick == edge_tree.numbered_newick


def test_jplace_example() -> None:
    edge_tree = EdgeTree.from_dendropy(parse("((A:0.1,B:0.2):0.05,C:0.3,D:0.1);"))
    assert edge_tree.numbered_newick == "((A:0.1{0},B:0.2{1}):0.05{2},C:0.3{3},D:0.1{4});"
    assert edge_tree.tip_names == ["A", "B", "C", "D"]
    splits = [sorted(edge_tree.edge_split(e)) for e in range(5)]
    assert splits == [["A"], ["B"], ["A", "B"], ["C"], ["D"]]


@pytest.mark.parametrize(
    "newick, expected",
    [
        # the last internal child of the root is dissolved; the two root edges add up
        (
            "((A:0.5,B:0.25):0.5,(C:1,D:2):0.25);",
            "((A:0.5{0},B:0.25{1}):0.75{2},C:1.0{3},D:2.0{4});",
        ),
        # a root whose child is a tip
        (
            "(A:0.5,(B:0.25,(C:1,D:2):0.5):0.25);",
            "(A:0.75{0},B:0.25{1},(C:1.0{2},D:2.0{3}):0.5{4});",
        ),
        (
            "((B:0.25,(C:1,D:2):0.5):0.25,A:0.5);",
            "(B:0.25{0},(C:1.0{1},D:2.0{2}):0.5{3},A:0.75{4});",
        ),
        # one root edge without a length: the other one's length is kept
        ("((A,B):0.5,(C,D));", "((A{0},B{1}):0.5{2},C{3},D{4});"),
        # single-child nodes (root or inner) are spliced out
        ("(((A:1,B:1,C:1):2):3);", "(A:1.0{0},B:1.0{1},C:1.0{2});"),
        ("((A:1):2,B,(C,(D:1):1));", "(A:3.0{0},B{1},(C{2},D:2.0{3}){4});"),
        # polytomy at the top and below; internal labels and the root's length are dropped
        ("(A,B,(C,D,E)x,F)r:1;", "(A{0},B{1},(C{2},D{3},E{4}){5},F{6});"),
    ],
)
def test_unrooting_examples(newick: str, expected: str) -> None:
    assert EdgeTree.from_dendropy(parse(newick)).numbered_newick == expected


def test_every_rooting_gives_the_same_unrooted_tree() -> None:
    unrooted = "((A:1,B:2):3,C:4,(D:5,(E:6,F:7):8):9);"
    want = bipartitions(EdgeTree.from_dendropy(parse(unrooted)))
    rootings = [
        "(A:0.5,(B:2,(C:4,(D:5,(E:6,F:7):8):9):3):0.5);",  # on a tip edge, tip first
        "((B:2,(C:4,(D:5,(E:6,F:7):8):9):3):0.5,A:0.5);",  # on a tip edge, tip last
        "((A:1,B:2):1,(C:4,(D:5,(E:6,F:7):8):9):2);",
        "(((A:1,B:2):3,C:4):4,(D:5,(E:6,F:7):8):5);",
        "((D:5,((A:1,B:2):3,C:4):9):2,(E:6,F:7):6);",
    ]
    for newick in rootings:
        got = bipartitions(EdgeTree.from_dendropy(parse(newick)))
        assert got.keys() == want.keys(), newick
        assert all(got[s] == pytest.approx(want[s]) for s in want), newick


def test_quoted_names_are_written_quoted() -> None:
    names = ["a b", "it's", "x(y)", "c:d", "{1}", "u_v", "[c]", "e,f"]
    edge_tree = EdgeTree.from_dendropy(parse("(" + ",".join(map(quote, names)) + ");"))
    assert edge_tree.numbered_newick == (
        "('a b'{0},'it''s'{1},'x(y)'{2},'c:d'{3},'{1}'{4},u_v{5},'[c]'{6},'e,f'{7});"
    )
    again = EdgeTree.from_dendropy(parse(strip_numbers(edge_tree.numbered_newick)))
    assert again.tip_names == names


def test_same_input_same_numbering_and_input_untouched() -> None:
    newick = "((A:1,B:2):3,(C:4,(D:5,E:6):7):8);"
    tree = parse(newick)
    before = tree.as_string(schema="newick")
    first = EdgeTree.from_dendropy(tree)
    assert tree.as_string(schema="newick") == before
    assert first.numbered_newick == EdgeTree.from_dendropy(parse(newick)).numbered_newick
    assert first.numbered_newick == EdgeTree.from_dendropy(tree).numbered_newick


@pytest.mark.slow
def test_deep_caterpillar_needs_no_recursion() -> None:
    """Trees of thousands of tips are often this deep; nothing may recurse per level."""
    n = 2500  # deeper than Python's default recursion limit of 1000
    taxa = dendropy.TaxonNamespace()
    tree = dendropy.Tree(taxon_namespace=taxa)
    node = tree.seed_node
    for i in range(n - 2):
        node.new_child(taxon=taxa.require_taxon(f"t{i}"), edge_length=1.0)
        node = node.new_child(edge_length=1.0)
    node.new_child(taxon=taxa.require_taxon("x"))
    node.new_child(taxon=taxa.require_taxon("y"))
    edge_tree = EdgeTree.from_dendropy(tree)
    assert edge_tree.n_edges == 2 * n - 3
    deepest_inner_edge = edge_tree.n_edges - 1
    below = frozenset(["x", "y"] + [f"t{i}" for i in range(2, n - 2)])
    assert edge_tree.edge_split(deepest_inner_edge) == below
    assert [n for n, _, _ in read_numbered(edge_tree.numbered_newick)] == list(range(2 * n - 3))


@pytest.mark.parametrize(
    "newick, problem",
    [("(A,B);", "at least 3"), ("((A,B));", "at least 3"), ("(A,,C);", "no name")],
)
def test_unusable_trees_are_input_errors(newick: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        EdgeTree.from_dendropy(parse(newick), source="ref.nwk")


def test_duplicate_tip_names_are_input_errors() -> None:
    """dendropy's Newick reader refuses duplicates itself; trees built in code can have them."""
    tree = dendropy.Tree()
    for _ in range(2):
        tree.seed_node.new_child(taxon=dendropy.Taxon("A"))
    tree.seed_node.new_child(taxon=dendropy.Taxon("B"))
    with pytest.raises(InputError, match="more than once"):
        EdgeTree.from_dendropy(tree)


def test_edge_split_rejects_bad_edges() -> None:
    edge_tree = EdgeTree.from_dendropy(parse("(A,B,C);"))
    for e in (-1, 3):
        with pytest.raises(IndexError):
            edge_tree.edge_split(e)
