"""scripts/measure_posterior.py: the fixed-point posterior against float64, and its --time path.

The script is how DESIGN 5's fixed-point resolution was chosen and how its speed is measured; a
signature change under it (the integer fill's, once) must fail here, not in the next study.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
measure = load_script("measure_posterior")


def test_fixed_point_posteriors_match_float64_and_timing_runs(monkeypatch, capsys) -> None:
    """At the run's scale (1024 units per cost unit) the fixed-point Z, edge and pooled posteriors
    and edge weights stay within 0.01 of float64 on pyrg; --time reports every recurrence."""
    monkeypatch.setattr(sys, "argv", ["measure_posterior.py", str(ROOT / "tests" / "data" / "pyrg"), "--columns",
                                      "300", "--length", "60", "--reads", "3", "--candidates", "2",
                                      "--temperatures", "1", "--scales", "1024", "--time", "--repeat", "1"])
    measure.main()
    out = capsys.readouterr().out
    errors = re.search(r"\|dZ\| ([\d.]+)\s+\|dP edge\| ([\d.]+)\s+\|dP pooled\| ([\d.]+)\s+\|dw\| ([\d.]+)", out)
    assert errors, out
    assert all(float(e) < 0.01 for e in errors.groups()), out
    timings = re.findall(r"([\d.]+) ns per cell", out)
    assert len(timings) == 4 and all(float(t) > 0 for t in timings), out
