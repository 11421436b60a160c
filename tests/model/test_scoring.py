"""The reference scorer and the traceback against the literal transcription of DESIGN 4 and 5."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from literal_dp import literal_align, literal_score, rescore_cigar

from papara_py.errors import InputError
from papara_py.io.cigar import cigar_columns, parse_cigar, place_read
from papara_py.io.paths import alignment_forms
from papara_py.model.column_costs import column_costs, cost_codes
from papara_py.model.params import PenaltyChoice, ScoringParams
from papara_py.model.reference_scorer import score_reference
from papara_py.model.traceback import align, align_many
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.run.inputs import resolve_params

states = st.integers(1, 15)
parameter = st.sampled_from([0, 1, 2, 3, 5, 1000])


@st.composite
def cases(draw):
    m = draw(st.integers(2, 24))
    n = draw(st.one_of(st.just(1), st.just(m - 1), st.integers(1, m - 1)))
    cgap_style = draw(st.sampled_from(["none", "all", "random", "runs"]))
    nibbles = draw(st.lists(states, min_size=m, max_size=m))
    if cgap_style == "none":
        flags = [0] * m
    elif cgap_style == "all":
        flags = [1] * m
    elif cgap_style == "random":
        flags = draw(st.lists(st.integers(0, 1), min_size=m, max_size=m))
    else:
        lo = draw(st.integers(0, m - 1))
        hi = draw(st.integers(lo, m))
        flags = [1 if lo <= i < hi else 0 for i in range(m)]
    near = draw(st.lists(st.integers(0, 7), min_size=m, max_size=m))  # near-state fields, bits 5-7
    profile = [nb | (0x10 if f else 0) | (nr << 5) for nb, f, nr in zip(nibbles, flags, near)]
    read = draw(st.lists(states, min_size=n, max_size=n))
    values = [draw(parameter) for _ in range(5)]
    near_mismatch = draw(st.one_of(st.just(values[0]), st.integers(0, values[0])))
    params = ScoringParams(*values, near_mismatch=near_mismatch)
    return read, profile, params


def as_arrays(read, profile):
    return np.array(read, np.uint8), np.array(profile, np.uint8)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(cases())
def test_reference_scorer_equals_literal_recurrence(case):
    read, profile, params = case
    expected = literal_score(read, profile, *params.as_array().tolist())
    assert score_reference(*as_arrays(read, profile), params) == expected


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(cases())
def test_traceback_rescores_to_the_reported_score(case):
    read, profile, params = case
    result = align(*as_arrays(read, profile), params)
    assert result.score == literal_score(read, profile, *params.as_array().tolist())
    ops = parse_cigar(result.cigar)
    assert sum(length for length, op in ops if op in "MI") == len(read)
    end = result.start + sum(length for length, op in ops if op in "MD")
    assert 0 <= result.start and end <= len(profile)
    assert rescore_cigar(read, profile, result.start, ops, *params.as_array().tolist()) == result.score


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(cases())
def test_traceback_equals_design_5_spelled_out(case):
    """The one-byte-per-cell traceback takes exactly DESIGN 5's path (ties included)."""
    read, profile, params = case
    result = align(*as_arrays(read, profile), params)
    assert (result.score, result.start, result.cigar) == literal_align(read, profile, *params.as_array().tolist())


@st.composite
def protein_cases(draw):
    """Amino-acid profiles (uint32: 20 states, CGAP bit 20) and reads: mostly single residues, so
    mismatches between similar and dissimilar residues are both common, some ambiguity sets."""
    m = draw(st.integers(2, 16))
    n = draw(st.one_of(st.just(1), st.just(m - 1), st.integers(1, m - 1)))
    residue = st.one_of(st.integers(0, 19).map(lambda k: 1 << k), st.integers(1, (1 << 20) - 1))
    profile = [a | (1 << 20 if gap else 0)
               for a, gap in zip(draw(st.lists(residue, min_size=m, max_size=m)),
                                 draw(st.lists(st.booleans(), min_size=m, max_size=m)))]
    read = draw(st.lists(residue, min_size=n, max_size=n))
    values = [draw(parameter) for _ in range(5)]
    params = ScoringParams(*values, near_mismatch=draw(st.one_of(st.just(values[0]), st.integers(0, values[0]))))
    return read, profile, params


@pytest.mark.slow
@settings(max_examples=800, deadline=None)
@given(protein_cases())
def test_protein_scorer_and_traceback_equal_design_4_and_5_spelled_out(case):
    """Protein's near states by similarity (DESIGN 3) in the reference scorer and the traceback,
    against the literal transcription with BLOSUM62 read from Biopython."""
    read, profile, params = case
    arrays = np.array(read, np.uint32), np.array(profile, np.uint32)
    penalties = params.as_array().tolist()
    assert score_reference(*arrays, params) == literal_score(read, profile, *penalties, protein=True)
    result = align(*arrays, params)
    assert (result.score, result.start, result.cigar) == literal_align(read, profile, *penalties, protein=True)


def test_traceback_prefers_smallest_end_column_and_insertion_over_mismatch_there():
    # read A G against T A C G T T: "A, G inserted" ends at column 1 with cost 3 (insertion);
    # "A, G vs C" ends at column 2 with the same cost: the smallest end column wins.
    result = align(np.array([1, 4], np.uint8), np.array([8, 1, 2, 4, 8, 8], np.uint8), ScoringParams.preset("paper"))
    assert (result.score, result.start, result.cigar) == (3, 1, "1M1I")


def test_traceback_prefers_diagonal_then_deletion_then_insertion():
    # read A C against A G C T: A/A, G deleted (open 1 + extend 1), C/C costs 2, as does
    # A/A, C inserted, C/C... no: the band keeps row 1 in columns 1..3, so the only cost-2 path
    # ending at the smallest column is the deletion path.
    params = ScoringParams(mismatch=3, cgap=0, gap_open=1, gap_extend=1, insertion=2)
    result = align(np.array([1, 2], np.uint8), np.array([1, 4, 2, 8], np.uint8), params)
    assert result.score == 2
    assert result.cigar == "1M1D1M" and result.start == 0


def test_place_read_drops_insertions_and_fills_gaps():
    row = place_read(b"ACGT", 2, "1M1D1I2M", 8)
    assert row.tobytes() == b"--A-GT--"


def test_alignment_forms_of_reads_with_no_residue_placed():
    """A path may insert every residue (Eq. 1 allows it where insertions are free): its CIGAR holds
    each residue once, its row no residue, and its columns read back as all inserted, next to a
    read that is placed (an extra I op once ran past the batch's last residue)."""
    columns = np.array([-1, -1, -1, 1, -1], np.int32)
    offsets = np.array([0, 3, 5], np.int64)
    starts, cigars, rows = alignment_forms(columns, offsets, np.frombuffer(b"ACGTA", np.uint8), 4)
    assert cigars == ["3I", "1M1I"] and starts.tolist() == [0, 1]
    assert rows.tobytes() == b"----" + b"-T--"
    assert np.concatenate([cigar_columns(int(s), c, int(n)) for s, c, n in zip(starts, cigars, np.diff(offsets))]
                          ).tolist() == columns.tolist()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(cases(), min_size=1, max_size=6), st.integers(0, 2 ** 32 - 1))
def test_batched_traceback_equals_one_read_at_a_time(batch, seed):
    """align_many (the runner's GIL-free batch path at temperature 0) gives align's score and
    each residue's column, read for read, and the writers' forms of those columns place the
    residues as align's path does; reads of different lengths share one profile stack."""
    m = max(len(profile) for _, profile, _ in batch)
    params = batch[0][2]
    rng = np.random.default_rng(seed)
    # pad every profile to m columns (and keep each read shorter than m) so one stack holds all
    profiles = np.stack([np.array(p + list(rng.integers(1, 32, m - len(p))), np.uint8) for _, p, _ in batch])
    reads = [np.array(r, np.uint8) for r, _, _ in batch]
    letters = np.frombuffer(b"ACGTRYKMSWBDHVN", np.uint8)
    residues = [letters[rng.integers(0, letters.size, len(r))] for r in reads]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    slots = rng.permutation(len(batch))
    scores, columns = align_many(np.concatenate(reads), offsets, slots, profiles, params)
    starts, cigars, rows = alignment_forms(columns, offsets, np.concatenate(residues), m)
    for q, read in enumerate(reads):
        one = align(read, profiles[slots[q]], params)
        expected = cigar_columns(one.start, one.cigar, len(read))
        assert scores[q] == one.score and np.array_equal(columns[offsets[q]:offsets[q + 1]], expected)
        # the writers' forms of those columns: the same residues in the same columns
        assert np.array_equal(rows[q], place_read(residues[q].tobytes(), one.start, one.cigar, m))
        assert np.array_equal(cigar_columns(int(starts[q]), cigars[q], len(read)), expected)


@st.composite
def column_cost_cases(draw):
    """Protein profiles and reads as `protein_cases`, the reads' residues among the read codes a
    cost table has rows for (single amino acids, B, Z, J, X), and a reference alignment of 1-6 rows
    (amino acids, ambiguity codes, gaps, either case) whose columns give the costs, at weights
    that make ties of rounding likely (multiples of 1/4) and others."""
    read, profile, params = draw(protein_cases())
    codes = cost_codes(PROTEIN).tolist()
    read = [draw(st.one_of(st.sampled_from(codes[:20]), st.sampled_from(codes))) for _ in read]
    letters = st.sampled_from("ARNDCQEGHILKMFPSTWYVarndBZJXUO-.?")
    rows = draw(st.lists(st.text(letters, min_size=len(profile), max_size=len(profile)), min_size=1, max_size=6))
    weight = draw(st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.3, 2.5, 8.0]))
    return read, profile, replace(params, column_weight=weight), rows


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(column_cost_cases())
def test_column_profile_cost_equals_design_4_and_5_spelled_out(case):
    """The column profile cost (DESIGN 4) as model/column_costs.py tabulates it from the reference
    rows, in the reference scorer and the traceback, against the literal transcription that
    computes X from the rows and BLOSUM62 itself, cell by cell."""
    read, profile, params, rows = case
    costs = column_costs(np.array([list(row.encode()) for row in rows], np.uint8), PROTEIN, params.column_weight)
    assert costs.largest <= params.column_cost_bound()
    arrays = np.array(read, np.uint32), np.array(profile, np.uint32)
    penalties = params.as_array().tolist()
    literal = {"protein": True, "column_rows": rows, "column_weight": params.column_weight}
    assert score_reference(*arrays, params, costs) == literal_score(read, profile, *penalties, **literal)
    result = align(*arrays, params, costs)
    assert (result.score, result.start, result.cigar) == literal_align(read, profile, *penalties, **literal)


def test_the_dearest_column_cost_at_the_largest_weight_is_the_bound_and_a_byte_below_128():
    """The kernels read X as one byte below 128 (model/column_costs.py MAX_COLUMN_WEIGHT): at the
    largest weight, a read residue against a column whose every row holds its worst partner in
    BLOSUM62 costs the most X can, which is `largest_cost`'s bound, and it fits."""
    from Bio.Align import substitution_matrices

    from papara_py.model.column_costs import MAX_COLUMN_WEIGHT, largest_cost

    blosum = substitution_matrices.load("BLOSUM62")
    letters = PROTEIN.letters
    read, row = min(((a, b) for a in letters for b in letters), key=lambda pair: blosum[pair[0]][pair[1]])
    costs = column_costs(np.array([[ord(row)]] * 3, np.uint8), PROTEIN, MAX_COLUMN_WEIGHT)
    dearest = int(costs.table[letters.index(read), 0])
    assert dearest == costs.largest == largest_cost(MAX_COLUMN_WEIGHT) < 128
    assert ScoringParams(column_weight=MAX_COLUMN_WEIGHT).column_cost_bound() == dearest


def test_column_costs_are_off_at_weight_0_and_for_dna():
    """Weight 0 is the model without the term (no table); DNA has no substitution matrix, so a run
    asking for the term on DNA is refused with one paragraph naming the option."""
    rows = np.frombuffer(b"ACGT", np.uint8)[None, :]
    assert column_costs(rows, PROTEIN, 0.0) is None
    with pytest.raises(ValueError, match="no substitution matrix"):
        column_costs(rows, DNA, 1.0)
    with pytest.raises(InputError, match="--column-weight.*protein data"):
        resolve_params(ScoringParams(column_weight=1.0), DNA)
    with pytest.raises(InputError, match="--column-weight.*protein data"):
        resolve_params(PenaltyChoice("paper", (("column_weight", 0.5),)), DNA)
    with pytest.raises(InputError, match="--preset protein.*give --column-weight 0 with it"):
        resolve_params(PenaltyChoice("protein"), DNA)
    assert resolve_params(PenaltyChoice("protein", (("column_weight", 0.0),)), DNA).column_weight == 0
    with pytest.raises(ValueError, match="column_weight must be a number from 0 to 8"):
        ScoringParams(column_weight=9)


def test_the_column_cost_moves_a_residue_to_the_column_whose_residues_favour_it():
    """One W read between two CGAP-free columns its edge holds as A: Eq. 1 cannot tell them apart
    and takes the first; with the reference's rows holding W in the second column (and G, which
    scores -2 against W, in the first) the column profile cost puts it in the second."""
    profile = np.array([1, 1], np.uint32)  # A, A
    read = np.array([1 << PROTEIN.letters.index("W")], np.uint32)
    rows = np.array([list(b"GW")] * 3, np.uint8)
    params = ScoringParams(3, 6, 5, 3, 16, 2, column_weight=1.0)
    costs = column_costs(rows, PROTEIN, 1.0)
    assert costs.table[cost_codes(PROTEIN).tolist().index(int(read[0]))].tolist() == [13, 0]
    assert align(read, profile, replace(params, column_weight=0.0)).start == 0
    assert align(read, profile, params, costs=costs).start == 1
