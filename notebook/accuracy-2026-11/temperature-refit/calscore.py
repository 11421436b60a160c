"""Scores of the PP codes from scripts/pp_calibration.py's output (its "reads that fit" table):
the Brier score and the log-loss with each code standing for the middle of its range (`*` for
0.975, 0 for 0.025), the residue-weighted mean |share right - middle| over the codes below `*`
(ECE), that share, and how often `*` is right.

    python3 notebook/accuracy-2026-11/temperature-refit/calscore.py PP_OUTPUT.txt [...]
"""
import math, sys
MID = {**{str(k): k / 10 for k in range(10)}, "*": 0.975}
MID["0"] = 0.025
for path in sys.argv[1:]:
    rows = []
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("reads that fit"))
    for l in lines[start + 2:]:
        f = l.split()
        if f[0] == "all":
            acc = float(f[-1]); break
        if f[2] == "0":
            continue
        rows.append((f[0], int(f[2]), float(f[3])))
    n = sum(r[1] for r in rows)
    brier = sum(c * (r * (1 - MID[k]) ** 2 + (1 - r) * MID[k] ** 2) for k, c, r in rows) / n
    logl = -sum(c * (r * math.log(MID[k]) + (1 - r) * math.log(1 - MID[k])) for k, c, r in rows) / n
    below = [(k, c, r) for k, c, r in rows if k != "*"]
    nb = sum(c for _, c, _ in below)
    ece = sum(c * abs(r - MID[k]) for k, c, r in below) / nb
    star = next(r for k, c, r in rows if k == "*")
    print(f"{path}: accuracy {acc:.4f} brier {brier:.5f} logloss {logl:.5f} below-* share {nb/n:.4f} "
          f"ECE(below *) {ece:.4f} * right {star:.4f}")
