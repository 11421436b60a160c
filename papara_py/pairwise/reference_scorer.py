"""The plain reference scorer of DESIGN.md section 4: one read against one edge profile.

This is the implementation every fast path (numba lanes, int16, OpenCL) is tested against, so
it is written for clarity: int64 arithmetic, a true stand-in for infinity that no sum can reach,
one DP row at a time over the band (kept in place: each cell reads the row above at its own
offset and the next before overwriting it). The traceback runs the same function and has it
record, per cell, which term won.

Band: row j (read position) holds columns i in [j, j + m - n]. Storing a row by its offset
k = i - j (0..m-n) makes the band a rectangle of n rows by m-n+1 offsets; in that frame
    diagonal  S(i-1, j-1) is the previous row at the same k,
    insertion S(i, j-1)   is the previous row at k + 1,
    deletion  S(i-1, j), D(i-1, j) are the current row at k - 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.pairwise.params import ScoringParams
from papara_py.phylo.encoding import cgap_bit_of, near_states_of, state_mask_of

#: Stand-in for +infinity in int64: far above any score, far below wrap-around.
INF64 = np.int64(1) << 40


@njit(cache=True, nogil=True)
def column_penalties(profile: np.ndarray, p: np.ndarray):
    """Per-column (CG_i, OE_i, E_i) of Equation 1 from the CGAP bit of each profile element
    (where that bit lies follows from the element type: uint8 DNA, uint32 protein)."""
    m = profile.shape[0]
    cgap_bit = cgap_bit_of(profile)
    cg = np.empty(m, np.int64)
    oe = np.empty(m, np.int64)
    ex = np.empty(m, np.int64)
    for i in range(m):
        if profile[i] & cgap_bit:
            cg[i] = p[1]
            oe[i] = 0
            ex[i] = 0
        else:
            cg[i] = 0
            oe[i] = p[2] + p[3]
            ex[i] = p[3]
    return cg, oe, ex


@njit(cache=True, nogil=True, inline="always")
def match_cost(a, b, states, p) -> int:
    """M_ij of DESIGN 4 for profile element a and read state set b (`states`: the element
    type's state mask): 0 where they share a state, near_mismatch where b holds one of a's near
    states, mismatch otherwise."""
    if a & states & b:
        return 0
    if near_states_of(a) & b:
        return p[5]
    return p[0]


#: Per-cell facts `band_rows` can record for the traceback (pairwise/traceback.py, DESIGN 5).
FROM_DIAGONAL = np.uint8(1)  # S(i, j) equals its diagonal term
FROM_D = np.uint8(2)         # S(i, j) equals D(i, j)
D_EXTENDS = np.uint8(4)      # D(i, j) is not the opening S(i-1, j) + OE_i


@njit(cache=True, nogil=True)
def band_rows(read: np.ndarray, profile: np.ndarray, p: np.ndarray, row: np.ndarray, facts=None):
    """The recurrence over the band, one row (offsets k = 0..m-n) at a time; returns the score
    and the smallest offset k of the last row that reaches it (the traceback's end column).

    row: int64 work space of at least m - n + 2 cells. facts: None, or uint8 work space of at
    least n * (m - n + 1) cells that gets each cell's FROM_DIAGONAL / FROM_D / D_EXTENDS bits
    at [j * (m - n + 1) + k] (numba compiles the None case without them). Requires 0 < n < m.

    Out-of-band neighbours are INF64 plus at most a few penalties, never compared with each
    other: S always has a finite diagonal term, so its value and the recorded facts are those of
    true infinities, and no cell needs a band test.
    """
    n = read.shape[0]
    m = profile.shape[0]
    width = m - n + 1
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    insertion = p[4]
    row[:width] = 0  # row -1: S(i, -1) = 0 for every column rows 0 reads (i <= m - n - 1)
    row[width] = INF64  # right of the band: the last offset's insertion source
    for j in range(n):
        b = read[j]
        s_left = INF64  # S(i-1, j) and D(i-1, j) are out of band at k == 0
        d_left = INF64
        f = j * width
        for k in range(width):
            i = j + k
            # row[k] is still S(i-1, j-1) and row[k + 1] S(i, j-1)
            diag = row[k] + match_cost(profile[i], b, states, p) + cg[i]
            opened = s_left + oe[i]
            d = min(opened, d_left + ex[i])
            s = min(diag, d, row[k + 1] + insertion)
            if facts is not None:  # without branches: the comparisons are data-dependent
                facts[f + k] = (FROM_DIAGONAL * np.uint8(s == diag) | FROM_D * np.uint8(s == d)
                                | D_EXTENDS * np.uint8(d != opened))
            row[k] = s
            s_left = s
            d_left = d
    best = row[0]
    end = 0
    for k in range(1, width):
        if row[k] < best:
            best = row[k]
            end = k
    return best, end


@njit(cache=True, nogil=True)
def score_one(read: np.ndarray, profile: np.ndarray, p: np.ndarray) -> int:
    """Score of (read, edge): the minimum of the last row over the band (free trailing columns)."""
    return band_rows(read, profile, p, np.empty(profile.shape[0] - read.shape[0] + 2, np.int64))[0]


def score_reference(read: np.ndarray, profile: np.ndarray, params: ScoringParams) -> int:
    """Score one encoded read (state sets, 0 < n < m) against one edge profile ([m]); both of
    one alphabet's element type (uint8 DNA, uint32 protein)."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be scored against {m} columns (need 0 < n < m)")
    return int(score_one(read, profile, params.as_array()))


def score_matrix_reference(
    reads: list[np.ndarray], profiles: np.ndarray, params: ScoringParams
) -> np.ndarray:
    """int64 [Q, E] scores of every read against every edge profile (tests and small inputs)."""
    p = params.as_array()
    out = np.empty((len(reads), profiles.shape[0]), np.int64)
    for q, read in enumerate(reads):
        for e in range(profiles.shape[0]):
            out[q, e] = score_one(read, profiles[e], p)
    return out
