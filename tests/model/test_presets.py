"""--preset: the named parameter sets, the defaults, and single parameters overriding a preset.

Behaviour, not the presets' values (docs/accuracy.md chooses those): every preset resolves to
parameters that name it back, a given parameter replaces the preset's and nothing else, the
alphabet picks the default, and `paper` is the 2012 paper's Equation 1 with its Viterbi traceback.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from papara_py.cli import build_parser
from papara_py.errors import InputError
from papara_py.model.params import DEFAULT_PRESET, PARAMETER_NAMES, PRESETS, ScoringParams
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.run.options import penalty_choice


def _params(argv, default_preset=DEFAULT_PRESET):
    """The parameters of these options for an alphabet whose default preset is `default_preset`."""
    return penalty_choice(vars(build_parser().parse_args(["-t", "t", "-s", "s", "-r", "r", *argv]))).resolve(default_preset)


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_resolves_to_parameters_that_name_it(name):
    params = _params(["--preset", name])
    assert params == ScoringParams.preset(name) and params.preset_name() == name
    assert {field: getattr(params, field) for field in PARAMETER_NAMES} == PRESETS[name].values()


def test_the_alphabets_pick_their_default_presets():
    assert DNA.default_preset == DEFAULT_PRESET and PROTEIN.default_preset in PRESETS
    assert _params([]) == ScoringParams() == ScoringParams.preset(DEFAULT_PRESET)
    assert _params([], PROTEIN.default_preset) == ScoringParams.preset(PROTEIN.default_preset)
    # a preset given applies to either alphabet
    assert _params(["--preset", "paper"], PROTEIN.default_preset) == ScoringParams.preset("paper")


def test_the_defaults_decode_by_posterior_and_paper_is_equation_1():
    """The default presets run the posterior step (T > 0) with near states; `paper` is Eq. 1 of
    the 2012 paper (no near states, no column costs) with the Viterbi traceback (T = 0)."""
    for name in (DEFAULT_PRESET, PROTEIN.default_preset):
        assert ScoringParams.preset(name).temperature > 0 and ScoringParams.preset(name).weighted
    paper = ScoringParams.preset("paper")
    assert paper.values() == (3, 3, 3, 1, 3, 3)  # the paper's Table: mismatch, cgap, open, extend, insertion
    assert not paper.weighted and paper.column_weight == 0 and paper.temperature == 0
    assert ScoringParams.preset(DEFAULT_PRESET).column_weight == 0  # DNA has no substitution matrix


@pytest.mark.parametrize("name", list(PRESETS))
def test_each_parameter_given_replaces_the_presets_and_nothing_else(name):
    base = ScoringParams.preset(name)
    for flag, field, value in [("--cgap", "cgap", 11), ("--gap-open", "gap_open", 9), ("--gap-extend", "gap_extend", 8),
                               ("--insertion", "insertion", 13), ("--column-weight", "column_weight", 0.5),
                               ("--placement-temperature", "placement_temperature", 6.0)]:
        got = _params(["--preset", name, flag, str(value)])
        assert got == replace(base, **{field: value}), (name, flag)
        assert got.preset_name() is None or got == base


@pytest.mark.parametrize("name", list(PRESETS))
def test_a_temperature_alone_takes_the_placement_temperature_along_only_where_the_preset_has_them_equal(name):
    """The plain posterior over edges (T_p = T) stays plain; a preset that fits T_p apart keeps it."""
    base = ScoringParams.preset(name)
    got = _params(["--preset", name, "--temperature", "1.5"])
    equal = base.placement_temperature == base.temperature
    assert got == replace(base, temperature=1.5, placement_temperature=1.5 if equal else base.placement_temperature)
    assert _params(["--preset", name, "--temperature", "1.5", "--placement-temperature", "4"]) == \
        replace(base, temperature=1.5, placement_temperature=4.0)
    if name == DEFAULT_PRESET:  # the Python API's defaults follow the same rule
        assert ScoringParams(temperature=1.5) == got


def test_penalties_written_as_the_papers_five_numbers_are_equation_1():
    """ScoringParams with the penalties given: near_mismatch defaults to mismatch and the
    temperature to 0, Eq. 1 with its Viterbi traceback; with nothing given, the default preset."""
    params = ScoringParams(3, 6, 2, 2, 7)
    assert params.near_mismatch == 3 and params.temperature == params.placement_temperature == 0
    assert not params.weighted
    assert ScoringParams(3, 6, 2, 2, 7, temperature=2.0).placement_temperature == 2.0


def test_mismatch_alone_keeps_eq1_presets_eq1_and_caps_near_states():
    """--mismatch without --near-mismatch: an Eq. 1 preset stays Eq. 1; a preset with near states
    keeps its near penalty unless the new mismatch is smaller."""
    paper = _params(["--preset", "paper", "--mismatch", "5"])
    assert paper.mismatch == paper.near_mismatch == 5
    near = ScoringParams.preset(DEFAULT_PRESET).near_mismatch
    assert _params(["--mismatch", str(near + 5)]).near_mismatch == near
    assert _params(["--mismatch", str(near - 1)]).near_mismatch == near - 1
    assert _params(["--preset", "paper", "--near-mismatch", "1"]).weighted


def test_near_mismatch_above_mismatch_is_refused():
    mismatch = ScoringParams.preset(DEFAULT_PRESET).mismatch
    with pytest.raises(InputError, match="may not exceed the mismatch"):
        _params(["--near-mismatch", str(mismatch + 1)])
    with pytest.raises(ValueError, match="may not exceed"):
        ScoringParams(3, 3, 3, 1, 3, near_mismatch=4)


@pytest.mark.parametrize("argv", [["--preset", "nope"], ["--temperature", "-1"], ["--temperature", "nan"],
                                  ["--temperature", "101"], ["--temperature", "warm"], ["--column-weight", "8.5"],
                                  ["--placement-temperature", "-1"], ["--placement-temperature", "101"],
                                  ["--column-weight", "-1"], ["--mismatch", "-1"], ["--mismatch", "1001"]])
def test_out_of_range_values_are_refused_by_the_parser(argv):
    with pytest.raises(SystemExit):
        _params(argv)


def test_out_of_range_values_are_refused_by_the_parameters():
    with pytest.raises(ValueError):
        ScoringParams.preset("nope")
    for value in (-0.5, 100.5, True, "2"):
        with pytest.raises(ValueError, match="temperature"):
            ScoringParams(temperature=value)
        with pytest.raises(ValueError, match="placement_temperature"):
            ScoringParams(temperature=1.0, placement_temperature=value)
