"""Prototype (measurement only, not the model): protein near states widened by each column's
family residues, the amino acids that make up at least T of the column's residues in the
reference alignment (what a profile HMM pools over the whole family, where Eq. 1 sees one
branch's state sets).

    python3 scripts/proto_family.py --data DATA --set NAME [--threshold T] [--mode near|match]

`near`: a family residue outside the edge's set costs near_mismatch, as a similar one does
(near_i(e) = similar(e) | (F_i & ~states(e))); `match`: family residues join every edge's state
set (free matches). Without --threshold the production model runs (the baseline). NAME is a set
of the protein study (DATA/sets/NAME, `accuracy_study.py`) or a validation set (`val/NAME`).
Prints one JSON line (column and edge accuracy). Each run must be its own process with a fresh
NUMBA_CACHE_DIR: F is compiled into the patched numba functions as a constant, e.g.
    NUMBA_CACHE_DIR=$(mktemp -d) python3 scripts/proto_family.py --data /work/pdata --set fn3 --threshold 0.1
Findings: docs/ACCURACY.md, "Column family residues for protein (prototype)".
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

from papara_py.phylo.encoding import PROTEIN, near_states_of

MASK = np.uint32(PROTEIN.state_mask)


def column_family(rows: list[str], threshold: float) -> np.ndarray:
    """[m] state sets: per column, the unambiguous amino acids that make up >= threshold of its
    residues (at least one occurrence)."""
    family = np.zeros(len(rows[0]), np.uint32)
    for i in range(family.size):
        column = [row[i].upper() for row in rows if row[i] not in "-."]
        for letter, count in collections.Counter(column).items():
            if letter not in "BZJX" and count >= max(1, threshold * len(column)):
                family[i] |= PROTEIN.read_code[ord(letter)]
    return family


def patch_near(family: np.ndarray) -> None:
    """Near states with family residues in the CPU kernel, the host traceback and the reference
    scorer (the run's two scorers must agree: the pipeline checks each read's score)."""
    import papara_py.pairwise.reference_scorer as reference
    from papara_py.engine import cpu
    from papara_py.pairwise import traceback

    @njit(cache=True, nogil=True)
    def column_near_family(profile):
        near = np.empty_like(profile)
        for i in range(profile.shape[0]):
            near[i] = near_states_of(profile[i]) | (family[i] & ~(profile[i] & MASK))
        return near

    reference.column_near_states = traceback.column_near_states = column_near_family
    lanes_near = cpu.near_states
    cpu.near_states = lambda lanes, alphabet=None: lanes_near(lanes) | (family[:lanes.shape[0], None] & ~(lanes & MASK))


def patch_match(family: np.ndarray) -> None:
    """Family residues in every edge's state set (ProfileBuilder.profiles)."""
    from papara_py.phylo.profiles import ProfileBuilder

    profiles = ProfileBuilder.profiles
    ProfileBuilder.profiles = lambda self, edge_ids: profiles(self, edge_ids) | family[None, :]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--set", required=True)
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--mode", choices=["near", "match"], default="near")
    parser.add_argument("--params", default="5,6,8,2,12,3", help="the six penalties (default: the protein preset)")
    args = parser.parse_args()
    folder = args.data / args.set if "/" in args.set else args.data / "sets" / args.set
    data = ba.Data.from_dir(folder, args.set, "protein")
    if args.threshold is not None:
        family = column_family(list(ba.read_alignment(data.alignment).values()), args.threshold)
        (patch_near if args.mode == "near" else patch_match)(family)
    params = tuple(int(x) for x in args.params.split(","))
    placements, wall = ba.run_papara_inprocess(data, Path(tempfile.mkdtemp()), params, 2)
    result = ba.score(placements, data.truth)
    print(json.dumps({"set": args.set, "threshold": args.threshold, "mode": args.mode, "params": params,
                      "column_accuracy": round(result["column_accuracy"], 4),
                      "edge_accuracy": result["edge_accuracy"], "wall_s": round(wall, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
