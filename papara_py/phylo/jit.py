"""The numba side of phylo/: the column cost lookups the kernels call (`cost_row`,
`read_cost_row`, `cell_cost`; model/column_costs.py describes the table) and the encoding's
per-dtype constants as numba sees them (`cgap_bit_of`, `state_mask_of` of phylo/encoding.py:
compile-time constants of an array's element type).

Apart from encoding.py and column_costs.py so that importing those (the run file, exports, the
command line's options) does not import numba, whose import alone costs about half a second. A
kernel module imports this one (directly, or through `column_costs`' names above, which load it
on first use) before numba compiles code that calls `cgap_bit_of` or `state_mask_of`.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from papara_py.phylo.encoding import _BY_DTYPE, cgap_bit_of, state_mask_of


def _numba_constant(of_alphabet):
    """An overload body returning `of_alphabet(alphabet of the array's dtype)` as a constant."""

    def typer(elements):
        if not isinstance(elements, types.Array):
            return None
        value = of_alphabet(_BY_DTYPE[np.dtype(as_dtype(elements.dtype))])
        return lambda elements: value

    return typer


overload(cgap_bit_of)(_numba_constant(lambda alphabet: alphabet.cgap_bit))
overload(state_mask_of)(_numba_constant(lambda alphabet: alphabet.state_mask))


@njit(cache=True, nogil=True)
def cost_row(code, codes) -> int:
    """The row of read code `code` in a cost table with row codes `codes` (a read residue's
    codes are the alphabet's, so it is always there; anything else is a caller's error)."""
    for k in range(codes.shape[0]):
        if codes[k] == code:
            return k
    raise ValueError("a read code has no row in the column cost table")


@njit(cache=True, nogil=True)
def read_cost_row(costs, code):
    """The cost table row of a read residue (column_costs.kernel_costs' form; 0 without a table)."""
    if costs is None:
        return 0
    return cost_row(code, costs[1])


@njit(cache=True, nogil=True)
def cell_cost(costs, row, column):
    """X of table row `row` at `column` (0 without a table)."""
    if costs is None:
        return 0
    return costs[0][row, column]


# --- the profile passes (phylo/profiles.ProfileBuilder) -----------------------------------------
# Packed sets of two characters per element (profiles.py's module docstring): the states (mask
# `states`) and the gap character (mask `gaps`). Each pass runs over the columns [c0, c1) of every
# node, so that threads may share a pass by columns (columns are independent).


@njit(cache=True, nogil=True, inline="always")
def _fill_empty(both, states, gaps):
    """The bits of each character whose intersection `both` is empty (the union's bits there)."""
    fill = 0
    if both & states == 0:
        fill |= states
    if both & gaps == 0:
        fill |= gaps
    return fill


@njit(cache=True, nogil=True)
def _combine_rows(sets, a, b, out, v, c0, c1, states, gaps):
    """out[v, c0:c1] = the two-set rule of sets[a] and sets[b] (intersection if not empty, else
    union, per character)."""
    for c in range(c0, c1):
        x = sets[a, c]
        y = b[c]
        both = x & y
        out[v, c] = both | ((x | y) & _fill_empty(both, states, gaps))


@njit(cache=True, nogil=True)
def _count_levels(rows, c, n_states, n_bits, counts):
    """(best, runner_up) packed sets of column c over the sets `rows` [k, m]: per character, the
    bits at the maximal count and at one below it (profiles._count_levels)."""
    for bit in range(n_bits):
        counts[bit] = 0
    for r in range(rows.shape[0]):
        x = rows[r, c]
        for bit in range(n_bits):
            counts[bit] += (x >> bit) & 1
    best = 0
    runner_up = 0
    lo = 0
    for hi in (n_states, n_bits):
        top = 0
        for bit in range(lo, hi):
            top = max(top, counts[bit])
        for bit in range(lo, hi):
            if counts[bit] == top:
                best |= 1 << bit
            elif counts[bit] == top - 1:
                runner_up |= 1 << bit
        lo = hi
    return best, runner_up


@njit(cache=True, nogil=True)
def down_pass(down, tip_rows, tip_node, tip_code, child_ptr, child_ids, n_states, c0, c1):
    """Columns [c0, c1) of `down` (row v: node v seen from its parent, profiles.py) for every node
    below the top: tips from their rows (`tip_code`: ASCII -> packed set), then each inner node
    (ascending ids: children first) from its children's sets. Returns the first (tip, column)
    whose character has no code, or (-1, -1)."""
    states = (1 << n_states) - 1
    gaps = 3 << n_states
    n_bits = n_states + 2
    for t in range(tip_rows.shape[0]):
        row = down[tip_node[t]]
        letters = tip_rows[t]
        missing = False
        for c in range(c0, c1):
            code = tip_code[letters[c]]
            missing |= code == 0
            row[c] = code
        if missing:
            for c in range(c0, c1):
                if row[c] == 0:
                    return t, c
    counts = np.zeros(n_bits, np.int64)
    for v in range(down.shape[0]):
        first, end = child_ptr[v], child_ptr[v + 1]
        if end - first == 2:
            _combine_rows(down, child_ids[first], down[child_ids[first + 1]], down, v, c0, c1, states, gaps)
        elif end - first > 0:
            kids = down[child_ids[first:end]]
            for c in range(c0, c1):
                down[v, c] = _count_levels(kids, c, n_states, n_bits, counts)[0]
    return -1, -1


@njit(cache=True, nogil=True)
def up_pass(down, up, child_ptr, child_ids, top, n_states, c0, c1):
    """Columns [c0, c1) of `up` (row c: parent[c] seen from c): for each node v from the top down
    (descending ids), its children's rows from v's other neighbours (its other children's `down`,
    and `up[v]` unless v is the top); a node of three neighbours by the two-set rule, others by
    the all-but-one rule (profiles.combine_all_but_one)."""
    states = (1 << n_states) - 1
    gaps = 3 << n_states
    n_bits = n_states + 2
    counts = np.zeros(n_bits, np.int64)
    for v in range(top, -1, -1):
        first, end = child_ptr[v], child_ptr[v + 1]
        k = end - first
        if k == 0:
            continue
        if v != top and k == 2:
            a, b = child_ids[first], child_ids[first + 1]
            _combine_rows(down, b, up[v], up, a, c0, c1, states, gaps)
            _combine_rows(down, a, up[v], up, b, c0, c1, states, gaps)
        elif v == top and k == 3:
            a, b, c = child_ids[first], child_ids[first + 1], child_ids[first + 2]
            _combine_rows(down, b, down[c], up, a, c0, c1, states, gaps)
            _combine_rows(down, a, down[c], up, b, c0, c1, states, gaps)
            _combine_rows(down, a, down[b], up, c, c0, c1, states, gaps)
        else:
            n = k + (1 if v != top else 0)
            sets = np.empty((n, down.shape[1]), down.dtype)
            for col in range(c0, c1):  # element by element: a row assignment would compile numba's
                for j in range(k):     # shape-mismatch message, seconds of a cold start
                    sets[j, col] = down[child_ids[first + j], col]
                if v != top:
                    sets[k, col] = up[v, col]
            for col in range(c0, c1):
                best, runner_up = _count_levels(sets, col, n_states, n_bits, counts)
                for j in range(k):
                    x = sets[j, col]
                    kept = best & ~x
                    up[child_ids[first + j], col] = kept | ((best | (runner_up & ~x)) & _fill_empty(kept, states, gaps))
    return 0


@njit(cache=True, nogil=True)
def edge_elements_table(down, up, ids, table, bits, out):
    """out[i] = table[down[ids[i]] << bits | up[ids[i]]]: one-byte profile elements (DNA) of the
    edges `ids` from their two directional sets (profiles._Packing's table)."""
    for i in range(ids.shape[0]):
        e = ids[i]
        for c in range(down.shape[1]):
            out[i, c] = table[(np.int64(down[e, c]) << bits) | up[e, c]]


@njit(cache=True, nogil=True)
def _plain_element(x, y, n_states, cgap_bit):
    """The profile element of one column from its two directional sets x and y where the alphabet
    stores no near states (protein): the two-set rule's states, and the CGAP bit where the gap
    character's set is exactly {gap}."""
    states = (1 << n_states) - 1
    gaps = 3 << n_states
    both = x & y
    packed = both | ((x | y) & _fill_empty(both, states, gaps))
    return (packed & states) | (cgap_bit if packed & gaps == 1 << n_states else 0)


@njit(cache=True, nogil=True)
def edge_elements_plain(down, up, ids, n_states, cgap_bit, out):
    """out[i] = the profile elements of edges `ids` where the alphabet stores no near states
    (protein), by `_plain_element`."""
    for i in range(ids.shape[0]):
        e = ids[i]
        for c in range(down.shape[1]):
            out[i, c] = _plain_element(down[e, c], up[e, c], n_states, cgap_bit)


@njit(cache=True, nogil=True)
def edge_lanes(down, up, ids, table, bits, n_states, cgap_bit, out):
    """A block's lanes (engine/layout.py): out[c, w] = the profile element of edge ids[w] in
    column c, by `table` as `edge_elements_table` (DNA) or, where `table` is empty, as
    `edge_elements_plain`; lanes past len(ids) repeat the last edge."""
    n = ids.shape[0]
    for w in range(n):
        e = ids[w]
        if table.shape[0] > 0:
            for c in range(down.shape[1]):
                out[c, w] = table[(np.int64(down[e, c]) << bits) | up[e, c]]
        else:
            for c in range(down.shape[1]):
                out[c, w] = _plain_element(down[e, c], up[e, c], n_states, cgap_bit)
    for w in range(n, out.shape[1]):
        for c in range(down.shape[1]):
            out[c, w] = out[c, n - 1]
