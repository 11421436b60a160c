"""The DNA validation table of docs/accuracy.md ("Validation", DNA): papara-py's records from
evaluate.py (OUT.jsonl) against the peers run once (peers.jsonl), per suite and per set.

    python3 notebook/accuracy-2026-11/val/dna_val_table.py RECORDS.jsonl [RECORDS.jsonl ...]

(here: dna-val.jsonl beside this file, papara-py at daf38d2, evaluate.py --suite validation
--suites dna-val,dna-rep,dna-indep, split over two processes).

Sets whose peers or whose papara-py run are missing are listed as not run.
"""

import csv
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # notebook/accuracy-2026-11: sets.tsv, peers.tsv


def main(records_paths: list[str]) -> None:
    papara = {r["data"]: r["column_accuracy"] for path in records_paths for r in map(json.loads, open(path))}
    peers = {r["set"]: {"mafft": float(r["mafft"]), "hmmalign": float(r["hmmalign"])}
             for r in csv.DictReader(open(HERE / "peers.tsv"), delimiter="\t")}
    manifest = [r for r in csv.DictReader(open(HERE / "sets.tsv"), delimiter="\t")
                if r["role"] == "validation" and r["alphabet"] == "dna"]
    rows, missing = [], []
    for r in manifest:
        p = peers.get(r["set"], {})
        if r["set"] not in papara or len(p) < 2:
            missing.append(r["set"])
            continue
        better = max(p.values())
        # peers.tsv holds 6 decimals; a residue is worth more than 1e-5 here, so a tie is a margin of 0
        margin = round(papara[r["set"]] - better, 6) or 0.0  # no -0.0
        rows.append((r["suite"], r["set"], papara[r["set"]], p["mafft"], p["hmmalign"], margin,
                     r["family"]))
    print("| suite | sets | at or above the better peer | worst margin (set) | mean margin |")
    print("|---|---|---|---|---|")
    for suite in list(dict.fromkeys(r[0] for r in rows)) + ["all"]:
        group = [r for r in rows if suite in ("all", r[0])]
        worst = min(group, key=lambda r: r[5])
        print(f"| {suite} | {len(group)} | {sum(r[5] >= 0 for r in group)} | {worst[5]:+.4f} ({worst[1]}) | "
              f"{statistics.mean(r[5] for r in group):+.4f} |")
    families: dict[str, list[float]] = {}
    for r in rows:
        families.setdefault(r[6], []).append(r[5])
    print("\n| family (seeds) | sets | at or above | mean margin | SD over the seeds |\n|---|---|---|---|---|")
    for family, margins in families.items():
        if len(margins) > 1:
            print(f"| {family} | {len(margins)} | {sum(m >= 0 for m in margins)} | {statistics.mean(margins):+.4f} | "
                  f"{statistics.stdev(margins):.4f} |")
    print("\n| set | papara-py | MAFFT | hmmalign | margin |\n|---|---|---|---|---|")
    for suite, name, ours, mafft, hmm, margin, _ in rows:
        print(f"| {name} | {ours:.4f} | {mafft:.4f} | {hmm:.4f} | {margin:+.4f} |")
    print(f"\nnot run ({len(missing)}): {', '.join(missing)}")


if __name__ == "__main__":
    main(sys.argv[1:])
