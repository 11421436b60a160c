"""Six fresh DNA validation sets (rpsS and pyrG, seeds 111-113; built 2026-11-29 after the DNA
column-cost declaration, notebook/accuracy-2026-11/dna-column-cost.md) and papara-py's preset,
MAFFT --addfragments and hmmalign on each, once.

    python3 notebook/accuracy-2026-11/fresh/fresh_dna.py DATA OUT [--seeds 111 112 113] [--peers-only]

DATA: the study's reference folder (`scripts/accuracy_study.py build`'s --data: rpsS/ under it;
pyrG is the repository's tests/data/pyrg). OUT gets a folder per set and each peer's result as
JSON (kept, so a second call runs papara-py only). Prints one line per set: papara-py's column
accuracy, the peers', the margin over the better peer. --seeds: other seeds (121-123 were built
for the DNA penalty refit, notebook/accuracy-2026-11/dna-penalties.md); --peers-only: build the
sets and run the peers, not papara-py (sets built before a declared fit is measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402

SEEDS = (111, 112, 113)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--peers-only", action="store_true")
    args = parser.parse_args()
    data_root, out = args.data, args.out
    for base in ("rpsS", "pyrg"):
        tree, alignment, prune, reads, model, _ = st.SETS[base]
        tree, alignment = (p if p.startswith("/") else str(data_root / p) for p in (tree, alignment))
        for seed in args.seeds:
            folder = out / f"fresh-{base}-{seed}"
            if not (folder / "truth.tsv").exists():
                ba.leave_taxa_out(tree, alignment, folder, prune=prune, n_reads=reads, model=model, seed=seed)
            data = ba.Data.from_dir(folder, folder.name, "dna")
            peers = {}
            for tool in ("mafft", "hmmalign"):
                record = out / f"{folder.name}.{tool}.json"
                if not record.exists():
                    record.write_text(json.dumps(ba.bench(data, [tool], None, 1)[tool]))
                peers[tool] = json.loads(record.read_text())["column_accuracy"]
            if args.peers_only:
                print(f"{folder.name}\tmafft {peers['mafft']:.4f}\thmmalign {peers['hmmalign']:.4f}", flush=True)
                continue
            with tempfile.TemporaryDirectory() as tmp:
                placements, wall = ba.run_papara_inprocess(data, Path(tmp), params=None, threads=2)
            accuracy = ba.score(placements, data.truth)["column_accuracy"]
            print(f"{folder.name}\t{accuracy:.4f}\tmafft {peers['mafft']:.4f}\thmmalign {peers['hmmalign']:.4f}\t"
                  f"margin {accuracy - max(peers.values()):+.4f}\t{wall:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
