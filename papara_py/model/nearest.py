"""The read's nearest reference sequences (DESIGN.md 5, `nearest_bonus`).

Where a read still loses columns to MAFFT, it is mostly at gap sides around the held-out sequence's
own deletions, and there the reference sequence most like the read often holds the read's residue
in the true column (docs/ACCURACY.md, "The nearest reference sequence in the model"). The edge's
ancestral states cannot say which of two equally cheap gap placements that sequence takes; its
row can. So a read whose best-edge alignment shares at least NEAREST_SHARE of its placed residues
with a reference row is traced back again, on the same edges, towards its NEAREST_ROWS nearest
rows that do (the most identities, then the first in tip order): every read residue that equals
one of those rows' residues in a column costs `nearest_bonus` less there, and a gap in the read
opens free where one of them has a gap (their own deletions are the likeliest the read shares).
Two rows rather than one: where the nearest two disagree, neither outweighs the other, and the
edge's states decide as without the bonus. Scores, best edges and candidates never change: this
is a traceback setting, like the column votes (model/votes.py), which then vote over the
bonused alignments.

Identity is of single residues: a residue index (the one state of an unambiguous letter) per read
residue and per reference cell, NO_RESIDUE for ambiguity codes and GAP_RESIDUE for the reference's
gaps, which never match (phylo/residues.py).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.residues import NO_RESIDUE, residue_index_table

#: The share of a read's placed residues its nearest row must hold identically in the same
#: columns for the bonus to apply, as a fraction (numerator, denominator): 0.5, chosen with the
#: bonus by the study (below it the nearest row knows the read's gaps no better than the edge's
#: states: at 0.4, or ungated, the validation seeds lose).
NEAREST_SHARE = (1, 2)
#: How many nearest rows a read's bonus follows (each must hold NEAREST_SHARE): 2, chosen by the
#: study (the second row's residues and gaps lift the validation seeds' and the LG ladder's worst
#: sets; a second row gated lower, at 0.4, loses the LG ladder).
NEAREST_ROWS = 2
#: Reads per nearest-row search call (`bonus_reads`).
SEARCH_SLICE = 512


@njit(cache=True, nogil=True)
def identity_tally(row: np.ndarray, table: np.ndarray, reference: np.ndarray, gap: int, tally: np.ndarray) -> int:
    """Add to tally[t] the identities of one read's row (uint8 [m] in reference columns, ASCII,
    `gap` where none) with reference row t (`reference_residues`; `table`:
    `residue_index_table`); returns the row's placed residues. Shared by the nearest rows and the
    choice's row weights (model/choice.py), so both count identity alike."""
    placed = 0
    for i in range(row.shape[0]):
        if row[i] == gap:
            continue
        placed += 1
        residue = table[row[i]]
        if residue == NO_RESIDUE:
            continue
        column = reference[i]
        for t in range(column.shape[0]):
            if column[t] == residue:
                tally[t] += 1
    return placed


@njit(cache=True, nogil=True)
def nearest_rows(rows: np.ndarray, table: np.ndarray, reference: np.ndarray, gap: int):
    """Each read's NEAREST_ROWS nearest reference rows: rows uint8 [reads, m] the reads in
    reference columns (ASCII, `gap` where none), table `residue_index_table`, reference
    `reference_residues`. Returns (tips int32 [reads, NEAREST_ROWS], their identities int32
    [reads, NEAREST_ROWS], placed residues int32 [reads]): the most identities first, the first
    in tip order on a tie; a rank with no identity left has tip -1."""
    count = rows.shape[0]
    tips = reference.shape[1]
    nearest = np.full((count, NEAREST_ROWS), -1, np.int32)
    identities = np.zeros((count, NEAREST_ROWS), np.int32)
    placed = np.zeros(count, np.int32)
    tally = np.empty(tips, np.int32)
    for r in range(count):
        tally[:] = 0
        placed[r] = identity_tally(rows[r], table, reference, gap, tally)
        for rank in range(NEAREST_ROWS):
            best = 0
            for t in range(tips):
                if tally[t] > best:
                    best = tally[t]
                    nearest[r, rank] = t
            if best == 0:
                break
            identities[r, rank] = best
            tally[nearest[r, rank]] = 0  # taken: the next rank is the best of the others
    return nearest, identities, placed


def bonus_reads(rows: np.ndarray, alphabet: Alphabet, reference: np.ndarray, threads: int = 1,
                gap: int = ord("-")) -> np.ndarray:
    """int32 [reads, NEAREST_ROWS]: the tips whose rows earn each read the bonus (its nearest
    rows, each holding at least NEAREST_SHARE of the read's placed residues), -1 for the others;
    a read without a first has the bonus from none. The search costs tips x placed residues per
    read, so slices of SEARCH_SLICE reads go to `threads` threads (GIL-free numba calls; each
    read's answer is its own)."""
    table = residue_index_table(alphabet)
    pieces = [slice(a, a + SEARCH_SLICE) for a in range(0, rows.shape[0], SEARCH_SLICE)]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        found = list(pool.map(lambda piece: nearest_rows(rows[piece], table, reference, gap), pieces))
    if not found:
        return np.empty((0, NEAREST_ROWS), np.int32)
    nearest, identities, placed = (np.concatenate(part) for part in zip(*found))
    share, whole = NEAREST_SHARE
    near_enough = (nearest >= 0) & (whole * identities >= share * placed[:, None])
    return np.where(near_enough, nearest, -1).astype(np.int32)


def load_nearest() -> None:
    """Compile (or load from numba's cache) the nearest-row search on the calling thread
    (model/decode.warm_up)."""
    nearest_rows(np.zeros((0, 1), np.uint8), np.zeros(256, np.uint8), np.zeros((1, 1), np.uint8), ord("-"))
