"""The CIGAR text of a read's path (DESIGN 7): `M` a residue in a column, `D` a column without a
residue, `I` a residue between columns. The traceback writes it (align/traceback.py, inside numba);
this module reads it back for the exports, the API and the tests.
"""

from __future__ import annotations


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
