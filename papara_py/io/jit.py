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
def gather_oriented(residues, offsets, indices, reverse, complement, rna_complement):
    """Reads `indices` of (residues, offsets) one after another, read s reverse-complemented
    (`complement`: ASCII -> its complement; `rna_complement` for a read with U and no T, as
    phylo/encoding.is_rna) where reverse[s]; returns (residues, offsets [S+1])."""
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
            has_u, has_t = False, False
            for i in range(first, first + length):
                letter = residues[i] | 0x20
                has_u |= letter == 117  # u
                has_t |= letter == 116  # t
            table = rna_complement if has_u and not has_t else complement
            for i in range(length):
                out[at + i] = table[residues[first + length - 1 - i]]
        else:  # element by element: a slice assignment compiles numba's shape-mismatch message
            for i in range(length):  # (seconds of a cold start)
                out[at + i] = residues[first + i]
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


# --- the reference alignment's bulk path (io/alignment_input._bulk_alignment) ------------------

#: ASCII whitespace as bytes.split() sees it: space, \t, \n, \r, \x0b, \x0c.
_SPACE, _TAB, _LF, _VT, _FF, _CR = 32, 9, 10, 11, 12, 13


@njit(cache=True, nogil=True, inline="always")
def _is_space(byte) -> bool:
    return byte == _SPACE or (_TAB <= byte <= _CR)


@njit(cache=True, nogil=True)
def line_spans(data, breaks):
    """(starts, ends, blank) of the lines of `data` given the positions of its '\\n' bytes
    (`breaks`, ascending): bytes.splitlines' lines where every '\\r' is part of a '\\r\\n' (the
    caller checks that); the ends exclude the line break and a '\\r' before it."""
    n = data.shape[0]
    lines = breaks.shape[0] + (1 if n > 0 and data[n - 1] != _LF else 0)
    starts = np.empty(lines, np.int64)
    ends = np.empty(lines, np.int64)
    blank = np.empty(lines, np.bool_)
    start = 0
    for line in range(lines):
        end = breaks[line] if line < breaks.shape[0] else n
        starts[line] = start
        stop = end
        if stop > start and data[stop - 1] == _CR:
            stop -= 1
        ends[line] = stop
        empty = True
        for i in range(start, stop):  # most lines end this loop at their first byte
            if not _is_space(data[i]):
                empty = False
                break
        blank[line] = empty
        start = end + 1
    return starts, ends, blank


@njit(cache=True, nogil=True)
def first_word(data, starts, ends, skip):
    """Per line: the span of its first whitespace-free word from `skip` bytes in (the name of a
    PHYLIP row, skip 0, or of a FASTA header, skip 1), and where the rest after it begins;
    (start == end where the line holds no word)."""
    n = starts.shape[0]
    word_start = np.empty(n, np.int64)
    word_end = np.empty(n, np.int64)
    for r in range(n):
        i, end = starts[r] + skip, ends[r]
        while i < end and _is_space(data[i]):
            i += 1
        word_start[r] = i
        while i < end and not _is_space(data[i]):
            i += 1
        word_end[r] = i
    return word_start, word_end


@njit(cache=True, nogil=True)
def copy_rows(data, seg_start, seg_end, row_ptr, first_row, end_row, out):
    """Rows [first_row, end_row) of an alignment: row r's characters are the non-whitespace bytes
    of segments row_ptr[r]..row_ptr[r+1]-1 (data[seg_start:seg_end]), copied into out[r] (at most
    out.shape[1] of them; a row whose segments hold exactly that many bytes is copied whole, its
    bytes checked by the caller's count of them). Returns the first row in the range whose
    character count differs from out.shape[1], or -1."""
    length = out.shape[1]
    wrong = -1
    for r in range(first_row, end_row):
        total = 0
        for s in range(row_ptr[r], row_ptr[r + 1]):
            total += seg_end[s] - seg_start[s]
        k = 0
        if total == length:  # no whitespace, or some that the byte count finds (not a character)
            for s in range(row_ptr[r], row_ptr[r + 1]):
                for i in range(seg_start[s], seg_end[s]):  # element by element, as in gather_oriented
                    out[r, k] = data[i]
                    k += 1
        else:
            for s in range(row_ptr[r], row_ptr[r + 1]):
                for i in range(seg_start[s], seg_end[s]):
                    byte = data[i]
                    if _is_space(byte):
                        continue
                    if k < length:
                        out[r, k] = byte
                    k += 1
        if k != length and wrong < 0:
            wrong = r
    return wrong


@njit(cache=True, nogil=True)
def upper_rows(rows, first_row, end_row, upper):
    """rows[first_row:end_row] upper-cased in place through the table `upper` (ASCII -> upper)."""
    for r in range(first_row, end_row):
        for j in range(rows.shape[1]):
            rows[r, j] = upper[rows[r, j]]
