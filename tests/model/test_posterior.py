"""The posterior step (papara_py/model/posterior.py, fixed_point.py) against brute force.

tests/posterior_reference.py enumerates every path of the model's DAG (its costs from
literal_dp, DESIGN 4 spelled out) and sums them in float64; it also runs the recurrences in
float64 with plain loops. The fixed-point kernels must agree with it within what the rounding of
their tables allows (`tolerance`), equal the cheapest path (never above Eq. 1's score) at T = 0,
and pick the MEA that trying every assignment finds.

Tolerance, from the scale S. A fixed-point softmin of inputs with errors e_a, e_b (fixed-point
units) errs by at most max(|e_a|, |e_b|) + 1/2 (softmin is 1-Lipschitz in the max norm and its
table entries are rounded to the nearest unit); integer costs add none. A Forward value is at
most 2 softmins per row and 2 per column from the boundary, Z m - 1 more, the Backward alike:
each errs by at most EPS = (3 (n + m) + m) / 2 units (a little more than that count). A
posterior's exponent F + B - Z then errs by at most 3 EPS / S cost units, so the posterior by a
factor of at most exp(3 EPS / (S T)), plus one PROB_ONE unit for the probability table's
rounding and the pooling's floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from posterior_cases import TIES, example_each, pooled_matrices
from posterior_reference import (
    brute_force,
    brute_mea,
    literal_costs,
    paths,
    reference_posteriors,
)

from papara_py.model.column_costs import column_costs, cost_codes, kernel_costs
from papara_py.model.fixed_point import (
    PROB_ONE,
    SENTINEL,
    PosteriorTables,
    check_fixed_point,
    energy_bounds,
    probability_table,
    softmin_table,
)
from papara_py.model.mea import mea_alignment
from papara_py.model.params import ScoringParams
from papara_py.model.posterior import (
    INSERTED,
    SIGN,
    decode_batch,
    diagonal_energy,
    edge_posteriors,
    forward_energy,
)
from papara_py.model.pp_code import pp_digits, pp_string
from papara_py.model.reference_scorer import diagonal_cost, profile_near, score_one
from papara_py.phylo.encoding import DNA, PROTEIN, near_states


def examples(count: int):
    """Hypothesis settings for `count` examples, no deadline (the first call compiles numba)."""
    return settings(max_examples=count, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Case:
    """One read against one or more edge profiles, with everything both sides need."""

    read: list
    profiles: list
    penalties: list
    protein: bool
    rows: list | None
    weight: float
    temperature: float
    scale: int

    @property
    def dtype(self):
        return np.uint32 if self.protein else np.uint8

    @property
    def read_array(self):
        return np.array(self.read, self.dtype)

    def profile_array(self, e=0):
        return np.array(self.profiles[e], self.dtype)

    @property
    def costs(self):
        if not self.rows:
            return None
        return column_costs(np.array([list(row.encode()) for row in self.rows], np.uint8), PROTEIN, self.weight)

    @property
    def p(self):
        return np.array(self.penalties, np.int64)

    def literal(self, e=0):
        return literal_costs(self.read, self.profiles[e], self.penalties, self.protein, self.rows,
                             self.weight)

    @property
    def tables(self):
        return PosteriorTables.build(self.temperature, self.scale)


@st.composite
def cases(draw, max_m=8, max_n=5, edges=1, temperatures=(0.25, 0.5, 1.0, 2.0, 5.0), scales=(64, 1024, 4096)):
    """DNA (near-state fields, CGAP runs) or protein (similar residues, column profile
    costs) reads of 1..max_n residues against edges profiles of m <= max_m columns;
    small penalties (posteriors spread over many paths), sometimes a large one."""
    protein = draw(st.booleans())
    m = draw(st.integers(2, max_m))
    n = draw(st.integers(1, min(max_n, m - 1)))
    rows = None
    weight = 0.0
    if protein:
        residue = st.one_of(st.integers(0, 19).map(lambda k: 1 << k), st.integers(1, (1 << 20) - 1))
        profiles = [[a | (1 << 20 if gap else 0) for a, gap in zip(
            draw(st.lists(residue, min_size=m, max_size=m)),
            draw(st.lists(st.booleans(), min_size=m, max_size=m)))] for _ in range(edges)]
        if draw(st.booleans()):
            codes = cost_codes(PROTEIN).tolist()
            read = [draw(st.sampled_from(codes)) for _ in range(n)]
            rows = draw(st.lists(st.text(st.sampled_from("ARNDCQEGHILKMFPSTWYVBXZ-"), min_size=m, max_size=m),
                                 min_size=1, max_size=4))
            weight = draw(st.sampled_from([0.25, 0.5, 1.0]))
        else:
            read = draw(st.lists(residue, min_size=n, max_size=n))
    else:
        profiles = [[nibble | (0x10 if gap else 0) | (near << 5) for nibble, gap, near in zip(
            draw(st.lists(st.integers(1, 15), min_size=m, max_size=m)),
            draw(st.lists(st.booleans(), min_size=m, max_size=m)),
            draw(st.lists(st.integers(0, 7), min_size=m, max_size=m)))] for _ in range(edges)]
        read = draw(st.lists(st.integers(1, 15), min_size=n, max_size=n))
    small = st.integers(0, 6)
    values = [draw(st.one_of(small, small, small, st.just(40))) for _ in range(5)]
    penalties = values + [draw(st.integers(0, values[0]))]
    return Case(read, profiles, penalties, protein, rows, weight, draw(st.sampled_from(temperatures)),
                draw(st.sampled_from(scales)))


def eps_units(n: int, m: int) -> float:
    """The module docstring's bound on one Forward / Backward / Z value's error, fixed-point units."""
    return (3 * (n + m) + m) / 2


def posterior_tolerance(exact: float, n: int, m: int, tables: PosteriorTables, terms: int = 1) -> float:
    """The module docstring's bound on |fixed - exact| for a posterior (terms: how many floored
    PROB_ONE units may add up)."""
    factor = math.exp(3 * eps_units(n, m) / (tables.scale * tables.temperature))
    return min(1.0, exact) * (factor - 1) + terms / PROB_ONE + 1e-12


# ---------------------------------------------------------------- the references themselves

@pytest.mark.slow
@examples(100)
@given(cases())
def test_float_reference_equals_brute_force(case):
    """The float64 recurrences (plain loops) equal the sum over every path to 1e-9, and each
    residue's M posteriors and insert posterior sum to 1."""
    c = case.literal()
    T = case.temperature
    z, post, inserted = brute_force(c, T)
    z_ref, post_ref = reference_posteriors(c, T)
    assert z_ref == pytest.approx(z, abs=1e-9)
    for key, value in post.items():
        assert post_ref[key] == pytest.approx(value, abs=1e-9)
    for j in range(c.n):
        total = sum(v for (i, jj), v in post.items() if jj == j) + inserted[j]
        assert total == pytest.approx(1.0, abs=1e-9)


def test_path_enumeration_counts_a_small_rectangle_by_hand():
    """Read of 1 residue, 2 columns: starts M(0), M(1), I(0), I(1) (row 0 is the last, so each
    may end there); M(0) and I(0) go on to D(1): 6 paths."""
    c = literal_costs([1], [1, 2], [3, 3, 3, 1, 3, 3])
    got = sorted("".join(state for state, _, _ in trail) for _, trail in paths(c))
    assert got == ["I", "I", "ID", "M", "M", "MD"]
    energies = sorted(energy for energy, _ in paths(c))
    # M(0) 0; M(1) mismatch 3; M(0)D(1) 0 + OE 4; I(0) 3; I(1) 3; I(0)D(1) 3 + 4
    assert energies == [0, 3, 3, 3, 4, 7]


def test_paths_outside_the_band_are_counted():
    """2 residues, 3 columns, the last column the only match and insertions cheap: the band
    (i - j in [0, 1]) cannot put residue 0 in column 2; the rectangle can, residue 1 inserted
    after it, and that path is the cheapest, below Eq. 1's score."""
    c = literal_costs([1, 1], [2, 2, 1], [5, 0, 5, 5, 1, 5])
    energies = {"".join(state for state, _, _ in trail): energy for energy, trail in paths(c)
                if [cell[1:] for cell in trail] == [(2, 0), (2, 1)]}
    assert energies == {"MI": 1, "II": 2}  # M(2, 0) matches (0); each insertion costs 1
    eq1 = score_one(np.array([1, 1], np.uint8), np.array([2, 2, 1], np.uint8), np.zeros(3, np.uint8),
                    np.array([5, 0, 5, 5, 1, 5], np.int64), None)
    assert min(energy for energy, _ in paths(c)) == 1 < eq1


# ---------------------------------------------------------------- fixed point against exact

@pytest.mark.slow
@examples(120)
@given(cases())
def test_fixed_point_forward_and_posteriors_equal_brute_force_within_rounding(case):
    c = case.literal()
    tables = case.tables
    z, post, inserted = brute_force(c, case.temperature)
    z_fixed, F = forward_energy(case.read_array, case.profile_array(), case.p, tables, case.costs)
    assert abs(z_fixed / tables.scale - z) <= eps_units(c.n, c.m) / tables.scale
    z_again, P = edge_posteriors(case.read_array, case.profile_array(), case.p, tables, case.costs)
    assert z_again == z_fixed
    for (i, j), exact in post.items():
        assert abs(P[j, i] / PROB_ONE - exact) <= posterior_tolerance(exact, c.n, c.m, tables)
    for j in range(c.n):  # M posteriors and insert sum to 1 within rounding
        placed = P[j].sum() / PROB_ONE
        exact_placed = 1.0 - inserted[j]
        assert abs(placed - exact_placed) <= posterior_tolerance(exact_placed, c.n, c.m, tables, terms=c.m)


@pytest.mark.slow
@examples(200)
@given(cases(max_m=24, max_n=23, temperatures=(0,), scales=(1, 1024)))
def test_min_plus_forward_is_the_cheapest_path_and_at_most_eq_1(case):
    """T = 0: the softmin table is empty, (+) is min, and the Forward's Z is the cheapest path's
    energy over the rectangle (the float64 recurrences at T = 0) times the scale, bit for bit; it
    is never above Eq. 1's score (reference_scorer.score_one), whose paths are the band's."""
    tables = case.tables
    profile = case.profile_array()
    near = profile_near(profile[None, :])[0]
    eq1 = score_one(case.read_array, profile, near, case.p, kernel_costs(case.costs))
    z, _ = forward_energy(case.read_array, profile, case.p, tables, case.costs)
    cheapest, _ = reference_posteriors(case.literal(), 0)
    assert z == cheapest * tables.scale
    assert z <= eq1 * tables.scale


@pytest.mark.slow
@examples(60)
@given(cases())
def test_energies_stay_within_the_checked_bounds(case):
    """energy_bounds holds for every stored Forward energy and Z (check_fixed_point relies on it)."""
    tables = case.tables
    costs = case.costs
    upper, lower = energy_bounds(case.p, 0 if costs is None else costs.largest, len(case.read),
                                 len(case.profiles[0]), case.temperature)
    z, F = forward_energy(case.read_array, case.profile_array(), case.p, tables, costs)
    assert np.all(F[1:, 0] >= SENTINEL)  # M at column 0 after the first row: the sentinel's sum
    F = np.concatenate((F[:, 1:].ravel(), F[:1, 0]))
    assert -lower * tables.scale <= F.min() and F.max() <= upper * tables.scale
    assert -lower * tables.scale <= z <= upper * tables.scale


@pytest.mark.slow
def test_diagonal_energy_is_diagonal_cost_shifted():
    """The kernels' branch-free cM equals reference_scorer.diagonal_cost << shift: every DNA
    element (near-state field and CGAP bit included) and read code, and random protein sets
    with column costs."""
    p = np.array([7, 2, 3, 1, 5, 3], np.int64)
    shift = 10
    elements = np.arange(256, dtype=np.uint8)
    near = near_states(elements, DNA)
    for a, near_a in zip(elements, near):
        for b in range(1, 16):
            b = np.uint8(b)
            expected = diagonal_cost(a, near_a, b, DNA.state_mask, p, None, 0, 0) << shift
            assert diagonal_energy(a, near_a, b, DNA.state_mask, p[0] << shift, p[5] << shift, None, 0, 0, shift,
                                   SIGN) == expected
    rng = np.random.default_rng(5)
    rows = np.array([list(b"ARNDCQEGHILKMFPSTWYV"), list(b"-RNDCQEGHBLKXFPSTWYV")], np.uint8)
    costs = kernel_costs(column_costs(rows, PROTEIN, 1.0))
    profile = (rng.integers(1, 1 << 20, 20) | (rng.random(20) < 0.3) << 20).astype(np.uint32)
    near = near_states(profile, PROTEIN)
    for i in range(20):
        for row, b in enumerate(costs[1]):
            expected = diagonal_cost(profile[i], near[i], b, PROTEIN.state_mask, p, costs, row, i) << shift
            assert diagonal_energy(profile[i], near[i], b, PROTEIN.state_mask, p[0] << shift, p[5] << shift, costs, row,
                                   i, shift, SIGN) == expected


# ---------------------------------------------------------------- weights, pooling, MEA, batch

def batch_of(case_list):
    """decode_batch's inputs for reads each against their own profiles (stacked, padded to one m)."""
    m = max(len(p) for case in case_list for p in case.profiles)
    dtype = case_list[0].dtype
    profiles, slots = [], []
    for case in case_list:
        row = []
        for profile in case.profiles:
            row.append(len(profiles))
            profiles.append(profile + [profile[-1]] * (m - len(profile)))
        slots.append(row)
    codes = np.concatenate([case.read_array for case in case_list])
    offsets = np.concatenate(([0], np.cumsum([len(case.read) for case in case_list]))).astype(np.int64)
    return codes, offsets, np.array(slots, np.int64), np.array(profiles, dtype)


def assert_brute_mea_of(pooled: np.ndarray, columns: np.ndarray, pp: np.ndarray, accuracy: float) -> None:
    """`columns`, `pp` and `accuracy` are the MEA alignment brute force picks from the pooled
    posteriors `pooled` (n x m, PROB_ONE units; a residue's insertion posterior is what its row
    leaves of PROB_ONE)."""
    best, assignment = brute_mea(pooled.tolist(), PROB_ONE)
    assert columns.tolist() == [INSERTED if a is None else a for a in assignment]
    ins = np.maximum(0, PROB_ONE - pooled.sum(axis=1))
    assert pp.tolist() == [int(ins[j]) if a is None else int(pooled[j, a]) for j, a in enumerate(assignment)]
    assert accuracy == pytest.approx(best / (len(pooled) * PROB_ONE))


@pytest.mark.slow
@examples(60)
@given(cases(edges=3, max_m=7, max_n=4), st.lists(st.booleans(), min_size=3, max_size=3), st.sampled_from([1.0, 4.0]))
def test_decode_read_weights_pooling_and_mea_equal_brute_force(case, empty, spread):
    """One read with up to three candidate edges (some slots empty): the weights against
    exp(-Z_e/T_p) normalised (exact Z at T; T_p = T or 4 T, the placement temperature), summing
    to PROB_ONE within the floor; the pooled posteriors against the exact pool; the MEA and its
    pp exactly as brute force picks them from the fixed-point pool (rebuilt from edge_posteriors
    at decode's weights)."""
    assume(not all(empty))
    placement = spread * case.temperature
    tables = PosteriorTables.build(case.temperature, case.scale, placement_temperature=placement)
    codes, offsets, slots, profiles = batch_of([case])
    slots[0, np.array(empty)] = -1
    columns, pp, weights, accuracy = decode_batch(codes, offsets, slots, None, profiles, None, case.p, case.costs,
                                                  tables)
    used = [e for e in range(3) if not empty[e]]
    assert weights[0, np.array(empty)].tolist() == [0] * sum(empty)
    assert PROB_ONE - len(used) <= weights[0].sum() <= PROB_ONE
    exact = [brute_force(case.literal(e), case.temperature) for e in used]
    zs = np.array([z for z, _, _ in exact])
    w_exact = np.exp(-(zs - zs.min()) / placement)
    w_exact /= w_exact.sum()
    n, m = len(case.read), len(case.profiles[0])
    for e, w in zip(used, w_exact):
        # Z_e - Z_min errs by at most 2 EPS: the weight by that factor, and floor and table units
        factor = math.exp(2 * eps_units(n, m) / (tables.scale * placement))
        assert abs(weights[0, e] / PROB_ONE - w) <= w * (factor ** 2 - 1) + 3 / PROB_ONE
    pooled = np.zeros((n, m), np.int64)
    for e in used:
        if weights[0, e]:
            pooled += edge_posteriors(case.read_array, case.profile_array(e), case.p, tables, case.costs,
                                      weight=int(weights[0, e]))[1]
    pooled_exact = sum(w * np.array([[post[i, j] for i in range(m)] for j in range(n)])
                       for w, (_, post, _) in zip(w_exact, exact))
    factor = math.exp(5 * eps_units(n, m) / (tables.scale * tables.temperature))
    assert np.all(np.abs(pooled / PROB_ONE - pooled_exact) <= pooled_exact * (factor - 1) + (len(used) + 3) / PROB_ONE)
    assert_brute_mea_of(pooled, columns, pp, accuracy[0])


@pytest.mark.slow
@examples(60)
@given(cases(edges=3, max_m=7, max_n=4),
       st.lists(st.lists(st.text(st.sampled_from("ARNDCQEGHILKMFPSTWYVBXZ-"), min_size=7, max_size=7), min_size=1,
                         max_size=4), min_size=3, max_size=3))
def test_each_edge_own_costs_set_its_posteriors_and_the_shared_costs_the_weights(case, own_rows):
    """With each edge's own column costs (edge_emission.py), a read's weights are those of the
    shared costs' Forward (as without them), and its pool is each weighted edge's posteriors
    under its own costs (edge_posteriors, checked against brute force above), so the MEA and pp
    are what brute force picks from that pool."""
    assume(case.costs is not None)
    tables = case.tables
    codes, offsets, slots, profiles = batch_of([case])
    n, m = len(case.read), len(case.profiles[0])
    own = [column_costs(np.array([list(row[:m].encode()) for row in rows], np.uint8), PROTEIN, case.weight)
           for rows in own_rows]
    local = np.stack([costs.table for costs in own])
    shared = decode_batch(codes, offsets, slots, None, profiles, None, case.p, case.costs, tables)
    columns, pp, weights, accuracy = decode_batch(codes, offsets, slots, None, profiles, None, case.p, case.costs,
                                                  tables, local=local)
    np.testing.assert_array_equal(weights, shared[2])
    pooled = np.zeros((n, m), np.int64)
    for e in range(3):
        if weights[0, e]:
            pooled += edge_posteriors(case.read_array, case.profile_array(e), case.p, tables, own[e],
                                      weight=int(weights[0, e]))[1]
    assert_brute_mea_of(pooled, columns, pp, accuracy[0])


@pytest.mark.slow
@examples(400)
@given(pooled_matrices())
@example_each(TIES)
def test_mea_equals_every_assignment_tried_ties_included(pooled):
    """The MEA's objective is the best over every valid assignment and its columns are the one
    the stated tie rule picks (posterior_reference.brute_mea)."""
    columns, pp, objective = mea_alignment(np.array(pooled, np.int32))
    best, assignment = brute_mea(pooled, PROB_ONE)
    assert objective == best == int(pp.sum())
    assert columns.tolist() == [INSERTED if a is None else a for a in assignment]
    placed = [c for c in columns.tolist() if c != INSERTED]
    assert placed and placed == sorted(set(placed))


def test_mea_tie_rule_examples():
    # two residues, equal posteriors everywhere: the smallest columns, both placed
    columns, _, _ = mea_alignment(np.full((2, 3), PROB_ONE // 3, np.int32))
    assert columns.tolist() == [0, 1]
    # nothing placed has any weight: at least one placed anyway, the first residue at column 0
    # (residues last to first, each the smallest bound; placed before inserted)
    columns, pp, objective = mea_alignment(np.zeros((2, 2), np.int32))
    assert objective == PROB_ONE  # one placed (0), one inserted (1.0)
    assert columns.tolist() == [0, INSERTED]


def test_batches_are_the_same_read_by_read_and_on_threads():
    """decode_batch over many reads equals one call per read, on one thread or several."""
    rng = np.random.default_rng(3)
    m, count = 30, 150
    profiles = (rng.integers(1, 16, (6, m)) | (rng.random((6, m)) < 0.2) * 0x10 | rng.integers(0, 8, (6, m)) << 5)
    profiles = profiles.astype(np.uint8)
    lengths = rng.integers(1, 12, count)
    codes = rng.integers(1, 16, lengths.sum()).astype(np.uint8)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    slots = np.stack([rng.permutation(6)[:4] for _ in range(count)])
    slots[rng.random(slots.shape) < 0.2] = -1
    p = ScoringParams.preset("weighted").as_array()
    tables = PosteriorTables.build(1.5)
    one = decode_batch(codes, offsets, slots, None, profiles, None, p, None, tables, threads=1)
    two = decode_batch(codes, offsets, slots, None, profiles, None, p, None, tables, threads=2)
    for a, b in zip(one, two):
        assert np.array_equal(a, b, equal_nan=True)
    for q in range(0, count, 37):
        single = decode_batch(codes[offsets[q]:offsets[q + 1]], np.array([0, lengths[q]]), slots[q:q + 1], None,
                              profiles, None, p, None, tables)
        assert np.array_equal(single[0], one[0][offsets[q]:offsets[q + 1]])
        assert np.array_equal(single[1], one[1][offsets[q]:offsets[q + 1]])
        assert np.array_equal(single[2][0], one[2][q])
    none = np.all(slots < 0, axis=1)
    assert np.all(np.isnan(one[3][none])) and np.all(one[3][~none] > 0)
    assert np.all(one[0][np.repeat(none, lengths)] == INSERTED) and np.all(one[1][np.repeat(none, lengths)] == 0)
    empty = decode_batch(codes[:0], offsets[:1], slots[:0], None, profiles, None, p, None, tables)
    assert [a.shape for a in empty] == [(0,), (0,), (0, 4), (0,)]


def test_decode_refuses_what_it_cannot_do():
    tables = PosteriorTables.build(1.0)
    p = ScoringParams().as_array()
    profiles = np.ones((1, 4), np.uint8)
    with pytest.raises(ValueError, match="0 < n < m"):
        decode_batch(np.ones(4, np.uint8), np.array([0, 4]), np.zeros((1, 1)), None, profiles, None, p, None, tables)
    with pytest.raises(ValueError, match="temperature above 0"):
        decode_batch(np.ones(2, np.uint8), np.array([0, 2]), np.zeros((1, 1)), None, profiles, None, p, None,
                     PosteriorTables.build(0))
    with pytest.raises(ValueError, match="element type"):
        decode_batch(np.ones(2, np.uint32), np.array([0, 2]), np.zeros((1, 1)), None, profiles, None, p, None, tables)


# ---------------------------------------------------------------- tables and bounds

@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0, 3.0, 1 / 3])
@pytest.mark.parametrize("scale", [1, 64, 1024])
def test_tables_are_their_definitions_rounded(temperature, scale):
    """Each table is its definition rounded, up to and including the first entry that rounds to
    0, then zeros to a power-of-two length (the kernels' index mask)."""
    st_ = scale * temperature
    for table, definition in ((softmin_table(temperature, scale), lambda d: st_ * np.log1p(np.exp(-d / st_))),
                              (probability_table(temperature, scale), lambda x: PROB_ONE * np.exp(-x / st_))):
        assert table.dtype in (np.uint16, np.int32) and table.size & (table.size - 1) == 0
        first_zero = int(np.flatnonzero(table == 0)[0])
        exact = definition(np.arange(first_zero + 1))
        assert np.array_equal(table[:first_zero + 1], np.rint(exact).astype(np.int64))
        assert first_zero == 0 or np.rint(exact[first_zero - 1]) > 0
        assert not table[first_zero:].any() and table.size < 2 * (first_zero + 1)
        assert np.all(np.diff(table.astype(np.int64)) <= 0)
    assert probability_table(temperature, scale)[0] == PROB_ONE


def test_table_entries_at_a_rounding_tie_are_decided_exactly():
    # S T ln(1 + e^0) = S T ln 2; choose S T so that it lies within 1e-6 of k + 1/2? Rare; instead
    # check the decimal path directly: T chosen so that 64 T ln 2 = 22.5 exactly in real numbers
    temperature = 22.5 / (64 * math.log(2))
    soft = softmin_table(temperature, 64)
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 50
        value = Decimal(64) * Decimal(temperature) * Decimal(2).ln()
    assert soft[0] == int(value.to_integral_value(rounding="ROUND_HALF_EVEN"))


def test_tables_refuse_bad_settings():
    with pytest.raises(ValueError, match="power of two"):
        PosteriorTables.build(1.0, 1000)
    with pytest.raises(ValueError, match="temperature"):
        PosteriorTables.build(-1.0)
    with pytest.raises(ValueError, match="placement temperature"):
        PosteriorTables.build(1.0, placement_temperature=float("nan"))
    with pytest.raises(ValueError, match="entries"):
        PosteriorTables.build(1e6, 1 << 16)


def test_check_fixed_point_refuses_overflow_up_front():
    p = ScoringParams.preset("weighted").as_array()
    tables = PosteriorTables.build(2.0)
    check_fixed_point(p, 0, 150, 1072, tables)  # an ordinary run
    check_fixed_point(p, 0, 10_000, 30_000, tables)  # long reads
    big = ScoringParams(mismatch=1000, cgap=1000, gap_open=1000, gap_extend=1000, insertion=1000).as_array()
    with pytest.raises(ValueError, match="int32"):
        check_fixed_point(big, 0, 1000, 5000, tables)
    with pytest.raises(ValueError, match="int32"):
        decode_batch(np.ones(1000, np.uint8), np.array([0, 1000]), np.zeros((1, 1)), None, np.ones((1, 5000), np.uint8),
                     None, big, None, tables)


# ---------------------------------------------------------------- hmmalign's PP code

def test_pp_code_follows_hmmer():
    """p7_alidisplay_EncodePostProb: '*' where p + 0.05 >= 1, else the digit of (p + 0.05) * 10,
    at the exact boundaries in fixed point."""
    one = PROB_ONE
    boundary = [int(math.ceil((d / 10 - 0.05) * one)) for d in range(1, 11)]  # the first pp of digit d
    values = [0, 1] + [b - 1 for b in boundary] + boundary + [one]
    expected = ""
    for v in values:
        p = v / one
        expected += "*" if p + 0.05 >= 1.0 else str(int((p + 0.05) * 10.0))
    assert pp_string(np.array(values)) == expected
    assert pp_string(np.array([0, one // 2, one])) == "05*"
    assert pp_digits(np.array([one * 95 // 100])).tobytes() == b"9"  # 0.94998 (floored): still 9


def test_a_read_whose_true_alignment_leaves_the_band_gets_it():
    """The rectangle's point (DESIGN 5): the read's first three residues match the last three
    columns and its fourth fits nowhere. The band (residue 0 in columns 0 .. m - n = 4) cannot
    place residue 0 in column 5 (with the band the MEA placed only residue 3, in column 5); the
    posterior step places 0-2 in columns 5-7 and inserts 3, each state's posterior above one
    half; Eq. 1's best, inside the band, costs more than that path."""
    A, C, G, T = 1, 2, 4, 8
    profile = np.array([T, T, T, T, T, A, C, G], np.uint8)
    read = np.array([A, C, G, A], np.uint8)
    p = np.array([5, 0, 5, 5, 1, 5], np.int64)  # mismatch 5, insertion 1
    columns, pp, weights, _ = decode_batch(read, np.array([0, 4]), np.zeros((1, 1), np.int64), None, profile[None, :],
                                           None, p, None, PosteriorTables.build(1.0))
    assert columns.tolist() == [5, 6, 7, INSERTED]
    assert pp.min() > PROB_ONE // 2
    viterbi = PosteriorTables.build(0)
    z, _ = forward_energy(read, profile, p, viterbi)
    assert z == 1 * viterbi.scale < score_one(read, profile, np.zeros(8, np.uint8), p, None) * viterbi.scale
