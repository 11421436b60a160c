"""The 32 protein validation sets built for the K question (notebook/accuracy-2026-11/candidates.md),
after its declaration, with MAFFT --addfragments and hmmalign run once on each. K = 5 won on the
fit sets, so that question did not need them; the next one (reference-score.md) used them once and
reports them.

    python3 notebook/accuracy-2026-11/candidates/build_validation.py DATA OUT [--dense-seeds 8 9]
        [--pfam-seeds 401 402]

DATA: the study's reference folder (`scripts/accuracy_study.py build`'s --data). OUT gets a folder
per set (by default seeds 8 and 9 of the ten dense replicate families, Pfam seeds 401 and 402 of
fn3, RRM and Pkinase with both read models; `accuracy_study.replicate_specs`; seeds 10-11 and
403-404 were built for ambiguous-gaps/DECLARATION.md) and each peer's result as JSON
(points.py's peer_accuracies), kept, so a second call prints the cached numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[3] / "scripts"), str(Path(__file__).resolve().parents[1])]
import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402
from points import peer_accuracies  # noqa: E402

DENSE_SEEDS, PFAM_SEEDS = (8, 9), (401, 402)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--dense-seeds", type=int, nargs="+", default=DENSE_SEEDS)
    parser.add_argument("--pfam-seeds", type=int, nargs="+", default=PFAM_SEEDS)
    options = parser.parse_args()
    out, specs = options.out, {}
    for dense, seeds in ((True, options.dense_seeds), (False, options.pfam_seeds)):
        specs |= {name: args for name, (_, _, args) in st.replicate_specs(options.data, seeds, dense).items()}
    for name, (tree, alignment, prune, reads, model, seed) in specs.items():
        folder = out / name
        if not (folder / "truth.tsv").exists():
            ba.leave_taxa_out(tree, alignment, folder, prune=prune, n_reads=reads, model=model, seed=seed,
                              alphabet="protein")
        for tool, accuracy in peer_accuracies(ba, ba.Data.from_dir(folder, name, "protein"), out).items():
            print(name, tool, round(accuracy, 4), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
