"""The location check (DESIGN.md 5, `location_check`): reads the model placed in the wrong region.

Reads far from every reference sequence are sometimes placed wholesale in the wrong region: the
edges' scores do not find the true place (the column profile cost and CGAP prefer the wrong one),
while the read's closest reference sequence, aligned to it alone, does (docs/ACCURACY.md, "The
location check"). So after the traceback and the votes, each read is aligned on its own to every
reference sequence (gaps removed; semi-global: the whole read against any part of the sequence;
the alphabet's substitution matrix, BLOSUM62, and affine gaps of GAP_OPEN for a gap's first residue
and GAP_EXTEND for each further one, BLAST's protein defaults) and mapped onto the best-scoring
sequence's columns. Where that mapping scores at least SCORE_FLOOR a read residue and fewer than
`location_check` percent of the residues both place lie within NEAR_COLUMNS columns of each
other, the read is elsewhere altogether and takes the mapping's columns; otherwise its alignment
stands: where the two agree on the place, the model's
columns are the better ones (the mapping alone loses badly on divergent families). Scores, best
edges and candidates never change: this is a traceback setting, like the votes.

A read whose alignment already shares at least CHECKED_BELOW of its placed residues with one
reference row (the nearest bonus's gate, model/nearest.py) sits beside a close relative and is
not checked, which keeps the check's cost (tips x sequence length x read length per read) to the
divergent reads it is for. Those cells are scored on the GPU in a run with one
(engine/gpu_location.py, bit for bit `tip_scores`), else here on the host's threads.

Ties: the first row (tip order) of the best score; the traceback prefers a match, then a read
insertion, then a skipped sequence residue, as `semi_global` spells out. Residues are the
alphabet's single-state indices (phylo/residues.py); an ambiguity code scores AMBIGUOUS_SCORE
against anything.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from papara_py.model.column_costs import substitution_scores
from papara_py.model.nearest import nearest_rows
from papara_py.model.paths import replace_paths, residue_columns
from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.residues import (
    LANES,
    NO_RESIDUE,
    ReferenceSequences,
    residue_index_table,
)

#: The pairwise alignment's gap costs: a gap's first residue GAP_OPEN, each further one GAP_EXTEND.
GAP_OPEN, GAP_EXTEND = 11, 1
#: An ambiguity code's score against any residue.
AMBIGUOUS_SCORE = -1
#: Columns within which the model's and the mapping's column for a residue agree.
NEAR_COLUMNS = 3
#: The least score a mapping may move a read with, per read residue (numerator, denominator): a
#: read from a sequence far from every reference one scores about as well against a wrong one, and
#: a mapping that good is no evidence of where it belongs (docs/ACCURACY.md, "The location check").
SCORE_FLOOR = (1, 1)
#: Reads whose nearest row holds at least this share of their placed residues (numerator,
#: denominator) are not checked.
CHECKED_BELOW = (1, 2)
#: Checked reads per call (`relocate`): each costs tips x sequence length x read length, so small
#: slices keep the threads evenly busy.
CHECK_SLICE = 32
_NEG = -(1 << 29)
#: What a read residue scores against the padding past a lane's sequence: low enough that no
#: path through it is ever the best, high enough that nothing overflows (PADDING_SCORE + _NEG
#: stays far above int32's smallest value).
PADDING_SCORE = -(1 << 20)


def score_matrix(alphabet: Alphabet) -> np.ndarray:
    """int32 [S + 1, S + 1]: the alphabet's substitution scores over its states, and
    AMBIGUOUS_SCORE for the extra index S (an ambiguity code) against anything."""
    states = alphabet.n_states
    matrix = np.full((states + 1, states + 1), AMBIGUOUS_SCORE, np.int32)
    matrix[:states, :states] = substitution_scores(alphabet).astype(np.int32)
    return matrix


@njit(cache=True, nogil=True)
def lane_scores(profile, codes, m_cells, x_cells, y_cells, scores, carried, best):
    """Each lane's best score of the whole read against any part of its sequence (Gotoh's affine
    recurrence, as `semi_global`), LANES sequences at once, in linear memory, a sequence position
    at a time. profile [n, S + 2]: the read's residue j's score against each residue index
    (`read_profile`); codes [positions, LANES]: the group's sequences (padded past their ends,
    which changes no best score: a padded position's match scores PADDING_SCORE, and an insertion
    ending there is one the sequence's start already offers). m_cells, x_cells, y_cells
    [n + 1, LANES], scores [n, LANES] and carried [3, LANES] are scratch; the scores go into best
    [LANES]. The lanes are the inner loop, so LLVM vectorises it: one position's cells (j, lane)
    for all lanes a pass. Their count is read from `codes` rather than taken as the constant
    LANES: with a constant trip count the loop is unrolled instead and runs 2.5 times slower
    (BENCHMARKS.md, "The location check")."""
    n, lanes = profile.shape[0], codes.shape[1]
    for lane in range(lanes):
        m_cells[0, lane], x_cells[0, lane], y_cells[0, lane] = 0, _NEG, _NEG
    for j in range(1, n + 1):  # position 0: only the read's leading insertions
        for lane in range(lanes):
            m_cells[j, lane], y_cells[j, lane] = _NEG, _NEG
            x_cells[j, lane] = max(m_cells[j - 1, lane] - GAP_OPEN, x_cells[j - 1, lane] - GAP_EXTEND)
    for lane in range(lanes):
        best[lane] = max(m_cells[n, lane], x_cells[n, lane])
    diagonal, m_up, x_up = carried[0], carried[1], carried[2]
    for i in range(codes.shape[0]):
        here = codes[i]
        for j in range(n):
            against = profile[j]
            for lane in range(lanes):
                scores[j, lane] = against[here[lane]]
        for lane in range(lanes):  # cells (0, i - 1) and (0, i): the free start
            diagonal[lane], m_up[lane], x_up[lane] = 0, 0, _NEG
        for j in range(1, n + 1):
            for lane in range(lanes):
                m_left, x_left, y_left = m_cells[j, lane], x_cells[j, lane], y_cells[j, lane]
                y_here = max(m_left - GAP_OPEN, y_left - GAP_EXTEND)
                m_here = diagonal[lane] + scores[j - 1, lane]
                x_here = max(m_up[lane] - GAP_OPEN, x_up[lane] - GAP_EXTEND)
                m_cells[j, lane], x_cells[j, lane], y_cells[j, lane] = m_here, x_here, y_here
                diagonal[lane] = max(max(m_left, x_left), y_left)
                m_up[lane], x_up[lane] = m_here, x_here
        for lane in range(lanes):
            best[lane] = max(best[lane], max(m_up[lane], x_up[lane]))


@njit(cache=True, nogil=True)
def read_profile(read, matrix, out):
    """out[j, s] = matrix[read[j], s] (`lane_scores`' profile) for the read's residues, and
    PADDING_SCORE against PADDING."""
    for j in range(read.shape[0]):
        for s in range(matrix.shape[0]):
            out[j, s] = matrix[read[j], s]
        out[j, matrix.shape[0]] = PADDING_SCORE


@njit(cache=True, nogil=True)
def semi_global(read, row, matrix, faced):
    """The whole `read` against any part of `row` (residue indices into `matrix`; affine gaps,
    Gotoh): returns the best score and writes, for each read residue, the row position it faces
    (-1: inserted in the read) into `faced`. The best end is the first (row position, then match
    before insertion) of the best score; tracing back, a match cell's predecessor is a match, then
    an insertion, then a skip, and a gap's is its opening before its extension."""
    n, m = read.shape[0], row.shape[0]
    M = np.full((n + 1, m + 1), _NEG, np.int32)
    X = np.full((n + 1, m + 1), _NEG, np.int32)  # the read's residue j - 1 inserted
    Y = np.full((n + 1, m + 1), _NEG, np.int32)  # the row's residue i - 1 skipped
    M[0, :] = 0
    for j in range(1, n + 1):
        for i in range(m + 1):
            if i > 0:
                M[j, i] = max(M[j - 1, i - 1], X[j - 1, i - 1], Y[j - 1, i - 1]) + matrix[read[j - 1], row[i - 1]]
                Y[j, i] = max(M[j, i - 1] - GAP_OPEN, Y[j, i - 1] - GAP_EXTEND)
            X[j, i] = max(M[j - 1, i] - GAP_OPEN, X[j - 1, i] - GAP_EXTEND)
    best, end, state = _NEG - 1, 0, 0
    for i in range(m + 1):
        if M[n, i] > best:
            best, end, state = M[n, i], i, 0
        if X[n, i] > best:
            best, end, state = X[n, i], i, 1
    j, i = n, end
    while j > 0:
        if state == 0:
            faced[j - 1] = i - 1
            before = M[j, i] - matrix[read[j - 1], row[i - 1]]
            j -= 1
            i -= 1
            state = 0 if M[j, i] == before else (1 if X[j, i] == before else 2)
        elif state == 1:
            faced[j - 1] = -1
            here = X[j, i]
            j -= 1
            state = 0 if M[j, i] - GAP_OPEN == here else 1
        else:
            here = Y[j, i]
            i -= 1
            state = 0 if M[j, i] - GAP_OPEN == here else 2
    return best


@njit(cache=True, nogil=True)
def tip_scores(codes, offsets, which, lanes, lane_starts, lane_tips, matrix, out):
    """out[k, t]: the best score of read which[k] (codes[offsets[q]:offsets[q + 1]], residue indices)
    against reference sequence t, by `lane_scores` over the sequences' lanes (lanes, lane_starts,
    lane_tips: phylo/residues.LaneSequences); an empty read's row is left as it is."""
    longest = 0
    for q in which:
        longest = max(longest, offsets[q + 1] - offsets[q])
    cells = np.empty((3, longest + 1, LANES), np.int32)
    scores = np.empty((longest, LANES), np.int32)
    carried = np.empty((3, LANES), np.int32)
    profile = np.empty((longest, matrix.shape[0] + 1), np.int32)
    best = np.empty(LANES, np.int32)
    for k in range(which.shape[0]):
        lo, hi = offsets[which[k]], offsets[which[k] + 1]
        n = hi - lo
        if n == 0:
            continue
        read_profile(codes[lo:hi], matrix, profile[:n])
        for g in range(lane_starts.shape[0] - 1):
            lane_scores(profile[:n], lanes[lane_starts[g]:lane_starts[g + 1]], cells[0, :n + 1], cells[1, :n + 1],
                        cells[2, :n + 1], scores[:n], carried, best)
            for lane in range(LANES):
                tip = lane_tips[g * LANES + lane]
                if tip >= 0:
                    out[k, tip] = best[lane]


@njit(cache=True, nogil=True)
def check_reads(codes, offsets, ours, which, scores, ref_codes, ref_offsets, ref_columns, matrix, agree, floor,
                mapped):
    """For each read q = which[k]: codes[offsets[q]:offsets[q + 1]] its residue indices, ours[...]
    the model's column of each (-1: inserted), scores[k] its best score against each reference
    sequence (`tip_scores`, or the device's). Traces it on the best-scoring one (the first in tip
    order; ref_codes, ref_offsets, ref_columns: `ReferenceSequences`), writes that mapping onto the
    sequence's columns into mapped[...] and returns bool [len(which)]: the reads to relocate (the
    mapping scores at least floor[0] / floor[1] a read residue, places a residue, and fewer than
    `agree` percent of those both place are within NEAR_COLUMNS)."""
    relocate = np.zeros(which.shape[0], np.bool_)
    longest = 0
    for q in which:
        longest = max(longest, offsets[q + 1] - offsets[q])
    faced = np.empty(longest, np.int64)
    for k in range(which.shape[0]):
        q = which[k]
        lo, hi = offsets[q], offsets[q + 1]
        n = hi - lo
        if n == 0 or scores.shape[1] == 0:
            continue
        best_tip = np.argmax(scores[k])  # the first of the best
        if scores[k, best_tip] * floor[1] < floor[0] * n:
            continue
        read = codes[lo:hi]
        first = ref_offsets[best_tip]
        semi_global(read, ref_codes[first:ref_offsets[best_tip + 1]], matrix, faced)
        both = close = 0
        for j in range(n):
            column = ref_columns[first + faced[j]] if faced[j] >= 0 else -1
            mapped[lo + j] = column
            if column >= 0 and ours[lo + j] >= 0:
                both += 1
                if abs(column - ours[lo + j]) <= NEAR_COLUMNS:
                    close += 1
        relocate[k] = both > 0 and 100 * close < agree * both or both == 0 and _places(mapped[lo:hi])
    return relocate


@njit(cache=True, nogil=True)
def _places(columns):
    for column in columns:
        if column >= 0:
            return True
    return False


def relocate(starts: np.ndarray, cigars: list[str], rows: np.ndarray, residues: np.ndarray, offsets: np.ndarray,
             alphabet: Alphabet, reference: np.ndarray, sequences: ReferenceSequences, agree: int,
             threads: int = 1, gap: int = ord("-"),
             device_scores: Callable[..., np.ndarray | None] | None = None,
             ) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """The location check of a batch's final alignments: starts, CIGARs and rows (uint8 [reads, m])
    of the reads cut from `residues` (ASCII) by `offsets`; `reference` the rows' residues column by
    column and `sequences` the same rows without gaps (phylo/residues.py); `agree` the percentage
    (ScoringParams.location_check). Returns (starts, CIGARs, rows, bool [reads]: relocated), the
    relocated reads' alignments replaced by their mappings.

    The scoring pass (every checked read against every sequence) runs on `device_scores` where
    given (engine/gpu_location.py: called with the read codes, offsets, checked reads, the
    sequences' codes and offsets and the score matrix; int32 [checked, tips], or None where the
    host must do it, bit for bit the same), else as `tip_scores` on the host; both that and the
    rest go in slices of CHECK_SLICE checked reads to `threads` threads (GIL-free numba calls; each
    read's answer is its own)."""
    count = len(cigars)
    table = residue_index_table(alphabet)
    codes = np.where(table == NO_RESIDUE, alphabet.n_states, table).astype(np.uint8)[residues]
    offsets = np.asarray(offsets, np.int64)
    ours = residue_columns(starts, cigars, offsets)
    nearest, identities, placed = nearest_rows(rows, table, reference, gap)
    share, whole = CHECKED_BELOW
    which = np.flatnonzero((nearest[:, 0] < 0) | (whole * identities[:, 0] < share * placed))
    matrix, floor = score_matrix(alphabet), np.array(SCORE_FLOOR, np.int64)
    mapped = np.full(ours.size, -1, np.int64)
    pieces = [slice(a, a + CHECK_SLICE) for a in range(0, which.size, CHECK_SLICE)]
    moved = np.zeros(count, bool)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        scores = None
        if device_scores is not None and which.size:
            scores = device_scores(codes, offsets, which, sequences.codes, sequences.offsets, matrix)
        if scores is None:
            scores = np.zeros((which.size, sequences.offsets.size - 1), np.int32)
            lanes = sequences.lanes
            list(pool.map(lambda piece: tip_scores(codes, offsets, which[piece], lanes.codes, lanes.starts,
                                                   lanes.tips, matrix, scores[piece]), pieces))
        moved[which] = np.concatenate([np.zeros(0, bool), *pool.map(
            lambda piece: check_reads(codes, offsets, ours, which[piece], scores[piece], sequences.codes,
                                      sequences.offsets, sequences.columns, matrix, agree, floor, mapped), pieces)])
    starts, cigars, rows = replace_paths(starts, cigars, rows, residues, offsets, np.flatnonzero(moved), mapped, gap)
    return starts, cigars, rows, moved


def load_location() -> None:
    """Compile (or load from numba's cache) the location check on the calling thread
    (model/decode.warm_up)."""
    none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
    tip_scores(np.zeros(0, np.uint8), one, none, np.zeros((0, LANES), np.uint8), one, none,
               np.zeros((1, 1), np.int32), np.zeros((0, 0), np.int32))
    check_reads(np.zeros(0, np.uint8), one, none, none, np.zeros((0, 0), np.int32), np.zeros(0, np.uint8), one,
                np.zeros(0, np.int32), np.zeros((1, 1), np.int32), 10, np.ones(2, np.int64), none)
    residue_columns(np.zeros(0, np.int32), [], np.zeros(1, np.int64))
