"""Regression guard of docs/accuracy.md: papara-py's presets on small data sets, with teeth.

Runs scripts/bench_accuracy.py's own functions (leave-taxa-out + in-process papara-py + scoring)
on two pyrG-derived sets (real reference) and two simulated ones, and for protein on two Pfam seeds
(tests/data/pfam_rrm, pfam_fn3), the bundled simulated protein example and an LG-simulated family
made in the test, and a dense one (tests/data/pfam_cyclin_n), and fails if column accuracy falls
below the floor: the value measured with the preset, minus a margin smaller than what switching a
part of the model off costs. The last test switches each part off (the posterior step:
temperature 0; the near states; the placement temperature; the column profile cost; each edge's
own emission) and requires the guard to fail then, so the floors cannot drift into passing without
the model. A few seconds per run on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts_loader import load_script

from papara_py.model import edge_emission
from papara_py.model.params import PRESETS

ROOT = Path(__file__).resolve().parents[2]
#: Whole data sets through the accuracy benchmark: about 20 s in all on 2 cores.
pytestmark = pytest.mark.slow

ba = load_script("bench_accuracy")

#: (measured with the preset, floor: DNA 2026-12-03, at 0.24.0's temperature 1.25; protein
#: 2026-12-01, at 0.23.0's column cost without its clip). Each floor lies below the measurement and above what the
#: set measures with a part of the model switched off (test_the_guard_fails_without...): pyrg
#: 0.9980 without near states; pyrg-indel 0.9645 with the edge weights at T; example-454 0.9575 at
#: temperature 0; pfam-rrm 0.9510 without near states, 0.8696 without the column profile cost,
#: 0.9552 with the shared emission on every edge; pfam-fn3 0.8674 with the edge weights at T;
#: protein-lg 0.9977 at temperature 0 (docs/accuracy.md, "The CI guard", has every case).
FLOORS = {
    "pyrg": (1.0000, 0.999),
    "pyrg-indel": (0.9694, 0.967),
    "example-454": (0.9695, 0.963),
    "example": (0.9967, 0.995),
    "pfam-rrm": (0.9572, 0.956),
    "pfam-fn3": (0.8776, 0.875),
    "pfam-cyclin": (0.9817, 0.980),
    "protein-example": (0.9932, 0.991),
    "protein-lg": (0.9997, 0.9985),
}


def pyrg(tmp_path: Path):
    pyrg_dir = ROOT / "tests" / "data" / "pyrg"
    directory = ba.leave_taxa_out(pyrg_dir / "tree.nwk", pyrg_dir / "ref.phy", tmp_path / "pyrg", prune=6,
                                  n_reads=40, model=ba.ErrorModel(substitution=0.01), seed=7)
    return ba.Data.from_dir(directory, "pyrg")


def pyrg_indel(tmp_path: Path):
    """pyrG with 20 taxa left out, reads with 1% substitutions and 1% indels: reads far from any
    reference row, whose best edge is often another clade's (where the placement temperature
    counts)."""
    pyrg_dir = ROOT / "tests" / "data" / "pyrg"
    model = ba.ErrorModel(substitution=0.01, insertion=0.005, deletion=0.005)
    directory = ba.leave_taxa_out(pyrg_dir / "tree.nwk", pyrg_dir / "ref.phy", tmp_path / "pyrg-indel", prune=20,
                                  n_reads=150, model=model, seed=7)
    return ba.Data.from_dir(directory, "pyrg-indel")


def example_454(tmp_path: Path):
    """Leave-taxa-out on the bundled simulated reference, 454-like reads (homopolymer indels)."""
    example = ROOT / "data" / "example"
    model = ba.ErrorModel(substitution=0.003, insertion=0.003, deletion=0.003, homopolymer=0.3,
                          length_mean=150, length_sd=15)
    directory = ba.leave_taxa_out(example / "tree.nwk", example / "ref.phy", tmp_path / "ex454", prune=5,
                                  n_reads=60, model=model, seed=7)
    return ba.Data.from_dir(directory, "example-454")


def example(tmp_path: Path):
    """scripts/simulate.py's bundled example, scored against its own truth (indels in the history)."""
    return ba.Data.from_dir(ROOT / "data" / "example", "example")


def pfam_rrm(tmp_path: Path):
    """A real Pfam seed (RRM_1), 50-residue reads with 1% substitutions and 1% indels."""
    rrm = ROOT / "tests" / "data" / "pfam_rrm"
    model = ba.ErrorModel(substitution=0.01, insertion=0.005, deletion=0.005, length_mean=50, length_sd=5,
                          min_length=40, max_length=60)
    directory = ba.leave_taxa_out(rrm / "tree.nwk", rrm / "ref.fasta", tmp_path / "rrm", prune=10, n_reads=80,
                                  model=model, seed=7, alphabet="protein")
    return ba.Data.from_dir(directory, "pfam-rrm", "protein")


def pfam_fn3(tmp_path: Path):
    """The most divergent study family (Pfam fn3), substitution-only 50-residue reads."""
    fn3 = ROOT / "tests" / "data" / "pfam_fn3"
    model = ba.ErrorModel(substitution=0.01, length_mean=50, length_sd=5, min_length=40, max_length=60)
    directory = ba.leave_taxa_out(fn3 / "tree.nwk", fn3 / "ref.fasta", tmp_path / "fn3", prune=12, n_reads=120,
                                  model=model, seed=8, alphabet="protein")
    return ba.Data.from_dir(directory, "pfam-fn3", "protein")


def pfam_cyclin(tmp_path: Path):
    """A dense real Pfam seed (Cyclin_N: many close sequences), 50-residue reads with 1%
    substitutions and 1% indels."""
    cyclin = ROOT / "tests" / "data" / "pfam_cyclin_n"
    model = ba.ErrorModel(substitution=0.01, insertion=0.005, deletion=0.005, length_mean=50, length_sd=5,
                          min_length=40, max_length=60)
    directory = ba.leave_taxa_out(cyclin / "tree.nwk", cyclin / "ref.fasta", tmp_path / "cyclin", prune=12,
                                  n_reads=120, model=model, seed=8, alphabet="protein")
    return ba.Data.from_dir(directory, "pfam-cyclin", "protein")


def protein_example(tmp_path: Path):
    """The bundled simulated protein example (data/protein), scored against simulate.py's truth."""
    return ba.Data.from_dir(ROOT / "data" / "protein", "protein-example", "protein")


def protein_lg(tmp_path: Path):
    """A family simulated under the LG replacement model, scored against simulate.py's truth."""
    simulate = load_script("simulate")
    params = simulate.SimParams(seed=5, taxa=40, held_out=8, columns=250, divergence=1.0, indel_rate=0.03, reads=120,
                                read_length=50, alphabet="protein", protein_model="lg")
    simulate.write_outputs(simulate.simulate(params), tmp_path / "lg")
    return ba.Data.from_dir(tmp_path / "lg", "protein-lg", "protein")


SETS = {"pyrg": pyrg, "pyrg-indel": pyrg_indel, "example-454": example_454, "example": example, "pfam-rrm": pfam_rrm,
        "pfam-fn3": pfam_fn3, "pfam-cyclin": pfam_cyclin, "protein-example": protein_example,
        "protein-lg": protein_lg}


def _measure(data, params: tuple | None = None) -> dict:
    result = ba.bench(data, ["papara-inproc"], params=params, threads=2)["papara-inproc"]
    print(f"{data.name}: column accuracy {result['column_accuracy']:.4f}, "
          f"per read {result['read_accuracy']:.4f}, edge {result['edge_accuracy']}")
    return result


@pytest.mark.parametrize("name", SETS)
def test_floor(name, tmp_path):
    """The alphabet's preset (the default: weighted for DNA, protein for protein) keeps its floor."""
    assert _measure(SETS[name](tmp_path))["column_accuracy"] >= FLOORS[name][1]


def test_best_edge_rate_on_the_simulated_example():
    """The best edge is the true edge for 0.47 of the bundled example's reads (measured)."""
    assert _measure(example(Path()))["edge_accuracy"] >= 0.40


def _switched_off(preset: str, part: str, monkeypatch: pytest.MonkeyPatch) -> tuple:
    values = PRESETS[preset].values()
    if part == "posterior step":
        values["temperature"] = 0.0
    elif part == "near states":
        values["near_mismatch"] = values["mismatch"]
    elif part == "placement temperature":  # the edge weights at the posterior's own temperature
        values["placement_temperature"] = values["temperature"]
    elif part == "column profile cost":
        values["column_weight"] = 0.0
    else:  # each edge's own emission: the shared one on every edge
        monkeypatch.setattr(edge_emission, "LOCAL_SCALE", 0)
    return tuple(values.values())


@pytest.mark.parametrize("preset, part, name", [
    ("weighted", "posterior step", "example-454"),
    ("weighted", "near states", "pyrg"),
    ("weighted", "placement temperature", "pyrg-indel"),
    ("protein", "posterior step", "protein-lg"),
    ("protein", "near states", "pfam-rrm"),
    ("protein", "column profile cost", "pfam-rrm"),
    ("protein", "each edge's own emission", "pfam-rrm"),
    ("protein", "placement temperature", "pfam-fn3"),
])
def test_the_guard_fails_without_a_part_of_the_model(preset, part, name, tmp_path, monkeypatch):
    """Each part the model keeps is one the guard sees: switched off, a set falls below its floor."""
    params = _switched_off(preset, part, monkeypatch)
    assert _measure(SETS[name](tmp_path), params)["column_accuracy"] < FLOORS[name][1]
