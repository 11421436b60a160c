"""--preset: the named penalty sets, the default, and single penalties overriding a preset."""

from __future__ import annotations

import pytest

from papara_py.cli import _penalties, build_parser
from papara_py.pairwise.params import DEFAULT_PRESET, PRESETS, ScoringParams


def _params(argv):
    return _penalties(build_parser().parse_args(["-t", "t", "-s", "s", "-r", "r", *argv]), ScoringParams)


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
