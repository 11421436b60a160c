"""Alignment paths of DESIGN.md 5 as the traceback and the column votes write them.

A path is an op array (OP_M: a column holding a read residue, OP_D: a column without one, OP_I: a
read residue between columns) from a start column. These turn it into the run file's forms: an
ASCII CIGAR (run-length encoded ops) and the read's row in reference columns (its residues at
their M columns, gaps elsewhere, inserted residues left out), for one read or a batch at a time
inside numba code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.io.cigar import parse_cigar

OP_M, OP_D, OP_I = 0, 1, 2
_OP_LETTER = "MDI"
_OP_BYTES = np.frombuffer(_OP_LETTER.encode(), np.uint8).copy()
_DIGIT_0, _DIGIT_9 = ord("0"), ord("9")
_CIGAR_OP = np.full(256, 255, np.uint8)
_CIGAR_OP[ord("M")], _CIGAR_OP[ord("D")], _CIGAR_OP[ord("I")] = OP_M, OP_D, OP_I


@njit(cache=True, nogil=True)
def encode_cigar(ops: np.ndarray, out: np.ndarray, pos: int) -> int:
    """Run-length encode `ops` as ASCII CIGAR bytes into out[pos:]; returns the end position.

    A run of L ops takes digits(L) + 1 <= L + 1 bytes, so 2 * len(ops) bytes always suffice.
    """
    i = 0
    while i < ops.shape[0]:
        j = i
        while j < ops.shape[0] and ops[j] == ops[i]:
            j += 1
        length = j - i
        digits = 1
        while length >= 10 ** digits:
            digits += 1
        for d in range(digits):
            out[pos + digits - 1 - d] = 48 + (length // 10 ** d) % 10
        pos += digits
        out[pos] = _OP_BYTES[ops[i]]
        pos += 1
        i = j
    return pos


def cigar_string(ops: np.ndarray) -> str:
    """Run-length encode an op array (OP_M / OP_D / OP_I) as a CIGAR string."""
    out = np.empty(2 * ops.size, np.uint8)
    return out[:encode_cigar(ops, out, 0)].tobytes().decode()


@njit(cache=True, nogil=True)
def place_ops(ops: np.ndarray, start: int, residues: np.ndarray, row: np.ndarray) -> None:
    """Write residues into row at their M columns (D columns keep their gap, I residues go)."""
    column, position = start, 0
    for op in ops:
        if op == OP_M:
            row[column] = residues[position]
            column += 1
            position += 1
        elif op == OP_D:
            column += 1
        else:
            position += 1


@njit(cache=True, nogil=True)
def read_columns(cigar, lo, hi, start, out):
    """out[j]: the column of the read's residue j in the CIGAR cigar[lo:hi] from `start`, -1 where
    it is inserted."""
    column, position, length = start, 0, 0
    for i in range(lo, hi):
        c = cigar[i]
        if _DIGIT_0 <= c <= _DIGIT_9:
            length = length * 10 + c - _DIGIT_0
            continue
        op = _CIGAR_OP[c]
        for _ in range(length):
            if op == OP_M:
                out[position] = column
                column += 1
                position += 1
            elif op == OP_D:
                column += 1
            else:
                out[position] = -1
                position += 1
        length = 0


@njit(cache=True, nogil=True)
def _columns_of(cigar, cigar_ends, starts, offsets, out):
    """Each read's columns from its CIGAR (`read_columns`) into out[offsets[q]:offsets[q + 1]]."""
    for q in range(starts.shape[0]):
        lo = cigar_ends[q - 1] if q > 0 else 0
        read_columns(cigar, lo, cigar_ends[q], starts[q], out[offsets[q]:offsets[q + 1]])


def residue_columns(starts: np.ndarray, cigars: list[str], offsets: np.ndarray) -> np.ndarray:
    """int64 [offsets[-1]]: each residue's column (-1: inserted) in the alignments (start column,
    CIGAR) of the reads whose residues `offsets` cuts out, read q's at offsets[q]:offsets[q + 1]."""
    out = np.empty(int(offsets[-1]), np.int64)
    _columns_of(np.frombuffer("".join(cigars).encode(), np.uint8), np.cumsum([len(c) for c in cigars], dtype=np.int64),
                np.asarray(starts, np.int64), np.asarray(offsets, np.int64), out)
    return out


@njit(cache=True, nogil=True)
def path_ops(columns, ops):
    """The ops of a column assignment (at least one residue placed) into ops; returns (start
    column, op count). Inserted residues between two placed ones come before the skipped columns."""
    n = columns.shape[0]
    count = 0
    start = -1
    previous = -1
    for j in range(n):
        x = columns[j]
        if x < 0:
            if start < 0:
                ops[count] = OP_I
                count += 1
            continue
        if start < 0:
            start = x
        else:
            for _ in range(j - previous - 1):
                ops[count] = OP_I
                count += 1
            for _ in range(x - columns[previous] - 1):
                ops[count] = OP_D
                count += 1
        ops[count] = OP_M
        count += 1
        previous = j
    for _ in range(n - 1 - previous):
        ops[count] = OP_I
        count += 1
    return start, count


def replace_paths(starts: np.ndarray, cigars: list[str], rows: np.ndarray, residues: np.ndarray, offsets: np.ndarray,
                  which: np.ndarray, columns: np.ndarray, gap: int = ord("-")) -> tuple[np.ndarray, list[str], np.ndarray]:
    """A batch's starts, CIGARs and rows with the reads `which` written anew from their `columns`
    (each residue's column, -1 inserted, at least one placed; `path_ops`); residues: the reads'
    ASCII cut by `offsets`. The given arrays stay as they were."""
    starts, cigars = np.array(starts, np.int32), list(cigars)
    if len(which):
        rows = rows.copy()
    for q in np.asarray(which).tolist():
        read_columns_q = columns[offsets[q]:offsets[q + 1]]
        ops = np.empty(read_columns_q.size + rows.shape[1], np.uint8)
        start, length = path_ops(read_columns_q, ops)
        rows[q] = gap
        place_ops(ops[:length], start, residues[offsets[q]:offsets[q + 1]], rows[q])
        starts[q], cigars[q] = start, cigar_string(ops[:length])
    return starts, cigars, rows


def output_space(offsets: np.ndarray, m: int, gap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (gaps), CIGAR bytes and CIGAR ends for the reads cut by `offsets`: what a batch's
    `place_ops` and `encode_cigar` write into."""
    count = offsets.size - 1
    rows = np.full((count, m), gap, np.uint8)
    # a path has n M/I ops and at most m D ops; 2 bytes per op bound the CIGAR (see encode_cigar)
    cigar_bytes = np.empty(2 * (int(offsets[-1]) + count * m), np.uint8)
    return rows, cigar_bytes, np.empty(count, np.int64)


def cigar_strings(cigar_bytes: np.ndarray, cigar_ends: np.ndarray) -> list[str]:
    """The batch's CIGARs as strings: read r's are cigar_bytes[cigar_ends[r - 1]:cigar_ends[r]]."""
    text = cigar_bytes[:cigar_ends[-1] if cigar_ends.size else 0].tobytes().decode()
    bounds = np.concatenate(([0], cigar_ends)).tolist()
    return [text[bounds[r]:bounds[r + 1]] for r in range(cigar_ends.size)]


_OP_CODE = {"M": OP_M, "D": OP_D, "I": OP_I}


def place_read(residues: bytes, start: int, cigar: str, m: int, gap: int = ord("-")) -> np.ndarray:
    """The read in reference columns (uint8 [m]): residues at M columns, `gap` elsewhere.

    Inserted residues (I) have no reference column and are left out, as DESIGN 7 specifies for
    /reads/aligned and the EPA export.
    """
    ops = np.array([_OP_CODE[op] for length, op in parse_cigar(cigar) for _ in range(length)], np.uint8)
    row = np.full(m, gap, dtype=np.uint8)
    # a writable array, as the kernels pass: a read-only one would compile place_ops once more
    place_ops(ops, start, np.frombuffer(bytearray(residues), np.uint8), row)
    return row
