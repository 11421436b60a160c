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
