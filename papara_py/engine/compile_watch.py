"""A notice when a run must compile numba's kernels (`watch_compiles`), and what it saw.

numba compiles papara-py's kernels for the CPU it runs on the first time a run calls them, and
caches the machine code (NUMBA_CACHE_DIR, else __pycache__ beside the installed sources, else
~/.cache/numba: papara_py/__init__.py picks a writable place); every later run on that CPU loads
them in a fraction of a second. On the 2-core development machine compiling what one example
run calls took about COMPILE_ESTIMATE_SECONDS of one core (docs/performance.md, "Start-up").
papara_py/run/warmup.py pays that ahead (`papara-py warm-up`, which the container definitions run at
build time); a run that must compile says so once, through the "papara_py" logger (this module
never prints).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

logger = logging.getLogger("papara_py")

#: Seconds of one core that compiling one alphabet's kernels took on the 2-core development
#: machine with an empty cache (measured; the notice's estimate).
COMPILE_ESTIMATE_SECONDS = 25


@dataclass
class CompileWatch:
    """What `watch_compiles` saw: compilations of papara-py functions (not loads from numba's
    cache; a function called from another is compiled, and counted, with it) and the seconds
    all compilations took (wall clock; nested ones counted once)."""

    functions: int = 0
    seconds: float = 0.0
    _depth: threading.local = field(default_factory=threading.local, repr=False)
    _started: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@contextmanager
def watch_compiles(notice: bool = True) -> Iterator[CompileWatch]:
    """Within the block, count numba's compilations of papara-py functions (any thread); with
    `notice`, the first one logs "compiling kernels for this CPU, once, up to ~N s" (INFO), and the
    block's end how long they took. Loading from numba's cache is not compiling: a warm run
    logs nothing."""
    from numba.core import event

    watch = CompileWatch()

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            depth = getattr(watch._depth, "value", 0)
            watch._depth.value = depth + 1
            if not depth:
                watch._started[threading.get_ident()] = time.perf_counter()
            if not _ours(ev):
                return
            with watch._lock:
                watch.functions += 1
                first = watch.functions == 1
            if first and notice and not _warming.active:
                logger.info(f"compiling kernels for this CPU, once, up to ~{COMPILE_ESTIMATE_SECONDS} s "
                            "(later runs load them from numba's cache; `papara-py warm-up` compiles them ahead)")

        def on_end(self, ev) -> None:
            watch._depth.value = getattr(watch._depth, "value", 1) - 1
            if watch._depth.value == 0:
                started = watch._started.pop(threading.get_ident(), None)
                if started is not None:
                    with watch._lock:
                        watch.seconds += time.perf_counter() - started

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        yield watch
    finally:
        event.unregister("numba:compile", listener)
        if notice and watch.functions and not _warming.active:
            logger.info(f"compiled {watch.functions} kernel(s) in {watch.seconds:.1f} s; cached for later runs")


class _Warming:
    """Whether papara_py/run/warmup.py's `warm_up` is running (its runs' own notices would repeat its
    own)."""

    active = 0


_warming = _Warming()


def _ours(ev) -> bool:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("papara_py")
