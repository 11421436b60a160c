"""Single residues of an alphabet: the index of an unambiguous letter's one state.

The traceback's nearest-sequence bonus (pairwise/nearest.py) counts identities between a read and
the reference rows; identity is of single residues, so gaps and ambiguity codes (N, X, B, Z, J)
never match anything, not even themselves. The reference rows keep their gaps apart
(GAP_RESIDUE): the bonus waives a read gap's opening cost where a nearest row has one. A read's
nearest rows reach the traceback as one mark set per column (`nearest_marks`). The location check
(pairwise/location.py) aligns a read to each reference row as a sequence of its own
(`reference_sequences`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from papara_py.phylo.encoding import IS_GAP, Alphabet

#: Not one residue (a gap, an ambiguity code): never identical to anything.
NO_RESIDUE = 255
#: A gap in a reference row (GAP_CHARACTERS): matches no residue either.
GAP_RESIDUE = 254
#: The mark of a gap in `nearest_marks` (residue r marks bit r; residue indices stay below 31).
GAP_MARK = 1 << 31


def residue_index_table(alphabet: Alphabet) -> np.ndarray:
    """uint8 [256]: each ASCII letter's residue index (its one state), NO_RESIDUE for gaps,
    ambiguity codes and anything else."""
    table = np.full(256, NO_RESIDUE, np.uint8)
    codes = alphabet.read_code.astype(np.int64) & alphabet.state_mask
    single = (codes != 0) & (codes & (codes - 1) == 0)
    table[single] = np.log2(codes[single]).astype(np.uint8)
    return table


def reference_residues(tip_rows: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """uint8 [m, tips]: the reference alignment's residue indices, GAP_RESIDUE for its gaps, column
    by column (pairwise/nearest.py walks a read's columns, each a contiguous run of tips)."""
    table = residue_index_table(alphabet)
    table[IS_GAP] = GAP_RESIDUE
    return np.ascontiguousarray(table[tip_rows].T)


class ReferenceSequences(NamedTuple):
    """The reference rows as sequences of their own, gaps removed, for aligning a read to each
    alone (pairwise/location.py): row t's residue indices are codes[offsets[t]:offsets[t + 1]]
    (NO_RESIDUE for ambiguity codes), and columns[...] the alignment column of each."""

    codes: np.ndarray    # uint8, the rows' residues one after another
    offsets: np.ndarray  # int64 [tips + 1]
    columns: np.ndarray  # int32, beside codes


def reference_sequences(residues: np.ndarray) -> ReferenceSequences:
    """`reference_residues`' rows ([m, tips]) as sequences without their gaps, in tip order."""
    by_row = np.ascontiguousarray(residues.T)
    held = by_row != GAP_RESIDUE
    columns = np.nonzero(held)[1]  # row-major: each row's columns in order
    offsets = np.concatenate(([0], np.cumsum(held.sum(axis=1)))).astype(np.int64)
    return ReferenceSequences(by_row[held], offsets, columns.astype(np.int32))


@njit(cache=True, nogil=True)
def nearest_marks(reference: np.ndarray, tips: np.ndarray, marks: np.ndarray) -> None:
    """What one read's nearest rows (`tips` [k] into `reference` (`reference_residues`), -1: no
    row) hold in each column, into `marks` (uint32 [m]): bit r for a residue of index r in one of
    the rows, GAP_MARK for a gap in one of them; no mark where none of them holds a residue (a
    read with no row has none: nothing matches it, no gap opens free). Residue indices stay below
    31 (20 amino acids, 4 nucleotides). kernels/band_trace.cl forms the same marks on the device."""
    marks[:] = 0
    for rank in range(tips.shape[0]):
        tip = tips[rank]
        if tip < 0:
            continue
        for i in range(reference.shape[0]):
            held = reference[i, tip]
            if held == GAP_RESIDUE:
                marks[i] |= np.uint32(GAP_MARK)
            elif held != NO_RESIDUE:
                marks[i] |= np.uint32(1) << np.uint32(held)
