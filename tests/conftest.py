"""Shared fixtures: the real test data, the OpenCL device the kernel tests run on, and a
scheduler-free environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The helpers beside this file (misuse.py, bad_inputs.py, engine_cases.py, random_data.py ...) are
# imported by name from the tests in the package folders (pyproject.toml sets pytest's prepend
# import mode, which puts this folder and each test's own folder on sys.path); a test never
# imports another folder's test module.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

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


@pytest.fixture
def workspace(tmp_path: Path):
    """A folder holding a copy of the example's inputs, whose state a misuse test compares after
    a command: changed inputs, leftovers (tests/misuse.py, Workspace)."""
    from misuse import Workspace

    return Workspace(tmp_path)


#: Variables by which a cluster scheduler marks an array task (papara_py/cluster/shards.py reads them).
ARRAY_TASK_VARIABLES = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                        "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SGE_TASK_ID", "SGE_TASK_FIRST",
                        "SGE_TASK_LAST", "SGE_TASK_STEPSIZE", "PBS_ARRAY_INDEX", "PBS_ARRAYID")


_opencl: dict = {}


def pocl_extra_installed() -> bool:
    """Whether the `pocl` extra (PyPI's PoCL, pocl-binary-distribution) is installed."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("pocl-binary-distribution")
    except PackageNotFoundError:
        return False
    return True


def opencl_for_tests():
    """(device, problem), checked once per session: the first OpenCL device (any kind, platform
    order) that compiles papara-py's kernels and runs the probe (engine/opencl_devices.py,
    check_device), or None and the paragraph saying what each device answered and what to install."""
    if not _opencl:
        from papara_py.engine.opencl_devices import diagnose

        checks, problem = diagnose()
        working = [c.device for c in checks if c.works]
        _opencl["result"] = (working[0] if working else None, problem)
    return _opencl["result"]


def _opencl_line() -> str:
    try:
        device, problem = opencl_for_tests()
    except Exception as error:  # pyopencl itself cannot load: the fixture below says so
        return f"OpenCL kernel tests: pyopencl failed: {error}"
    if device is None:
        return "OpenCL kernel tests: NO DEVICE runs papara-py's kernels: " + problem
    from papara_py.engine.opencl_devices import platform_version

    return f"OpenCL kernel tests run on: {device.summary()}; platform {platform_version(device)}"


def pytest_report_header(config):
    """Which OpenCL device runs the kernel tests, in the header (shown without -q)."""
    return [_opencl_line()]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The same line at the end, which `pytest -q` (README.md's test command) shows too; only
    when the session used the device."""
    if _opencl:
        terminalreporter.write_line(_opencl_line())


@pytest.fixture(scope="session")
def opencl_device():
    """The OpenCL device the kernel tests run on (see opencl_for_tests).

    CI has no GPU: the OpenCL kernels run on PoCL there. The README's install brings the `pocl`
    extra, so with it installed a missing device is a failure, never a skip, and the failure says
    what each device answered and what to install: PyPI's PoCL (3.0, LLVM 14) cannot compile for
    CPUs newer than LLVM 14 knows (AMD Zen 4 and 5: "unknown target CPU 'generic'"), and a PoCL on
    a newer LLVM (Debian's pocl-opencl-icd) can. Without pyopencl (a user who installed only
    `.[test]`: the CPU engine needs no OpenCL) the kernel tests skip and say how to run them; with
    pyopencl but without the extra, they skip where no device builds the kernels.
    """
    from papara_py.engine.opencl_devices import PYOPENCL_MISSING, opencl_installed

    if not opencl_installed():  # the only reason to skip: `pip install '.[test]'` without gpu or pocl
        pytest.skip(f"{PYOPENCL_MISSING} (or 'papara-py[pocl]' to run the kernel tests on PoCL)")
    device, problem = opencl_for_tests()
    if device is not None:
        return device
    if pocl_extra_installed():
        pytest.fail(f"the `pocl` extra is installed, but {problem[0].lower()}{problem[1:]}", pytrace=False)
    pytest.skip(f"no OpenCL device runs the kernels and the `pocl` extra is not installed "
                f"(pip install 'papara-py[pocl]' or see below): {problem}")


def pytest_collection_modifyitems(config, items):
    """Every test that takes the OpenCL device (the fixture above, directly or through another
    fixture) is marked `gpu`, so `-m gpu` / `-m "not gpu"` select the kernel tests; tests that
    reach OpenCL otherwise carry the mark themselves."""
    for item in items:
        if "opencl_device" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(autouse=True)
def outside_an_array_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as a whole run even when pytest itself runs inside a cluster array task (the
    runs they start would otherwise align only that task's slice); tests that need the
    variables set them themselves."""
    for name in ARRAY_TASK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
