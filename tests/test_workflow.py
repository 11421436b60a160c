"""workflow/Snakefile run by real Snakemake (the `workflow` extra): prepare once, align each sample
whole or as shards merged back, export, and the two paths give the same results."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sharding_data import assert_same_run

ROOT = Path(__file__).resolve().parents[1]


def run_snakemake(directory: Path, *config: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "workflow" / "Snakefile"),
                           "--cores", "2", "--directory", str(directory), "--config", "place=no", *config],
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    if importlib.util.find_spec("snakemake") is None:
        pytest.fail("snakemake is not installed: pip install '.[workflow]' (README: install)")
    directory = tmp_path_factory.mktemp("workflow")
    (directory / "data").symlink_to(ROOT / "data")  # the config's default paths: the bundled example
    for outdir, shards in (("single", "1"), ("sharded", "3")):
        result = run_snakemake(directory, f"outdir={outdir}", f"shards={shards}", "options=--device cpu")
        assert result.returncode == 0, result.stderr[-3000:]
    return directory


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


def test_a_users_config_is_not_merged_with_the_example(workdir):
    config = workdir / "mine.yaml"
    config.write_text("reference:\n  tree: data/example/tree.nwk\n  alignment: data/example/ref.phy\n"
                      "samples:\n  mine: data/example/reads.fa\noutdir: mine_out\n")
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "workflow" / "Snakefile"),
                          "--configfile", str(config), "--cores", "1", "--directory", str(workdir), "-n"],
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "sample=mine" in dry.stdout and "sample=example" not in dry.stdout
