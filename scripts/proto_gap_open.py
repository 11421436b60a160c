"""Measurement only: position-specific gap opening, MAFFT-style, from the reference's gap share.
Every read of a set is scored on every edge with Eq. 1 (DESIGN 4's band and tie-breaking: the
lowest score, then the lowest edge number), where opening a deletion at a column costs `low`
instead of gap_open if at least T% of the reference's rows have a gap there; its columns come from
that edge's traceback (proto_band.full_dp). T = 101 is the model itself (a check: the same
columns and edges as the run). docs/ACCURACY.md, "Simulated protein families".

    python3 scripts/proto_gap_open.py --alphabet protein --variants 101/8,2/4,5/4,10/2 DATA/sets/NAME ...
    python3 scripts/proto_gap_open.py --variants 101/8 --oracle DATA/sets/NAME ...   # the best edge per read

Prints one JSON line per set and variant T/low (column and edge accuracy; penalties: the
alphabet's default preset).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba
from proto_band import full_dp

from papara_py.io.inputs import match_tips, read_alignment, read_tree
from papara_py.io.run_file import RunFile
from papara_py.model.family import column_family
from papara_py.phylo.encoding import ALPHABETS, IS_GAP, near_states
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

INF = 1 << 40


@njit(cache=True, parallel=True)
def edge_scores(read, profiles, nears, cgap_bit, state_mask, p, open_at):
    """Eq. 1's banded score of `read` on every edge ([E, m] profiles and near states), with each
    column's gap-open cost `open_at` ([m]); one row of the band at a time."""
    n_edges, m = profiles.shape
    n = read.shape[0]
    mismatch, cgap, _, gap_extend, insertion, near_mismatch = p
    width = m - n + 1
    out = np.empty(n_edges, np.int64)
    for e in prange(n_edges):
        previous = np.zeros(width, np.int64)  # row 0: no residue yet, free at every offset
        for j in range(1, n + 1):
            current = np.full(width, INF, np.int64)
            deletion = INF
            for d in range(width):  # column i = j + d - 1 (0-based)
                a = profiles[e, j + d - 1]
                gap = (a & cgap_bit) != 0
                if d > 0:
                    deletion = min(current[d - 1] + (0 if gap else open_at[j + d - 1] + gap_extend),
                                   deletion + (0 if gap else gap_extend))
                hit = a & state_mask & read[j - 1]
                diagonal = (0 if hit else (near_mismatch if nears[e, j + d - 1] & read[j - 1] else mismatch))
                best = previous[d] + diagonal + (cgap if gap else 0)
                best = min(best, deletion)
                if d + 1 < width:
                    best = min(best, previous[d + 1] + insertion)
                current[d] = best
            previous = current
        out[e] = previous.min()
    return out


def measure(folder: Path, alphabet_name: str, variants: list[tuple[int, int]], oracle: bool = False) -> list[dict]:
    """Column and edge accuracy of each variant (T, low) on one set (module docstring); with
    `oracle`, each read on the edge whose traceback places most of its residues right instead of
    the cheapest edge (what a perfect edge choice would give with these costs)."""
    data = ba.Data.from_dir(folder, folder.name, alphabet_name)
    alphabet = ALPHABETS[alphabet_name]
    work = Path(tempfile.mkdtemp())
    run, _ = ba.run_papara_inprocess(data, work, None, 2)
    with h5py.File(work / "papara.h5") as run_file:
        newick = run_file["tree/newick_numbered"][()]
        newick = newick.decode() if isinstance(newick, bytes) else str(newick)
    with RunFile(work / "papara.h5") as run_file:
        p = np.array([run_file.record["parameters"][k] for k in
                      ("mismatch", "cgap", "gap_open", "gap_extend", "insertion", "near_mismatch")], np.int64)
    splits, _ = ba.edge_splits_from_numbered(newick)
    edges = np.array(sorted(splits))
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = match_tips(tree.tip_names, read_alignment(data.alignment, alphabet=alphabet_name), "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, alphabet).profiles(edges)
    nears = np.ascontiguousarray(near_states(profiles, alphabet, column_family(tip_rows, alphabet)))
    gap_share = IS_GAP[np.asarray(tip_rows, np.uint8)].mean(axis=0)
    reads = dict(ba._reads_forward(data))
    out = []
    for threshold, low in variants:
        open_at = np.where(100 * gap_share >= threshold, low, p[2]).astype(np.int64)
        placements = {}
        for name in data.truth:
            if name not in run:
                continue
            code = alphabet.read_code[np.frombuffer(reads[name].encode(), np.uint8)]
            if oracle:
                true_columns = np.array(data.truth[name][0])
                scored = true_columns >= 0
                _, k, columns = max(
                    (int((cols[scored] == true_columns[scored]).sum()), -e, cols) for e in range(len(edges))
                    for cols in [full_dp(code, profiles[e], nears[e], alphabet.cgap_bit, alphabet.state_mask, p, 0,
                                         open_at)[1]])
                k = -k
            else:
                k = int(np.argmin(edge_scores(code, profiles, nears, alphabet.cgap_bit, alphabet.state_mask, p,
                                              open_at)))
                _, columns = full_dp(code, profiles[k], nears[k], alphabet.cgap_bit, alphabet.state_mask, p, 0, open_at)
            placements[name] = ba.Placement([int(c) for c in columns], splits[int(edges[k])])
        result = ba.score(placements, data.truth)
        out.append({"set": folder.name, "T": threshold, "low": low, "oracle": oracle,
                    "column_accuracy": round(result["column_accuracy"], 4),
                    "edge_accuracy": None if oracle else result["edge_accuracy"]})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alphabet", choices=list(ALPHABETS), default="protein")
    parser.add_argument("--variants", default="101/8,2/4,5/4,10/2",
                        help="T/low,...: a column with >= T%% gaps opens a deletion at `low` (T=101: the model)")
    parser.add_argument("--oracle", action="store_true",
                        help="each read on the edge that places most of its residues right (an upper bound)")
    parser.add_argument("sets", nargs="+", type=Path)
    args = parser.parse_args()
    variants = [tuple(int(x) for x in v.split("/")) for v in args.variants.split(",")]
    for folder in args.sets:
        for record in measure(folder, args.alphabet, variants, args.oracle):
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
