"""Traceback of DESIGN.md section 5: the alignment of a read to its best edge.

The band is recomputed with the reference scorer's `fill_band_into` (int64, so the traceback never
depends on a fast path), widened by the parameters' band margin at the excursion cost (DESIGN 5),
and walked back from the end column. Ties prefer, in this order, the
diagonal, then D (a reference column opposite a read gap), then I (a read residue between
columns); inside D, opening is preferred over extending. The end column is the smallest column
reaching the minimum of the last row.

The result is a start column plus a CIGAR over reference columns: M = a column holding a read
residue, D = a column without one, I = a read residue between columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.params import ScoringParams
from papara_py.model.paths import (
    OP_D,
    OP_I,
    OP_M,
    cigar_string,
    cigar_strings,
    encode_cigar,
    output_space,
    place_ops,
)
from papara_py.model.reference_scorer import (
    INF64,
    bonus_cost,
    boundary_value,
    column_penalties,
    diagonal_cost,
    excursion_step,
    fill_band_into,
    frame_width,
    opening_cost,
    profile_near,
)
from papara_py.phylo.encoding import alphabet_of
from papara_py.phylo.jit import read_cost_row, state_mask_of
from papara_py.phylo.residues import nearest_marks, residue_index_table


@dataclass(frozen=True)
class ReadAlignment:
    """One read aligned to one edge: its score, first reference column and CIGAR."""

    score: int
    start: int
    cigar: str


@njit(cache=True, nogil=True)
def _trace(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs, S_buffer: np.ndarray,
           D_buffer: np.ndarray, bonus, margin, excursion):
    """Walk the band back; returns (score, start column, ops in forward order as uint8).

    near: the profile's near states ([m], reference_scorer.profile_near); costs: the column
    profile costs (model/column_costs.kernel_costs); bonus: the nearest-sequence bonus
    (reference_scorer.bonus_cost; None: none); margin, excursion: the band margin and what leaving
    the band costs (reference_scorer.fill_band_into). S_buffer and D_buffer: int64 work space of
    at least n * frame_width(n, m, margin) cells each."""
    n = read.shape[0]
    m = profile.shape[0]
    width = frame_width(n, m, margin)
    S = S_buffer[:n * width].reshape((n, width))
    D = D_buffer[:n * width].reshape((n, width))
    fill_band_into(read, profile, near, p, costs, S, D, bonus, margin, excursion)
    cg, oe, _ = column_penalties(profile, p)
    states = state_mask_of(profile)
    last = S[n - 1]
    c = 0
    for cc in range(last.shape[0]):
        if last[cc] < last[c]:
            c = cc
    score = last[c]
    ops = np.empty(n + m, np.uint8)
    count = 0
    j = n - 1
    in_d = False
    while j >= 0:
        k = c - margin
        i = j + k
        if in_d:
            ops[count] = OP_D
            count += 1
            # opening preferred on a tie
            in_d = D[j, c] != (S[j, c - 1] + opening_cost(bonus, oe, i)
                               + excursion_step(k - 1, k, n, m, excursion))
            c -= 1
            continue
        diag_prev = S[j - 1, c] if j > 0 else boundary_value(i - 1, n, m, margin, excursion)
        b = read[j]
        cost = (diagonal_cost(profile[i], near[i], b, states, p, costs, read_cost_row(costs, b), i)
                - bonus_cost(bonus, j, i))
        if diag_prev < INF64 and S[j, c] == diag_prev + cost + cg[i]:
            ops[count] = OP_M
            count += 1
            j -= 1
        elif S[j, c] == D[j, c]:
            in_d = True
        else:
            ops[count] = OP_I
            count += 1
            j -= 1
            c += 1
    # at j == -1 the path left the free boundary row at column k - 1, so it starts at column k
    return score, c - margin, ops[:count][::-1].copy()


def align(read: np.ndarray, profile: np.ndarray, params: ScoringParams,
          family: np.ndarray | None = None, costs: ColumnCosts | None = None) -> ReadAlignment:
    """Align one encoded read (0 < n < m) to one edge profile with DESIGN 5's tie-breaking;
    `family`: the columns' family residues (model/family.py), `costs` the column profile costs
    (model/column_costs.py); None: none."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be aligned to {m} columns (need 0 < n < m)")
    cells = n * frame_width(n, m, params.band_margin)
    score, start, ops = _trace(read, profile, profile_near(profile, family), params.as_array(), kernel_costs(costs),
                               np.empty(cells, np.int64), np.empty(cells, np.int64), None, params.band_margin,
                               params.excursion_cost)
    return ReadAlignment(score=int(score), start=int(start), cigar=cigar_string(ops))


@njit(cache=True, nogil=True)
def _align_many(codes, residues, offsets, edge_slot, profiles, near, p, costs, bonus, margin, excursion, scores,
                starts, rows, cigar_bytes, cigar_ends):
    """Trace every read of a batch against its profile, GIL released for the whole batch.

    Read r is codes/residues[offsets[r]:offsets[r + 1]] against profiles[edge_slot[r]] (near
    states near[edge_slot[r]]); its aligned row goes to rows[r] (pre-filled with gaps) and its
    CIGAR to cigar_bytes[cigar_ends[r - 1]:cigar_ends[r]]. bonus: None, or (the reference rows'
    residue indices [m, tips], each read's nearest tips [reads, k], read residues beside `codes`,
    amount) of the nearest-sequence bonus; margin, excursion: the band margin and its cost
    (`_trace`). Each read's marks (phylo/residues.nearest_marks) are
    formed in one buffer as it comes, and kept for the next read while its tips are the same (a
    read's pairs, its best edge and its vote window's, come one after another with one tips).
    """
    m = profiles.shape[1]
    cells = 0
    for r in range(offsets.shape[0] - 1):
        n = offsets[r + 1] - offsets[r]
        cells = max(cells, n * frame_width(n, m, margin))
    S_buffer = np.empty(cells, np.int64)  # one work space for the batch (see fill_band_into)
    D_buffer = np.empty(cells, np.int64)
    marks = np.empty(m, np.uint32)
    marked = -1  # the pair whose tips `marks` now holds (-1: none yet)
    pos = np.int64(0)  # not a literal 0: numba would compile encode_cigar for that type as well
    for r in range(offsets.shape[0] - 1):
        a, b = offsets[r], offsets[r + 1]
        slot = edge_slot[r]
        if bonus is None:
            score, start, ops = _trace(codes[a:b], profiles[slot], near[slot], p, costs, S_buffer, D_buffer, None,
                                       margin, excursion)
        else:
            if marked < 0 or not np.array_equal(bonus[1][r], bonus[1][marked]):
                nearest_marks(bonus[0], bonus[1][r], marks)
                marked = r
            read_bonus = (marks, bonus[2][a:b], np.int64(bonus[3]))
            score, start, ops = _trace(codes[a:b], profiles[slot], near[slot], p, costs, S_buffer, D_buffer,
                                       read_bonus, margin, excursion)
        scores[r] = score
        starts[r] = start
        place_ops(ops, start, residues[a:b], rows[r])
        pos = encode_cigar(ops, cigar_bytes, pos)
        cigar_ends[r] = pos


def align_many(codes: np.ndarray, residues: np.ndarray, offsets: np.ndarray, edge_slot: np.ndarray,
               profiles: np.ndarray, params: ScoringParams, family: np.ndarray | None = None, gap: int = ord("-"),
               near: np.ndarray | None = None, costs: ColumnCosts | None = None,
               bonus: tuple[np.ndarray, np.ndarray, int] | None = None):
    """Align a batch of reads (each 0 < n < m) to their profiles in one GIL-free call.

    codes: encoded reads, residues: the same reads as ASCII (what the rows show), both cut by
    offsets; edge_slot[r] picks read r's profile; family: the columns' family residues; costs: the
    column profile costs (model/column_costs.py); near: the profiles' near states where the
    caller already has them (`profile_near(profiles, family)`: a batch traced back in slices over
    one profile array derives them once, not per slice); bonus: the nearest-sequence bonus
    (model/nearest.py): (the reference rows' residue indices uint8 [m, tips]
    (phylo/residues.reference_residues), each read's nearest tips [reads, k] (-1: none; a read
    with none has no bonus), the amount). Returns (scores int32, starts int32, CIGAR strings, aligned rows uint8 [reads, m]);
    without a bonus each equals what `align` and `place_read` give.
    """
    count = offsets.size - 1
    scores = np.empty(count, np.int32)
    starts = np.empty(count, np.int32)
    rows, cigar_bytes, cigar_ends = output_space(offsets, profiles.shape[1], gap)
    if near is None:
        near = profile_near(profiles, family)
    if bonus is not None:
        reference, tips, amount = bonus
        bonus = (np.ascontiguousarray(reference), np.asarray(tips, np.int64).reshape(count, -1),
                 residue_index_table(alphabet_of(profiles))[residues], amount)
    _align_many(codes, residues, offsets, edge_slot, profiles, near, params.as_array(), kernel_costs(costs), bonus,
                params.band_margin, params.excursion_cost, scores, starts, rows, cigar_bytes, cigar_ends)
    return scores, starts, cigar_strings(cigar_bytes, cigar_ends), rows


@njit(cache=True, nogil=True)
def _finish_walks(walks, walk_lengths, starts, residues, offsets, rows, cigar_bytes, cigar_ends):
    """`_align_many`'s placement and CIGARs for paths walked elsewhere: read r's ops are
    walks[r, :walk_lengths[r]] in walk order (the path's last op first)."""
    pos = np.int64(0)  # as in _align_many
    for r in range(offsets.shape[0] - 1):
        ops = walks[r, :walk_lengths[r]][::-1].copy()
        place_ops(ops, starts[r], residues[offsets[r]:offsets[r + 1]], rows[r])
        pos = encode_cigar(ops, cigar_bytes, pos)
        cigar_ends[r] = pos


def alignments_from_walks(walks: np.ndarray, walk_lengths: np.ndarray, scores: np.ndarray, starts: np.ndarray,
                          residues: np.ndarray, offsets: np.ndarray, m: int, gap: int = ord("-")):
    """`align_many`'s result for paths walked back elsewhere (engine/gpu_trace.py): walks uint8
    [reads, >= longest path] holds each read's ops (OP_M / OP_D / OP_I) from the path's end,
    walk_lengths how many; scores and starts as the walk found them."""
    rows, cigar_bytes, cigar_ends = output_space(offsets, m, gap)
    _finish_walks(walks, walk_lengths, starts, residues, offsets, rows, cigar_bytes, cigar_ends)
    return (np.asarray(scores, np.int32), np.asarray(starts, np.int32), cigar_strings(cigar_bytes, cigar_ends),
            rows)
