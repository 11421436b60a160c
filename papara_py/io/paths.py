"""A read's alignment in its forms (DESIGN.md 5 and 7).

The model hands on each read's alignment in one form: the column of each of its residues
(INSERTED where a residue lies between columns). The writers turn that into the run file's forms
(`alignment_forms`, a batch at a time inside numba): a path, an op array from a start column
(OP_M: a column holding a read residue, OP_D: a column without one, OP_I: a read residue between
columns; between two placed residues the inserted ones come before the skipped columns), its
ASCII CIGAR (run-length encoded ops) and the read's row in reference columns (its residues at
their columns, gaps elsewhere, inserted residues left out). The exports, the API and the tests
read CIGARs back with io/cigar.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OP_M, OP_D, OP_I = 0, 1, 2
#: A residue's column where it is inserted (lies between reference columns).
INSERTED = -1
_OP_LETTER = "MDI"
_OP_BYTES = np.frombuffer(_OP_LETTER.encode(), np.uint8).copy()


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


@njit(cache=True, nogil=True, inline="always")
def apply_ops(op, count, column, out, position):
    """`count` path steps of kind `op` from reference column `column` and read residue `position`:
    an M puts the residue in the column, an I marks it INSERTED, a D skips the column. Returns the
    (column, position) after them: how a CIGAR and the traceback's ops both become columns."""
    for _ in range(count):
        if op == OP_M:
            out[position] = column
            column += 1
            position += 1
        elif op == OP_D:
            column += 1
        else:
            out[position] = INSERTED
            position += 1
    return column, position


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
    if previous >= 0:  # none placed: every residue is already an I op above
        for _ in range(n - 1 - previous):
            ops[count] = OP_I
            count += 1
    return start, count


@njit(cache=True, nogil=True)
def _forms(columns, offsets, residues, starts, rows, cigar_bytes, cigar_ends):
    """`alignment_forms` inside numba: read q's path from columns[offsets[q]:offsets[q + 1]]."""
    m = rows.shape[1]
    ops = np.empty(int((offsets[1:] - offsets[:-1]).max()) + m if offsets.shape[0] > 1 else 0, np.uint8)
    pos = np.int64(0)  # not a literal 0: numba would compile encode_cigar for that type as well
    for q in range(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        start, count = path_ops(columns[a:b], ops)
        start = max(start, 0)  # no residue placed (all inserted): the path starts at column 0
        starts[q] = start
        place_ops(ops[:count], start, residues[a:b], rows[q])
        pos = encode_cigar(ops[:count], cigar_bytes, pos)
        cigar_ends[q] = pos


def alignment_forms(columns: np.ndarray, offsets: np.ndarray, residues: np.ndarray, m: int,
                    gap: int = ord("-")) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The run file's forms of a batch's alignments: (start columns int32 [reads], CIGARs, rows
    uint8 [reads, m]); columns: each residue's column (INSERTED where inserted), residues the
    reads' ASCII (as oriented), both cut by offsets (int64 [reads + 1])."""
    count = offsets.size - 1
    starts = np.empty(count, np.int32)
    rows = np.full((count, m), gap, np.uint8)
    # a path has n M/I ops and at most m D ops; 2 bytes per op bound the CIGAR (see encode_cigar)
    cigar_bytes = np.empty(2 * (int(offsets[-1]) + count * m), np.uint8)
    cigar_ends = np.empty(count, np.int64)
    _forms(np.ascontiguousarray(columns), np.ascontiguousarray(offsets, np.int64), residues, starts, rows, cigar_bytes,
           cigar_ends)
    return starts, cigar_strings(cigar_bytes, cigar_ends), rows


def cigar_strings(cigar_bytes: np.ndarray, cigar_ends: np.ndarray) -> list[str]:
    """The batch's CIGARs as strings: read r's are cigar_bytes[cigar_ends[r - 1]:cigar_ends[r]]."""
    text = cigar_bytes[:cigar_ends[-1] if cigar_ends.size else 0].tobytes().decode()
    bounds = np.concatenate(([0], cigar_ends)).tolist()
    return [text[bounds[r]:bounds[r + 1]] for r in range(cigar_ends.size)]


_OP_CODE = {"M": OP_M, "D": OP_D, "I": OP_I}
