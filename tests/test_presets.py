"""--preset: the named penalty sets, the default, and single penalties overriding a preset."""

from __future__ import annotations

import pytest

from papara_py.cli import _penalty_choice, build_parser
from papara_py.pairwise.params import DEFAULT_PRESET, PRESETS, ScoringParams


def _params(argv, default_preset=DEFAULT_PRESET):
    """The penalties of these options for an alphabet whose default preset is `default_preset`."""
    return _penalty_choice(build_parser().parse_args(["-t", "t", "-s", "s", "-r", "r", *argv])).resolve(default_preset)


def test_default_is_the_robust_preset_of_the_accuracy_study():
    assert DEFAULT_PRESET == "robust"
    assert PRESETS["robust"] == (3, 6, 2, 2, 7)
    assert ScoringParams() == ScoringParams(3, 6, 2, 2, 7) == _params([])
    assert ScoringParams().preset_name() == "robust"


def test_paper_preset_keeps_the_2012_values():
    assert _params(["--preset", "paper"]) == ScoringParams(mismatch=3, cgap=3, gap_open=3, gap_extend=1, insertion=3)
    assert ScoringParams.preset("paper").preset_name() == "paper"


def test_single_penalties_override_the_preset():
    assert _params(["--preset", "paper", "--insertion", "5"]) == ScoringParams(3, 3, 3, 1, 5)
    assert _params(["--mismatch", "2"]) == ScoringParams(2, 6, 2, 2, 7)
    assert _params(["--mismatch", "2"]).preset_name() is None


def test_unknown_preset_is_refused():
    with pytest.raises(SystemExit):
        _params(["--preset", "nope"])
    with pytest.raises(ValueError):
        ScoringParams.preset("nope")


def test_protein_data_default_to_the_protein_preset_unless_a_preset_is_given():
    """PaPaRa 2.5's defaults (its -a uses the DNA ones) in Eq. 1's terms; provisional (docs/ACCURACY.md)."""
    from papara_py.phylo.encoding import PROTEIN

    assert PROTEIN.default_preset == "protein" and PRESETS["protein"] == (2, 3, 2, 1, 5)
    assert _params([], PROTEIN.default_preset) == ScoringParams(2, 3, 2, 1, 5)
    assert _params(["--insertion", "4"], PROTEIN.default_preset) == ScoringParams(2, 3, 2, 1, 4)
    assert _params(["--preset", "robust"], PROTEIN.default_preset) == ScoringParams(3, 6, 2, 2, 7)
