"""Float64 references for the posterior step (papara_py/model/posterior.py), kept in the tests.

They share no code with papara_py: a read's costs come from literal_dp (DESIGN 4 spelled out:
M_ij + CG_i + X_ij, OE_i; E_i, insertion), and
- `paths` enumerates every path of the model's DAG (DESIGN 5) from its
  definition: a start, M / D / I steps, an end;
- `brute_force` sums over them (log-sum-exp in float64): Z and M's exact posteriors;
- `reference_posteriors` runs the same recurrences as the kernels, in float64 with plain loops;
- `brute_mea` tries every residue -> column assignment.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from literal_dp import literal_cells


@dataclass
class Costs:
    """One read against one edge: n, m, cm[(i, j)] (M's step into (i, j)), oe[i], e[i], ins."""

    n: int
    m: int
    cm: dict
    oe: list
    e: list
    ins: int

    def inside(self, i: int, j: int) -> bool:
        """A cell of the rectangle (every column of every row)."""
        return 0 <= j < self.n and 0 <= i < self.m


def literal_costs(read, profile, penalties, protein=False, column_rows=None, column_weight=0.0) -> Costs:
    """The step costs of DESIGN 4 for a read (state sets) against a profile (elements), by literal_dp."""
    mismatch, cgap, gap_open, gap_extend, insertion, near_mismatch = penalties
    _, _, _, _, _, mm_cg, oe = literal_cells(read, profile, mismatch, cgap, gap_open, gap_extend, insertion,
                                                near_mismatch, protein, column_rows, column_weight)
    n, m = len(read), len(profile)
    gap_bit = 1 << 20 if protein else 0x10
    cm = {(i, j): mm_cg(i, j) for j in range(n) for i in range(m)}
    return Costs(n, m, cm, [oe(i) for i in range(m)], [0 if profile[i] & gap_bit else gap_extend for i in range(m)],
                 insertion)


def paths(c: Costs):
    """Every path: (energy, [(state, i, j), ...]) with state 'M', 'D' or 'I'. A path starts at
    M(i, 0) or I(i, 0), any column i (from the boundary row: S(i-1, -1) = S(i, -1) = 0); from any
    state it goes to M(i+1, j+1) (cm), to D(i+1, j) (OE from M or I, E from D: D never opens from
    D), to I(i, j+1) (ins), each inside the rectangle; it may end at any state of the last row."""
    out = []

    def walk(state, i, j, energy, trail):
        trail = trail + [(state, i, j)]
        if j == c.n - 1:
            out.append((energy, trail))
        if c.inside(i + 1, j + 1):
            walk("M", i + 1, j + 1, energy + c.cm[i + 1, j + 1], trail)
        if c.inside(i + 1, j):
            walk("D", i + 1, j, energy + (c.e[i + 1] if state == "D" else c.oe[i + 1]), trail)
        if c.inside(i, j + 1):
            walk("I", i, j + 1, energy + c.ins, trail)

    for i in range(c.m):
        walk("M", i, 0, c.cm[i, 0], [])
        walk("I", i, 0, c.ins, [])
    return out


def logsumexp_min(values, T):
    """-T ln sum exp(-v / T) (the softmin of many), stable; min at T = 0."""
    values = [v for v in values if v != math.inf]
    if not values:
        return math.inf
    low = min(values)
    if T == 0:
        return low
    return low - T * math.log(sum(math.exp(-(v - low) / T) for v in values))


def brute_force(c: Costs, T: float):
    """(Z, posteriors {(i, j): P(M at (i, j))}, per-residue insert posteriors) over every path."""
    every = paths(c)
    if T == 0:
        return min(energy for energy, _ in every), None, None
    z = logsumexp_min([energy for energy, _ in every], T)
    post = {key: 0.0 for key in c.cm}
    inserted = [0.0] * c.n
    for energy, trail in every:
        weight = math.exp(-(energy - z) / T)
        for state, i, j in trail:
            if state == "M":
                post[i, j] += weight
            elif state == "I":
                inserted[j] += weight
    return z, post, inserted


def reference_posteriors(c: Costs, T: float):
    """The kernels' recurrences (posterior.py's docstring) in float64 with plain loops: (Z, M's
    posteriors {(i, j): P}). Cells outside the rectangle, and M at column 0 after the first row, are
    +inf."""
    inf = math.inf
    n, m = c.n, c.m
    FM, FD, FI = {}, {}, {}

    def get(table, i, j):
        return table.get((i, j), inf)

    def smin(*values):
        return logsumexp_min(list(values), T)

    for j in range(n):
        for i in range(m):
            if j == 0:
                FM[i, j] = c.cm[i, j]  # the boundary row, 0
                FI[i, j] = c.ins
            else:
                above = smin(get(FM, i - 1, j - 1), get(FD, i - 1, j - 1), get(FI, i - 1, j - 1))
                FM[i, j] = c.cm[i, j] + above
                FI[i, j] = c.ins + smin(get(FM, i, j - 1), get(FD, i, j - 1), get(FI, i, j - 1))
            FD[i, j] = smin(smin(get(FM, i - 1, j), get(FI, i - 1, j)) + c.oe[i] if i >= 1 else inf,
                            get(FD, i - 1, j) + (c.e[i] if i >= 1 else 0))
    z = smin(*[smin(FM[i, n - 1], FD[i, n - 1], FI[i, n - 1]) for i in range(m)])
    B, BD = {}, {}
    for j in range(n - 1, -1, -1):
        for i in range(m - 1, -1, -1):
            on = []
            if j == n - 1:
                on.append(0.0)
            if c.inside(i + 1, j + 1):
                on.append(c.cm[i + 1, j + 1] + B[i + 1, j + 1])
            if c.inside(i, j + 1):
                on.append(c.ins + B[i, j + 1])
            right = c.inside(i + 1, j)
            B[i, j] = smin(*on, c.oe[i + 1] + BD[i + 1, j] if right else inf)
            BD[i, j] = smin(*on, c.e[i + 1] + BD[i + 1, j] if right else inf)
    if T == 0:
        return z, None
    post = {key: math.exp(-(FM[key] + B[key] - z) / T) if FM[key] < inf else 0.0 for key in c.cm}
    return z, post


def valid_assignments(n: int, m: int):
    """Every assignment of residues to columns (None: inserted), placed columns strictly
    increasing, at least one placed, no residue but the first in column 0."""
    choices = [[None] + list(range(0 if j == 0 else 1, m)) for j in range(n)]
    for assignment in itertools.product(*choices):
        placed = [a for a in assignment if a is not None]
        if placed and all(x < y for x, y in zip(placed, placed[1:])):
            yield assignment


def brute_mea(pooled, one: int):
    """(best objective, the assignment the tie rule picks) over every valid assignment; pooled:
    [n][m] integers (M posteriors by column), the insert posterior max(0, one - row sum). The tie rule
    (posterior.mea), as a key: the lexicographically least, from the last residue to the first,
    of (the largest placed column among residues 0..j, or +inf where none is placed; 0 if
    residue j is placed, 1 if inserted)."""
    n, m = len(pooled), len(pooled[0])
    ins = [max(0, one - sum(row)) for row in pooled]
    best, chosen = None, None
    for assignment in valid_assignments(n, m):
        value = sum(ins[j] if a is None else pooled[j][a] for j, a in enumerate(assignment))
        key = []
        for j in range(n - 1, -1, -1):
            placed = [a for a in assignment[:j + 1] if a is not None]
            key.append((max(placed) if placed else math.inf, 0 if assignment[j] is not None else 1))
        if best is None or value > best or (value == best and key < chosen[0]):
            best, chosen = value, (key, assignment)
    return best, chosen[1]
