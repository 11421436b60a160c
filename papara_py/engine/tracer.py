"""The decoding's GPUs for a run (`--traceback auto` with GPUs): `Tracer` hands each batch's
posterior step to the least busy of them (engine/gpu_posterior.GpuPosterior) and fails over to
the CPU where a GPU cannot take it. The model's decoder (model/decode.py) receives it from the
runner as its `GpuDecoder`.
"""
from __future__ import annotations

import logging
import threading

#: Batches decoded at once per GPU (run/stages.BatchStages); on the CPU one, which uses every thread.
GPU_TRACING_THREADS = 2

_log = logging.getLogger(__name__)  # the run's messages (run/log.py)


class Tracer:
    """`--traceback auto` with GPUs: each batch's posterior step on one of the run's GPUs
    (engine/gpu_posterior.py), the one with the fewest batches in hand (of those, the one given
    the fewest so far). A batch's step mostly waits for the scoring launches queued before it on
    its GPU; on the first GPU alone, two GPUs' batches kept its threads so busy that the engine
    waited for them (docs/performance.md).

    A batch the device cannot take is decoded on the CPU; a device fault takes that GPU out of the
    decoding for the rest of the run, with a notice (the CPU takes over when none is left).
    Either way the results are the same as the CPU's."""

    def __init__(self, devices: list) -> None:
        from papara_py.engine.gpu_posterior import GpuPosterior

        self.gpus = [GpuPosterior(device) for device in devices]
        self._in_hand = [0] * len(self.gpus)
        self._given = [0] * len(self.gpus)
        self._live = [True] * len(self.gpus)
        self._lock = threading.Lock()  # batches are traced back on several threads (run/stages.BatchStages)

    @property
    def usable(self) -> bool:
        return any(self._live)

    @property
    def threads(self) -> int:
        """Decoding threads the run needs: GPU_TRACING_THREADS per GPU (one batch's wait for the
        device overlaps the next's)."""
        return GPU_TRACING_THREADS * len(self.gpus)

    def describe(self) -> str:
        """The decoding's devices for the run record: the GPUs' names."""
        return ", ".join(gpu.device.name for gpu in self.gpus)

    def decode_batch(self, *args, **options):
        """GpuPosterior.decode_batch on the least busy live GPU, or None where the CPU must do it."""
        return self._on_a_gpu("decode_batch", "posterior step", "decoding", *args, **options)

    def _on_a_gpu(self, method: str, what: str, doing: str, *args, **options):
        """GpuPosterior's `method` on the least busy live GPU, or None where the CPU must do it: no
        GPU left, a batch the device cannot take (ValueError), or a device fault, which takes that
        GPU out for the rest of the run with a notice."""
        with self._lock:
            live = [i for i, alive in enumerate(self._live) if alive]
            if not live:
                return None
            chosen = min(live, key=lambda i: (self._in_hand[i], self._given[i]))
            self._in_hand[chosen] += 1
            self._given[chosen] += 1
        try:
            done = getattr(self.gpus[chosen], method)(*args, **options)
        except ValueError as error:
            _log.debug(f"{what} of a batch on the CPU: {error}")
            done = None
        except Exception as error:  # noqa: BLE001 - any OpenCL fault: the CPU gives the same results
            with self._lock:
                self._live[chosen] = False
                others = any(self._live)
            lines = str(error).strip().splitlines()
            _log.info(f"the GPU {what} failed ({type(error).__name__}: {lines[-1] if lines else ''}); "
                      + (f"{doing} the remaining reads on the other GPUs" if others
                         else f"{doing} the remaining reads on the CPU"))
            done = None
        with self._lock:
            self._in_hand[chosen] -= 1
        return done
