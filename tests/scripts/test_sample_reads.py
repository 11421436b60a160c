"""scripts/sample_reads.py, the sample-scale read generator of notebook/BENCHMARKS.md: reads cut from the
reference rows with the asked length, substitution rate and strand mix, in bench_hybrid.py's
layout, the same reads for the same seed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scripts_loader import SCRIPTS, load_script

from papara_py.io.read_input import iter_reads

sample = load_script("sample_reads")


def generate(pyrg_dir: Path, out: Path, *options: str) -> list[bytes]:
    subprocess.run([sys.executable, str(SCRIPTS / "sample_reads.py"), "-t", str(pyrg_dir / "tree.nwk"), "-s",
                    str(pyrg_dir / "ref.phy"), "--out", str(out), *options], check=True)
    return [read.sequence for read in iter_reads(out / "reads.fa")]


@pytest.mark.slow
def test_reads_are_row_pieces_with_the_asked_errors_and_strands(pyrg_dir, tmp_path):
    rows = [row.tobytes() for row in sample.reference_rows(pyrg_dir / "ref.phy")]
    reads = generate(pyrg_dir, tmp_path / "a", "--reads", "400", "--length", "60", "--substitution", "0",
                     "--reverse", "0.5", "--seed", "3")
    assert sorted((tmp_path / "a").iterdir()) == [tmp_path / "a" / n for n in ("reads.fa", "ref.phy", "tree.nwk")]
    assert len(reads) == 400 and {len(r) for r in reads} == {60}
    complement = bytes.maketrans(b"ACGT", b"TGCA")
    forward = [any(r in row for row in rows) for r in reads]
    backward = [any(r[::-1].translate(complement) in row for row in rows) for r in reads]
    assert all(f or b for f, b in zip(forward, backward))  # every read is a piece of a row, one way or the other
    assert 0.35 < np.mean([b and not f for f, b in zip(forward, backward)]) < 0.65
    noisy = generate(pyrg_dir, tmp_path / "b", "--reads", "400", "--length", "60", "--substitution", "0.05",
                     "--reverse", "0", "--seed", "3")
    mismatches = [min(sum(x != y for x, y in zip(r, row[i:i + 60])) for row in rows for i in range(len(row) - 59))
                  for r in noisy[:20]]
    assert 0.5 < np.mean(mismatches) < 6  # 5% of 60 bases is 3 (a substitution may draw the same base)


def test_the_same_seed_gives_the_same_reads(pyrg_dir, tmp_path):
    first = generate(pyrg_dir, tmp_path / "a", "--reads", "50", "--seed", "9", "--length", "50")
    assert first == generate(pyrg_dir, tmp_path / "b", "--reads", "50", "--seed", "9", "--length", "50")
    assert first != generate(pyrg_dir, tmp_path / "c", "--reads", "50", "--seed", "10", "--length", "50")
