"""Fresh DNA validation sets: rpsS and pyrG with new seeds (111-113 were built 2026-11-29 after the
DNA column-cost declaration, notebook/accuracy-2026-11/dna-column-cost.md; 121-123 for the DNA
penalty refit, dna-penalties.md; 131-133 for the next question), with MAFFT --addfragments and
hmmalign run once on each.

    python3 notebook/accuracy-2026-11/fresh/fresh_dna.py DATA OUT [--seeds 111 112 113] [--bases rpsS pyrg]
    python3 notebook/accuracy-2026-11/points.py OUT OUT/preset.jsonl preset    # papara-py, the margins

DATA: the study's reference folder (`scripts/accuracy_study.py build`'s --data: rpsS/ under it;
pyrG is the repository's tests/data/pyrg). OUT gets a folder per set and each peer's result as
JSON (points.py's peer_accuracies), so the sets and their peers exist before a declared question
is measured on them. --bases draws from other DNA study sets (accuracy_study.SETS: pyrg-indel,
16S-gg-454, sim-high-np, with their own error models). Prints one line per set with the peers'
column accuracy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[3] / "scripts"), str(Path(__file__).resolve().parents[1])]
import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402
from points import peer_accuracies  # noqa: E402

SEEDS = (111, 112, 113)
BASES = ("rpsS", "pyrg")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--bases", nargs="+", default=BASES, choices=sorted(st.SETS),
                        help="the study sets to draw new reads from (default: rpsS pyrg)")
    args = parser.parse_args()
    for base in args.bases:
        tree, alignment, prune, reads, model, _ = st.SETS[base]
        tree, alignment = (p if p.startswith("/") else str(args.data / p) for p in (tree, alignment))
        for seed in args.seeds:
            folder = args.out / f"fresh-{base}-{seed}"
            if not (folder / "truth.tsv").exists():
                ba.leave_taxa_out(tree, alignment, folder, prune=prune, n_reads=reads, model=model, seed=seed)
            peers = peer_accuracies(ba, ba.Data.from_dir(folder, folder.name, "dna"), args.out)
            print(f"{folder.name}\tmafft {peers['mafft']:.4f}\thmmalign {peers['hmmalign']:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
