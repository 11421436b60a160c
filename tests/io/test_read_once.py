"""Every input is read once (issue #28, cause 2): checksums come from the bytes as they are parsed,
so pipes, FIFOs, process substitution and `-r -` work and record the true sha256, and the guards
built on them hold; prepared profiles carry a checksum of their own data, verified on load."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import pytest
from misuse import Workspace, assert_refused, papara


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recorded(run: Path) -> tuple[dict, dict]:
    with h5py.File(run) as handle:
        return (json.loads(handle["run"].attrs["checksums_sha256"]), json.loads(handle["run"].attrs["inputs"]))


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return Workspace(tmp_path)


def test_reads_from_standard_input(ws):
    data = (ws.dir / "reads.fa").read_bytes()
    result = papara("-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"), "-r", "-", "-o", ws.path("run.h5"),
                    "--device", "cpu", "-j", "1", "--quiet", stdin=data)
    assert result.returncode == 0, result.stderr
    sums, inputs = recorded(ws.dir / "run.h5")
    assert sums["reads"] == hashlib.sha256(data).hexdigest() and inputs["reads"] == "-"
    assert sums["tree"] == sha256(ws.dir / "tree.nwk")
    ws.assert_untouched("run.h5")


@pytest.mark.slow
def test_a_fifo_is_read_once_and_hashed(ws):
    fifo = ws.dir / "reads.fifo"
    os.mkfifo(fifo)
    data = (ws.dir / "reads.fa").read_bytes()
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    result = papara("-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"), "-r", str(fifo), "-o", ws.path("run.h5"),
                    "--device", "cpu", "-j", "1", "--quiet", timeout=120)  # a second open of the FIFO hung forever
    writer.join(timeout=10)
    assert result.returncode == 0, result.stderr
    assert recorded(ws.dir / "run.h5")[0]["reads"] == hashlib.sha256(data).hexdigest()


@pytest.mark.slow
def test_process_substitution_of_gzipped_reads_and_of_the_alignment(ws):
    gzipped = ws.dir / "reads.fa.gz"
    gzipped.write_bytes(gzip.compress((ws.dir / "reads.fa").read_bytes(), mtime=0))
    command = (f"{sys.executable} -m papara_py -t {ws.path('tree.nwk')} -s <(cat {ws.path('ref.phy')}) "
               f"-r <(cat {gzipped}) -o {ws.path('run.h5')} --device cpu -j 1 --quiet")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    sums, _ = recorded(ws.dir / "run.h5")
    assert sums == {"tree": sha256(ws.dir / "tree.nwk"), "alignment": sha256(ws.dir / "ref.phy"),
                    "reads": sha256(gzipped)}


@pytest.mark.slow
def test_merge_refuses_shards_of_different_piped_reads(ws):
    reads = (ws.dir / "reads.fa").read_bytes()
    other = reads.replace(b"\nCCTATAT", b"\nCCTATAA", 1)
    shards = []
    for index, data in enumerate((reads, other)):
        shard = ws.dir / f"shard{index}.h5"
        result = papara("-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"), "-r", "-", "-o", str(shard),
                        "--shard", f"{index}/2", "--device", "cpu", "-j", "1", "--quiet", stdin=data)
        assert result.returncode == 0, result.stderr
        shards.append(str(shard))
    ws.snapshot()
    result = papara("merge", *shards, "-o", ws.path("merged.h5"))
    assert_refused(result, 2, "the shards differ in inputs (sha256 of tree, alignment, reads)")
    ws.assert_untouched()


def test_profiles_of_another_piped_alignment_are_refused(ws):
    assert papara("prepare", "-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"),
                  "-o", ws.path("profiles.h5")).returncode == 0
    lines = (ws.dir / "ref.phy").read_text().splitlines()
    name, sequence = lines[1].split()
    lines[1] = f"{name} {'T' if sequence[0] != 'T' else 'A'}{sequence[1:]}"
    other = "\n".join(lines) + "\n"
    ws.snapshot()
    result = papara("-t", ws.path("tree.nwk"), "-s", "/dev/stdin", "-r", ws.path("reads.fa"),
                    "--profiles", ws.path("profiles.h5"), "-o", ws.path("run.h5"), "--device", "cpu", "-j", "1",
                    stdin=other.encode())
    assert_refused(result, 2, "profiles.h5", "prepared from a different alignment")
    ws.assert_untouched()


def test_damaged_profile_data_are_refused(ws):
    assert papara("prepare", "-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"),
                  "-o", ws.path("profiles.h5")).returncode == 0
    with h5py.File(ws.dir / "profiles.h5", "r+") as handle:  # same size, two edges' rows zeroed
        handle["profiles"][3] = 0
        handle["profiles"][7] = 0
    ws.snapshot()
    result = papara(*ws.main_job("--profiles", ws.path("profiles.h5")))
    assert_refused(result, 2, "profiles.h5: the stored profile data are damaged", "run `papara-py prepare` again")
    ws.assert_untouched()


def test_profiles_of_the_previous_format_are_refused(ws):
    assert papara("prepare", "-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"),
                  "-o", ws.path("profiles.h5")).returncode == 0
    with h5py.File(ws.dir / "profiles.h5", "r+") as handle:
        handle.attrs["format_version"] = 1
        del handle.attrs["profiles_sha256"]
    ws.snapshot()
    result = papara(*ws.main_job("--profiles", ws.path("profiles.h5")))
    assert_refused(result, 2, "profiles format 1", "run `papara-py prepare` again")
    ws.assert_untouched()


@pytest.mark.slow
@pytest.mark.parametrize("attribute, value", [("checksums_sha256", "not json"), ("checksums_sha256", "[1, 2]"),
                                              ("inputs", "{")])
def test_damaged_profile_attributes_are_refused(ws, attribute, value):
    assert papara("prepare", "-t", ws.path("tree.nwk"), "-s", ws.path("ref.phy"),
                  "-o", ws.path("profiles.h5")).returncode == 0
    with h5py.File(ws.dir / "profiles.h5", "r+") as handle:
        handle.attrs[attribute] = value
        if attribute == "inputs":  # read only when the checksums differ
            handle.attrs["checksums_sha256"] = '{"tree": "0", "alignment": "0"}'
    ws.snapshot()
    result = papara(*ws.main_job("--profiles", ws.path("profiles.h5")))
    assert_refused(result, 2, "profiles.h5: the prepared profiles are damaged", "run `papara-py prepare` again")
    ws.assert_untouched()
