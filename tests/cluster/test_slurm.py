"""A real scheduler: scripts/slurm/papara_array.sbatch as a 4-task SLURM array job on localhost.

Starts munged, slurmctld and slurmd (Debian's slurm-wlm, as root, state in a temporary directory,
ports chosen free, nothing of the system's own configuration touched), submits the example script
with --array=1-4 (ids not starting at 0, so the SLURM_ARRAY_TASK_MIN mapping is exercised), waits,
merges the four shards and compares the result with a single-machine run, dataset by dataset.

Without slurm the test skips, saying why. With PAPARA_SLURM_TEST=1 it must run: it installs
slurm-wlm and munge with apt-get when they are missing (root on Debian/Ubuntu), and every reason it
would have skipped for becomes a failure. One command, by hand or in CI:

    PAPARA_SLURM_TEST=1 python -m pytest -q tests/cluster/test_slurm.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import pytest
from demanded import Demand
from sharding_data import SCHEDULER_VARIABLES, assert_same_run, inputs_args, make_inputs

from papara_py.cli import main

SLURM = Demand("PAPARA_SLURM_TEST", "installs slurm-wlm and munge with apt-get and requires this test")
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "papara_array.sbatch"
PROGRAMS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")
TASKS = 4
START_TIMEOUT = 90
JOB_TIMEOUT = 900


def missing_programs() -> list[str]:
    return [p for p in PROGRAMS if not shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]


def install_slurm() -> None:
    """apt-get install slurm-wlm and munge (only when the test is demanded and they are missing)."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        SLURM.unavailable(f"{', '.join(missing_programs())} not installed, and installing needs root and apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", "slurm-wlm", "munge"]):
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
        if result.returncode:
            SLURM.unavailable(f"`{' '.join(command)}` failed: {result.stderr.strip()[-2000:]}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def program(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


class LocalSlurm:
    """munged + slurmctld + slurmd on 127.0.0.1, all state under `root`; `stop` ends exactly them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: dict[str, subprocess.Popen] = {}
        self.conf = root / "slurm.conf"
        self.socket = root / "munge" / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for name in SCHEDULER_VARIABLES:
            self.env.pop(name, None)

    def log_tail(self) -> str:
        parts = []
        for log in sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.out")):
            parts.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(parts)

    def _spawn(self, name: str, command: list[str]) -> None:
        out = open(self.root / f"{name}.out", "w")
        self.processes[name] = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                                start_new_session=True)
        out.close()

    def _died(self) -> str | None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                return f"{name} exited with status {process.returncode}"
        return None

    def start(self) -> None:
        munge_dir = self.root / "munge"
        munge_dir.mkdir(mode=0o700)
        for sub in ("state", "spool"):
            (self.root / sub).mkdir()
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._spawn("munged", [program("munged"), "--foreground", "--force", f"--socket={self.socket}",
                               f"--key-file={key}", f"--pid-file={munge_dir / 'munged.pid'}",
                               f"--seed-file={munge_dir / 'munged.seed'}", f"--log-file={self.root / 'munged.log'}"])
        self._wait(lambda: subprocess.run([program("munge"), "-n", "-S", str(self.socket)],
                                          capture_output=True).returncode == 0, "munged to answer")
        node = subprocess.run([program("slurmd"), "-C"], capture_output=True, text=True).stdout.splitlines()[0]
        node_name = node.split()[0].removeprefix("NodeName=")
        r = self.root
        self.conf.write_text("\n".join([
            "ClusterName=paparatest", f"SlurmctldHost={node_name}(127.0.0.1)",
            f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}", f"StateSaveLocation={r / 'state'}", f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}", f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}", f"SlurmdLogFile={r / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "ReturnToService=2", "MpiDefault=none",
            "JobCompType=jobcomp/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "MinJobAge=3600",
            f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
            "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        self._spawn("slurmctld", [program("slurmctld"), "-D", "-f", str(self.conf)])
        self._spawn("slurmd", [program("slurmd"), "-D", "-f", str(self.conf), "-N", node_name])
        self._wait(lambda: "idle" in self.query(["sinfo", "-h", "-o", "%T"]), "the node to become idle")

    def query(self, command: list[str]) -> str:
        result = subprocess.run([program(command[0]), *command[1:]], capture_output=True, text=True, env=self.env)
        return result.stdout if result.returncode == 0 else ""

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            died = self._died()
            if died or time.monotonic() > deadline:
                SLURM.unavailable(f"the local SLURM cluster did not start: waiting for {what}, "
                                  f"{died or f'timed out after {START_TIMEOUT} s'}\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            subprocess.run([program("scancel"), "--user=root"], env=self.env, capture_output=True, timeout=60)
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


@pytest.fixture
def slurm():
    """A running local SLURM cluster (skips, or fails when demanded, if there cannot be one)."""
    if missing_programs():
        if not SLURM.demanded:
            SLURM.unavailable(f"slurm is not installed (missing: {', '.join(missing_programs())})")
        install_slurm()
        if missing_programs():
            SLURM.unavailable(f"still missing after apt-get install: {', '.join(missing_programs())}")
    if os.geteuid() != 0:
        SLURM.unavailable("slurmd must run as root to start jobs, and this test is not root")
    # short path: munge's socket path must fit a unix socket address (108 bytes)
    root = Path(tempfile.mkdtemp(prefix="papara-slurm-"))
    cluster = LocalSlurm(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_sbatch_array_job_merges_to_the_single_machine_run(slurm, tmp_path, monkeypatch):
    started = time.monotonic()
    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    inputs = make_inputs(tmp_path / "inputs")
    profiles, shards, single = tmp_path / "profiles.h5", tmp_path / "shards", tmp_path / "single.h5"
    assert main(["prepare", "-t", str(inputs["tree"]), "-s", str(inputs["alignment"]), "-o", str(profiles)]) == 0
    env = {**slurm.env, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "PAPARA_OPTIONS": "--device cpu"}  # not -q: the task logs show the slice taken
    submit = subprocess.run(
        [program("sbatch"), "--parsable", f"--array=1-{TASKS}", "--cpus-per-task=1",
         f"--output={tmp_path}/task_%a.log", f"--chdir={tmp_path}", str(SCRIPT),
         str(inputs["tree"]), str(inputs["alignment"]), str(inputs["reads"]), str(profiles), str(shards)],
        capture_output=True, text=True, env=env, timeout=60)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]

    # the single-machine run, while the array job runs
    assert main([*inputs_args(inputs), "-o", str(single), "--device", "cpu", "-j", "1", "--quiet"]) == 0

    deadline = time.monotonic() + JOB_TIMEOUT
    while slurm.query(["squeue", "-h", "-j", job, "-o", "%i %T"]).strip():
        assert time.monotonic() < deadline, f"array job {job} still running after {JOB_TIMEOUT} s\n{slurm.log_tail()}"
        time.sleep(1)
    states = slurm.query(["scontrol", "show", "job", job, "-o"])
    logs = "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(tmp_path.glob("task_*.log")))
    outputs = sorted(shards.glob("shard_*.h5"))
    assert [p.name for p in outputs] == [f"shard_{i}.h5" for i in range(1, TASKS + 1)], f"{states}\n{logs}"
    assert states.count("JobState=COMPLETED") == TASKS, f"{states}\n{logs}"

    for task, path in enumerate(outputs, 1):
        with h5py.File(path) as shard:
            record = json.loads(shard["run"].attrs["shard"])
        assert (record["index"], record["count"]) == (task - 1, TASKS)
        assert record["source"].startswith("SLURM_ARRAY_TASK_ID")
        assert f"shard {task - 1}/{TASKS} (from SLURM_ARRAY_TASK_ID" in (tmp_path / f"task_{task}.log").read_text()

    merged = tmp_path / "all.h5"
    assert main(["merge", *map(str, outputs), "-o", str(merged)]) == 0
    assert_same_run(merged, single)
    print(f"slurm array job of {TASKS} tasks: {time.monotonic() - started:.1f} s after the cluster started")
