"""`papara-py export --format epa --outdir DIR`: the reference + query pair EPA-ng reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from papara_py.io.alignment_input import read_alignment

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"


def papara(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_pair_holds_the_trees_taxa_and_the_queries(tmp_path):
    reference = read_alignment(str(EXAMPLE / "ref.phy"))
    fasta = tmp_path / "ref.fasta"  # the example plus a taxon the tree does not have
    rows = list(zip(reference.names, (row.tobytes().decode() for row in reference.rows)))
    rows.append(("not_in_tree", rows[0][1]))
    fasta.write_text("".join(f">{name}\n{row}\n" for name, row in rows))
    run = tmp_path / "run.h5"
    made = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(fasta), "-r", str(EXAMPLE / "reads.fa"),
                  "-o", str(run), "--device", "cpu", "--quiet")
    assert made.returncode == 0, made.stderr
    result = papara("export", str(run), "--format", "epa", "--outdir", str(tmp_path / "pair"))
    assert result.returncode == 0, result.stderr
    pair = read_alignment(str(tmp_path / "pair" / "reference.fasta"))
    assert pair.names == reference.names  # the tree's taxa, in alignment order; not the extra one
    assert [row.tobytes() for row in pair.rows] == [row.tobytes() for row in reference.rows]
    single = tmp_path / "queries.fasta"
    assert papara("export", str(run), "--format", "epa", "-o", str(single)).returncode == 0
    assert (tmp_path / "pair" / "query.fasta").read_bytes() == single.read_bytes()
    assert ">not_in_tree\n" in single.read_text()  # aligned as a read (README: What it does)


def test_outdir_only_with_epa_and_not_with_o(tmp_path):
    run = tmp_path / "run.h5"
    assert papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"),
                  "-o", str(run), "--device", "cpu", "--quiet").returncode == 0
    for args in (["--format", "fasta", "--outdir", str(tmp_path / "d")],
                 ["--format", "epa", "--outdir", str(tmp_path / "d"), "-o", str(tmp_path / "x")],
                 ["--format", "epa", "--outdir", str(tmp_path / "no" / "such" / "d")]):
        result = papara("export", str(run), *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]
