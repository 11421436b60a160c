"""Every option and environment variable is range-checked when parsed, before any work, with a
message that names it (issue #28, cause 4). Each case checks the exit status, the message, that
nothing is left and that the inputs are byte-identical (tests/misuse.py). The Python API's
keywords are checked by the same table (papara_py/run/options.py) as the command line's options."""

from __future__ import annotations

import h5py
import pytest
from misuse import EXAMPLE, assert_refused, papara

import papara_py
from papara_py.cli import build_parser
from papara_py.errors import InputError, OptionError
from papara_py.model.params import INT32_LIMIT, MAX_PENALTY, ScoringParams
from papara_py.run.options import keyword_options, main_options, option_values


@pytest.mark.slow
@pytest.mark.parametrize("option, value, expect", [
    ("--lanes", "680", "argument --lanes: must be an integer from 1 to 256"),  # crashed the CPU kernel
    ("--lanes", "1000", "argument --lanes: must be an integer from 1 to 256"),  # a numba traceback
    ("--lanes", "0", "argument --lanes"),
    ("--mismatch", "100000", "argument --mismatch: must be an integer from 0 to 1000"),
    ("--gap-open", "-1", "argument --gap-open"),
    ("--insertion", "x", "argument --insertion: must be an integer, got 'x'"),
    ("-j", "0", "argument -j/--threads: must be an integer from 1 to 4096"),
    ("-j", "100000", "argument -j/--threads"),
    ("--batch-reads", "0", "argument --batch-reads"),
    ("--gpu-chunk", "1000000000", "argument --gpu-chunk: must be an integer from 1 to 100000"),
])
def test_out_of_range_options_are_refused_naming_them(workspace, option, value, expect):
    result = papara(*workspace.main_job(option, value), cwd=workspace.dir)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert expect in " ".join(result.stderr.split())
    workspace.assert_untouched()


@pytest.mark.slow
@pytest.mark.parametrize("value", ["wide", "0", "257", "1000"])
def test_a_bad_papara_lanes_is_refused_before_the_inputs_are_read(workspace, value):
    result = papara(*workspace.main_job(), cwd=workspace.dir, env={"PAPARA_LANES": value})
    assert_refused(result, 2, "PAPARA_LANES: the lane count", "from 1 to 256", repr(value))
    workspace.assert_untouched()


@pytest.mark.slow
def test_candidates_are_capped_at_the_edge_count_with_a_notice(workspace):
    result = papara(*workspace.main_job("--candidates", "1000000000"), cwd=workspace.dir)
    assert result.returncode == 0, result.stderr
    assert "--candidates 1000000000 is more than the tree's 57 edges; keeping 57 per read" in result.stderr
    with h5py.File(workspace.dir / "run.h5") as run:
        assert run["reads/candidates/edge"].shape == (200, 57)
    workspace.assert_untouched("run.h5")


def test_penalties_that_could_overflow_the_32_bit_kernels_are_refused():
    largest = ScoringParams(MAX_PENALTY, MAX_PENALTY, MAX_PENALTY, MAX_PENALTY, MAX_PENALTY)
    largest.check_fits_int32(100_000)  # the defaults' worst case at 100,000 columns and more
    ScoringParams().check_fits_int32(10_000_000)
    with pytest.raises(InputError, match="overflow the 32-bit kernels"):
        largest.check_fits_int32(INT32_LIMIT // (2 * MAX_PENALTY))
    assert largest.int16_infinity() > 0  # the int16 kernels' stand-in infinity stays positive


@pytest.mark.parametrize("keyword, value, expect", [
    ("lanes", 0, "lanes: must be an integer from 1 to 256"),
    ("mismatch", 100000, "mismatch: must be an integer from 0 to 1000"),
    ("gap_open", "x", "gap_open: must be an integer, got 'x'"),
    ("threads", True, "threads: must be an integer, got True"),
    ("column_weight", float("nan"), "column_weight: must be a number from 0 to 8"),
    ("device", "tpu", "device: must be one of auto, cpu, gpu, hybrid, got 'tpu'"),
    ("gpu_profile", "yes", "gpu_profile: must be True or False (a switch), got 'yes'"),
    ("batch_reads", 0, "batch_reads: must be an integer from 1 to 10000000"),
    ("shard", "3/2", "shard 3/2 is not a slice"),  # was an InputError, not the OptionError align promises
    ("shard", "half", "'half' is not a shard"),
])
def test_the_api_checks_its_keywords_as_the_cli_its_options(keyword, value, expect, tmp_path):
    with pytest.raises(OptionError) as caught:
        papara_py.align(EXAMPLE / "tree.nwk", EXAMPLE / "ref.phy", EXAMPLE / "reads.fa", output=tmp_path / "x.h5",
                        **{keyword: value})
    assert expect in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_one_table_makes_the_parser_and_the_keywords():
    parser = build_parser()
    assert {option.name for option in main_options()} <= {action.dest for action in parser._actions}
    args = parser.parse_args(["-t", "t", "-s", "s", "-r", "r"])
    assert {name: getattr(args, name) for name in keyword_options()} == option_values({}, "papara_py.align")
    assert option_values({"gap_open": "2", "column_weight": 1}, "papara_py.align")["gap_open"] == 2
    assert not {"tree", "alignment", "reads", "output", "outdir", "quiet", "verbose"} & set(keyword_options())


@pytest.mark.slow
def test_gpus_named_but_not_used_is_said(workspace):
    """--gpus names GPUs; where the run uses none (--device cpu, or auto keeping a small run on the
    CPU or finding no GPU) it says so instead of ignoring the option."""
    result = papara(*workspace.main_job("--gpus", "7"), cwd=workspace.dir)
    assert result.returncode == 0, result.stderr
    assert "--gpus 7 is not used: --device cpu; running on the CPU" in " ".join(result.stderr.split())
    args = [arg for arg in workspace.main_job("--gpus", "0,3", output="auto.h5") if arg not in ("--device", "cpu")]
    result = papara(*args, cwd=workspace.dir)
    assert result.returncode == 0, result.stderr
    assert "--gpus 0,3 is not used: " in " ".join(result.stderr.split())
    assert "--gpus" not in papara(*workspace.main_job(output="plain.h5"), cwd=workspace.dir).stderr
