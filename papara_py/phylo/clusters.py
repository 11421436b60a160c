"""Connected clusters of edges, each with a central edge: the coarse level of the guided search.

Neighbouring edges have nearly the same profile (DESIGN.md 3), so a read that fits one edge of
a small connected part of the tree well fits that part's central edge well too. The guided
search (engine/guided.py, DESIGN.md 6a) scores every read against the central edges first and
then only inside the clusters that scored best, widening into neighbouring clusters where a
read's best edges lie on a cluster's border. This module cuts the tree into those clusters; it
knows nothing of reads or scores.

The cut is one post-order pass (nodes in EdgeTree's written post-order, edge v above node v):
the edges below a node not yet given to a cluster form a connected set hanging from it; when
that set reaches `size` edges it becomes a cluster. Each cluster is connected and holds `size`
to about (degree - 1) * size edges; what is left at the top node is one last cluster, possibly
smaller. The centre of a cluster is its centroid: walking down from its top, into the part
holding more than half of its edges while there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papara_py.phylo.tree import EdgeTree


@dataclass(frozen=True)
class EdgeClusters:
    """A partition of the edges into connected clusters.

    cluster_of:  int32 [E], the cluster of each edge; clusters are numbered 0..C-1 by their
                 smallest edge.
    member_ptr, members: cluster c's edges, ascending, are members[member_ptr[c]:member_ptr[c+1]].
    centre:      int32 [C], the central edge of each cluster.
    border_ptr, border: the other clusters holding an edge that shares a node with edge e are
                 border[border_ptr[e]:border_ptr[e+1]] (empty inside a cluster).
    """

    cluster_of: np.ndarray
    member_ptr: np.ndarray
    members: np.ndarray
    centre: np.ndarray
    border_ptr: np.ndarray
    border: np.ndarray

    @property
    def n_clusters(self) -> int:
        return int(self.centre.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        """int64 [C]: edges per cluster."""
        return np.diff(self.member_ptr)

    def edges_of(self, cluster: int) -> np.ndarray:
        """The edges of `cluster`, ascending."""
        return self.members[self.member_ptr[cluster]:self.member_ptr[cluster + 1]]


def cluster_edges(tree: EdgeTree, size: int) -> EdgeClusters:
    """Cut `tree`'s edges into connected clusters of about `size` edges (module docstring)."""
    n_edges = tree.n_edges
    size = max(1, int(size))
    parent = tree.parent.tolist()
    pending = [1] * tree.n_nodes  # edges hanging from v not yet in a cluster, edge v included
    pending[tree.top] = 0
    cut = [False] * tree.n_nodes  # edge v closes a cluster (its pending set)
    for v in range(tree.top):  # ascending ids: a node's children have added theirs before it
        if pending[v] >= size:
            cut[v] = True
        else:
            pending[parent[v]] += pending[v]
    pending, cut = np.array(pending, dtype=np.int64), np.array(cut)
    # each edge belongs to the cluster closed by the nearest cut edge at or above it (the top: the rest)
    label = np.empty(tree.n_nodes, dtype=np.int64)
    label[tree.top] = tree.top
    for v in range(tree.top - 1, -1, -1):  # descending ids: a parent before its children
        label[v] = v if cut[v] else label[tree.parent[v]]
    heads, cluster_of = np.unique(label[:n_edges], return_inverse=True)
    # number clusters by their smallest edge (the first edge seen in ascending order)
    first_edge = np.full(heads.size, n_edges, dtype=np.int64)
    np.minimum.at(first_edge, cluster_of, np.arange(n_edges))
    rank = np.empty(heads.size, dtype=np.int64)
    rank[np.argsort(first_edge, kind="stable")] = np.arange(heads.size)
    cluster_of = rank[cluster_of].astype(np.int32)
    heads = heads[np.argsort(rank)]
    order = np.argsort(cluster_of, kind="stable")  # ascending edges within each cluster
    member_ptr = np.concatenate(([0], np.cumsum(np.bincount(cluster_of, minlength=heads.size))))
    centre = np.array([_centroid(tree, int(head), cut, pending) for head in heads], dtype=np.int32)
    border_ptr, border = _borders(tree, cluster_of)
    return EdgeClusters(cluster_of, member_ptr, order.astype(np.int32), centre, border_ptr, border)


def _centroid(tree: EdgeTree, head: int, cut: np.ndarray, pending: np.ndarray) -> int:
    """The central edge of the cluster closed at `head` (an edge, or the top node for the rest):
    from the top edge, step into the child part holding more than half the cluster's edges."""
    if head == tree.top:
        parts = [int(c) for c in tree.children(head) if not cut[c]]
        total = int(sum(pending[c] for c in parts))
        edge = max(parts, key=lambda c: (pending[c], -c))
    else:
        total, edge = int(pending[head]), head
    while True:
        inside = [int(c) for c in tree.children(edge) if not cut[c]]
        heavy = [c for c in inside if 2 * pending[c] > total]
        if not heavy:
            return edge
        edge = heavy[0]


def _borders(tree: EdgeTree, cluster_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per edge, the other clusters with an edge at one of its two nodes (CSR, ascending)."""
    n_edges = tree.n_edges
    n_clusters = int(cluster_of.max()) + 1
    # every (node, edge) incidence: edge e joins node e and its parent
    edges = np.concatenate((np.arange(n_edges), np.arange(n_edges)))
    nodes = np.concatenate((np.arange(n_edges), tree.parent[:n_edges].astype(np.int64)))
    present = np.unique(nodes * n_clusters + cluster_of[edges])  # (node, cluster) pairs
    node_of, cluster_at = np.divmod(present, n_clusters)
    mixed = np.unique(node_of[np.diff(node_of, prepend=-1) == 0])  # nodes where two clusters meet
    at_mixed = np.isin(nodes, mixed)
    pairs = set()
    for node, edge in zip(nodes[at_mixed].tolist(), edges[at_mixed].tolist()):
        lo, hi = np.searchsorted(node_of, [node, node + 1])
        pairs.update((edge, int(c)) for c in cluster_at[lo:hi] if c != cluster_of[edge])
    ordered = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    ptr = np.concatenate(([0], np.cumsum(np.bincount(ordered[:, 0], minlength=n_edges)))).astype(np.int64)
    return ptr, ordered[:, 1].astype(np.int32)
