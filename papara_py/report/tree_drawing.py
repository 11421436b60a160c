"""The run's reference tree for drawing: numbered Newick -> Bio.Phylo clades, then collapsed.

The run file stores the tree as jplace-style numbered Newick (`(A:0.1{0},B:0.2{1}):0.3{2}`,
DESIGN 7). Neither Bio.Phylo nor any other Newick reader understands the `{n}` labels, so
`split_numbered_newick` removes them (leaving quoted names and comments alone) and returns them
in the order they were written. That order is the post-order of the branches, which is also the
order in which a post-order walk of Bio.Phylo's clades meets them, so the i-th label belongs to
the i-th non-top clade of that walk; `NumberedTree` checks this and keeps the edge -> clade map.

A tree of a few thousand tips cannot be drawn one row per tip and stay readable, so
`NumberedTree.display` collapses whole subtrees into single labelled rows until at most
`max_tips` rows remain, opening first the subtrees that hold the most placed reads (then the
largest): every branch that received reads stays visible whenever there is room for it, and
what is collapsed says how many taxa and reads it hides.

Walks here are iterative: Bio.Phylo's own traversals recurse, and real trees of thousands of
tips are often thousands of levels deep. The collapsed tree handed to `Bio.Phylo.draw` has at
most `max_tips` rows and hence at most that depth.
"""

from __future__ import annotations

import heapq
import io
import re
from dataclasses import dataclass

import numpy as np
from Bio import Phylo
from Bio.Phylo.Newick import Clade, Tree
from Bio.Phylo.NewickIO import NewickError

from papara_py.errors import InputError

#: A quoted label ('' escapes a quote), a [comment], or a jplace edge label {n}.
_NEWICK_TOKEN = re.compile(r"'(?:[^']|'')*'|\[[^\]]*\]|\{(\d+)\}")


def split_numbered_newick(text: str) -> tuple[str, list[int]]:
    """Remove the jplace `{n}` labels from `text`: (plain Newick, the labels in written order).

    Braces inside quoted names or comments are part of those and stay; only a bare `{digits}`
    is an edge label.
    """
    labels: list[int] = []

    def strip(match: re.Match) -> str:
        if match.group(1) is None:
            return match.group(0)
        labels.append(int(match.group(1)))
        return ""

    return _NEWICK_TOKEN.sub(strip, text), labels


def postorder(root: Clade) -> list[Clade]:
    """Clades below and including `root`, children (in written order) before their parent."""
    order: list[Clade] = []
    stack: list[tuple[Clade, bool]] = [(root, False)]
    while stack:
        clade, expanded = stack.pop()
        if expanded or not clade.clades:
            order.append(clade)
        else:
            stack.append((clade, True))
            stack.extend((child, False) for child in reversed(clade.clades))
    return order


@dataclass
class DisplayTree:
    """A tree ready for `Bio.Phylo.draw`, with what each drawn row stands for.

    tree:        the (possibly collapsed) tree; its clades are those of the full tree.
    edge_of:     drawn clade -> edge number (every drawn clade but the top).
    hidden:      collapsed clade -> (taxa it stands for, best-branch count of the branches inside it).
    n_tips:      taxa in the full tree.
    """

    tree: Tree
    edge_of: dict[Clade, int]
    hidden: dict[Clade, tuple[int, float]]
    n_tips: int

    @property
    def n_rows(self) -> int:
        """Rows the drawing will have: shown tips plus collapsed subtrees."""
        return sum(1 for clade in postorder(self.tree.root) if not clade.clades)


class NumberedTree:
    """The run's unrooted tree, parsed by Bio.Phylo, with edge numbers mapped to clades.

    Drawn "rooted" at the Newick's top node (the only node without an edge), which is an
    arbitrary but faithful view of an unrooted tree. `tip_names` are in written order; the
    tips beyond edge e (away from the top) are tip_names[first_tip[e]:first_tip[e] + n_tips[e]].
    """

    def __init__(self, newick_numbered: str, source: str = "run file") -> None:
        plain, labels = split_numbered_newick(newick_numbered)
        try:
            parsed = Phylo.read(io.StringIO(plain), "newick")
        except (NewickError, ValueError) as error:  # ValueError: no tree, or a bad number
            raise InputError(source, f"/tree/newick_numbered is not a readable Newick tree ({error})") from None
        order = postorder(parsed.root)
        n_edges = len(order) - 1
        if len(labels) != n_edges or sorted(labels) != list(range(n_edges)):
            raise InputError(source, f"/tree/newick_numbered has {len(labels)} edge labels {{n}} for "
                                     f"{n_edges} branches; expected each of 0..{n_edges - 1} once")
        self._parsed = parsed
        self._order = order
        self.clade_of_edge: list[Clade] = [None] * n_edges  # type: ignore[list-item]
        self.edge_of: dict[Clade, int] = {}
        for clade, edge in zip(order[:-1], labels):
            self.clade_of_edge[edge] = clade
            self.edge_of[clade] = edge
        self.tip_names: list[str] = []
        first: dict[Clade, int] = {}
        count: dict[Clade, int] = {}
        rank = {clade: i for i, clade in enumerate(order)}
        #: int [E, 2]: the two nodes (post-order ranks) each edge joins; edges sharing one touch.
        self.edge_ends = np.zeros((n_edges, 2), dtype=np.int64)
        for clade in order:
            for child in clade.clades:
                self.edge_ends[self.edge_of[child]] = (rank[child], rank[clade])
            if clade.clades:
                first[clade] = first[clade.clades[0]]
                count[clade] = sum(count[child] for child in clade.clades)
            else:
                first[clade] = len(self.tip_names)
                count[clade] = 1
                self.tip_names.append(clade.name or "")
        self.first_tip = np.array([first[c] for c in self.clade_of_edge], dtype=np.int64)
        self.n_tips_beyond = np.array([count[c] for c in self.clade_of_edge], dtype=np.int64)
        self._first, self._count, self._rank = first, count, rank

    @property
    def n_edges(self) -> int:
        return len(self.clade_of_edge)

    @property
    def n_tips(self) -> int:
        return len(self.tip_names)

    def beyond(self, edge: int) -> str:
        """What edge `edge` leads to, away from the top: a tip name or 'N taxa: first … last'."""
        return self._describe(int(self.first_tip[edge]), int(self.n_tips_beyond[edge]))

    def _describe(self, first: int, count: int) -> str:
        if count == 1:
            return self.tip_names[first]
        return f"{count} taxa: {self.tip_names[first]} … {self.tip_names[first + count - 1]}"

    def display(self, edge_reads: np.ndarray, max_tips: int) -> DisplayTree:
        """A copy of the tree with subtrees collapsed until at most `max_tips` rows remain.

        `edge_reads[e]` is edge e's best-branch count (report/placement.best_branch_counts: a read
        tied between branches counts a share on each, so counts may be fractions). Subtrees are
        opened in order of the reads inside them, then of their size, so the sample's branches
        stay visible and empty parts of the tree fold into one row each. The top node is always
        open, so a tree never has fewer rows than the top's degree.
        """
        below: dict[Clade, float] = {}  # reads on branches strictly inside the clade's subtree
        for clade in self._order:
            below[clade] = sum(below[c] + float(edge_reads[self.edge_of[c]]) for c in clade.clades)
        rank = self._rank

        def entry(clade: Clade) -> tuple:
            return (-below[clade], -self._count[clade], rank[clade], clade)

        root = self._parsed.root
        opened = {root}
        rows = len(root.clades)
        frontier = [entry(c) for c in root.clades if c.clades]
        heapq.heapify(frontier)
        while frontier:
            clade = heapq.heappop(frontier)[-1]
            if rows + len(clade.clades) - 1 <= max_tips:
                rows += len(clade.clades) - 1
                opened.add(clade)
                for child in clade.clades:
                    if child.clades:
                        heapq.heappush(frontier, entry(child))

        top = Clade(branch_length=root.branch_length, name=root.name)
        copy_of = {root: top}
        edge_of: dict[Clade, int] = {}
        hidden: dict[Clade, tuple[int, float]] = {}
        stack = [root]
        while stack:
            clade = stack.pop()
            for child in clade.clades:
                copy = Clade(branch_length=child.branch_length, name=child.name)
                copy_of[clade].clades.append(copy)
                copy_of[child] = copy
                edge_of[copy] = self.edge_of[child]
                if child in opened:
                    stack.append(child)
                elif child.clades:
                    copy.name = self._describe(self._first[child], self._count[child])
                    hidden[copy] = (self._count[child], below[child])
        return DisplayTree(Tree(root=top, rooted=False), edge_of, hidden, self.n_tips)
