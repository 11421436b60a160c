"""Every option and environment variable is range-checked when parsed, before any work, with a
message that names it (issue #28, cause 4). Each case checks the exit status, the message, that
nothing is left and that the inputs are byte-identical (tests/misuse.py)."""

from __future__ import annotations

import h5py
import pytest
from misuse import assert_refused, papara, workspace  # noqa: F401

from papara_py.errors import InputError
from papara_py.model.params import INT32_LIMIT, MAX_PENALTY, ScoringParams


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


@pytest.mark.parametrize("value", ["wide", "0", "257", "1000"])
def test_a_bad_papara_lanes_is_refused_before_the_inputs_are_read(workspace, value):
    result = papara(*workspace.main_job(), cwd=workspace.dir, env={"PAPARA_LANES": value})
    assert_refused(result, 2, "PAPARA_LANES: the lane count", "from 1 to 256", repr(value))
    workspace.assert_untouched()


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
