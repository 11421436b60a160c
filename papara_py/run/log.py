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
  the result or the error. Lines are flushed as they are written, so the log of a killed run is
  complete up to its last event. An existing log is appended to, never replaced.
- `messages_on_stderr`: the command line's handler (notices, `--quiet`, `--verbose`).

A program using the Python API sees the notices by configuring logging, e.g.
`logging.basicConfig(level=logging.INFO)`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from tqdm import tqdm

LOGGER = logging.getLogger("papara_py")
#: The attribute that marks a record for the run log only (never shown on stderr).
LOG_ONLY = "papara_log_only"


class Reporter:
    """The runner's messages (on the "papara_py" logger) and its progress bars (`progress`)."""

    def __init__(self, progress: bool = False) -> None:
        self.progress = progress

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


class _LineFormatter(logging.Formatter):
    """TIMESTAMP LEVEL message: the run log's lines (INFO for notices, details and records)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        level = record.levelname if record.levelno >= logging.WARNING else "INFO"
        return f"{stamp} {level:<7} {record.getMessage()}"


class RunLog:
    """`--log FILE` for one run: a handler appending every message of the "papara_py" logger to
    FILE, from construction to `close` (nowhere, without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._handler: logging.Handler | None = None
        self._level = LOGGER.level
        if path:
            self._handler = logging.FileHandler(path, mode="a", encoding="utf-8")
            self._handler.setLevel(logging.DEBUG)
            self._handler.setFormatter(_LineFormatter())
            LOGGER.addHandler(self._handler)
            if LOGGER.getEffectiveLevel() > logging.DEBUG:
                LOGGER.setLevel(logging.DEBUG)  # every message reaches the file; the other handlers keep their levels

    def error(self, message: str) -> None:
        """How the run ended, for the log only (the caller reports the error itself)."""
        LOGGER.error(message, extra={LOG_ONLY: True})

    def close(self) -> None:
        if self._handler is not None:
            LOGGER.removeHandler(self._handler)
            self._handler.close()
            self._handler = None
            LOGGER.setLevel(self._level)


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
