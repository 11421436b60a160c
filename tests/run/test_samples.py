"""Several reads files in one run (papara_py/samples.py): one run file each, equal to the run of
that file alone; refused combinations; bad reads or a signal keep the samples already complete."""

from __future__ import annotations

import gzip
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from papara_py.errors import InputError
from papara_py.io.run_file import RunFile
from papara_py.run.samples import output_name, samples_in

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
REFERENCE = ["-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy")]


def papara(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], check=False, capture_output=True, text=True,
                          timeout=600)


def example_records(first: int, count: int) -> list[tuple[str, str]]:
    lines = (EXAMPLE / "reads.fa").read_text().split()
    records = [(lines[i][1:], lines[i + 1]) for i in range(0, len(lines), 2)]
    return records[first:first + count]


def write_samples(directory: Path) -> list[Path]:
    """Three samples cut from the example reads: plain FASTA, gzipped FASTQ, and a file whose
    only read is longer than the alignment (nothing to score: its stretch bypasses the engine)."""
    a = directory / "lane1" / "S1.fa"
    a.parent.mkdir()
    a.write_text("".join(f">{name}\n{seq}\n" for name, seq in example_records(0, 120)))
    b = directory / "S2.fastq.gz"
    with gzip.open(b, "wt") as handle:
        handle.write("".join(f"@{name}\n{seq}\n+\n{'I' * len(seq)}\n" for name, seq in example_records(120, 80)))
    c = directory / "S3.fasta"
    c.write_text(">too_long\n" + "ACGT" * 2000 + "\n")
    return [a, b, c]


def datasets(path: Path) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as handle:
        handle.visititems(lambda name, node: found.__setitem__(name, node[()])
                          if isinstance(node, h5py.Dataset) else None)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("options", [["--device", "cpu", "-j", "2"],
                                     ["--device", "cpu", "-j", "1", "--batch-reads", "7", "--strand", "both"],
                                     ["--device", "cpu", "-j", "2", "--search", "guided", "--guided-clusters", "2"]],
                         ids=["default", "small-batches", "guided"])
def test_each_sample_gets_the_run_file_of_its_reads_alone(options, tmp_path):
    reads = write_samples(tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    result = papara(*REFERENCE, "-r", *map(str, reads), "--outdir", str(outdir), *options)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in outdir.iterdir()) == ["S1.h5", "S2.h5", "S3.h5"]
    for number, path in enumerate(reads, 1):
        alone = tmp_path / f"alone{number}.h5"
        single = papara(*REFERENCE, "-r", str(path), "-o", str(alone), *options)
        assert single.returncode == 0, single.stderr
        together = outdir / output_name(str(path))
        assert f"sample {number} of 3 ({path})" in result.stderr
        want, got = datasets(alone), datasets(together)
        assert sorted(want) == sorted(got)
        for name in want:  # every per-read dataset, the reference rows and their checksums
            assert np.array_equal(want[name], got[name]), (path, name)
        with RunFile(together) as run, RunFile(alone) as single_run:
            assert run.record["sample"] == {"number": number, "of": 3}
            assert "sample" not in single_run.record
            assert run.record["checksums_sha256"] == single_run.record["checksums_sha256"]
            assert run.record["status_counts"] == single_run.record["status_counts"]
            assert run.record.get("outlier_null") == single_run.record.get("outlier_null")  # its reads' lengths only
            assert ("outlier_null" in run.record) == (number != 3)  # S3: one read, too long to align
            assert run.record["timings_seconds"]["total"] > 0
            assert run.record["search"] == single_run.record["search"]
            # the sample's own cells and share of the edges, not the run's so far
            assert run.record["edges_scored_fraction"] == single_run.record["edges_scored_fraction"]
            assert run.record["cells"] == single_run.record["cells"]
    with RunFile(outdir / "S3.h5") as run:
        assert run.record["status_counts"] == {"too_long": 1}


@pytest.mark.slow
def test_bad_reads_in_a_later_sample_keep_the_samples_before_it(tmp_path):
    good, _, _ = write_samples(tmp_path)
    bad = tmp_path / "S2.fa"
    bad.write_text(">r1\nACGTACGT\n>r2\nAC!GT\n")
    after = tmp_path / "S4.fa"
    after.write_text(">r9\nACGTACGTAC\n")
    outdir = tmp_path / "out"
    outdir.mkdir()
    result = papara(*REFERENCE, "-r", str(good), str(bad), str(after), "--outdir", str(outdir), "--device", "cpu")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert str(bad) in message and "line 4" in message
    assert (f"kept the run file of the 1 sample complete before the run stopped ({outdir / 'S1.h5'}); "
            f"the other 2 were not written") in message
    assert [p.name for p in outdir.iterdir()] == ["S1.h5"]  # no temporary left behind
    with RunFile(outdir / "S1.h5") as run:
        assert run.n_reads == 120 and run.record["sample"] == {"number": 1, "of": 3}


@pytest.mark.slow
def test_sigterm_keeps_the_complete_samples_and_removes_the_rest(tmp_path):
    records = example_records(0, 200)
    reads = []
    for number in range(1, 7):
        path = tmp_path / f"S{number}.fa"
        path.write_text("".join(f">{name}\n{seq}\n" for name, seq in records))
        reads.append(str(path))
    outdir = tmp_path / "out"
    outdir.mkdir()
    command = [sys.executable, "-m", "papara_py", *REFERENCE, "-r", *reads, "--outdir", str(outdir),
               "--device", "cpu", "-j", "1", "--batch-reads", "5"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (outdir / "S1.h5").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    kept = sorted(p.name for p in outdir.iterdir())
    assert kept and kept == [f"S{n}.h5" for n in range(1, len(kept) + 1)] and len(kept) < 6, kept
    assert "stopped by SIGTERM; no further output written" in stderr
    first = datasets(outdir / "S1.h5")
    for name in kept:  # each a complete run file with the same results as the first
        with RunFile(outdir / name) as run:
            assert run.n_reads == 200
        got = datasets(outdir / name)
        for field in ("reads/best_edge", "reads/score", "reads/aligned"):
            assert np.array_equal(got[field], first[field])


def test_output_names():
    assert output_name("lane1/S3.fastq.gz") == "S3.h5"
    assert output_name("S3.FA") == "S3.h5"
    assert output_name("sample.v2.fq.bz2") == "sample.v2.h5"
    assert output_name("reads") == "reads.h5"
    assert output_name(".fa") == ".fa.h5"  # a suffix is never the whole name
    assert output_name("-") == "stdin.h5"
    assert output_name("dir/") == "dir.h5"


def test_refused_combinations(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(InputError, match="give --outdir DIR"):
        samples_in(["x.fa", "y.fa"], None, None)
    with pytest.raises(InputError, match="not both"):
        samples_in(["x.fa"], "run.h5", str(tmp_path))
    with pytest.raises(InputError, match="does not exist"):
        samples_in(["x.fa"], None, str(tmp_path / "missing"))
    with pytest.raises(InputError, match="would both be written to"):
        samples_in(["a/x.fa", "x.fq.gz"], None, str(tmp_path))
    with pytest.raises(InputError, match="given twice"):
        samples_in(["x.fa", "x.fa"], None, str(tmp_path))
    assert [s.output for s in samples_in(["x.fa"], None, None)] == ["papara.h5"]
    assert [s.output for s in samples_in(["a/x.fa", "y.fa"], None, str(tmp_path))] == \
        [str(tmp_path / "x.h5"), str(tmp_path / "y.h5")]


@pytest.mark.slow
def test_cli_refusals_exit_2_before_any_work(tmp_path):
    reads = write_samples(tmp_path)
    result = papara(*REFERENCE, "-r", str(reads[0]), str(reads[1]))
    assert result.returncode == 2 and "--outdir" in result.stderr and "Traceback" not in result.stderr
    # a run file that would overwrite a reads file (a sample named like the output) is refused
    clash = tmp_path / "S1.h5"
    clash.write_text(">r\nACGT\n")
    result = papara(*REFERENCE, "-r", str(reads[0]), str(clash), "--outdir", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "never writes over its inputs" in " ".join(result.stderr.split())
    assert clash.read_text() == ">r\nACGT\n"


@pytest.mark.slow
def test_samples_on_the_gpu_match_the_cpu(opencl_device, monkeypatch, tmp_path):
    """The GPU (PoCL in CI), alone and beside CPU workers, scores and traces back the samples of one
    run as the CPU does."""
    from papara_py.engine import opencl_devices
    from papara_py.run.config import RunConfig
    from papara_py.run.runner import run
    from papara_py.run.samples import Sample

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    reads = write_samples(tmp_path)
    outputs = {}
    for device in ("cpu", "gpu", "hybrid"):
        samples = [Sample(str(path), str(tmp_path / f"{device}-{n}.h5")) for n, path in enumerate(reads)]
        summaries = run(RunConfig(tree=REFERENCE[1], alignment=REFERENCE[3], reads=samples[0].reads,
                                  output=samples[0].output, more_samples=tuple(samples[1:]), device=device,
                                  threads=2, batch_reads=40))
        assert [s.output for s in summaries] == [s.output for s in samples]
        outputs[device] = [datasets(Path(s.output)) for s in samples]
        if device != "cpu":
            with RunFile(samples[0].output) as first:
                assert first.record["traceback"]["batches"]["gpu"] >= 1
                assert "gpu" in {name.split("-")[0] for name in first.record["consumers"]}
    for device in ("gpu", "hybrid"):
        for cpu, other in zip(outputs["cpu"], outputs[device]):
            for name in ("reads/best_edge", "reads/score", "reads/start", "reads/aligned", "reads/cigar",
                         "reads/candidates/edge", "reads/candidates/score"):
                assert np.array_equal(cpu[name], other[name]), (device, name)
    for n in range(len(reads)):
        nulls = []
        for device in ("cpu", "gpu", "hybrid"):
            with RunFile(tmp_path / f"{device}-{n}.h5") as handle:
                nulls.append(handle.record.get("outlier_null"))
        assert nulls[1] == nulls[0] and nulls[2] == nulls[0]


@pytest.mark.slow
def test_the_api_aligns_samples_from_files_and_from_memory(tmp_path):
    import papara_py

    reads = write_samples(tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    runs = papara_py.align_samples(REFERENCE[1], REFERENCE[3], reads[:2], outdir, device="cpu", threads=2)
    assert [run.path for run in runs] == [str(outdir / "S1.h5"), str(outdir / "S2.h5")]
    assert [run.n_reads for run in runs] == [120, 80]
    assert "papara_py.align_samples(" in runs[0].command_line
    in_memory = {"first": dict(example_records(0, 120)), "second": example_records(120, 80)}
    again = papara_py.align_samples(REFERENCE[1], REFERENCE[3], in_memory, tmp_path, device="cpu",
                                    threads=2)
    assert [Path(run.path).name for run in again] == ["first.h5", "second.h5"]
    for one, other in zip(runs, again):  # the same reads, from files or from memory: the same results
        assert [(r.name, r.edge, r.score, r.cigar) for r in one] == [(r.name, r.edge, r.score, r.cigar) for r in other]
    with pytest.raises(InputError, match="as a list of paths"):
        papara_py.align_samples(REFERENCE[1], REFERENCE[3], {"x": str(reads[0])}, tmp_path)
    with pytest.raises(InputError, match="cannot name a file"):
        papara_py.align_samples(REFERENCE[1], REFERENCE[3], {"a/b": example_records(0, 3)}, tmp_path)


@pytest.mark.slow
def test_shards_of_several_samples_merge_into_each_samples_run(tmp_path):
    """--shard K/N slices every sample alike; merging each sample's shards gives its whole run."""
    reads = [str(path) for path in write_samples(tmp_path)[:2]]
    whole = tmp_path / "whole"
    whole.mkdir()
    assert papara(*REFERENCE, "-r", *reads, "--outdir", str(whole), "--device", "cpu", "--quiet").returncode == 0
    for k in range(2):
        (tmp_path / f"shard{k}").mkdir()
        result = papara(*REFERENCE, "-r", *reads, "--outdir", str(tmp_path / f"shard{k}"), "--shard", f"{k}/2",
                        "--device", "cpu", "--quiet")
        assert result.returncode == 0, result.stderr
    for name in ("S1.h5", "S2.h5"):
        merged = tmp_path / f"merged-{name}"
        result = papara("merge", str(tmp_path / "shard0" / name), str(tmp_path / "shard1" / name), "-o", str(merged))
        assert result.returncode == 0, result.stderr
        want, got = datasets(whole / name), datasets(merged)
        for field in ("reads/names", "reads/best_edge", "reads/score", "reads/cigar", "reads/aligned"):
            assert np.array_equal(want[field], got[field]), (name, field)
