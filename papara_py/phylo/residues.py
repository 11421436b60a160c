"""Single residues of an alphabet: the index of an unambiguous letter's one state.

The traceback's nearest-sequence bonus (pairwise/nearest.py) counts identities between a read and
the reference rows; identity is of single residues, so gaps and ambiguity codes (N, X, B, Z, J)
never match anything, not even themselves. The reference rows keep their gaps apart
(GAP_RESIDUE): the bonus waives a read gap's opening cost where the nearest row has one.
"""

from __future__ import annotations

import numpy as np

from papara_py.phylo.encoding import IS_GAP, Alphabet

#: Not one residue (a gap, an ambiguity code): never identical to anything.
NO_RESIDUE = 255
#: A gap in a reference row (GAP_CHARACTERS): matches no residue either.
GAP_RESIDUE = 254


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


def tip_residues(reference: np.ndarray, tips: np.ndarray) -> np.ndarray:
    """uint8 [m, len(tips)]: the rows of `tips` in `reference` (`reference_residues`), column by
    column; NO_RESIDUE throughout for a tip of -1 (no row: nothing matches it)."""
    tips = np.asarray(tips, np.int64)
    rows = np.full((reference.shape[0], tips.size), NO_RESIDUE, np.uint8)
    given = tips >= 0
    rows[:, given] = reference[:, tips[given]]
    return rows
