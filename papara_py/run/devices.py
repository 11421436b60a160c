"""Stage 3 of the main job: who scores and who traces back. `choose_devices` picks the CPU
workers and GPUs for --device, --gpus and -j (with --device auto, the CPU alone where a GPU
would not repay its start-up) and starts the GPUs on a thread of their own; the traceback's GPUs
go to an engine/tracer.Tracer.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from papara_py.engine.cpu import default_lane_width
from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.tracer import Tracer
from papara_py.errors import InputError
from papara_py.run.config import RunConfig
from papara_py.run.inputs import Inputs
from papara_py.run.log import Reporter

#: --device auto starts no GPU for a run whose CPU scoring would take less than this: what a GPU
#: costs before its first result with warm caches (pyopencl's import, the context, the kernels from
#: the binary cache), about 1 s on the H100 host (notebook/BENCHMARKS.md, "identity and start-up").
GPU_STARTUP_SECONDS = 1.0
#: Cells a CPU worker thread scores per second, for that estimate (H100 host: 100 GCUPS on 16).
CPU_CELLS_PER_THREAD_SECOND = 6e9


def resolve_scorers(config: RunConfig, reporter: Reporter) -> tuple[bool, list, dict[str, str]]:
    """(use_cpu, GPU consumers, GPUs that could not be used: name -> why) for --device
    auto|cpu|gpu|hybrid and --gpus."""
    if config.device == "cpu":
        _on_the_cpu(config, reporter, "--device cpu")
        return True, [], {}
    from papara_py.engine.opencl_devices import PYOPENCL_MISSING, discover_devices, opencl_installed

    if not opencl_installed():  # an optional dependency (the `gpu` extra)
        if config.device == "auto":
            _on_the_cpu(config, reporter, PYOPENCL_MISSING)
            return True, [], {}
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU: {PYOPENCL_MISSING}")
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.gpu import GpuScorer

    try:
        devices = discover_devices("gpu")
    except Exception as error:  # noqa: BLE001 - a broken OpenCL installation is a missing GPU
        reporter.notice(f"OpenCL could not list the devices ({type(error).__name__}: {error})")
        devices = []
    if not devices:
        if config.device == "auto":
            _on_the_cpu(config, reporter, "no OpenCL GPU found")
            return True, [], {}
        raise InputError("--device", f"--device {config.device} needs an OpenCL GPU and none was found; "
                         "run `papara-py devices` to see what OpenCL reports")
    chosen = range(len(devices)) if config.gpus is None else config.gpus
    missing = [i for i in chosen if i >= len(devices)]
    if missing:
        raise InputError("--gpus", f"there is no GPU {missing[0]}: {len(devices)} usable OpenCL GPU(s), numbered "
                                   f"from 0 (`papara-py devices` lists them)")
    scorers, unusable = [], {}
    for i in chosen:
        device = devices[i]
        name = f"gpu-{i}:{device.name}"
        try:  # the context and queues: fails on a GPU that another process has filled or holds
            scorers.append(GpuChunkScorer(GpuScorer(device, profiling=config.gpu_profile), name, config.gpu_chunk))
        except Exception as error:  # noqa: BLE001 - any OpenCL fault makes this GPU unusable
            lines = str(error).strip().splitlines()
            unusable[name] = f"{type(error).__name__}: {lines[-1] if lines else ''}"
    if unusable:
        listed = "; ".join(f"{name}: {why}" for name, why in unusable.items())
        if not scorers and config.device == "gpu":
            raise InputError("--device", f"--device gpu found no usable GPU ({listed}); another process may "
                                         f"hold the device or its memory: try again later, or run with "
                                         f"--device auto or cpu")
        reporter.notice(f"{len(unusable)} GPU(s) cannot be used ({listed}); "
                        + ("running on the CPU" if not scorers else "running on the others"))
    # auto: the GPUs alone, as gpu (CPU workers start only if every GPU fails); hybrid: both
    return config.device == "hybrid" or not scorers, scorers, unusable


def _on_the_cpu(config: RunConfig, reporter: Reporter, why: str) -> None:
    """Say why the run uses no GPU: a detail (-v), or a notice where --gpus named GPUs it will not use."""
    if config.gpus is None:
        reporter.detail(f"{why}; running on the CPU")
    else:
        reporter.notice(f"--gpus {','.join(map(str, config.gpus))} is not used: {why}; running on the CPU")


@dataclass
class Devices:
    """Stage 3, `choose_devices`: who scores, and the engine's shape."""

    use_cpu: bool
    gpu_scorers: list
    width: int               # lanes (edges per block)
    options: EngineOptions
    tracer: Tracer | None    # the traceback's GPU (--traceback auto with a GPU), or None: the CPU's
    choice: str = ""         # why, where --device auto decided against the GPU
    unusable: dict[str, str] = field(default_factory=dict)  # GPUs whose start failed: name -> why


def choose_devices(config: RunConfig, reporter: Reporter, inputs: Inputs) -> Future:
    """Stage 3, started: CPU workers and GPUs for --device, --gpus and -j; the Future's result
    is the Devices. GPUs start (OpenCL context, queues) on a thread of their own, while the
    profiles are built. With --device auto, a run of one sample whose CPU scoring is estimated below
    GPU_STARTUP_SECONDS stays on the CPU (the GPU would not repay its start-up), and the run
    record says so: the estimate waits for the reads parsed to reach that much work or end."""
    choice = ""
    if config.device == "auto":
        cells_per_residue = inputs.edge_tree.n_edges * inputs.n_columns
        enough = GPU_STARTUP_SECONDS * max(1, config.threads) * CPU_CELLS_PER_THREAD_SECOND
        residues, ended = inputs.reads.wait_for_residues(-(-int(enough) // cells_per_residue))
        cells = residues * cells_per_residue
        estimate = cells / (max(1, config.threads) * CPU_CELLS_PER_THREAD_SECOND)
        if ended and not config.more_samples and estimate < GPU_STARTUP_SECONDS:
            choice = (f"cpu: about {estimate:.2f} s of CPU scoring expected ({cells} cells on {config.threads} "
                      f"threads), less than a GPU's start-up (about {GPU_STARTUP_SECONDS:g} s)")
            _on_the_cpu(config, reporter, f"--device auto: {choice}")

    def start() -> Devices:
        use_cpu, gpu_scorers, unusable = (True, [], {}) if choice else resolve_scorers(config, reporter)
        reporter.record(f"device {config.device}: " + ", ".join(
            ([f"{max(1, config.threads - len(gpu_scorers))} CPU workers"] if use_cpu else [])
            + [scorer.name for scorer in gpu_scorers]))
        # each GPU keeps a core for its feeder threads (the paper's hybrid: 3 CPU workers + 1 GPU
        # thread on 4 cores); gpu-only runs start CPU workers only if every GPU fails
        options = config.engine_options or EngineOptions(cpu_workers=max(1, config.threads - len(gpu_scorers)))
        tracer = (Tracer([scorer.gpu.device for scorer in gpu_scorers])
                  if gpu_scorers and config.traceback == "auto" else None)
        width = config.lanes or default_lane_width()
        reporter.detail(f"{width} lanes, device {config.device}")
        return Devices(use_cpu, gpu_scorers, width, options, tracer, choice, unusable)

    if config.device == "cpu" or choice:
        done: Future = Future()
        done.set_result(start())
        return done
    starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="papara-gpu-start")
    try:
        return starter.submit(start)
    finally:
        starter.shutdown(wait=False)  # the thread ends when the GPUs are started
