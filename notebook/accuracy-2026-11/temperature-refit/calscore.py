"""Scores of the PP codes in scripts/pp_calibration.py's saved output (its "reads that fit" table),
for the outputs kept in the notebook before pp_calibration.py printed them itself: the table's
counts and shares back into counts, then pp_calibration.scores (tested there), which reads each
code as the middle of its range (`*` 0.975, 0 0.025).

    python3 notebook/accuracy-2026-11/temperature-refit/calscore.py PP_OUTPUT.txt [...]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import pp_calibration  # noqa: E402


def saved_counts(path: Path) -> tuple[Counter, float]:
    """(counts as pp_calibration.tally gives them, the share right of all residues) of the reads
    that fit, from a saved table; right residues are the share times the residues, rounded."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("reads that fit"))
    counts: Counter = Counter()
    for line in lines[start + 2:]:
        code, _, residues, share = line.split("\t")[:4]
        if code == "all":
            return counts, float(share)
        if share != "-":
            right = round(float(share) * int(residues))
            counts[False, code, True], counts[False, code, False] = right, int(residues) - right
    raise ValueError(f"{path}: no 'all' row")


def main(names: list[str]) -> None:
    """One line of scores for each saved table named."""
    for name in names:
        counts, accuracy = saved_counts(Path(name))
        score = pp_calibration.scores(counts)
        print(f"{name}: accuracy {accuracy:.4f} brier {score['brier']:.5f} logloss {score['log_loss']:.5f} "
              f"below-* share {score['below_star']:.4f} ECE(below *) {score['below_star_gap']:.4f} "
              f"* right {score['star_right']:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
