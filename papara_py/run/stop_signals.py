"""How a stop signal (Ctrl-C, SIGTERM, SIGHUP) reaches a run: as an exception in the main thread,
raised where it is safe to raise one. The command line installs `stop_signals_raise` (papara_py/
cli.py); a run started from Python (the API, `run/runner.run`) only makes Python's own Ctrl-C
handler wait where it must (`interrupt_waits_for_libraries`) and leaves any other handler alone.

Python runs a signal's handler between any two bytecodes of the main thread, and whatever it
raises unwinds from there. Two places are not safe, both seen in CI and in a loop of stopped runs
(tests/run/test_interrupts.py):

- inside numba or llvmlite while they load or compile a function: an exception there leaves
  LLVM's objects half-made, and disposing of them later hung the process for good (1 run in 80);
- inside a destructor or a ctypes callback (llvmlite's object cache notifies through one): Python
  drops what such code raises ("Exception ignored in ..."), so the signal was lost and the run
  went on to finish with status 0 (2 runs in 80).

So the handler raises only when no frame of numba's or llvmlite's is on the main thread's stack,
and asks again shortly after (`RETRY_SECONDS`) otherwise; and a stop exception that Python
dropped is delivered again the same way. Either costs a stopped run at most the time the library
needs to finish the function it is loading. A delivery still pending when the block ends is
settled there, never left to a timer that the process's exit would cancel: a run started from
Python raises KeyboardInterrupt at the end of the call (the interrupt landed during it), the
command line's finished command keeps its exit status.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from papara_py.errors import Terminated

#: Signals handled like Ctrl-C: the run stops promptly, cleans up and exits with 128 + the number.
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

#: Libraries whose state a Python exception raised in the middle of their code leaves broken.
UNINTERRUPTIBLE_LIBRARIES = ("numba", "llvmlite")

#: How soon a signal that could not be raised where it landed is delivered again.
RETRY_SECONDS = 0.01


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main
    thread, once: every clean-up Ctrl-C runs, runs for them too, and a second one cannot interrupt
    it. Ctrl-C raises KeyboardInterrupt as Python's own handler does (a second one interrupts).

    From the first stop signal on, errors raised in destructors are not printed
    (`sys.unraisablehook`, left so after the block): a library's object half-made when the
    exception unwound through its constructor fails in its destructor, and Python would print
    "Exception ignored ... Traceback" under papara-py's one-line message; the object dies only when
    the exception is handled, and the process is ending. A signal the process was started
    ignoring (`nohup`: SIGHUP; a shell's background job: SIGINT) stays ignored. Outside the main
    thread (an embedding program) nothing is changed."""
    raised = False
    active = True  # the handlers are installed: a dropped stop can still reach the block

    def handler(number: int, frame: FrameType | None) -> None:
        nonlocal raised
        sys.unraisablehook = dropped
        if number == signal.SIGINT:
            _interrupt(number, frame)  # which notes the delivery
            return
        _delivered(number)
        if _inside_uninterruptible_library(frame):
            _deliver_again(number)
        elif not raised:
            raised = True
            raise Terminated(number, signal.Signals(number).name)

    def dropped(unraisable) -> None:
        """sys.unraisablehook after the first stop signal: a stop exception Python dropped is
        delivered again while the block runs; any other error is a half-made object's, not printed."""
        nonlocal raised
        stop = unraisable.exc_value
        if not active:  # the process is ending: nothing left to stop
            return
        if isinstance(stop, Terminated):
            raised = False
            _deliver_again(stop.signal_number)
        elif isinstance(stop, KeyboardInterrupt):
            _deliver_again(signal.SIGINT)

    try:
        previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, *TERMINATING_SIGNALS)
                    if signal.getsignal(number) not in (signal.SIG_IGN, None)}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield
    finally:
        active = False
        for number, old in previous.items():
            signal.signal(number, old)
        # the command ended (its outputs are complete or removed) before a deferred stop was sent
        # again: sent after the handlers went back, it would kill the process or print a traceback
        _take_pending()


@contextmanager
def interrupt_waits_for_libraries() -> Iterator[None]:
    """Within the block, Ctrl-C raises KeyboardInterrupt as Python's own handler does, but not
    inside numba or llvmlite: for a run started from Python, where an interrupt landing while numba
    loads a cached function could hang a notebook's kernel as it hung the command line (above).
    Only Python's own handler (`signal.default_int_handler`, which Jupyter's kernels use while a
    cell runs) is replaced, and put back after the block; a program's own handler, an ignored
    SIGINT, SIGTERM and SIGHUP, and a run on a thread other than the main one are left as they
    are. Unlike the command line's, an interrupt Python drops in a destructor stays dropped, as
    it is without papara-py: the caller's `sys.unraisablehook` is not touched. An interrupt still
    waiting for numba when the block ends is raised there (its timer would otherwise fire after
    the call, or never, if the program ends first)."""
    replaced = False
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _interrupt)
            replaced = True
        except ValueError:  # not the main thread
            pass
    try:
        yield
    except BaseException:
        if replaced:
            _take_pending()  # the call is ending already: a second stop would only cut its clean-up
        raise
    else:
        if replaced and _take_pending() is not None:
            raise KeyboardInterrupt  # Ctrl-C landed in numba's last call: the call is interrupted all the same
    finally:
        if replaced and signal.getsignal(signal.SIGINT) is _interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _interrupt(number: int, frame: FrameType | None) -> None:
    """Ctrl-C as Python's own handler, once no frame of numba's or llvmlite's is on the stack."""
    _delivered(number)
    if _inside_uninterruptible_library(frame):
        _deliver_again(number)
    else:
        raise KeyboardInterrupt


def _inside_uninterruptible_library(frame: FrameType | None) -> bool:
    """Whether `frame` or a frame that called it runs code of `UNINTERRUPTIBLE_LIBRARIES` (while
    one is imported too: a package is in sys.modules from the start of its import)."""
    folders = tuple(os.path.dirname(module.__file__) + os.sep for name in UNINTERRUPTIBLE_LIBRARIES
                    if (module := sys.modules.get(name)) is not None and getattr(module, "__file__", None))
    while frame is not None and folders:
        if frame.f_code.co_filename.startswith(folders):
            return True
        frame = frame.f_back
    return False


#: Deliveries not yet made, by signal number: their timers (`_deliver_again`). Written by the
#: handlers and blocks on the main thread (and by the command line's unraisable hook, on the thread
#: of the destructor that dropped a stop), each write one dict operation, so no lock: a handler
#: runs between any two bytecodes of the main thread, and a lock held there would deadlock it.
_pending: dict[int, threading.Timer] = {}


def _deliver_again(number: int) -> None:
    """Send signal `number` to the main thread again after `RETRY_SECONDS`, from a thread of its own
    (the handler itself must return for the library's code to go on), and again every
    `RETRY_SECONDS` until its handler has run (`_delivered`). To the main thread, not the process:
    the kernel may hand a process's signal to any thread, and then a main thread blocked in a wait
    (time.sleep, a lock) is not woken to run the handler (seen in CI: 10 s late). And more than
    once: a signal that arrives just before the main thread enters such a wait does not end it
    either (Python checks its handlers when the wait ends; seen in a loop of this module's tests
    on a loaded machine: the handler ran when a 10 s sleep was over)."""
    timer = threading.Timer(RETRY_SECONDS, _send_until_delivered, (number,))
    timer.daemon = True
    earlier = _pending.get(number)
    _pending[number] = timer
    if earlier is not None:  # one delivery of a signal at a time, the latest
        earlier.cancel()
    timer.start()


def _send_until_delivered(number: int) -> None:
    """The timer's work: the signal to the main thread, every RETRY_SECONDS while still pending."""
    timer = threading.current_thread()
    while _pending.get(number) is timer:
        signal.pthread_kill(threading.main_thread().ident, number)
        if timer.finished.wait(RETRY_SECONDS):  # cancelled (`_take_pending`)
            return


def _delivered(number: int) -> None:
    """The handler of signal `number` runs: a delivery pending for it is made."""
    _pending.pop(number, None)


def _take_pending() -> int | None:
    """A signal whose delivery is still pending, its timer cancelled (the block that deferred it is
    ending); None if none is."""
    taken = list(_pending.items())
    _pending.clear()
    for _, timer in taken:
        timer.cancel()
    return taken[0][0] if taken else None
