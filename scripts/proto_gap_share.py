"""Measurement only: gap costs from the reference's gap share (MAFFT-style profile gap costs) in
the protein model, and penalties of the traceback apart from the edge choice. docs/ACCURACY.md,
"Gap costs by the column's gap share".

Every read of a leave-taxa-out set (`bench_accuracy.py` / `accuracy_study.py` layout) is scored on
every edge with DESIGN 4's banded recurrence, the production protein model (near states with the
column family residues, the column profile cost X, the `protein` preset), with per-column terms in
place of the constant gap costs; the best edge is the lowest (score, edge number), the columns come
from DESIGN 5's traceback on it, and they are scored against the truth. With g_i the share of the
reference's rows with a gap in column i and s_i the share whose gap starts there, a variant is a
'+'-joined list of:

    base      the model itself (a check: its accuracy must equal the production run's, printed beside)
    O:a       opening a deletion in a non-CGAP column costs round(gap_open * (1 - a g_i)) + gap_extend
    E:a       extending it costs round(gap_extend * (1 - a g_i)) (opening includes it)
    OE:a      both scaled: round((gap_open + gap_extend)(1 - a g_i)) and round(gap_extend (1 - a g_i))
    OS:a      opening scaled by the gap starts instead: round(gap_open * (1 - a s_i)) + gap_extend
    I:a       an insertion after column i costs round(insertion * (1 - a min(g_i, g_i+1)))
    Imax:a    the same with the larger of the two neighbours' gap shares
    Dg:a      a residue in a non-CGAP column costs round(10 a g_i) more
    Cg:a      a residue in a CGAP column costs round(cgap * (1 - a (1 - g_i))) instead of cgap
    TM:x/y    the traceback (not the edge choice) with mismatch x and near_mismatch y
    TX:k      the traceback with k times the column profile cost

    python3 scripts/proto_gap_share.py "DIR1,DIR2" "base;O:0.5;TM:2/2" out.jsonl

Appends one JSON line per set and variant to out.jsonl.
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
from papara_py.phylo.encoding import ALPHABETS, IS_GAP, near_states
from papara_py.phylo.family import column_family
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

INF = 1 << 28
PRESET = ScoringParams.preset("protein")


@njit(cache=True)
def band(read, x, prof, near, cgap_bit, state_mask, mismatch, near_mismatch, oe, ex, ins, extra, cg, trace):
    """DESIGN 4's banded recurrence with per-column costs: deletion open+extend oe[i] and extend
    ex[i], diagonal extra[i] (non-CGAP columns; CGAP columns 0, 0 and cg[i]), insertion after
    column i ins[i]; x [n, m] the read's column profile costs. Returns (score, each residue's
    column or -1), the columns by DESIGN 5's traceback when `trace`."""
    n, m = read.shape[0], prof.shape[0]
    w = m - n + 1
    # cell (j, d), j = 1..n the read row j - 1, d = 1..w column i = j + d - 2; d = 0 and d = w + 1 outside
    S = np.full((n + 1, w + 2), INF, np.int32)
    D = np.full((n + 1, w + 2), INF, np.int32)
    S[0, 1:w + 1] = 0  # S(i, -1) = 0 for i in [-1, w - 2]
    for j in range(1, n + 1):
        b = read[j - 1]
        for d in range(1, w + 1):
            i = j + d - 2
            a = prof[i]
            gap = (a & cgap_bit) != 0
            o, e, add = (0, 0, cg[i]) if gap else (oe[i], ex[i], extra[i])
            dd = min(S[j, d - 1] + o, D[j, d - 1] + e)
            mm = 0 if a & state_mask & b else (near_mismatch if near[i] & b else mismatch)
            s = min(S[j - 1, d] + mm + add + x[j - 1, i], dd)
            if d < w:
                s = min(s, S[j - 1, d + 1] + ins[i])
            S[j, d] = min(s, INF)
            D[j, d] = min(dd, INF)
    end = 1
    for d in range(2, w + 1):
        if S[n, d] < S[n, end]:
            end = d
    columns = np.full(n, -1, np.int64)
    j, d, in_d = n, end, False
    while trace and j > 0:
        i = j + d - 2
        a = prof[i]
        gap = (a & cgap_bit) != 0
        o, add = (0, cg[i]) if gap else (oe[i], extra[i])
        if in_d:
            in_d = D[j, d] != S[j, d - 1] + o
            d -= 1
            continue
        b = read[j - 1]
        mm = 0 if a & state_mask & b else (near_mismatch if near[i] & b else mismatch)
        if S[j, d] == S[j - 1, d] + mm + add + x[j - 1, i]:
            columns[j - 1] = i
            j -= 1
        elif S[j, d] == D[j, d]:
            in_d = True
        else:
            j -= 1
            d += 1
    return S[n, end], columns


@njit(cache=True, parallel=True)
def edge_scores(read, x, profiles, nears, cgap_bit, state_mask, mismatch, near_mismatch, oe, ex, ins, extra, cg):
    """`band`'s score of the read on every edge ([E, m] profiles and near states)."""
    out = np.empty(profiles.shape[0], np.int64)
    for e in prange(profiles.shape[0]):
        out[e] = band(read, x, profiles[e], nears[e], cgap_bit, state_mask, mismatch, near_mismatch,
                      oe, ex, ins, extra, cg, False)[0]
    return out


def variant_costs(variant: str, gap_share: np.ndarray, start_share: np.ndarray) -> dict:
    """The per-column cost arrays and traceback settings of `variant` (module docstring)."""
    p, m = PRESET, gap_share.size
    g, r = gap_share, np.rint
    out = {"oe": np.full(m, p.gap_open + p.gap_extend), "ex": np.full(m, p.gap_extend),
           "ins": np.full(m, p.insertion), "extra": np.zeros(m), "cg": np.full(m, p.cgap),
           "trace_mismatch": (p.mismatch, p.near_mismatch), "trace_x": 1}
    for part in variant.split("+"):
        kind, _, arg = part.partition(":")
        if kind == "base":
            continue
        if kind == "TM":
            out["trace_mismatch"] = tuple(int(v) for v in arg.split("/"))
            continue
        if kind == "TX":
            out["trace_x"] = int(arg)
            continue
        a = float(arg)
        following = np.append(g[1:], 1.0)
        if kind == "O":
            out["oe"] = r(p.gap_open * (1 - a * g)) + p.gap_extend
        elif kind == "E":
            out["ex"] = r(p.gap_extend * (1 - a * g))
            out["oe"] = p.gap_open + out["ex"]
        elif kind == "OE":
            out["oe"], out["ex"] = r((p.gap_open + p.gap_extend) * (1 - a * g)), r(p.gap_extend * (1 - a * g))
        elif kind == "OS":
            out["oe"] = r(p.gap_open * (1 - a * start_share)) + p.gap_extend
        elif kind == "I":
            out["ins"] = r(p.insertion * (1 - a * np.minimum(g, following)))
        elif kind == "Imax":
            out["ins"] = r(p.insertion * (1 - a * np.maximum(g, following)))
        elif kind == "Dg":
            out["extra"] = r(10 * a * g)
        elif kind == "Cg":
            out["cg"] = r(p.cgap * (1 - a * (1 - g)))
        else:
            raise ValueError(f"unknown variant term {part!r}")
    for key in ("oe", "ex", "ins", "extra", "cg"):
        out[key] = np.asarray(out[key], np.int32)
    return out


def measure(folder: Path, variants: list[str]) -> list[dict]:
    """Column accuracy of each variant on one set, and the production run's."""
    data = ba.Data.from_dir(folder, folder.name, "protein")
    alphabet = ALPHABETS["protein"]
    work = Path(tempfile.mkdtemp())
    run, _ = ba.run_papara_inprocess(data, work, None, 1)
    production = ba.score(run, data.truth)["column_accuracy"]
    with h5py.File(work / "papara.h5") as run_file:
        newick = run_file["tree/newick_numbered"][()]
    splits, _ = ba.edge_splits_from_numbered(newick.decode() if isinstance(newick, bytes) else str(newick))
    edges = np.array(sorted(splits))
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = match_tips(tree.tip_names, read_alignment(data.alignment, alphabet="protein"), "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, alphabet).profiles(edges)
    nears = np.ascontiguousarray(near_states(profiles, alphabet, column_family(tip_rows, alphabet)))
    costs = column_costs(tip_rows, alphabet, PRESET.column_weight)
    gaps = IS_GAP[np.asarray(tip_rows, np.uint8)]
    before = np.concatenate([np.zeros((gaps.shape[0], 1), bool), gaps[:, :-1]], axis=1)
    gap_share, start_share = gaps.mean(axis=0), (gaps & ~before).mean(axis=0)
    reads = dict(ba._reads_forward(data))
    encoded = {}
    for name in data.truth:
        if name in run:
            code = alphabet.read_code[np.frombuffer(reads[name].encode(), np.uint8)]
            encoded[name] = (code, np.ascontiguousarray(costs.table[costs.rows_of(code)].astype(np.int32)))
    out = []
    for variant in variants:
        c = variant_costs(variant, gap_share, start_share)
        arrays = (c["oe"], c["ex"], c["ins"], c["extra"], c["cg"])
        placements = {}
        for name, (code, x) in encoded.items():
            scores = edge_scores(code, x, profiles, nears, alphabet.cgap_bit, alphabet.state_mask, PRESET.mismatch,
                                 PRESET.near_mismatch, *arrays)
            k = int(np.argmin(scores))
            _, columns = band(code, x * c["trace_x"], profiles[k], nears[k], alphabet.cgap_bit, alphabet.state_mask,
                              *c["trace_mismatch"], *arrays, True)
            placements[name] = ba.Placement([int(v) for v in columns], splits[int(edges[k])])
        accuracy = ba.score(placements, data.truth)["column_accuracy"]
        out.append({"set": folder.name, "variant": variant, "column_accuracy": round(accuracy, 4),
                    "production": round(production, 4)})
    return out


def main() -> int:
    sets, variants, out = sys.argv[1].split(","), sys.argv[2].split(";"), Path(sys.argv[3])
    with out.open("a") as handle:
        for folder in filter(None, sets):
            for record in measure(Path(folder), variants):
                handle.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
