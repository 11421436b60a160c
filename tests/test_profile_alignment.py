"""The reference profile's own alignment of a read, the choice's third candidate
(model/profile_alignment.py; DESIGN.md 5, `second_model`).

The programme against a brute force over every alignment (it finds the highest profile score of
model/choice.py, within its window), the model's cost of a path against the traceback's
recurrence (the traceback's own path costs its score, and nothing costs less), and the gate on
hand-made reads through `profile_preferred`. Protein runs with it are in tests/test_choice.py.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from papara_py.model.choice import background, profile_score
from papara_py.model.params import ScoringParams
from papara_py.model.paths import residue_columns
from papara_py.model.profile_alignment import (
    COST_MARGIN,
    SCORE_MARGIN,
    column_scores,
    model_cost,
    profile_dp,
    profile_preferred,
)
from papara_py.model.reference_scorer import INF64, profile_near
from papara_py.model.traceback import align
from papara_py.phylo.encoding import PROTEIN, cgap_bit_of
from papara_py.phylo.residues import (
    GAP_RESIDUE,
    NO_RESIDUE,
    reference_residues,
    residue_index_table,
)


def all_alignments(n: int, columns: range):
    """Every alignment of n residues to `columns`: each residue in one or inserted (-1), the placed
    ones (at least one: a read is placed somewhere) in increasing columns."""
    for assignment in itertools.product([-1, *columns], repeat=n):
        placed = [c for c in assignment if c >= 0]
        if placed and all(a < b for a, b in itertools.pairwise(placed)):
            yield np.array(assignment, np.int64)


def test_the_programme_finds_the_best_profile_score_in_its_window():
    """Small random references (residues, columns of gaps, ambiguity) and reads, a random window
    [lo, hi): the programme's alignment has the highest profile score of every alignment within
    the window, and that is the score it returns; the cases hold deletions and insertions."""
    rng = np.random.default_rng(5)
    states = PROTEIN.n_states
    scratch = np.empty(states)
    shapes = {"deletion": 0, "insertion": 0}
    for case in range(240):
        m, tips, n = int(rng.integers(2, 9)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
        lo, hi = (0, m) if case % 3 or m < 4 else (int(rng.integers(0, 2)), m - int(rng.integers(0, 2)))
        pool = np.array([*rng.choice(states, 2, replace=False), GAP_RESIDUE, GAP_RESIDUE, NO_RESIDUE], np.uint8)
        reference = rng.choice(pool, (m, tips)).astype(np.uint8)
        kind = rng.random(m)
        reference[kind < 0.6] = rng.choice(pool[:2], (int(np.sum(kind < 0.6)), 1))  # one residue throughout
        reference[kind < 0.3] = GAP_RESIDUE  # columns of gaps, which a read skips
        residues = rng.choice(pool[[0, 1, 4]], n, p=[0.45, 0.45, 0.1]).astype(np.uint8)
        filled = np.flatnonzero(reference[:, 0] != GAP_RESIDUE)
        if case % 2 and filled.size >= n:  # the residues of some filled columns, gaps between them
            residues = reference[np.sort(rng.choice(filled, n, replace=False)), 0].copy()
        weights = rng.random(tips) + 0.1
        emit, log_gap, columns = np.empty((n, hi - lo)), np.empty(hi - lo), np.empty(n, np.int64)
        column_scores(reference, lo, hi, weights, background(PROTEIN), residues, emit, log_gap)
        score = profile_dp(emit, log_gap, columns)
        columns = np.where(columns >= 0, columns + lo, -1)
        placed = columns[columns >= 0]
        shapes["deletion"] += bool(np.any(np.diff(placed) > 1))
        shapes["insertion"] += bool(np.any(columns < 0))
        best = max(profile_score(reference, residues, c, weights, background(PROTEIN), scratch)
                   for c in all_alignments(n, range(lo, hi)))
        assert score == pytest.approx(best, abs=1e-9)
        assert profile_score(reference, residues, columns, weights, background(PROTEIN), scratch) == \
            pytest.approx(score, abs=1e-9)
    assert min(shapes.values()) >= 3, shapes


def test_the_model_cost_of_a_path_is_what_the_recurrence_charges_it():
    """Random protein edge profiles (state sets, near states, CGAP columns) and reads: the
    traceback's path (DESIGN 4's band, no bonus) costs its score, and no alignment of the read
    costs less (the cheapest of all of them is the score); some cost more, finitely."""
    params = replace(ScoringParams.preset("protein"), band_margin=0)
    rng = np.random.default_rng(9)
    for _ in range(40):
        m = int(rng.integers(3, 7))
        n = min(int(rng.integers(1, 4)), m - 1)
        profile = np.array([int(rng.integers(1, 8)) << int(rng.integers(0, 17)) for _ in range(m)], np.uint32)
        profile[rng.random(m) < 0.3] |= np.uint32(cgap_bit_of(profile))
        read = np.array([1 << int(rng.integers(0, 20)) for _ in range(n)], np.uint32)
        near = profile_near(profile)
        traced = align(read, profile, params)
        path = residue_columns(np.array([traced.start]), [traced.cigar], np.array([0, n]))
        assert model_cost(read, profile, near, params.as_array(), None, path) == traced.score
        costs = [model_cost(read, profile, near, params.as_array(), None, c) for c in all_alignments(n, range(m))]
        assert min(costs) == traced.score
        assert any(INF64 > c > traced.score for c in costs)


def _gate_case(best_slack: int):
    """A read of the reference's last row shifted past a deletion (the chosen alignment) and the
    same read in its true columns; the edge profile holds the row's residues, so the model charges
    the true columns their gap less than the shift; `best_slack`: how far below the true columns'
    cost the best edge's score is put."""
    text = ("MKVLAGHWEPRTSD", "MKVLSGHWEPRTSD", "MRVLAGHFEPKTSD", "MKILAGHWDPRTSD", "MKVLAGHWEPRTSD")
    tip_rows = np.array([list(row.encode()) for row in text], np.uint8)
    reference = reference_residues(tip_rows, PROTEIN)
    read_text = b"KVLAGHWEPRTS"
    residues = residue_index_table(PROTEIN)[np.frombuffer(read_text, np.uint8)]
    codes = PROTEIN.read_code[np.frombuffer(read_text, np.uint8)]
    true = np.arange(1, 13)
    shifted = np.array([1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13])
    row = np.full((1, 14), ord("-"), np.uint8)
    row[0, shifted] = np.frombuffer(read_text, np.uint8)
    profile = PROTEIN.read_code[tip_rows[4]][None, :].astype(np.uint32)
    params = ScoringParams.preset("protein")
    near = profile_near(profile)
    cost = model_cost(codes, profile[0], near[0], params.as_array(), None, true)
    return (reference, residues, codes, np.array([0, 12]), shifted, row, PROTEIN, profile, near,
            np.zeros(1, np.int64), params, None, np.array([cost - best_slack])), true


def test_the_gate_takes_the_profiles_alignment_where_the_model_nearly_agrees():
    """A read the chosen alignment shifts past a deletion its relatives do not have: the profile's
    own alignment puts it back, by far more than SCORE_MARGIN, and is taken while its model cost is
    within COST_MARGIN of the best edge's score, not beyond."""
    args, true = _gate_case(COST_MARGIN)
    weights = np.ones(5)
    gain = (profile_score(args[0], args[1], true, weights, background(PROTEIN), np.empty(20))
            - profile_score(args[0], args[1], args[4], weights, background(PROTEIN), np.empty(20)))
    assert gain > SCORE_MARGIN
    taken, columns = profile_preferred(*args)
    assert taken.tolist() == [True] and columns.tolist() == true.tolist()
    args, _ = _gate_case(COST_MARGIN + 1)
    assert profile_preferred(*args)[0].tolist() == [False]
