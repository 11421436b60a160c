"""The plain reference scorer of DESIGN.md section 4: one read against one edge profile.

This is the implementation every fast path (numba lanes, int16, OpenCL) is tested against, so
it is written for clarity: int64 arithmetic, a true stand-in for infinity that no sum can reach,
one DP row at a time over the band.

Band: row j (read position) holds columns i in [j, j + m - n]. Storing a row by its offset
k = i - j (0..m-n) makes the band a rectangle of n rows by m-n+1 offsets; in that frame
    diagonal  S(i-1, j-1) is the previous row at the same k,
    insertion S(i, j-1)   is the previous row at k + 1,
    deletion  S(i-1, j), D(i-1, j) are the current row at k - 1.
The traceback (DESIGN 5, temperature 0) walks the same band back; the posterior step
(model/posterior.py) runs the same recurrence over the whole rectangle, with softmin in place of min.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import near_states
from papara_py.phylo.jit import cell_cost, cgap_bit_of, read_cost_row, state_mask_of

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


def profile_near(profiles: np.ndarray) -> np.ndarray:
    """The near states of profiles ([..., m] elements), as the reference scorer and the traceback
    take them beside the profiles."""
    return np.ascontiguousarray(near_states(profiles))


@njit(cache=True, nogil=True)
def diagonal_cost(a, near_a, b, states, p, costs, row, i):
    """M_ij + X(i, b) of DESIGN 4 (CG_i apart): 0 where the read's states `b` meet the element's
    set `a`, near_mismatch where they meet its near states, mismatch otherwise; plus the column
    profile cost of table row `row` (`read_cost_row` of b) at column i (costs None: none)."""
    level = 0 if a & states & b else (p[5] if near_a & b else p[0])
    return level + cell_cost(costs, row, i)


@njit(cache=True, nogil=True)
def fill_band(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs=None):
    """Fill S and D over the whole band; returns (S, D) as int64 [n, m-n+1] indexed [j, i-j].

    Requires 0 < n < m. Out-of-band neighbours read as INF64. `near`: the profile's near states
    ([m], `profile_near`); `costs`: the column profile costs (model/column_costs.kernel_costs).
    """
    n = read.shape[0]
    width = profile.shape[0] - n + 1
    S = np.empty((n, width), np.int64)
    D = np.empty((n, width), np.int64)
    fill_band_into(read, profile, near, p, costs, S, D)
    return S, D


@njit(cache=True, nogil=True)
def fill_band_into(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs, S: np.ndarray,
                   D: np.ndarray) -> None:
    """`fill_band` into given int64 [n, m-n+1] arrays, column k holding offset k (the traceback
    reuses one pair for a whole batch: a fresh pair per read cost more in page faults than the
    recurrence itself)."""
    n = read.shape[0]
    m = profile.shape[0]
    width = m - n + 1
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    insertion = p[4]
    for j in range(n):
        b = read[j]
        row = read_cost_row(costs, b)
        for k in range(width):
            i = j + k
            # diagonal: S(i-1, j-1), the free boundary row at j == 0 (the same offset)
            diag_prev = S[j - 1, k] if j > 0 else 0
            diag = INF64
            if diag_prev < INF64:
                diag = diag_prev + cg[i] + diagonal_cost(profile[i], near[i], b, states, p, costs, row, i)
            # deletion: S(i-1, j), D(i-1, j) at offset k - 1, out of the band at k == 0
            d = INF64
            if k > 0 and S[j, k - 1] < INF64:
                d = min(S[j, k - 1] + oe[i], D[j, k - 1] + ex[i])
            # insertion: S(i, j-1) at offset k + 1 of the row above (the boundary row: 0 in the
            # band), out of the band at the last k
            ins = INF64
            if k < width - 1:
                above = S[j - 1, k + 1] if j > 0 else 0
                if above < INF64:
                    ins = above + insertion
            D[j, k] = d
            S[j, k] = min(diag, d, ins)


@njit(cache=True, nogil=True)
def score_one(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs=None) -> int:
    """Score of (read, edge): the minimum of the last row over the band (free trailing columns)."""
    S, _ = fill_band(read, profile, near, p, costs)
    return S[read.shape[0] - 1].min()


def score_reference(read: np.ndarray, profile: np.ndarray, params: ScoringParams,
                    costs: ColumnCosts | None = None) -> int:
    """Score one encoded read (state sets, 0 < n < m) against one edge profile ([m]); both of
    one alphabet's element type (uint8 DNA, uint32 protein). `costs`: the column profile costs
    (model/column_costs.py; None: none)."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be scored against {m} columns (need 0 < n < m)")
    return int(score_one(read, profile, profile_near(profile), params.as_array(), kernel_costs(costs)))


def score_matrix_reference(reads: list[np.ndarray], profiles: np.ndarray, params: ScoringParams,
                           costs: ColumnCosts | None = None) -> np.ndarray:
    """int64 [Q, E] scores of every read against every edge profile (tests and small inputs)."""
    p = params.as_array()
    near = profile_near(profiles)
    table = kernel_costs(costs)
    out = np.empty((len(reads), profiles.shape[0]), np.int64)
    for q, read in enumerate(reads):
        for e in range(profiles.shape[0]):
            out[q, e] = score_one(read, profiles[e], near[e], p, table)
    return out
