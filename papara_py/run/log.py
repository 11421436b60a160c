"""A run's messages, through `logging` (the logger "papara_py"): the library prints nothing.

- `Reporter`: what the runner says: `warning` (WARNING), `notice` (INFO: a short line for the
  person at the terminal), `detail` (DEBUG: what --verbose shows) and `record` (DEBUG, marked
  `LOG_ONLY`: inputs, checksums, batches: too much for a terminal, kept for the log), and the
  progress bars (tqdm, only where the caller asked for them: the command line does).
- `RunLog` (`--log FILE`): every message of the run, one time-stamped, levelled line each,
  appended to FILE by a handler on the "papara_py" logger for the run's duration. Standard error
  keeps the short notices a person reads while waiting; the log keeps what a bug report or a
  methods section needs: the version and command line, each input with its size and SHA-256, the
  threads and devices used and why, each batch as it finishes, the phases' times, warnings, and
  the result or the error. Each line is written as it comes (unbuffered), so the log of a killed
  run is complete up to its last event. An existing log is appended to, never replaced.
  A write fault (a full disk, `--log /dev/full`) is an output fault like any other (exit status
  3, one paragraph naming the log file): the handler, called from any of the run's threads, keeps
  the first fault and writes no more; the run raises it at its next check (`RunLog.check`: before
  any work, after each batch written and before each run file is committed, and at the end).
- `messages_on_stderr`: the command line's handler (notices, `--quiet`, `--verbose`);
  `silenced`: a run's own messages dropped (the warm-up's runs).

A program using the Python API sees the notices by configuring logging, e.g.
`logging.basicConfig(level=logging.INFO)`.
"""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from tqdm import tqdm

from papara_py.errors import OutputError

LOGGER = logging.getLogger("papara_py")
#: The attribute that marks a record for the run log only (never shown on stderr).
LOG_ONLY = "papara_log_only"


class _LogFile(logging.Handler):
    """Lines "TIMESTAMP LEVEL message" (INFO for notices, details and records) appended to a file,
    unbuffered; the first write fault is kept (`fault`) and nothing more is written."""

    def __init__(self, path: str) -> None:
        super().__init__(logging.DEBUG)
        self.path = path
        self.fault: OutputError | None = None
        try:
            self._file = open(path, "ab", buffering=0)
        except OSError as error:
            raise self._fault(error) from None

    def _fault(self, error: OSError) -> OutputError:
        from papara_py.io.outputs import describe_fault  # h5py: only once there is a fault

        return OutputError(self.path, describe_fault(error), direct=True, what="the log file")

    def emit(self, record: logging.LogRecord) -> None:  # called with the handler's lock held
        if self._file is None:
            return
        stamp = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        level = record.levelname if record.levelno >= logging.WARNING else "INFO"
        line = memoryview(f"{stamp} {level:<7} {record.getMessage()}\n".encode("utf-8"))
        try:
            while line:
                written = self._file.write(line)
                if not written:
                    raise OSError(errno.EIO, "the file system accepted no bytes")
                line = line[written:]
        except OSError as error:
            self.fault = self._fault(error)
            self._close()

    def close(self) -> None:
        self.acquire()
        try:
            self._close()
        finally:
            self.release()
        super().close()

    def _close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


class RunLog:
    """`--log FILE` for one run: every message of the "papara_py" logger appended to FILE, from
    construction to `close` (nowhere, without a path). An unwritable FILE is an OutputError."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._handler = _LogFile(path) if path else None
        self._level = LOGGER.level
        if self._handler is not None:
            LOGGER.addHandler(self._handler)
            if LOGGER.getEffectiveLevel() > logging.DEBUG:
                LOGGER.setLevel(logging.DEBUG)  # every message reaches the file; the other handlers keep their levels

    @property
    def fault(self) -> OutputError | None:
        return self._handler.fault if self._handler is not None else None

    def error(self, message: str) -> None:
        """How the run ended, for the log only (the caller reports the error itself)."""
        LOGGER.error(message, extra={LOG_ONLY: True})

    def check(self) -> None:
        """Raise the log's write fault, if it had one (OutputError)."""
        if self.fault is not None:
            raise self.fault

    def close(self) -> None:
        if self._handler is not None:
            LOGGER.removeHandler(self._handler)
            self._handler.close()
            LOGGER.setLevel(self._level)


class Reporter:
    """The runner's messages (on the "papara_py" logger), its run log (`log`, for its checks) and
    its progress bars (`progress`)."""

    def __init__(self, progress: bool = False, log: RunLog | None = None) -> None:
        self.progress = progress
        self.log = log or RunLog(None)

    def notice(self, message: str) -> None:
        """A short line for the person at the terminal (and the log)."""
        LOGGER.info(message)

    def warning(self, message: str) -> None:
        """Something the user should act on."""
        LOGGER.warning(message)

    def detail(self, message: str) -> None:
        """More detail: on stderr with --verbose, always in the log."""
        LOGGER.debug(message)

    def record(self, message: str) -> None:
        """For the log only (inputs, checksums, batches): too much for a terminal."""
        LOGGER.debug(message, extra={LOG_ONLY: True})

    def bar(self, total: int | None, unit: str, desc: str) -> tqdm:
        """A progress bar on stderr where the caller asked for them (quiet off a tty), else none."""
        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, leave=False,
                    disable=None if self.progress else True, dynamic_ncols=True)


class _StderrFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return ("papara-py: warning: " if record.levelno >= logging.WARNING else "papara-py: ") + record.getMessage()


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a message comes (a test may replace it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


@contextmanager
def silenced() -> Iterator[None]:
    """For the block's duration, the runner's own messages (those on the "papara_py" logger
    itself) dropped, and its modules' notices (INFO and below, from "papara_py.*" loggers) kept
    from the command line's handlers: a run made for another purpose (`papara-py warm-up`'s) says
    nothing of itself, while a module's warning still shows. (A logger's filter sees only the
    records logged on it, not those its children pass up: the modules' need the handlers'.)"""
    def drop(_record: logging.LogRecord) -> bool:
        return False

    def drop_module_notices(record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not record.name.startswith(f"{LOGGER.name}.")

    handlers = list(LOGGER.handlers)
    LOGGER.addFilter(drop)
    for handler in handlers:
        handler.addFilter(drop_module_notices)
    try:
        yield
    finally:
        LOGGER.removeFilter(drop)
        for handler in handlers:
            handler.removeFilter(drop_module_notices)


@contextmanager
def messages_on_stderr(quiet: bool = False, verbose: bool = False) -> Iterator[None]:
    """The command line's messages for the block's duration: notices and warnings on stderr
    ("papara-py: ..."), details too with `verbose`, none with `quiet`; never the records meant for
    the log alone. The logger's handlers and level are as they were afterwards."""
    handler = _Stderr()
    handler.setLevel(logging.CRITICAL + 1 if quiet else logging.DEBUG if verbose else logging.INFO)
    handler.addFilter(lambda record: not getattr(record, LOG_ONLY, False))
    handler.setFormatter(_StderrFormatter())
    level = LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
