"""The 32 protein validation sets built for the K question (notebook/accuracy-2026-11/candidates.md),
after its declaration, with MAFFT --addfragments and hmmalign run once on each. K = 5 won on the
fit sets, so that question did not need them; the next one (reference-score.md) used them once and
reports them.

    python3 notebook/accuracy-2026-11/candidates/build_validation.py DATA OUT

DATA: the study's reference folder (`scripts/accuracy_study.py build`'s --data). OUT gets a folder
per set (seeds 8 and 9 of the ten dense replicate families, Pfam seeds 401 and 402 of fn3, RRM and
Pkinase with both read models; `accuracy_study.replicate_specs`) and each peer's result as JSON,
kept, so a second call prints the cached numbers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402

DENSE_SEEDS, PFAM_SEEDS = (8, 9), (401, 402)


def main() -> int:
    data_root, out = Path(sys.argv[1]), Path(sys.argv[2])
    specs = {}
    for dense, seeds in ((True, DENSE_SEEDS), (False, PFAM_SEEDS)):
        specs |= {name: args for name, (_, _, args) in st.replicate_specs(data_root, seeds, dense).items()}
    for name, (tree, alignment, prune, reads, model, seed) in specs.items():
        folder = out / name
        if not (folder / "truth.tsv").exists():
            ba.leave_taxa_out(tree, alignment, folder, prune=prune, n_reads=reads, model=model, seed=seed,
                              alphabet="protein")
        data = ba.Data.from_dir(folder, name, "protein")
        for tool in ("mafft", "hmmalign"):
            record = out / f"{name}.{tool}.json"
            if not record.exists():
                record.write_text(json.dumps(ba.bench(data, [tool], None, 1)[tool]))
            print(name, tool, round(json.loads(record.read_text())["column_accuracy"], 4), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
