"""Measurement only: two traceback-side leads for the protein model, on the study's leave-taxa-out
sets. docs/ACCURACY.md, "Votes over near-best edges and a soft gap signal".

Every read is scored on every edge with DESIGN 4's banded recurrence and the production protein model
(near states with the column family residues, the column profile cost X, the `protein` preset); the
best edge is the lowest (score, edge number) and its placement is kept in every variant. A variant
is a '+'-joined list of:

    base      the model itself (a check: its accuracy must equal the production run's, printed beside)
    V:d       each read's columns by vote: DESIGN 5's traceback on every edge within d of the best
              score (V:d/c: of the c best edges by (score, edge) only, as the run's candidate lists
              hold them), then the column assignment (strictly increasing columns, a residue may be
              left out) that agrees with the most of those alignments, residue by residue (ties: the best
              edge's alignment)
    SC:c      a "soft gap" surcharge: a residue in a column where the edge's gap character (DESIGN 3,
              CGAP's two-state character) has the virtual-root set {gap, residue} costs c more, in
              the edge choice and the traceback (CGAP is the set {gap} alone)

    python3 scripts/proto_edge_votes.py "DIR1,DIR2" "base;V:4;SC:3;SC:3+V:4" out.jsonl

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
    """`band`'s score of the read on every edge ([E, m] profiles, near states and residue surcharges)."""
    out = np.empty(profiles.shape[0], np.int64)
    for e in prange(profiles.shape[0]):
        out[e] = band(read, x, profiles[e], nears[e], cgap_bit, state_mask, mismatch, near_mismatch,
                      oe, ex, ins, extra[e], cg, False)[0]
    return out


def consensus(alignments: np.ndarray, weights: np.ndarray) -> list[int]:
    """The strictly increasing column assignment (-1: left out) with the largest total weight of
    the alignments that agree with it residue by residue."""
    votes: list[dict[int, float]] = [{} for _ in range(alignments.shape[1])]
    for columns, weight in zip(alignments, weights):
        for j, column in enumerate(columns.tolist()):
            votes[j][column] = votes[j].get(column, 0.0) + weight
    best: dict[int, tuple[float, tuple]] = {-1: (0.0, ())}  # last column placed -> (weight, assignment)
    for choices in votes:
        step: dict[int, tuple[float, tuple]] = {}
        for last, (total, path) in best.items():
            for column, weight in choices.items():
                if column != -1 and column <= last:
                    continue
                key = last if column == -1 else column
                if key not in step or total + weight > step[key][0]:
                    step[key] = (total + weight, path + (column,))
        best = step
    return list(max(best.values(), key=lambda item: item[0])[1])


def soft_gap_columns(tree: EdgeTree, tip_rows: np.ndarray, alphabet, edges: np.ndarray) -> np.ndarray:
    """[E, m]: the edge's gap character has the virtual-root set {gap, residue} (neither CGAP nor
    surely a residue). 'Surely a residue' is CGAP of the character with gaps and residues swapped."""
    rows = np.asarray(tip_rows, np.uint8)
    swapped = np.where(IS_GAP[rows], ord("A"), ord("-")).astype(np.uint8)
    cgap = ProfileBuilder(tree, rows, alphabet).profiles(edges) & alphabet.cgap_bit
    residue = ProfileBuilder(tree, swapped, alphabet).profiles(edges) & alphabet.cgap_bit
    return (cgap == 0) & (residue == 0)


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
    soft = soft_gap_columns(tree, tip_rows, alphabet, edges)
    costs = column_costs(tip_rows, alphabet, PRESET.column_weight)
    p, m = PRESET, profiles.shape[1]
    constant = (np.full(m, p.gap_open + p.gap_extend, np.int32), np.full(m, p.gap_extend, np.int32),
                np.full(m, p.insertion, np.int32))
    cg = np.full(m, p.cgap, np.int32)
    reads = dict(ba._reads_forward(data))
    encoded = {}
    for name in data.truth:
        if name in run:
            code = alphabet.read_code[np.frombuffer(reads[name].encode(), np.uint8)]
            encoded[name] = (code, np.ascontiguousarray(costs.table[costs.rows_of(code)].astype(np.int32)))
    out = []
    for variant in variants:
        terms = dict(part.partition(":")[::2] for part in variant.split("+"))
        extra = np.where(soft, int(terms.get("SC", 0)), 0).astype(np.int32)
        window, cap = (None, None)
        if "V" in terms:
            window, _, most = terms["V"].partition("/")
            window, cap = float(window), int(most) if most else None
        placements = {}
        for name, (code, x) in encoded.items():
            scores = edge_scores(code, x, profiles, nears, alphabet.cgap_bit, alphabet.state_mask, p.mismatch,
                                 p.near_mismatch, *constant, extra, cg)
            order = np.lexsort((np.arange(scores.size), scores))
            chosen = order[:1] if window is None else order[scores[order] <= scores[order[0]] + window][:cap]
            alignments = np.array([band(code, x, profiles[k], nears[k], alphabet.cgap_bit, alphabet.state_mask,
                                        p.mismatch, p.near_mismatch, *constant, extra[k], cg, True)[1]
                                   for k in chosen])
            weights = np.ones(len(chosen))
            weights[0] += 1e-6  # ties: the best edge's alignment
            columns = alignments[0].tolist() if len(chosen) == 1 else consensus(alignments, weights)
            placements[name] = ba.Placement([int(v) for v in columns], splits[int(edges[order[0]])])
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
