"""Measurement only: protein column family residues (model/family.py, DESIGN.md 3) at another
share than the model's, or used another way, on one set of the protein study.

    python3 scripts/proto_family.py --data DATA --set NAME [--percent P] [--mode near|match|none]

`near` (the model): a family residue outside the edge's set costs near_mismatch, at the share P
(default: the model's, `PROTEIN.family_percent`); `match`: the family residues join every edge's
state set instead (free matches); `none`: no family residues (protein's near states by
similarity alone, the model before them). NAME is a set of the protein study
(DATA/sets/NAME, `accuracy_study.py`) or a validation set (`val/NAME`). Prints one JSON line
(column and edge accuracy). Findings: docs/ACCURACY.md, "Column family residues for protein".
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

from papara_py.model import column_terms
from papara_py.model.family import column_family
from papara_py.phylo.encoding import PROTEIN
from papara_py.phylo.profiles import ProfileBuilder


def use_family(mode: str, percent: int) -> None:
    """Make the main job's column family residues those of `percent`, in the way `mode` says."""
    def family_at(tip_rows, alphabet):
        return column_family(tip_rows, replace(alphabet, family_percent=percent)) if alphabet is PROTEIN else None

    if mode == "none":
        column_terms.column_family = lambda tip_rows, alphabet: None
    elif mode == "near":
        column_terms.column_family = family_at
    else:  # match: into every edge's state set, and no longer among the near states
        column_terms.column_family = lambda tip_rows, alphabet: None
        built = ProfileBuilder.__init__
        profiles = ProfileBuilder.profiles

        def init(self, edge_tree, tip_rows, alphabet=PROTEIN):
            built(self, edge_tree, tip_rows, alphabet)
            self.family = family_at(tip_rows, alphabet)

        ProfileBuilder.__init__ = init
        ProfileBuilder.profiles = lambda self, edge_ids: profiles(self, edge_ids) | self.family[None, :]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--set", required=True)
    parser.add_argument("--percent", type=int, default=PROTEIN.family_percent)
    parser.add_argument("--mode", choices=["near", "match", "none"], default="near")
    parser.add_argument("--params", help="the six penalties (default: the protein preset)")
    args = parser.parse_args()
    folder = args.data / args.set if "/" in args.set else args.data / "sets" / args.set
    data = ba.Data.from_dir(folder, args.set, "protein")
    use_family(args.mode, args.percent)
    params = tuple(int(x) for x in args.params.split(",")) if args.params else None
    placements, wall = ba.run_papara_inprocess(data, Path(tempfile.mkdtemp()), params, 2)
    result = ba.score(placements, data.truth)
    print(json.dumps({"set": args.set, "percent": args.percent, "mode": args.mode, "params": params or "preset",
                      "column_accuracy": round(result["column_accuracy"], 4),
                      "edge_accuracy": result["edge_accuracy"], "wall_s": round(wall, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
