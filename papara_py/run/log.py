"""`--log FILE`: what a run did, one time-stamped, levelled line per event.

Standard error keeps the short notices a person reads while waiting; the log keeps what a bug
report or a methods section needs: the version and command line, each input with its size and
SHA-256, the threads and devices used and why, each batch as it finishes, the phases' times,
warnings, and the result or the error. Lines are flushed as they are written (line-buffered), so
the log of a killed run is complete up to its last event. An existing log is appended to, never
replaced.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone

from tqdm import tqdm


class RunLog:
    """Lines "TIMESTAMP LEVEL message" appended to a file (or nowhere, without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._file = open(path, "a", encoding="utf-8", buffering=1) if path else None

    def write(self, level: str, message: str) -> None:
        if self._file is not None:
            stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
            self._file.write(f"{stamp} {level:<7} {message}\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
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
