"""scripts/bench_kernel_variants.py, the kernel build variants' benchmark (issue 57): every variant
it names can be built with the penalties it names, and a small run verifies and times them on the
OpenCL device the kernel tests use (PoCL in CI). Its H200 runs are costly device calls: a variant
that fails only there (one named a preset removed with the posterior model) loses a whole call."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scripts_loader import SCRIPTS, load_script

from papara_py.model.params import PRESETS

pytest.importorskip("pyopencl", reason="the benchmark builds OpenCL kernels: pip install 'papara-py[pocl]'")


def test_every_variant_names_a_preset_and_its_penalties_build() -> None:
    variants = load_script("bench_kernel_variants")
    for case in variants.VARIANTS:
        assert case.preset in PRESETS, f"{case.name}: unknown preset {case.preset!r}"
        params = variants.params_of(case)
        assert params.column_weight == case.column_weight


@pytest.mark.slow
def test_a_small_run_verifies_and_times_a_dna_and_a_protein_variant(opencl_device) -> None:
    """The Eq. 1 variant (the one that named a removed preset) and protein's table path: verified
    against the reference scorer on every score, then timed, on the tests' OpenCL device."""
    names = ["dna-eq1-lookup", "protein-table-ahead2"]
    finished = subprocess.run([sys.executable, str(SCRIPTS / "bench_kernel_variants.py"), "--small", "--kind", "any",
                               "--repeat", "1", "--rounds", "1", "--only", *names],
                              capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in finished.stdout.splitlines() if line.startswith("| ") and "|---" not in line}
    assert all(rows.get(name) == "OK" for name in names), finished.stdout[-3000:]
