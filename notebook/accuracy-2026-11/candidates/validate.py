"""A papara-py checkout on the 32 validation sets that build_validation.py made, against their
cached peers (notebook/accuracy-2026-11/reference-score.md reports them, once).

    python3 notebook/accuracy-2026-11/candidates/validate.py REPO POINT|preset SETS OUT.tsv

REPO: the checkout whose papara_py and scripts/bench_accuracy.py run (evaluate.py's --repo; e.g.
papara-py 0.11.0's tree for the parity question). POINT: a parameter point as the checkout's
accuracy_study.parse_point reads it, or `preset`. SETS: build_validation.py's OUT. Two sets at a
time, one thread each (evaluate.py's workers). Writes one row per set (papara-py, MAFFT, hmmalign,
the margin over the better peer) and prints the sets at or above the better peer, the worst and
the mean margin.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import evaluate  # noqa: E402


def main() -> int:
    repo, point_text, sets, out = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    sys.path.insert(0, str(Path(repo) / "scripts"))
    import accuracy_study

    point = None if point_text == "preset" else accuracy_study.parse_point(point_text)
    tasks = [(d.name, str(d), "protein", 1) for d in sorted(sets.iterdir()) if d.is_dir()]
    with multiprocessing.get_context("fork").Pool(2, evaluate._init, (repo, point)) as pool:
        records = pool.map(evaluate._one, tasks, chunksize=1)
    rows = []
    for record in records:
        peers = {tool: json.loads((sets / f"{record['data']}.{tool}.json").read_text())["column_accuracy"]
                 for tool in ("mafft", "hmmalign")}
        rows.append({"set": record["data"], "papara": record["column_accuracy"], **peers,
                     "margin": record["column_accuracy"] - max(peers.values())})
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    margins = [row["margin"] for row in rows]
    print(f"{len(rows)} sets, at or above the better peer {sum(m >= 0 for m in margins)}, "
          f"worst {min(margins):+.4f}, mean {sum(margins) / len(margins):+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
