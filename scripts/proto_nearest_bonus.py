"""Measurement only: a nearest-sequence bonus in the protein traceback, on the study's leave-taxa-out
sets. docs/ACCURACY.md, "Votes over near-best edges in the model" (the next lead).

Every read is scored on every edge with DESIGN 4's banded recurrence and the production protein model
(near states with the column family residues, the column profile cost X, the `protein` preset);
the best edge is the lowest (score, edge number), and DESIGN 5's traceback on it gives the columns
(no votes: window 0). Variant "NS:c@f" then finds the read's nearest reference sequence (the
reference row with the most identities to the read along those columns) and, where those
identities are at least the share f of the read's placed residues, traces the read back again on
the same edge with every residue identical to that row's residue in a column costing c less
there ("NS:c": f = 0; NS:0: the model itself). The edge choice and the candidate lists are
unchanged.

    python3 scripts/proto_nearest_bonus.py "DIR1,DIR2" "NS:0;NS:2;NS:2@0.6" out.jsonl

Appends one JSON line per set and variant to out.jsonl, with the production run's accuracy at
window 0 beside it (NS:0 must equal it).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

from papara_py.io.inputs import match_tips, read_alignment, read_tree
from papara_py.pairwise.params import ScoringParams
from papara_py.phylo.column_costs import column_costs
from papara_py.phylo.encoding import ALPHABETS, near_states
from papara_py.phylo.family import column_family
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

INF = 1 << 28
PRESET = ScoringParams.preset("protein")


@njit(cache=True)
def band(read, x, prof, near, cgap_bit, state_mask, mismatch, near_mismatch, oe, ex, io, ie, cg, trace):
    """DESIGN 4's banded recurrence (from proto_affine_insertion.py, commit 9dbf7c7: io = ie = the
    preset's insertion here, Eq. 1's linear insertion); x [n, m] the read's per-column costs.
    Returns (score, each residue's column or -1, by DESIGN 5's traceback when `trace`)."""
    n, m = read.shape[0], prof.shape[0]
    w = m - n + 1
    S = np.full((n + 1, w + 2), INF, np.int32)
    D = np.full((n + 1, w + 2), INF, np.int32)
    I = np.full((n + 1, w + 2), INF, np.int32)
    S[0, 1:w + 1] = 0
    for j in range(1, n + 1):
        b = read[j - 1]
        for d in range(1, w + 1):
            i = j + d - 2
            a = prof[i]
            gap = (a & cgap_bit) != 0
            o, e, add = (0, 0, cg[i]) if gap else (oe[i], ex[i], 0)
            dd = min(S[j, d - 1] + o, D[j, d - 1] + e)
            mm = 0 if a & state_mask & b else (near_mismatch if near[i] & b else mismatch)
            s = min(S[j - 1, d] + mm + add + x[j - 1, i], dd)
            ii = INF
            if d < w:
                ii = min(S[j - 1, d + 1] + io, I[j - 1, d + 1] + ie)
                s = min(s, ii)
            S[j, d] = min(s, INF)
            D[j, d] = min(dd, INF)
            I[j, d] = min(ii, INF)
    end = 1
    for d in range(2, w + 1):
        if S[n, d] < S[n, end]:
            end = d
    columns = np.full(n, -1, np.int64)
    j, d, in_d, in_i = n, end, False, False
    while trace and j > 0:
        i = j + d - 2
        a = prof[i]
        gap = (a & cgap_bit) != 0
        o, add = (0, cg[i]) if gap else (oe[i], 0)
        if in_d:
            in_d = D[j, d] != S[j, d - 1] + o
            d -= 1
            continue
        if in_i:
            in_i = I[j, d] != S[j - 1, d + 1] + io
            j -= 1
            d += 1
            continue
        b = read[j - 1]
        mm = 0 if a & state_mask & b else (near_mismatch if near[i] & b else mismatch)
        if S[j, d] == S[j - 1, d] + mm + add + x[j - 1, i]:
            columns[j - 1] = i
            j -= 1
        elif S[j, d] == D[j, d]:
            in_d = True
        else:
            in_i = True
    return S[n, end], columns


@njit(cache=True, parallel=True)
def edge_scores(read, x, profiles, nears, cgap_bit, state_mask, mismatch, near_mismatch, oe, ex, io, ie, cg):
    out = np.empty(profiles.shape[0], np.int64)
    for e in prange(profiles.shape[0]):
        out[e] = band(read, x, profiles[e], nears[e], cgap_bit, state_mask, mismatch, near_mismatch,
                      oe, ex, io, ie, cg, False)[0]
    return out


def measure(folder, variants):
    data = ba.Data.from_dir(folder, folder.name, "protein")
    alphabet = ALPHABETS["protein"]
    work = Path(tempfile.mkdtemp())
    run, _ = ba.run_papara_inprocess(data, work, PRESET.setting()[:7], 1)
    production = ba.score(run, data.truth)["column_accuracy"]
    with h5py.File(work / "papara.h5") as run_file:
        newick = run_file["tree/newick_numbered"][()]
    splits, _ = ba.edge_splits_from_numbered(newick.decode() if isinstance(newick, bytes) else str(newick))
    edges = np.array(sorted(splits))
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    alignment = read_alignment(data.alignment, alphabet="protein")
    tip_rows = match_tips(tree.tip_names, alignment, "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, alphabet).profiles(edges)
    nears = np.ascontiguousarray(near_states(profiles, alphabet, column_family(tip_rows, alphabet)))
    costs = column_costs(tip_rows, alphabet, PRESET.column_weight)
    p, m = PRESET, profiles.shape[1]
    oe, ex = np.full(m, p.gap_open + p.gap_extend, np.int32), np.full(m, p.gap_extend, np.int32)
    cg = np.full(m, p.cgap, np.int32)
    upper = np.asarray(tip_rows, np.uint8) & 0xDF  # ASCII upper case
    reads = dict(ba._reads_forward(data))
    results = {v: {} for v in variants}
    for name in data.truth:
        if name not in run:
            continue
        raw = np.frombuffer(reads[name].encode(), np.uint8) & 0xDF
        code = alphabet.read_code[np.frombuffer(reads[name].encode(), np.uint8)]
        x = np.ascontiguousarray(costs.table[costs.rows_of(code)].astype(np.int32))
        scores = edge_scores(code, x, profiles, nears, alphabet.cgap_bit, alphabet.state_mask, p.mismatch,
                             p.near_mismatch, oe, ex, 16, 16, cg)
        best = int(np.lexsort((np.arange(scores.size), scores))[0])
        _, columns = band(code, x, profiles[best], nears[best], alphabet.cgap_bit, alphabet.state_mask,
                          p.mismatch, p.near_mismatch, oe, ex, 16, 16, cg, True)
        placed = columns >= 0
        identities = (upper[:, columns[placed]] == raw[placed][None, :]).sum(axis=1)
        nearest = upper[int(np.argmax(identities))]
        share = identities.max() / max(1, placed.sum())
        match = (nearest[None, :] == raw[:, None])  # [n, m]
        for variant in variants:
            c, _, floor = variant.split(":")[1].partition("@")
            c, floor = int(c), float(floor or 0)
            if c == 0 or share < floor:
                cols = columns
            else:
                x2 = np.ascontiguousarray(x - c * match.astype(np.int32))
                _, cols = band(code, x2, profiles[best], nears[best], alphabet.cgap_bit, alphabet.state_mask,
                               p.mismatch, p.near_mismatch, oe, ex, 16, 16, cg, True)
            results[variant][name] = ba.Placement([int(v) for v in cols], splits[int(edges[best])])
    return [{"set": folder.name, "variant": v, "column_accuracy": round(ba.score(results[v], data.truth)["column_accuracy"], 4),
             "production": round(production, 4)} for v in variants]


def main():
    sets, variants, out = sys.argv[1].split(","), sys.argv[2].split(";"), Path(sys.argv[3])
    with out.open("a") as handle:
        for folder in filter(None, sets):
            for record in measure(Path(folder), variants):
                handle.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
