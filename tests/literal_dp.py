"""A literal, cell-by-cell transcription of DESIGN.md section 4, kept in the tests on purpose.

It shares no code with papara_py: dictionaries of cells, math.inf for +infinity and the band
and boundary conditions spelled out exactly as the spec words them. Slow, and meant to be.
Elements are DNA's (4 states, CGAP bit 4, near-state field in bits 5-7) unless `protein` is
given (20 states ARNDCQEGHILKMFPSTWYV, CGAP bit 20, near states from BLOSUM62 itself), and
optionally the column profile cost of DESIGN 4 computed from the reference rows themselves
(`column_rows`, `column_weight`); `literal_align` is DESIGN 5's Viterbi traceback (temperature 0)
spelled out on the same cells.
"""

from __future__ import annotations

import math
from functools import cache

CGAP_BIT = 0x10
PROTEIN_LETTERS = "ARNDCQEGHILKMFPSTWYV"


def cgap_bit(protein: bool) -> int:
    return 1 << 20 if protein else CGAP_BIT


@cache
def _blosum62():
    from Bio.Align import substitution_matrices

    return substitution_matrices.load("BLOSUM62")


def literal_mismatch(a: int, b: int, mismatch: int, near_mismatch: int | None, protein: bool = False) -> int:
    """M_ij of DESIGN 4: 0 if the read's states meet the edge's set, else near_mismatch if they
    meet its near states, else mismatch. near_mismatch None: Eq. 1 (= mismatch). DNA's near
    states: bit 5 + k of the element, the k-th state, in order, that the set lacks; protein's
    (DESIGN 3): the amino acids the set lacks that BLOSUM62 scores 0 or more against one of its."""
    n_states = 20 if protein else 4
    if a & ((1 << n_states) - 1) & b:
        return 0
    lacking = [state for state in range(n_states) if not a >> state & 1]
    if protein:
        have = [PROTEIN_LETTERS[state] for state in range(n_states) if a >> state & 1]
        near = [x for x in lacking if any(_blosum62()[PROTEIN_LETTERS[x]][y] >= 0 for y in have)]
    else:
        near = [state for k, state in enumerate(lacking) if a >> (5 + k) & 1]
    if near_mismatch is not None and any(b >> state & 1 for state in near):
        return near_mismatch
    return mismatch


def amino_acid(letter: str) -> str:
    """A reference letter as DESIGN 2 reads it for protein: upper case, U as C, O as K."""
    return {"U": "C", "O": "K"}.get(letter.upper(), letter.upper())


def literal_column_cost(column_rows: list[str], weight: float, i: int, b: int) -> int:
    """X(i, b) of DESIGN 3 spelled out: for each state s of read code b, the mean over the
    reference rows of 2 ** (BLOSUM62(s, the row's residue at column i) / 2) (U as C, O as K; a gap
    or an ambiguity code adds 1), P = 2 log2 of it; X is
    round(weight * (11 - P)), 11 being BLOSUM62's largest score, half to even (Python's round); the
    least over b's states."""
    return round(_least_cost(column_rows, weight, i, b, lambda odds: sum(odds) / len(odds)))


def _least_cost(column_rows: list[str], weight: float, i: int, b: int, mixture) -> float:
    """The least over read code b's states s of weight * (11 - 2 log2(mixture(odds))), odds
    each row's 2 ** (BLOSUM62(s, its residue at column i) / 2) (1 for a gap or an ambiguity code),
    not yet rounded."""
    letters = [amino_acid(row[i]) for row in column_rows]
    costs = []
    for s in range(20):
        if b >> s & 1:
            odds = [2 ** (_blosum62()[PROTEIN_LETTERS[s]][letter] / 2) if letter in PROTEIN_LETTERS else 1.0
                    for letter in letters]
            costs.append(weight * (11 - 2 * math.log2(mixture(odds))))
    return min(costs)


def literal_edge_column_cost(neighbours: dict[int, dict[int, float]], tips: list[int], edge: tuple[int, int],
                             column_rows: list[str], scale: float, weight: float, i: int, b: int) -> float:
    """X_e(i, b) of DESIGN 3 spelled out, path by path: the tree as `neighbours` (node -> {node:
    branch length}), `tips` the nodes of column_rows' rows in order, `edge` the pair of nodes it
    joins. For each tip the one path from the edge's midpoint: its walk share is 1/2 times
    1 / (branches onward) at every inner node it passes, its distance half the edge plus its
    branches; pi_t = share exp(-distance / scale) plus what all of those leave, over R; P the
    2 log2 of the pi-weighted odds (as literal_column_cost: a gap or an ambiguity code adds
    odds 1); the least over b's states of weight * (11 - P), not yet rounded (X rounds it
    half to even: the caller, which can then tell a rounding tie)."""
    a, c = edge
    keep = []
    for tip in tips:
        for start, away in ((a, c), (c, a)):  # the side of the edge the tip lies on
            path = _path(neighbours, start, away, tip)
            if path is not None:
                break
        share, distance = 0.5, neighbours[a][c] / 2
        for before, node in zip([away] + path, path):
            distance += neighbours[before][node] if before != away else 0.0
            if node != tip:
                share /= len(neighbours[node]) - 1
        keep.append(share * math.exp(-distance / scale))
    pi = [k + (1 - sum(keep)) / len(tips) for k in keep]
    return _least_cost(column_rows, weight, i, b, lambda odds: sum(p * o for p, o in zip(pi, odds)))


def _path(neighbours: dict[int, dict[int, float]], start: int, away: int, tip: int) -> list[int] | None:
    """The nodes from `start` to `tip` without passing `away` (start first), or None."""
    stack = [(start, away, [start])]
    while stack:
        node, came, path = stack.pop()
        if node == tip:
            return path
        stack.extend((nxt, node, path + [nxt]) for nxt in neighbours[node] if nxt != came)
    return None


def literal_score(read: list[int], profile: list[int], mismatch: int, cgap: int, gap_open: int,
                  gap_extend: int, insertion: int, near_mismatch: int | None = None, protein: bool = False,
                  column_rows: list[str] | None = None, column_weight: float = 0.0) -> float:
    return literal_cells(read, profile, mismatch, cgap, gap_open, gap_extend, insertion, near_mismatch, protein,
                         column_rows, column_weight)[0]


def literal_cells(read: list[int], profile: list[int], mismatch: int, cgap: int, gap_open: int,
                  gap_extend: int, insertion: int, near_mismatch: int | None = None, protein: bool = False,
                  column_rows: list[str] | None = None, column_weight: float = 0.0):
    """(score, S, D, s, d, mm_cg, oe): the score, the cell dictionaries, the boundary-aware
    accessors, the per-cell M_ij + CG_i (+ X_ij) and per-column OE_i, for `literal_align`."""
    n, m = len(read), len(profile)
    assert 0 < n < m
    gap_bit = cgap_bit(protein)
    S: dict[tuple[int, int], float] = {}
    D: dict[tuple[int, int], float] = {}

    def in_band(i: int, j: int) -> bool:  # DESIGN 4's band
        return j <= i <= j + m - n

    def s(i: int, j: int) -> float:
        if j == -1:
            return 0 if -1 <= i <= m - n - 1 else math.inf
        if not in_band(i, j):
            return math.inf
        return S[i, j]

    def d(i: int, j: int) -> float:
        if not in_band(i, j):
            return math.inf
        return D[i, j]

    def mm_cg(i: int, j: int) -> int:
        a = profile[i]
        column_cost = literal_column_cost(column_rows, column_weight, i, read[j]) if column_weight else 0
        return (literal_mismatch(a, read[j], mismatch, near_mismatch, protein)
                + (cgap if a & gap_bit else 0) + column_cost)

    def oe(i: int) -> int:
        return 0 if profile[i] & gap_bit else gap_open + gap_extend

    for j in range(n):
        for i in range(j, j + m - n + 1):
            e = 0 if profile[i] & gap_bit else gap_extend
            D[i, j] = min(s(i - 1, j) + oe(i), d(i - 1, j) + e)
            S[i, j] = min(s(i - 1, j - 1) + mm_cg(i, j), D[i, j], s(i, j - 1) + insertion)
    score = min(value for (i, j), value in S.items() if j == n - 1)
    return score, S, D, s, d, mm_cg, oe


def literal_align(read: list[int], profile: list[int], *penalties, protein: bool = False,
                  column_rows: list[str] | None = None, column_weight: float = 0.0) -> tuple[float, int, str]:
    """(score, start column, CIGAR) by DESIGN 5 spelled out on `literal_cells`: the smallest end
    column reaching the score; walking back, the diagonal before D before I; inside D, an
    opening before an extension."""
    n = len(read)
    score, S, D, s, _, mm_cg, oe = literal_cells(
        read, profile, *penalties, protein=protein, column_rows=column_rows,
        column_weight=column_weight)
    i = min(i for (i, j), value in S.items() if j == n - 1 and value == score)
    j, ops, in_d = n - 1, [], False
    while j >= 0:
        if in_d:
            ops.append("D")
            in_d = D[i, j] != s(i - 1, j) + oe(i)
            i -= 1
        elif S[i, j] == s(i - 1, j - 1) + mm_cg(i, j):
            ops.append("M")
            i, j = i - 1, j - 1
        elif S[i, j] == D[i, j]:
            in_d = True
        else:
            ops.append("I")
            j -= 1
    ops.reverse()
    cigar, run = "", 1
    for k in range(1, len(ops) + 1):
        if k < len(ops) and ops[k] == ops[k - 1]:
            run += 1
        else:
            cigar += f"{run}{ops[k - 1]}"
            run = 1
    return score, i + 1, cigar


def rescore_cigar(read: list[int], profile: list[int], start: int, cigar: list[tuple[int, str]],
                  mismatch: int, cgap: int, gap_open: int, gap_extend: int, insertion: int,
                  near_mismatch: int | None = None) -> int:
    """Cost of an explicit alignment path under DESIGN 4 (a D run opens once, then extends)."""
    total, column, position, previous = 0, start, 0, None
    for length, op in cigar:
        for _ in range(length):
            if op == "M":
                a = profile[column]
                total += literal_mismatch(a, read[position], mismatch, near_mismatch) + (cgap if a & CGAP_BIT else 0)
                column += 1
                position += 1
            elif op == "D":
                if not profile[column] & CGAP_BIT:
                    total += gap_extend if previous == "D" else gap_open + gap_extend
                column += 1
            else:
                total += insertion
                position += 1
            previous = op
    assert position == len(read), "CIGAR does not consume the whole read"
    return total
