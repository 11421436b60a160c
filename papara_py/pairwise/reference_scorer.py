"""The plain reference scorer of DESIGN.md section 4: one read against one edge profile.

This is the implementation every fast path (numba lanes, int16, OpenCL) is tested against, so
it is written for clarity: int64 arithmetic, a true stand-in for infinity that no sum can reach,
one DP row at a time over the band.

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
from papara_py.phylo.column_costs import (
    ColumnCosts,
    cell_cost,
    kernel_costs,
    read_cost_row,
)
from papara_py.phylo.encoding import cgap_bit_of, near_states, state_mask_of
from papara_py.phylo.residues import GAP_MARK, NO_RESIDUE

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


def profile_near(profiles: np.ndarray, family: np.ndarray | None = None) -> np.ndarray:
    """The near states of profiles ([..., m] elements) with the columns' family residues (None:
    none), as the reference scorer and the traceback take them beside the profiles."""
    return np.ascontiguousarray(near_states(profiles, family=family))


@njit(cache=True, nogil=True)
def diagonal_cost(a, near_a, b, states, p, costs, row, i):
    """M_ij + X(i, b) of DESIGN 4 (CG_i apart): 0 where the read's states `b` meet the element's
    set `a`, near_mismatch where they meet its near states, mismatch otherwise; plus the column
    profile cost of table row `row` (`read_cost_row` of b) at column i (costs None: none)."""
    level = 0 if a & states & b else (p[5] if near_a & b else p[0])
    return level + cell_cost(costs, row, i)


@njit(cache=True, nogil=True)
def bonus_cost(bonus, j, i):
    """What the traceback's nearest-sequence bonus (pairwise/nearest.py) takes off the diagonal
    of read residue j in column i: bonus (the nearest rows' marks [m], read residues [n], amount)
    or None (the scorers, and reads without: 0). Marks (phylo/residues.nearest_marks): bit r
    where one of the rows holds residue r; a read residue is never a gap, and NO_RESIDUE never
    matches."""
    if bonus is None:
        return 0
    residue = bonus[1][j]
    return bonus[2] if residue != NO_RESIDUE and (bonus[0][i] >> residue) & 1 else 0


@njit(cache=True, nogil=True)
def opening_cost(bonus, oe, i):
    """OE_i, or 0 with the nearest-sequence bonus where one of the nearest rows has a gap in
    column i (GAP_MARK): the read's gap opens free where a nearest sequence has one."""
    if bonus is None:
        return oe[i]
    return 0 if bonus[0][i] & GAP_MARK else oe[i]


@njit(cache=True, nogil=True)
def fill_band(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs=None):
    """Fill S and D over the whole band; returns (S, D) as int64 [n, m-n+1] indexed [j, i-j].

    Requires 0 < n < m. Out-of-band neighbours read as INF64. `near`: the profile's near states
    ([m], `profile_near`); `costs`: the column profile costs (phylo/column_costs.kernel_costs).
    """
    n = read.shape[0]
    width = profile.shape[0] - n + 1
    S = np.empty((n, width), np.int64)
    D = np.empty((n, width), np.int64)
    fill_band_into(read, profile, near, p, costs, S, D, None)
    return S, D


@njit(cache=True, nogil=True)
def fill_band_into(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs, S: np.ndarray,
                   D: np.ndarray, bonus) -> None:
    """`fill_band` into given int64 [n, m-n+1] arrays (the traceback reuses one pair for a whole
    batch: a fresh pair per read cost more in page faults than the recurrence itself); `bonus`:
    the traceback's nearest-sequence bonus (`bonus_cost`, `opening_cost`), None for the plain
    recurrence."""
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
            # diagonal: S(i-1, j-1); row -1 is 0 for i-1 in [-1, m-n-1], which is every k here
            diag_prev = S[j - 1, k] if j > 0 else 0
            diag = (diag_prev + cg[i] + diagonal_cost(profile[i], near[i], b, states, p, costs, row, i)
                    - bonus_cost(bonus, j, i))
            # deletion: S(i-1, j), D(i-1, j) are out of band at k == 0
            if k > 0:
                d = min(S[j, k - 1] + opening_cost(bonus, oe, i), D[j, k - 1] + ex[i])
            else:
                d = INF64
            # insertion: S(i, j-1) is out of band at k == width-1; row -1 is 0 for i <= m-n-1
            if k < width - 1:
                ins = (S[j - 1, k + 1] if j > 0 else 0) + insertion
            else:
                ins = INF64
            D[j, k] = d
            S[j, k] = min(diag, d, ins)


@njit(cache=True, nogil=True)
def score_one(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs=None) -> int:
    """Score of (read, edge): the minimum of the last row over the band (free trailing columns)."""
    S, _ = fill_band(read, profile, near, p, costs)
    return S[read.shape[0] - 1].min()


def score_reference(read: np.ndarray, profile: np.ndarray, params: ScoringParams,
                    family: np.ndarray | None = None, costs: ColumnCosts | None = None) -> int:
    """Score one encoded read (state sets, 0 < n < m) against one edge profile ([m]); both of
    one alphabet's element type (uint8 DNA, uint32 protein). `family`: the columns' family
    residues ([m], phylo/family.py; None: none); `costs`: the column profile costs
    (phylo/column_costs.py; None: none)."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be scored against {m} columns (need 0 < n < m)")
    return int(score_one(read, profile, profile_near(profile, family), params.as_array(), kernel_costs(costs)))


def score_matrix_reference(reads: list[np.ndarray], profiles: np.ndarray, params: ScoringParams,
                           family: np.ndarray | None = None, costs: ColumnCosts | None = None) -> np.ndarray:
    """int64 [Q, E] scores of every read against every edge profile (tests and small inputs)."""
    p = params.as_array()
    near = profile_near(profiles, family)
    table = kernel_costs(costs)
    out = np.empty((len(reads), profiles.shape[0]), np.int64)
    for q, read in enumerate(reads):
        for e in range(profiles.shape[0]):
            out[q, e] = score_one(read, profiles[e], near[e], p, table)
    return out
