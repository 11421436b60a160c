"""Column family residues (DESIGN.md 3): per reference column, the states common in the column.

Why: an edge's profile is one branch's ancestral state set, while the read may come from a taxon
whose residue at that column is one the family uses often but that branch does not have (a
profile HMM pools the whole column's residues; one branch's parsimony set does not).
Protein's near states (phylo/encoding.py) take in these residues, so a read residue the column
often holds costs near_mismatch rather than mismatch on every edge; notebook/ACCURACY.md ("Column
family residues for protein") measured it and the share that makes a residue common.

A column's family residues are the states whose unambiguous letters make up at least
`Alphabet.family_percent` percent of the column's residues in the reference alignment (gap
characters left out, ambiguity codes counted as residues but for no state), and occur at least
once. An alphabet without `family_percent` (DNA, whose near states come from the tree) has none.
"""

from __future__ import annotations

import numpy as np

from papara_py.phylo.encoding import IS_GAP, Alphabet

#: Alignment rows counted at a time: bounds the temporary [rows, m] int64 array of the histogram.
_ROWS_AT_A_TIME = 4096


def column_family(tip_rows: np.ndarray, alphabet: Alphabet) -> np.ndarray | None:
    """The family residues of each column ([m] state sets, the alphabet's dtype) of `tip_rows`
    (uint8 [n, m] ASCII alignment rows, already validated), or None for an alphabet without them."""
    if alphabet.family_percent is None:
        return None
    tip_rows = np.asarray(tip_rows, np.uint8)
    m = tip_rows.shape[1]
    letters = _column_letter_counts(tip_rows)  # [256, m]: how often each byte occurs per column
    residues = letters[~IS_GAP & (alphabet.ref_code != 0)].sum(axis=0)
    family = np.zeros(m, alphabet.dtype)
    for state in range(alphabet.n_states):
        bit = alphabet.dtype.type(1 << state)
        count = letters[alphabet.read_code == bit].sum(axis=0)
        common = (count > 0) & (100 * count >= alphabet.family_percent * residues)
        family[common] |= bit
    return family


def _column_letter_counts(tip_rows: np.ndarray) -> np.ndarray:
    """int64 [256, m]: occurrences of each byte value in each column, one pass over the rows."""
    m = tip_rows.shape[1]
    counts = np.zeros(256 * m, np.int64)
    column = np.arange(m, dtype=np.int64)
    for first in range(0, tip_rows.shape[0], _ROWS_AT_A_TIME):
        rows = tip_rows[first:first + _ROWS_AT_A_TIME].astype(np.int64)
        counts += np.bincount((rows * m + column).reshape(-1), minlength=256 * m)
    return counts.reshape(256, m)
