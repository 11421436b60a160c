"""Posterior decoding (DESIGN 5): Forward and Backward over every alignment of a read to each
candidate edge, the edge weights and the column posteriors pooled by them, in fixed-point
integers (model/fixed_point.py) so every device gives the same answer bit for bit; the read's
columns are the pooled posteriors' MEA alignment (model/mea.py).

The model. A read's alignment to an edge is a path through the whole rectangle of cells (row j,
the read position, 0 <= j < n; column i, 0 <= i < m), not only DESIGN 4's band (i - j in
[0, m - n]), which leaves out the true alignment of a read whose deletions a later insertion
cancels near the last column (DESIGN 5). F, the pooled posteriors and the MEA's sums are stored
by column ([n, m]); the Forward's and Backward's work rows by offset k = i - j + n - 1 in [0, W),
W = m + n - 1 (row j's cells are the offsets [n - 1 - j, n - 1 - j + m)), so that a row reads
the row above at its own offset (diagonal) and one to the right (insertion), as section 4's
kernels do; their other entries are fixed_point.SENTINEL (or never read). Three states per
cell, with the costs of Eq. 1 read as energies (cost << shift, fixed point):
    M(i,j) = cM(i,j) + (+){ M, D, I }(i-1, j-1)      j = 0: the boundary S(i-1, -1) = 0
    D(i,j) = (+){ (+){ M, I }(i-1, j) + OE_i,  D(i-1, j) + E_i }   (D never opens from D)
    I(i,j) = ins + (+){ M, D, I }(i, j-1)             j = 0: the boundary S(i, -1) = 0
    Z      = (+) over the last row's columns (i = 0, 1, ...) of (+){ M, D, I }(i, n-1)
with S(-1, j) = +infinity for j >= 0 (no residue after the first sits in column 0: nothing
precedes column 0 for the residues before it to follow), cM(i,j) = M_ij + X(i, b_j) + CG_i
(reference_scorer.diagonal_cost + column_penalties; here `diagonal_energy`, the same without a
branch), OE_i, E_i and ins as DESIGN 4, and (+) the softmin of temperature T (fixed_point).
The sentinel's softmin with any finite energy is that energy exactly. A path's energy is the
sum of its steps' costs; the paths inside the band are exactly those of Eq. 1 (whose min over
D(i-1,j) + OE_i is never below D(i-1,j) + E_i, so leaving that term out changes no minimum and
gives each path one derivation). At T = 0 (+) is min and Z is the cheapest path's energy: Eq.
1's score times the scale where that path lies in the band, less where it does not (tested).

Fixed evaluation order (every device the same integers): (+){M, D, I} is ((M (+) I) (+) D),
D's two terms in the order written, Z's columns in increasing i, the Backward's (below)
((diagonal (+) insertion) (+) deletion), and the softmin table is applied as min(a, b) -
softmin[|a - b|].

Backward. B(j,k), the softmin over the ways on from M or I at cell (j, k) to the end (M and I
have the same successors), and BD(j,k) from D:
    B(j,k)  = (+){ cM(j+1,k) + B(j+1,k),  ins + B(j+1,k-1),  OE_{i+1} + BD(j,k+1) }   (j = n-1: 0
    BD(j,k) = (+){ cM(j+1,k) + B(j+1,k),  ins + B(j+1,k-1),  E_{i+1}  + BD(j,k+1) }    in place
of the first two: the path may end)
computed row by row from the last, columns from the right. M's posterior at (j, k) is
exp(-(F_M(j,k) + B(j,k) - Z) / T), read from the probability table (an exponent below 0, which
the tables' rounding can give, reads as 0: probability 1; one past the table's end as 0).

Edge weights. For a read's candidate edges e (with Z_e), w_e = exp(-(Z_e - Z_min)/T_p) at the
placement temperature T_p (PosteriorTables.placement; T_p = T unless the preset says otherwise),
normalised by integer division: w_e = raw_e * PROB_ONE // sum(raw) (floor;
the weights then sum to at most PROB_ONE and at least PROB_ONE - K). Only edges with w_e > 0
run the Backward. With each edge's own column costs (`local`, model/edge_emission.py) Z_e for
the weights is the shared costs', and each edge with w_e > 0 runs Forward again under its own
before its Backward (DESIGN 5). Pooled posterior: P(j -> i) = sum over e of (w_e * P_e(j -> i)) >> PROB_BITS
(each term floored, so the sum is the same in any order: the GPU adds them with atomics), and
P(j inserted) = max(0, PROB_ONE - sum_i P(j -> i)). The read's columns are the pooled
posteriors' MEA alignment (model/mea.py).
"""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from papara_py.io.paths import INSERTED
from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.fixed_point import PROB_BITS, PROB_ONE, SENTINEL, PosteriorTables, check_fixed_point
from papara_py.model.mea import mea
from papara_py.model.reference_scorer import column_penalties, profile_near
from papara_py.phylo.jit import cell_cost, read_cost_row, state_mask_of

#: Reads per numba call in `decode_batch` (each call reuses its buffers for all its reads).
DECODE_SLICE = 64


#: The sign bit's shift for int64, handed to the kernels at run time (`SIGN`): with the shift a
#: constant, LLVM turns the branch-free clamps and minima below back into selects, which x86's
#: cmov converter then makes branches, mispredicted about half the time on these data: the
#: Forward and Backward took twice as long (scripts/measure_posterior.py --time).
SIGN = 63


@njit(cache=True, nogil=True)
def softmin2(a, b, table, sign):
    """a (+) b in fixed point: min(a, b) - table[min(|a - b|, L - 1)], without a branch (the
    table's length L is a power of two and its tail zeros: fixed_point; [0]: min). sign: SIGN."""
    diff = a - b
    neg = diff >> sign  # -1 where a < b, else 0
    low = b + (diff & neg)  # min(a, b)
    d = (diff ^ neg) - neg  # |a - b|
    mask = table.shape[0] - 1
    return low - table[np.uint64((d | ((mask - d) >> sign)) & mask)]  # d, or L - 1 past the end


@njit(cache=True, nogil=True)
def probability_of(x, prob, sign):
    """exp(-x/T) in PROB_ONE units for a fixed-point energy difference x: prob[x] clamped to the
    table (x < 0, which the tables' rounding can give, reads as 0: probability 1). sign: SIGN."""
    x = x & ~(x >> sign)  # max(x, 0)
    mask = prob.shape[0] - 1
    return prob[np.uint64((x | ((mask - x) >> sign)) & mask)]


@njit(cache=True, nogil=True)
def diagonal_energy(a, near_a, b, states, mismatch, near_mismatch, costs, row, i, shift, sign):
    """reference_scorer.diagonal_cost(...) << shift without a branch: mismatch and near_mismatch
    as energies (p[0] << shift, p[5] << shift)."""
    hit = (-np.int64(a & states & b)) >> sign  # -1 where the states meet the set
    near = (-np.int64(near_a & b)) >> sign  # -1 where they meet its near states
    level = ~hit & (mismatch ^ ((mismatch ^ near_mismatch) & near))
    return level + (np.int64(cell_cost(costs, row, i)) << shift)


@njit(cache=True, nogil=True)
def edge_terms(profiles, p, shift):
    """int64 [U, 3, m + 1]: each profile's (CG_i, OE_i, E_i) of Eq. 1 (column_penalties) as
    energies, and a 0 past the last column (the Backward's last offset reads it beside the
    sentinel)."""
    m = profiles.shape[1]
    out = np.zeros((profiles.shape[0], 3, m + 1), np.int64)
    for u in range(profiles.shape[0]):
        cg, oe, ex = column_penalties(profiles[u], p)
        for i in range(m):
            out[u, 0, i] = cg[i] << shift
            out[u, 1, i] = oe[i] << shift
            out[u, 2, i] = ex[i] << shift
    return out


@njit(cache=True, nogil=True)
def rectangle_constants(read, profile, p, shift):
    """What Forward and Backward both read before their loops: the read's length n, the row
    width W = m + n - 1 (module docstring: row j's cells are offsets [n - 1 - j, n - 1 - j + m)),
    the profile's state mask, and the insertion, mismatch and near mismatch penalties in fixed
    point (shifted by `shift`)."""
    n = read.shape[0]
    return (n, profile.shape[0] + n - 1, state_mask_of(profile), p[4] << shift, p[0] << shift,
            p[5] << shift)


@njit(cache=True, nogil=True)
def forward(read, profile, near, p, costs, terms, shift, softmin, F, sf_a, sf_b, sign):
    """Forward over every path of `read` against `profile` (near states `near`, column costs
    `costs` in kernel form, `terms` its edge_terms [3, m + 1]): stores M's Forward energy in F
    (int32 [n, m], by column) and returns Z (module docstring). sf_a, sf_b: int64 work rows of at
    least W + 1 cells; sign: SIGN."""
    n, width, states, ins, mismatch, near_mismatch = rectangle_constants(read, profile, p, shift)
    m = profile.shape[0]
    cg, oe, ex = terms[0], terms[1], terms[2]
    prev = sf_a  # (+){M, D, I} of the row above, by offset
    cur = sf_b
    # the boundary row -1: S(i, -1) = 0 for i in [-1, m - 1] (offsets n - 1 .. W, M's S(i-1, -1)
    # at its offset, I's S(i, -1) one to the right); offsets left of it stand for S(-1, j) of the
    # rows below, +infinity: each row writes only its own cells, and the next row reads one offset
    # left of them, which no row has written
    for k in range(width + 1):
        prev[k] = 0 if k >= n - 1 else SENTINEL
        cur[k] = SENTINEL
    for j in range(n):
        b = read[j]
        row = read_cost_row(costs, b)
        mi_left = SENTINEL  # (M (+) I) at offset k - 1: none left of column 0
        d_left = SENTINEL   # D at offset k - 1
        col0 = n - 1 - j  # column 0's offset
        for k in range(col0, col0 + m):
            i = k - col0
            cm = diagonal_energy(profile[i], near[i], b, states, mismatch, near_mismatch, costs, row, i, shift,
                                 sign) + cg[i]
            mval = cm + prev[k]
            mi = softmin2(mval, ins + prev[k + 1], softmin, sign)
            dval = softmin2(mi_left + oe[i], d_left + ex[i], softmin, sign)
            cur[k] = softmin2(mi, dval, softmin, sign)
            F[j, i] = mval
            mi_left = mi
            d_left = dval
        prev, cur = cur, prev
    z = prev[0]  # the last row: column i at offset i
    for k in range(1, m):
        z = softmin2(z, prev[k], softmin, sign)
    return z


@njit(cache=True, nogil=True)
def backward_pool(read, profile, near, p, costs, terms, shift, softmin, prob, F, z, weight, pooled, b_a, b_b, g_a,
                  g_b, sign):
    """Backward over every path (module docstring), adding each cell's M posterior times `weight`
    (PROB_ONE units), floored to PROB_ONE units, to pooled (int32 [n, m], by column). F and z:
    `forward`'s; b_a, b_b, g_a, g_b: int64 work rows of at least W + 1 cells (b rows hold
    offset k at k + 1); sign: SIGN."""
    n, width, states, ins, mismatch, near_mismatch = rectangle_constants(read, profile, p, shift)
    m = profile.shape[0]
    cg, oe, ex = terms[0], terms[1], terms[2]
    b_next = b_a  # B of the row below, offset k at k + 1
    g_next = g_a  # cM + B of the row below (its diagonal step), offset k at k
    b_cur = b_b
    g_cur = g_b
    # row j reads the row below's g at its own offsets and b one offset left: all written by the
    # row below except g at column m - 1's offset (no column m to step to), which no row writes
    for k in range(width + 1):
        g_cur[k] = SENTINEL
        g_next[k] = SENTINEL
    for j in range(n - 1, -1, -1):
        b = read[j]
        row = read_cost_row(costs, b)
        bd_right = SENTINEL  # BD at column i + 1: none right of the last column
        col0 = n - 1 - j  # column 0's offset
        for k in range(col0 + m - 1, col0 - 1, -1):
            i = k - col0
            if j == n - 1:
                x = 0  # the path may end here
            else:  # M(i+1, j+1) at offset k, I(i, j+1) at offset k - 1 of the row below
                x = softmin2(g_next[k], ins + b_next[k], softmin, sign)
            bval = softmin2(x, oe[i + 1] + bd_right, softmin, sign)
            bd_right = softmin2(x, ex[i + 1] + bd_right, softmin, sign)
            b_cur[k + 1] = bval
            g_cur[k] = diagonal_energy(profile[i], near[i], b, states, mismatch, near_mismatch, costs, row, i, shift,
                                       sign) + cg[i] + bval
            pooled[j, i] += (weight * probability_of(F[j, i] - z + bval, prob, sign)) >> PROB_BITS
        b_next, b_cur = b_cur, b_next
        g_next, g_cur = g_cur, g_next


@njit(cache=True, nogil=True)
def edge_weights(z, slots, prob, sign, weights):
    """One read's edge weights (module docstring) into weights (int32 [K]) from its candidates'
    Forward energies z (int64 [K]; slots[e] < 0: no candidate, weight 0): raw_e = exp(-(Z_e -
    Z_min)/T_p) from the placement probability table `prob`, w_e = raw_e * PROB_ONE // sum(raw) (floor). The GPU's
    host calls it on the device's Z (engine/gpu_posterior.py): one definition for every device."""
    zmin = 0
    found = False
    for e in range(slots.shape[0]):
        if slots[e] >= 0 and (not found or z[e] < zmin):
            zmin = z[e]
            found = True
    total = 0
    for e in range(slots.shape[0]):
        if slots[e] >= 0:
            total += probability_of(z[e] - zmin, prob, sign)
    for e in range(slots.shape[0]):
        weights[e] = (probability_of(z[e] - zmin, prob, sign) * PROB_ONE) // total if slots[e] >= 0 else 0


@njit(cache=True, nogil=True)
def decode_read(read, slots, profiles, near, terms, p, costs, local, shift, softmin, prob, placement, F_space,
                pooled_space, R_space, rows, z, weights, ins, columns, pp, sign):
    """One read's posterior step: Forward on every candidate (slots[e] >= 0: profiles[slots[e]]),
    the weights (written to weights, int32 [K], from the placement table: PosteriorTables), the
    pooled posteriors, the MEA (columns, pp).
    With each edge's own column costs (local: uint8 [U, K', m], local[s] for profiles[s]; None:
    none), the weights come from the shared costs' Forward and each weighted edge's posteriors
    from a Forward and Backward under its own (edge_emission.py).
    Returns the MEA objective, or -1 for a read without candidates (every residue inserted, pp
    0). Work space: F_space int32 [K n m], pooled_space int32 [n m], R_space int64 [n (m + 1)],
    rows int64 [4, >= W + 1] (W = m + n - 1), z int64 [K], ins int64 [n]; sign: SIGN."""
    n = read.shape[0]
    m = profiles.shape[1]
    cells = n * m
    count = slots.shape[0]
    found = False
    for e in range(count):
        weights[e] = 0
        s = slots[e]
        if s >= 0:
            F = F_space[e * cells:(e + 1) * cells].reshape((n, m))
            z[e] = forward(read, profiles[s], near[s], p, costs, terms[s], shift, softmin, F, rows[0], rows[1], sign)
            found = True
    if not found:
        for j in range(n):
            columns[j] = INSERTED
            pp[j] = 0
        return -1
    edge_weights(z, slots, placement, sign, weights)
    pooled = pooled_space[:cells].reshape((n, m))
    pooled[:] = 0
    for e in range(count):
        s = slots[e]
        if s >= 0 and weights[e] > 0:
            F = F_space[e * cells:(e + 1) * cells].reshape((n, m))
            own = costs
            if local is not None:  # F and Z again, under the edge's own costs
                own = (local[s], costs[1])
                z[e] = forward(read, profiles[s], near[s], p, own, terms[s], shift, softmin, F, rows[0], rows[1], sign)
            backward_pool(read, profiles[s], near[s], p, own, terms[s], shift, softmin, prob, F, z[e], weights[e],
                          pooled, rows[0], rows[1], rows[2], rows[3], sign)
    R = R_space[:n * (m + 1)].reshape((n, m + 1))
    return mea(pooled, R, ins, columns, pp)


@njit(cache=True, nogil=True)
def _decode_reads(codes, offsets, first, last, slots, profiles, near, terms, p, costs, local, shift, softmin, prob,
                  placement, columns, pp, weights, objective, sign):
    """decode_read for reads first..last-1 of a batch, GIL released, with one set of work space
    sized for the longest read among them (a fresh set per read would cost more in page faults
    than the recurrence: reference_scorer.fill_band_into)."""
    m = profiles.shape[1]
    count = slots.shape[1]
    longest = 1
    for r in range(first, last):
        longest = max(longest, offsets[r + 1] - offsets[r])
    cells = longest * m
    F_space = np.empty(count * cells, np.int32)
    pooled_space = np.empty(cells, np.int32)
    R_space = np.empty(cells + longest, np.int64)
    rows = np.empty((4, m + longest), np.int64)
    z = np.empty(count, np.int64)
    ins = np.empty(longest, np.int64)
    read_pp = np.empty(longest, np.int64)
    for r in range(first, last):
        a = offsets[r]
        b = offsets[r + 1]
        objective[r] = decode_read(codes[a:b], slots[r], profiles, near, terms, p, costs, local, shift, softmin, prob,
                                   placement, F_space, pooled_space, R_space, rows, z, weights[r], ins[:b - a],
                                   columns[a:b], read_pp[:b - a], sign)
        for t in range(b - a):
            pp[a + t] = read_pp[t]


@dataclass(frozen=True)
class Batch:
    """decode_batch's inputs, checked and in the kernels' types (`Batch.of`)."""

    codes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    slots: np.ndarray
    profiles: np.ndarray
    near: np.ndarray
    p: np.ndarray
    costs: ColumnCosts | None
    tables: PosteriorTables
    local: np.ndarray | None  # each profile's own column costs, uint8 [U, K, m] (edge_emission.py)

    @classmethod
    def of(cls, codes, offsets, slots, scores, profiles, near, p, costs, tables, local=None) -> Batch:
        """`decode_batch`'s arguments checked (ValueError: see there) and converted."""
        codes = np.ascontiguousarray(codes)
        offsets = np.ascontiguousarray(offsets, np.int64)
        slots = np.ascontiguousarray(slots, np.int64)
        profiles = np.ascontiguousarray(profiles)
        if codes.dtype != profiles.dtype:
            raise ValueError(f"read codes ({codes.dtype}) and profiles ({profiles.dtype}) differ in element type")
        q = offsets.size - 1
        m = profiles.shape[1]
        if slots.ndim != 2 or slots.shape[0] != q:
            raise ValueError(f"candidate slots {slots.shape} for {q} reads")
        if slots.size and (slots.max() >= profiles.shape[0] or slots.min() < -1):
            raise ValueError("a candidate slot names no profile")
        if scores is not None and np.shape(scores) != slots.shape:
            raise ValueError(f"candidate scores {np.shape(scores)} for slots {slots.shape}")
        lengths = np.diff(offsets)
        if q and not (lengths.min() > 0 and lengths.max() < m):
            raise ValueError(f"reads of {lengths.min()}..{lengths.max()} residues cannot be decoded against {m} "
                             f"columns (need 0 < n < m)")
        if tables.temperature <= 0:
            raise ValueError("the posterior step needs a temperature above 0 (T = 0 is the Viterbi traceback)")
        if local is not None:
            local = np.ascontiguousarray(local, np.uint8)
            if costs is None or local.shape != (profiles.shape[0], *costs.table.shape):
                raise ValueError(f"edge column costs {local.shape} for {profiles.shape[0]} profiles and shared costs "
                                 f"{None if costs is None else costs.table.shape}")
        p = np.asarray(p, np.int64)
        if q:
            largest = 0 if costs is None else max(costs.largest, 0 if local is None else int(local.max(initial=0)))
            check_fixed_point(p, largest, int(lengths.max()), m, tables)
        near = profile_near(profiles) if near is None else np.ascontiguousarray(near, profiles.dtype)
        return cls(codes, offsets, lengths, slots, profiles, near, p, costs, tables, local)

    def accuracy(self, objective: np.ndarray) -> np.ndarray:
        """Each read's expected accuracy: its MEA objective / (n PROB_ONE), NaN without candidates (-1)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(objective >= 0, objective / (np.maximum(self.lengths, 1) * float(PROB_ONE)), np.nan)


def decode_batch(codes: np.ndarray, offsets: np.ndarray, slots: np.ndarray, scores: np.ndarray | None,
                 profiles: np.ndarray, near: np.ndarray | None, p: np.ndarray, costs: ColumnCosts | None,
                 tables: PosteriorTables, threads: int = 1, local: np.ndarray | None = None,
                 stop: threading.Event | None = None):
    """The posterior step for a batch of reads (module docstring), parallel over reads.

    codes: the reads' codes (the alphabet's read codes, one element type with the profiles),
    cut by offsets (int64 [Q + 1]; every read 0 < n < m); slots int [Q, K]: each read's candidate
    edges as rows of profiles ([U, m]), -1 for none (Candidates' empty slots); scores: the
    candidates' engine scores (Candidates.score, or None): the step does not need them (a
    candidate's weight comes from its Forward energy), only their shape is checked; near: the
    profiles' near states (reference_scorer.profile_near; None: computed here); p:
    the penalties (ScoringParams.as_array); costs: the column profile costs (None: none); tables:
    the run's PosteriorTables (T > 0); threads: numba calls of DECODE_SLICE reads run on this
    many threads; local: each profile's own column costs (uint8 [U, K, m] beside `costs`,
    edge_emission.EdgeColumnCosts.of_edges; None: the shared costs everywhere); stop: once set,
    no further slice of DECODE_SLICE reads starts and the call raises CancelledError (a stopped
    run waits for one slice, not the batch). ValueError for inputs it cannot decode (a read not
    0 < n < m, T = 0, energies beyond int32: fixed_point.check_fixed_point).

    Returns (columns int32 [total residues]: each residue's column, INSERTED for none; pp uint16
    [total residues]: its chosen state's pooled posterior, PROB_ONE = 1.0; weights int32 [Q, K]:
    w_e in PROB_ONE units, 0 for empty slots; accuracy float64 [Q]: the mean pp / PROB_ONE,
    the read's expected accuracy, NaN for a read without candidates). engine/gpu_posterior.py
    gives the same on an OpenCL device.
    """
    batch = Batch.of(codes, offsets, slots, scores, profiles, near, p, costs, tables, local)
    q = batch.lengths.size
    shift = tables.shift
    terms = edge_terms(batch.profiles, batch.p, shift)
    kernel = kernel_costs(costs)
    columns = np.empty(batch.offsets[-1] if q else 0, np.int32)
    pp = np.empty(columns.size, np.uint16)
    weights = np.zeros((q, batch.slots.shape[1]), np.int32)
    objective = np.empty(q, np.int64)

    def one(first: int) -> None:
        if stop is not None and stop.is_set():
            raise CancelledError("the run stopped while this batch was decoded")
        _decode_reads(batch.codes, batch.offsets, first, min(q, first + DECODE_SLICE), batch.slots, batch.profiles,
                      batch.near, terms, batch.p, kernel, batch.local, shift, tables.softmin, tables.probability,
                      tables.placement, columns, pp, weights, objective, SIGN)

    starts = range(0, q, DECODE_SLICE)
    if threads <= 1 or q <= DECODE_SLICE:
        for first in starts:
            one(first)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(one, starts))
    return columns, pp, weights, batch.accuracy(objective)


@njit("void(int64[:, ::1], int64[:, ::1], uint16[::1], int64, int32[:, ::1])", cache=True, nogil=True)
def batch_weights(z, slots, prob, sign, weights):
    """`edge_weights` of every read of a batch: z int64 [Q, K], slots [Q, K], weights int32 [Q, K]
    (rows without a candidate stay 0). Only the GPU's posterior step calls it; its signature is
    declared so that importing this module compiles it, in the wheel's build and the warm-up too
    (engine/lane_tables.py says why)."""
    for q in range(slots.shape[0]):
        for e in range(slots.shape[1]):
            if slots[q, e] >= 0:
                edge_weights(z[q], slots[q], prob, sign, weights[q])
                break


# ---- single (read, edge) entry points: tests, scripts and small inputs ----

def _one_edge(read, profile, p, tables, costs):
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} against {m} columns (need 0 < n < m)")
    p = np.asarray(p, np.int64)
    check_fixed_point(p, 0 if costs is None else costs.largest, n, m, tables)
    profiles = profile[None, :]
    return (profiles, profile_near(profiles), edge_terms(profiles, p, tables.shift), kernel_costs(costs), p,
            np.empty((n, m), np.int32), np.empty((4, m + n), np.int64))


def forward_energy(read: np.ndarray, profile: np.ndarray, p: np.ndarray, tables: PosteriorTables,
                   costs: ColumnCosts | None = None) -> tuple[int, np.ndarray]:
    """(Z, F): the Forward energy of one read against one edge profile (fixed point; at T = 0,
    its cheapest path's energy) and M's Forward energies int32 [n, m] by column (M at column 0
    after the first row: the sentinel plus its step)."""
    profiles, near, terms, kernel, p, F, rows = _one_edge(read, profile, p, tables, costs)
    z = forward(read, profile, near[0], p, kernel, terms[0], tables.shift, tables.softmin, F, rows[0], rows[1], SIGN)
    return int(z), F


def edge_posteriors(read: np.ndarray, profile: np.ndarray, p: np.ndarray, tables: PosteriorTables,
                    costs: ColumnCosts | None = None,
                    weight: int = PROB_ONE) -> tuple[int, np.ndarray]:
    """(Z, posteriors): one edge's M posteriors int32 [n, m] by column (PROB_ONE units, times
    weight / PROB_ONE as the pooling floors them)."""
    profiles, near, terms, kernel, p, F, rows = _one_edge(read, profile, p, tables, costs)
    z = forward(read, profile, near[0], p, kernel, terms[0], tables.shift, tables.softmin, F, rows[0], rows[1], SIGN)
    pooled = np.zeros_like(F)
    backward_pool(read, profile, near[0], p, kernel, terms[0], tables.shift, tables.softmin, tables.probability, F, z,
                  weight, pooled, rows[0], rows[1], rows[2], rows[3], SIGN)
    return int(z), pooled
