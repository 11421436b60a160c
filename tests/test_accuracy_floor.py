"""Regression guard of docs/ACCURACY.md: papara-py's default penalties on small leave-taxa-out data.

Runs scripts/bench_accuracy.py's own functions (leave-taxa-out + in-process papara-py + scoring)
on a pyrG-derived set (real reference) and two simulated ones, and fails if column accuracy falls
below the floor: the value measured with the defaults when the study was done, minus a margin.
The floors guard against regressions; they are not tuning targets (docs/ACCURACY.md, section
"Regression guard"). The three runs take a few seconds on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

from scripts_loader import load_script

ROOT = Path(__file__).resolve().parent.parent

ba = load_script("bench_accuracy")

#: (measured with the defaults, `robust`, on 2026-11-24; floor). Margin: 0.01 below the measurement,
#: rounded down. For scale, the paper preset 3/3/3/1/3 measures 0.9848 / 0.9615 / 0.9978 here.
FLOORS = {
    "pyrg": (0.9972, 0.987),
    "example-454": (0.9573, 0.947),
    "example": (0.9985, 0.988),
}


def _measure(data) -> dict:
    result = ba.bench(data, ["papara-inproc"], params=None, threads=2)["papara-inproc"]
    print(f"{data.name}: column accuracy {result['column_accuracy']:.4f}, "
          f"per read {result['read_accuracy']:.4f}, edge {result['edge_accuracy']}")
    return result


def test_floor_pyrg_leave_taxa_out(pyrg_dir, tmp_path):
    directory = ba.leave_taxa_out(pyrg_dir / "tree.nwk", pyrg_dir / "ref.phy", tmp_path / "pyrg", prune=6,
                                  n_reads=40, model=ba.ErrorModel(substitution=0.01), seed=7)
    result = _measure(ba.Data.from_dir(directory, "pyrg"))
    assert result["column_accuracy"] >= FLOORS["pyrg"][1]


def test_floor_simulated_reference_with_indel_errors(tmp_path):
    """Leave-taxa-out on the bundled simulated reference, 454-like reads (homopolymer indels)."""
    example = ROOT / "data" / "example"
    model = ba.ErrorModel(substitution=0.003, insertion=0.003, deletion=0.003, homopolymer=0.3,
                          length_mean=150, length_sd=15)
    directory = ba.leave_taxa_out(example / "tree.nwk", example / "ref.phy", tmp_path / "ex454", prune=5,
                                  n_reads=60, model=model, seed=7)
    result = _measure(ba.Data.from_dir(directory, "example-454"))
    assert result["column_accuracy"] >= FLOORS["example-454"][1]


def test_floor_simulated_truth():
    """scripts/simulate.py's bundled example, scored against its own truth (indels in the history)."""
    result = _measure(ba.Data.from_dir(ROOT / "data" / "example", "example"))
    assert result["column_accuracy"] >= FLOORS["example"][1]
    assert result["edge_accuracy"] >= 0.6
