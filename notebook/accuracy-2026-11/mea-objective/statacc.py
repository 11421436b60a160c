"""Column accuracy beside what happens to the residues the truth inserts (true column -1).

Column accuracy (docs/accuracy.md) counts only the residues with a true column, so it cannot see
a residue the truth inserts (an inserted error base, a residue of a column only pruned taxa had)
being put in a column. scripts/bench_accuracy.score also gives the *state accuracy*, which counts
every residue (one the truth inserts right only when left inserted), and how many of the truth's
inserted residues went into a column (`ins_placed`); this writes them per set.

    statacc.py REPO OUT.tsv --suites protein-study,dense-study      # fit sets (sets.tsv)
    statacc.py REPO OUT.tsv --folder pval14 --alphabet protein      # every set folder in a folder

papara-py runs in-process from REPO (as evaluate.py runs it: `run_papara_inprocess`, CPU, the
alphabet's preset or --point m,c,o,e,i,near,weight,T), two sets at once.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

SETS = Path("/work/data/acc/sets.tsv")


def one(task: tuple) -> dict:
    repo, name, folder, alphabet, point = task
    sys.path[:0] = [str(Path(repo) / "scripts"), repo]
    import bench_accuracy as ba

    data = ba.Data.from_dir(Path(folder), name, alphabet)
    with tempfile.TemporaryDirectory() as work:
        placements, _ = ba.run_papara_inprocess(data, Path(work), point, 1)
    got = ba.score(placements, data.truth)  # bench_accuracy's column and state accuracy
    return dict(set=name, col_right=round(got["column_accuracy"] * got["residues"]), col_total=got["residues"],
                ins_total=got["inserted"], ins_placed=got["inserted_placed"], col_acc=got["column_accuracy"],
                state_acc=got["state_accuracy"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo")
    parser.add_argument("out", type=Path)
    parser.add_argument("--suites", help="comma-separated suites of sets.tsv's fit sets")
    parser.add_argument("--folder", type=Path, help="every set folder (one with truth.tsv) in this folder")
    parser.add_argument("--alphabet", default="protein")
    parser.add_argument("--point", help="m,c,o,e,i,near,weight,T (default: the alphabet's preset)")
    args = parser.parse_args()
    point = None if args.point is None else tuple(float(v) if "." in v else int(v) for v in args.point.split(","))
    if args.suites:
        wanted = args.suites.split(",")
        with open(SETS) as handle:
            tasks = [(args.repo, r["set"], r["folder"], r["alphabet"], point)
                     for r in csv.DictReader(handle, delimiter="\t") if r["role"] == "fit" and r["suite"] in wanted]
    else:
        tasks = [(args.repo, p.name, str(p), args.alphabet, point)
                 for p in sorted(args.folder.iterdir()) if (p / "truth.tsv").exists()]
    with Pool(2) as pool:
        rows = pool.map(one, tasks, chunksize=1)
    with open(args.out, "w") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    for r in rows:
        print(f"{r['set']:22s} column {r['col_acc']:.4f}  inserted placed {r['ins_placed']}/{r['ins_total']}"
              f"  state {r['state_acc']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
