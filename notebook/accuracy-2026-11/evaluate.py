#!/usr/bin/env python3
"""Evaluate a papara-py checkout on the fit or the validation suite (SPLIT.md) against the stored peers.

    python3 /work/data/acc/evaluate.py --repo /work/wt/X --suite fit --out X-fit.tsv
    python3 /work/data/acc/evaluate.py --repo /work/wt/X --suite validation --out X-val.tsv --procs 2
    python3 /work/data/acc/evaluate.py --repo /work/wt/X --suite validation --half test --out X-test.tsv

papara-py runs in-process through the checkout's own scripts/bench_accuracy.py (`bench(data,
["papara-inproc"], point)`, i.e. `run_papara_inprocess`: `pipeline.run` with `device="cpu"`),
with papara_py imported from --repo (it is put first on sys.path, ahead of the editable install
of /work/main). MAFFT --addfragments and hmmalign are not run again: their column accuracy per set
comes from peers.tsv (run once, acc.py peers). The 0.11.0 column comes from baseline.tsv.

--point: a parameter point as the checkout's accuracy_study.parse_point reads it (default: none,
the alphabet's preset, as a user runs it). --sets / --suites / --families narrow the run (e.g. a
quick look at one family); --procs N runs N sets at once, one thread each (fork; numba compiles
once per process), else one process with --threads.

Writes one row per set (papara, mafft, hmmalign, better peer, margin = papara - better peer,
delta = papara - 0.11.0, edge accuracy, wall seconds) to --out, and prints per suite: sets, at or
above the better peer, worst and mean margin, mean delta to 0.11.0, and wall time; per replicate
family (pfam-val, dense-rep, dna-indep, dna-val) the mean delta to 0.11.0 against the seed-to-seed
SD of the margins (noise.tsv).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_tsv(path: Path, key: str = "set") -> dict[str, dict]:
    if not path.exists():
        return {}
    with open(path) as handle:
        return {r[key]: r for r in csv.DictReader(handle, delimiter="\t")}


def in_select(r: dict) -> bool:
    """SPLIT.md's select half of the validation suite: dense-rep seeds 2-4, pfam-val seeds 101-103
    and 201-203, dna-rep."""
    seed = int(r["seed"])
    return (r["suite"] == "dense-rep" and seed in (2, 3, 4)) or \
        (r["suite"] == "pfam-val" and seed in (101, 102, 103, 201, 202, 203)) or r["suite"] == "dna-rep"


_BA = None
_POINT = None


def _init(repo: str, point) -> None:
    """Import the checkout's papara_py and bench_accuracy (each worker does it once)."""
    global _BA, _POINT
    sys.path.insert(0, str(Path(repo) / "scripts"))
    sys.path.insert(0, str(repo))
    os.environ["PYTHONPATH"] = str(repo) + os.pathsep + os.environ.get("PYTHONPATH", "")
    import bench_accuracy
    _BA, _POINT = bench_accuracy, point


def _one(task: tuple) -> dict:
    name, folder, alphabet, threads = task
    data = _BA.Data.from_dir(Path(folder), name, alphabet)
    t0 = time.perf_counter()
    r = _BA.bench(data, ["papara-inproc"], _POINT, threads)["papara-inproc"]
    r["elapsed_s"] = time.perf_counter() - t0
    return {"data": name, "tool": "papara-inproc"} | r


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", required=True, help="a papara-py checkout (its papara_py and scripts/ are used)")
    p.add_argument("--suite", choices=["fit", "validation", "all"], required=True, help="SPLIT.md's roles")
    p.add_argument("--out", required=True, help="per-set TSV")
    p.add_argument("--point", help="a parameter point (the checkout's accuracy_study.parse_point); default: preset")
    p.add_argument("--half", choices=["select", "test"],
                   help="validation only: SPLIT.md's select half (component decisions) or test half (the final report)")
    p.add_argument("--suites", help="only these suites (sets.tsv's suite column, comma-separated)")
    p.add_argument("--families", help="only these families (comma-separated)")
    p.add_argument("--sets", help="only these sets (comma-separated)")
    p.add_argument("--procs", type=int, default=2, help="sets at once, one thread each (1: one process)")
    p.add_argument("--threads", type=int, default=2, help="threads with --procs 1")
    p.add_argument("--jsonl", help="also append the raw records here (default: OUT with .jsonl)")
    args = p.parse_args()

    repo = str(Path(args.repo).resolve())
    point = None
    if args.point:
        sys.path.insert(0, str(Path(repo) / "scripts"))
        sys.path.insert(0, repo)
        import accuracy_study
        point = accuracy_study.parse_point(args.point)
    manifest = list(load_tsv(HERE / "sets.tsv").values())
    peers, base, noise = load_tsv(HERE / "peers.tsv"), load_tsv(HERE / "baseline.tsv"), load_tsv(HERE / "noise.tsv", "family")
    rows = [r for r in manifest if args.suite == "all" or r["role"] == args.suite]
    if args.half:  # SPLIT.md: the validation suite's select / test halves
        rows = [r for r in rows if (in_select(r) == (args.half == "select"))]
    if args.suites:
        rows = [r for r in rows if r["suite"] in args.suites.split(",")]
    if args.families:
        rows = [r for r in rows if r["family"] in args.families.split(",")]
    if args.sets:
        rows = [r for r in rows if r["set"] in args.sets.split(",")]
    if not rows:
        raise SystemExit("no sets selected")

    threads = 1 if args.procs > 1 else args.threads
    tasks = [(r["set"], r["folder"], r["alphabet"], threads) for r in rows]
    # the largest sets first, so that two processes finish together
    size = {r["set"]: int(peers.get(r["set"], {}).get("residues", 0) or 0) *
            (3 if r["alphabet"] == "dna" else 1) for r in rows}
    tasks.sort(key=lambda t: -size[t[0]])
    jsonl = Path(args.jsonl or Path(args.out).with_suffix(".jsonl"))
    t0 = time.time()
    results: dict[str, dict] = {}
    if args.procs > 1:
        pool = multiprocessing.get_context("fork").Pool(args.procs, _init, (repo, point))
        records = pool.imap_unordered(_one, tasks)
    else:
        _init(repo, point)
        records = map(_one, tasks)
    for k, rec in enumerate(records, 1):
        results[rec["data"]] = rec
        with open(jsonl, "a") as handle:
            handle.write(json.dumps(rec | {"repo": repo, "point": list(point) if point else None}) + "\n")
        print(f"{k}/{len(tasks)} {rec['data']} {rec['column_accuracy']:.4f} {rec['elapsed_s']:.1f}s "
              f"({time.time() - t0:.0f}s)", file=sys.stderr, flush=True)
    if args.procs > 1:
        pool.close()
        pool.join()
    wall = time.time() - t0

    out_rows = []
    for r in rows:
        rec, pe, b = results[r["set"]], peers.get(r["set"]), base.get(r["set"])
        mafft = float(pe["mafft"]) if pe else math.nan
        hmm = float(pe["hmmalign"]) if pe else math.nan
        better = max(mafft, hmm)
        old = float(b["papara_0.11.0"]) if b else math.nan
        out_rows.append({"set": r["set"], "suite": r["suite"], "role": r["role"], "family": r["family"],
                         "seed": r["seed"], "papara": rec["column_accuracy"], "mafft": mafft, "hmmalign": hmm,
                         "better_peer": better, "margin": rec["column_accuracy"] - better, "papara_0.11.0": old,
                         "delta_0.11.0": rec["column_accuracy"] - old, "edge_accuracy": rec.get("edge_accuracy"),
                         "residues": rec["residues"], "wall_s": rec["elapsed_s"]})
    with open(args.out, "w") as handle:
        cols = list(out_rows[0])
        handle.write("\t".join(cols) + "\n")
        for o in out_rows:
            handle.write("\t".join(f"{v:.6f}" if isinstance(v, float) and c not in ("wall_s",) else
                                   f"{v:.1f}" if c == "wall_s" else "" if v is None else str(v)
                                   for c, v in o.items()) + "\n")
    summarise(out_rows, noise, wall, repo, point)
    return 0


def summarise(out_rows: list[dict], noise: dict, wall: float, repo: str, point) -> None:
    import statistics
    print(f"\n{repo}  point={point or 'preset'}  {len(out_rows)} sets  wall {wall:.0f}s")
    print("| suite | sets | >= better peer | worst margin (set) | mean margin | mean delta to 0.11.0 | "
          "up / down vs 0.11.0 | papara s |")
    print("|---|---|---|---|---|---|---|---|")
    suites = dict.fromkeys(o["suite"] for o in out_rows)
    for s in list(suites) + ["ALL"]:
        group = [o for o in out_rows if s == "ALL" or o["suite"] == s]
        worst = min(group, key=lambda o: o["margin"])
        deltas = [o["delta_0.11.0"] for o in group if not math.isnan(o["delta_0.11.0"])]
        print(f"| {s} | {len(group)} | {sum(o['margin'] >= 0 for o in group)} | {worst['margin']:+.4f} ({worst['set']}) | "
              f"{statistics.mean(o['margin'] for o in group):+.4f} | "
              f"{statistics.mean(deltas) if deltas else math.nan:+.4f} | "
              f"{sum(d > 0 for d in deltas)} / {sum(d < 0 for d in deltas)} | {sum(o['wall_s'] for o in group):.0f} |")
    fams: dict[str, list[dict]] = {}
    for o in out_rows:
        fams.setdefault(o["family"], []).append(o)
    multi = {f: g for f, g in fams.items() if len(g) > 1}
    if multi:
        print("\nreplicate families (mean over seeds; noise: SD of 0.11.0's margin over the seeds, noise.tsv)")
        print("| family | suite | seeds | mean margin | sets >= peer | mean delta to 0.11.0 | SD (0.11.0 margin) | delta / SE |")
        print("|---|---|---|---|---|---|---|---|")
        for f, g in multi.items():
            mm = statistics.mean(o["margin"] for o in g)
            dd = [o["delta_0.11.0"] for o in g if not math.isnan(o["delta_0.11.0"])]
            sd = float(noise[f]["sd_margin"]) if f in noise else math.nan
            mean_d = statistics.mean(dd) if dd else math.nan
            z = mean_d / (sd / math.sqrt(len(g))) if sd and not math.isnan(sd) and sd > 0 else math.nan
            print(f"| {f} | {g[0]['suite']} | {len(g)} | {mm:+.4f} | {sum(o['margin'] >= 0 for o in g)}/{len(g)} | "
                  f"{mean_d:+.4f} | {sd:.4f} | {z:+.1f} |")


if __name__ == "__main__":
    sys.exit(main())
