"""Shared helpers of the misuse and fault tests (issue #28; docs/RELIABILITY.md).

Every such test checks the same four things: the exit status, the message (one paragraph, no
traceback, the expected fragments), that nothing is left behind (no output, no temporary file)
and that every input is byte-identical afterwards. `Workspace` holds the inputs of a case in one
directory and checks the last two; `assert_refused` the first two.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "example"


def papara(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
           stdin: bytes | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m papara_py *args` with captured output (text stderr; stdout as bytes)."""
    full_env = {**os.environ, **(env or {})}
    result = subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, cwd=cwd,
                            env=full_env, input=stdin, timeout=timeout)
    result.stderr = result.stderr.decode("utf-8", "replace")
    return result


def assert_refused(result: subprocess.CompletedProcess, status: int, *fragments: str) -> None:
    """Exit `status`, no traceback, one paragraph holding every fragment (case-insensitive)."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "Exception ignored" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("papara-py: error")]
    assert len(errors) == 1, result.stderr
    message = " ".join(result.stderr.split()).lower()
    for fragment in fragments:
        assert fragment.lower() in message, (fragment, result.stderr)


def digests(directory: Path) -> dict[str, str]:
    """sha256 of every file in `directory` (hidden ones too), by name; links by their target text."""
    found = {}
    for path in sorted(directory.iterdir()):
        if path.is_symlink():
            found[path.name] = "link:" + os.readlink(path)
        elif path.is_file():
            found[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[path.name] = "dir"
    return found


class Workspace:
    """A directory of inputs (the bundled example, or files given) and its state before a command."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        for name in ("tree.nwk", "ref.phy", "reads.fa"):
            shutil.copy(EXAMPLE / name, directory / name)
        self.snapshot()

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def snapshot(self) -> None:
        self.before = digests(self.dir)

    def main_job(self, *extra: str, output: str | None = "run.h5") -> list[str]:
        args = ["-t", self.path("tree.nwk"), "-s", self.path("ref.phy"), "-r", self.path("reads.fa"),
                "--device", "cpu", "-j", "1", *extra]
        return args + (["-o", output] if output is not None else [])

    def assert_untouched(self, *new: str) -> None:
        """Every input byte-identical, no temporary anywhere, and no file but `new` added."""
        after = digests(self.dir)
        for name, digest in self.before.items():
            assert after.get(name) == digest, f"{name} changed"
        added = sorted(set(after) - set(self.before))
        assert added == sorted(new), f"left behind: {added}"
        assert not [name for name in after if name.endswith(".partial")]


@contextlib.contextmanager
def small_filesystem(size_kib: int, free_kib: int) -> Iterator[Path]:
    """A tmpfs of `size_kib` KiB with about `free_kib` KiB left free (the rest is a filler file).

    Needs root (CI runs as root); the test is skipped, with the reason, where mounting fails.
    """
    if os.geteuid() != 0:
        pytest.skip("a full-disk test mounts a small tmpfs, which needs root (CI runs as root)")
    mount_point = Path(tempfile.mkdtemp(prefix="papara-full-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount a tmpfs for the full-disk test: {mounted.stderr.strip()}")
    try:
        filler = mount_point / "filler"
        with open(filler, "wb") as handle:
            handle.write(b"\0" * max(0, (size_kib - free_kib) * 1024))
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)
        mount_point.rmdir()


def partial_files(directory: Path, target: str | None = None) -> list[Path]:
    """Temporaries of papara-py outputs in `directory` (of the output named `target`, if given)."""
    prefix = f".{target}." if target else "."
    return [p for p in directory.iterdir() if p.name.endswith(".partial") and p.name.startswith(prefix)]
