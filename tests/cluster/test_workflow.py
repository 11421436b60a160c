"""workflow/Snakefile run by real Snakemake (the `workflow` extra): prepare once, align each sample
whole or as shards merged back, export, and the two paths give the same results; `snakemake --lint`
finds nothing (a log, a conda environment and a container for every rule), the alignments take
their threads from the job, and nothing is written outside the working directory."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sharding_data import assert_same_run

ROOT = Path(__file__).resolve().parents[2]


def snakemake(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "workflow" / "Snakefile"),
                           *arguments], capture_output=True, text=True, timeout=900, cwd=cwd)


def run_snakemake(directory: Path, *config: str) -> subprocess.CompletedProcess:
    return snakemake("--cores", "2", "--directory", str(directory), "--config", "place=no", *config)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    if importlib.util.find_spec("snakemake") is None:
        pytest.fail("snakemake is not installed: pip install '.[workflow]' (README: install)")
    directory = tmp_path_factory.mktemp("workflow")  # the bundled example's paths are the repository's
    for outdir, shards in (("single", "1"), ("sharded", "3")):
        result = run_snakemake(directory, f"outdir={outdir}", f"shards={shards}", "options=--device cpu")
        assert result.returncode == 0, result.stderr[-3000:]
    return directory


@pytest.mark.slow
def test_sharded_path_equals_a_single_run(workdir):
    single, sharded = workdir / "single" / "example", workdir / "sharded" / "example"
    assert sorted(p.name for p in (sharded / "shards").iterdir()) == [f"shard_{k}.h5" for k in range(3)]
    assert not (single / "shards").exists()
    assert_same_run(sharded / "run.h5", single / "run.h5")
    for name in ("extended.fasta", "epa/reference.fasta", "epa/query.fasta"):
        assert (sharded / name).read_bytes() == (single / name).read_bytes(), name
    placements = [json.loads((path / "papara.jplace").read_text())["placements"] for path in (single, sharded)]
    assert placements[0] == placements[1] and len(placements[0]) == 200


def test_profiles_made_once_and_logs_kept(workdir):
    for outdir in ("single", "sharded"):
        assert (workdir / outdir / "reference" / "profiles.h5").is_file()
    log = (workdir / "sharded" / "logs" / "example.shard_1.log").read_text()
    assert "--shard 1/3" in log and "--profiles" in log


def test_nothing_to_do_on_a_second_run(workdir):
    again = run_snakemake(workdir, "outdir=sharded", "shards=3", "options=--device cpu")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_every_rule_logs(workdir):
    logs = {p.name for p in (workdir / "single" / "logs").iterdir()}
    assert logs == {"prepare.log", "example.align.log", "example.export_extended.log", "example.export_epa.log",
                    "example.export_jplace.log"}
    sharded = {p.name for p in (workdir / "sharded" / "logs").iterdir()}
    assert {"example.merge.log", *(f"example.shard_{k}.log" for k in range(3))} <= sharded


@pytest.mark.slow
@pytest.mark.parametrize("shards", ["1", "3"])
def test_lint_finds_nothing(tmp_path, shards):
    """A log, a conda environment (workflow/envs/) and a container for every rule, no hard-coded
    path prefix: `snakemake --lint` has nothing to say, whole or sharded."""
    linted = snakemake("--lint", "--directory", str(tmp_path), "--config", f"shards={shards}", "place=yes")
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-3000:]
    assert "Congratulations, your workflow is in a good condition!" in linted.stdout + linted.stderr
    assert "Lints for" not in linted.stdout + linted.stderr


def test_conda_environments_name_the_software():
    yaml = pytest.importorskip("yaml")
    envs = {p.name: yaml.safe_load(p.read_text()) for p in (ROOT / "workflow" / "envs").glob("*.yaml")}
    assert set(envs) == {"papara-py.yaml", "epa-ng.yaml"}
    assert all({"conda-forge", "bioconda"} <= set(env["channels"]) for env in envs.values())
    assert envs["papara-py.yaml"]["dependencies"][0].split()[0] == "papara-py"
    assert envs["epa-ng.yaml"]["dependencies"][0].split()[0] == "epa-ng"


@pytest.mark.slow
@pytest.mark.parametrize("cores, shards", [("3", "1"), ("5", "1"), ("4", "2")])
def test_threads_come_from_the_job(tmp_path, cores, shards):
    """--cores N gives each alignment (whole or a shard) and the placement N threads, papara-py's -j
    N and epa-ng's --threads N: no fixed thread count."""
    dry = snakemake("-n", "-p", "--cores", cores, "--directory", str(tmp_path), "--config", f"shards={shards}",
                    "place=yes", "options=--device cpu")
    assert dry.returncode == 0, dry.stderr[-3000:]
    commands = [line.split("Shell command: ", 1)[1] for line in dry.stdout.splitlines() if "Shell command: " in line]
    aligned = [c for c in commands if c.startswith("papara-py -t")]
    assert len(aligned) == int(shards) and all(f" -j {cores} " in c for c in aligned), commands
    assert any(f"--threads {cores} " in c for c in commands if "epa-ng" in c), commands


@pytest.mark.slow
def test_refuses_the_repository_as_working_directory(tmp_path):
    """Run from the repository (or its workflow/ folder), the workflow stops before Snakemake writes
    anything there (no .snakemake/, no results/) and says to give --directory."""
    before = {p.name for p in ROOT.iterdir()}
    for cwd in (ROOT, ROOT / "workflow"):
        refused = snakemake("-n", "--cores", "1", cwd=cwd)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0
        assert "the working directory is papara-py's repository" in said and "--directory work" in said
        assert not (cwd / ".snakemake").exists() and not (cwd / "results").exists()
    assert {p.name for p in ROOT.iterdir()} == before
    elsewhere = snakemake("-n", "--cores", "1", "--directory", str(tmp_path))
    assert elsewhere.returncode == 0, elsewhere.stderr[-2000:]


def test_a_users_config_is_not_merged_with_the_example(workdir):
    (workdir / "data").symlink_to(ROOT / "data")  # the user's relative paths: from the working directory
    config = workdir / "mine.yaml"
    config.write_text("reference:\n  tree: data/example/tree.nwk\n  alignment: data/example/ref.phy\n"
                      "samples:\n  mine: data/example/reads.fa\noutdir: mine_out\n")
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "workflow" / "Snakefile"),
                          "--configfile", str(config), "--cores", "1", "--directory", str(workdir), "-n"],
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "sample=mine" in dry.stdout and "sample=example" not in dry.stdout


def test_the_workflow_names_this_version_of_papara_py():
    """`--use-conda` and `--use-apptainer` run the papara-py the workflow names, not the checkout:
    its conda pin, its default image and the config's image are this version (a release bumps
    them with the package)."""
    from papara_py import __version__

    major_minor = ".".join(__version__.split(".")[:2])
    environment = (ROOT / "workflow" / "envs" / "papara-py.yaml").read_text()
    assert f"  - papara-py ={major_minor}\n" in environment
    image = f"docker://ghcr.io/papara-py/papara-py:{__version__}"
    for name in ("Snakefile", "config.yaml"):
        text = (ROOT / "workflow" / name).read_text()
        assert image in text and text.count("ghcr.io/papara-py/papara-py:") == 1, name
