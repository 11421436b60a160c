"""Where each read residue lies in the reference, from a start and a CIGAR: the columns the accuracy
tests (model/test_accuracy.py, engine/test_strand.py) compare with the truth."""

from __future__ import annotations

from papara_py.io.cigar import cigar_columns, parse_cigar


def residue_columns(start: int, cigar: str) -> list[int]:
    """Reference column of each read residue (-1 for inserted residues), from start + CIGAR."""
    return cigar_columns(start, cigar, sum(length for length, op in parse_cigar(cigar) if op != "D")).tolist()
