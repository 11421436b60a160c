"""Prototype (measurement only, not the model): Eq. 1 with a second, two-piece deletion term.

A run of L deleted (non-CGAP) columns costs min(open1 + extend1 * L, open2 + extend2 * L); this
adds a state D2 beside D in the recurrence of DESIGN.md section 4:

    D1_ij = min(S(i-1, j) + OE1_i, D1(i-1, j) + E1_i)      OE1 = open + extend,   E1 = extend
    D2_ij = min(S(i-1, j) + OE2_i, D2(i-1, j) + E2_i)      OE2 = open2 + extend2, E2 = extend2
    S_ij  = min(S(i-1, j-1) + M_ij + CG_i, D1_ij, D2_ij, I_ij)       (CGAP columns: all free)

Shortcut, stated in docs/ACCURACY.md: each read is re-scored only against the K candidate edges of
an ordinary Eq. 1 run (`--candidates`), in the orientation that run chose; the best of those under
the two-piece score is traced back. Everything here runs in numba on one core.

    python3 scripts/proto_two_piece.py --sets pyrg,rpsS --base 2,3,2,1,5 --scale 4 --two 40,1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba  # noqa: E402

INF = np.int64(1) << 40
CGAP_BIT, STATE_MASK = 0x10, 0x0F  # checked against papara_py.phylo.encoding in _adapter


def _adapter():
    """Everything taken from papara_py: profiles of edges and read encoding."""
    from papara_py.io.inputs import match_tips, read_alignment, read_tree
    from papara_py.phylo import encoding
    from papara_py.phylo.profiles import ProfileBuilder
    from papara_py.phylo.tree import EdgeTree
    assert encoding.CGAP_BIT == CGAP_BIT and encoding.STATE_MASK == STATE_MASK
    return match_tips, read_alignment, read_tree, ProfileBuilder, EdgeTree, encoding


@njit(cache=True)
def align2(read, profile, p):
    """(score, columns per residue) under the two-piece model; p = (mm, cg, go, ge, ins, go2, ge2, strict).

    strict = 0: D2 opens free in a CGAP column, like D (the notes' form). strict = 1: opening D2
    costs open2 even there (extending through CGAP columns stays free)."""
    n = read.shape[0]
    m = profile.shape[0]
    w = m - n + 1
    S = np.empty((n, w), np.int64)
    D1 = np.empty((n, w), np.int64)
    D2 = np.empty((n, w), np.int64)
    for j in range(n):
        for k in range(w):
            i = j + k
            cgap = (profile[i] & CGAP_BIT) != 0
            diag = (S[j - 1, k] if j > 0 else 0) + (0 if (profile[i] & STATE_MASK & read[j]) != 0 else p[0]) \
                + (p[1] if cgap else 0)
            if k > 0:
                oe1 = 0 if cgap else p[2] + p[3]
                e1 = 0 if cgap else p[3]
                oe2 = (p[5] if p[7] else 0) if cgap else p[5] + p[6]
                e2 = 0 if cgap else p[6]
                d1 = min(S[j, k - 1] + oe1, D1[j, k - 1] + e1)
                d2 = min(S[j, k - 1] + oe2, D2[j, k - 1] + e2)
            else:
                d1 = INF
                d2 = INF
            ins = ((S[j - 1, k + 1] if j > 0 else 0) + p[4]) if k < w - 1 else INF
            D1[j, k] = d1
            D2[j, k] = d2
            S[j, k] = min(min(diag, d1), min(d2, ins))
    k = 0
    for kk in range(w):
        if S[n - 1, kk] < S[n - 1, k]:
            k = kk
    score = S[n - 1, k]
    cols = np.full(n, -1, np.int64)
    j = n - 1
    state = 0
    while j >= 0:
        i = j + k
        cgap = (profile[i] & CGAP_BIT) != 0
        if state == 1:
            state = 0 if D1[j, k] == S[j, k - 1] + (0 if cgap else p[2] + p[3]) else 1
            k -= 1
            continue
        if state == 2:
            state = 0 if D2[j, k] == S[j, k - 1] + ((p[5] if p[7] else 0) if cgap else p[5] + p[6]) else 2
            k -= 1
            continue
        diag = (S[j - 1, k] if j > 0 else 0) + (0 if (profile[i] & STATE_MASK & read[j]) != 0 else p[0]) \
            + (p[1] if cgap else 0)
        if S[j, k] == diag:
            cols[j] = i
            j -= 1
        elif S[j, k] == D1[j, k]:
            state = 1
        elif S[j, k] == D2[j, k]:
            state = 2
        else:
            j -= 1
            k += 1
    return score, cols


@njit(cache=True)
def score2(read, profile, p):
    n = read.shape[0]
    m = profile.shape[0]
    w = m - n + 1
    prev = np.zeros(w + 1, np.int64)
    cur = np.empty(w + 1, np.int64)
    for j in range(n):
        d1 = INF
        d2 = INF
        for k in range(w):
            i = j + k
            cgap = (profile[i] & CGAP_BIT) != 0
            diag = prev[k] + (0 if (profile[i] & STATE_MASK & read[j]) != 0 else p[0]) + (p[1] if cgap else 0)
            if k > 0:
                d1 = min(cur[k - 1] + (0 if cgap else p[2] + p[3]), d1 + (0 if cgap else p[3]))
                d2 = min(cur[k - 1] + ((p[5] if p[7] else 0) if cgap else p[5] + p[6]), d2 + (0 if cgap else p[6]))
            ins = prev[k + 1] + p[4] if k < w - 1 else INF
            cur[k] = min(min(diag, d1), min(d2, ins))
        for k in range(w):
            prev[k] = cur[k]
        prev[w] = INF
    best = prev[0]
    for k in range(w):
        best = min(best, prev[k])
    return best


def evaluate(data: ba.Data, base: tuple, scale: int, two: tuple | None, candidates: int = 10, strict: int = 0) -> dict:
    """Column accuracy of Eq. 1 (base x scale, no second piece when two is None) vs two-piece."""
    import h5py
    match_tips, read_alignment, read_tree, ProfileBuilder, EdgeTree, encoding = _adapter()
    RunConfig, run, ScoringParams = ba._papara_adapter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.h5"
        run(RunConfig(tree=str(data.tree), alignment=str(data.alignment), reads=str(data.reads), output=str(out),
                      threads=2, device="cpu", params=ScoringParams(*base), candidates=candidates))
        with h5py.File(out) as f:
            names = f["reads/names"].asstr()[:]
            seqs = f["reads/sequence"].asstr()[:]
            strands = f["reads/strand"].asstr()[:]
            cand = f["reads/candidates/edge"][:]
    edge_tree = EdgeTree.from_dendropy(read_tree(str(data.tree)))
    match = match_tips(edge_tree.tip_names, read_alignment(str(data.alignment)), str(data.tree))
    builder = ProfileBuilder(edge_tree, match.tip_rows)
    mm, cg, go, ge, ins = (x * scale for x in base)
    go2, ge2 = two if two is not None else (INF // 4, INF // 4)  # no second piece: never cheaper
    p = np.array([mm, cg, go, ge, ins, go2, ge2, strict], np.int64)
    placements = {}
    for q, name in enumerate(names):
        if name not in data.truth:
            continue
        raw = np.frombuffer(seqs[q].encode(), np.uint8)
        if strands[q] == "-":
            raw = encoding.reverse_complement(raw)
        read = encoding.encode_read(raw)
        edges = [int(e) for e in cand[q] if e >= 0]
        if not edges:
            continue
        profiles = builder.profiles(np.array(edges, np.int64))
        scores = [score2(read, profiles[k], p) for k in range(len(edges))]
        best = int(np.argmin(scores))
        _, cols = align2(read, profiles[best], p)
        cols = cols.tolist()
        placements[name] = ba.Placement(cols[::-1] if strands[q] == "-" else cols)
    return ba.score(placements, data.truth)


def rescore(read, profile, start: int, ops: list[str], p) -> int:
    """Eq. 1 cost of an explicit path (ops: M, D, I from `start`), as tests/literal_dp.py."""
    total, column, position, previous = 0, start, 0, None
    for op in ops:
        if op == "M":
            a = int(profile[column])
            total += (0 if a & STATE_MASK & int(read[position]) else p[0]) + (p[1] if a & CGAP_BIT else 0)
            column += 1
            position += 1
        elif op == "D":
            if not profile[column] & CGAP_BIT:
                total += p[3] if previous == "D" else p[2] + p[3]
            column += 1
        else:
            total += p[4]
            position += 1
        previous = op
    return total


def components(read, profile, start: int, ops: list[str], p) -> dict[str, int]:
    """The Eq. 1 cost of a path split into mismatch, cgap, deletion and insertion terms."""
    out = {"mismatch": 0, "cgap": 0, "deletion": 0, "insertion": 0}
    column, position, previous = start, 0, None
    for op in ops:
        if op == "M":
            a = int(profile[column])
            out["mismatch"] += 0 if a & STATE_MASK & int(read[position]) else p[0]
            out["cgap"] += p[1] if a & CGAP_BIT else 0
            column += 1
            position += 1
        elif op == "D":
            if not profile[column] & CGAP_BIT:
                out["deletion"] += p[3] if previous == "D" else p[2] + p[3]
            column += 1
        else:
            out["insertion"] += p[4]
            position += 1
        previous = op
    return out


def true_ops(cols: list[int]) -> tuple[int, list[str], int]:
    """(start, ops, longest run of D) of the true path: columns per residue, -1 = insertion."""
    real = [c for c in cols if c >= 0]
    start, ops, column, longest = real[0], [], real[0], 0
    for c in cols:
        if c < 0:
            ops.append("I")
            continue
        longest = max(longest, c - column)
        ops.extend(["D"] * (c - column))
        ops.append("M")
        column = c + 1
    return start, ops, longest


def diagnose(data: ba.Data, params: tuple, min_wrong: int = 5) -> None:
    """Per wrong read: Eq. 1 cost of papara-py's path against the true path, on the chosen edge and
    on the true edge; the longest deletion of the true path (in columns)."""
    import h5py
    match_tips, read_alignment, read_tree, ProfileBuilder, EdgeTree, encoding = _adapter()
    RunConfig, run, ScoringParams = ba._papara_adapter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.h5"
        run(RunConfig(tree=str(data.tree), alignment=str(data.alignment), reads=str(data.reads), output=str(out),
                      threads=2, device="cpu", params=ScoringParams(*params)))
        placements = ba.read_run_file(out, data)
        with h5py.File(out) as f:
            names = list(f["reads/names"].asstr()[:])
            seqs = f["reads/sequence"].asstr()[:]
            strands = f["reads/strand"].asstr()[:]
            best = f["reads/best_edge"][:]
            scores = f["reads/candidates/score"][:, 0]
    edge_tree = EdgeTree.from_dendropy(read_tree(str(data.tree)))
    tips = frozenset(edge_tree.tip_names)
    split_edge = {ba.normalise_split(edge_tree.edge_split(e), tips): e for e in range(edge_tree.n_edges)}
    builder = ProfileBuilder(edge_tree, match_tips(edge_tree.tip_names, read_alignment(str(data.alignment)),
                                                   str(data.tree)).tip_rows)
    counts = {"model, chosen edge": 0, "model, true edge too": 0, "search/edge": 0}
    wrong_in = dict.fromkeys(counts, 0)
    long_del = 0
    parts = {"mismatch": 0, "cgap": 0, "deletion": 0, "insertion": 0}
    found_total = 0
    for name, (cols, split) in data.truth.items():
        got = placements.get(name)
        wrong = sum(1 for g, t in zip(got.columns, cols) if t >= 0 and g != t) if got else len(cols)
        if wrong < min_wrong or got is None:
            continue
        q = names.index(name)
        raw = np.frombuffer(seqs[q].encode(), np.uint8)
        fwd_cols = list(cols)
        if strands[q] == "-":
            raw, fwd_cols = encoding.reverse_complement(raw), fwd_cols[::-1]
        read = encoding.encode_read(raw)
        start, ops, longest = true_ops(fwd_cols)
        chosen = builder.profiles(np.array([best[q]]))[0]
        on_chosen = rescore(read, chosen, start, ops, params)
        true_edge = split_edge.get(split) if split is not None else None
        on_true = rescore(read, builder.profiles(np.array([true_edge]))[0], start, ops, params) \
            if true_edge is not None else None
        true_profile = builder.profiles(np.array([true_edge]))[0] if true_edge is not None else chosen
        for key, value in components(read, true_profile, start, ops, params).items():
            parts[key] += value
        kind = ("model, true edge too" if on_true is not None and on_true > scores[q] else "model, chosen edge") \
            if on_chosen > scores[q] else "search/edge"
        counts[kind] += 1
        wrong_in[kind] += wrong
        found_total += int(scores[q])
        long_del += longest >= 8
        print(f"  {name}: wrong {wrong}, found {scores[q]}, true path {on_chosen} (chosen edge) / {on_true} "
              f"(true edge), longest true deletion {longest} columns -> {kind}")
    print(json.dumps({"data": data.name, "params": params, "reads": counts, "wrong residues": wrong_in,
                      "reads with a true deletion >= 8": long_del,
                      "true paths' cost on the true edge": parts, "found paths' cost": found_total}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="the study's data folder (docs/ACCURACY.md)")
    ap.add_argument("--sets", default="pyrg")
    ap.add_argument("--base", default="2,3,2,1,5")
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--two", default="", help="open2,extend2 (scaled units); ';'-separated list")
    ap.add_argument("--candidates", type=int, default=10)
    ap.add_argument("--strict-open", type=int, default=0, help="1: opening D2 costs open2 in CGAP columns too")
    ap.add_argument("--diagnose", action="store_true", help="per wrong read: model or search? (Eq. 1, --base)")
    args = ap.parse_args()
    base = tuple(int(x) for x in args.base.split(","))
    twos = [None] + [tuple(int(x) for x in t.split(",")) for t in args.two.split(";") if t]
    for name in args.sets.split(","):
        data = ba.Data.from_dir(Path(args.data) / "sets" / name, name)
        if args.diagnose:
            diagnose(data, base)
            continue
        for two in twos:
            r = evaluate(data, base, args.scale, two, args.candidates, args.strict_open)
            print(json.dumps({"data": name, "base": base, "scale": args.scale, "two": two, "strict": args.strict_open,
                              "column_accuracy": round(r["column_accuracy"], 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
