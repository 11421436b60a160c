"""The output policy every command follows (docs/guide.md: Outputs and exit statuses).

1. Checked before any work (`check_output`): an empty name, a directory, a missing or unwritable
   directory, and an output that is one of the command's inputs (the same file however spelled:
   relative, absolute, `..`, through a symbolic or a hard link, or a name that differs only in
   case: `clash`) are refused as InputErrors. Two outputs of one command that are one file are
   refused by the same test (`clash`, called for every pair by io/output_roles.py).
2. Regular files (and names that do not exist yet) are written under a temporary name beside the
   target and renamed over it only when complete (`atomic_path`): a crash, a signal or a full disk
   leaves the previous file or none. A symbolic link to a regular file stays a link: the file it
   points to is replaced.
3. Targets that are not regular files (a device such as /dev/null, a FIFO, /dev/stdout, `-` for
   standard output where a command allows it) are written directly, never renamed over. Text
   exports stream into them (`output_stream`); HDF5 files, which need a seekable file, are built
   under a temporary name in the temporary directory and then copied into the target.
4. Temporaries are named `.{target name}.{pid}.{n}.{host}.partial`, removed on every exit the
   process sees (exceptions, Ctrl-C, SIGTERM and SIGHUP, which the CLI turns into exceptions),
   and those left by killed runs (SIGKILL, a power cut) are removed by the next run to the same
   output on the same host, with a notice; those of other hosts or live processes are named in a
   notice and left alone (`clear_stale`).
5. A write that fails (no space, quota, an I/O error, permission, read-only file system) becomes
   an OutputError naming the target and what the system said; the temporary is removed first.
   HDF5 files are opened by io/hdf5_guard.hdf5_output, whose writes pass through a guard that
   keeps the first failure and drops later writes, so that HDF5 never fails inside a destructor
   or its closing flush (h5py printed "Exception ignored" tracebacks and crashed there).
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from papara_py.errors import InputError, OutputError

#: Temporary files end with this; their names begin with '.' and the target's name.
TEMPORARY_SUFFIX = ".partial"
STDOUT = "-"
_temporary_numbers = itertools.count()
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname() or "localhost")[:64]
#: errno values that mean "this output cannot be written" (reported as OutputError).
WRITE_FAULTS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM,
                          errno.EFBIG, errno.ENXIO, errno.EPIPE})
_HDF5_ERRNO = re.compile(r"errno = (\d+)")

Notice = Callable[[str], None]
_DESCRIPTOR_NAMES = ("/dev/stdout", "/dev/stderr", "/dev/stdin")


def log_notice(message: str) -> None:
    """A notice of the output policy, through logging (the command line shows it on stderr)."""
    logging.getLogger(__name__).info(message)


# ---------------------------------------------------------------------------------------------
# What kind of target


def _stat(path: str | os.PathLike) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def is_direct(path: str | os.PathLike) -> bool:
    """True for targets written directly, never renamed over: `-` (standard output), anything that
    exists and is not a regular file (devices, FIFOs, sockets, through links too), and a process's
    descriptors (/dev/stdout, /dev/fd/N, /proc/...), even where they lead to a regular file: a
    rename would replace the link, not write to the descriptor. (/dev/shm and the like hold
    ordinary files and are written atomically.)"""
    text = os.fspath(path)
    if text == STDOUT:
        return True
    info = _stat(text)
    if info is not None and not stat.S_ISREG(info.st_mode):
        return True
    absolute = os.path.abspath(text)
    return absolute in _DESCRIPTOR_NAMES or absolute.startswith(("/dev/fd/", "/proc/"))


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when both name one existing file (same device and inode: links and spellings agree)."""
    first, second = _stat(a), _stat(b)
    return first is not None and second is not None and os.path.samestat(first, second)


def _name_key(path: str) -> tuple:
    """Where `path` puts its file, whether it exists or not: its symbolic links and `..` resolved
    (`os.path.realpath`), then the nearest directory that exists, by device and inode, and the
    rest of the path below it, case-folded. Case is folded on every file system (the cheaper rule
    of issue 56, instead of probing each directory: a directory with no entry cannot be probed
    without writing into it): two names of one command that differ only in case are one file on
    macOS and Windows, and a mistake waiting for the first copy there anywhere else."""
    directory, rest = os.path.realpath(path), []
    while True:
        directory, name = os.path.split(directory)
        rest.append(name)
        info = _stat(directory)
        if info is not None or directory == os.path.dirname(directory):
            break
    where = (info.st_dev, info.st_ino) if info is not None else (directory,)
    return ("name", *where, "/".join(reversed(rest)).casefold())


def path_keys(path: str | os.PathLike) -> frozenset[tuple]:
    """What tells the file at `path` apart, for `clash`: an existing file's device and inode (hard
    links, symbolic links, any spelling and a case-folding file system agree) and, for a regular
    file or a name that does not exist yet, `_name_key`. Standard output (`-`) is the file on
    descriptor 1. Character devices (/dev/null, a terminal) have no key: writing to one twice
    loses nothing, so they clash with nothing."""
    text = os.fspath(path)
    if text == STDOUT:
        try:
            info = os.fstat(1)
        except OSError:
            return frozenset({("stdout",)})
    else:
        info = _stat(text)
    if info is not None and stat.S_ISCHR(info.st_mode):
        return frozenset()
    keys = {("file", info.st_dev, info.st_ino)} if info is not None else set()
    if text != STDOUT and not is_direct(text):
        keys.add(_name_key(text))
    return frozenset(keys)


def clash(path: str | os.PathLike, other: str | os.PathLike) -> str | None:
    """None when `path` and `other` are two files; else how they meet, for a message: "" where
    they are spelled alike, else " (OTHER)", with a word on case where only case tells them
    apart."""
    shared = path_keys(path) & path_keys(other)
    if not shared:
        return None
    first, second = os.fspath(path), os.fspath(other)
    if os.path.normpath(os.path.abspath(first)) == os.path.normpath(os.path.abspath(second)):
        return ""
    if all(key[0] == "name" for key in shared) and os.path.realpath(first) != os.path.realpath(second):
        return (f" ({second}: the names differ only in case, which the file systems of macOS and Windows "
                f"do not tell apart)")
    return f" ({second})"


def check_output(path: str, inputs: Iterable[tuple[str, str | None]] = (), *, option: str = "-o",
                 allow_stdout: bool = False, notice: Notice | None = log_notice, role: str | None = None,
                 directory_made: bool = False) -> None:
    """Refuse (InputError) an output that cannot or must not be written, before any work.

    `inputs` holds (description, path) of each input of the command ("the reads file (-r)", "the
    run file"); `role` describes the output in messages ("the log file (--log)"). `directory_made`:
    the command creates the output's directory if it is missing (its parent must exist). With a
    `notice`, temporaries left behind by killed runs to this output are cleared (`clear_stale`).
    """
    if path == "":
        raise InputError(option, "the output name is empty; give a file name such as run.h5")
    if "\0" in path:
        raise InputError(option, f"the output name {path!r} holds a NUL byte")
    if path == STDOUT:
        if allow_stdout:
            return
        raise InputError(option, "this output cannot be standard output ('-'): HDF5 files need a "
                                 "seekable file; give a file name")
    info = _stat(path)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InputError(path, f"{role or 'the output'} is a directory; give a file name")
    if info is not None and stat.S_ISREG(info.st_mode) or info is None:
        for what, source in inputs:
            how = None if source is None or source == STDOUT else clash(path, source)
            if how is not None:
                raise InputError(path, f"{role or 'the output'} is also {what}, an input{how}; papara-py never "
                                       f"writes over its inputs: choose another output name")
    if is_direct(path):
        if info is None:
            raise InputError(path, "no such file descriptor or special file; outputs such as /dev/stdout "
                                   "and /proc/... are written directly and must exist")
    else:
        directory = os.path.dirname(os.path.abspath(path))
        if directory_made and not os.path.exists(directory) and os.path.isdir(os.path.dirname(directory)):
            directory = os.path.dirname(directory)  # made by the command, in this one
        if not os.path.isdir(directory):
            raise InputError(path, f"the output directory {directory} "
                                   f"{'is not a directory' if os.path.exists(directory) else 'does not exist'}")
        if not os.access(directory, os.W_OK):
            raise InputError(path, f"the output directory {directory} is not writable")
    if notice is not None:
        clear_stale_of(path, notice)


def clear_stale_of(path: str, notice: Notice = log_notice) -> None:
    """`clear_stale` for output `path`, wherever its temporaries are made (`atomic_path`)."""
    if path == STDOUT:
        return
    if is_direct(path):  # HDF5 outputs to such targets are built in the temporary directory
        clear_stale(os.path.join(tempfile.gettempdir(), os.path.basename(path)), notice)
    else:
        clear_stale(path, notice)


# ---------------------------------------------------------------------------------------------
# Temporaries


def temporary_name(target: Path, directory: Path | None = None) -> Path:
    """`.{name}.{pid}.{n}.{host}.partial` in `directory` (default: beside the target)."""
    return (directory or target.parent) / (f".{target.name}.{os.getpid()}.{next(_temporary_numbers)}."
                                           f"{_HOST}{TEMPORARY_SUFFIX}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def stale_temporaries(path: str | os.PathLike) -> list[tuple[Path, int, str | None]]:
    """(file, pid, host or None) of every temporary beside `path` made for it by another process."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    prefix = f".{target.name}."
    found = []
    try:
        entries = list(os.scandir(target.parent if str(target.parent) else "."))
    except OSError:
        return []
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(TEMPORARY_SUFFIX)):
            continue
        parts = name[len(prefix):-len(TEMPORARY_SUFFIX)].split(".", 2)
        if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()) or int(parts[0]) == os.getpid():
            continue
        found.append((target.parent / name, int(parts[0]), parts[2] if len(parts) == 3 else None))
    return found


def clear_stale(path: str | os.PathLike, notice: Notice = log_notice) -> None:
    """Remove the temporaries that killed runs on this host left for `path`; name the others."""
    for file, pid, host in stale_temporaries(path):
        local = host is None or host == _HOST
        if local and not _pid_alive(pid):
            try:
                file.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                notice(f"cannot remove {file}, left by a run (process {pid}) that was killed: "
                       f"{exc.strerror or exc}")
                continue
            notice(f"removed {file}, the unfinished output of an earlier run (process {pid}) that was killed")
        else:
            who = f"process {pid}" + ("" if local else f" on host {host}")
            notice(f"{file} is the unfinished output of another run ({who}) writing to the same output; "
                   f"if that run is over, remove it")


# ---------------------------------------------------------------------------------------------
# Write faults


def fault_errno(error: BaseException) -> int | None:
    """The errno of a failed write: OSError's, or the one HDF5 names in h5py's message."""
    number = getattr(error, "errno", None)
    if isinstance(number, int):
        return number
    if isinstance(error, (OSError, RuntimeError)):
        found = _HDF5_ERRNO.search(str(error))
        if found:
            return int(found.group(1))
    return None


def describe_fault(error: BaseException) -> str:
    number = fault_errno(error)
    if number is None:
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    what = os.strerror(number).lower()
    hints = {errno.ENOSPC: "free some space or write elsewhere", errno.EDQUOT: "the disk quota is used up",
             errno.EACCES: "check the permissions", errno.EROFS: "the file system is read-only"}
    return what + (f" ({hints[number]})" if number in hints else "")


def as_output_error(target: str, error: BaseException, direct: bool = False,
                    what: str = "the output") -> OutputError | None:
    """An OutputError for `target` (`what` it is: "the log file") if `error` is a write fault, else
    None (a bug or an input error).

    A broken pipe on standard output is not one: the CLI ends quietly then (`| head`). An
    OutputError (an OSError) raised inside is itself."""
    if isinstance(error, OutputError):
        return error
    if target == STDOUT and isinstance(error, BrokenPipeError):
        return None
    if isinstance(error, (OSError, RuntimeError)) and fault_errno(error) in WRITE_FAULTS:
        return OutputError(target, describe_fault(error), direct, what)
    return None


# ---------------------------------------------------------------------------------------------
# Writing


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; it becomes `path` only if the block succeeds.

    For a regular file (or a new name) the temporary lives beside it and is renamed over it. Its
    name is chosen before it is created inside the `try`, so a Ctrl-C at any moment cannot leave
    it behind; only a dead process can have left a file of that name. Created by a plain open, it
    gets the umask's permissions. For a direct target (`is_direct`) the temporary lives in the
    temporary directory and is copied into the target at the end. A write fault anywhere in the
    block, the rename or the copy ends as OutputError naming `path`; the temporary is removed on
    every exit.
    """
    target = Path(path)
    direct = is_direct(target)
    if direct:
        tmp_path = temporary_name(target, Path(tempfile.gettempdir()))
    else:
        if target.is_symlink():  # replace the file the link points to; the link stays
            target = Path(os.path.realpath(target))
        tmp_path = temporary_name(target)
    try:
        os.close(os.open(tmp_path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o666))
        yield tmp_path
        if direct:
            with open(tmp_path, "rb") as source, _open_direct(os.fspath(path)) as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
        else:
            os.replace(tmp_path, target)
    except (OSError, RuntimeError) as error:
        converted = as_output_error(os.fspath(path), error, direct)
        if converted is None:
            raise
        raise converted from None
    finally:
        try:
            tmp_path.unlink(missing_ok=True)
        except OSError:
            pass


@contextmanager
def _open_direct(path: str) -> Iterator[IO[bytes]]:
    if path == STDOUT:
        sys.stdout.flush()
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
    else:
        with open(path, "wb") as handle:
            yield handle


@contextmanager
def output_stream(path: str) -> Iterator[IO[bytes]]:
    """A binary stream to write `path` by the policy: `-` and other direct targets are written
    directly, regular files through `atomic_path`. Write faults end as OutputError."""
    if not is_direct(path):
        with atomic_path(path) as tmp, open(tmp, "wb") as out:
            yield out
        return
    try:
        with _open_direct(path) as out:
            yield out
    except OSError as error:
        converted = as_output_error(path, error, direct=True)
        if converted is None:
            raise
        raise converted from None
