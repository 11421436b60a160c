#!/usr/bin/env python3
"""The accuracy data of issue 53 in one place: the set manifest, the replicate builds, the peers
(MAFFT --addfragments, hmmalign) run once per set, and the tables.

    python3 acc.py build-replicates     # DATA/val (72 Pfam validation sets), DATA/dval (60 dense replicates)
    python3 acc.py manifest             # sets.tsv: every set, its suite, role (fit | validation), family
    python3 acc.py peers [--suite S]    # peers.jsonl (resumable): MAFFT and hmmalign on every set, once
    python3 acc.py tables               # peers.tsv (and baseline.tsv when baseline.jsonl exists)
    python3 acc.py noise                # noise.tsv: seed-to-seed SD of 0.11.0's margin per family

The study sets themselves are built by the repository's documented commands (HOWTO.md, "Rebuild");
the replicate sets exactly as `accuracy_study.py validate` builds them (`replicate_specs`), without
running papara-py at a point. The scripts come from STUDY (default: the accuracy worktree, whose
accuracy_study.py has the suites dna-val and dna-indep).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "DATA"
STUDY = Path(os.environ.get("STUDY", "/work/wt/accuracy/scripts"))
sys.path.insert(0, str(STUDY))

import accuracy_study as st  # noqa: E402
import bench_accuracy as ba  # noqa: E402

PFAM_VAL_SEEDS = (101, 102, 103, 201, 202, 203, 301, 302, 303, 304, 305, 306)
DENSE_SEEDS = (2, 3, 4, 5, 6, 7)
MANIFEST = HERE / "sets.tsv"
PEERS = HERE / "peers.jsonl"
FIELDS = ["set", "suite", "role", "family", "seed", "alphabet", "folder"]


def manifest_rows() -> list[dict]:
    """Every set of the study and its validation, in a fixed order."""
    rows = []

    def add(name, suite, role, family, seed, alphabet, folder):
        rows.append({"set": name, "suite": suite, "role": role, "family": family, "seed": seed,
                     "alphabet": alphabet, "folder": str(folder)})

    for name, spec in st.SETS.items():
        add(name, "dna-study", "fit", name, spec[5], "dna", DATA / "sets" / name)
    for name, (base, seed) in st.DNA_VALIDATION.items():
        add(name, "dna-val", "validation", base, seed, "dna", DATA / "sets" / name)
    for name, spec in st.DNA_REP_SETS.items():
        add(name, "dna-rep", "validation", name.rsplit("-", 1)[0][4:], spec[5], "dna", DATA / "sets" / name)
    for name, spec in st.INDEP_DNA_SETS.items():
        family = name.rsplit("-s", 1)[0] if name.rsplit("-s", 1)[-1].isdigit() else name
        add(name, "dna-indep", "validation", family, spec[5], "dna", DATA / "sets" / name)
    for name, spec in st.PROTEIN_SETS.items():
        if "-ml" in name:
            continue
        add(name, "protein-study", "fit", name, spec[5], "protein", DATA / "sets" / name)
    for name, spec in st.PROTEIN_DENSE_SETS.items():
        add(name, "dense-study", "fit", name, spec[5], "protein", DATA / "sets" / name)
    for name, spec in st.PROTEIN_SETS.items():
        if "-ml" in name:
            add(name, "protein-ml", "validation", name, spec[5], "protein", DATA / "sets" / name)
    for name, (row, folder, spec) in st.replicate_specs(DATA, PFAM_VAL_SEEDS, dense=False).items():
        add(name, "pfam-val", "validation", row.replace(" | ", "-"), spec[5], "protein", folder)
    for name, (row, folder, spec) in st.replicate_specs(DATA, DENSE_SEEDS, dense=True).items():
        add(name, "dense-rep", "validation", row, spec[5], "protein", folder)
    for name, spec in st.PROTEIN_SIM_SETS.items():
        add(name, "lg" if name.startswith("lg-") else "poisson", "validation", name, spec[5], "protein",
            DATA / "sets" / name)
    return rows


def read_manifest(path: Path = MANIFEST) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def build_replicates() -> None:
    """The 72 Pfam validation sets and the 60 dense replicates, as `validate` builds them."""
    for dense, seeds in ((False, PFAM_VAL_SEEDS), (True, DENSE_SEEDS)):
        for name, (_, d, (tree, alignment, prune, reads, model, seed)) in st.replicate_specs(DATA, seeds, dense).items():
            if not (d / "truth.tsv").exists():
                ba.leave_taxa_out(tree, alignment, d, prune=prune, n_reads=reads, model=model, seed=seed,
                                  alphabet="protein")
            print(name, d, flush=True)


def done(path: Path) -> dict[tuple[str, str], dict]:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            out[r["data"], r["tool"]] = r
    return out


def peers(suites: list[str] | None, threads: int) -> None:
    """MAFFT and hmmalign on every set of the manifest (or of `suites`) not yet in peers.jsonl."""
    have = done(PEERS)
    rows = read_manifest()
    if suites:  # in the order given
        rows = [r for s in suites for r in rows if r["suite"] == s]
    t0 = time.time()
    for k, row in enumerate(rows, 1):
        data = ba.Data.from_dir(Path(row["folder"]), row["set"], row["alphabet"])
        for tool in ("mafft", "hmmalign"):
            if (row["set"], tool) in have:
                continue
            r = ba.bench(data, [tool], None, threads)[tool]
            with open(PEERS, "a") as handle:
                handle.write(json.dumps({"data": row["set"], "tool": tool} | r) + "\n")
            print(f"{k}/{len(rows)} {row['set']} {tool} {r['column_accuracy']:.4f} {r['wall_s']:.1f}s "
                  f"({time.time() - t0:.0f}s)", flush=True)


def tables() -> None:
    rows = read_manifest()
    have = done(PEERS)
    base = done(HERE / "baseline.jsonl")
    with open(HERE / "peers.tsv", "w") as out:
        out.write("set\tsuite\trole\tfamily\tseed\tresidues\tmafft\thmmalign\tbetter_of\tbetter_peer\tmafft_s\thmmalign_s\n")
        for r in rows:
            m, h = have.get((r["set"], "mafft")), have.get((r["set"], "hmmalign"))
            if not (m and h):
                continue
            best = max(m["column_accuracy"], h["column_accuracy"])
            peer = "mafft" if m["column_accuracy"] >= h["column_accuracy"] else "hmmalign"
            out.write(f"{r['set']}\t{r['suite']}\t{r['role']}\t{r['family']}\t{r['seed']}\t{m['residues']}\t"
                      f"{m['column_accuracy']:.6f}\t{h['column_accuracy']:.6f}\t{best:.6f}\t{peer}\t"
                      f"{m['wall_s']:.1f}\t{h['wall_s']:.1f}\n")
    if not base:
        return
    with open(HERE / "baseline.tsv", "w") as out:
        out.write("set\tsuite\trole\tfamily\tseed\tresidues\tpapara_0.11.0\tmafft\thmmalign\tbetter_of\tmargin\t"
                  "edge_accuracy\tpapara_s\n")
        for r in rows:
            m, h, p = (have.get((r["set"], "mafft")), have.get((r["set"], "hmmalign")),
                       base.get((r["set"], "papara-inproc")))
            if not (m and h and p):
                continue
            best = max(m["column_accuracy"], h["column_accuracy"])
            edge = p.get("edge_accuracy")
            out.write(f"{r['set']}\t{r['suite']}\t{r['role']}\t{r['family']}\t{r['seed']}\t{p['residues']}\t"
                      f"{p['column_accuracy']:.6f}\t{m['column_accuracy']:.6f}\t{h['column_accuracy']:.6f}\t"
                      f"{best:.6f}\t{p['column_accuracy'] - best:+.6f}\t"
                      f"{'' if edge is None else f'{edge:.4f}'}\t{p['wall_s']:.1f}\n")


def noise() -> None:
    """noise.tsv: per family with at least three seeds (the study set's seed among them), 0.11.0's
    margin over the better peer: mean, SD over the seeds, and the SDs of papara-py and of the better
    peer alone; then the SD pooled over the families of each kind (DNA, dense, Pfam)."""
    import statistics
    rows = read_manifest()
    have, base = done(PEERS), done(HERE / "baseline.jsonl")
    fams: dict[str, list[tuple[float, float]]] = {}
    kind: dict[str, str] = {}
    for r in rows:
        m, h, p = have.get((r["set"], "mafft")), have.get((r["set"], "hmmalign")), base.get((r["set"], "papara-inproc"))
        if not (m and h and p):
            continue
        best = max(m["column_accuracy"], h["column_accuracy"])
        fams.setdefault(r["family"], []).append((p["column_accuracy"], best))
        kind.setdefault(r["family"], r["suite"])
    out = []
    for f, v in fams.items():
        if len(v) < 3:
            continue
        margins = [a - b for a, b in v]
        out.append((f, kind[f], len(v), statistics.mean(margins), statistics.stdev(margins),
                    statistics.stdev(a for a, _ in v), statistics.stdev(b for _, b in v), min(margins),
                    sum(x >= 0 for x in margins)))
    with open(HERE / "noise.tsv", "w") as handle:
        handle.write("family\tsuite\tseeds\tmean_margin\tsd_margin\tsd_papara\tsd_better_peer\tworst_margin\tat_or_above\n")
        for o in out:
            handle.write("\t".join([o[0], o[1], str(o[2])] + [f"{x:.5f}" for x in o[3:8]] + [str(o[8])]) + "\n")
    groups: dict[str, list] = {}
    for o in out:
        g = "dna" if o[1].startswith("dna") else "dense" if o[1].startswith("dense") or o[0].startswith("psim") else "pfam"
        groups.setdefault(g, []).append(o)
    for g, os_ in groups.items():
        pooled = (sum((o[2] - 1) * o[4] ** 2 for o in os_) / sum(o[2] - 1 for o in os_)) ** 0.5
        print(f"{g}: {len(os_)} families, pooled SD of the margin {pooled:.4f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["build-replicates", "manifest", "peers", "tables", "noise"])
    p.add_argument("--suite", help="peers: only these suites (comma-separated)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    if args.what == "build-replicates":
        build_replicates()
    elif args.what == "manifest":
        rows = manifest_rows()
        with open(MANIFEST, "w", newline="") as handle:
            w = csv.DictWriter(handle, FIELDS, delimiter="\t", lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        from collections import Counter
        print(len(rows), "sets:", dict(Counter((r["suite"], r["role"]) for r in rows)))
    elif args.what == "peers":
        peers(args.suite.split(",") if args.suite else None, args.threads)
    elif args.what == "tables":
        tables()
    elif args.what == "noise":
        noise()
    return 0


if __name__ == "__main__":
    sys.exit(main())
