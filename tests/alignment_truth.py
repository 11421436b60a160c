"""Where each read residue lies in the reference, from a start and a CIGAR: the truth the accuracy
tests (model/test_accuracy.py, engine/test_strand.py) compare with."""

from __future__ import annotations

from papara_py.io.cigar import parse_cigar


def residue_columns(start: int, cigar: str) -> list[int]:
    """Reference column of each read residue (-1 for inserted residues), from start + CIGAR."""
    columns, column = [], start
    for length, op in parse_cigar(cigar):
        if op == "M":
            columns.extend(range(column, column + length))
            column += length
        elif op == "D":
            column += length
        else:
            columns.extend([-1] * length)
    return columns
