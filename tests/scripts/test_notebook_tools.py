"""The accuracy notebook's measuring tools (notebook/accuracy-2026-11/points.py, evaluate.py,
loss/perread.py and mea-objective/statacc.py).

Every validation number in docs/accuracy.md since 2026-11-29 is a points.py record, and every
fit-set table an evaluate.py summary; a wrong score, a point read into the wrong fields or a
margin against the wrong peer would put wrong numbers into the docs without any error. So:
points.py's record for a set must be the column accuracy bench_accuracy scores for the same run,
the preset's own values given as a point must give the preset's record (parse_point reads all
nine fields, the placement temperature included), and its summary's margins must be taken
against the better of the two peers' stored records; evaluate.py's table must count, rank and
average the rows it is given.

loss/perread.py's counts are the diagnosis of where papara-py loses residues to MAFFT, and
mea-objective/statacc.py's state accuracy is what sees residues the truth inserts; a residue
counted against the wrong column, a read matched to another's candidates or an inserted residue
counted right wherever it went would mislead both without any error. So: perread.py must count
a read's residues with a true column put elsewhere (all of them for a read without a placement),
find the edge of the truth's split (from either side) among that read's own candidates, and its
table must be those counts for each tool on the same run; statacc.py must count an inserted
residue right only when it is left inserted (a read without a placement all wrong), score just
the fit sets of the suites asked for (sets.tsv) or the set folders of --folder, at the point
given, and its record for a set must be these counts on the same run.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebook" / "accuracy-2026-11"
PROTEIN = ROOT / "data" / "protein"


def _preset_point(name: str) -> str:
    """The preset's values as points.py's POINT (accuracy_study.parse_point's nine fields)."""
    from papara_py.model.params import PARAMETER_NAMES, ScoringParams

    params = ScoringParams.preset(name)
    return ",".join(str(getattr(params, field)) for field in PARAMETER_NAMES)


def test_points_records_the_scored_accuracy_reads_the_whole_point_and_takes_the_better_peer(tmp_path):
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "protein").symlink_to(PROTEIN, target_is_directory=True)
    ba = load_script("bench_accuracy")
    data = ba.Data.from_dir(PROTEIN, "protein", "protein")
    placements, _ = ba.run_papara_inprocess(data, tmp_path, params=None, threads=1)
    expected = ba.score(placements, data.truth)["column_accuracy"]
    peers = {"mafft": expected - 0.01, "hmmalign": expected + 0.02}  # the better one is hmmalign's
    for tool, accuracy in peers.items():
        (sets / f"protein.{tool}.json").write_text(json.dumps({"column_accuracy": accuracy}))
    point = _preset_point("protein")
    out = tmp_path / "records.jsonl"
    result = subprocess.run([sys.executable, str(NOTEBOOK / "points.py"), str(sets), str(out), "preset", point,
                             "--alphabet", "protein", "--procs", "1", "--repo", str(ROOT)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    records = {r["point"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"preset", point} and all(r["set"] == "protein" for r in records.values())
    assert records["preset"]["papara"] == pytest.approx(expected, abs=1e-12)
    assert records[point]["papara"] == records["preset"]["papara"]
    margin = expected - peers["hmmalign"]
    assert f"preset: 1 sets, at or above the better peer 0, worst {margin:+.4f}, mean {margin:+.4f}" \
        in result.stdout


def _notebook_tool(relative: str, name: str):
    """The notebook's script NOTEBOOK/relative as the module `name` (the notebook is not a package)."""
    spec = importlib.util.spec_from_file_location(name, NOTEBOOK / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _evaluate():
    return _notebook_tool("evaluate.py", "notebook_evaluate")


def test_evaluate_summary_counts_ranks_and_averages_the_rows(capsys):
    rows = [
        {"set": "a", "suite": "s1", "family": "f", "margin": 0.004, "delta_0.11.0": 0.001, "wall_s": 1.0},
        {"set": "b", "suite": "s1", "family": "f", "margin": -0.002, "delta_0.11.0": -0.003, "wall_s": 2.0},
        {"set": "c", "suite": "s2", "family": "g", "margin": 0.0, "delta_0.11.0": float("nan"), "wall_s": 4.0},
    ]
    _evaluate().summarise(rows, {"f": {"sd_margin": "0.002"}}, 7.0, "repo", None)
    lines = capsys.readouterr().out.splitlines()
    assert "| s1 | 2 | 1 | -0.0020 (b) | +0.0010 | -0.0010 | 1 / 1 | 3 |" in lines
    assert "| s2 | 1 | 1 | +0.0000 (c) | +0.0000 | +nan | 0 / 0 | 4 |" in lines
    assert "| ALL | 3 | 2 | -0.0020 (b) | +0.0007 | -0.0010 | 1 / 1 | 7 |" in lines
    # family f: two seeds, mean delta -0.001 against SD 0.002 / sqrt(2)
    assert "| f | s1 | 2 | +0.0010 | 1/2 | -0.0010 | 0.0020 | -0.7 |" in lines


def _protein_subset(set_dir: Path, reads: list[str], truth: dict) -> None:
    """A set folder with data/protein's tree and reference, the reads `reads` of its reads.fa and
    `truth` (name -> (true columns, true split or None)) as its truth.tsv."""
    set_dir.mkdir()
    for name in ("tree.nwk", "ref.fasta"):
        (set_dir / name).symlink_to(PROTEIN / name)
    lines = (PROTEIN / "reads.fa").read_text().split()
    sequences = {lines[i][1:]: lines[i + 1] for i in range(0, len(lines), 2)}
    (set_dir / "reads.fa").write_text("".join(f">{name}\n{sequences[name]}\n" for name in reads))
    rows = [f"{name}\t-\t+\t{','.join(sorted(split or ()))}\t{','.join(map(str, columns))}\n"
            for name, (columns, split) in truth.items()]
    (set_dir / "truth.tsv").write_text("name\tsource\tstrand\ttrue_split\ttrue_columns\n" + "".join(rows))


@pytest.fixture
def perread(monkeypatch):
    """loss/perread.py, its bench_accuracy the one load_script gives (the path it adds is undone after)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    ba = load_script("bench_accuracy")
    module = _notebook_tool("loss/perread.py", "notebook_perread")
    assert module.ba is ba
    return module


def test_perread_counts_a_reads_wrong_residues_and_finds_its_true_edge_among_its_own_candidates(tmp_path, perread):
    import h5py
    import numpy as np

    Placement = perread.ba.Placement
    placements = {"r1": Placement([3, 4, -1, 7, 9]), "r2": Placement([-1, 11, 12])}
    # 3 and 9 right, 4 for 5 wrong; the two residues the truth inserts do not count, even put in column 7
    assert perread.wrong_residues(placements, "r1", [3, 5, -1, -1, 9]) == 1
    assert perread.wrong_residues(placements, "r2", [10, 11, 12]) == 1  # column 10's residue left out
    assert perread.wrong_residues(placements, "r3", [-1, 4, 5]) == 2  # no placement: both scored ones wrong

    tree = tmp_path / "tree.nwk"
    tree.write_text("((A,B),(C,D),(E,F));\n")
    # edges in post-order of the Newick (docs/reference/run-file.md): A 0, B 1, AB 2, C 3, D 4, CD 5, E 6, F 7, EF 8
    truth = {"r1": ([0], frozenset("CD")),     # edge 5, the best candidate
             "r2": ([0], frozenset("ABEF")),   # edge 5 again, its split given from the other side: the second
             "r3": ([0], frozenset("AB")),     # edge 2: not a candidate
             "r4": ([0], None),                # no true split
             "r5": ([0], frozenset("AC")),     # no edge has this split
             "r6": ([0], frozenset("EF"))}     # not in the run
    run = {"r3": [8, 5, 0], "r4": [2, 8, 0], "r1": [5, 0, -1], "r5": [0, 3, -1], "r2": [2, 5, -1]}
    with h5py.File(tmp_path / "papara.h5", "w") as handle:
        handle.create_dataset("reads/names", data=list(run), dtype=h5py.string_dtype())
        handle.create_dataset("reads/candidates/edge", data=np.array(list(run.values()), dtype=np.int32))
    data = perread.ba.Data("hand", tree, tmp_path / "ref.fasta", tmp_path / "reads.fa", truth)
    assert perread.true_edge_is_candidate(data, tmp_path / "papara.h5") == \
        {"r1": True, "r2": True, "r3": False, "r4": None, "r5": None, "r6": None}


def test_perread_tabulates_each_tools_wrong_residues_and_the_true_edge_on_the_same_run(
        tmp_path, perread, monkeypatch, capsys):
    import h5py

    ba = perread.ba
    names = [f"read_{i:06d}" for i in range(1, 13)]
    full = ba.read_truth(PROTEIN / "truth.tsv")
    truth = {name: full[name] for name in names}
    absent = names[-1]  # in the truth, not in reads.fa: papara-py places none of it
    reads = [name for name in names if name != absent]
    _protein_subset(tmp_path / "pre", reads, truth)
    before, _ = ba.run_papara_inprocess(ba.Data.from_dir(tmp_path / "pre", alphabet="protein"), tmp_path / "pre",
                                        params=None, threads=1)

    def scored_five(name: str, wrong: int) -> list[int]:
        """Truth for `name`: five residues papara-py puts in a column scored, `wrong` of them elsewhere."""
        columns = before[name].columns
        out = [-1] * len(columns)
        for k, i in enumerate([i for i, column in enumerate(columns) if column >= 0][:5]):
            out[i] = columns[i] + 1 if k < wrong else columns[i]
        return out

    truth[absent] = ([0, 1, 2, -1, 3], truth[absent][1])  # column 0 a scored one
    truth["read_000002"] = (truth["read_000002"][0], None)  # no true split
    truth["read_000004"] = (scored_five("read_000004", 4), truth["read_000004"][1])  # 80% wrong: at least 80%
    truth["read_000006"] = (scored_five("read_000006", 3), truth["read_000006"][1])  # 60% wrong: not
    _protein_subset(tmp_path / "set", reads, truth)

    # MAFFT as a stand-in: each read's truth, but 0, 1 or 2 scored residues a column off, residues
    # the truth inserts put in column 0 (not scored), and one read without a placement
    damage = {name: k % 3 for k, name in enumerate(names)}
    unplaced = names[6]

    def mafft(data, work, threads=2, adjust_direction=False):
        placed = {}
        for name, (columns, _) in data.truth.items():
            off = [i for i, t in enumerate(columns) if t >= 0][:damage[name]]
            placed[name] = ba.Placement([t + 1 if i in off else max(t, 0) for i, t in enumerate(columns)])
        del placed[unplaced]
        return placed, 0.0

    monkeypatch.setattr(ba, "run_mafft", mafft)
    work = tmp_path / "work"
    monkeypatch.setattr(sys, "argv", ["perread.py", str(tmp_path / "set"), str(work), "protein"])
    assert perread.main() == 0

    # the expected table from the run file perread.py's own run wrote, counted here
    data = ba.Data.from_dir(tmp_path / "set", alphabet="protein")
    papara = ba.read_run_file(work / "papara.h5", data)
    with h5py.File(work / "papara.h5") as handle:
        newick = handle["tree/newick_numbered"][()]
        run_names = list(handle["reads/names"].asstr()[:])
        candidates = handle["reads/candidates/edge"][:]
    splits, tips = ba.edge_splits_from_numbered(newick.decode() if isinstance(newick, bytes) else str(newick))

    def candidate(name: str, split) -> bool | None:
        true = None if split is None else ba.normalise_split(split, tips)
        if name not in run_names or true not in splits.values():
            return None
        return true in {splits[int(e)] for e in candidates[run_names.index(name)] if e >= 0}

    expected = []
    for name, (columns, split) in truth.items():
        got = papara.get(name)
        papara_wrong = sum(t >= 0 and (got is None or got.columns[i] != t) for i, t in enumerate(columns))
        residues = sum(t >= 0 for t in columns)
        expected.append([name, residues, papara_wrong, residues if name == unplaced else damage[name],
                         candidate(name, split)])
    rows = json.loads((work / "perread.json").read_text())
    assert rows == expected
    by_name = {row[0]: row for row in rows}
    assert by_name["read_000004"][1:3] == [5, 4] and by_name["read_000006"][1:3] == [5, 3]
    assert by_name[absent][2] == by_name[absent][1] and by_name[absent][4] is None
    assert by_name["read_000002"][4] is None and {True, False} <= {row[4] for row in rows}

    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"of {sum(r[1] for r in rows)} residues: papara-py wrong {sum(r[2] for r in rows)}, "
                      f"MAFFT wrong {sum(r[3] for r in rows)}")
    for line, (label, among) in zip(out[1:3], (("among", True), ("not among", False))):
        part = [r for r in rows if r[4] is among]
        assert line == (f"reads whose true edge is {label} papara-py's candidates: {len(part)}; papara-py wrong "
                        f"{sum(r[2] for r in part)}, MAFFT wrong {sum(r[3] for r in part)}")
    lost = [r for r in rows if 5 * r[2] >= 4 * r[1]]
    assert {absent, "read_000004"} <= {r[0] for r in lost} and "read_000006" not in {r[0] for r in lost}
    assert out[3] == (f"reads at least 80% wrong: {len(lost)}, {sum(r[2] for r in lost)} residues wrong "
                      f"(MAFFT {sum(r[3] for r in lost)} on them)")
    listed = [line.split("\t") for line in out[4:]]  # every read (fewer than 20), papara-py's excess first
    assert sorted(listed) == sorted([str(v) for v in row] for row in rows)
    excess = [int(r[2]) - int(r[3]) for r in listed]
    assert excess == sorted(excess, reverse=True)


def test_statacc_counts_an_inserted_residue_right_only_when_left_inserted(tmp_path, monkeypatch):
    statacc = _notebook_tool("mea-objective/statacc.py", "notebook_statacc")
    ba = load_script("bench_accuracy")
    monkeypatch.setattr(sys, "path", list(sys.path))  # one() puts REPO and its scripts/ first
    truth = {"a": {"r1": [0, 1, 2, -1, 3], "r2": [-1, -1, 4, 5], "r3": [6, -1, 7]},
             "b": {"q1": [-1, 1, 2]}}
    placed = {"a": {"r1": [0, 1, 5, -1, 3],  # 3 of 4 scored right; the inserted one left inserted
                    "r2": [7, -1, 4, 5]},    # both scored right; one inserted residue put in column 7
              "b": {"q1": [0, 1, 2]}}        # r3 has no placement: all three of its residues wrong
    for name, reads in truth.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "truth.tsv").write_text("name\tsource\tstrand\ttrue_split\ttrue_columns\n" + "".join(
            f"{read}\t-\t+\t\t{','.join(map(str, columns))}\n" for read, columns in reads.items()))
    sets = tmp_path / "sets.tsv"
    sets.write_text("set\tsuite\trole\tfamily\tseed\talphabet\tfolder\n"
                    f"a\ts1\tfit\tf\t1\tprotein\t{tmp_path / 'a'}\n"
                    f"b\ts2\tfit\tg\t1\tdna\t{tmp_path / 'b'}\n"
                    f"c\ts1\tval\tf\t2\tdna\t{tmp_path / 'missing'}\n"     # not a fit set
                    f"d\ts3\tfit\th\t1\tdna\t{tmp_path / 'missing'}\n")    # another suite
    calls = []

    def papara(data, work, params=None, threads=2):
        calls.append((data.name, data.alphabet, params, threads))
        return {read: ba.Placement(columns) for read, columns in placed[data.name].items()}, 0.0

    class InlinePool:  # the two-process pool, in this process (where the stand-in papara-py is)
        def __init__(self, processes):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, function, tasks, chunksize=1):
            return [function(task) for task in tasks]

    monkeypatch.setattr(ba, "run_papara_inprocess", papara)
    monkeypatch.setattr(statacc, "Pool", InlinePool)
    monkeypatch.setattr(statacc, "SETS", sets)
    out = tmp_path / "out.tsv"
    monkeypatch.setattr(sys, "argv", ["statacc.py", str(ROOT), str(out), "--suites", "s1,s2",
                                      "--point", "5,3,9,1,4,2,1.5,0.5"])
    assert statacc.main() == 0
    point = (5, 3, 9, 1, 4, 2, 1.5, 0.5)
    assert calls == [("a", "protein", point, 1), ("b", "dna", point, 1)]
    assert [type(v) for v in calls[0][2]] == [int] * 6 + [float] * 2  # penalties stay integers
    rows = {r["set"]: r for r in csv.DictReader(out.open(), delimiter="\t")}
    # a: 8 scored residues, 5 right; 4 inserted, 1 put in a column, 2 left inserted (r3's not placed at all)
    # b: 2 scored, both right; its 1 inserted residue put in a column (column 0)
    for name, (col_right, col_total, ins_total, ins_placed, state_right) in {"a": (5, 8, 4, 1, 5 + 2),
                                                                              "b": (2, 2, 1, 1, 2 + 0)}.items():
        row = rows[name]
        assert [int(row[k]) for k in ("col_right", "col_total", "ins_total", "ins_placed")] == \
            [col_right, col_total, ins_total, ins_placed]
        assert float(row["col_acc"]) == pytest.approx(col_right / col_total, abs=1e-12)
        assert float(row["state_acc"]) == pytest.approx(state_right / (col_total + ins_total), abs=1e-12)
    assert set(rows) == {"a", "b"}


def _state_counts(placements: dict, truth: dict) -> tuple[int, int, int, int, int]:
    """(scored residues right, scored, inserted, inserted put in a column, inserted left inserted), by
    definition: a read without a placement has every residue wrong."""
    right = scored = inserted = placed = kept = 0
    for name, (columns, _) in truth.items():
        got = placements.get(name)
        for i, t in enumerate(columns):
            g = None if got is None else got.columns[i]
            if t >= 0:
                scored += 1
                right += g == t
            else:
                inserted += 1
                placed += g is not None and g >= 0
                kept += g is not None and g < 0
    return right, scored, inserted, placed, kept


def test_statacc_records_each_set_folders_counts_on_the_same_run(tmp_path):
    from papara_py.model.params import PARAMETER_NAMES, ScoringParams

    ba = load_script("bench_accuracy")
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "protein").symlink_to(PROTEIN, target_is_directory=True)
    full = ba.read_truth(PROTEIN / "truth.tsv")
    names = list(full)[:30]
    _protein_subset(sets / "part", names, {name: full[name] for name in names})
    (sets / "notes").mkdir()  # no truth.tsv: not a set
    preset = ScoringParams.preset("protein")
    point = tuple(getattr(preset, f) // 2 if f == "insertion" else getattr(preset, f) for f in PARAMETER_NAMES)
    out = tmp_path / "out.tsv"
    result = subprocess.run([sys.executable, str(NOTEBOOK / "mea-objective" / "statacc.py"), str(ROOT), str(out),
                             "--folder", str(sets), "--alphabet", "protein", "--point", ",".join(map(str, point))],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(out.open(), delimiter="\t"))
    assert [row["set"] for row in rows] == ["part", "protein"]
    counts = {}
    for row in rows:
        data = ba.Data.from_dir(sets / row["set"], row["set"], "protein")
        placements, _ = ba.run_papara_inprocess(data, tmp_path, params=point, threads=1)
        counts[row["set"]] = right, scored, inserted, placed, kept = _state_counts(placements, data.truth)
        assert placed and kept  # both kinds of inserted residue occur
        assert [int(row[k]) for k in ("col_right", "col_total", "ins_total", "ins_placed")] == \
            [right, scored, inserted, placed]
        assert float(row["col_acc"]) == pytest.approx(right / scored, abs=1e-12)
        assert float(row["state_acc"]) == pytest.approx((right + kept) / (scored + inserted), abs=1e-12)
        assert (f"{row['set']:22s} column {right / scored:.4f}  inserted placed {placed}/{inserted}  "
                f"state {(right + kept) / (scored + inserted):.4f}") in result.stdout.splitlines()
    # the point is not the preset's: a run that ignored it would count otherwise
    data = ba.Data.from_dir(sets / "protein", "protein", "protein")
    preset_run, _ = ba.run_papara_inprocess(data, tmp_path, params=None, threads=1)
    assert _state_counts(preset_run, data.truth) != counts["protein"]
