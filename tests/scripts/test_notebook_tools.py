"""The accuracy notebook's measuring tools (notebook/accuracy-2026-11/points.py and evaluate.py).

Every validation number in docs/accuracy.md since 2026-11-29 is a points.py record, and every
fit-set table an evaluate.py summary; a wrong score, a point read into the wrong fields or a
margin against the wrong peer would put wrong numbers into the docs without any error. So:
points.py's record for a set must be the column accuracy bench_accuracy scores for the same run,
the preset's own values given as a point must give the preset's record (parse_point reads all
nine fields, the placement temperature included), and its summary's margins must be taken
against the better of the two peers' stored records; evaluate.py's table must count, rank and
average the rows it is given.
"""

from __future__ import annotations

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


def _evaluate():
    spec = importlib.util.spec_from_file_location("notebook_evaluate", NOTEBOOK / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
