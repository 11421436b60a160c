"""The location check of DESIGN.md 5 (model/location.py, `location_check`).

The pairwise alignment against a brute force over every semi-global path, its traceback's path
scoring what it says, the relocation rule at its cases (elsewhere altogether, a column off, beside
a close relative, off) and protein runs with the check on and off: scores, best edges and
candidates identical, and each moved read on its best-scoring reference sequence's columns.
"""

from __future__ import annotations

import logging
from functools import cache
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.io.inputs import match_tips, read_alignment, read_tree
from papara_py.io.run_file import RunFile
from papara_py.model.column_costs import substitution_scores
from papara_py.model.location import (
    AMBIGUOUS_SCORE,
    GAP_EXTEND,
    GAP_OPEN,
    NEAR_COLUMNS,
    PADDING_SCORE,
    SCORE_FLOOR,
    lane_scores,
    read_profile,
    relocate,
    score_matrix,
    semi_global,
)
from papara_py.model.params import PRESETS, ScoringParams
from papara_py.model.paths import cigar_string, path_ops, place_read
from papara_py.phylo.encoding import PROTEIN
from papara_py.phylo.residues import (
    LANES,
    LaneSequences,
    reference_residues,
    reference_sequences,
)
from papara_py.phylo.tree import EdgeTree
from papara_py.run.config import RunConfig
from papara_py.run.runner import run

PROTEIN_DATA = Path(__file__).resolve().parent.parent / "data" / "protein"
MATRIX = score_matrix(PROTEIN)


def test_the_score_matrix_is_blosum62_and_ambiguity_scores_minus_one():
    states = PROTEIN.n_states
    np.testing.assert_array_equal(MATRIX[:states, :states], substitution_scores(PROTEIN))
    assert (MATRIX[states] == AMBIGUOUS_SCORE).all() and (MATRIX[:, states] == AMBIGUOUS_SCORE).all()
    assert (GAP_OPEN, GAP_EXTEND, AMBIGUOUS_SCORE) == (11, 1, -1)


def brute_force(read: tuple, row: tuple) -> int:
    """The best score over every path of the whole read against any part of the row: matches,
    insertions (I) and skipped row residues (D), a gap's first residue GAP_OPEN and each further
    one GAP_EXTEND; a D run only after a match (never first, last, or next to an I run)."""
    n, m = len(read), len(row)

    @cache
    def best(j: int, i: int, last: str) -> float:
        options = [0.0] if j == n and last != "D" else []
        if j < n and i < m:
            options.append(int(MATRIX[read[j], row[i]]) + best(j + 1, i + 1, "M"))
        if j < n and last != "D":
            options.append(-(GAP_EXTEND if last == "I" else GAP_OPEN) + best(j + 1, i, "I"))
        if i < m and last in "MD" and last:
            options.append(-(GAP_EXTEND if last == "D" else GAP_OPEN) + best(j, i + 1, "D"))
        return max(options, default=-np.inf)

    return int(max(best(0, start, "") for start in range(m + 1)))


def lane_best(read: np.ndarray, rows: list[np.ndarray]) -> list[int]:
    """lane_scores' best score of `read` against each of `rows` (LaneSequences' groups)."""
    codes = np.concatenate(rows).astype(np.uint8) if rows else np.zeros(0, np.uint8)
    offsets = np.concatenate(([0], np.cumsum([r.size for r in rows]))).astype(np.int64)
    lanes = LaneSequences.of(codes, offsets, MATRIX.shape[0])
    n = read.size
    profile = np.empty((n, MATRIX.shape[0] + 1), np.int32)
    read_profile(read, MATRIX, profile)
    cells = [np.empty((n + 1, LANES), np.int32) for _ in range(3)]
    scratch, best = np.empty((n, LANES), np.int32), np.empty(LANES, np.int32)
    carried = np.empty((3, LANES), np.int32)
    found = [0] * len(rows)
    for g in range(lanes.starts.size - 1):
        lane_scores(profile, lanes.codes[lanes.starts[g]:lanes.starts[g + 1]], *cells, scratch, carried, best)
        for lane, tip in enumerate(lanes.tips[g * LANES:(g + 1) * LANES].tolist()):
            if tip >= 0:
                found[tip] = int(best[lane])
    return found


def path_score(read: np.ndarray, row: np.ndarray, faced: np.ndarray) -> int:
    """What the path `faced` (each read residue's row position, -1 inserted) scores."""
    placed = [(j, i) for j, i in enumerate(faced.tolist()) if i >= 0]
    assert all(b[1] > a[1] for a, b in pairwise(placed))
    score = sum(int(MATRIX[read[j], row[i]]) for j, i in placed)
    inserted = np.flatnonzero(faced < 0)
    runs = np.split(inserted, np.flatnonzero(np.diff(inserted) > 1) + 1) if inserted.size else []
    score -= sum(GAP_OPEN + GAP_EXTEND * (len(r) - 1) for r in runs)
    for (j1, i1), (j2, i2) in pairwise(placed):
        if i2 - i1 > 1:
            assert j2 == j1 + 1, "a skip next to an insertion"
            score -= GAP_OPEN + GAP_EXTEND * (i2 - i1 - 2)
    return score


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, PROTEIN.n_states), min_size=1, max_size=5),
       st.lists(st.integers(0, PROTEIN.n_states), min_size=0, max_size=6))
def test_the_pairwise_score_is_the_best_path_and_the_traceback_scores_it(read, row):
    """best_score (linear memory) and semi_global (full matrices) both equal the brute force, and
    the path semi_global traces scores exactly that."""
    read_codes, row_codes = np.array(read, np.uint8), np.array(row, np.uint8)
    expected = brute_force(tuple(read), tuple(row))
    assert lane_best(read_codes, [row_codes])[0] == expected
    faced = np.full(len(read), 99, np.int64)
    assert semi_global(read_codes, row_codes, MATRIX, faced) == expected
    assert path_score(read_codes, row_codes, faced) == expected


def test_lanes_score_each_sequence_as_alone_whatever_its_length_and_group():
    """37 sequences of 0-60 residues (three groups of LANES, lengths mixed, padding in every
    group) scored at once: each lane's score is the brute force's (short reads) and the
    full-matrix semi_global's (longer ones); the padding scores PADDING_SCORE."""
    rng = np.random.default_rng(11)
    rows = [rng.integers(0, PROTEIN.n_states + 1, rng.integers(0, 61)).astype(np.uint8) for _ in range(37)]
    for n in (1, 3, 4, 17, 50):
        read = rng.integers(0, PROTEIN.n_states + 1, n).astype(np.uint8)
        faced = np.empty(n, np.int64)
        expected = [semi_global(read, row, MATRIX, faced) for row in rows]
        if n <= 4:
            assert expected[:5] == [brute_force(tuple(read), tuple(row)) for row in rows[:5]]
        assert lane_best(read, rows) == expected
    profile = np.empty((1, MATRIX.shape[0] + 1), np.int32)
    read_profile(np.zeros(1, np.uint8), MATRIX, profile)
    assert profile[0, -1] == PADDING_SCORE and (profile[0, :-1] == MATRIX[0]).all()


def _case(rng: np.random.Generator):
    """Three unrelated gapless rows of 40 residues and a read: residues 10-24 of row 1 with three
    substitutions (12 of 15 identical)."""
    letters = np.frombuffer(PROTEIN.letters.encode(), np.uint8)
    rows = letters[rng.integers(0, 20, (3, 40))]
    read = rows[1, 10:25].copy()
    for k in (2, 7, 12):
        read[k] = letters[(PROTEIN.letters.index(chr(read[k])) + 7) % 20]
    return rows, read


def _relocate(rows: np.ndarray, read: np.ndarray, columns_at: list[list[int]], agree: int = 10):
    """relocate() on reads that are all `read`, placed at each of `columns_at` (one per read)."""
    reference = reference_residues(rows, PROTEIN)
    starts, cigars, placed = [], [], []
    for columns in columns_at:
        ops = np.empty(len(columns) + rows.shape[1], np.uint8)
        start, length = path_ops(np.array(columns, np.int64), ops)
        starts.append(start)
        cigars.append(cigar_string(ops[:length]))
        placed.append(place_read(read.tobytes(), start, cigars[-1], rows.shape[1]))
    residues = np.tile(read, len(columns_at))
    offsets = np.arange(len(columns_at) + 1, dtype=np.int64) * read.size
    return relocate(np.array(starts, np.int32), cigars, np.stack(placed), residues, offsets, PROTEIN, reference,
                    reference_sequences(reference, PROTEIN.n_states), agree)


def test_a_read_elsewhere_altogether_takes_its_nearest_sequence_columns_and_others_stay():
    """Placed 10 columns off: moved onto row 1's columns 10-24 (its start, CIGAR and row as a path
    there gives them); placed NEAR_COLUMNS off: stays (the model and the mapping agree on the
    place); at the true place (a close relative, 12 of 15 identical): not checked, stays; with
    the check at 0: nothing moves; a read like no sequence (below SCORE_FLOOR): stays. Residues
    with no column (inserted) count for neither."""
    rows, read = _case(np.random.default_rng(3))
    truth = list(range(10, 25))
    far, near = list(range(15)), [c + NEAR_COLUMNS for c in truth]
    inserted = [-1] * 5 + list(range(10))
    starts, cigars, out_rows, moved = _relocate(rows, read, [far, near, truth, inserted])
    assert moved.tolist() == [True, False, False, True]
    for q in (0, 3):
        assert starts[q] == 10 and cigars[q] == "15M"
        assert out_rows[q].tobytes() == b"-" * 10 + read.tobytes() + b"-" * 15
    assert starts[1] == 10 + NEAR_COLUMNS and cigars[1] == "15M"
    assert starts[2] == 10 and cigars[2] == "15M"
    assert _relocate(rows, read, [far], agree=0)[3].tolist() == [False]
    # a read like no reference sequence (its best mapping below SCORE_FLOOR) stays wherever it is
    unrelated = np.frombuffer(b"WWWWWCCCCCWWWWW", np.uint8).copy()
    faced = np.empty(unrelated.size, np.int64)
    codes = [np.array([PROTEIN.letters.index(chr(c)) for c in row], np.uint8) for row in rows]
    read_codes = np.array([PROTEIN.letters.index(chr(c)) for c in unrelated], np.uint8)
    best = max(semi_global(read_codes, row, MATRIX, faced) for row in codes)
    floor, whole = SCORE_FLOOR
    assert best * whole < floor * unrelated.size, "the case needs a read below the floor"
    assert _relocate(rows, unrelated, [far])[3].tolist() == [False]
    above = rows[1, 10:25].copy()  # the same place, the read identical to row 1 there: moved
    assert _relocate(rows, above, [far])[3].tolist() == [True]
    # one column further than NEAR_COLUMNS disagrees: moved at any agreement above 0
    assert _relocate(rows, read, [[c + NEAR_COLUMNS + 1 for c in truth]], agree=1)[3].tolist() == [True]


def test_a_read_beside_a_gapped_row_maps_onto_that_rows_columns():
    """The mapping skips the best row's gap columns: a read of row 1's residues around its gap is
    placed on the residues' own columns, a deletion over the gap."""
    rows, read = _case(np.random.default_rng(4))
    gapped = rows.copy()
    gapped[:, 15:18] = ord("-")
    gapped[1, 10:25] = np.frombuffer(b"-" * 15, np.uint8)
    gapped[1, 20:35] = np.concatenate([read[:5], np.frombuffer(b"---", np.uint8), read[5:12]])[:15]
    # row 1 now holds read[:12] with a three-column gap after its fifth residue, from column 20
    starts, cigars, _, moved = _relocate(gapped, read[:12], [list(range(12))])
    assert moved.tolist() == [True] and starts[0] == 20 and cigars[0] == "5M3D7M"


def _mutated_reads(path: Path, rate: float, seed: int) -> None:
    """data/protein's reads with `rate` of their residues substituted: far from every reference
    sequence, as the reads the check is for."""
    rng = np.random.default_rng(seed)
    lines = (PROTEIN_DATA / "reads.fa").read_text().splitlines()
    out = []
    for line in lines:
        if not line.startswith(">"):
            letters = list(line)
            for k in np.flatnonzero(rng.random(len(letters)) < rate):
                letters[k] = PROTEIN.letters[rng.integers(0, 20)]
            line = "".join(letters)
        out.append(line)
    path.write_text("\n".join(out) + "\n")


def _far_runs(tmp_path: Path, runs: dict[str, tuple[str, int]]) -> dict[str, RunFile]:
    """data/protein's tree and reference with `_mutated_reads` (55%, seed 5), once per entry of
    `runs` (name: (device, location check)), the rest of the protein preset as it is."""
    reads = tmp_path / "far.fa"
    _mutated_reads(reads, 0.55, 5)
    files = {}
    for name, (device, agree) in runs.items():
        out = tmp_path / f"{name}.h5"
        run(RunConfig(tree=str(PROTEIN_DATA / "tree.nwk"), alignment=str(PROTEIN_DATA / "ref.phy"),
                      reads=str(reads), output=str(out), threads=2, device=device,
                      params=ScoringParams(*PRESETS["protein"][:10], location_check=agree)))
        files[name] = RunFile(out)
    return files


def test_protein_runs_with_the_check_keep_scores_and_move_reads_onto_their_nearest_sequence(tmp_path):
    """Reads 55% substituted (none beside a close relative) with the protein preset, the check at
    100% against off: scores, best edges and candidates identical; the record counts the moved
    reads; each moved read lies on the columns of its best-scoring reference sequence (every row
    scored by semi_global, the first of the best in tip order) and the others are unchanged."""
    files = _far_runs(tmp_path, {"on": ("cpu", 100), "off": ("cpu", 0)})
    on, off = files["on"], files["off"]
    reads = tmp_path / "far.fa"
    assert on.record["parameters"]["location_check"] == 100 and off.record["parameters"]["location_check"] == 0
    for path in ("best_edge", "score", "candidates/edge", "candidates/score", "status"):
        np.testing.assert_array_equal(on.column(path), off.column(path), path)
    changed = on.column("cigar") != off.column("cigar")
    assert on.record["traceback"]["relocated"] == changed.sum() > 0 and off.record["traceback"]["relocated"] == 0
    alignment = read_alignment(PROTEIN_DATA / "ref.phy", alphabet="protein")
    tree = EdgeTree.from_dendropy(read_tree(PROTEIN_DATA / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(PROTEIN_DATA / "tree.nwk")).tip_rows
    table = np.full(256, PROTEIN.n_states, np.uint8)  # anything but a residue: the matrix's extra index
    for k, letter in enumerate(PROTEIN.letters):
        table[ord(letter)] = k
    held = [np.flatnonzero(row != ord("-")) for row in tip_rows]  # each row's columns, gaps removed
    rows = [table[row[columns]] for row, columns in zip(tip_rows, held)]
    sequences = reference_sequences(reference_residues(tip_rows, PROTEIN), PROTEIN.n_states)
    np.testing.assert_array_equal(sequences.codes, np.concatenate(rows))  # what the run checked with
    np.testing.assert_array_equal(sequences.columns, np.concatenate(held))
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in on.names()]
    texts = {}
    for line in reads.read_text().split(">")[1:]:
        name, sequence = line.split("\n", 1)
        texts[name.split()[0]] = sequence.replace("\n", "")
    for q in np.flatnonzero(changed):
        read = table[np.frombuffer(texts[names[q]].encode(), np.uint8)]
        scored = []
        for t, row in enumerate(rows):
            faced = np.empty(read.size, np.int64)
            scored.append((semi_global(read, row, MATRIX, faced), t, faced))
        best = max(score for score, _, _ in scored)
        _, tip, faced = next(item for item in scored if item[0] == best)
        columns = held[tip][faced]
        expected = np.full(tip_rows.shape[1], ord("-"), np.uint8)
        expected[columns[faced >= 0]] = np.frombuffer(texts[names[q]].encode(), np.uint8)[faced >= 0]
        assert on.column("aligned")[q].tobytes() == expected.tobytes()
    assert (on.column("aligned")[~changed] == off.column("aligned")[~changed]).all()


def test_the_check_is_for_protein_and_a_percentage(tmp_path):
    """DNA has no substitution matrix: --location-check on DNA data is an input error naming the
    option; the value is a percentage."""
    from papara_py.cli import main

    data = Path(__file__).resolve().parent.parent / "data"
    code = main(["-t", str(data / "example" / "tree.nwk"), "-s", str(data / "example" / "ref.phy"),
                 "-r", str(data / "example" / "reads.fa"), "-o", str(tmp_path / "x.h5"), "--location-check", "10"])
    assert code == 2 and not (tmp_path / "x.h5").exists()
    for value in (-1, 101, True, 2.5):
        with pytest.raises(ValueError, match="location_check"):
            ScoringParams(location_check=value)


def test_the_device_scores_every_read_against_every_sequence_as_the_host(opencl_device):
    """kernels/location_score.cl (engine/gpu_location.py) against the host's tip_scores: reads of
    1-70 residues (ambiguity index included) against 37 sequences of 0-60 residues, in one launch
    and in launches of one read each (a tiny memory budget), equal score for score."""
    import pyopencl as cl

    from papara_py.engine.gpu import shared_context
    from papara_py.engine.gpu_location import location_scores
    from papara_py.model.location import tip_scores

    rng = np.random.default_rng(12)
    rows = [rng.integers(0, PROTEIN.n_states + 1, rng.integers(0, 61)).astype(np.uint8) for _ in range(37)]
    ref_codes = np.concatenate(rows)
    ref_offsets = np.concatenate(([0], np.cumsum([r.size for r in rows]))).astype(np.int64)
    lengths = rng.integers(1, 71, 40)
    codes = rng.integers(0, PROTEIN.n_states + 1, int(lengths.sum())).astype(np.uint8)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    which = np.sort(rng.choice(40, 25, replace=False)).astype(np.int64)
    lanes = LaneSequences.of(ref_codes, ref_offsets, MATRIX.shape[0])
    host = np.zeros((which.size, len(rows)), np.int32)
    tip_scores(codes, offsets, which, lanes.codes, lanes.starts, lanes.tips, MATRIX, host)
    faced = np.empty(70, np.int64)
    assert host[3, 5] == semi_global(codes[offsets[which[3]]:offsets[which[3] + 1]], rows[5], MATRIX, faced)
    context = shared_context(opencl_device.cl_device)
    queue = cl.CommandQueue(context, opencl_device.cl_device)
    for budget in (1 << 30, 1):
        device = location_scores(context, queue, opencl_device.cl_device, budget, codes, offsets, which, ref_codes,
                                 ref_offsets, MATRIX)
        np.testing.assert_array_equal(device, host)


def test_a_gpu_run_checks_locations_on_the_device_with_the_hosts_results(opencl_device, tmp_path, monkeypatch):
    """The far reads' protein run with the check at 100% on the GPU (PoCL here): its scoring pass
    runs on the device (spied), and every per-read dataset equals the CPU run's."""
    from papara_py.engine import gpu_trace, opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    calls = []
    real = gpu_trace.GpuTracer.location_scores

    def spying(self, *args):
        calls.append(args[2].size)
        return real(self, *args)

    monkeypatch.setattr(gpu_trace.GpuTracer, "location_scores", spying)
    files = _far_runs(tmp_path, {"gpu": ("gpu", 100), "cpu": ("cpu", 100)})
    assert sum(calls) > 0 and files["gpu"].record["traceback"]["relocated"] > 0
    assert files["gpu"].record["traceback"]["relocated"] == files["cpu"].record["traceback"]["relocated"]
    for path in ("best_edge", "score", "cigar", "aligned", "status"):
        np.testing.assert_array_equal(files["gpu"].column(path), files["cpu"].column(path), path)


def test_a_device_fault_in_the_check_leaves_it_to_the_host(opencl_device, tmp_path, monkeypatch, caplog):
    """A GPU that fails the check's scoring pass is taken out with a notice, and the host scores
    the reads instead: the same columns as a CPU run."""
    caplog.set_level(logging.INFO, logger="papara_py")
    from papara_py.engine import gpu_trace, opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])

    def failing(self, *args):
        raise RuntimeError("CL_OUT_OF_RESOURCES")

    monkeypatch.setattr(gpu_trace.GpuTracer, "location_scores", failing)
    files = _far_runs(tmp_path, {"gpu": ("gpu", 100), "cpu": ("cpu", 100)})
    assert "the GPU location check failed (RuntimeError: CL_OUT_OF_RESOURCES)" in caplog.text
    assert files["gpu"].record["traceback"]["relocated"] == files["cpu"].record["traceback"]["relocated"] > 0
    np.testing.assert_array_equal(files["gpu"].column("aligned"), files["cpu"].column("aligned"))
