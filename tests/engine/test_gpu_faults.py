"""GPU faults (issue #28, cause 8), with the engine's fault injection (CI has no GPU: PoCL runs the
kernels): a launch that fails for lack of memory is tried again after a back-off instead of
dropping the GPU; a GPU whose context cannot be made is passed over by auto and hybrid, with a
notice, and --device gpu with no usable GPU ends as one paragraph, exit status 2."""

from __future__ import annotations

import json
import logging

import h5py
import numpy as np
import pytest
from engine_cases import expected, gpu, random_case, run
from misuse import EXAMPLE

from papara_py.cli import main
from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.scheduler import is_out_of_memory
from papara_py.model.params import ScoringParams
from papara_py.run import devices
from papara_py.run.config import RunConfig


def test_out_of_memory_is_recognised():
    assert is_out_of_memory(RuntimeError("clEnqueueNDRangeKernel failed: MEM_OBJECT_ALLOCATION_FAILURE"))
    assert is_out_of_memory(RuntimeError("create_buffer failed: OUT_OF_RESOURCES"))
    assert not is_out_of_memory(RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE"))


@pytest.mark.parametrize("use_cpu", [True, False], ids=["hybrid", "gpu-only"])
def test_a_gpu_out_of_memory_for_a_while_is_tried_again_not_dropped(use_cpu, opencl_device, caplog):
    caplog.set_level(logging.INFO, logger="papara_py")  # the engine's notices: logging
    params = ScoringParams()
    profiles, reads, batch = random_case(11, n_edges=90)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, use_cpu, [gpu(opencl_device, chunk=1)],
                 EngineOptions(cpu_workers=1, oom_after_chunks=1, oom_failures=2, oom_backoff_seconds=0.01,
                               cpu_yields_to_caller=True))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    gpus = [c for c in result.consumers if c.name.startswith("gpu")]
    assert not any(c.error for c in gpus)  # still alive after the faults
    if not use_cpu:  # gpu-only: every block goes through the GPU, so the faults surely happen
        assert sum(c.retries for c in gpus) >= 2
        assert all("MEM_OBJECT_ALLOCATION_FAILURE" in fault for c in gpus for fault in c.faults)
        assert "went on after a back-off" in caplog.text


def test_a_gpu_that_stays_out_of_memory_is_dropped_and_the_cpu_finishes(opencl_device):
    params = ScoringParams()
    profiles, reads, batch = random_case(12, n_edges=70)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, False, [gpu(opencl_device, chunk=1)],
                 EngineOptions(cpu_workers=1, oom_after_chunks=0, oom_failures=100, oom_retries=2,
                               oom_backoff_seconds=0.01))
    assert np.array_equal(result.candidates.edge, want_edge)
    gpus = [c for c in result.consumers if c.name.startswith("gpu")]
    assert all(c.error and "MEM_OBJECT_ALLOCATION_FAILURE" in c.error for c in gpus)
    assert all(c.retries == 2 for c in gpus)


class _Device:
    name = "Busy GPU"


@pytest.fixture
def busy_gpu(monkeypatch):
    """One GPU whose context cannot be made (another process holds it or its memory)."""
    import papara_py.engine.gpu as gpu_module
    import papara_py.engine.opencl_devices as devices_module

    def refuse(*args, **kwargs):
        raise RuntimeError("Context failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(devices_module, "discover_devices", lambda kind="gpu": [_Device()])
    monkeypatch.setattr(gpu_module, "GpuScorer", refuse)


def example_args(tmp_path, device: str) -> list[str]:
    return ["-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"),
            "-o", str(tmp_path / "run.h5"), "--device", device, "-j", "1"]


def test_device_gpu_without_a_usable_gpu_ends_in_one_paragraph(busy_gpu, tmp_path, capsys):
    assert main(example_args(tmp_path, "gpu")) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "papara-py: error: --device: --device gpu found no usable GPU" in err
    assert "gpu-0:Busy GPU: RuntimeError: Context failed: OUT_OF_RESOURCES" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("device", ["auto", "hybrid"])
def test_auto_and_hybrid_run_on_the_cpu_when_the_gpu_is_unusable(busy_gpu, tmp_path, capsys, device, monkeypatch):
    # the example is small enough for --device auto to leave the GPU alone (run/devices.choose_devices):
    # as if the CPU were slow, so that auto reaches for the GPU that fails
    monkeypatch.setattr(devices, "CPU_CELLS_PER_THREAD_SECOND", 1e6)
    assert main(example_args(tmp_path, device)) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "1 GPU(s) cannot be used (gpu-0:Busy GPU: RuntimeError: Context failed: OUT_OF_RESOURCES); " \
           "running on the CPU" in err
    with h5py.File(tmp_path / "run.h5") as run_file:
        record = json.loads(run_file["run"].attrs["unusable_gpus"])
    assert record == {"gpu-0:Busy GPU": "RuntimeError: Context failed: OUT_OF_RESOURCES"}
    assert not hasattr(RunConfig("t", "s", "r", "o"), "unusable_gpus")  # an outcome, not a setting
