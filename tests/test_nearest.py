"""The nearest-sequence bonus of DESIGN.md 5 (model/nearest.py, `nearest_bonus`).

The bonused traceback against the literal transcription of DESIGN 4-5 (tests/literal_dp.py), the
nearest-rows search against a brute force, the share gate at its boundary, and protein runs with
and without the bonus: scores, best edges and candidates identical, the columns moved towards
each read's nearest reference sequences.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from literal_dp import PROTEIN_LETTERS, literal_align

from papara_py.io.inputs import read_alignment
from papara_py.io.run_file import RunFile
from papara_py.model.column_costs import column_costs
from papara_py.model.nearest import (
    NEAREST_ROWS,
    NEAREST_SHARE,
    bonus_reads,
    nearest_rows,
)
from papara_py.model.params import PRESETS, ScoringParams
from papara_py.model.traceback import align_many
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.phylo.residues import NO_RESIDUE, reference_residues, residue_index_table
from papara_py.run.config import RunConfig
from papara_py.run.runner import run

PROTEIN_DATA = Path(__file__).resolve().parent.parent / "data" / "protein"

READ_LETTERS = "ARNDCQEGHILKMFPSTWYVarndBZJX"
ROW_LETTERS = "ARNDCQEGHILKMFPSTWYVarndBZJXUO-.?"


@pytest.mark.parametrize("alphabet, letters, others", [(DNA, "ACGTU", "NRYKMSWBDHV-.?"),
                                                       (PROTEIN, PROTEIN_LETTERS + "UO", "BZJX-.?*")])
def test_residue_indices_are_the_one_state_of_unambiguous_letters(alphabet, letters, others):
    """Each unambiguous letter, either case, is its one state (U is T's in DNA, C's in protein, O
    K's: DESIGN 2); gaps and ambiguity
    codes are NO_RESIDUE, as is every other byte."""
    table = residue_index_table(alphabet)
    for letter in letters:
        state = int(alphabet.read_code[ord(letter)]).bit_length() - 1
        assert table[ord(letter)] == table[ord(letter.lower())] == state
    assert sorted(set(table[[ord(c) for c in letters]].tolist())) == list(range(alphabet.n_states))
    assert all(table[ord(c)] == NO_RESIDUE for c in others)
    assert (table != NO_RESIDUE).sum() == 2 * len(letters)


@st.composite
def bonus_cases(draw):
    """Protein profiles (states and CGAP flags), a read of letters (ambiguity codes included), one
    or two nearest rows of letters, gaps and ambiguity codes, penalties near the protein preset's,
    the column profile cost on or off, and a bonus of 0..6."""
    m = draw(st.integers(2, 14))
    n = draw(st.one_of(st.just(1), st.just(m - 1), st.integers(1, m - 1)))
    residue = st.one_of(st.integers(0, 19).map(lambda k: 1 << k), st.integers(1, (1 << 20) - 1))
    profile = [a | (1 << 20 if gap else 0) for a, gap in zip(draw(st.lists(residue, min_size=m, max_size=m)),
                                                            draw(st.lists(st.booleans(), min_size=m, max_size=m)))]
    read = draw(st.text(st.sampled_from(READ_LETTERS), min_size=n, max_size=n))
    rows = draw(st.lists(st.text(st.sampled_from(ROW_LETTERS), min_size=m, max_size=m), min_size=1, max_size=2))
    values = [draw(st.integers(0, 8)) for _ in range(5)]
    params = ScoringParams(*values, near_mismatch=draw(st.integers(0, values[0])),
                           column_weight=draw(st.sampled_from([0.0, 0.5, 1.0])))
    return profile, read, rows, params, draw(st.integers(0, 6))


@settings(max_examples=500, deadline=None)
@given(bonus_cases())
def test_bonused_traceback_equals_design_5_spelled_out(case):
    """align_many with the bonus gives the literal transcription's score, start and CIGAR, where a
    read residue of one amino acid that is one nearest row's letter in a column costs the bonus
    less there and a read gap opens free where one has a gap (the column profile cost computed
    from those rows alone, when on)."""
    profile, read, rows, params, amount = case
    codes = PROTEIN.read_code[np.frombuffer(read.encode(), np.uint8)]
    tip_rows = np.stack([np.frombuffer(row.encode(), np.uint8) for row in rows])
    costs = column_costs(tip_rows, PROTEIN, params.column_weight)
    scores, starts, cigars, _ = align_many(codes, np.frombuffer(read.encode(), np.uint8), np.array([0, len(read)]),
                                           np.zeros(1, np.int64), np.array([profile], np.uint32), params, costs=costs,
                                           bonus=(reference_residues(tip_rows, PROTEIN),
                                                  np.arange(len(rows))[None, :], amount))
    literal = literal_align(codes.tolist(), profile, *params.as_array().tolist(), protein=True,
                            column_rows=rows if costs is not None else None, column_weight=params.column_weight,
                            nearest_rows=rows, nearest_bonus=amount)
    assert (int(scores[0]), int(starts[0]), cigars[0]) == literal


def random_batch(seed: int, m: int, longest: int):
    """Twelve random protein reads of 3..longest-1 residues on two random profiles of m columns,
    and three random reference rows' residue indices: (residues, offsets, slots, profiles,
    reference)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, longest, size=12)
    letters = np.frombuffer(PROTEIN_LETTERS.encode(), np.uint8)
    residues = letters[rng.integers(0, 20, int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    profiles = PROTEIN.read_code[letters[rng.integers(0, 20, (2, m))]]
    slots = rng.integers(0, 2, size=lengths.size)
    return residues, offsets, slots, profiles, reference_residues(letters[rng.integers(0, 20, (3, m))], PROTEIN)


def test_a_read_without_a_tip_is_traced_as_without_the_bonus():
    """In one bonused batch, reads whose tips are -1 get exactly the plain traceback, the others
    their bonus from one or two rows (the pipeline traces both kinds in one call)."""
    residues, offsets, slots, profiles, reference = random_batch(3, 40, 30)
    tips = np.tile([[-1, -1], [0, -1], [2, 1]], (4, 1))
    params = ScoringParams.preset("protein")
    args = (PROTEIN.read_code[residues], residues, offsets, slots, profiles, params)
    plain = align_many(*args)
    bonused = align_many(*args, bonus=(reference, tips, 5))
    none = tips[:, 0] < 0
    np.testing.assert_array_equal(bonused[0][none], plain[0][none])
    assert [c for c, n in zip(bonused[2], none) if n] == [c for c, n in zip(plain[2], none) if n]
    assert (bonused[0][~none] <= plain[0][~none]).all() and (bonused[0][~none] < plain[0][~none]).any()


def test_a_bonused_batch_traces_each_read_as_alone():
    """The traceback keeps a read's marks for the next read while the tips repeat (a read's pairs
    come one after another): a batch with runs of one tips, tips that change and change back gives
    every read what that read traced alone gives."""
    residues, offsets, slots, profiles, reference = random_batch(5, 36, 28)
    tips = np.array([[0, 1], [0, 1], [0, 1], [1, 2], [1, 2], [2, -1], [0, 1], [-1, -1], [2, -1], [2, 1], [2, 1],
                     [0, -1]])
    params = ScoringParams.preset("protein")
    batch = align_many(PROTEIN.read_code[residues], residues, offsets, slots, profiles, params,
                       bonus=(reference, tips, 4))
    for r in range(offsets.size - 1):
        piece = residues[offsets[r]:offsets[r + 1]]
        alone = align_many(PROTEIN.read_code[piece], piece, np.array([0, piece.size]), slots[r:r + 1], profiles,
                           params, bonus=(reference, tips[r:r + 1], 4))
        assert (batch[0][r], batch[1][r], batch[2][r]) == (alone[0][0], alone[1][0], alone[2][0])
        np.testing.assert_array_equal(batch[3][r], alone[3][0])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 12), st.integers(1, 9), st.integers(0, 2 ** 32 - 1))
def test_nearest_rows_are_those_with_most_identities_then_the_first(reads, m, tips, seed):
    """nearest_rows against a brute force over every tip: identities are equal single residues in
    the same column (a gap or ambiguity code matches nothing, not even itself); the NEAREST_ROWS
    tips with the most, ties to the first tip; ranks with no identity left have none (-1)."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWYacdBXZ-", np.uint8)
    small = letters[rng.integers(0, 6, size=(tips, m))]  # few letters: ties and identities are common
    tip_rows = np.where(rng.random((tips, m)) < 0.8, small, letters[rng.integers(0, letters.size, (tips, m))])
    rows = np.where(rng.random((reads, m)) < 0.7, letters[rng.integers(0, 6, (reads, m))], ord("-")).astype(np.uint8)
    rows[rng.random((reads, m)) < 0.1] = ord("X")
    table = residue_index_table(PROTEIN)
    nearest, identities, placed = nearest_rows(rows, table, reference_residues(tip_rows, PROTEIN), ord("-"))
    assert nearest.shape == identities.shape == (reads, NEAREST_ROWS)
    for r in range(reads):
        read = table[rows[r]]
        same = ((table[tip_rows] == read[None, :]) & (read[None, :] != NO_RESIDUE)).sum(axis=1)
        assert placed[r] == (rows[r] != ord("-")).sum()
        order = sorted((t for t in range(tips) if same[t] > 0), key=lambda t: (-same[t], t))[:NEAREST_ROWS]
        order += [-1] * (NEAREST_ROWS - len(order))
        assert nearest[r].tolist() == order
        assert identities[r].tolist() == [int(same[t]) if t >= 0 else 0 for t in order]


def test_the_bonus_needs_the_share_of_placed_residues():
    """A read whose nearest rows hold exactly NEAREST_SHARE of its placed residues has the bonus
    from each, one identity fewer not from that row; a read identical to no row has none; ties go
    to the first tip; in slices on several threads alike, and for no reads at all."""
    share, whole = NEAREST_SHARE
    length, identical = 4 * whole, 4 * share
    enough = b"A" * identical + b"W" * (length - identical)
    short = b"A" * (identical - 1) + b"W" * (length - identical + 1)
    far = b"W" * length

    def tips_of(reference_rows: list[bytes], rows: np.ndarray, threads: int = 1) -> list[list[int]]:
        reference = reference_residues(np.stack([np.frombuffer(row, np.uint8) for row in reference_rows]), PROTEIN)
        return bonus_reads(rows, PROTEIN, reference, threads=threads).tolist()

    rows = np.stack([np.frombuffer(row, np.uint8) for row in (enough, short, far)])
    everything_a, one_a_fewer = b"A" * length, b"A" * (identical - 1) + b"C" * (length - identical + 1)
    assert NEAREST_ROWS == 2
    assert tips_of([everything_a], rows) == [[0, -1], [-1, -1], [-1, -1]]
    assert tips_of([one_a_fewer, everything_a, everything_a], rows) == [[1, 2], [-1, -1], [-1, -1]]
    assert tips_of([everything_a, one_a_fewer], rows) == [[0, -1], [-1, -1], [-1, -1]]
    many = np.repeat(rows, 700, axis=0)  # several search slices on several threads: the same answers
    assert tips_of([one_a_fewer, everything_a, everything_a], many, threads=3) == \
        np.repeat([[1, 2], [-1, -1], [-1, -1]], 700, axis=0).tolist()
    assert np.asarray(tips_of([everything_a], rows[:0])).size == 0


def test_protein_runs_with_the_bonus_keep_scores_and_move_columns_towards_the_nearest_row(tmp_path):
    """data/protein with its preset against the same without the bonus: scores, best edges and
    candidates identical; the run record counts the rebonused reads; some reads' columns change,
    and summed over the reads, their identities with their nearest reference row along the
    columns they take grow."""
    bonus = PRESETS["protein"][8]
    assert bonus > 0
    files = {}
    for amount in (bonus, 0):
        out = tmp_path / f"bonus{amount}.h5"
        run(RunConfig(tree=str(PROTEIN_DATA / "tree.nwk"), alignment=str(PROTEIN_DATA / "ref.phy"),
                      reads=str(PROTEIN_DATA / "reads.fa"), output=str(out), threads=2, device="cpu",
                      params=ScoringParams(*PRESETS["protein"][:8], nearest_bonus=amount)))
        files[amount] = RunFile(out)
    on, off = files[bonus], files[0]
    assert on.record["parameters"]["nearest_bonus"] == bonus and off.record["parameters"]["nearest_bonus"] == 0
    for path in ("best_edge", "score", "candidates/edge", "candidates/score", "status"):
        np.testing.assert_array_equal(on.column(path), off.column(path), path)
    assert on.record["traceback"]["nearest"] > 0 and off.record["traceback"]["nearest"] == 0
    changed = on.column("cigar") != off.column("cigar")
    assert 0 < changed.sum() < changed.size
    table = residue_index_table(PROTEIN)
    reference = table[read_alignment(PROTEIN_DATA / "ref.phy", alphabet="protein").rows]
    identities = []
    for file in (on, off):
        read = table[file.column("aligned")]
        same = ((reference[None, :, :] == read[:, None, :]) & (read[:, None, :] != NO_RESIDUE)).sum(axis=2)
        identities.append(int(same.max(axis=1).sum()))
    assert identities[0] > identities[1]
