"""Coordinate search of the protein penalties on the fit sets (protein-study + dense-study), maximin."""
import csv, subprocess, sys, json, os
R = sys.argv[1]; T = sys.argv[2]; out = "/work/plan/fit2"
start = [3, 6, 5, 3, 16, 2, 1.0]
steps = {0: [2, 4], 1: [4, 8], 2: [4, 6], 3: [2, 4], 4: [12, 20], 6: [0.5, 1.5, 2.0], 5: [1, 3]}
seen = {}
def key(p): return ",".join(str(x) for x in p) + "," + T
def evaluate(p):
    k = key(p)
    if k in seen: return seen[k]
    f = f"{out}/p-{k.replace(',', '_')}.tsv"
    if not os.path.exists(f):
        subprocess.run(["nice", "-n", "5", "/work/venv/bin/python", "evaluate.py", "--repo", R, "--suite", "fit",
                        "--suites", "protein-study,dense-study", "--point", k, "--procs", "1", "--threads", "2",
                        "--out", f], cwd="/work/data/acc", check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = list(csv.DictReader(open(f), delimiter="\t"))
    m = [float(r["margin"]) for r in rows]
    score = (min(m), sum(x >= 0 for x in m), sum(m) / len(m))
    seen[k] = score
    print(k, "worst %.4f ge %d mean %.4f" % score, flush=True)
    return score
best = list(start); bs = evaluate(best)
improved = True
while improved:
    improved = False
    for i, vals in steps.items():
        for v in vals:
            p = list(best); p[i] = v
            s = evaluate(p)
            if s > bs:
                best, bs, improved = p, s, True
        steps[i] = sorted({best[i] - (vals[1]-vals[0]) if False else x for x in vals})
    print("round best", key(best), bs, flush=True)
print("BEST", key(best), bs)
