"""The second model and the choice between two alignments (DESIGN.md 5, `second_model`;
model/choice.py).

The profile score against a plain transcription of its definition on random alignments, the rule
on a hand-made case, and protein runs with the second model on: scores, best edges and candidates
as without it, each read's columns either the first model's or those of a run of the second model
alone (every edge a candidate, so its ranking is that run's), and a GPU run (PoCL here) equal to
the CPU's.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.io.inputs import match_tips, read_alignment, read_tree
from papara_py.io.run_file import RunFile
from papara_py.model.choice import (
    DELETION_OPEN,
    IDENTITY_WEIGHT,
    INSERTED,
    PSEUDOCOUNT,
    background,
    profile_score,
    second_preferred,
)
from papara_py.model.params import PRESETS, ScoringParams
from papara_py.model.paths import residue_columns
from papara_py.model.profile_alignment import SCORE_MARGIN
from papara_py.phylo.encoding import PROTEIN
from papara_py.phylo.residues import GAP_RESIDUE, NO_RESIDUE, reference_residues, residue_index_table
from papara_py.phylo.tree import EdgeTree
from papara_py.run.config import RunConfig
from papara_py.run.runner import run

DATA = Path(__file__).resolve().parent.parent / "data"
STATES = PROTEIN.n_states


def plain_score(reference: np.ndarray, read: list[int], columns: list[int], first: list[int]) -> float:
    """The profile score as the module docstring words it, one term at a time (weights from the
    identity along `first`)."""
    tips = reference.shape[1]
    placed = [(a, c) for a, c in zip(read, first) if c >= 0]
    identity = [sum(a < STATES and reference[c, r] == a for a, c in placed) / len(placed) if placed else 0.0
                for r in range(tips)]
    raw = [math.exp(IDENTITY_WEIGHT * (x - max(identity))) for x in identity] if placed else [1.0] * tips
    weights = [w * tips / sum(raw) for w in raw]
    total = sum(weights)
    freq = background(PROTEIN)

    def gap_share(c):
        return (sum(w for w, x in zip(weights, reference[c]) if x == GAP_RESIDUE) + 0.5) / (total + 1)

    score, previous = 0.0, None
    for a, c in zip(read, columns):
        if c < 0:
            score -= INSERTED
            continue
        if a < STATES:
            counts = [sum(w for w, x in zip(weights, reference[c]) if x == s) for s in range(STATES)]
            score += math.log((counts[a] + PSEUDOCOUNT * freq[a]) / (sum(counts) + PSEUDOCOUNT) / freq[a])
        score += math.log(1 - gap_share(c))
        if previous is not None and c > previous + 1:
            score += sum(math.log(gap_share(k)) for k in range(previous + 1, c)) - DELETION_OPEN
        previous = c
    return score


def rows_of(read: list[int], columns: list[int], m: int) -> np.ndarray:
    """uint8 [1, m]: the read (residue indices, NO_RESIDUE as X) placed in `columns` as a row."""
    row = np.full((1, m), ord("-"), np.uint8)
    for a, c in zip(read, columns):
        if c >= 0:
            row[0, c] = ord(PROTEIN.letters[a] if a < STATES else "X")
    return row


@st.composite
def alignments(draw):
    """A reference of 1-6 rows and 3-12 columns (residues, gaps, ambiguity) and a read with two
    alignments to it: increasing columns, some residues inserted (-1)."""
    m, tips = draw(st.integers(3, 12)), draw(st.integers(1, 6))
    cells = draw(st.lists(st.sampled_from([*range(STATES), GAP_RESIDUE, NO_RESIDUE]), min_size=m * tips,
                          max_size=m * tips))
    reference = np.array(cells, np.uint8).reshape(m, tips)
    n = draw(st.integers(1, m))
    read = draw(st.lists(st.sampled_from([*range(STATES), NO_RESIDUE]), min_size=n, max_size=n))

    def placement():
        chosen = sorted(draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n, unique=True)))
        return [-1 if draw(st.booleans()) and draw(st.booleans()) else c for c in chosen]

    return reference, read, placement(), placement()


@settings(max_examples=150, deadline=None)
@given(alignments())
def test_the_profile_score_is_its_definition_and_the_choice_takes_the_strictly_higher(case):
    reference, read, first, second = case
    residues = np.array(read, np.uint8)
    offsets = np.array([0, len(read)], np.int64)
    a, b = np.array(first, np.int64), np.array(second, np.int64)
    from papara_py.model.choice import row_weights

    rows = rows_of(read, first, reference.shape[0])
    weights = np.empty(reference.shape[1])
    row_weights(rows[0], residue_index_table(PROTEIN), reference, ord("-"), weights)
    counts = np.empty(STATES)
    for columns in (first, second):
        got = profile_score(reference, residues, np.array(columns, np.int64), weights, background(PROTEIN), counts)
        assert got == pytest.approx(plain_score(reference, read, columns, first), rel=1e-9, abs=1e-9)
    expected = plain_score(reference, read, second, first) > plain_score(reference, read, first, first)
    if abs(plain_score(reference, read, second, first) - plain_score(reference, read, first, first)) > 1e-9:
        assert second_preferred(reference, residues, offsets, a, b, rows, PROTEIN)[0] == expected
    assert not second_preferred(reference, residues, offsets, a, a.copy(), rows, PROTEIN)[0]


def test_a_read_keeps_the_columns_its_relatives_hold_whichever_model_gave_them():
    """Rows that hold the read column for column: its true columns beat the same residues shifted
    past a deletion, as the first alignment or the second; several reads in one call each get
    their own answer."""
    text = ("MKVLAGHWEPRT", "MKVLSGHWEPRT", "MRVLAGHFEPKT", "MKILAGHWDPRT")
    rows = np.array([list(row.encode()) for row in text], np.uint8)
    reference = reference_residues(rows, PROTEIN)
    table = residue_index_table(PROTEIN)
    read = table[np.frombuffer(b"KVLAGHWE", np.uint8)]
    true = np.arange(1, 9)
    shifted = np.array([1, 2, 3, 5, 6, 7, 8, 9])
    residues = np.concatenate([read, read, read])
    offsets = np.array([0, 8, 16, 24])
    first = np.concatenate([true, shifted, shifted])
    second = np.concatenate([shifted, true, shifted])
    first_rows = np.concatenate([rows_of(read.tolist(), first[k:k + 8].tolist(), 12) for k in (0, 8, 16)])
    assert second_preferred(reference, residues, offsets, first, second, first_rows, PROTEIN, threads=2).tolist() == \
        [False, True, False]


def _runs(tmp_path: Path, runs: dict[str, tuple[str, ScoringParams]], reads: Path) -> dict[str, RunFile]:
    """data/protein's tree and reference with `reads`, every edge a candidate, once per entry of
    `runs` (name: (device, penalties))."""
    files = {}
    for name, (device, params) in runs.items():
        out = tmp_path / f"{name}.h5"
        run(RunConfig(tree=str(DATA / "protein" / "tree.nwk"), alignment=str(DATA / "protein" / "ref.phy"),
                      reads=str(reads), output=str(out), threads=2, device=device, params=params,
                      candidates=45))
        files[name] = RunFile(out)
    return files


def _divergent_reads(path: Path) -> Path:
    """The protein example's reads with 30% of their residues substituted (seed 3): far enough from
    the reference that the two models disagree on some."""
    rng = np.random.default_rng(3)
    letters = np.frombuffer(PROTEIN.letters.encode(), np.uint8)
    out = []
    for block in (DATA / "protein" / "reads.fa").read_text().split(">")[1:]:
        name, sequence = block.split("\n", 1)
        codes = np.frombuffer(sequence.replace("\n", "").encode(), np.uint8).copy()
        hit = rng.random(codes.size) < 0.3
        codes[hit] = rng.choice(letters, int(hit.sum()))
        out.append(f">{name}\n{codes.tobytes().decode()}\n")
    path.write_text("".join(out))
    return path


def test_a_protein_run_keeps_each_reads_alignment_from_one_of_the_two_models(tmp_path):
    """The protein preset (second model 1.75) against the same without it (0) and against the
    second model alone: scores, best edges and candidates as without it; every read's row is the
    first model's or the second's, the record counting those that took the second's (some do)."""
    preset = ScoringParams.preset("protein")
    assert preset.second_model == 1.75 and PRESETS["protein"][11] == 1.75
    first = ScoringParams(*PRESETS["protein"][:11])
    files = _runs(tmp_path, {"on": ("cpu", preset), "off": ("cpu", first), "second": ("cpu", preset.second())},
                  _divergent_reads(tmp_path / "reads.fa"))
    on, off, second = files["on"], files["off"], files["second"]
    assert on.record["parameters"]["second_model"] == 1.75 and off.record["parameters"]["second_model"] == 0
    for path in ("best_edge", "score", "candidates/edge", "candidates/score", "status"):
        np.testing.assert_array_equal(on.column(path), off.column(path), path)
    rows, first_rows, second_rows = (f.column("aligned") for f in (on, off, second))
    from_first = (rows == first_rows).all(axis=1)
    from_second = (rows == second_rows).all(axis=1)
    profiled = ~(from_first | from_second)  # the reference profile's own alignment (test_profile_alignment.py)
    took = from_second & ~from_first
    assert on.record["traceback"]["second"] == took.sum() > 0 and off.record["traceback"]["second"] == 0
    assert on.record["traceback"]["profile"] == profiled.sum() > 0 and off.record["traceback"]["profile"] == 0
    # and those are the reads whose second alignment the profile score (its plain transcription)
    # prefers, on the reference's rows with weights from the first model's alignment
    alignment = read_alignment(DATA / "protein" / "ref.phy", alphabet="protein")
    tree = EdgeTree.from_dendropy(read_tree(DATA / "protein" / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(DATA / "protein" / "tree.nwk")).tip_rows
    texts = {block.split("\n", 1)[0]: block.split("\n", 1)[1].replace("\n", "")
             for block in (tmp_path / "reads.fa").read_text().split(">")[1:]}
    sequences = [texts[n.decode() if isinstance(n, bytes) else str(n)] for n in off.names()]
    offsets = np.concatenate(([0], np.cumsum([len(t) for t in sequences])))
    residues = residue_index_table(PROTEIN)[np.frombuffer("".join(sequences).encode(), np.uint8)]
    columns = [residue_columns(f.column("start"), [c.decode() if isinstance(c, bytes) else str(c)
                                                   for c in f.column("cigar")], offsets) for f in (off, second)]
    reference = reference_residues(tip_rows, PROTEIN)
    final = residue_columns(on.column("start"), [c.decode() if isinstance(c, bytes) else str(c)
                                                 for c in on.column("cigar")], offsets)
    expected = np.zeros(took.size, bool)
    for q in range(took.size):
        read, (a, b), ours = residues[offsets[q]:offsets[q + 1]].tolist(), (
            c[offsets[q]:offsets[q + 1]].tolist() for c in columns), final[offsets[q]:offsets[q + 1]].tolist()
        expected[q] = a != b and plain_score(reference, read, b, a) > plain_score(reference, read, a, a)
        if profiled[q]:  # the profile's alignment beats the chosen one by more than SCORE_MARGIN
            chosen = b if expected[q] else a
            assert plain_score(reference, read, ours, chosen) > plain_score(reference, read, chosen, chosen) \
                + SCORE_MARGIN
    np.testing.assert_array_equal(expected & ~profiled, took)


def test_the_second_model_is_for_protein_and_a_column_weight(tmp_path):
    """DNA has no substitution matrix: --second-model on DNA data is an input error naming the
    option; the value is a column weight; the doubled penalties are the second model's."""
    from papara_py.cli import main

    code = main(["-t", str(DATA / "example" / "tree.nwk"), "-s", str(DATA / "example" / "ref.phy"),
                 "-r", str(DATA / "example" / "reads.fa"), "-o", str(tmp_path / "x.h5"), "--second-model", "1"])
    assert code == 2 and not (tmp_path / "x.h5").exists()
    for value in (-1, 11, True, "1"):
        with pytest.raises(ValueError, match="second_model"):
            ScoringParams(second_model=value)
    second = ScoringParams.preset("protein").second()
    assert second.setting() == (6, 12, 10, 6, 32, 4, 1.75, 8, 4, 1, 10, 0.0)
    assert ScoringParams(vote_window=700, nearest_bonus=600, second_model=1).second().vote_window == 1000


def test_a_gpu_run_chooses_as_the_cpu_run(opencl_device, tmp_path, monkeypatch):
    """The divergent reads' protein run on the GPU (PoCL here): the second model's ranking and
    traceback go to the device (spied), and every per-read dataset equals the CPU run's."""
    from papara_py.engine import gpu_trace, opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    weights = []
    real = gpu_trace.GpuTracer.align_many

    def spying(self, *args, **options):
        weights.append(args[5].column_weight)
        return real(self, *args, **options)

    monkeypatch.setattr(gpu_trace.GpuTracer, "align_many", spying)
    preset = ScoringParams.preset("protein")
    files = _runs(tmp_path, {"gpu": ("gpu", preset), "cpu": ("cpu", preset)}, _divergent_reads(tmp_path / "r.fa"))
    assert 1.75 in weights and 1.0 in weights
    assert files["gpu"].record["traceback"]["second"] == files["cpu"].record["traceback"]["second"] > 0
    assert files["gpu"].record["traceback"]["profile"] == files["cpu"].record["traceback"]["profile"] > 0
    for path in ("best_edge", "score", "cigar", "aligned", "status"):
        np.testing.assert_array_equal(files["gpu"].column(path), files["cpu"].column(path), path)
