"""Nucleotide state encodings of DESIGN.md section 2, as 256-entry lookup tables.

A state is a 4-bit set: A=1, C=2, G=4, T=8 (U is T), IUPAC ambiguity codes are unions, case is
ignored. Lookup tables let every parser encode a whole sequence with one numpy gather.

Edge profile elements (DESIGN.md 3-4) are one byte: bits 0-3 the state set of the edge's virtual
root, bit 4 (`CGAP_BIT`) set where the phylogenetic gap signal says "gap".
"""

from __future__ import annotations

import numpy as np

A, C, G, T = 1, 2, 4, 8
ACGT = A | C | G | T
CGAP_BIT = 0x10
STATE_MASK = 0x0F

_IUPAC = {
    "A": A, "C": C, "G": G, "T": T, "U": T,
    "R": A | G, "Y": C | T, "S": C | G, "W": A | T, "K": G | T, "M": A | C,
    "B": C | G | T, "D": A | G | T, "H": A | C | T, "V": A | C | G, "N": ACGT,
}
GAP_CHARACTERS = "-.?"

#: ASCII byte -> state set for read residues; 0 marks a byte that is not a valid residue.
READ_CODE = np.zeros(256, dtype=np.uint8)
for _ch, _bits in _IUPAC.items():
    READ_CODE[ord(_ch)] = _bits
    READ_CODE[ord(_ch.lower())] = _bits

#: ASCII byte -> state set for reference alignment characters: gaps are the full set ACGT.
REF_CODE = READ_CODE.copy()
for _ch in GAP_CHARACTERS:
    REF_CODE[ord(_ch)] = ACGT

#: ASCII byte -> True for the reference gap/missing characters (the CGAP "gap" state).
IS_GAP = np.zeros(256, dtype=bool)
for _ch in GAP_CHARACTERS:
    IS_GAP[ord(_ch)] = True

#: State set -> canonical upper-case IUPAC letter (index 0 unused), for displaying profiles.
STATE_LETTER = np.frombuffer(b"?ACMGRSVTWYHKDBN", dtype=np.uint8).copy()

#: Complement of a state set (A<->T, C<->G), for reverse-complementing encoded reads.
COMPLEMENT_CODE = np.array(
    [((s & A) << 3) | ((s & C) << 1) | ((s & G) >> 1) | ((s & T) >> 3) for s in range(16)],
    dtype=np.uint8,
)

#: ASCII byte -> its IUPAC complement letter, same case; other bytes map to themselves.
COMPLEMENT_ASCII = np.arange(256, dtype=np.uint8)
for _a, _b in ("AT", "CG", "RY", "KM", "BV", "DH", "SS", "WW", "NN"):
    for _x, _y in ((_a, _b), (_a.lower(), _b.lower())):
        COMPLEMENT_ASCII[ord(_x)] = ord(_y)
        COMPLEMENT_ASCII[ord(_y)] = ord(_x)
COMPLEMENT_ASCII[ord("U")] = ord("A")
COMPLEMENT_ASCII[ord("u")] = ord("a")


def reverse_complement(ascii_bytes: np.ndarray) -> np.ndarray:
    """The reverse complement of a sequence (uint8 ASCII, IUPAC codes complemented, case kept)."""
    return COMPLEMENT_ASCII[ascii_bytes[::-1]]


def encode_read(ascii_bytes: np.ndarray) -> np.ndarray:
    """Encode read residues (uint8 ASCII) to state sets; invalid bytes come back as 0."""
    return READ_CODE[ascii_bytes]


def first_invalid(ascii_bytes: np.ndarray) -> int:
    """Index of the first byte that is not a valid read residue, or -1."""
    bad = np.flatnonzero(READ_CODE[ascii_bytes] == 0)
    return int(bad[0]) if bad.size else -1
