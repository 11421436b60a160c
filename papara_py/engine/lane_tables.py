"""Table lookups over lane arrays that build the GPU kernel's inputs on the host (engine/gpu.py's
profile words and lookup words), in numba.

They live apart from engine/gpu.py, which needs pyopencl, so that the wheel's build and
`papara-py warm-up` (run/warmup.py) compile them where pyopencl is absent: each has its one
signature declared, so importing this module compiles it (or loads it from numba's cache) and a
first GPU run compiles nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit("void(uint8[:, :], uint16[::1], uint16[:, ::1])", cache=True, nogil=True)
def table_lanes(lanes, table, out):
    """out[i, j] = table[lanes[i, j]], and table[0] past the lanes (the zero padding's)."""
    n = lanes.shape[1]
    for i in range(out.shape[0]):
        for j in range(n):
            out[i, j] = table[lanes[i, j]]
        for j in range(n, out.shape[1]):
            out[i, j] = table[0]


@njit("void(uint8[:, ::1], uint32[:, ::1], uint32[:, :, ::1])", cache=True, nogil=True)
def pair_words(lanes, pairs, words):
    """words[i, u] = pairs[lanes[i, 2u] | lanes[i, 2u+1] << 8] (lanes past the edges: 0), and the
    rows from lanes' last column on zero (engine/band_inputs.lookup_words of DNA)."""
    m, n = lanes.shape
    for i in range(m):
        for u in range(words.shape[1]):
            even = lanes[i, 2 * u] if 2 * u < n else 0
            odd = lanes[i, 2 * u + 1] if 2 * u + 1 < n else 0
            key = np.int64(even) | (np.int64(odd) << 8)
            for w in range(4):
                words[i, u, w] = pairs[key, w]
    for i in range(m, words.shape[0]):
        for u in range(words.shape[1]):
            for w in range(4):
                words[i, u, w] = 0
