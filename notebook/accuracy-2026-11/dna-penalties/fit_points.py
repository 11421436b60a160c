"""papara-py at several parameter points on every set of a folder, many sets at once (the DNA
penalty refit ran it on a 16-core GPU host's CPUs: notebook/accuracy-2026-11/dna-penalties.md).

    python3 notebook/accuracy-2026-11/dna-penalties/fit_points.py SETS OUT.jsonl POINT... [--procs 16]

SETS: a folder of DNA sets (tree.nwk, ref.fasta or ref.phy, reads.fa, truth.tsv each). POINT: as
scripts/accuracy_study.parse_point reads it (m,c,o,e,i,near,weight,T). One process per (point,
set), one thread each, the slowest sets first; each result is appended to OUT.jsonl as it comes
(point, set, papara-py's column accuracy, seconds), so a run cut short keeps what it finished.
Margins are taken afterwards against the stored peers (peers.tsv, or fresh_dna.py's JSON files).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402


def run_one(job: tuple[str, Path, Path]) -> dict:
    point, folder, out = job
    data = ba.Data.from_dir(folder, folder.name, "dna")
    with tempfile.TemporaryDirectory() as tmp:
        placements, wall = ba.run_papara_inprocess(data, Path(tmp), params=st.parse_point(point), threads=1)
    record = {"point": point, "set": folder.name, "papara": ba.score(placements, data.truth)["column_accuracy"],
              "wall_s": wall}
    with open(out, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("points", nargs="+")
    parser.add_argument("--procs", type=int, default=16)
    args = parser.parse_args()
    folders = sorted((d for d in args.sets.iterdir() if d.is_dir()), key=lambda d: -(d / "ref.fasta").stat().st_size
                     if (d / "ref.fasta").exists() else 0)
    jobs = [(point, folder, args.out) for folder in folders for point in args.points]
    started = time.time()
    with multiprocessing.get_context("fork").Pool(args.procs) as pool:
        for r in pool.imap_unordered(run_one, jobs):
            print(f"{time.time() - started:6.0f}s {r['point']} {r['set']} {r['papara']:.4f} {r['wall_s']:.0f}s",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
