"""Only fitting reads go downstream by default: the example plus 20 random reads, whose outliers
(the one rule of model/outliers.py, which `papara-py report` lists) the exports leave out unless
`--keep-outliers`; the run's summary counts them and the API gives the same flags."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import papara_py  # noqa: E402
from papara_py.io.run_file import RunFile  # noqa: E402
from papara_py.model.outliers import run_outliers  # noqa: E402
from papara_py.report.page import build_report  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
PROTEIN = Path(__file__).resolve().parents[2] / "data" / "protein"
N_RANDOM = 20


def papara(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True, timeout=600)


def fasta_records(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    return [(block.split("\n", 1)[0], block.split("\n", 1)[1].replace("\n", ""))
            for block in text.split(">")[1:]]


def align_with_foreign(data: Path, foreign: list[tuple[str, str]], directory: Path) -> tuple[Path, str]:
    """(run file, the main job's stderr) of the example in `data` with the `foreign` reads
    (name, sequence) appended to its reads."""
    reads = directory / "reads.fa"
    reads.write_text("".join(f">{name}\n{sequence}\n" for name, sequence in fasta_records(data / "reads.fa") + foreign))
    out = directory / "run.h5"
    result = papara("-t", str(data / "tree.nwk"), "-s", str(data / "ref.phy"), "-r", str(reads),
                    "-o", str(out), "--device", "cpu", "-j", "1")
    assert result.returncode == 0, result.stderr
    return out, result.stderr


@pytest.fixture(scope="module")
def noisy(tmp_path_factory) -> tuple[Path, str]:
    """(run file, the main job's stderr) of the example's reads plus 20 random reads (seeded, of the
    example reads' lengths) appended."""
    rng = np.random.default_rng(20261201)
    random_reads = [(f"random_{i}", "".join(rng.choice(list("ACGT"), len(sequence))))
                    for i, (_, sequence) in enumerate(fasta_records(EXAMPLE / "reads.fa")[:N_RANDOM])]
    return align_with_foreign(EXAMPLE, random_reads, tmp_path_factory.mktemp("outliers"))


def flagged_names(run_path: Path) -> tuple[set[str], list[str]]:
    """(names of the outliers by the rule, names of every aligned read)."""
    with RunFile(run_path) as run:
        names = [str(name) for name in run.names()]
        outliers = run_outliers(run)
        aligned = run.column("status") == "aligned"
    return {names[q] for q in outliers.indices}, [name for name, ok in zip(names, aligned) if ok]


def test_the_random_reads_are_the_outliers(noisy):
    flagged, aligned = flagged_names(noisy[0])
    assert len(aligned) == 200 + N_RANDOM
    random_flagged = {name for name in flagged if name.startswith("random_")}
    assert len(random_flagged) >= N_RANDOM - 2  # about 1 random read in 100 escapes the null's threshold
    assert flagged == random_flagged  # the real reads fit


def test_a_protein_sample_half_of_it_foreign_is_flagged_half(tmp_path):
    """The rule depends on the reference's null, not on the sample: shuffled copies of half of the
    protein example's reads are flagged however many of them there are, the real ones are not."""
    records = fasta_records(PROTEIN / "reads.fa")
    rng = np.random.default_rng(20261129)
    shuffled = [(f"shuffled_{i}", "".join(rng.permutation(list(sequence)))) for i, (_, sequence) in enumerate(records)]
    out, _ = align_with_foreign(PROTEIN, shuffled, tmp_path)
    flagged, aligned = flagged_names(out)
    assert len(aligned) == 2 * len(records)
    assert not {name for name in flagged if not name.startswith("shuffled_")}
    assert len(flagged) >= 0.95 * len(records)


def test_the_run_summary_counts_the_outliers(noisy):
    run_path, stderr = noisy
    flagged, aligned = flagged_names(run_path)
    match = re.search(r"(\d+) of them fit the reference, (\d+) outliers", stderr)
    assert match, stderr
    assert (int(match.group(1)), int(match.group(2))) == (len(aligned) - len(flagged), len(flagged))


def test_the_summary_counts_them_without_a_file_to_read_back(noisy):
    """The count comes from the rows as written, not from reading the file back: a run into
    /dev/null says the same."""
    run_path, stderr = noisy
    reads = run_path.parent / "reads.fa"
    result = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(reads),
                    "-o", "/dev/null", "--device", "cpu", "-j", "1")
    assert result.returncode == 0, result.stderr
    summary = re.compile(r"\d+ of them fit the reference, \d+ outliers")
    assert summary.search(result.stderr).group(0) == summary.search(stderr).group(0)


@pytest.mark.parametrize("fmt", ["epa", "fasta", "jplace"])
def test_exports_leave_out_the_outliers_unless_kept(noisy, tmp_path, fmt):
    run_path = noisy[0]
    flagged, aligned = flagged_names(run_path)
    assert flagged

    def exported(*extra: str) -> tuple[set[str], str]:
        target = tmp_path / f"out{len(extra)}.{fmt}"
        result = papara("export", str(run_path), "--format", fmt, "-o", str(target), *extra)
        assert result.returncode == 0, result.stderr
        if fmt == "jplace":
            names = [name for item in json.loads(target.read_text())["placements"] for name in item["n"]]
        else:
            names = [name for name, _ in fasta_records(target)]
        with RunFile(run_path) as run:
            reference = set(run.reference_names)
        return {name for name in names if name not in reference}, result.stderr

    default, stderr = exported()
    assert default == set(aligned) - flagged
    assert f"left out {len(flagged)} outlier reads" in stderr and "--keep-outliers" in stderr
    kept, stderr = exported("--keep-outliers")
    assert kept == set(aligned)
    assert "outlier" not in stderr


def test_the_epa_pair_leaves_out_the_outliers_unless_kept(noisy, tmp_path):
    run_path = noisy[0]
    flagged, aligned = flagged_names(run_path)
    for extra, expected in (((), set(aligned) - flagged), (("--keep-outliers",), set(aligned))):
        directory = tmp_path / f"pair{len(extra)}"
        result = papara("export", str(run_path), "--format", "epa", "--outdir", str(directory), *extra)
        assert result.returncode == 0, result.stderr
        assert {name for name, _ in fasta_records(directory / "query.fasta")} == expected
        assert not {name for name, _ in fasta_records(directory / "reference.fasta")} & flagged


def test_the_api_flags_what_the_report_lists(noisy):
    run_path = noisy[0]
    run = papara_py.open_run(run_path)
    flags = run.outliers
    assert flags.dtype == bool and flags.shape == (run.n_reads,)
    html = build_report(run_path).html
    match = re.search(r"Outliers: (\d+) reads", html)
    assert match and int(match.group(1)) == int(flags.sum())
    names = [read.name for read in run]
    for q in np.flatnonzero(flags):
        assert f"<td>{names[q]}</td>" in html
    assert [read.outlier for read in run] == flags.tolist()
    assert run[int(np.flatnonzero(flags)[0])].outlier
    flagged = {names[q] for q in np.flatnonzero(flags)}
    default = {record.id for record in run.to_alignment(reference=False)}
    everything = {record.id for record in run.to_alignment(reference=False, keep_outliers=True)}
    assert default == everything - flagged and flagged <= everything


def test_a_read_of_no_calls_is_an_outlier_and_widens_nothing(tmp_path):
    """An all-N read fits any column at no cost (score 0): by its residues alone it looked the
    best fit of the run, and its residues, decoded from flat posteriors as insertions, widened
    every row of the export by as many columns. Counting only its informative residues, the rule
    flags it; a read with every other residue N still fits."""
    first_name, first = fasta_records(EXAMPLE / "reads.fa")[0]
    half_n = "".join(base if i % 2 else "N" for i, base in enumerate(first))
    out, _ = align_with_foreign(EXAMPLE, [("no_calls", "N" * 138), ("half_n", half_n)], tmp_path)
    flagged, aligned = flagged_names(out)
    assert {"no_calls", "half_n"} <= set(aligned)
    assert flagged == {"no_calls"}
    (tmp_path / "alone").mkdir()
    alone, _ = align_with_foreign(EXAMPLE, [], tmp_path / "alone")
    widths = []
    for run_path, name in ((out, "with.fasta"), (alone, "alone.fasta")):
        result = papara("export", str(run_path), "--format", "fasta", "-o", str(tmp_path / name))
        assert result.returncode == 0, result.stderr
        widths.append({len(sequence) for _, sequence in fasta_records(tmp_path / name)})
    assert widths[0] == widths[1] and len(widths[0]) == 1
    html = build_report(out).html
    assert re.search(r"<td>no_calls</td>(<td class=\"num\">(0|-)</td>){3}", html)
    with RunFile(out) as run:  # the PP table counts the residues of the reads that fit, not the outlier's
        fitting = sum(len(sequence) for name, sequence in zip(run.names(), run.column("sequence"))
                      if str(name) != "no_calls")
    assert f"{fitting:,} residues; their PP codes average" in html
