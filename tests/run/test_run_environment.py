"""What a run takes from its environment: the CPUs it may use (-j default) and its log (--log)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from papara_py.engine.cpus import _quota, available_cpus, cgroup_quota
from papara_py.io.run_file import RunFile
from papara_py.report.page import gcups_text

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
INPUTS = ["-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa")]


def test_cpu_max_lines():
    assert _quota("max 100000") is None
    assert _quota("200000 100000") == 2.0
    assert _quota("150000 100000") == 1.5
    assert _quota("garbage") is None


def test_cgroup_v2_quota_is_the_smallest_on_the_path(tmp_path):
    (tmp_path / "job" / "step").mkdir(parents=True)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "job" / "cpu.max").write_text("300000 100000\n")
    (tmp_path / "job" / "step" / "cpu.max").write_text("max 100000\n")
    assert cgroup_quota(tmp_path, "0::/job/step\n") == 3.0
    assert cgroup_quota(tmp_path, "0::/\n") is None


def test_cgroup_v1_quota(tmp_path):
    v1 = tmp_path / "cpu,cpuacct"
    v1.mkdir()
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota(tmp_path, "") == 0.5
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_quota(tmp_path, "") is None


def test_quota_caps_the_affinity(monkeypatch):
    monkeypatch.setattr("papara_py.engine.cpus.affinity_cpus", lambda: 64)
    monkeypatch.setattr("papara_py.engine.cpus.cgroup_quota", lambda: 1.5)
    assert available_cpus() == (2, "cgroup CPU quota of 1.5 CPUs (affinity allows 64)")
    monkeypatch.setattr("papara_py.engine.cpus.cgroup_quota", lambda: None)
    assert available_cpus()[0] == 64


@pytest.mark.slow
def test_one_cpu_of_affinity_means_one_thread(tmp_path):
    out = tmp_path / "run.h5"
    subprocess.run([sys.executable, "-m", "papara_py", *INPUTS, "-o", str(out), "--device", "cpu", "--quiet"],
                   check=True, preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    with RunFile(out) as run:
        assert run.record["threads"]["count"] == 1
        assert run.record["threads"]["source"].startswith("CPU affinity: 1 of")
        assert sum(1 for name in run.record["consumers"] if name.startswith("cpu")) == 1
    out2 = tmp_path / "run2.h5"
    subprocess.run([sys.executable, "-m", "papara_py", *INPUTS, "-o", str(out2), "--device", "cpu", "--quiet", "-j", "3"],
                   check=True)
    with RunFile(out2) as run:
        assert run.record["threads"] == {"count": 3, "source": "--threads"}


def test_a_slow_speed_keeps_its_digits():
    """A small run or a first one (compiling while it scores) runs at tenths or hundredths of a
    GCUPS: the summary must not print those as 0.0."""
    for gcups in (0.0623, 0.31, 0.97, 3.34, 3512.7):
        assert float(gcups_text(gcups)) == pytest.approx(gcups, rel=0.05)
    assert gcups_text(0.0) == "0"


STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (INFO|WARNING|ERROR) +"


@pytest.mark.slow
def test_log_says_what_the_run_did(tmp_path):
    out, log = tmp_path / "run.h5", tmp_path / "run.log"
    result = subprocess.run([sys.executable, "-m", "papara_py", *INPUTS, "-o", str(out), "--device", "cpu",
                             "--log", str(log)], capture_output=True, text=True, check=True)
    lines = log.read_text().splitlines()
    assert all(re.match(STAMP, line) for line in lines), lines
    text = log.read_text()
    with RunFile(out) as run:
        for what, digest in run.record["checksums_sha256"].items():
            assert f"input {what}: {EXAMPLE / ('tree.nwk', 'ref.phy', 'reads.fa')[['tree', 'alignment', 'reads'].index(what)]} sha256 {digest}" in text
        assert f"threads: {run.record['threads']['count']}" in text
    assert "device cpu:" in text and "batch 1: rows 1-200, 200 reads aligned" in text and "phases (s): input" in text
    assert "200 of 200 reads aligned" in lines[-1]
    with RunFile(out) as run:  # the summary's speed is the record's, to its printed precision
        shown = float(re.search(r"\(([0-9.e+-]+) GCUPS\)", lines[-1]).group(1))
        assert shown == pytest.approx(run.record["gcups"], rel=0.06, abs=1e-9)
    assert "sha256" not in result.stderr  # the terminal keeps the short notices
    # a second run appends; a failing one logs its error
    bad = tmp_path / "bad.fa"
    bad.write_text(">r1\nACGT!\n")
    failed = subprocess.run([sys.executable, "-m", "papara_py", "-t", INPUTS[1], "-s", INPUTS[3], "-r", str(bad),
                             "-o", str(tmp_path / "bad.h5"), "--log", str(log)], capture_output=True, text=True)
    assert failed.returncode == 2
    again = log.read_text().splitlines()
    assert again[:len(lines)] == lines
    assert re.match(STAMP, again[-1]) and " ERROR " in again[-1] and "bad.fa" in again[-1]


@pytest.mark.slow
@pytest.mark.parametrize("log", ["", "missing_dir/run.log"])
def test_log_path_checked_before_work(tmp_path, log):
    result = subprocess.run([sys.executable, "-m", "papara_py", *INPUTS, "-o", str(tmp_path / "r.h5"),
                             "--log", str(tmp_path / log) if log else ""], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []
