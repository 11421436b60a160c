"""Traceback of DESIGN.md section 5: the alignment of a read to its best edge.

The band is recomputed with the reference scorer's `fill_band` (int64, so the traceback never
depends on a fast path) and walked back from the end column. Ties prefer, in this order, the
diagonal, then D (a reference column opposite a read gap), then I (a read residue between
columns); inside D, opening is preferred over extending. The end column is the smallest column
reaching the minimum of the last row.

The result is a start column plus a CIGAR over reference columns: M = a column holding a read
residue, D = a column without one, I = a read residue between columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from papara_py.encoding import STATE_MASK
from papara_py.params import ScoringParams
from papara_py.scoring import column_penalties, fill_band

OP_M, OP_D, OP_I = 0, 1, 2
_OP_LETTER = "MDI"


@dataclass(frozen=True)
class ReadAlignment:
    """One read aligned to one edge: its score, first reference column and CIGAR."""

    score: int
    start: int
    cigar: str


@njit(cache=True, nogil=True)
def _trace(read: np.ndarray, profile: np.ndarray, p: np.ndarray):
    """Walk the band back; returns (score, start column, ops in forward order as uint8)."""
    n = read.shape[0]
    S, D = fill_band(read, profile, p)
    cg, oe, _ = column_penalties(profile, p)
    last = S[n - 1]
    k = 0
    for kk in range(last.shape[0]):
        if last[kk] < last[k]:
            k = kk
    score = last[k]
    ops = np.empty(n + profile.shape[0], np.uint8)
    count = 0
    j = n - 1
    in_d = False
    while j >= 0:
        i = j + k
        if in_d:
            ops[count] = OP_D
            count += 1
            in_d = D[j, k] != S[j, k - 1] + oe[i]  # opening preferred on a tie
            k -= 1
            continue
        diag_prev = S[j - 1, k] if j > 0 else 0
        match = 0 if (profile[i] & STATE_MASK & read[j]) != 0 else p[0]
        if S[j, k] == diag_prev + match + cg[i]:
            ops[count] = OP_M
            count += 1
            j -= 1
        elif S[j, k] == D[j, k]:
            in_d = True
        else:
            ops[count] = OP_I
            count += 1
            j -= 1
            k += 1
    # at j == -1 the path left the free boundary row at column k - 1, so it starts at column k
    return score, k, ops[:count][::-1].copy()


def cigar_string(ops: np.ndarray) -> str:
    """Run-length encode an op array (OP_M / OP_D / OP_I) as a CIGAR string."""
    if ops.size == 0:
        return ""
    change = np.flatnonzero(np.diff(ops)) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [ops.size])))
    return "".join(f"{length}{_OP_LETTER[ops[s]]}" for s, length in zip(starts, lengths))


def align(read: np.ndarray, profile: np.ndarray, params: ScoringParams) -> ReadAlignment:
    """Align one encoded read (0 < n < m) to one edge profile with DESIGN 5's tie-breaking."""
    n, m = read.shape[0], profile.shape[0]
    if not 0 < n < m:
        raise ValueError(f"read length {n} cannot be aligned to {m} columns (need 0 < n < m)")
    score, start, ops = _trace(read, profile, params.as_array())
    return ReadAlignment(score=int(score), start=int(start), cigar=cigar_string(ops))


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


def place_read(residues: bytes, start: int, cigar: str, m: int, gap: int = ord("-")) -> np.ndarray:
    """The read in reference columns (uint8 [m]): residues at M columns, `gap` elsewhere.

    Inserted residues (I) have no reference column and are left out, as DESIGN 7 specifies for
    /reads/aligned and the EPA export.
    """
    row = np.full(m, gap, dtype=np.uint8)
    column, position = start, 0
    for length, op in parse_cigar(cigar):
        if op == "M":
            row[column:column + length] = np.frombuffer(residues, np.uint8, length, position)
            column += length
            position += length
        elif op == "D":
            column += length
        else:
            position += length
    return row
