"""Draft v1 (experiment)."""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.encoding import CGAP_BIT, STATE_MASK
from papara_py.params import ScoringParams

INT32_MAX = 2**31 - 1


@njit(cache=True, nogil=True)
def _penalties(lanes, p, out):
    m, W = lanes.shape
    for i in range(m):
        for w in range(W):
            if lanes[i, w] & CGAP_BIT:
                out[0, i, w] = p[1]
                out[1, i, w] = 0
                out[2, i, w] = 0
            else:
                out[0, i, w] = 0
                out[1, i, w] = p[2] + p[3]
                out[2, i, w] = p[3]


@njit(cache=True, nogil=True)
def _score_read(lanes, pen, read, k, strip, buf, cs, cd, sl, dl, dg, best, out):
    m, W = lanes.shape
    n = read.shape[0]
    span = m - n
    mis = k[0]
    insertion = k[1]
    inf = k[2]
    t = buf.dtype.type
    cg = pen[0]
    oe = pen[1]
    ex = pen[2]
    for w in range(W):
        best[w] = inf
    for i0 in range(0, m, strip):
        i1 = min(i0 + strip, m)
        j_lo = max(0, i0 - span)
        j_hi = min(n - 1, i1 - 1)
        for w in range(W):
            buf[0, w] = 0 if j_lo == 0 else cs[j_lo - 1, w]
        for c in range(i0, i1):
            v = 0 if (j_lo == 0 and c < span) else inf
            for w in range(W):
                buf[c - i0 + 1, w] = v
        for j in range(j_lo, j_hi + 1):
            b = read[j]
            lo = max(j, i0)
            hi = min(j + span, i1 - 1)
            if j < i0:
                for w in range(W):
                    dg[w] = buf[0, w]
                    sl[w] = cs[j, w]
                    dl[w] = cd[j, w]
                    buf[0, w] = cs[j, w]
            else:
                for w in range(W):
                    dg[w] = buf[lo - i0, w]
                    sl[w] = inf
                    dl[w] = inf - ex[lo, w]
            for i in range(lo, hi + 1):
                c = i - i0 + 1
                for w in range(W):
                    old = buf[c, w]
                    diag = t(dg[w] + cg[i, w])
                    if (lanes[i, w] & b) == 0:
                        diag = t(diag + mis)
                    d = min(t(sl[w] + oe[i, w]), t(dl[w] + ex[i, w]))
                    s = min(min(diag, t(old + insertion)), d)
                    dg[w] = old
                    sl[w] = s
                    dl[w] = d
                    buf[c, w] = s
            if hi == i1 - 1:
                for w in range(W):
                    cs[j, w] = sl[w]
                    cd[j, w] = dl[w]
            if j == n - 1:
                for c in range(lo - i0 + 1, hi - i0 + 2):
                    for w in range(W):
                        best[w] = min(best[w], buf[c, w])
    for w in range(W):
        out[w] = best[w]


@njit(cache=True, nogil=True)
def _score_all(lanes, codes, offsets, safe, p, k16, k32, strip, out):
    m, W = lanes.shape
    Q = offsets.shape[0] - 1
    nmax = 0
    for q in range(Q):
        nmax = max(nmax, offsets[q + 1] - offsets[q])
    pen16 = np.empty((3, m, W), np.int16)
    pen32 = np.empty((3, m, W), np.int32)
    _penalties(lanes, p, pen16)
    _penalties(lanes, p, pen32)
    cols = min(strip, m) + 1
    buf16 = np.empty((cols, W), np.int16)
    buf32 = np.empty((cols, W), np.int32)
    cs16 = np.empty((nmax, W), np.int16)
    cs32 = np.empty((nmax, W), np.int32)
    cd16 = np.empty((nmax, W), np.int16)
    cd32 = np.empty((nmax, W), np.int32)
    v16 = np.empty((4, W), np.int16)
    v32 = np.empty((4, W), np.int32)
    for q in range(Q):
        read = codes[offsets[q]:offsets[q + 1]]
        if safe[q]:
            _score_read(lanes, pen16, read, k16, strip, buf16, cs16, cd16, v16[0], v16[1], v16[2], v16[3], out[q])
        else:
            _score_read(lanes, pen32, read, k32, strip, buf32, cs32, cd32, v32[0], v32[1], v32[2], v32[3], out[q])


def score_block(lanes, codes, offsets, params, *, force_int32=False, strip=None):
    lengths = np.diff(offsets)
    p = params.as_array()
    safe = np.array([params.int16_safe(int(n)) and not force_int32 for n in lengths], dtype=np.bool_)
    inf32 = INT32_MAX - params.max_addend()
    k16 = np.array([params.mismatch, params.insertion, params.int16_infinity()], np.int16)
    k32 = np.array([params.mismatch, params.insertion, inf32], np.int32)
    out = np.empty((len(lengths), lanes.shape[1]), np.int32)
    _score_all(lanes, codes, offsets, safe, p, k16, k32, strip or lanes.shape[0], out)
    return out
