"""Hypothesis cases shared by the posterior tests of the CPU (model/test_posterior.py) and of the
device (engine/test_gpu_posterior.py): the pooled posteriors whose MEA the tie rule decides."""

from __future__ import annotations

from hypothesis import example
from hypothesis import strategies as st

from papara_py.model.fixed_point import PROB_ONE


def example_each(values):
    """hypothesis @example for each of `values` (the test's one argument)."""
    def decorate(test):
        for value in values:
            test = example(value)(test)
        return test
    return decorate


@st.composite
def pooled_matrices(draw):
    """Integer pooled posteriors of n <= 5 residues over m <= 5 columns, from a few values so ties abound."""
    n = draw(st.integers(1, 5))
    m = draw(st.integers(2, 5))
    # zeros and halves often: a residue half placed and half inserted ties the two (TIES below)
    value = st.sampled_from([0, 0, 0, 1, 2, 3, PROB_ONE // 4, PROB_ONE // 2, PROB_ONE // 2])
    rows = []
    for _ in range(n):
        row = draw(st.lists(value, min_size=m, max_size=m))
        while sum(row) > PROB_ONE:
            row[row.index(max(row))] = 0
        rows.append(row)
    return rows


HALF = PROB_ONE // 2
#: Pooled posteriors (by column) whose MEA is decided by the tie rule: residue 0 half placed in
#: column 0 and half inserted (placed before none), equal posteriors everywhere (the smallest
#: columns), a residue placed or inserted at equal posteriors (placed before inserted), nothing
#: placed; and a residue after the first with all its weight in column 0, where it cannot sit.
TIES = ([[HALF, 0], [0, PROB_ONE]], [[HALF, 0, 0], [0, 0, PROB_ONE]], [[HALF, HALF], [HALF, HALF]],
        [[0, HALF], [HALF, 0], [0, HALF]], [[0, 0], [0, 0]], [[HALF, 0, 0], [0, HALF, 0], [0, 0, HALF]],
        [[0, 0, 0], [PROB_ONE, 0, 0]])
