"""papara-py at one or more parameter points on every set of a folder, several sets at once, with
the margins over the peers stored beside the sets (the 2026-11-29 questions: candidates.md,
reference-score.md, dna-penalties.md, dna-column-cost.md).

    python3 notebook/accuracy-2026-11/points.py SETS OUT.jsonl POINT... [--alphabet dna|protein]
        [--procs 2] [--repo CHECKOUT]

SETS: a folder of sets (tree.nwk, ref.fasta or ref.phy, reads.fa, truth.tsv each), as
candidates/build_validation.py or fresh/fresh_dna.py build them. POINT: m,c,o,e,i,near,weight,T
(the checkout's accuracy_study.parse_point), or `preset`. --repo: the checkout whose papara_py and
scripts/bench_accuracy.py run (evaluate.py's --repo: a scratch branch, or papara-py 0.11.0's
tree); default this repository. One process per (point, set), one thread each, the largest
references first; each result is appended to OUT.jsonl as it comes (point, set, column accuracy,
seconds), so a run cut short keeps what it finished. Where a set has its peers' results beside it
(SETS/NAME.mafft.json and NAME.hmmalign.json), prints per point the sets at or above the better
peer and the worst and mean margin over it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

_BA = _ST = None


def _init(repo: Path) -> None:
    """Import the checkout's bench_accuracy and accuracy_study, its papara_py first on the path."""
    global _BA, _ST
    sys.path[:0] = [str(repo / "scripts"), str(repo)]
    import accuracy_study
    import bench_accuracy
    _BA, _ST = bench_accuracy, accuracy_study


def run_one(job: tuple[str, Path, str, Path]) -> dict:
    point, folder, alphabet, out = job
    data = _BA.Data.from_dir(folder, folder.name, alphabet)
    params = None if point == "preset" else _ST.parse_point(point)
    with tempfile.TemporaryDirectory() as tmp:
        placements, wall = _BA.run_papara_inprocess(data, Path(tmp), params=params, threads=1)
    record = {"point": point, "set": folder.name, "papara": _BA.score(placements, data.truth)["column_accuracy"],
              "wall_s": wall}
    with open(out, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    return record


PEERS = ("mafft", "hmmalign")


def peer_accuracies(bench_accuracy, data, sets: Path) -> dict[str, float]:
    """MAFFT's and hmmalign's column accuracy on one set of the folder `sets`, each peer run once:
    its whole record is kept as SETS/NAME.TOOL.json, so later calls (and `margins`) read it.
    `bench_accuracy`: the caller's scripts/bench_accuracy module (it runs the peers)."""
    accuracies = {}
    for tool in PEERS:
        record = sets / f"{data.name}.{tool}.json"
        if not record.exists():
            record.write_text(json.dumps(bench_accuracy.bench(data, [tool], None, 1)[tool]))
        accuracies[tool] = json.loads(record.read_text())["column_accuracy"]
    return accuracies


def margins(sets: Path, records: list[dict]) -> None:
    """Per point: sets at or above the better peer, worst and mean margin (sets with peers only)."""
    for point in dict.fromkeys(r["point"] for r in records):
        rows = []
        for r in records:
            peers = [sets / f"{r['set']}.{tool}.json" for tool in PEERS]
            if r["point"] == point and all(p.exists() for p in peers):
                rows.append(r["papara"] - max(json.loads(p.read_text())["column_accuracy"] for p in peers))
        if rows:
            print(f"{point}: {len(rows)} sets, at or above the better peer {sum(m >= 0 for m in rows)}, "
                  f"worst {min(rows):+.4f}, mean {sum(rows) / len(rows):+.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("points", nargs="+")
    parser.add_argument("--alphabet", choices=["dna", "protein"], default="dna")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    folders = sorted((d for d in args.sets.iterdir() if d.is_dir()),
                     key=lambda d: -sum(f.stat().st_size for f in d.glob("ref.*")))
    jobs = [(point, folder, args.alphabet, args.out) for folder in folders for point in args.points]
    started, records = time.time(), []
    with multiprocessing.get_context("fork").Pool(args.procs, _init, (args.repo.resolve(),)) as pool:
        for r in pool.imap_unordered(run_one, jobs):
            records.append(r)
            print(f"{time.time() - started:6.0f}s {r['point']} {r['set']} {r['papara']:.4f} {r['wall_s']:.0f}s",
                  flush=True)
    margins(args.sets, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
