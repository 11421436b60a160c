"""`--log FILE`: what a run did, one time-stamped, levelled line per event.

Standard error keeps the short notices a person reads while waiting; the log keeps what a bug
report or a methods section needs: the version and command line, each input with its size and
SHA-256, the threads and devices used and why, each batch as it finishes, the phases' times,
warnings, and the result or the error. Each line is written as it comes (unbuffered), so the log
of a killed run is complete up to its last event. An existing log is appended to, never replaced.

A write fault (a full disk, `--log /dev/full`) is an output fault like any other (exit status 3,
one paragraph naming the log file): `write`, called from any of the run's threads, keeps the first
fault and writes no more; the run raises it at its next check (`check`: before any work, after
each batch written and before each run file is committed, and at the end).
"""

from __future__ import annotations

import errno
import sys
import threading
from datetime import datetime, timezone

from tqdm import tqdm

from papara_py.errors import OutputError
from papara_py.io.outputs import describe_fault


class RunLog:
    """Lines "TIMESTAMP LEVEL message" appended to a file (or nowhere, without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.fault: OutputError | None = None
        self._lock = threading.Lock()
        self._file = None
        if path:
            try:
                self._file = open(path, "ab", buffering=0)
            except OSError as error:
                raise self._fault(error) from None

    def _fault(self, error: OSError) -> OutputError:
        return OutputError(self.path, describe_fault(error), direct=True, what="the log file")

    def write(self, level: str, message: str) -> None:
        if self._file is None:
            return
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        line = memoryview(f"{stamp} {level:<7} {message}\n".encode("utf-8"))
        with self._lock:
            try:
                while line:
                    written = self._file.write(line)
                    if not written:
                        raise OSError(errno.EIO, "the file system accepted no bytes")
                    line = line[written:]
            except OSError as error:
                self.fault = self._fault(error)
                self._close()

    def check(self) -> None:
        """Raise the log's write fault, if it had one (OutputError)."""
        if self.fault is not None:
            raise self.fault

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


class Reporter:
    """Notices on stderr (one line each), the run log, and tqdm bars that stay quiet off a tty."""

    def __init__(self, quiet: bool, verbose: bool, log: RunLog | None = None) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.log = log or RunLog(None)

    def notice(self, message: str) -> None:
        """A short line for the person at the terminal (and the log)."""
        self.log.write("INFO", message)
        if not self.quiet:
            print(f"papara-py: {message}", file=sys.stderr)

    def warning(self, message: str) -> None:
        """Something the user should act on (shown unless --quiet; WARNING in the log)."""
        self.log.write("WARNING", message)
        if not self.quiet:
            print(f"papara-py: warning: {message}", file=sys.stderr)

    def detail(self, message: str) -> None:
        """More detail: on stderr with --verbose, always in the log."""
        self.log.write("INFO", message)
        if self.verbose and not self.quiet:
            print(f"papara-py: {message}", file=sys.stderr)

    def record(self, message: str) -> None:
        """For the log only (inputs, checksums, batches): too much for a terminal."""
        self.log.write("INFO", message)

    def bar(self, total: int, unit: str, desc: str) -> tqdm:
        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, leave=False,
                    disable=True if self.quiet else None, dynamic_ncols=True)
