"""The plain reference scorer of DESIGN.md section 4: one read against one edge profile.

This is the implementation every fast path (numba lanes, int16, OpenCL) is tested against, so
it is written for clarity: int64 arithmetic, a true stand-in for infinity that no sum can reach,
one DP row at a time over the band.

Band: row j (read position) holds columns i in [j, j + m - n]. Storing a row by its offset
k = i - j (0..m-n) makes the band a rectangle of n rows by m-n+1 offsets; in that frame
    diagonal  S(i-1, j-1) is the previous row at the same k,
    insertion S(i, j-1)   is the previous row at k + 1,
    deletion  S(i-1, j), D(i-1, j) are the current row at k - 1.
The traceback (DESIGN 5) runs the same recurrence over a band widened by its margin on both sides,
paying an excursion cost where a path leaves DESIGN 4's band; the scorers use margin 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import near_states
from papara_py.phylo.jit import cell_cost, cgap_bit_of, read_cost_row, state_mask_of
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
    """What the traceback's nearest-sequence bonus (model/nearest.py) takes off the diagonal
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
    ([m], `profile_near`); `costs`: the column profile costs (model/column_costs.kernel_costs).
    """
    n = read.shape[0]
    width = profile.shape[0] - n + 1
    S = np.empty((n, width), np.int64)
    D = np.empty((n, width), np.int64)
    fill_band_into(read, profile, near, p, costs, S, D, None, 0, 0)
    return S, D


@njit(cache=True, nogil=True)
def frame_width(n, m, margin):
    """Offsets a row of the band holds, widened by `margin` on both sides: m - n + 1 + 2 margin
    (the traceback's frame; margin 0: DESIGN 4's band). numba and the GPU tracer's launch sizes
    use this one definition (kernels/band_trace.cl spells it out)."""
    return m - n + 1 + 2 * margin


@njit(cache=True, nogil=True)
def inside_band(k, n, m) -> bool:
    """Whether offset k = i - j lies in DESIGN 4's band of a read of n residues and m columns."""
    return 0 <= k <= m - n


@njit(cache=True, nogil=True)
def boundary_value(i, n, m, margin, excursion):
    """S(i, -1), the free boundary row, at offset k = i + 1 of row -1: 0 inside the band, the
    excursion cost within `margin` offsets outside it (a path starting outside has left the band;
    only the right side has columns there), +infinity beyond."""
    k = i + 1
    if inside_band(k, n, m):
        return 0
    if m - n < k <= m - n + margin:
        return excursion
    return INF64


@njit(cache=True, nogil=True)
def excursion_step(source, target, n, m, excursion):
    """What a step from offset `source` to offset `target` adds for leaving the band: the excursion
    cost where it goes from inside the band to outside, 0 otherwise (staying outside, coming back)."""
    return excursion if inside_band(source, n, m) and not inside_band(target, n, m) else 0


@njit(cache=True, nogil=True)
def fill_band_into(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs, S: np.ndarray,
                   D: np.ndarray, bonus, margin, excursion) -> None:
    """`fill_band` into given int64 [n, m-n+1+2*margin] arrays, column c holding offset c - margin
    (the traceback reuses one pair for a whole batch: a fresh pair per read cost more in page faults
    than the recurrence itself); `bonus`: the traceback's nearest-sequence bonus (`bonus_cost`,
    `opening_cost`), None for the plain recurrence; `margin`, `excursion`: the traceback's band
    margin and what leaving the band costs (DESIGN 5; 0 and 0: DESIGN 4's band, the scorers').
    Cells whose column i = j + k lies outside [0, m) are +infinity."""
    n = read.shape[0]
    m = profile.shape[0]
    width = frame_width(n, m, margin)
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    insertion = p[4]
    for j in range(n):
        b = read[j]
        row = read_cost_row(costs, b)
        for c in range(width):
            k = c - margin
            i = j + k
            if i < 0 or i >= m:
                S[j, c] = INF64
                D[j, c] = INF64
                continue
            # diagonal: S(i-1, j-1), the boundary row at j == 0 (the same offset)
            diag_prev = S[j - 1, c] if j > 0 else boundary_value(i - 1, n, m, margin, excursion)
            diag = INF64
            if diag_prev < INF64:
                diag = (diag_prev + cg[i] + diagonal_cost(profile[i], near[i], b, states, p, costs, row, i)
                        - bonus_cost(bonus, j, i))
            # deletion: S(i-1, j), D(i-1, j) at offset k - 1, out of the frame at c == 0
            d = INF64
            if c > 0 and S[j, c - 1] < INF64:
                leave = excursion_step(k - 1, k, n, m, excursion)
                d = min(S[j, c - 1] + opening_cost(bonus, oe, i), D[j, c - 1] + ex[i]) + leave
            # insertion: S(i, j-1) at offset k + 1 of the row above, out of the frame at the last c
            ins = INF64
            if c < width - 1:
                above = S[j - 1, c + 1] if j > 0 else boundary_value(i, n, m, margin, excursion)
                if above < INF64:
                    ins = above + insertion + excursion_step(k + 1, k, n, m, excursion)
            D[j, c] = d
            S[j, c] = min(diag, d, ins)


@njit(cache=True, nogil=True)
def score_one(read: np.ndarray, profile: np.ndarray, near: np.ndarray, p: np.ndarray, costs=None) -> int:
    """Score of (read, edge): the minimum of the last row over the band (free trailing columns)."""
    S, _ = fill_band(read, profile, near, p, costs)
    return S[read.shape[0] - 1].min()


def score_reference(read: np.ndarray, profile: np.ndarray, params: ScoringParams,
                    family: np.ndarray | None = None, costs: ColumnCosts | None = None) -> int:
    """Score one encoded read (state sets, 0 < n < m) against one edge profile ([m]); both of
    one alphabet's element type (uint8 DNA, uint32 protein). `family`: the columns' family
    residues ([m], model/family.py; None: none); `costs`: the column profile costs
    (model/column_costs.py; None: none)."""
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
