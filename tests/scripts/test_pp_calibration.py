"""scripts/pp_calibration.py: each residue's PP code against its true column.

docs/accuracy.md's calibration table rests on it. The PP line and the CIGAR follow the oriented
read while the truth follows the read as written, so a reverse-strand read must come out exactly
as the same read given forward; and the codes must carry information (residues coded * are right
far more often than those coded below 0.75), or the pairing of codes to residues is off. The
scores docs/accuracy.md and docs/guide.md quote (Brier, how far the codes below * miss) are
checked on hand-made counts.
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from pathlib import Path

import pytest
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE, PROTEIN = ROOT / "data" / "example", ROOT / "data" / "protein"
COMPLEMENT = str.maketrans("ACGTacgt", "TGCAtgca")


def share(counts, codes: str) -> float:
    right = sum(counts[False, code, True] for code in codes)
    return right / (right + sum(counts[False, code, False] for code in codes))


def flipped_example(folder: Path) -> Path:
    """data/example with every other read (read_000002, read_000004, ...) reverse-complemented, its
    true columns turned round to follow the read as written."""
    folder.mkdir()
    for name in ("tree.nwk", "ref.fasta"):
        shutil.copy(EXAMPLE / name, folder / name)
    flip = {}
    with open(folder / "reads.fa", "w") as out:
        for record in (EXAMPLE / "reads.fa").read_text().split(">")[1:]:
            header, *lines = record.splitlines()
            sequence = "".join(lines)
            flip[header.split()[0]] = int(header.split()[0].rsplit("_", 1)[1]) % 2 == 0
            out.write(f">{header}\n{sequence.translate(COMPLEMENT)[::-1] if flip[header.split()[0]] else sequence}\n")
    rows = ["name\tsource\tstrand\ttrue_split\ttrue_columns"]
    for line in (EXAMPLE / "truth.tsv").read_text().splitlines():
        if line.startswith(("#", "name\t")):
            continue
        name, source, _, split, columns = line.split("\t")
        if flip[name]:
            columns = ",".join(reversed(columns.split(",")))
        rows.append("\t".join((name, source, "-" if flip[name] else "+", split, columns)))
    (folder / "truth.tsv").write_text("\n".join(rows) + "\n")
    assert 0 < sum(flip.values()) < len(flip)
    return folder


def test_reverse_strand_reads_count_as_the_same_reads_given_forward(tmp_path):
    calibration = load_script("pp_calibration")
    forward = calibration.calibrate(EXAMPLE, threads=1)
    flipped = calibration.calibrate(flipped_example(tmp_path / "flipped"), threads=1)
    assert sum(forward.values()) == sum(len([c for c in columns if c >= 0])
                                        for columns, _ in calibration.ba.read_truth(EXAMPLE / "truth.tsv").values())
    assert flipped == forward


def test_codes_carry_information_and_the_script_prints_the_table(capsys):
    calibration = load_script("pp_calibration")
    counts = calibration.calibrate(PROTEIN, threads=1) + calibration.calibrate(EXAMPLE, threads=1)
    assert share(counts, "*") > 0.99 > 0.8 > share(counts, "01234567")
    assert calibration.main([str(PROTEIN), str(EXAMPLE), "-j", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "reads that fit (2 sets)" and lines[1].split("\t") == ["PP", "range", "residues", "right"]
    assert [line.split("\t")[0] for line in lines[2:14]] == list("0123456789*") + ["all"]
    assert lines[13].split("\t")[2] == str(sum(counts.values()))
    score = calibration.scores(counts)
    assert lines[14] == (f"Brier {score['brier']:.5f}, log-loss {score['log_loss']:.5f}; codes below *: "
                         f"{score['below_star']:.4f} of residues, off their midpoints by "
                         f"{score['below_star_gap']:.4f}; * right {score['star_right']:.4f}")
    assert lines[15] == "outliers: none"


def test_scores_read_each_code_as_its_midpoint():
    """Ten residues coded * (nine right), four coded 9 (none right), two coded 5 (one right)."""
    calibration = load_script("pp_calibration")
    counts = Counter({(False, "*", True): 9, (False, "*", False): 1, (False, "9", False): 4,
                      (False, "5", True): 1, (False, "5", False): 1, (True, "0", True): 3})
    score = calibration.scores(counts)
    # * stands for 0.975, 9 for 0.9, 5 for 0.5
    assert score["brier"] == pytest.approx((9 * 0.025 ** 2 + 0.975 ** 2 + 4 * 0.9 ** 2 + 2 * 0.5 ** 2) / 16)
    assert score["log_loss"] == pytest.approx(-(9 * math.log(0.975) + math.log(0.025) + 4 * math.log(0.1)
                                                + 2 * math.log(0.5)) / 16)
    assert score["below_star"] == pytest.approx(6 / 16)
    # the 9s miss by 0.9 (none right), the 5s not at all (half right)
    assert score["below_star_gap"] == pytest.approx(4 * 0.9 / 6)
    assert score["star_right"] == pytest.approx(0.9)
    # the outliers' table is apart: three residues coded 0, all right
    outliers = calibration.scores(counts, outlier=True)
    assert outliers["brier"] == pytest.approx(0.975 ** 2) and outliers["below_star_gap"] == pytest.approx(0.975)
    assert outliers["star_right"] is None
    assert calibration.scores(Counter()) is None
