"""Which OpenCL device can run papara-py's kernels, and what a user is told when none can
(engine/opencl_devices.py: check_device, diagnose, describe_devices; `papara-py devices`)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import opencl_for_tests, pocl_extra_installed

from papara_py.engine import opencl_devices
from papara_py.engine.opencl_devices import DeviceCheck, check_device, diagnose, why_not

#: What pyopencl raises when PyPI's PoCL cannot compile for a CPU its LLVM 14 does not know: the
#: compiler's line as issue #20 reports it from an AMD Zen 4, in pyopencl's error format (the
#: build log follows "Build on <device>:", as in the build errors the tests below provoke).
ZEN4_ERROR = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: "
              "BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device 'cpu-generic' on 'Portable Computing "
              "Language'>:\n\nerror: unknown target CPU 'generic'\nnote: valid target CPU values are: "
              "nocona, core2, ...\n\n(options: -I /venv/lib/python3.12/site-packages/pyopencl/cl)")
PYPI_POCL = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG"


def stand_in(name="cpu-generic", platform_version=PYPI_POCL) -> opencl_devices.DeviceInfo:
    """A device as discovery describes it, whose handle no OpenCL call accepts."""
    handle = SimpleNamespace(platform=SimpleNamespace(version=platform_version))
    return opencl_devices.DeviceInfo(
        platform="Portable Computing Language", name=name, kind="cpu", vendor="AuthenticAMD",
        compute_units=2, global_mem_bytes=2**32, max_alloc_bytes=2**31, local_mem_bytes=2**20,
        opencl_version="OpenCL 3.0 PoCL", driver_version="3.0-rc2", nv_compute_capability=None,
        cl_device=handle)


@pytest.mark.slow
@pytest.mark.gpu
def test_an_opencl_device_runs_the_kernels():
    """The README's install brings the `pocl` extra: then some device must build and run the
    kernels, and if none does, this fails saying what each device answered and what to install."""
    device, problem = opencl_for_tests()
    if device is None and not pocl_extra_installed():
        pytest.skip(f"the `pocl` extra is not installed: {problem}")
    if device is None:
        pytest.fail(problem, pytrace=False)
    assert check_device(device).works


def test_the_check_compiles_what_the_engine_compiles(opencl_device):
    from papara_py.engine.gpu import GpuScorer
    from papara_py.phylo.encoding import DNA, PROTEIN

    scorer = GpuScorer(opencl_device)
    band = {options for source, options in opencl_devices.CHECK_BUILDS if source == "band_score.cl"}
    ptx_free = [replace(v, ptx=False).of(alphabet, near, costs, lookup)
                for v in (scorer.packed_variant, scorer.wide_variant)
                for alphabet in (DNA, PROTEIN) for near in (False, True)
                for costs in ((False, True) if alphabet.substitution_matrix else (False,)) for lookup in (False, True)]
    assert {v.options() for v in ptx_free} == band
    kmax = max(4, 1 << (5 - 1).bit_length())  # the default --candidates 5, as GpuScorer.build rounds it
    assert ("top_k.cl", (f"-DKMAX={kmax}",)) in opencl_devices.CHECK_BUILDS


@pytest.mark.slow
def test_a_compiler_error_on_a_real_device_is_reported(opencl_device, monkeypatch):
    monkeypatch.setattr(opencl_devices, "PROBE_KERNEL", "__kernel void probe(__global int *out) { out[0] = ; }")
    check = check_device(opencl_device)
    assert not check.works
    assert check.problem.startswith("cannot build papara-py's kernels: ") and "error" in check.problem.lower()
    assert "(options:" not in check.problem


def test_a_compiler_warning_goes_to_the_log_not_the_terminal(opencl_device, caplog):
    """A build that succeeds with compiler messages (PoCL's clang warns of a division by zero;
    NVIDIA's compiler has warned on papara-py's own kernels) makes pyopencl issue a
    CompilerWarning, which reached users' terminals mid-run. build_program logs the messages."""
    import logging
    import uuid
    import warnings

    import pyopencl as cl

    source = f"__kernel void k(__global int *o) {{ o[0] = 1 / 0; }} // {uuid.uuid4()}"  # unique: no cache hit
    context = cl.Context([opencl_device.cl_device])
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        log = cl.Program(context, source).build(devices=[opencl_device.cl_device]).get_build_info(
            opencl_device.cl_device, cl.program_build_info.LOG).strip()
    if not log:
        pytest.skip(f"{opencl_device.name}'s compiler says nothing of a division by zero: no messages to route")
    assert any(issubclass(w.category, cl.CompilerWarning) for w in raw)  # pyopencl's own behaviour
    with warnings.catch_warnings(), caplog.at_level(logging.DEBUG, logger="papara_py"):
        warnings.simplefilter("error")
        opencl_devices.build_program(context, opencl_device.cl_device, source.replace("// ", "// again "))
    assert any("division by zero" in record.getMessage() for record in caplog.records)


def test_builds_on_several_threads_keep_each_others_compiler_warnings_off_the_terminal(opencl_device):
    """`warnings.catch_warnings` saves and restores the process's one filter list: two threads'
    builds that overlap restored each other's filters, and a build then warned on the terminal
    (seen on the H200: bench_kernel_variants' machine-code build beside a verification; a run's
    GPU feeders and its posterior decoder build on threads of their own too). Here four threads
    build warning kernels at once with every other warning an error: none may escape, and the
    filters are as before afterwards."""
    import threading
    import uuid
    import warnings

    import pyopencl as cl

    context = cl.Context([opencl_device.cl_device])
    start = threading.Barrier(4)
    errors: list[BaseException] = []
    spoke: list[bool] = []  # whether each build's compiler said anything (pyopencl warns then)

    def builds() -> None:
        start.wait()
        try:
            for _ in range(8):
                source = f"__kernel void k(__global int *o) {{ o[0] = 1 / 0; }} // {uuid.uuid4()}"
                program = opencl_devices.build_program(context, opencl_device.cl_device, source)
                spoke.append(bool(program.get_build_info(opencl_device.cl_device, cl.program_build_info.LOG).strip()))
        except BaseException as error:  # a CompilerWarning turned error by the filter below
            errors.append(error)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        threads = [threading.Thread(target=builds) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors[:1]
        assert warnings.filters == before
    if not any(spoke):
        pytest.skip(f"{opencl_device.name}'s compiler says nothing of a division by zero: no warning to keep off")


def test_the_compiler_answer_is_the_build_log():
    answer = opencl_devices._compiler_answer(RuntimeError(ZEN4_ERROR))
    assert answer == "error: unknown target CPU 'generic'"
    assert opencl_devices._compiler_answer(RuntimeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")) == (
        "clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")


def test_pypi_pocl_on_a_cpu_it_does_not_know_is_explained():
    """The failure seen on AMD Zen 4: the user learns it is PyPI's PoCL's LLVM 14 and what to
    install instead."""
    device = stand_in()
    problem = "cannot build papara-py's kernels: " + opencl_devices._compiler_answer(RuntimeError(ZEN4_ERROR))
    text = why_not(DeviceCheck(device, problem))
    assert "cpu-generic" in text and "LLVM 14.0.6" in text and "unknown target CPU 'generic'" in text
    assert "the known limit of PyPI's PoCL" in text and "Zen 4" in text
    checks, paragraph = diagnose([device])  # the stand-in's handle fails for real in check_device
    assert [c.works for c in checks] == [False]
    assert paragraph.startswith("No OpenCL device can run papara-py's kernels. CPU cpu-generic")
    assert "apt-get install pocl-opencl-icd" in paragraph and "conda-forge pocl" in paragraph


def test_another_platform_gets_no_pocl_story():
    device = stand_in(name="gfx1100", platform_version="OpenCL 2.1 AMD-APP (3590.0)")
    text = why_not(DeviceCheck(device, "cannot build papara-py's kernels: error: something"))
    assert "PoCL" not in text.split("]: ", 1)[1]


def test_no_device_at_all_is_explained():
    checks, paragraph = diagnose([])
    assert checks == [] and paragraph.startswith("No OpenCL device at all")
    assert "pip install pocl-binary-distribution" in paragraph and "pocl-opencl-icd" in paragraph


@pytest.mark.slow
def test_a_working_device_needs_no_advice(opencl_device):
    checks, paragraph = diagnose([opencl_device])
    assert [c.works for c in checks] == [True] and paragraph is None


@pytest.mark.slow
def test_papara_py_devices_says_which_device_builds(opencl_device):
    """`devices` runs a probe kernel on each device; `devices --check` builds papara-py's kernels."""
    for words, said in ((["devices"], "builds and runs a test kernel"),
                        (["devices", "--check"], "builds and runs papara-py's kernels")):
        result = subprocess.run([sys.executable, "-m", "papara_py", *words], capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if opencl_device.name.strip() in line)
        assert lines[at + 1].strip().startswith(said), words
    assert "devices --check` also builds" in subprocess.run([sys.executable, "-m", "papara_py", "devices"],
                                                            capture_output=True, text=True, timeout=300).stdout


def test_the_listing_builds_only_the_probe(opencl_device, monkeypatch):
    """`papara-py devices` answers fast on a fresh machine: it builds the probe, not the 20 variants of
    papara-py's kernels (their first build takes about 30 s on an H200), which `--check` builds."""
    from papara_py import kernels

    monkeypatch.setattr(kernels, "source", lambda name: "__kernel void broken(__global int *out) { out[0] = ; }")
    assert check_device(opencl_device, kernels=False).works
    check = check_device(opencl_device)
    assert not check.works and check.problem.startswith("cannot build papara-py's kernels: ")


def test_without_pyopencl_the_cpu_engine_runs_and_gpus_are_refused(monkeypatch, tmp_path):
    """pyopencl is an extra (`gpu`): without it `devices` says so, --device auto runs on the CPU
    (the GPU engine's modules are not imported) and --device gpu|hybrid are refused naming the
    extra. (.ci/package runs the CPU tests in a venv that has no pyopencl at all.)"""
    from papara_py.api import align
    from papara_py.errors import InputError
    from papara_py.run.devices import resolve_scorers
    from papara_py.run.log import Reporter

    monkeypatch.setattr(opencl_devices, "opencl_installed", lambda: False)
    monkeypatch.setattr(opencl_devices, "discover_devices", lambda *a, **k: pytest.fail("OpenCL was asked"))
    text = opencl_devices.describe_devices()
    assert "Pyopencl is not installed" in text and "papara-py[gpu]" in text and "CPU engine only" in text
    quiet = Reporter()
    assert resolve_scorers(SimpleNamespace(device="auto", gpus=None), quiet) == (True, [], {})
    example = Path(__file__).resolve().parents[2] / "data" / "example"
    inputs = [str(example / name) for name in ("tree.nwk", "ref.phy", "reads.fa")]
    for device in ("gpu", "hybrid"):
        with pytest.raises(InputError, match=f"--device: --device {device} needs an OpenCL GPU: pyopencl is not "
                                             r"installed.*papara-py\[gpu\]"):
            align(*inputs, output=tmp_path / f"{device}.h5", device=device)
        assert not (tmp_path / f"{device}.h5").exists()
