"""The maximum expected accuracy (MEA) alignment of one read from its pooled column posteriors
(DESIGN 5; model/posterior.py pools them), in the same integers on every device: the GPU's
posterior_mea (kernels/posterior.cl) follows `mea` and its tie rule step for step.

`mea` takes, among the assignments of each residue to a column or to none (inserted), with
the placed columns strictly increasing, at least one residue placed and no residue but the first
in column 0, one maximising the sum of the chosen states' pooled posteriors; every such
assignment is a path (insertions and deletions fit between any two placed residues, and inserted
residues before the first placed one follow a column before it). Ties: see `mea`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from papara_py.io.paths import INSERTED
from papara_py.model.fixed_point import PROB_ONE

#: Stand-in for minus infinity in the MEA's int64 sums (far below any sum of n posteriors).
NEG64 = -(np.int64(1) << 40)


@njit(cache=True, nogil=True)
def insert_posteriors(pooled, out):
    """out[j] = max(0, PROB_ONE - sum over the columns of pooled[j]): residue j's insert posterior."""
    for j in range(pooled.shape[0]):
        total = 0
        for i in range(pooled.shape[1]):
            total += pooled[j, i]
        out[j] = max(0, PROB_ONE - total)


@njit(cache=True, nogil=True)
def mea(pooled, R, ins, columns, pp):
    """The pooled MEA alignment of one read (module docstring): pooled int32 [n, m] (M
    posteriors by column, PROB_ONE units); R int64 work space [n, m + 1]; ins int64 work space
    [n]. Writes each residue's column (INSERTED: none) to columns and its chosen state's
    posterior to pp; returns the sum of pp (the objective).

    R(j, i) is the best sum for residues 0..j with at least one placed and every placed column
    <= i, stored at R[j, i + 1], i in [-1, m): R(j, -1) = minus infinity.

    Ties (deterministic, every device the same): residues are decided from the last to the
    first. Each takes the smallest column bound c (every placed column among it and the residues
    before it <= c, c no more than the next placed residue's column - 1) that still reaches the
    optimum; there it is placed in column c if that reaches the optimum, else inserted (placed
    before inserted). Where a placed residue's optimum is reached both with and without a placed
    residue before it, the residues before it get one (placed before all inserted)."""
    n, m = pooled.shape
    insert_posteriors(pooled, ins)
    none = 0  # the sum of ins over residues 0..j-1 (all of them inserted)
    for j in range(n):
        R[j, 0] = NEG64  # R(j, -1): nothing can be placed at or before column -1
        for i in range(m):
            if j == 0:
                placed = NEG64
                up = NEG64
                alone = none  # residue 0 placed first: nothing before it
            else:
                placed = R[j - 1, i]  # R(j-1, i-1)
                up = R[j - 1, i + 1] + ins[j]  # R(j-1, i), residue j inserted
                alone = none if i > 0 else NEG64  # the residues before inserted: not before column 0
            best = pooled[j, i] + max(placed, alone)
            v = R[j, i]
            if best > v:
                v = best
            if up > v:
                v = up
            R[j, i + 1] = v
        none += ins[j]
    objective = R[n - 1, m]
    # walk back; `none` is the sum of ins over residues 0..j-1 at every step
    j = n - 1
    c = m  # R's index of the bound: column m - 1
    none -= ins[n - 1]
    while j >= 0:
        v = R[j, c]
        while c > 1 and R[j, c - 1] == v:  # (R(j, -1) at index 0 never reaches the optimum)
            c -= 1
        i = c - 1
        placed = R[j - 1, i] if j > 0 else NEG64
        alone = none if j == 0 or i > 0 else NEG64
        if pooled[j, i] + max(placed, alone) == v:
            columns[j] = i
            pp[j] = pooled[j, i]
            if j > 0 and placed >= alone:
                j -= 1
                none -= ins[j]
                c = i  # R(j-1, i-1)
            else:
                for t in range(j):
                    columns[t] = INSERTED
                    pp[t] = ins[t]
                break
        else:
            columns[j] = INSERTED
            pp[j] = ins[j]
            j -= 1
            if j >= 0:
                none -= ins[j]
            c = i + 1  # R(j-1, i)
    return objective


def mea_alignment(pooled: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """`mea` of pooled posteriors int32 [n, m] by column: (columns int32 [n], pp int64 [n], objective)."""
    pooled = np.ascontiguousarray(pooled, np.int32)
    n, m = pooled.shape
    columns = np.empty(n, np.int32)
    pp = np.empty(n, np.int64)
    objective = mea(pooled, np.empty((n, m + 1), np.int64), np.empty(n, np.int64), columns, pp)
    return columns, pp, int(objective)
