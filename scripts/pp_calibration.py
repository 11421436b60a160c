"""Do papara-py's posterior probabilities mean what they say? Each residue's PP code (hmmalign's
0-9 and *, the run file's /reads/pp) against whether the residue sits in its true column
(docs/accuracy.md, "What the posterior probabilities mean").

    python3 scripts/pp_calibration.py SET_DIR [SET_DIR ...] [-j THREADS]

Each SET_DIR holds tree.nwk, ref.fasta (or ref.phy), reads.fa and truth.tsv, as
scripts/bench_accuracy.py (`--keep`) and scripts/accuracy_study.py build them. papara-py aligns
each set through its Python API at the alphabet's default preset, on the CPU. Prints, for every
PP code, the probability range it stands for, how many residues with a true column carry it, and
what share of them papara-py put in that column; then the same for all residues (the mean of the
stated PP, its range midpoints, against the share right) and the scores of the codes read as
their midpoints (`scores`: Brier, log-loss, how far the codes below `*` miss). The reads the
outlier rule flags (DESIGN.md 5, "Reads that fit nowhere") are counted apart: their PP says how
sure the alignment is given that the read belongs, which for them is in doubt.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba  # noqa: E402

#: The PP codes in order, and the range of probabilities each stands for (model/pp_code.pp_digits).
CODES = "0123456789*"
RANGES = {code: (max(0.0, k / 10 - 0.05), min(1.0, k / 10 + 0.05)) for k, code in enumerate(CODES)}
RANGES["*"] = (0.95, 1.0)


def midpoint(code: str) -> float:
    """The middle of the probability range a PP code stands for."""
    low, high = RANGES[code]
    return (low + high) / 2


def residue_outcomes(read, true_columns: list[int]) -> list[tuple[str, bool]]:
    """(PP code, in its true column?) of each residue of `read` (an api.ReadResult) that has a true
    column. The PP line and the CIGAR follow the oriented read; the truth follows the read as
    written, so a reverse-strand read's codes and columns are both turned round."""
    if not read.pp or read.start is None:
        return []
    columns = ba.read_columns(read.start, read.cigar, read.strand)
    codes = read.pp[::-1] if read.strand == "-" else read.pp
    if len(columns) != len(true_columns) or len(codes) != len(true_columns):
        raise ValueError(f"{read.name}: {len(columns)} placed residues and {len(codes)} PP codes, "
                         f"the truth has {len(true_columns)}")
    return [(code, column == true) for code, column, true in zip(codes, columns, true_columns) if true >= 0]


def tally(run, truth: dict) -> Counter:
    """Counter of (outlier?, PP code, right?) over the residues with a true column of every read of
    `run` (an api.Run) that `truth` (bench_accuracy.read_truth) knows."""
    counts: Counter = Counter()
    for read in run:
        if read.name in truth:
            for code, right in residue_outcomes(read, truth[read.name][0]):
                counts[read.outlier, code, right] += 1
    return counts


def table(counts: Counter, outlier: bool) -> list[tuple[str, str, int, float | None]]:
    """Rows (code, its range, residues, share right; None where no residue has the code) of the
    reads that are (or are not) outliers, then a row "all" with the mean stated PP as its range."""
    rows, right_all, total_all, stated = [], 0, 0, 0.0
    for code in CODES:
        right, wrong = counts[outlier, code, True], counts[outlier, code, False]
        total = right + wrong
        low, high = RANGES[code]
        rows.append((code, f"{low:.2f}-{high:.2f}", total, right / total if total else None))
        right_all, total_all, stated = right_all + right, total_all + total, stated + total * midpoint(code)
    if total_all:
        rows.append(("all", f"mean {stated / total_all:.3f}", total_all, right_all / total_all))
    return rows


def scores(counts: Counter, outlier: bool = False) -> dict[str, float] | None:
    """How well the codes of the reads that are (or are not) outliers state their residues' chance
    of being right, each code read as its range's midpoint p (`midpoint`); None without residues.

    brier: the mean of (1 - p)^2 over right residues and p^2 over wrong ones; log_loss: the mean
    of -log p and -log(1 - p); below_star: the share of residues coded below `*`; below_star_gap:
    the residue-weighted mean of |share right - p| over those codes (how far they miss what they
    say: the expected calibration error of the codes below `*`); star_right: the share right of
    residues coded `*` (None without any)."""
    n = below = 0
    brier = log_loss = gap = 0.0
    for code in CODES:
        right, wrong = counts[outlier, code, True], counts[outlier, code, False]
        if right + wrong == 0:
            continue
        p = midpoint(code)
        n += right + wrong
        brier += right * (1 - p) ** 2 + wrong * p ** 2
        log_loss -= right * math.log(p) + wrong * math.log(1 - p)
        if code != "*":
            below += right + wrong
            gap += abs(right - (right + wrong) * p)
    if n == 0:
        return None
    star = counts[outlier, "*", True] + counts[outlier, "*", False]
    return {"brier": brier / n, "log_loss": log_loss / n, "below_star": below / n,
            "below_star_gap": gap / below if below else 0.0,
            "star_right": counts[outlier, "*", True] / star if star else None}


def calibrate(set_dir: Path, threads: int) -> Counter:
    """Align one set through the Python API at the alphabet's preset and tally its residues."""
    import papara_py

    data = ba.Data.from_dir(set_dir)
    with tempfile.TemporaryDirectory() as scratch, \
            papara_py.align(str(data.tree), str(data.alignment), str(data.reads),
                            output=str(Path(scratch) / "run.h5"), threads=threads, device="cpu") as run:
        return tally(run, data.truth)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", type=Path, help="data set folders (tree, alignment, reads, truth)")
    parser.add_argument("-j", "--threads", type=int, default=2, help="papara-py's threads (default 2)")
    args = parser.parse_args(argv)
    counts: Counter = Counter()
    for set_dir in args.sets:
        counts += calibrate(set_dir, args.threads)
    for outlier, title in ((False, "reads that fit"), (True, "outliers")):
        rows = table(counts, outlier)
        if not rows or rows[-1][0] != "all":
            print(f"{title}: none")
            continue
        print(f"{title} ({len(args.sets)} sets)\nPP\trange\tresidues\tright")
        for code, span, total, share in rows:
            print(f"{code}\t{span}\t{total}\t{'-' if share is None else f'{share:.4f}'}")
        score = scores(counts, outlier)
        star = "-" if score["star_right"] is None else f"{score['star_right']:.4f}"
        print(f"Brier {score['brier']:.5f}, log-loss {score['log_loss']:.5f}; codes below *: "
              f"{score['below_star']:.4f} of residues, off their midpoints by {score['below_star_gap']:.4f}; "
              f"* right {star}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
