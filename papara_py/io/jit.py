"""The numba side of io/: the read gather of `ReadSet.select_residues` (io/reads.py) and the
CRC-32 of many strings at once (`checksums.string_crc32`), GIL-free.

Apart from reads.py and checksums.py so that importing those (the run file, exports, `merge`,
the report) does not import numba, whose import alone costs about half a second; the functions
that need these import this module when first called.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def gather_oriented(residues, offsets, indices, reverse, complement):
    """Reads `indices` of (residues, offsets) one after another, read s reverse-complemented
    (`complement`: ASCII -> its complement) where reverse[s]; returns (residues, offsets [S+1])."""
    n = indices.shape[0]
    out_offsets = np.zeros(n + 1, np.int64)
    for s in range(n):
        q = indices[s]
        out_offsets[s + 1] = out_offsets[s] + offsets[q + 1] - offsets[q]
    out = np.empty(out_offsets[n], np.uint8)
    for s in range(n):
        q = indices[s]
        first, at = offsets[q], out_offsets[s]
        length = offsets[q + 1] - first
        if reverse[s]:
            for i in range(length):
                out[at + i] = complement[residues[first + length - 1 - i]]
        else:
            out[at:at + length] = residues[first:first + length]
    return out, out_offsets


@njit(cache=True, nogil=True)
def crc32_pieces(data, starts, ends, table):
    """zlib.crc32 of data[starts[i]:ends[i]] for each i (`table`: checksums' CRC table)."""
    out = np.empty(starts.shape[0], np.uint32)
    for i in range(starts.shape[0]):
        crc = np.uint32(0xFFFFFFFF)
        for j in range(starts[i], ends[i]):
            crc = table[(crc ^ data[j]) & 0xFF] ^ (crc >> np.uint32(8))
        out[i] = crc ^ np.uint32(0xFFFFFFFF)
    return out
