"""The numba side of io/: the read gather of `ReadSet.select_residues` (io/reads.py), the CRC-32
of many strings at once (`PackedStrings.crc32`), their C strings for HDF5 (io/strings.py) and
HDF5's fletcher32 checksum of a compressed chunk (io/chunks.py), GIL-free.

Apart from reads.py, checksums.py and strings.py so that importing those (the run file, exports, `merge`,
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


@njit(cache=True, nogil=True)
def fletcher32(data):
    """HDF5's Fletcher-32 of `data` (uint8), bit for bit H5_checksum_fletcher32 (src/H5checksum.c):
    big-endian 16-bit words summed from 0, both sums folded to 16 bits every 360 words (uint32
    never overflows there), a last odd byte as the high half of a word, two final folds; the
    filter appends it little-endian (H5Zfletcher32.c, UINT32ENCODE)."""
    n = data.shape[0]
    words = n // 2
    sum1 = np.int64(0)
    sum2 = np.int64(0)
    i = 0
    while words > 0:
        block = min(words, 360)
        words -= block
        for _ in range(block):
            sum1 += (np.int64(data[i]) << 8) | np.int64(data[i + 1])
            i += 2
            sum2 += sum1
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    if n % 2:
        sum1 += np.int64(data[i]) << 8
        sum2 += sum1
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    return np.uint32(((sum2 & 0xFFFF) << 16) | (sum1 & 0xFFFF))


@njit(cache=True, nogil=True)
def terminated_strings(data, starts, ends):
    """Strings data[starts[i]:ends[i]] one after another, each followed by a NUL, and where each
    begins (C strings for HDF5's variable-length string type, io/strings.py); also whether any
    string holds a NUL itself (it would end there)."""
    n = starts.shape[0]
    total = n
    for i in range(n):
        total += ends[i] - starts[i]
    out = np.empty(total, np.uint8)
    at = np.empty(n, np.uint64)
    nul = False
    pos = 0
    for i in range(n):
        at[i] = pos
        for j in range(starts[i], ends[i]):
            c = data[j]
            out[pos] = c
            pos += 1
            if c == 0:
                nul = True
        out[pos] = 0
        pos += 1
    return out, at, nul
