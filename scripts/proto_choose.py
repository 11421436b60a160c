"""Measurement only: each read's alignment chosen among several penalty sets' runs by a profile
score of the reference alignment (docs/ACCURACY.md, "Choosing each read's alignment among
penalty sets").

    python3 scripts/proto_choose.py --penalties 3,6,5,3,16,2,1.0,4,2,1,10 \
        --penalties 6,12,10,6,32,4,1.75,8,4,1,10 DATA/sets/BBS30013 DATA/val/fn3-indel-101 ...

papara-py runs once per `--penalties` (ScoringParams' fields in order: mismatch, cgap, gap open,
gap extend, insertion, near mismatch, column weight, vote window, nearest bonus, band margin,
location check), in this process. Where the runs place a read differently, the alignment with the
highest `profile_score` is kept, the first run's on ties. The score asks the reference alignment,
not any run's model, so it can arbitrate between models: each placed residue scores the log-odds
of its residue in its column's composition (pseudocounts at the BLOSUM62 background) plus the
log of the column's occupancy, each deletion a fixed opening cost plus the log of the skipped
columns' gap shares, each residue outside every column a fixed cost; the rows are weighted by
exp(`--identity-weight` x their identity with the read along the first run's alignment), so the
composition is mostly that of the read's near relatives.

Each folder is a leave-taxa-out set of `bench_accuracy.py` / `accuracy_study.py` (protein). Prints
one JSON line per set: column accuracy of each run, of the choice, and of the oracle (each read's
best run by the truth: what a perfect choice would reach), and the reads the runs place
differently.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

#: The 20 amino acids, in the order of BACKGROUND.
LETTERS = "ARNDCQEGHILKMFPSTWYV"
#: BLOSUM62's background residue frequencies (Robinson & Robinson 1991, as BLAST uses them).
BACKGROUND = np.array([0.0787945, 0.0512956, 0.0448398, 0.0536265, 0.0151430, 0.0402316, 0.0670804, 0.0720837,
                       0.0262904, 0.0667758, 0.0988255, 0.0524476, 0.0218587, 0.0451637, 0.0395151, 0.0712383,
                       0.0558386, 0.0131869, 0.0302843, 0.0663845])
BACKGROUND = BACKGROUND / BACKGROUND.sum()
#: ASCII -> index in LETTERS, -1 for anything else (ambiguity codes, gaps).
LETTER_INDEX = np.full(256, -1, np.int64)
for _i, _letter in enumerate(LETTERS):
    LETTER_INDEX[ord(_letter)] = LETTER_INDEX[ord(_letter.lower())] = _i


def reference_rows(path: Path) -> np.ndarray:
    """The reference alignment's rows, uint8 [rows, columns], upper case."""
    rows = list(ba.read_alignment(path).values())
    return np.frombuffer("".join(rows).upper().encode(), np.uint8).reshape(len(rows), len(rows[0]))


def row_weights(rows: np.ndarray, read: str, columns: list[int], identity_weight: float) -> np.ndarray:
    """exp(identity_weight x (identity - best identity)) per reference row, the identity taken
    over the read's residues placed in `columns` (-1: none), scaled to sum to the row count."""
    placed = [(ord(residue.upper()), column) for residue, column in zip(read, columns) if column >= 0]
    if not placed:
        return np.ones(rows.shape[0])
    codes, where = (np.array(x) for x in zip(*placed))
    identity = (rows[:, where] == codes).mean(axis=1)
    weights = np.exp(identity_weight * (identity - identity.max()))
    return weights * rows.shape[0] / weights.sum()


def profile_score(rows: np.ndarray, weights: np.ndarray, read: str, columns: list[int], pseudocount: float = 2.0,
                  gap_open: float = 3.0, insertion: float = 6.0) -> float:
    """The read's alignment `columns` (one per residue, -1: outside every column) scored against the
    reference rows weighted by `weights` (module docstring)."""
    total = weights.sum()
    gaps = (weights[:, None] * np.isin(rows, (ord("-"), ord(".")))).sum(axis=0)
    occupancy = 1 - (gaps + 0.5) / (total + 1)
    score, previous = 0.0, None
    for residue, column in zip(read, columns):
        if column < 0:
            score -= insertion
            continue
        index = LETTER_INDEX[ord(residue)]
        if index >= 0:
            counts = (weights[:, None] * (rows[:, column, None] == np.frombuffer(LETTERS.encode(), np.uint8))).sum(0)
            share = (counts[index] + pseudocount * BACKGROUND[index]) / (counts.sum() + pseudocount)
            score += np.log(share / BACKGROUND[index])
        score += np.log(occupancy[column])
        if previous is not None and column > previous + 1:
            score += np.log(1 - occupancy[previous + 1:column]).sum() - gap_open
        previous = column
    return float(score)


def choose(rows: np.ndarray, read: str, candidates: list[list[int] | None], identity_weight: float) -> int:
    """Index of the candidate alignment kept for `read`: the first where all agree or on ties."""
    first = candidates[0]
    if all(c == first for c in candidates) or first is None:
        return 0
    weights = row_weights(rows, read, first, identity_weight)
    scores = [-np.inf if c is None else profile_score(rows, weights, read, c) for c in candidates]
    return int(np.argmax(scores))


def right(columns: list[int] | None, truth: list[int]) -> int:
    """Residues of a read in their true column."""
    return 0 if columns is None else sum(g == t for g, t in zip(columns, truth) if t >= 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--penalties", action="append", required=True,
                        help="one run's ScoringParams, comma-separated (module docstring); the first is the default")
    parser.add_argument("--identity-weight", type=float, default=10.0)
    args = parser.parse_args(argv)
    penalty_sets = [tuple(float(x) if "." in x else int(x) for x in p.split(",")) for p in args.penalties]
    for folder in args.folders:
        data = ba.Data.from_dir(folder, folder.name, "protein")
        reads = dict(ba._reads_forward(data))
        rows = reference_rows(data.alignment)
        runs = []
        for params in penalty_sets:
            with tempfile.TemporaryDirectory() as work:
                placements, _ = ba.run_papara_inprocess(data, Path(work), params, 1)
            runs.append({name: p.columns for name, p in placements.items()})
        total = sum(sum(t >= 0 for t in truth) for truth, _ in data.truth.values())
        kept = oracle = differ = 0
        for name, (truth, _) in data.truth.items():
            candidates = [run.get(name) for run in runs]
            differ += any(c != candidates[0] for c in candidates)
            kept += right(candidates[choose(rows, reads[name], candidates, args.identity_weight)], truth)
            oracle += max(right(c, truth) for c in candidates)
        each = [sum(right(run.get(name), truth) for name, (truth, _) in data.truth.items()) / total for run in runs]
        print(json.dumps({"set": folder.name, "runs": [round(a, 4) for a in each], "chosen": round(kept / total, 4),
                          "oracle": round(oracle / total, 4), "reads_differing": differ}), flush=True)


if __name__ == "__main__":
    main()
