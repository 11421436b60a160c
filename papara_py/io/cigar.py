"""The CIGAR text of a read's path (DESIGN 7): `M` a residue in a column, `D` a column without a
residue, `I` a residue between columns. The writers write it (io/paths.py, inside numba); this
module reads it back for the exports, the API and the tests, in plain Python and numpy (an export
imports no numba).
"""

from __future__ import annotations

import numpy as np


def parse_cigar(cigar: str) -> list[tuple[int, str]]:
    """Split a CIGAR string into (length, op) pairs."""
    pairs = []
    number = ""
    for ch in cigar:
        if ch.isdigit():
            number += ch
        else:
            pairs.append((int(number), ch))
            number = ""
    return pairs


def cigar_columns(start: int, cigar: str, n: int) -> np.ndarray:
    """int64 [n]: each of the read's n residues' reference column along `cigar` from column
    `start`, -1 (io/paths.INSERTED) where it is inserted."""
    columns = np.full(n, -1, np.int64)
    column, position = start, 0
    for length, op in parse_cigar(cigar):
        if op == "M":
            columns[position:position + length] = np.arange(column, column + length)
            column += length
            position += length
        elif op == "D":
            column += length
        else:
            position += length
    return columns


def place_read(residues: bytes, start: int, cigar: str, m: int, gap: int = ord("-")) -> np.ndarray:
    """The read in reference columns (uint8 [m]): residues at their M columns, `gap` elsewhere;
    inserted residues have no column and are left out (/reads/aligned, DESIGN 7)."""
    read = np.frombuffer(residues, np.uint8)
    columns = cigar_columns(start, cigar, read.size)
    row = np.full(m, gap, np.uint8)
    placed = columns >= 0
    row[columns[placed]] = read[placed]
    return row
