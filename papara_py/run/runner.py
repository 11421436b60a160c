"""The main job, start to finish, as named stages (`_run`): read_inputs -> choose_devices ->
edge_profiles -> plan_work -> ScoreTraceWrite (engine, model, HDF5) -> the run record.

Nothing waits for what it does not need. The reads are parsed on a thread of their own from the
moment the alignment is read (io/read_stream.py), and GPUs start (OpenCL context, queues) on
another while the profiles and the strand decision's k-mers are built; the first batch is scored
as soon as it is parsed, while the rest of the file is read. Reads are scored and traced in
batches (input order), each batch's rows going straight into the output file, so memory holds the
compact reads, a few batches' working arrays and the profiles of one queue's worth of edge
blocks, whatever the read count (run/stages.py).
"""
from __future__ import annotations

import sys
import threading
import time

from papara_py import __version__
from papara_py.engine.candidates import load_merges
from papara_py.engine.compile_watch import watch_compiles
from papara_py.model.decode import warm_up
from papara_py.run.config import RunConfig, RunSummary
from papara_py.run.devices import choose_devices
from papara_py.run.inputs import edge_profiles, plan_work, read_inputs
from papara_py.run.log import Reporter, RunLog
from papara_py.run.samples import SampleRun
from papara_py.run.stages import ScoreTraceWrite
from papara_py.run.stop_signals import interrupt_waits_for_libraries

#: How often CPython makes a thread that holds the GIL hand it over during a run (default 5 ms).
#: A GPU feeder whose launch ended waits for the GIL while the writer, traceback and master
#: threads run Python; 0.5 ms took the GPU's idle time in a 1M-read run from 5.2 s to 3.9-4.4 s
#: on one machine (notebook/BENCHMARKS.md, "Streaming the reads").
GIL_SWITCH_SECONDS = 0.0005


def run(config: RunConfig) -> list[RunSummary]:
    """Run the main job; raises InputError for bad input, leaves no output file on failure (with
    several samples: none but those of the samples complete before it failed, which are kept and
    named in a notice). Returns each sample's summary, in order."""
    log = RunLog(config.log)
    reporter = Reporter(config.progress, log)
    reporter.record(f"papara-py {__version__}: {config.command_line or 'papara_py.run.runner.run'}")
    reporter.record(f"threads: {config.threads} ({config.threads_source})")
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, GIL_SWITCH_SECONDS))
    samples: list[SampleRun] = []
    try:
        log.check()  # a log that cannot be written (--log /dev/full) stops the run before any work
        # a run that must compile numba's kernels says so (engine/compile_watch.py); Ctrl-C waits
        # until numba returns where Python's own handler is in place (the API; the CLI has its own)
        with watch_compiles(), interrupt_waits_for_libraries():
            summaries = _run(config, reporter, samples)
        log.check()
        return summaries
    except BaseException as error:  # the log says how the run ended, whatever ended it
        log.error(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        kept = [sample.config.output for sample in samples if sample.complete]
        for sample in samples:
            sample.abandon(error)
        if kept:  # several samples: the CLI's "no output written" would not be the whole truth
            lost = len(config.samples) - len(kept)
            reporter.notice(f"kept the run file{'s' * (len(kept) > 1)} of the {len(kept)} sample"
                            f"{'s' * (len(kept) > 1)} complete before the run stopped ({', '.join(kept)})"
                            + (f"; the other {lost} {'were' if lost > 1 else 'was'} not written" if lost else ""))
            error.papara_kept = kept
        raise
    finally:
        sys.setswitchinterval(switch)  # the caller's interpreter as it was (the Python API)
        log.close()


def _run(config: RunConfig, reporter: Reporter, samples: list[SampleRun]) -> list[RunSummary]:
    """The main job as its stages; `timings` collects each stage's seconds for the run record
    (the first sample's: the stages before the scoring are the run's, done once)."""
    timings: dict[str, float] = {}  # the first sample's (samples.py)
    started = time.perf_counter()
    # numba's JIT starts while the inputs are read, not on a consumer thread (engine/candidates.py, model/decode.py)
    jit_loader = threading.Thread(target=_load_jit, name="papara-jit", daemon=True)
    jit_loader.start()
    inputs = read_inputs(config, reporter, timings)
    for number, sample in enumerate(config.samples, 1):  # `run` closes their reads, whatever happens
        samples.append(SampleRun(number, len(config.samples), config.for_sample(sample),
                                 timings if number == 1 else {}))
    samples[0].inputs = inputs
    starting = choose_devices(config, reporter, inputs)
    profiles = edge_profiles(config, inputs, timings)
    work = plan_work(config, reporter, inputs, profiles, timings)
    t0 = time.perf_counter()
    devices = starting.result()
    timings["devices_wait"] = time.perf_counter() - t0
    ScoreTraceWrite(config, reporter, samples, profiles, devices, work, started).run(jit_loader)
    return [sample.summary for sample in samples]


def _load_jit() -> None:
    """Load (or compile) the numba functions every run calls, on a thread of their own while
    the inputs are read, instead of on the thread that first needs them (a GPU feeder or the
    engine's master, with the GPU waiting): the candidate merges (engine/candidates.py), then the
    model's (model/decode.warm_up). A run that ends while numba still compiles (a stop signal, an
    input error) tears the interpreter down under this daemon thread, and numba's registries fail
    half-way: nothing to report then, as the run has said why it ended (tests/run/test_interrupts.py)."""
    try:
        load_merges()
    except Exception:
        if sys.is_finalizing() or not threading.main_thread().is_alive():
            return
        raise
    warm_up()
