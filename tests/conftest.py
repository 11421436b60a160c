"""Shared fixtures: the real test data, the OpenCL device the kernel tests run on, and a
scheduler-free environment."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Test data inside the repository (and the sdist): tests/data/README.md says where it comes from.
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def pyrg_dir() -> Path:
    """The real pyrG data set (tree, alignment, reads): tests/data/pyrg. It ships with the
    repository and the sdist, so a test that needs it fails, never skips, when it is missing."""
    path = TEST_DATA / "pyrg"
    missing = [name for name in ("tree.nwk", "ref.phy", "ref.fasta", "reads.fasta")
               if not (path / name).is_file()]
    if missing:
        pytest.fail(f"test data missing from {path}: {', '.join(missing)} (they are part of the "
                    f"repository and the sdist; see tests/data/README.md)")
    return path


#: Variables by which a cluster scheduler marks an array task (papara_py/cluster/shards.py reads them).
ARRAY_TASK_VARIABLES = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                        "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SGE_TASK_ID", "SGE_TASK_FIRST",
                        "SGE_TASK_LAST", "SGE_TASK_STEPSIZE", "PBS_ARRAY_INDEX", "PBS_ARRAYID")


#: A kernel every OpenCL C compiler builds: a device whose compiler rejects it cannot run ours.
_PROBE_KERNEL = "__kernel void probe(__global int *out) { out[get_global_id(0)] = 1; }"


@pytest.fixture(scope="session")
def opencl_device():
    """The first OpenCL device (any kind, platform order) whose compiler builds kernels.

    CI has no GPU: the OpenCL kernels run on PoCL there, and no test of them may skip. PyPI's
    PoCL (inside pyopencl's wheels: PoCL 3.0, LLVM 14) names CPUs newer than LLVM 14 knows
    (AMD Zen 4 and 5, for one) 'generic', which its compiler then rejects ("unknown target CPU
    'generic'"); Debian's pocl-opencl-icd (LLVM 15, a code target per kernel library) builds on
    them, and .ci/run installs it. A device that cannot build is passed over; if none can, the
    test fails and says what each device answered.
    """
    import pyopencl as cl

    from papara_py.engine.opencl_devices import discover_devices

    failures = []
    for device in discover_devices("any"):
        try:
            cl.Program(cl.Context([device.cl_device]), _PROBE_KERNEL).build()
        except cl.Error as error:
            failures.append(f"{device.summary()}: {str(error).strip().splitlines()[-1]}")
            continue
        return device
    pytest.fail("no OpenCL device that builds kernels (the test extra installs PoCL, and CI "
                "installs Debian's pocl-opencl-icd, so CI always has one); "
                + ("; ".join(failures) or "no OpenCL device at all"))


@pytest.fixture(autouse=True)
def outside_an_array_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as a whole run even when pytest itself runs inside a cluster array task (the
    runs they start would otherwise align only that task's slice); tests that need the
    variables set them themselves."""
    for name in ARRAY_TASK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
