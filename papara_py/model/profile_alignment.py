"""The reference profile's own alignment of a read: the choice's third candidate (DESIGN.md 5,
`second_model`).

The choice (model/choice.py) scores a read's two model alignments by the reference
alignment's own column composition, the rows weighted by their identity with the read. Aligning
the read to that weighted profile directly, a dynamic programme over the profile score with no
tree and no edge, gives a third alignment, right on many reads both models place wrongly: taking
each read's better of it and the chosen one by the truth would put every study and validation
set at or above MAFFT and hmmalign (docs/ACCURACY.md, "The reference profile's own alignment").
The profile score prefers its own optimum by construction, so it cannot judge it alone; the run's
model can. The profile's alignment is kept where
- the model's cost of it on the read's best edge (`model_cost`: Eq. 1 in DESIGN 4's band, no
  bonus) is at most COST_MARGIN above that edge's score: the model is nearly as content with it,
  and
- its profile score beats the chosen alignment's by more than SCORE_MARGIN: the reference
  alignment clearly prefers it.
Both margins come from the study (docs/ACCURACY.md): without the first the profile's alignment
loses the divergent families, with a smaller second it loses the Poisson ladder.

The programme runs over the columns from WINDOW before the chosen alignment's first placed column
to WINDOW after its last (the profile score of an alignment depends only on the columns it places
residues in and skips, so the window changes nothing else). In it, per read: the column
compositions under the read's weights, then three states per (residue, column): placed there,
inserted after the last placed column, or skipping the column after the last placed residue. It
runs in float64 on the host, in one fixed order, for every device, so CPU and GPU runs agree.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from papara_py.model.choice import (
    DELETION_OPEN,
    INSERTED,
    PSEUDOCOUNT,
    background,
    profile_score,
    row_weights,
)
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import INF64, column_penalties, diagonal_cost
from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.jit import read_cost_row, state_mask_of
from papara_py.phylo.residues import GAP_RESIDUE, residue_index_table

#: Columns the programme may use beyond the chosen alignment's first and last placed column.
WINDOW = 10
#: How far above the best edge's score the model's cost of the profile's alignment may lie.
COST_MARGIN = 12
#: How much higher the profile's alignment must score than the chosen one (natural-log units).
SCORE_MARGIN = 8.0
#: Reads a thread takes at once.
PROFILE_SLICE = 256

_NONE = -1e300
_PLACED, _INSERTED, _SKIPPED = 1, 2, 3


@njit(cache=True, nogil=True)
def column_scores(reference, lo, hi, weights, background, residues, emit, log_gap):
    """emit[j, c - lo]: what placing read residue j in column c adds to the profile score;
    log_gap[c - lo]: what skipping column c adds (model/choice.py's terms), for c in [lo, hi)."""
    tips = reference.shape[1]
    n_states = background.shape[0]
    total = weights.sum()
    counts = np.zeros(n_states)
    for c in range(lo, hi):
        counts[:] = 0.0
        gaps = 0.0
        for r in range(tips):
            x = reference[c, r]
            if x < n_states:
                counts[x] += weights[r]
            elif x == GAP_RESIDUE:
                gaps += weights[r]
        share = (gaps + 0.5) / (total + 1.0)
        log_gap[c - lo] = math.log(share)
        occupancy = math.log(1.0 - share)
        column_total = counts.sum()
        for j in range(residues.shape[0]):
            a = residues[j]
            emit[j, c - lo] = occupancy
            if a < n_states:
                emit[j, c - lo] += math.log((counts[a] + PSEUDOCOUNT * background[a]) / (column_total + PSEUDOCOUNT)
                                            / background[a])


@njit(cache=True, nogil=True)
def profile_dp(emit, log_gap, columns):
    """The alignment of highest profile score into `columns` (one per residue, window-relative,
    -1 inserted); returns its score. Between two placed residues the inserted ones come before
    the skipped columns (the score does not depend on their order), so a gap opens once."""
    n, m = emit.shape
    placed = np.full((n, m), _NONE)
    inserted = np.full((n, m), _NONE)
    skipped = np.full((n, m), _NONE)
    from_placed = np.zeros((n, m), np.int8)
    from_inserted = np.zeros((n, m), np.int8)
    from_skipped = np.zeros((n, m), np.int8)
    for j in range(n):
        for c in range(m):
            best, arg = -INSERTED * j, 0  # the first placed residue, after j inserted ones
            if j > 0 and c > 0:
                if placed[j - 1, c - 1] > best:
                    best, arg = placed[j - 1, c - 1], _PLACED
                if inserted[j - 1, c - 1] > best:
                    best, arg = inserted[j - 1, c - 1], _INSERTED
                if skipped[j - 1, c - 1] > best:
                    best, arg = skipped[j - 1, c - 1], _SKIPPED
            placed[j, c], from_placed[j, c] = emit[j, c] + best, arg
            if j > 0:
                if placed[j - 1, c] >= inserted[j - 1, c]:
                    inserted[j, c], from_inserted[j, c] = placed[j - 1, c] - INSERTED, _PLACED
                else:
                    inserted[j, c], from_inserted[j, c] = inserted[j - 1, c] - INSERTED, _INSERTED
            if c > 0:
                best, arg = placed[j, c - 1] - DELETION_OPEN, _PLACED
                if inserted[j, c - 1] - DELETION_OPEN > best:
                    best, arg = inserted[j, c - 1] - DELETION_OPEN, _INSERTED
                if skipped[j, c - 1] > best:
                    best, arg = skipped[j, c - 1], _SKIPPED
                skipped[j, c], from_skipped[j, c] = best + log_gap[c], arg
    score, state, c = _NONE, _PLACED, 0
    for cc in range(m):
        if placed[n - 1, cc] > score:
            score, state, c = placed[n - 1, cc], _PLACED, cc
        if inserted[n - 1, cc] > score:
            score, state, c = inserted[n - 1, cc], _INSERTED, cc
    columns[:] = -1
    j = n - 1
    while j >= 0:
        if state == _PLACED:
            columns[j] = c
            state = from_placed[j, c]
            if state == 0:
                break
            j, c = j - 1, c - 1
        elif state == _INSERTED:
            state = from_inserted[j, c]
            j -= 1
        else:
            state = from_skipped[j, c]
            c -= 1
    return score


@njit(cache=True, nogil=True)
def model_cost(read, profile, near, p, costs, columns):
    """Eq. 1's cost of one alignment (`columns`, -1 inserted) of the encoded read to one edge
    profile in DESIGN 4's band (reference_scorer.fill_band_into with margin 0 and no bonus; INF64
    where the path leaves the band): each placed residue M_ij + X_ij + CG_i, each run of skipped
    columns OE of its first and E of the others, each inserted residue the insertion cost;
    columns before the first and after the last placed residue free."""
    n, m = read.shape[0], profile.shape[0]
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    first = -1
    for j in range(n):
        if columns[j] >= 0:
            first = j
            break
    if first < 0 or columns[first] > m - n:  # the path leaves the free boundary row inside the band
        return INF64
    cost = 0
    previous = -1
    for j in range(n):
        c = columns[j]
        if c < 0:
            cost += p[4]
            continue
        if not 0 <= c - j <= m - n:
            return INF64
        if previous >= 0:
            skipped, inserted, k = c - columns[previous] - 1, j - previous - 1, columns[previous] - previous
            if k - inserted < 0 and k + skipped > m - n:  # neither order of the gap stays in the band
                return INF64
            for t in range(skipped):
                cost += oe[columns[previous] + 1] if t == 0 else ex[columns[previous] + 1 + t]
        b = read[j]
        cost += cg[c] + diagonal_cost(profile[c], near[c], b, states, p, costs, read_cost_row(costs, b), c)
        previous = j
    if columns[previous] - previous - (n - 1 - previous) < 0:  # the trailing insertions leave the band
        return INF64
    return cost


@njit(cache=True, nogil=True)
def _profile_many(reference, residues, codes, offsets, chosen, rows, table, gap, which, profiles, near, edge_slot,
                  p, costs, best, background, out_columns, taken):
    """For reads which[k]: the profile's alignment into out_columns (absolute columns) and
    taken[k], whether it passes both margins (module docstring)."""
    weights = np.empty(reference.shape[1])
    counts = np.empty(background.shape[0])
    for k in range(which.shape[0]):
        q = which[k]
        lo_read, hi_read = offsets[q], offsets[q + 1]
        read, ours = residues[lo_read:hi_read], chosen[lo_read:hi_read]
        first, last = -1, -1
        for j in range(ours.shape[0]):
            if ours[j] >= 0:
                last = ours[j]
                if first < 0:
                    first = ours[j]
        if first < 0:
            continue
        lo, hi = max(0, first - WINDOW), min(reference.shape[0], last + WINDOW + 1)
        row_weights(rows[q], table, reference, gap, weights)
        emit = np.empty((read.shape[0], hi - lo))
        log_gap = np.empty(hi - lo)
        column_scores(reference, lo, hi, weights, background, read, emit, log_gap)
        theirs = out_columns[lo_read:hi_read]
        score = profile_dp(emit, log_gap, theirs)
        same = True
        for j in range(theirs.shape[0]):
            if theirs[j] >= 0:
                theirs[j] += lo
            if theirs[j] != ours[j]:
                same = False
        if same or score - profile_score(reference, read, ours, weights, background, counts) <= SCORE_MARGIN:
            continue
        slot = edge_slot[q]
        taken[k] = (model_cost(codes[lo_read:hi_read], profiles[slot], near[slot], p, costs, theirs)
                    <= best[q] + COST_MARGIN)


def profile_preferred(reference: np.ndarray, residues: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
                      chosen: np.ndarray, rows: np.ndarray, alphabet: Alphabet, profiles: np.ndarray,
                      near: np.ndarray, edge_slot: np.ndarray, params: ScoringParams, costs, best: np.ndarray,
                      threads: int = 1, gap: int = ord("-")) -> tuple[np.ndarray, np.ndarray]:
    """(bool [reads]: the reads that take the profile's alignment, int64 [residues]: each
    residue's column in it, -1 inserted; meaningful for those reads). `reference`: the reference
    rows' residue indices [m, tips] (phylo/residues.reference_residues); `residues`: the reads'
    residue indices and `codes` their state sets, cut by `offsets`; `chosen`: each residue's
    column in the read's chosen alignment and `rows` those alignments as rows (uint8 [reads, m],
    ASCII, `gap` where none), which weigh the reference rows; `profiles` [edges, m] and `near`:
    the reads' best edges' profiles and near states, read q's at edge_slot[q]; `params`, `costs`
    (model/column_costs.kernel_costs): the run's model; `best`: each read's best edge's score.
    Slices of PROFILE_SLICE reads go to `threads` threads (GIL-free numba calls)."""
    offsets = np.asarray(offsets, np.int64)
    count = offsets.size - 1
    which = np.arange(count, dtype=np.int64)
    taken = np.zeros(count, bool)
    columns = np.full(int(offsets[-1]), -1, np.int64)
    table, frequencies = residue_index_table(alphabet), background(alphabet)
    p, best = params.as_array(), np.asarray(best, np.int64)
    pieces = [slice(a, a + PROFILE_SLICE) for a in range(0, count, PROFILE_SLICE)]
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(lambda piece: _profile_many(reference, residues, codes, offsets, chosen, rows, table, gap,
                                                  which[piece], profiles, near, edge_slot, p, costs, best,
                                                  frequencies, columns, taken[piece]), pieces))
    return taken, columns


def load_profile_alignment() -> None:
    """Compile (or load from numba's cache) the profile's alignment on the calling thread
    (model/decode.warm_up), for protein edge profiles with column profile costs (the `protein`
    preset's)."""
    none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
    costs = (np.zeros((1, 1), np.uint8), np.ones(1, np.uint32))
    _profile_many(np.zeros((1, 1), np.uint8), np.zeros(0, np.uint8), np.zeros(0, np.uint32), one, none,
                  np.zeros((0, 1), np.uint8), np.zeros(256, np.uint8), ord("-"), none, np.zeros((1, 1), np.uint32),
                  np.zeros((1, 1), np.uint32), none, np.zeros(6, np.int64), costs, none, np.ones(20), none,
                  np.zeros(0, bool))
