"""HDF5 outputs that fail cleanly (io/outputs.py's policy, its item 5): `hdf5_output` opens a
new HDF5 file under `atomic_path` through a guard (`_GuardedFile`) that keeps the first write
fault and drops later writes, so that HDF5 never fails inside a destructor or its closing flush
(h5py printed "Exception ignored" tracebacks and crashed there); `check_writes` raises the fault
at the writer's next step.
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Iterator

import h5py

from papara_py.io.outputs import atomic_path


def _shielded(method):
    """A _GuardedFile method as HDF5 calls it, from C, where an exception is only printed and
    dropped ("Exception ignored in h5py...__dealloc__", seen when Ctrl-C landed in a write
    during a destructor): a KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP as Terminated) raised
    inside is kept in `interrupt`, the operation is redone from where it started (every one of
    them is idempotent from its starting position), and `check` raises the interrupt at the
    run's next check."""
    @wraps(method)
    def shielded(self: "_GuardedFile", *args):
        start = self._file.tell()
        while True:
            try:
                return method(self, *args)
            except KeyboardInterrupt as interrupt:
                if self.interrupt is None:
                    self.interrupt = interrupt
                self._file.seek(start)
    return shielded


class _GuardedFile:
    """The file under an HDF5 output, as h5py's file-object driver sees it: the first failed write
    is kept (`error`), so HDF5 itself never sees a failure; so is a stop signal (`_shielded`).

    HDF5 writes from many places, destructors and the closing flush among them, where h5py can only
    print a failure ("Exception ignored") and may crash afterwards; with the guard the run notices
    the fault at its next check (`check_writes`) and discards the file. From the fault on, writes
    go to an in-memory overlay instead of the disk, and reads see it: HDF5 reads back its own
    metadata, and reading stale bytes where it had written (as when such writes were simply
    dropped) could crash it. The overlay holds only what HDF5 writes between the fault and the
    run's next check, and the file is discarded in any case.
    """

    def __init__(self, path: Path) -> None:
        self._file = open(path, "r+b", buffering=0)
        self.error: OSError | None = None
        self.interrupt: KeyboardInterrupt | None = None
        self._overlay: list[tuple[int, bytes]] = []  # (offset, bytes) written after the fault, in order
        self._end = 0  # the file's size as HDF5 sees it, once the overlay exists

    def _record(self, error: OSError) -> None:
        if self.error is None:
            self.error = error
            self._end = os.fstat(self._file.fileno()).st_size

    @_shielded
    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        size = len(view)
        position = self._file.tell()
        if self.error is None:
            try:
                while view:
                    written = self._file.write(view)
                    view = view[written or 0:]
                    position += written or 0
                    if not written:
                        raise OSError(errno.EIO, "the file system accepted no bytes")
            except OSError as error:
                self._record(error)
        if view:  # after the fault: what HDF5 wrote, for its later reads
            self._overlay.append((position, bytes(view)))
            self._end = max(self._end, position + len(view))
            self._file.seek(position + len(view))
        return size

    @_shielded
    def readinto(self, buffer) -> int:
        if not self._overlay:
            return self._file.readinto(buffer)
        target = memoryview(buffer).cast("B")
        start = self._file.tell()
        count = max(0, min(len(target), self._end - start))
        got = self._file.readinto(target[:count]) or 0
        target[got:count] = bytes(count - got)  # beyond the disk's end: written only to the overlay
        for offset, data in self._overlay:  # later writes win, as on a disk
            lo, hi = max(offset, start), min(offset + len(data), start + count)
            if lo < hi:
                target[lo - start:hi - start] = data[lo - offset:hi - offset]
        self._file.seek(start + count)
        return count

    @_shielded
    def read(self, size: int = -1) -> bytes:
        if not self._overlay:
            return self._file.read(size)
        if size < 0:
            size = max(0, self._end - self._file.tell())
        buffer = bytearray(size)
        return bytes(buffer[:self.readinto(buffer)])

    @_shielded
    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_END and self._overlay:
            return self._file.seek(self._end + offset)
        return self._file.seek(offset, whence)

    @_shielded
    def tell(self) -> int:
        return self._file.tell()

    @_shielded
    def truncate(self, size: int | None = None) -> int:
        if self.error is None:
            try:
                return self._file.truncate(size)
            except OSError as error:
                self._record(error)
        size = self._file.tell() if size is None else size
        self._end = size
        return size

    def flush(self) -> None:
        pass  # unbuffered

    def close(self) -> None:
        self._file.close()

    def check(self) -> None:
        if self.interrupt is not None:
            interrupt, self.interrupt = self.interrupt, None
            raise interrupt
        if self.error is not None:
            raise self.error


_guards: dict[int, _GuardedFile] = {}


def check_writes(handle: h5py.File) -> None:
    """Raise the first write fault of an `hdf5_output` file so far (a no-op for other files).

    Writers call it after each step, so a full disk stops the run at once, not at its end."""
    guard = _guards.get(id(handle))
    if guard is not None:
        guard.check()


@contextmanager
def hdf5_output(path: str | os.PathLike) -> Iterator[h5py.File]:
    """A new HDF5 file that becomes `path` only when the block completes (`atomic_path`).

    Written through `_GuardedFile`: a write fault is raised by `check_writes`, or after the
    block's closing flush at the latest, and never inside HDF5 (module docstring, item 5).
    """
    with atomic_path(path) as tmp_path:
        guard = _GuardedFile(tmp_path)
        try:
            handle = h5py.File(guard, "w")
            _guards[id(handle)] = guard
            try:
                yield handle
                handle.flush()
                guard.check()
            except Exception:
                # after a write fault HDF5 may still fail on what followed from it: the
                # write fault is the cause to report, not what followed from it
                guard.check()
                raise
            finally:
                _guards.pop(id(handle), None)
                try:
                    handle.close()
                except Exception:
                    if guard.error is None:
                        raise
            guard.check()
        finally:
            guard.close()
