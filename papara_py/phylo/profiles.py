"""Edge profiles: the ancestral state sets of a virtual root on every edge (DESIGN.md section 3).

Every edge (u, v) gets the set of states that minimise unit-cost parsimony with the root placed
on it. Rooting on each edge separately would cost O(E^2 m); instead two passes compute every
*directional* set once ("node x seen from neighbour y": x's optimal set on the subtree that
hangs from x away from y), and an edge's set is the combination of its two directional sets.

The combination rule (for unit cost it is exact, see DESIGN.md 3): count, per state, in how
many of the input sets it occurs, and keep the states with the maximal count; for two sets that
is "intersection if non-empty, else union".

Two characters travel together in one element per (direction, column), so both passes handle
them with the same integer operations; with n = the alphabet's state count (4 for DNA in a
uint8, 20 for protein in a uint32, phylo/encoding.py):
    bits 0..n-1  the state set (gaps = all states, no constraint)
    bit  n       state "gap" of the two-state gap character (tip has - . ?)
    bit  n+1     state "residue" of that character
The rule is applied to the states and to bits n..n+1 separately. An edge's profile element is its
state set plus the CGAP bit (bit n, `Alphabet.cgap_bit`) where the gap character's optimal set is
exactly {gap}, plus, where the alphabet has room (DNA), its near states (DESIGN.md 3).

Near states. With the virtual root on edge (u, v) and directional sets X ("u seen from v") and
Y, unit-cost Sankoff gives root state s the cost min_X + min_Y + [s not in X] + [s not in Y]
(each side's optimal set is exactly its states of minimal conditional cost), so a state is 0, 1
or 2 steps above the optimum: 0 on the edge's set; 1 on X xor Y where X and Y meet, on every
other state where they do not. Those one-step states are the near states, except where either
view's gap character is exactly {gap}: a side made (mostly) of gaps carries no residue signal,
and without that rule every residue next to it would be one step away (notebook/ACCURACY.md,
"uninformative side"); there the edge has no near states.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from papara_py.host import affinity_cpus
from papara_py.phylo.encoding import DNA, IS_GAP, Alphabet, encode_near_states
from papara_py.phylo.tree import EdgeTree


class EdgeProfiles(Protocol):
    """What the engine and the traceback need of the edge profiles: `ProfileBuilder` (built for
    the run) and cluster/prepared.PreparedProfiles (loaded from `papara-py prepare`) both have it."""

    @property
    def n_edges(self) -> int: ...

    def profiles(self, edge_ids: np.ndarray) -> np.ndarray: ...


class _Packing:
    """The packed elements of one alphabet: where the two characters' bits lie, and the rule."""

    def __init__(self, alphabet: Alphabet) -> None:
        self.alphabet = alphabet
        n = alphabet.n_states
        self.dtype = alphabet.dtype
        self.n_bits = n + 2
        self.state_mask = self.dtype.type(alphabet.state_mask)
        self.gap_state = self.dtype.type(1 << n)
        self.gap_char_mask = self.dtype.type(3 << n)
        self.cgap_bit = self.dtype.type(alphabet.cgap_bit)
        #: ASCII -> packed tip element; 0 for bytes that are not alignment characters.
        self.tip_code = np.where(IS_GAP, 1 << n, 2 << n).astype(self.dtype) | alphabet.ref_code
        self.tip_code[alphabet.ref_code == 0] = 0

        if self.dtype.itemsize == 1:
            # one-byte elements (DNA): the same functions as tables, one gather each instead of
            # 5-7 array passes (the tree passes measured 2x faster)
            every = np.arange(256, dtype=self.dtype)
            self.union_where_empty = self._union_where_empty(every).take
            bits = self.n_bits  # every pair of packed directional sets -> its profile element
            pairs = np.arange(1 << (2 * bits))
            table = self._edge_elements(pairs >> bits, pairs & ((1 << bits) - 1))
            self.edge_elements = lambda x, y: table[(x.astype(np.intp) << bits) | y]
            self.table: np.ndarray | None = table
        else:
            self.union_where_empty = self._union_where_empty
            self.edge_elements = self._edge_elements
            self.table = None

    def _union_where_empty(self, both: np.ndarray) -> np.ndarray:
        """For an intersection: the bits of each character whose intersection is empty, i.e.
        where the two-set rule must fall back to the union."""
        zero = self.dtype.type(0)
        return (np.where(both & self.state_mask == 0, self.state_mask, zero)
                | np.where(both & self.gap_char_mask == 0, self.gap_char_mask, zero))

    def combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The rule for two packed sets: per character, intersection if non-empty, else union."""
        both = a & b
        return both | ((a | b) & self.union_where_empty(both))

    def _profile_elements(self, packed: np.ndarray) -> np.ndarray:
        """Packed sets of virtual roots -> profile elements (states, CGAP bit iff the gap
        character's set is {gap})."""
        cgap = np.where(packed & self.gap_char_mask == self.gap_state, self.cgap_bit, self.dtype.type(0))
        return (packed & self.state_mask) | cgap

    def _edge_elements(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Profile elements of edges from their two packed directional sets: the virtual root's
        element, plus the near-state field where the alphabet has one (module docstring)."""
        x = np.asarray(x).astype(self.dtype)
        y = np.asarray(y).astype(self.dtype)
        elements = self._profile_elements(self.combine(x, y))
        if not self.alphabet.stores_near_states:
            return elements
        states = elements & self.state_mask
        meet = x & y & self.state_mask
        near = np.where(meet != 0, (x | y) & self.state_mask & ~meet, self.state_mask & ~states)
        informative = (x & self.gap_char_mask != self.gap_state) & (y & self.gap_char_mask != self.gap_state)
        near = np.where(informative, near, 0).astype(self.dtype)
        return elements | encode_near_states(states, near, self.alphabet)


_DNA_PACKING = _Packing(DNA)


def combine_two(a: np.ndarray, b: np.ndarray, packing: _Packing = _DNA_PACKING) -> np.ndarray:
    """The rule for two packed sets: per character, intersection if non-empty, else union."""
    return packing.combine(a, b)


def bit_counts(sets: np.ndarray, n_bits: int = _DNA_PACKING.n_bits) -> np.ndarray:
    """int32 [n_bits, m]: for each state bit, in how many of the packed sets [k, m] it occurs.

    One bit at a time, so a large polytomy needs k x m temporary elements, not n_bits k m.
    """
    counts = np.empty((n_bits, sets.shape[1]), dtype=np.int32)
    for bit in range(n_bits):
        np.sum((sets >> bit) & 1, axis=0, dtype=np.int32, out=counts[bit])
    return counts


def _count_levels(counts: np.ndarray, packing: _Packing) -> tuple[np.ndarray, np.ndarray]:
    """Packed sets [m] of the states at the maximal count and at one below it, per character."""
    n = packing.alphabet.n_states
    best = np.zeros(counts.shape[1], dtype=packing.dtype)
    runner_up = np.zeros(counts.shape[1], dtype=packing.dtype)
    for lo, hi in ((0, n), (n, n + 2)):
        part = counts[lo:hi]
        top = part.max(axis=0)
        for bit in range(lo, hi):
            best |= (counts[bit] == top).astype(packing.dtype) << packing.dtype.type(bit)
            runner_up |= (counts[bit] == top - 1).astype(packing.dtype) << packing.dtype.type(bit)
    return best, runner_up


def combine_many(sets: np.ndarray, packing: _Packing = _DNA_PACKING) -> np.ndarray:
    """The rule for any number of packed sets [k, m] (k >= 1)."""
    return _count_levels(bit_counts(sets, packing.n_bits), packing)[0]


def combine_all_but_one(sets: np.ndarray, packing: _Packing = _DNA_PACKING) -> np.ndarray:
    """[k, m]: row i is the rule applied to all packed sets except row i, in O(k m).

    A polytomy node of degree k needs this for each neighbour; recounting per neighbour would
    be O(k^2 m). Leaving one set out lowers each count by at most one, so per character: the
    states at the maximal count that the left-out set lacks win if there are any; otherwise
    (it held them all) the maximum drops by one and the runner-up states it lacks join them.
    """
    best, runner_up = _count_levels(bit_counts(sets, packing.n_bits), packing)
    kept = best & ~sets
    return kept | ((best | (runner_up & ~sets)) & packing.union_where_empty(kept))

class ProfileBuilder:
    """Directional sets of every node, computed once; edge profiles combined on request.

    After __init__ nothing is written (the arrays are made read-only), so any number of threads
    may call `profiles` at once. The two passes and the profiles are numba loops (phylo/jit.py:
    one pass over each node's columns, no temporary arrays), the passes on `threads` threads,
    each over its own columns (None: the CPUs this process may use, at most _PASS_THREADS); the
    numpy passes below (`_down_pass`, `_up_pass`, level by level) are the reference the tests
    hold them against (tests/phylo/test_profiles.py).
    """

    def __init__(self, edge_tree: EdgeTree, tip_rows: np.ndarray, alphabet: Alphabet = DNA,
                 threads: int | None = None, jit: bool = True) -> None:
        """`tip_rows`: uint8 [n_tips, m] ASCII alignment rows in `edge_tree.tip_names` order, in
        `alphabet`'s letters (its profile elements are the result's dtype). `jit` False: the
        numpy passes (the reference)."""
        tip_rows = np.asarray(tip_rows)
        n_tips = edge_tree.n_tips
        if tip_rows.dtype != np.uint8 or tip_rows.ndim != 2 or tip_rows.shape[0] != n_tips:
            raise ValueError(
                f"tip_rows must be uint8 [{n_tips}, m], got {tip_rows.dtype} {tip_rows.shape}"
            )
        if tip_rows.shape[1] == 0:
            raise ValueError("tip_rows has no columns")
        self._tree = edge_tree
        self._packing = _Packing(alphabet)
        self._jit = jit
        # Row v of `_down`: node v seen from its parent; row v of `_up`: parent[v] seen from v.
        if jit:
            self._down, self._up = self._jit_passes(np.ascontiguousarray(tip_rows), threads)
        else:
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

    @property
    def alphabet(self) -> Alphabet:
        return self._packing.alphabet

    def profiles(self, edge_ids: np.ndarray) -> np.ndarray:
        """[len(edge_ids), m] profile elements (state set | CGAP bit | near states where the
        alphabet has them, the alphabet's dtype) of these edges."""
        ids = np.asarray(edge_ids, dtype=np.intp).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_edges):
            raise IndexError(f"edge ids must lie in 0..{self.n_edges - 1}")
        packing = self._packing
        if not self._jit or (packing.table is None and packing.alphabet.stores_near_states):
            return packing.edge_elements(self._down[ids], self._up[ids])
        from papara_py.phylo import jit

        out = np.empty((ids.size, self.n_columns), dtype=packing.dtype)
        if packing.table is not None:
            jit.edge_elements_table(self._down, self._up, ids, packing.table, packing.n_bits, out)
        else:
            jit.edge_elements_plain(self._down, self._up, ids, packing.alphabet.n_states,
                                    int(packing.cgap_bit), out)
        return out

    def lanes(self, edge_ids: np.ndarray, width: int) -> np.ndarray | None:
        """A block's lanes (engine/layout.py: [m, width], element [i, w] edge_ids[w]'s in column i,
        lanes past len(edge_ids) repeating the last) in one pass, or None where `profiles` and a
        transpose make them (the numpy reference)."""
        ids = np.asarray(edge_ids, dtype=np.intp).reshape(-1)
        packing = self._packing
        if not self._jit or (packing.table is None and packing.alphabet.stores_near_states) \
                or not 0 < ids.size <= width:
            return None
        if ids.min() < 0 or ids.max() >= self.n_edges:
            raise IndexError(f"edge ids must lie in 0..{self.n_edges - 1}")
        from papara_py.phylo import jit

        out = np.empty((self.n_columns, width), dtype=packing.dtype)
        table = packing.table if packing.table is not None else np.zeros(0, packing.dtype)
        jit.edge_lanes(self._down, self._up, ids, table, packing.n_bits, packing.alphabet.n_states,
                       int(packing.cgap_bit), out)
        return out

    def _jit_passes(self, tip_rows: np.ndarray, threads: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Both passes by phylo/jit.py's loops, the columns cut among `threads` threads."""
        from papara_py.phylo import jit

        tree, packing = self._tree, self._packing
        m = tip_rows.shape[1]
        down = np.empty((tree.n_edges, m), dtype=packing.dtype)
        up = np.empty_like(down)
        tip_node = tree.tip_node.astype(np.int64)
        child_ptr, child_ids = tree.child_ptr.astype(np.int64), tree.child_ids.astype(np.int64)
        n_states = packing.alphabet.n_states
        pieces = max(1, min(threads or min(_PASS_THREADS, affinity_cpus()), -(-m // _PASS_COLUMNS)))
        cuts = [m * p // pieces for p in range(pieces + 1)]

        def passes(p: int) -> tuple[int, int]:
            c0, c1 = cuts[p], cuts[p + 1]
            bad = jit.down_pass(down, tip_rows, tip_node, packing.tip_code, child_ptr, child_ids, n_states, c0, c1)
            if bad[0] < 0:
                jit.up_pass(down, up, child_ptr, child_ids, tree.top, n_states, c0, c1)
            return bad

        if pieces == 1:
            found = [passes(0)]
        else:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(pieces, thread_name_prefix="papara-profiles") as pool:
                found = list(pool.map(passes, range(pieces)))
        bad = [(t, c) for t, c in found if t >= 0]
        if bad:
            t, col = min(bad)
            raise ValueError(f"tip {tree.tip_names[t]!r}, column {col + 1}: "
                             f"{chr(tip_rows[t, col])!r} is not an alignment character ({packing.alphabet.name})")
        return down, up

    def _down_pass(self, tip_rows: np.ndarray) -> np.ndarray:
        """Post-order: each node seen from its parent, from its children seen from it.

        A level of nodes (same height above the tips) at a time, binary nodes in one array
        operation: a few hundred numpy calls for a tree of thousands of nodes instead of a few
        per node, which also keeps the pass fast while other threads hold the GIL (the reads'
        parser, the GPUs' start-up: each call that released it waited to get it back;
        notebook/BENCHMARKS.md, "Streaming the reads")."""
        tree, packing = self._tree, self._packing
        down = np.empty((tree.n_edges, tip_rows.shape[1]), dtype=packing.dtype)
        tips = packing.tip_code[tip_rows]
        if not tips.all():
            t, col = (int(i) for i in np.argwhere(tips == 0)[0])
            raise ValueError(f"tip {tree.tip_names[t]!r}, column {col + 1}: "
                             f"{chr(tip_rows[t, col])!r} is not an alignment character ({packing.alphabet.name})")
        down[tree.tip_node] = tips
        levels = _Levels(tree)
        for level in levels.by(levels.height, skip_top=True):
            two = level[levels.n_kids[level] == 2]
            down[two] = combine_two(down[levels.first[two]], down[levels.second[two]], packing)
            for v in level[levels.n_kids[level] != 2].tolist():
                down[v] = combine_many(down[tree.children(v)], packing)
        return down

    def _up_pass(self) -> np.ndarray:
        """Pre-order: for each child c of v, v seen from c, from v's other neighbours (a level
        of nodes, same depth below the top, at a time: see `_down_pass`)."""
        tree, down, packing = self._tree, self._down, self._packing
        up = np.empty_like(down)
        levels = _Levels(tree)
        for level in levels.by(levels.depth, skip_top=False):
            # the binary case: v's three neighbours are its two children and its parent (up[v])
            two = level[(levels.n_kids[level] == 2) & (level != tree.top)]
            x, y, z = down[levels.first[two]], down[levels.second[two]], up[two]
            up[levels.first[two]] = combine_two(y, z, packing)
            up[levels.second[two]] = combine_two(x, z, packing)
            for v in level[(levels.n_kids[level] != 2) | (level == tree.top)].tolist():
                kids = tree.children(v)
                # v's neighbours seen from v: its children, and its parent unless v is the top.
                neighbours = [down[c] for c in kids] + ([up[v]] if v != tree.top else [])
                if len(neighbours) == 3:  # each child sees the other two
                    a, b, c = neighbours
                    for kid, (p, q) in zip(kids.tolist(), ((b, c), (a, c), (a, b))):
                        up[kid] = combine_two(p, q, packing)
                else:
                    up[kids] = combine_all_but_one(np.stack(neighbours), packing)[: kids.size]
        return up


#: Threads the passes share at most, and the fewest columns one takes.
_PASS_THREADS = 8
_PASS_COLUMNS = 64


class _Levels:
    """The inner nodes of an EdgeTree grouped by height (above the tips) or depth (below the
    top), for the passes to combine a whole level of binary nodes at once."""

    def __init__(self, tree: EdgeTree) -> None:
        n = tree.n_nodes
        ptr, ids, parent = tree.child_ptr.tolist(), tree.child_ids.tolist(), tree.parent.tolist()
        height = [0] * n
        for v in range(n):  # ascending ids: children before parents
            for c in ids[ptr[v]:ptr[v + 1]]:
                height[v] = max(height[v], height[c] + 1)
        depth = [0] * n
        for v in range(n - 2, -1, -1):  # descending ids: a parent before its children
            depth[v] = depth[parent[v]] + 1
        self.height, self.depth = np.array(height), np.array(depth)
        self.n_kids = np.diff(tree.child_ptr)
        self.top = tree.top
        last = max(len(ids) - 1, 0)  # a tip's "first and second child": any valid index, never used
        self.first = tree.child_ids[np.minimum(tree.child_ptr[:-1], last)]
        self.second = tree.child_ids[np.minimum(tree.child_ptr[:-1] + 1, last)]

    def by(self, key: np.ndarray, skip_top: bool) -> list[np.ndarray]:
        """The inner nodes (the top unless `skip_top`) in levels of ascending `key`."""
        inner = np.flatnonzero(self.n_kids > 0)
        if skip_top:
            inner = inner[inner != self.top]
        inner = inner[np.argsort(key[inner], kind="stable")]
        return [level for level in np.split(inner, np.flatnonzero(np.diff(key[inner])) + 1) if level.size]
