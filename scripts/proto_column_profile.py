"""Measurement only: Eq. 1 plus a column profile cost, the ingredient MAFFT --addfragments has and
one edge's parsimony profile lacks (docs/ACCURACY.md, "Dense real protein references").

Each cell's diagonal cost becomes Eq. 1's (0 / near_mismatch / mismatch, + cgap on a CGAP
column) plus X(c, r), the same on every edge:

    P(c, r) = the mean over the reference's rows of BLOSUM62(r, the row's residue at column c)
              (a gap, or an ambiguity code, adds 0)
    X(c, r) = round(weight * max(0, ref - P(c, r)))

so a residue the whole column scores well (P near or above `ref`) costs nothing more, and one the
column's residues dislike costs up to weight * (ref + 4). An ambiguous read residue (B, Z, J, X)
costs the least of its states, as Eq. 1 has it. Deletions, insertions, DESIGN 4's band and the
tie-breaking (lowest score, then lowest edge number) are Eq. 1's; every read is scored on every
edge and aligned on its cheapest (forward strand: protein). Weight 0 is Eq. 1 itself, the same
columns as a papara-py run with those penalties (`--check` compares them).

    python3 scripts/proto_column_profile.py --points "6,4,8,3,12,3,0;3,4,8,3,12,2,0.5" DATA/sets/NAME ...
    python3 scripts/proto_column_profile.py --check DATA/sets/NAME ...

A point is mismatch,cgap,gap_open,gap_extend,insertion,near_mismatch,weight[,ref] (ref: default
5). Prints one JSON line per set and point: its column accuracy.
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
import bench_accuracy as ba

from papara_py.io.inputs import match_tips, read_alignment, read_tree
from papara_py.phylo.encoding import PROTEIN, near_states
from papara_py.phylo.family import column_family
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

INF = 1 << 40
INF32 = 1 << 29  # the edge scorer's +infinity: int32 sums of it and a few costs stay below 2**31


def blosum62() -> np.ndarray:
    """BLOSUM62 over PROTEIN's states, in their bit order ([20, 20], Biopython's copy)."""
    from Bio.Align import substitution_matrices
    matrix = substitution_matrices.load("BLOSUM62")
    return np.array([[matrix[a][b] for b in PROTEIN.letters] for a in PROTEIN.letters], float)


def column_scores(tip_rows: np.ndarray) -> np.ndarray:
    """P ([m, 20]): each column's mean BLOSUM62 score of each state against the reference's rows
    (uint8 ASCII [rows, m]; gaps and ambiguity codes score 0)."""
    rows = np.char.upper(np.asarray(tip_rows, np.uint8).view("S1")).view(np.uint8)
    counts = np.stack([(rows == ord(letter)).sum(axis=0) for letter in PROTEIN.letters], axis=1)
    return counts / rows.shape[0] @ blosum62().T


def column_costs(scores: np.ndarray, weight: float, ref: float) -> np.ndarray:
    """X ([m, 20] int64) from the column scores P (module docstring)."""
    return np.rint(weight * np.clip(ref - scores, 0, None)).astype(np.int64)


def cost_tables(profiles: np.ndarray, nears: np.ndarray, costs: np.ndarray, p: np.ndarray,
                codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The diagonal cost of each read code in `codes` (distinct state sets, [K]) per column and
    edge -> int32 [K, m, E]; the deletion's open+extend and extend -> int32 [m, E] each (the
    edges innermost: edge_scores)."""
    mismatch, cgap, gap_open, gap_extend, _, near_mismatch = (int(x) for x in p)
    gap = (profiles & PROTEIN.cgap_bit) != 0
    diag = np.empty((len(codes), profiles.shape[1], profiles.shape[0]), np.int32)
    for k, code in enumerate(codes):
        each = []
        for state in range(PROTEIN.n_states):
            if not int(code) >> state & 1:
                continue
            bit = profiles.dtype.type(1 << state)
            level = np.where(profiles & bit, 0, np.where(nears & bit, near_mismatch, mismatch))
            each.append(level + costs[:, state][None, :])
        diag[k] = (np.min(each, axis=0) + np.where(gap, cgap, 0)).T
    return (diag, np.ascontiguousarray(np.where(gap, 0, gap_open + gap_extend).T.astype(np.int32)),
            np.ascontiguousarray(np.where(gap, 0, gap_extend).T.astype(np.int32)))


@njit(cache=True)
def edge_scores(read, diag, open_extend, extend, insertion):
    """The banded score of `read` (indices into diag's first axis) on every edge; the edges are
    the innermost axis of every table (diag [K, m, E], the others [m, E]), so the loop over them
    vectorises."""
    _, m, n_edges = diag.shape
    n = read.shape[0]
    width = m - n + 1
    previous = np.zeros((width, n_edges), np.int32)  # row 0: no residue yet, free at every offset
    current = np.empty((width, n_edges), np.int32)
    deletion = np.empty(n_edges, np.int32)
    for j in range(1, n + 1):
        costs = diag[read[j - 1]]
        deletion[:] = INF32
        for d in range(width):  # column i = j + d - 1
            i = j + d - 1
            for e in range(n_edges):
                if d > 0:
                    deletion[e] = min(current[d - 1, e] + open_extend[i, e], deletion[e] + extend[i, e])
                best = min(previous[d, e] + costs[i, e], deletion[e])
                if d + 1 < width:
                    best = min(best, previous[d + 1, e] + insertion)
                current[d, e] = best
        previous, current = current, previous
    out = np.empty(n_edges, np.int64)
    for e in range(n_edges):
        out[e] = previous[:, e].min()
    return out


@njit(cache=True)
def align(read, diag, open_extend, extend, insertion):
    """(score, each residue's column or -1) on one edge: the band's matrix and DESIGN 5's
    traceback, as proto_band.full_dp with margin 0."""
    m = diag.shape[1]
    n = read.shape[0]
    S = np.full((m + 1, n + 1), INF, np.int64)
    D = np.full((m + 1, n + 1), INF, np.int64)
    for i in range(m - n + 1):
        S[i, 0] = 0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if 0 <= i - j <= m - n:
                D[i, j] = min(S[i - 1, j] + open_extend[i - 1], D[i - 1, j] + extend[i - 1])
                S[i, j] = min(S[i - 1, j - 1] + diag[read[j - 1], i - 1], D[i, j], S[i, j - 1] + insertion)
    end = 1
    for i in range(2, m + 1):
        if S[i, n] < S[end, n]:
            end = i
    columns = np.full(n, -1, np.int64)
    i, j, in_d = end, n, False
    while j > 0:
        if in_d:
            in_d = D[i, j] != S[i - 1, j] + open_extend[i - 1]
            i -= 1
        elif S[i, j] == S[i - 1, j - 1] + diag[read[j - 1], i - 1]:
            columns[j - 1] = i - 1
            i -= 1
            j -= 1
        elif S[i, j] == D[i, j]:
            in_d = True
        else:
            j -= 1
    return S[end, n], columns


class ProteinSet:
    """One leave-taxa-out set's profiles of every edge, near states, column scores, and its reads as
    indices into `codes` (their distinct state sets: the cost tables' last axis)."""

    def __init__(self, folder: Path) -> None:
        self.data = data = ba.Data.from_dir(folder, folder.name, "protein")
        tree = EdgeTree.from_dendropy(read_tree(data.tree))
        tip_rows = match_tips(tree.tip_names, read_alignment(data.alignment, alphabet="protein"), "tree").tip_rows
        self.profiles = ProfileBuilder(tree, tip_rows, PROTEIN).profiles(np.arange(tree.n_edges))
        self.nears = near_states(self.profiles, PROTEIN, column_family(tip_rows, PROTEIN))
        self.scores = column_scores(tip_rows)
        codes = {name: PROTEIN.read_code[np.frombuffer(text.encode(), np.uint8)]
                 for name, text in ba._reads_forward(data)}
        self.codes = np.unique(np.concatenate(list(codes.values())))  # the cost tables' read codes
        self.reads = {name: np.searchsorted(self.codes, code).astype(np.int64) for name, code in codes.items()}

    def placements(self, point: tuple[float, ...]) -> dict[str, ba.Placement]:
        """Each read's columns on its cheapest edge under `point` (module docstring)."""
        p = np.array(point[:6], np.int64)
        weight, ref = (point[6], point[7] if len(point) > 7 else 5.0)
        diag, open_extend, extend = cost_tables(self.profiles, self.nears, column_costs(self.scores, weight, ref),
                                                p, self.codes)
        out = {}
        for name, read in self.reads.items():
            edge = int(np.argmin(edge_scores(read, diag, open_extend, extend, int(p[4]))))
            _, columns = align(read, np.ascontiguousarray(diag[:, :, edge]), open_extend[:, edge].copy(),
                               extend[:, edge].copy(), int(p[4]))
            out[name] = ba.Placement([int(c) for c in columns])
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", default="6,4,8,3,12,3,0",
                        help="m,c,o,e,i,near,weight[,ref];... (weight 0: Eq. 1)")
    parser.add_argument("--check", action="store_true",
                        help="instead: papara-py's own run (default penalties) against weight 0, read by read")
    parser.add_argument("sets", nargs="+", type=Path)
    args = parser.parse_args()
    for folder in args.sets:
        data = ProteinSet(folder)
        if args.check:
            from papara_py.pairwise.params import PRESETS
            run, _ = ba.run_papara_inprocess(data.data, Path(tempfile.mkdtemp()), None, 2)
            mine = data.placements((*PRESETS[PROTEIN.default_preset], 0))
            differ = sum(mine[name].columns != run[name].columns for name in run)
            print(json.dumps({"set": folder.name, "reads": len(run), "reads_differing": differ}), flush=True)
            continue
        for text in args.points.split(";"):
            point = tuple(float(x) for x in text.split(","))
            accuracy = ba.score(data.placements(point), data.data.truth)["column_accuracy"]
            print(json.dumps({"set": folder.name, "point": text, "column_accuracy": round(accuracy, 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
