"""The output policy of every command (papara_py/io/outputs.py; docs/RELIABILITY.md), issue #28:
an output that is an input is refused before any work; devices, FIFOs and `-` are written
directly, never renamed over; temporaries of killed runs are cleared; a full disk ends as one
paragraph with exit status 3 and nothing half-written. Every case checks the exit status, the
message, that nothing is left and that the inputs are byte-identical (tests/misuse.py)."""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import pytest
from misuse import Workspace, assert_refused, papara, partial_files, small_filesystem

from papara_py.errors import InputError, OutputError
from papara_py.io import hdf5_guard, outputs


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> Path:
    """A complete run of the bundled example."""
    directory = tmp_path_factory.mktemp("run")
    ws = Workspace(directory)
    result = papara(*ws.main_job("--quiet", output=str(directory / "run.h5")))
    assert result.returncode == 0, result.stderr
    return directory / "run.h5"


@pytest.fixture
def run_copy(run_file, tmp_path) -> Path:
    target = tmp_path / "run.h5"
    shutil.copy(run_file, target)
    return target


# ---------------------------------------------------------------------------------------------
# An output that names an input


@pytest.mark.slow
@pytest.mark.parametrize("output, culprit", [
    ("reads.fa", "reads file (-r)"), ("./tree.nwk", "tree (-t)"), ("{dir}/ref.phy", "alignment (-s)"),
    ("{dir}/../{base}/reads.fa", "reads file (-r)")])
def test_main_job_refuses_an_output_that_is_an_input(workspace, output, culprit):
    output = output.format(dir=workspace.dir, base=workspace.dir.name)
    result = papara(*workspace.main_job(output=output), cwd=workspace.dir)
    assert_refused(result, 2, f"the run file (-o) is also the {culprit}, an input", "never writes over its inputs")
    workspace.assert_untouched()


def test_an_output_linked_to_an_input_is_refused(workspace):
    os.symlink("reads.fa", workspace.dir / "link.fa")
    os.link(workspace.dir / "ref.phy", workspace.dir / "hard.phy")
    workspace.snapshot()
    for name, culprit in (("link.fa", "reads file (-r)"), ("hard.phy", "alignment (-s)")):
        result = papara(*workspace.main_job(output=name), cwd=workspace.dir)
        assert_refused(result, 2, f"{name}: the run file (-o) is also the {culprit}, an input (")
    workspace.assert_untouched()


@pytest.mark.slow
def test_export_and_report_refuse_to_write_over_the_run_file(run_copy):
    ws_before = run_copy.read_bytes()
    for command in (["export", str(run_copy), "--format", "fasta"], ["report", str(run_copy)]):
        result = papara(*command, "-o", str(run_copy))
        assert_refused(result, 2, "is also the run file (RUN.h5), an input")
    assert run_copy.read_bytes() == ws_before
    assert sorted(p.name for p in run_copy.parent.iterdir()) == ["run.h5"]


def test_prepare_refuses_to_write_over_its_tree(workspace):
    result = papara("prepare", "-t", workspace.path("tree.nwk"), "-s", workspace.path("ref.phy"),
                    "-o", workspace.path("tree.nwk"))
    assert_refused(result, 2, "the profiles file (-o) is also the tree (-t), an input")
    workspace.assert_untouched()


@pytest.mark.slow
@pytest.mark.parametrize("output, expect", [("", "-o: the output name is empty"),
                                            (".", "is a directory"),
                                            ("missing/run.h5", "does not exist"),
                                            ("-", "cannot be standard output")])
def test_bad_output_names_are_refused_before_any_work(workspace, output, expect):
    result = papara(*workspace.main_job(output=output), cwd=workspace.dir)
    assert_refused(result, 2, expect)
    workspace.assert_untouched()


# ---------------------------------------------------------------------------------------------
# Targets that are not regular files


@pytest.mark.slow
def test_main_job_to_dev_null_leaves_the_device_alone(workspace):
    result = papara(*workspace.main_job("--quiet", output="/dev/null"))
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    workspace.assert_untouched()


@pytest.mark.slow
def test_export_to_stdout_and_to_a_fifo(run_copy, tmp_path):
    regular = tmp_path / "out.fasta"
    assert papara("export", str(run_copy), "--format", "fasta", "-o", str(regular)).returncode == 0
    streamed = papara("export", str(run_copy), "--format", "fasta", "-o", "-")
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == regular.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = papara("export", str(run_copy), "--format", "fasta", "-o", str(fifo))
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert received == [regular.read_bytes()]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not partial_files(tmp_path)


def test_a_link_to_a_regular_output_stays_a_link(run_copy, tmp_path):
    real = tmp_path / "real.fasta"
    real.write_text("old\n")
    (tmp_path / "link.fasta").symlink_to("real.fasta")
    result = papara("export", str(run_copy), "--format", "fasta", "-o", str(tmp_path / "link.fasta"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "link.fasta").is_symlink() and real.read_text().startswith(">")
    assert not partial_files(tmp_path)


# ---------------------------------------------------------------------------------------------
# Temporaries


def test_stale_temporaries_are_removed_or_named(run_copy, tmp_path):
    dead = 4_194_000  # above any pid Linux hands out by default
    host = outputs._HOST
    stale = tmp_path / f".out.fasta.{dead}.0.{host}.partial"
    foreign = tmp_path / f".out.fasta.{dead}.1.elsewhere.partial"
    unrelated = tmp_path / f".other.fasta.{dead}.0.{host}.partial"
    for path in (stale, foreign, unrelated):
        path.write_text("half")
    result = papara("export", str(run_copy), "--format", "fasta", "-o", str(tmp_path / "out.fasta"))
    assert result.returncode == 0, result.stderr
    message = " ".join(result.stderr.split())
    assert f"removed {stale}" in message and "was killed" in message
    assert f"{foreign} is the unfinished output of another run (process {dead} on host elsewhere)" in message
    assert not stale.exists() and foreign.exists() and unrelated.exists()


def test_atomic_path_removes_its_temporary_on_any_exception(tmp_path):
    target = tmp_path / "out.txt"
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)):
            with outputs.atomic_path(target) as tmp:
                tmp.write_text("half")
                raise error
    assert list(tmp_path.iterdir()) == []


def test_check_output_in_process():
    with pytest.raises(InputError, match="NUL"):
        outputs.check_output("a\0b")
    with pytest.raises(InputError, match="no such file descriptor"):
        outputs.check_output("/dev/fd/987")
    assert not outputs.is_direct("/dev/shm/run.h5")  # an ordinary (tmpfs) file: atomic
    assert outputs.is_direct("/dev/stdout") and outputs.is_direct("/dev/null") and outputs.is_direct("-")


# ---------------------------------------------------------------------------------------------
# Write faults


@pytest.mark.slow
def test_a_full_disk_ends_cleanly_in_every_command(run_file, tmp_path):
    ws = Workspace(tmp_path)
    with small_filesystem(size_kib=256, free_kib=24) as full:
        commands = {
            "run.h5": ws.main_job("--quiet", output=str(full / "run.h5")),
            "out.phylip": ["export", str(run_file), "--format", "phylip", "-o", str(full / "out.phylip")],
            "out.fasta": ["export", str(run_file), "--format", "fasta", "-o", str(full / "out.fasta")],
            "report.html": ["report", str(run_file), "-o", str(full / "report.html")],
            "profiles.h5": ["prepare", "-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"),
                            "-o", str(full / "profiles.h5")],
        }
        for name, command in commands.items():
            if name == "profiles.h5":  # 39 KB of profiles: leave less room than that
                (full / "filler2").write_bytes(b"\0" * 12 * 1024)
            result = papara(*command)
            assert_refused(result, 3, f"{full / name}: cannot write the output: no space left on device",
                           "nothing was written")
            assert sorted(p.name for p in full.iterdir()) == ["filler"] + (["filler2"] if name == "profiles.h5" else [])
    ws.assert_untouched()


@pytest.mark.slow
def test_report_pngs_on_a_full_disk_leave_no_partial_set(run_file, tmp_path):
    with small_filesystem(size_kib=256, free_kib=40) as full:
        result = papara("report", str(run_file), "--png", str(full / "figures"), "-o", str(full / "report.html"))
        assert_refused(result, 3, "no space left on device")
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


class _FailingDisk:
    """A file whose writes fail with `code` once `budget` bytes are written (a disk filling up)."""

    def __init__(self, real, budget: int, code: int) -> None:
        self._real, self._left, self._code = real, budget, code

    def write(self, view) -> int:
        if len(view) > self._left:
            written = self._real.write(view[:self._left]) if self._left else 0
            self._left = 0
            if written:
                return written  # a short write, as write(2) gives at the end of the space
            raise OSError(self._code, os.strerror(self._code))
        self._left -= len(view)
        return self._real.write(view)

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.mark.parametrize("budget", [0, 3_000, 20_000, 60_000])
@pytest.mark.parametrize("fault", ["ENOSPC", "EIO", "EDQUOT"])
def test_a_write_fault_at_any_point_of_an_hdf5_output_is_an_output_error(tmp_path, monkeypatch, budget, fault):
    """The guard under HDF5 outputs, failing after `budget` bytes with `fault`: the writer stops
    with an OutputError naming the target, whatever HDF5 was doing, and leaves no file."""
    import errno

    import numpy as np

    from papara_py.io.run_writer import run_writer

    class Failing(hdf5_guard._GuardedFile):
        """The disk under the guard fills (or fails) after `budget` bytes, as a real one would."""

        def __init__(self, path):
            super().__init__(path)
            self._file = _FailingDisk(self._file, budget, getattr(errno, fault))

    monkeypatch.setattr(hdf5_guard, "_GuardedFile", Failing)
    target = tmp_path / "run.h5"
    with pytest.raises(OutputError) as raised:
        with run_writer(target, 300, 5, "test") as writer:
            writer.write_reference(["a", "b"], np.full((2, 300), ord("A"), np.uint8), "(a,b);")
            for start in range(0, 2_000, 100):
                writer.write_reads(start, {"aligned": np.full((100, 300), ord("C"), np.uint8),
                                           "names": np.array([f"r{i}" for i in range(start, start + 100)])})
    assert str(raised.value).startswith(f"{target}: cannot write the output: {os.strerror(getattr(errno, fault)).lower()}")
    assert list(tmp_path.iterdir()) == []


def test_write_faults_become_output_errors():
    import errno

    hdf5 = RuntimeError("Can't decrement id ref count (file write failed: errno = 28, error message = 'x')")
    assert "no space left" in str(outputs.as_output_error("run.h5", hdf5))
    assert isinstance(outputs.as_output_error("x", OSError(errno.EIO, "Input/output error")), OutputError)
    assert outputs.as_output_error("x", OSError(errno.ENOENT, "missing")) is None
    assert outputs.as_output_error("-", BrokenPipeError(errno.EPIPE, "pipe")) is None


def test_after_a_write_fault_reads_see_what_was_written_since(tmp_path):
    """The guard's overlay: once the disk fails, HDF5 must still read back what it wrote (stale
    bytes in its own metadata could crash it); the disk keeps only what it took before."""
    import errno

    path = tmp_path / "f"
    path.write_bytes(b"")
    guard = hdf5_guard._GuardedFile(path)
    guard._file = _FailingDisk(guard._file, 6, errno.ENOSPC)
    assert guard.write(b"abcdefgh") == 8          # the disk takes 6 bytes, then is full
    assert guard.error is not None and guard.error.errno == errno.ENOSPC
    guard.seek(4)
    assert guard.write(b"XY") == 2                # rewrites bytes the disk holds
    guard.seek(12)
    assert guard.write(b"tail") == 4              # beyond everything: a hole of zeros before it
    guard.seek(0)
    assert guard.read(16) == b"abcdXYgh" + bytes(4) + b"tail"
    assert guard.seek(0, os.SEEK_END) == 16
    buffer = bytearray(4)
    guard.seek(6)
    assert guard.readinto(buffer) == 4 and bytes(buffer) == b"gh\0\0"
    guard.close()
    assert path.read_bytes() == b"abcdef"         # nothing after the fault reached the disk
    with pytest.raises(OSError):
        guard.check()


class _InterruptedOnce:
    """A raw file whose first write is cut short by Ctrl-C after `after` bytes."""

    def __init__(self, raw, after: int) -> None:
        self._raw, self._after = raw, after

    def write(self, data):
        if self._after is not None:
            after, self._after = self._after, None
            self._raw.write(bytes(data)[:after])
            raise KeyboardInterrupt
        return self._raw.write(data)

    def __getattr__(self, name):
        return getattr(self._raw, name)


def test_a_stop_signal_inside_an_hdf5_write_is_kept_for_the_next_check(tmp_path):
    """HDF5 calls the guard from C, where an exception is only printed: a Ctrl-C landing inside a
    write must neither be lost nor tear the write; the next check raises it."""
    path = tmp_path / "f"
    path.write_bytes(b"")
    guard = hdf5_guard._GuardedFile(path)
    guard._file = _InterruptedOnce(guard._file, 3)
    guard.seek(2)
    assert guard.write(b"abcdefgh") == 8      # redone from its start: whole and in place
    assert guard.tell() == 10
    with pytest.raises(KeyboardInterrupt):
        guard.check()
    guard.check()                              # raised once
    guard.close()
    assert path.read_bytes() == bytes(2) + b"abcdefgh"
