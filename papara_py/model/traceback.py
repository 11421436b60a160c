"""The Viterbi traceback of DESIGN.md section 5 (temperature 0, the `paper` preset): a read's
alignment on its best edge, Eq. 1 bit for bit.

The band is recomputed with the reference scorer's `fill_band_into` (int64, so the traceback never
depends on a fast path) and walked back from the end column. Ties prefer, in this order, the
diagonal, then D (a reference column opposite a read gap), then I (a read residue between
columns); inside D, opening is preferred over extending. The end column is the smallest column
reaching the minimum of the last row.

`align` gives one read's path as a start column and a CIGAR (M = a column holding a read residue,
D = a column without one, I = a read residue between columns); `align_many`, the runner's call,
gives a batch's reads as each residue's column (io/paths.INSERTED where inserted): the
one form the model hands on, which the writers turn into CIGARs and rows (io/paths.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from papara_py.io.paths import OP_D, OP_I, OP_M, apply_ops, cigar_string
from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import (
    INF64,
    column_penalties,
    diagonal_cost,
    fill_band_into,
    profile_near,
)
from papara_py.phylo.jit import read_cost_row, state_mask_of


@dataclass(frozen=True)
class ReadAlignment:
    """One read aligned to one edge: its score, first reference column and CIGAR."""

    score: int
    start: int
    cigar: str


@njit(cache=True, nogil=True)
def _trace(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs, S_buffer: np.ndarray,
           D_buffer: np.ndarray):
    """Walk the band back; returns (score, start column, ops in forward order as uint8).

    near: the profile's near states ([m], reference_scorer.profile_near); costs: the column
    profile costs (model/column_costs.kernel_costs). S_buffer and D_buffer: int64 work space of
    at least n * (m - n + 1) cells each."""
    n = read.shape[0]
    m = profile.shape[0]
    width = m - n + 1
    S = S_buffer[:n * width].reshape((n, width))
    D = D_buffer[:n * width].reshape((n, width))
    fill_band_into(read, profile, near, p, costs, S, D)
    cg, oe, _ = column_penalties(profile, p)
    states = state_mask_of(profile)
    last = S[n - 1]
    k = 0
    for kk in range(last.shape[0]):
        if last[kk] < last[k]:
            k = kk
    score = last[k]
    ops = np.empty(n + m, np.uint8)
    count = 0
    j = n - 1
    in_d = False
    while j >= 0:
        i = j + k
        if in_d:
            ops[count] = OP_D
            count += 1
            in_d = D[j, k] != S[j, k - 1] + oe[i]  # opening preferred on a tie
            k -= 1
            continue
        diag_prev = S[j - 1, k] if j > 0 else 0
        b = read[j]
        cost = diagonal_cost(profile[i], near[i], b, states, p, costs, read_cost_row(costs, b), i)
        if diag_prev < INF64 and S[j, k] == diag_prev + cost + cg[i]:
            ops[count] = OP_M
            count += 1
            j -= 1
        elif S[j, k] == D[j, k]:
            in_d = True
        else:
            ops[count] = OP_I
            count += 1
            j -= 1
            k += 1
    # at j == -1 the path left the free boundary row at column k - 1, so it starts at column k
    return score, k, ops[:count][::-1].copy()


def align(read: np.ndarray, profile: np.ndarray, params: ScoringParams,
          costs: ColumnCosts | None = None) -> ReadAlignment:
    """Align one encoded read (0 < n < m) to one edge profile with DESIGN 5's tie-breaking;
    `costs`: the column profile costs (model/column_costs.py; None: none)."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be aligned to {m} columns (need 0 < n < m)")
    cells = n * (m - n + 1)
    score, start, ops = _trace(read, profile, profile_near(profile), params.as_array(), kernel_costs(costs),
                               np.empty(cells, np.int64), np.empty(cells, np.int64))
    return ReadAlignment(score=int(score), start=int(start), cigar=cigar_string(ops))


@njit(cache=True, nogil=True)
def _align_many(codes, offsets, edge_slot, profiles, near, p, costs, scores, columns):
    """Trace every read of a batch against its profile, GIL released for the whole batch: read r
    is codes[offsets[r]:offsets[r + 1]] against profiles[edge_slot[r]] (near states
    near[edge_slot[r]]); its score goes to scores[r], each residue's column to columns (INSERTED
    where inserted)."""
    m = profiles.shape[1]
    cells = 0
    for r in range(offsets.shape[0] - 1):
        n = offsets[r + 1] - offsets[r]
        cells = max(cells, n * (m - n + 1))
    S_buffer = np.empty(cells, np.int64)  # one work space for the batch (see fill_band_into)
    D_buffer = np.empty(cells, np.int64)
    for r in range(offsets.shape[0] - 1):
        a, b = offsets[r], offsets[r + 1]
        slot = edge_slot[r]
        score, column, ops = _trace(codes[a:b], profiles[slot], near[slot], p, costs, S_buffer, D_buffer)
        scores[r] = score
        j = a
        for op in ops:
            column, j = apply_ops(op, 1, column, columns, j)


def align_many(codes: np.ndarray, offsets: np.ndarray, edge_slot: np.ndarray, profiles: np.ndarray,
               params: ScoringParams, near: np.ndarray | None = None,
               costs: ColumnCosts | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Align a batch of reads (each 0 < n < m) to their profiles in one GIL-free call.

    codes: encoded reads cut by offsets; edge_slot[r] picks read r's profile; costs: the column
    profile costs (model/column_costs.py); near: the profiles' near states where the caller
    already has them (`profile_near(profiles)`: a batch traced back in slices over one profile array derives them once, not per slice).
    Returns (scores int32 [reads], columns int32 [residues]: each residue's column, INSERTED where
    inserted), the path `align` gives read by read.
    """
    scores = np.empty(offsets.size - 1, np.int32)
    columns = np.empty(int(offsets[-1]), np.int32)
    if near is None:
        near = profile_near(profiles)
    _align_many(codes, offsets, edge_slot, profiles, near, params.as_array(), kernel_costs(costs), scores, columns)
    return scores, columns
