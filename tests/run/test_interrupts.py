"""A killed or interrupted run never leaves a truncated output (DESIGN 7, 9).

The main job runs in a subprocess on the bundled example and is hit, at moments spread over its
whole run, with SIGKILL (nothing can clean up: the previous complete file must survive
byte for byte, or no file exist) or SIGINT (Ctrl-C: exit status 130 promptly, no output, no
temporary file left), SIGTERM and SIGHUP (like Ctrl-C, exit status 143 and 129).
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from papara_py.errors import InputError
from papara_py.io.run_file import RunFile

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"


def main_job(output: Path) -> list[str]:
    # small batches: the run spends its time in many score / trace back / write rounds
    return [sys.executable, "-m", "papara_py", "-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"),
            "-r", str(EXAMPLE / "reads.fa"), "-o", str(output), "--device", "cpu", "-j", "1",
            "--batch-reads", "10", "--quiet"]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory) -> tuple[Path, float]:
    """A complete run file and how long the run took (to spread the signals over)."""
    output = tmp_path_factory.mktemp("complete") / "run.h5"
    subprocess.run(main_job(output), check=True)  # the first run may fill the JIT cache
    started = time.perf_counter()
    subprocess.run(main_job(output), check=True)
    return output, time.perf_counter() - started


def assert_complete_run(path: Path, reference: Path) -> None:
    """`path` is a whole run file: readable, with the run record and the same results as `reference`."""
    with RunFile(path) as handle, RunFile(reference) as want:  # RunFile checks the whole structure
        assert "status_counts" in handle.record
        for name in ("best_edge", "score", "cigar"):
            assert (handle.column(name) == want.column(name)).all()


def interrupt_at(command: list[str], delay: float, sig: int) -> subprocess.CompletedProcess:
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    process.send_signal(sig)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"the run did not stop within 30 s of signal {sig}")
    return subprocess.CompletedProcess(command, process.returncode, "", stderr)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.15, 0.35, 0.55, 0.75, 0.9, 0.97])
def test_sigkill_leaves_the_previous_complete_file(fraction, complete_run, tmp_path):
    complete, seconds = complete_run
    output = tmp_path / "run.h5"
    output.write_bytes(complete.read_bytes())
    before = digest(output)
    result = interrupt_at(main_job(output), fraction * seconds, signal.SIGKILL)
    assert output.exists()
    assert result.returncode in (0, -signal.SIGKILL)
    # the old file byte for byte, or (the kill came after the rename) the new complete one
    if digest(output) != before:
        assert_complete_run(output, complete)
    # whatever the kill left behind is a hidden temporary file, never the output's name
    for leftover in tmp_path.iterdir():
        assert leftover == output or (leftover.name.startswith(".run.h5.") and leftover.name.endswith(".partial"))


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6, 0.85])
def test_sigkill_without_a_previous_file_leaves_no_output(fraction, complete_run, tmp_path):
    complete, seconds = complete_run
    output = tmp_path / "run.h5"
    interrupt_at(main_job(output), fraction * seconds, signal.SIGKILL)
    if output.exists():  # only ever the complete file, renamed into place before the kill
        assert_complete_run(output, complete)


@pytest.mark.slow
@pytest.mark.parametrize("sig, fraction", [(signal.SIGINT, 0.1), (signal.SIGINT, 0.4), (signal.SIGINT, 0.7),
                                           (signal.SIGTERM, 0.3), (signal.SIGTERM, 0.8), (signal.SIGHUP, 0.5)],
                         ids=["INT-0.1", "INT-0.4", "INT-0.7", "TERM-0.3", "TERM-0.8", "HUP-0.5"])
def test_a_stop_signal_exits_128_plus_its_number_promptly_and_leaves_nothing(sig, fraction, complete_run,
                                                                              tmp_path):
    """Ctrl-C, and SIGTERM and SIGHUP (a batch system's time limit or preemption) like it."""
    _, seconds = complete_run
    output = tmp_path / "run.h5"
    delay = fraction * seconds
    for _ in range(4):  # a loaded machine may run faster than the timed run: aim earlier
        started = time.perf_counter()
        result = interrupt_at(main_job(output), delay, sig)
        if not output.exists():
            break
        output.unlink()
        delay /= 2
    else:
        pytest.fail("every run finished before Ctrl-C arrived")
    # 128 + the signal from papara-py's handler; a signal that lands while the interpreter is
    # still starting kills it before any of our code runs (-sig, which a shell also reports as
    # 128 + sig). A KeyboardInterrupt escaping papara-py would print a traceback.
    assert result.returncode in (128 + sig, -sig), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.returncode == 128 + sig:
        assert ("interrupted" if sig == signal.SIGINT else f"stopped by {signal.Signals(sig).name}") in result.stderr
    assert time.perf_counter() - started < delay + 10
    assert list(tmp_path.iterdir()) == [], "a stop signal must leave neither the output nor a temporary file"


def test_atomic_output_gets_the_permissions_of_a_plain_file(tmp_path):
    """The temporary file behind an atomic write is made 0600; the finished output must not be."""
    from papara_py.io.run_writer import atomic_path

    plain = tmp_path / "plain"
    plain.write_bytes(b"x")
    with atomic_path(tmp_path / "atomic") as partial:
        partial.write_bytes(b"x")
    assert (tmp_path / "atomic").stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "strict") as partial:
            partial.write_bytes(b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "strict").stat().st_mode & 0o777 == 0o640


def _signal_in_set_name(sig: int) -> None:
    """A class body whose descriptor's __set_name__ receives `sig`: Python 3.11 wraps what it raises
    in "RuntimeError: Error calling __set_name__" (as numba's import did in CI)."""
    class Descriptor:
        def __set_name__(self, owner, name):
            os.kill(os.getpid(), sig)
            for _ in range(10**7):
                pass  # the handler runs here

    type("Owner", (), {"member": Descriptor()})


def _signal_in_a_wrapping_library(sig: int, wrapper: Exception = RuntimeError("the library's own error")) -> None:
    """Library code that catches what lands in it and raises its own error from it."""
    try:
        os.kill(os.getpid(), sig)
        for _ in range(10**7):
            pass
    except KeyboardInterrupt as error:
        raise wrapper from error


def _signal_during_a_failing_write(sig: int) -> None:
    """The signal lands, and cleaning up after it hits a full disk: an OSError the run would report as
    an output error (exit 3) if no stop were behind it."""
    _signal_in_a_wrapping_library(sig, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out.h5"))


def _signal_while_reading_input(sig: int) -> None:
    """The signal lands while a reader turns what it caught into an input error (exit 2 on its own)."""
    _signal_in_a_wrapping_library(sig, InputError("reads.fa", "the read ended early", "line 3"))


@pytest.mark.parametrize("where", [_signal_in_set_name, _signal_in_a_wrapping_library, _signal_during_a_failing_write,
                                   _signal_while_reading_input])
@pytest.mark.parametrize("sig, status, message", [(signal.SIGINT, 130, "papara-py: interrupted; no output written"),
                                                  (signal.SIGTERM, 143, "papara-py: stopped by SIGTERM; no output written")],
                         ids=["INT", "TERM"])
def test_a_stop_signal_that_a_library_wraps_still_ends_the_run_as_that_signal(where, sig, status, message, monkeypatch,
                                                                              capsys):
    """A stop signal can land in code that wraps the exception it raises (CI: Ctrl-C during numba's
    import came out as a RuntimeError and a traceback, exit 1), and what it becomes may be an error
    the run otherwise reports (an input or output error). The run must still end as the signal: its
    exit status and one line, no traceback, no error paragraph."""
    from papara_py import cli

    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # the handler replaces it for the process
    monkeypatch.setattr(cli, "_main_job", lambda argv: where(sig))
    assert cli.main(["-t", "tree.nwk"]) == status
    assert capsys.readouterr().err.strip() == message


def test_an_error_with_no_stop_behind_it_is_still_reported_as_itself(monkeypatch, capsys):
    """The other side of the check above: an output error that no signal caused keeps exit 3 and its paragraph."""
    from papara_py import cli

    def full_disk(argv):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out.h5")

    monkeypatch.setattr(cli, "_main_job", full_disk)
    assert cli.main(["-t", "tree.nwk"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("papara-py: error: ") and "out.h5" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_signal_the_process_was_started_ignoring_stays_ignored(complete_run, tmp_path):
    """`nohup papara-py ...` ignores SIGHUP (a closed terminal): the run must go on and finish."""
    complete, seconds = complete_run
    output = tmp_path / "run.h5"
    nohup = ("import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
             "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")  # as nohup(1) starts it
    process = subprocess.Popen([sys.executable, "-c", nohup, *main_job(output)[1:]], stderr=subprocess.PIPE, text=True)
    time.sleep(0.5 * seconds)
    process.send_signal(signal.SIGHUP)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert_complete_run(output, complete)
