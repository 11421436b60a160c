"""Measurement only: the reference profile's own alignment of each read against the choice's
(docs/ACCURACY.md, "The reference profile's own alignment"): the oracle of the two, and gates.

    python3 scripts/proto_profile_dp.py DATA/sets/BBS30013 DATA/sets/fn3 ... [--gates 12/8,1e9/8] [--window 10]

papara-py runs once per folder with its default (`protein` preset), in this process; hooks
around `run/stages.decode_batch` and `model/decode.profile_preferred` see each batch's reads as
production hands them to its profile step (model/profile_alignment.py), which runs unchanged.
For every read: the alignment the choice kept (the run's model's or the second model's), and the
profile's own (`profile_dp` over `column_scores`, the rows weighted along the choice's alignment
as the choice weighs them; within `--window` columns of it, 0: every column), its profile score's
gain over the choice's and its cost under the run's model on the best edge (`model_cost`) over
that edge's score.

Prints one JSON line per set: column accuracy of the choice's alignments, of the profile's, of
the oracle of the two (each read's better by the truth: what a perfect choice between them would
reach), and of each gate KAPPA/DELTA: the profile's alignment wherever its model cost is within
KAPPA of the best edge's score and its profile score beats the choice's by more than DELTA
(production: COST_MARGIN/SCORE_MARGIN, WINDOW).

Each folder is a leave-taxa-out set of `bench_accuracy.py` / `accuracy_study.py` (protein).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

from papara_py.model import decode
from papara_py.model.choice import background, profile_score, row_weights
from papara_py.model.profile_alignment import (
    WINDOW,
    column_scores,
    model_cost,
    profile_dp,
)
from papara_py.phylo.encoding import PROTEIN
from papara_py.phylo.residues import residue_index_table
from papara_py.run import stages


def weights_along(reference: np.ndarray, residues: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """The reference rows' weights for a read (residue indices) aligned in `columns` (-1:
    inserted), as the choice weighs them (model/choice.py)."""
    row = np.full(reference.shape[0], ord("-"), np.uint8)
    letters = np.frombuffer((PROTEIN.letters + "X").encode(), np.uint8)  # X: an ambiguity code
    placed = columns >= 0
    row[columns[placed]] = letters[np.minimum(residues[placed], PROTEIN.n_states)]
    weights = np.empty(reference.shape[1])
    row_weights(row, residue_index_table(PROTEIN), reference, ord("-"), weights)
    return weights


def profile_alignment(reference: np.ndarray, residues: np.ndarray, weights: np.ndarray, around: np.ndarray | None = None,
                      window: int = 0) -> tuple[float, np.ndarray]:
    """The read `residues` aligned to the reference's profile under row `weights`: (its profile
    score, its columns), by production's programme (model/profile_alignment.py). With a
    `window`, only the columns from `window` before the first placed column of the alignment
    `around` to `window` after its last (production's WINDOW); 0: every column."""
    lo, hi = 0, reference.shape[0]
    if window and around is not None and np.any(around >= 0):
        placed = around[around >= 0]
        lo, hi = max(0, int(placed[0]) - window), min(hi, int(placed[-1]) + window + 1)
    emit, log_gap = np.empty((residues.size, hi - lo)), np.empty(hi - lo)
    column_scores(reference, lo, hi, weights, background(PROTEIN), residues, emit, log_gap)
    columns = np.empty(residues.size, np.int64)
    score = profile_dp(emit, log_gap, columns)
    return score, np.where(columns >= 0, columns + lo, -1)


def right(columns: np.ndarray, truth: np.ndarray) -> int:
    """Residues of a read in their true column."""
    return int(np.sum((columns == truth) & (truth >= 0)))


class Capture:
    """Per read name, what the hooks saw: the choice's alignment (production's before the profile's
    own may replace it), the profile's alignment, its profile score's gain over the choice's, and
    its model cost over the best edge's score. Production's own step runs unchanged."""

    def __init__(self, window: int = 0) -> None:
        self.reads: dict[str, tuple[np.ndarray, np.ndarray, float, int]] = {}
        self.window = window
        self._names = threading.local()
        self._batch, self._preferred = stages.decode_batch, decode.profile_preferred

    def __enter__(self) -> Capture:  # noqa: PYI034 - a plain class, not meant to be subclassed
        stages.decode_batch, decode.profile_preferred = self._named_batch, self._seen
        return self

    def __exit__(self, *exc) -> None:
        stages.decode_batch, decode.profile_preferred = self._batch, self._preferred

    def _named_batch(self, reads, indices, *args, **options):
        self._names.names = [reads.names[i] for i in indices.tolist()]
        return self._batch(reads, indices, *args, **options)

    def _seen(self, reference, residues, codes, offsets, chosen, rows, alphabet, profiles, near, edge_slot, params,
              costs, best, threads=1):
        p, scratch = params.as_array(), np.empty(PROTEIN.n_states)
        for q, name in enumerate(self._names.names):
            cut = slice(offsets[q], offsets[q + 1])
            weights = weights_along(reference, residues[cut], chosen[cut])
            score, theirs = profile_alignment(reference, residues[cut], weights, chosen[cut], self.window)
            gain = score - profile_score(reference, residues[cut], chosen[cut], weights, background(PROTEIN), scratch)
            over = int(model_cost(codes[cut], profiles[edge_slot[q]], near[edge_slot[q]], p, costs, theirs)) \
                - int(best[q])
            self.reads[name] = (chosen[cut].copy(), theirs, gain, over)
        return self._preferred(reference, residues, codes, offsets, chosen, rows, alphabet, profiles, near,
                               edge_slot, params, costs, best, threads)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--gates", default="12/8,1e9/8",
                        help="KAPPA/DELTA,...: the profile's alignment where its model cost is within KAPPA of the "
                             "best edge's score and its profile score beats the choice's by more than DELTA")
    parser.add_argument("--window", type=int, default=WINDOW,
                        help="align within this many columns around the choice's alignment (0: every column)")
    args = parser.parse_args(argv)
    gates = [tuple(float(x) for x in gate.split("/")) for gate in args.gates.split(",")]
    for folder in args.folders:
        data = ba.Data.from_dir(folder, folder.name, "protein")
        with Capture(args.window) as capture, tempfile.TemporaryDirectory() as work:
            placements, _ = ba.run_papara_inprocess(data, Path(work), None, 1)
        total = sum(int(np.sum(np.asarray(truth) >= 0)) for truth, _ in data.truth.values())
        counts = {"choice": 0, "profile": 0, "oracle": 0, **{f"gate {k:g}/{d:g}": 0 for k, d in gates}}
        for name, (truth, _) in data.truth.items():
            if name not in placements:
                continue
            ours, theirs, gain, over = capture.reads[name]
            a, b = right(ours, np.asarray(truth)), right(theirs, np.asarray(truth))
            counts["choice"] += a
            counts["profile"] += b
            counts["oracle"] += max(a, b)
            for kappa, delta in gates:
                counts[f"gate {kappa:g}/{delta:g}"] += b if over <= kappa and gain > delta else a
        print(json.dumps({"set": folder.name, **{k: round(v / total, 6) for k, v in counts.items()}}), flush=True)


if __name__ == "__main__":
    main()
