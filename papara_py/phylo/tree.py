"""The unrooted reference tree as plain arrays, with edges numbered as in jplace (DESIGN.md 3).

PaPaRa aligns every read against every edge, so the rest of the program needs exactly three
things from the tree: the edge numbers users will see (`numbered_newick`, the jplace `{n}`
convention), the node adjacency the profile passes walk (`profiles.py`), and the tips in a
fixed order so alignment rows can be matched to them. `EdgeTree` holds these as numpy arrays,
independent of dendropy, so the passes over ~30,000 nodes do no object traversal.

Nodes are numbered in post-order of the tree as written, which makes the layout simple:
    - node v < top has exactly one edge towards the top node, and that edge is edge v;
    - the top node (the Newick's outermost group) is the last node and has no edge;
    - a node's children all have smaller ids, and its subtree is the id range
      [first_below[v], v], so `edge_split` is a slice and post-order loops are ascending ids.
Everything is iterative: trees of 10,000+ tips are often caterpillar-deep.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

import dendropy
import numpy as np

from papara_py.errors import InputError

#: Characters that force a Newick label into single quotes; `{}` too, as jplace uses them.
_NEEDS_QUOTES = re.compile(r"[\s()\[\]':;,{}]")


@dataclass(frozen=True, eq=False)
class EdgeTree:
    """Unrooted tree with nodes in written post-order; edge v joins node v to parent[v].

    parent:      int32 [n_nodes], -1 for the top node (the last one).
    child_ptr:   int64 [n_nodes + 1]; the children of v, in written order, are
                 child_ids[child_ptr[v]:child_ptr[v + 1]].
    child_ids:   int32 [n_nodes - 1].
    first_below: int32 [n_nodes]; v's subtree is the node range first_below[v]..v.
    tip_node:    int32 [n_tips], ascending; node id of each name in `tip_names`.
    tip_names:   tip labels in left-to-right Newick order (the row order profiles expect).
    lengths:     float64 [n_nodes], branch length of edge v, NaN where the input had none.
    """

    parent: np.ndarray
    child_ptr: np.ndarray
    child_ids: np.ndarray
    first_below: np.ndarray
    tip_node: np.ndarray
    tip_names: list[str]
    lengths: np.ndarray

    @classmethod
    def from_dendropy(cls, tree: dendropy.Tree, source: str = "tree") -> EdgeTree:
        """Read `tree` (not modified) into an unrooted EdgeTree.

        Nodes of degree two carry no information on an unrooted tree, so they are removed: a
        bifurcating root is dissolved into one of its children (the last internal one, as
        dendropy's `collapse_basal_bifurcation` does) and its two edges become one; a root
        with a single child hands the top to that child; a single-child inner node is spliced
        out. Merged edges add their lengths (a missing length counts as zero unless both are
        missing). Internal node labels are not kept. `source` names the tree in errors.
        """
        return cls.from_nodes(*_read_nodes(tree, source), source=source)

    @classmethod
    def from_nodes(cls, kids: list[list[int]], names: list[str | None], lengths: list[float | None],
                   source: str = "tree") -> EdgeTree:
        """`from_dendropy` of a tree's nodes in preorder (index 0 the outermost group): each one's
        children, its tip name (None for an inner node) and edge length (None: none given);
        `kids` and `lengths` are changed."""
        top = _unroot(kids, lengths)
        return _number_postorder(top, kids, names, lengths, source)

    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def n_edges(self) -> int:
        return self.n_nodes - 1

    @property
    def n_tips(self) -> int:
        return len(self.tip_names)

    @property
    def top(self) -> int:
        """The node written outermost in the Newick; the only node without an edge."""
        return self.n_nodes - 1

    def children(self, v: int) -> np.ndarray:
        """Child node ids of node v in written order (empty for a tip)."""
        return self.child_ids[self.child_ptr[v] : self.child_ptr[v + 1]]

    def edge_split(self, e: int) -> frozenset[str]:
        """Names of the tips on the side of edge e away from the top node.

        Identifies an edge by its bipartition, which does not depend on rooting or numbering.
        """
        if not 0 <= e < self.n_edges:
            raise IndexError(f"edge {e} out of range 0..{self.n_edges - 1}")
        lo, hi = np.searchsorted(self.tip_node, [self.first_below[e], e + 1])
        return frozenset(self.tip_names[lo:hi])

    @cached_property
    def numbered_newick(self) -> str:
        """The unrooted tree as Newick, lengths kept where present, `{n}` after every branch."""
        tip_of_node = np.full(self.n_nodes, -1, dtype=np.int64)
        tip_of_node[self.tip_node] = np.arange(self.n_tips)
        out: list[str] = []
        # The stack holds node ids to expand and literal strings to emit, in reverse order.
        stack: list[int | str] = [";", self.top]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            v = item
            suffix = "" if v == self.top else _branch_suffix(v, float(self.lengths[v]))
            if tip_of_node[v] >= 0:
                out.append(_newick_label(self.tip_names[tip_of_node[v]]) + suffix)
                continue
            out.append("(")
            stack.append(")" + suffix)
            kids = self.children(v)
            for i in range(len(kids) - 1, -1, -1):
                stack.append(int(kids[i]))
                if i:
                    stack.append(",")
        return "".join(out)


def _read_nodes(
    tree: dendropy.Tree, source: str
) -> tuple[list[list[int]], list[str | None], list[float | None]]:
    """Copy dendropy's nodes into index lists (preorder: index 0 is the seed node)."""
    index: dict[int, int] = {}
    kids: list[list[int]] = []
    names: list[str | None] = []
    lengths: list[float | None] = []
    n_tips = 0
    for node in tree.preorder_node_iter():
        i = len(kids)
        index[id(node)] = i
        kids.append([])
        if node.parent_node is not None:
            kids[index[id(node.parent_node)]].append(i)
        lengths.append(None if node.edge.length is None else float(node.edge.length))
        if node.is_leaf():
            n_tips += 1
            if node.taxon is None or not node.taxon.label:
                raise InputError(source, "a tip has no name", where=f"tip {n_tips} from the left")
            names.append(node.taxon.label)
        else:
            names.append(None)
    return kids, names, lengths


def _add_lengths(a: float | None, b: float | None) -> float | None:
    """Length of two merged edges; None only when neither had a length."""
    if a is None and b is None:
        return None
    return (a or 0.0) + (b or 0.0)


def _unroot(kids: list[list[int]], lengths: list[float | None]) -> int:
    """Remove degree-two nodes in place (see `EdgeTree.from_dendropy`); returns the top node."""
    # Splice out single-child inner nodes: each child pointer skips down its unary chain.
    for v in range(len(kids)):
        for j, c in enumerate(kids[v]):
            while len(kids[c]) == 1:
                (grandchild,) = kids[c]
                lengths[grandchild] = _add_lengths(lengths[grandchild], lengths[c])
                c = grandchild
            kids[v][j] = c
    top = 0
    while len(kids[top]) == 1:
        top = kids[top][0]
    if len(kids[top]) == 2:
        inner = [j for j, c in enumerate(kids[top]) if kids[c]]
        if inner:
            j = inner[-1]
            gone, kept = kids[top][j], kids[top][1 - j]
            lengths[kept] = _add_lengths(lengths[kept], lengths[gone])
            kids[top][j : j + 1] = kids[gone]
    return top


def _number_postorder(
    top: int,
    kids: list[list[int]],
    names: list[str | None],
    lengths: list[float | None],
    source: str,
) -> EdgeTree:
    """Renumber the nodes reachable from `top` in written post-order and build the arrays."""
    order: list[int] = []
    stack = [(top, False)]
    while stack:
        v, expanded = stack.pop()
        if expanded or not kids[v]:
            order.append(v)
        else:
            stack.append((v, True))
            stack.extend((c, False) for c in reversed(kids[v]))
    new_id = {old: new for new, old in enumerate(order)}
    n = len(order)
    tip_node = [new for new, old in enumerate(order) if not kids[old]]
    tip_names = [names[order[v]] for v in tip_node]
    if len(tip_names) < 3:
        raise InputError(
            source, f"the tree has {len(tip_names)} tips; an unrooted tree needs at least 3"
        )
    seen: set[str] = set()
    for name in tip_names:
        if name in seen:
            raise InputError(
                source, "tip name occurs more than once in the tree", where=f"tip {name!r}"
            )
        seen.add(name)

    parent = [-1] * n
    child_ptr = [0] * (n + 1)
    child_ids: list[int] = []
    first_below = list(range(n))
    for v, old in enumerate(order):
        if kids[old]:
            children = [new_id[c] for c in kids[old]]
            child_ids.extend(children)
            for c in children:
                parent[c] = v
            first_below[v] = first_below[children[0]]
        child_ptr[v + 1] = len(child_ids)
    edge_lengths = np.array([math.nan if lengths[old] is None else lengths[old] for old in order])
    edge_lengths[-1] = math.nan  # the top has no edge (a length on a single-child root is dropped)
    return EdgeTree(
        parent=np.array(parent, dtype=np.int32),
        child_ptr=np.array(child_ptr, dtype=np.int64),
        child_ids=np.array(child_ids, dtype=np.int32),
        first_below=np.array(first_below, dtype=np.int32),
        tip_node=np.array(tip_node, dtype=np.int32),
        tip_names=tip_names,
        lengths=edge_lengths,
    )


def _newick_label(name: str) -> str:
    """A tip name as a Newick token: as is when safe, else single-quoted with '' for '."""
    if _NEEDS_QUOTES.search(name):
        return "'" + name.replace("'", "''") + "'"
    return name


def _branch_suffix(edge: int, length: float) -> str:
    """`:length{edge}`, or just `{edge}` when the branch has no length."""
    return f"{{{edge}}}" if math.isnan(length) else f":{length!r}{{{edge}}}"
