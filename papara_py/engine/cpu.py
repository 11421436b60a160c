"""The CPU worker kernel of DESIGN.md section 6: every read against the W edges of one block.

A block is [m, W] profile elements (engine/layout.py; uint8 for DNA, uint32 for protein): column
i of all W edges is W contiguous elements. One source serves both alphabets: numba compiles
`_score_reads` once per element type, and `cgap_bit_of(lanes)` is a constant of that type
(phylo/encoding.py), so each gets its own machine code without a copy of the kernel. The
kernel runs the DESIGN 4 recurrence for one read against all W edge profiles at once, with the
lane (edge) loop innermost, so LLVM turns each DP step into a handful of packed instructions
over W lanes. Everything below exists to keep that step short:

- Narrow lanes. A read whose worst-case cell value fits (`ScoringParams.int16_safe`) runs with
  int16 lanes (32 per AVX-512 register), the others with int32; both are the same numba
  function specialised by the dtype of its buffers, with a stand-in infinity that no finite
  cell reaches and that one more step cannot wrap (`_infinity`). Every sum is cast back to the
  lane dtype (`t(...)`) before it is compared: numba widens int16 arithmetic to int64, and only
  the explicit cast lets LLVM keep the vectors 16 bits wide.
- The lane count W is a compile-time constant (the length of a tuple argument), padded up to a
  multiple of the native vector width (at least 16 lanes, see `_MIN_LANE_GROUP`), so the lane
  loop compiles to whole vectors and LLVM keeps the row's carried values (the diagonal, S and D
  of the previous column) in registers.
  (`numba.literally` would do the same but costs 13 ms of dispatch per call.)
- The DP buffers live on the stack of `_score_read` (`_stack_array`). numba cannot mark array
  arguments `noalias` (numba PR #9108 was abandoned), so with heap buffers LLVM must assume a
  buffer store may change the block and guards every step with ~100 instructions of runtime
  overlap checks (measured: 2.2 GCUPS per thread). A non-escaping stack buffer is provably
  distinct from every other array: the checks vanish. Allocation is a stack-pointer adjustment;
  nothing per read touches the heap. Stack use: (MAX_STRIP + 5) * W * 4 bytes at most.
- Column penalties. CG_i, OE_i and E_i (scoring.column_penalties) are derived in registers from
  the CGAP bit of the profile byte that each step loads anyway: one packed bit test per W lanes
  selects between broadcast constants. Loading them from precomputed per-lane int16 arrays costs
  three more vector loads per step and measured 1.3-1.5x slower.
- Column strips. The band is processed in strips of `strip` columns for all rows, carrying S and
  D of each row across the strip edge, so the working set (one strip of the DP row and of the
  block) stays in L1/L2 however long the alignment is; the paper's SSE code fell from 18 to
  2.2 GCUPS at m = 500,000 without this. Here cells per second stay flat up to m = 100,000.

Frame. Row j (read position) covers reference columns i in [j, j + m - n]. Buffer row c holds
column i0 - 1 + c of the current strip; it is updated in place along a row: before the update it
holds S(i, j-1) (the insertion source), the value it held one column earlier is the diagonal
S(i-1, j-1), and the row's own S(i-1, j), D(i-1, j) are carried.

The DP step (int16, W = 32, AVX-512BW; numba 0.68 / LLVM 22 for znver4), from the assembly
(`python scripts/bench_cpu.py --asm`): 21 instructions per 32 cells, 16 vector and 5 scalar
(pointer steps, loop test), no gathers, no spills: `vmovdqu` (ymm) of the 32 profile bytes,
`vmovdqu64` zmm load and store of the strip buffer, 2 `vptestnmb` (state match, CGAP bit -> k
masks), 5 `vpaddw` (two merge-masked by the CGAP mask: OE_i, E_i), 2 `vmovdqu16 {k}` (mismatch
and CG selects), 3 `vpminsw`, one register `vmovdqa64`; the three carries stay in zmm
registers. The int32 path is the same on two zmm per 32 lanes (`vpaddd`, `vpminsd`). LLVM also
emits a copy of the loop with a fourth `vpminsw` for the last row, which keeps the best score.
The step is bound by vector ALU throughput (about 7 cycles; Zen 4 splits 512-bit operations in
two halves): a second independent chain (two rows per step, or 64 lanes) bought 3-11%.
With uint32 profile elements (protein) the two bit tests are `vptestnmd` over two zmm of 16
elements each, and LLVM runs the int16 arithmetic in ymm halves to match: 42 instructions per 32
cells, about half the cells per second of DNA (`scripts/bench_cpu.py --shape real --alphabet
protein`: 8.5 against 17.3 GCUPS on one thread of the shared 2-core AVX-512 development machine).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import CancelledError

import numpy as np
from llvmlite import binding as llvm_binding
from numba import carray, njit, types
from numba.core import cgutils
from numba.core import config as numba_config
from numba.extending import intrinsic

from papara_py.engine.limits import MAX_LANES
from papara_py.errors import InputError
from papara_py.model.column_costs import ColumnCosts, kernel_costs
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import alphabet_of, near_states
from papara_py.phylo.jit import cell_cost, cgap_bit_of, read_cost_row

INT32_MAX = 2**31 - 1

#: Columns per strip (chosen by measurement, see notebook/BENCHMARKS.md) and the most a caller may ask.
DEFAULT_STRIP = 1024
MAX_STRIP = 2048
#: Reads per kernel call in `score_block`, between which a stopped run's `stop` is looked at: a
#: slice of a 2,000-read batch's block is hundredths of a second on a CPU thread at 539 columns,
#: tenths at 5,000, and the call's own cost (its carry buffer) is small against its reads.
STOP_SLICE = 256
#: Strip buffer rows: column i0 - 1 (the carry-in diagonal) plus the strip's columns.
_BUF_ROWS = MAX_STRIP + 1
#: Rows of the small stack array holding the per-lane carries (diagonal, S, D, best).
_CARRY_ROWS = 4
#: Fewest lanes the kernel compiles for. With 8, LLVM 22 unrolls the lane loop and its SLP
#: vectoriser gives up (0.2 GCUPS); 16 lanes vectorise on every target tried (SSE4.2 5.6,
#: AVX2 11.4, AVX-512 18 GCUPS per thread), so narrower blocks are padded to 16.
_MIN_LANE_GROUP = 16
#: MAX_LANES (engine/limits.py): most lanes (edges per block) a run may ask for.


def native_lane_width() -> int:
    """int16 lanes per vector register of the CPU numba compiles for: 32, 16 or 8.

    Reads the features numba targets (NUMBA_CPU_FEATURES when set, else the host's as LLVM sees
    them), so a cache built for a generic target is not mistaken for an AVX-512 one.
    """
    features = numba_config.CPU_FEATURES
    if features is None:
        features = llvm_binding.get_host_cpu_features().flatten()
    enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
    if "avx512bw" in enabled:
        return 32
    if "avx2" in enabled:
        return 16
    return 8


def default_lane_width() -> int:
    """Block width W for CPU workers: `native_lane_width()`, or the PAPARA_LANES override."""
    override = os.environ.get("PAPARA_LANES", "").strip()
    if not override:
        return native_lane_width()
    return check_lanes(override, "PAPARA_LANES")


def check_lanes(text: str, source: str) -> int:
    """`text` as a lane count in 1..MAX_LANES, or InputError naming `source` (the option or variable)."""
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_LANES:
        raise InputError(source, f"the lane count (edges per block) must be an integer from 1 to {MAX_LANES}, "
                                 f"got {text!r}")
    return int(text)


def _infinity(params: ScoringParams, dtype: type) -> int:
    """Stand-in for +infinity in int16 or int32 lanes: one more step (max_addend) still fits."""
    return params.int16_infinity() if dtype is np.int16 else INT32_MAX - params.max_addend()


def _lane_costs(params: ScoringParams, dtype: type) -> np.ndarray:
    """(mismatch, insertion, infinity, cgap, gap_open + gap_extend, gap_extend, near_mismatch)
    as `dtype`."""
    return np.array([params.mismatch, params.insertion, _infinity(params, dtype), params.cgap,
                     params.gap_open + params.gap_extend, params.gap_extend, params.near_mismatch], dtype=dtype)


def score_block(
    lanes: np.ndarray,
    codes: np.ndarray,
    offsets: np.ndarray,
    params: ScoringParams,
    *,
    costs: ColumnCosts | None = None,
    force_int32: bool = False,
    strip: int = DEFAULT_STRIP,
    stop: threading.Event | None = None,
) -> np.ndarray:
    """DESIGN 4 score of every read against every lane's edge profile, int32 [Q, W].

    `lanes` is a block ([m, W] profile elements: uint8 DNA, uint32 protein), read q is
    `codes[offsets[q]:offsets[q + 1]]` (state sets of the same alphabet, 0 < n < m; the caller
    filters the rest); `costs` the column profile costs (model/column_costs.py; None: none),
    added to every diagonal step. Runs without the GIL, so threads can score several
    blocks at once. Reads take int16 lanes where `params.int16_safe(n)`, int32 lanes otherwise;
    `force_int32` sends every read down the int32 path (tests compare both paths on the same
    inputs). `strip` is the column-strip length, 1..MAX_STRIP. Once `stop` is set (the engine's
    queue cancelled: a stopped run), no further STOP_SLICE reads start and CancelledError is
    raised: a stopped run waits for a slice of a block, not for the block (seconds on a CPU
    with a large batch).
    """
    lanes = np.ascontiguousarray(lanes)
    codes = np.ascontiguousarray(codes, dtype=alphabet_of(lanes).dtype)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    m, width = lanes.shape
    lengths = np.diff(offsets)
    if lengths.size and not (lengths.min() > 0 and lengths.max() < m):
        raise ValueError(f"reads must have 0 < n < m = {m}; got lengths {lengths.min()}..{lengths.max()}")
    if not 1 <= strip <= MAX_STRIP:
        raise ValueError(f"strip must be in 1..{MAX_STRIP}, got {strip}")
    if costs is not None:
        params.check_column_costs(costs, m)
    # int16_safe is monotone in n (cell_bound grows with n): one threshold splits the reads
    safe = [n for n in np.unique(lengths).tolist() if params.int16_safe(n)]
    use_int16 = lengths <= (max(safe) if safe and not force_int32 else 0)
    if not use_int16.all():
        longest = int(lengths[~use_int16].max())
        if params.cell_bound(longest) >= _infinity(params, np.int32):
            raise ValueError(f"scores of a {longest}-residue read could overflow int32 with {params}")

    group = max(native_lane_width(), _MIN_LANE_GROUP)
    padded = -(-width // group) * group
    if padded != width:  # whole vectors only: repeat the last edge, as make_block does
        lanes = np.concatenate([lanes, np.repeat(lanes[:, -1:], padded - width, axis=1)], axis=1)
    out = np.empty((lengths.size, padded), dtype=np.int32)
    # near states only where they cost less than a mismatch: Eq. 1 compiles without them
    near = near_states(lanes) if params.weighted else None
    # one call per lane width used: numba compiles the int32 kernel only for a run whose reads need it
    kernel = kernel_costs(costs)
    for chosen, dtype in ((use_int16, np.int16), (~use_int16, np.int32)):
        if not chosen.any():
            continue
        lane_costs = _lane_costs(params, dtype)
        for a in range(0, lengths.size, STOP_SLICE):
            if stop is not None and stop.is_set():
                raise CancelledError("the run stopped while this block was scored")
            b = min(a + STOP_SLICE, lengths.size)
            _score_reads(lanes, near, kernel, codes, offsets[a:b + 1], chosen[a:b], lane_costs, strip, out[a:b],
                         (0,) * padded)
    return out[:, :width]


@intrinsic
def _stack_array(typingctx, rows, lane_token, like):
    """Pointer to rows * W uninitialised elements of like's dtype in the caller's stack frame.

    rows is a compile-time literal, W = len(lane_token); the caller wraps it with `numba.carray`.
    """
    if not (isinstance(rows, types.IntegerLiteral) and isinstance(lane_token, types.UniTuple)):
        return None
    dtype = like.dtype
    count = rows.literal_value * lane_token.count

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(dtype), size=count)

    return types.CPointer(dtype)(rows, lane_token, like), codegen


@njit(cache=True, nogil=True)
def _score_read(lanes, near, costs, read, k, strip, carry, out, lane_token):
    """Score one read against all W lanes into out[:W]; `k` (lane dtype) selects int16/int32.

    k = (mismatch, insertion, infinity, cgap, gap_open + gap_extend, gap_extend, near_mismatch).
    near: the lanes' near states ([m, W], `near_states`), or None for Eq. 1 (near_mismatch =
    mismatch): numba prunes the branch, so Eq. 1 runs the step without them. costs: the column
    profile costs (model/column_costs.kernel_costs) or None (pruned alike); a row's cost at a
    column is the same on every lane, so it is read once per column, outside the lane loop.
    carry[j, 0] and carry[j, 1] hold S and D of row j at the last column of the previous strip.
    """
    W = len(lane_token)
    m = lanes.shape[0]
    n = read.shape[0]
    span = m - n
    t = k.dtype.type
    mismatch, insertion, inf = k[0], k[1], k[2]
    cgap, open_extend, extend, near_mismatch = k[3], k[4], k[5], k[6]
    cgap_bit = cgap_bit_of(lanes)
    buf = carray(_stack_array(_BUF_ROWS, lane_token, k), (_BUF_ROWS, W))
    state = carray(_stack_array(_CARRY_ROWS, lane_token, k), (_CARRY_ROWS, W))
    diag, s_left, d_left, best = state[0], state[1], state[2], state[3]
    for w in range(W):
        best[w] = inf
    for i0 in range(0, m, strip):
        i1 = min(i0 + strip, m)
        j_first = max(0, i0 - span)
        # Row j_first - 1 as seen by this strip: S(i0 - 1, .) in buf[0]; its in-strip values are
        # the free boundary row (0 left of column span) or out of band (infinity).
        for w in range(W):
            buf[0, w] = 0 if j_first == 0 else carry[j_first - 1, 0, w]
        free_end = max(1, min(span - i0 + 1, i1 - i0 + 1)) if j_first == 0 else 1
        for c in range(1, free_end):
            for w in range(W):
                buf[c, w] = 0
        for c in range(free_end, i1 - i0 + 1):
            for w in range(W):
                buf[c, w] = inf
        for j in range(j_first, min(n, i1)):
            b = read[j]
            cost_row = read_cost_row(costs, b)
            lo = max(j, i0)
            hi = min(j + span, i1 - 1)
            if j < i0:  # the row continues from the previous strip
                for w in range(W):
                    diag[w] = buf[0, w]
                    s_left[w] = carry[j, 0, w]
                    d_left[w] = carry[j, 1, w]
                    buf[0, w] = carry[j, 0, w]
            else:  # the row's band starts here: no left neighbour, so D(lo, j) = infinity exactly
                for w in range(W):
                    diag[w] = buf[lo - i0, w]
                    s_left[w] = inf
                    d_left[w] = t(inf - (0 if lanes[lo, w] & cgap_bit else extend))
            last_row = j == n - 1
            rows = buf[lo - i0 + 1:]
            profile = lanes[lo:]
            for x in range(hi - lo + 1):
                column_cost = t(cell_cost(costs, cost_row, lo + x))
                for w in range(W):
                    a = profile[x, w]
                    above = rows[x, w]
                    is_cgap = a & cgap_bit
                    d = min(t(s_left[w] + (0 if is_cgap else open_extend)),
                            t(d_left[w] + (0 if is_cgap else extend)))
                    s = t(diag[w] + (cgap if is_cgap else 0) + column_cost)
                    # the near state is loaded whether or not the states match: a load under that
                    # condition needs masked byte loads (AVX-512BW) to vectorise, and on AVX2 the
                    # whole step ran scalar (0.2 GCUPS against 6.9 for Eq. 1)
                    if near is None:
                        miss = mismatch
                    else:
                        miss = near_mismatch if (near[lo + x, w] & b) != 0 else mismatch
                    if (a & b) == 0:
                        s = t(s + miss)
                    s = min(min(s, t(above + insertion)), d)
                    diag[w] = above
                    s_left[w] = s
                    d_left[w] = d
                    rows[x, w] = s
                    if last_row:
                        best[w] = min(best[w], s)
            if hi == i1 - 1 and i1 < m:
                for w in range(W):
                    carry[j, 0, w] = s_left[w]
                    carry[j, 1, w] = d_left[w]
    for w in range(W):
        out[w] = best[w]


@njit(cache=True, nogil=True)
def _score_reads(lanes, near, costs, codes, offsets, chosen, k, strip, out, lane_token):
    """Score the reads q with chosen[q] of one block in lanes of k's dtype (int16 or int32: one
    compiled kernel each, the other compiled only when a run calls it). W = len(lane_token), a
    compile-time constant."""
    W = len(lane_token)
    longest = 0
    for q in range(offsets.shape[0] - 1):
        if chosen[q]:
            longest = max(longest, offsets[q + 1] - offsets[q])
    carry = np.empty((longest, 2, W), k.dtype)
    for q in range(offsets.shape[0] - 1):
        if chosen[q]:
            _score_read(lanes, near, costs, codes[offsets[q]:offsets[q + 1]], k, strip, carry, out[q], lane_token)
