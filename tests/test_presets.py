"""--preset: the named penalty sets, the default, and single penalties overriding a preset."""

from __future__ import annotations

import pytest

from papara_py.cli import build_parser
from papara_py.model.params import DEFAULT_PRESET, PRESETS, ScoringParams
from papara_py.run.options import penalty_choice


def _params(argv, default_preset=DEFAULT_PRESET):
    """The penalties of these options for an alphabet whose default preset is `default_preset`."""
    return penalty_choice(vars(build_parser().parse_args(["-t", "t", "-s", "s", "-r", "r", *argv]))).resolve(default_preset)


def test_default_is_the_weighted_preset_of_the_accuracy_study():
    assert DEFAULT_PRESET == "weighted"
    assert PRESETS["weighted"] == (5, 10, 4, 4, 12, 2, 0.0, 0, 0, 0, 0, 0.0)
    assert ScoringParams() == ScoringParams(5, 10, 4, 4, 12, near_mismatch=2) == _params([])
    assert ScoringParams().preset_name() == "weighted" and ScoringParams().weighted


def test_eq1_presets_have_no_cheaper_near_states():
    """Every preset but weighted (DNA) and protein is Eq. 1 of the paper (near_mismatch = mismatch)."""
    for name in PRESETS:
        assert ScoringParams.preset(name).weighted == (name in ("weighted", "protein")), name
    assert ScoringParams(3, 6, 2, 2, 7).near_mismatch == 3 and ScoringParams(3, 6, 2, 2, 7).preset_name() == "robust"


def test_paper_preset_keeps_the_2012_values():
    assert _params(["--preset", "paper"]) == ScoringParams(mismatch=3, cgap=3, gap_open=3, gap_extend=1, insertion=3)
    assert ScoringParams.preset("paper").preset_name() == "paper"


def test_single_penalties_override_the_preset():
    assert _params(["--preset", "paper", "--insertion", "5"]) == ScoringParams(3, 3, 3, 1, 5)
    assert _params(["--preset", "robust", "--mismatch", "2"]) == ScoringParams(2, 6, 2, 2, 7)
    assert _params(["--mismatch", "2"]).preset_name() is None
    assert _params(["--near-mismatch", "1"]) == ScoringParams(5, 10, 4, 4, 12, near_mismatch=1)
    assert _params(["--preset", "paper", "--near-mismatch", "1"]).weighted


def test_mismatch_alone_keeps_eq1_presets_eq1_and_caps_near_states():
    """--mismatch without --near-mismatch: an Eq. 1 preset stays Eq. 1; weighted keeps its near
    penalty unless the new mismatch is smaller."""
    assert _params(["--preset", "paper", "--mismatch", "5"]) == ScoringParams(5, 3, 3, 1, 3, near_mismatch=5)
    assert _params(["--mismatch", "7"]).near_mismatch == 2
    assert _params(["--mismatch", "1"]) == ScoringParams(1, 10, 4, 4, 12, near_mismatch=1)


def test_near_mismatch_above_mismatch_is_refused():
    from papara_py.errors import InputError

    with pytest.raises(InputError, match="may not exceed the mismatch"):
        _params(["--near-mismatch", "6"])
    with pytest.raises(ValueError, match="may not exceed"):
        ScoringParams(3, 3, 3, 1, 3, near_mismatch=4)


def test_unknown_preset_is_refused():
    with pytest.raises(SystemExit):
        _params(["--preset", "nope"])
    with pytest.raises(ValueError):
        ScoringParams.preset("nope")


def test_protein_data_default_to_the_protein_preset_unless_a_preset_is_given():
    """The protein study's choice (docs/ACCURACY.md, "Dense real protein references and the column
    profile cost"): near states (similar or common in the column) cost 2 where other mismatches
    cost 3, plus the column profile cost at weight 1, and columns voted over the edges within 4
    of the best ("Votes over near-best edges"), traced again with a bonus of 2 towards the nearest
    reference sequence ("The nearest reference sequence"), reads placed elsewhere altogether
    moved onto their nearest sequence's columns ("The location check"), and each read's alignment
    chosen between it and a second model's, every penalty doubled at column weight 1.75 ("A second
    model and the choice between them"); a single penalty, weight, window, bonus, margin, check or
    second model given replaces the preset's, and a DNA preset has none of them."""
    from papara_py.phylo.encoding import PROTEIN

    assert PROTEIN.default_preset == "protein" and PRESETS["protein"] == (3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 10, 1.75)
    assert _params([], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 10, 1.75)
    assert _params(["--insertion", "4"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 4, 2, 1.0, 4, 2, 1, 10, 1.75)
    assert _params(["--mismatch", "2"], PROTEIN.default_preset) == ScoringParams(2, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 10, 1.75)
    assert _params(["--column-weight", "0.5"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 0.5, 4, 2, 1, 10, 1.75)
    assert _params(["--column-weight", "0"], PROTEIN.default_preset).column_weight == 0
    assert _params(["--vote-window", "0"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 0, 2, 1, 10, 1.75)
    assert _params(["--vote-window", "0"], PROTEIN.default_preset).preset_name() is None
    assert _params(["--vote-window", "2"]).vote_window == 2 and ScoringParams().vote_window == 0
    assert _params(["--nearest-bonus", "0"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 4, 0, 1, 10, 1.75)
    assert _params(["--nearest-bonus", "3"]).nearest_bonus == 3 and ScoringParams().nearest_bonus == 0
    assert _params(["--band-margin", "0"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 4, 2, 0, 10, 1.75)
    assert _params(["--band-margin", "2"]).band_margin == 2 and ScoringParams().band_margin == 0
    assert ScoringParams.preset("protein").excursion_cost == 16 + 5 + 3
    assert _params(["--location-check", "0"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 0, 1.75)
    assert _params(["--location-check", "25"]).location_check == 25 and ScoringParams().location_check == 0
    assert _params(["--second-model", "0"], PROTEIN.default_preset) == ScoringParams(3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 10)
    assert _params(["--second-model", "1.5"]).second_model == 1.5 and ScoringParams().second_model == 0
    assert _params(["--preset", "robust"], PROTEIN.default_preset) == ScoringParams(3, 6, 2, 2, 7)
    assert _params([], PROTEIN.default_preset).weighted is True
    assert _params([], PROTEIN.default_preset).preset_name() == "protein"
    for text in ("-1", "10.5", "nan", "one"):
        with pytest.raises(SystemExit):
            _params(["--column-weight", text], PROTEIN.default_preset)
    for text in ("-1", "2.5", "1001"):
        with pytest.raises(SystemExit):
            _params(["--vote-window", text], PROTEIN.default_preset)
    for text in ("-1", "2.5", "1001"):
        with pytest.raises(SystemExit):
            _params(["--nearest-bonus", text], PROTEIN.default_preset)
        with pytest.raises(SystemExit):
            _params(["--band-margin", text], PROTEIN.default_preset)
    for text in ("-1", "2.5", "101"):
        with pytest.raises(SystemExit):
            _params(["--location-check", text], PROTEIN.default_preset)
    for text in ("-1", "10.5", "nan"):
        with pytest.raises(SystemExit):
            _params(["--second-model", text], PROTEIN.default_preset)
    for window in (-1, 1.5, True, 1001):
        with pytest.raises(ValueError, match="vote_window"):
            ScoringParams(vote_window=window)
        with pytest.raises(ValueError, match="nearest_bonus"):
            ScoringParams(nearest_bonus=window)
        with pytest.raises(ValueError, match="band_margin"):
            ScoringParams(band_margin=window)
