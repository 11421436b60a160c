"""The choice between two models' alignments of a read (DESIGN.md 5, `second_model`).

No single set of penalties is best for every protein family: a finer column profile cost (every
penalty doubled, so the cost rounds twice as finely, at a lower column weight) places the reads
of dense families better and those of divergent Pfam families worse, and every penalty point
measured trades one kind for the other (docs/ACCURACY.md, "A second model and the choice between
them"). So each read is aligned under both models and keeps, read by read, the alignment that a
judge outside both prefers: the reference alignment's own column composition, the profile score
below. Scores, best edges and candidates never change (the first model's stay): this is a
traceback setting, like the votes.

The profile score of a read's alignment (one column per residue, -1 where it is inserted):
- the reference rows are weighted by exp(IDENTITY_WEIGHT x (identity - best identity)), the
  identity of each row with the read along the first model's alignment (counted as for the
  nearest rows, model/nearest.identity_tally), so the composition is
  mostly that of the read's near relatives, and scaled to sum to the row count R;
- each placed residue adds log(share / background): its weighted share among the column's
  residues, with PSEUDOCOUNT residues at the background frequencies (BLOSUM62's, BACKGROUND), over
  its background frequency (an ambiguity code adds nothing), and log(1 - gap share) of its column
  (gap share: (weighted gaps + 1/2) / (R + 1));
- each deletion (columns skipped between two placed residues) costs DELETION_OPEN and adds
  log(gap share) of each skipped column;
- each inserted residue costs INSERTED.
The second model's alignment is kept only where its score is strictly higher; the weights, shares
and sums run in float64 in one fixed order, on the host for every device, so CPU and GPU runs
choose alike.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from papara_py.model.nearest import identity_tally
from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.residues import GAP_RESIDUE, residue_index_table

#: How strongly a reference row's weight follows its identity with the read (module docstring).
IDENTITY_WEIGHT = 10.0
#: Background residues added to every column's composition.
PSEUDOCOUNT = 2.0
#: A deletion's opening cost (natural log units).
DELETION_OPEN = 3.0
#: An inserted residue's cost.
INSERTED = 6.0
#: BLOSUM62's background residue frequencies (Robinson & Robinson 1991, as BLAST takes them),
#: normalised to sum to 1 over the 20 residues.
BACKGROUND = {"A": 0.0787945, "R": 0.0512956, "N": 0.0448398, "D": 0.0536265, "C": 0.0151430, "Q": 0.0402316,
              "E": 0.0670804, "G": 0.0720837, "H": 0.0262904, "I": 0.0667758, "L": 0.0988255, "K": 0.0524476,
              "M": 0.0218587, "F": 0.0451637, "P": 0.0395151, "S": 0.0712383, "T": 0.0558386, "W": 0.0131869,
              "Y": 0.0302843, "V": 0.0663845}
#: Reads a thread takes at once.
CHOICE_SLICE = 1024


def background(alphabet: Alphabet) -> np.ndarray:
    """float64 [states]: BACKGROUND in the alphabet's state order, normalised."""
    frequencies = np.array([BACKGROUND[letter] for letter in alphabet.letters])
    return frequencies / frequencies.sum()


@njit(cache=True, nogil=True)
def row_weights(row, table, reference, gap, weights):
    """The reference rows' weights for one read (module docstring) into `weights`: `row` is the
    read's first alignment in reference columns (ASCII, `gap` where none; `table`:
    residue_index_table), whose identities with each reference row nearest.identity_tally counts."""
    tips = reference.shape[1]
    weights[:] = 0.0
    placed = identity_tally(row, table, reference, gap, weights)
    if placed == 0:
        weights[:] = 1.0
        return
    best = weights.max()
    total = 0.0
    for r in range(tips):
        weights[r] = math.exp(IDENTITY_WEIGHT * (weights[r] - best) / placed)
        total += weights[r]
    for r in range(tips):
        weights[r] *= tips / total


@njit(cache=True, nogil=True)
def _gap_share(reference, column, weights, total):
    gaps = 0.0
    for r in range(reference.shape[1]):
        if reference[column, r] == GAP_RESIDUE:
            gaps += weights[r]
    return (gaps + 0.5) / (total + 1.0)


@njit(cache=True, nogil=True)
def profile_score(reference, residue, columns, weights, background, counts):
    """The profile score (module docstring) of one read's alignment: `residue` its residue indices,
    `columns` their columns; `reference` [m, tips] residue indices (phylo/residues.py),
    `weights` the rows' weights, `counts` float64 [states] scratch."""
    n_states = background.shape[0]
    total = weights.sum()
    score = 0.0
    previous = -1
    for j in range(residue.shape[0]):
        column = columns[j]
        if column < 0:
            score -= INSERTED
            continue
        counts[:] = 0.0
        for r in range(reference.shape[1]):
            x = reference[column, r]
            if x < n_states:
                counts[x] += weights[r]
        a = residue[j]
        if a < n_states:
            share = (counts[a] + PSEUDOCOUNT * background[a]) / (counts.sum() + PSEUDOCOUNT)
            score += math.log(share / background[a])
        score += math.log(1.0 - _gap_share(reference, column, weights, total))
        if previous >= 0 and column > previous + 1:
            score -= DELETION_OPEN
            for skipped in range(previous + 1, column):
                score += math.log(_gap_share(reference, skipped, weights, total))
        previous = column
    return score


@njit(cache=True, nogil=True)
def _choose(reference, residues, offsets, first, second, rows, table, gap, which, background, out):
    """out[k]: whether read which[k] keeps its second alignment (its profile score strictly higher);
    rows[which[k]]: its first alignment's row, which weighs the reference rows."""
    weights = np.empty(reference.shape[1])
    counts = np.empty(background.shape[0])
    for k in range(which.shape[0]):
        q = which[k]
        lo, hi = offsets[q], offsets[q + 1]
        row_weights(rows[q], table, reference, gap, weights)
        out[k] = (profile_score(reference, residues[lo:hi], second[lo:hi], weights, background, counts)
                  > profile_score(reference, residues[lo:hi], first[lo:hi], weights, background, counts))


def second_preferred(reference: np.ndarray, residues: np.ndarray, offsets: np.ndarray, first: np.ndarray,
                     second: np.ndarray, first_rows: np.ndarray, alphabet: Alphabet, threads: int = 1,
                     gap: int = ord("-")) -> np.ndarray:
    """bool [reads]: the reads whose second alignment the profile score prefers. `reference`: the
    reference rows' residue indices [m, tips] (phylo/residues.reference_residues); `residues`: the
    reads' residue indices (phylo/residues.residue_index_table) cut by `offsets`; `first`,
    `second`: each residue's column in the two alignments (model/paths.residue_columns);
    `first_rows`: the first alignments as rows (uint8 [reads, m], ASCII, `gap` where none), whose
    identities with the reference rows weigh them. Reads placed alike in both are not scored; the
    rest go in slices of CHOICE_SLICE to `threads` threads (GIL-free numba calls)."""
    offsets = np.asarray(offsets, np.int64)
    count = offsets.size - 1
    differs = np.zeros(count, bool)
    if count:
        changed = np.flatnonzero(first != second)
        differs[np.unique(np.searchsorted(offsets, changed, side="right") - 1)] = True
    which = np.flatnonzero(differs)
    taken = np.zeros(which.size, bool)
    frequencies, table = background(alphabet), residue_index_table(alphabet)
    pieces = [slice(a, a + CHOICE_SLICE) for a in range(0, which.size, CHOICE_SLICE)]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(lambda piece: _choose(reference, residues, offsets, first, second, first_rows, table, gap,
                                            which[piece], frequencies, taken[piece]), pieces))
    preferred = np.zeros(count, bool)
    preferred[which[taken]] = True
    return preferred


def load_choice() -> None:
    """Compile (or load from numba's cache) the choice on the calling thread (model/decode.warm_up)."""
    none = np.zeros(0, np.int64)
    _choose(np.zeros((1, 1), np.uint8), np.zeros(0, np.uint8), np.zeros(1, np.int64), none, none,
            np.zeros((0, 1), np.uint8), np.zeros(256, np.uint8), ord("-"), none, np.ones(20), np.zeros(0, bool))
