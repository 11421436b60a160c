"""Measurement only: what DESIGN 4's band costs. Each read of a papara-py run is re-aligned on
its best edge with the same costs and tie-breaking over the whole matrix (no band: residue j may
sit in any column, residues may be inserted before column 0), and both are scored against the
truth (docs/ACCURACY.md, "Column family residues for protein", What is left: the band).

    python3 scripts/proto_band.py --alphabet protein [--margin W] DATA/sets/RRM-indel DATA/val/RRM-indel-101 ...

With --margin W the re-alignment keeps DESIGN 4's band widened by W offsets on each side (the
model change a margin would be) instead of the whole matrix; --margin 0 reproduces the run.

Each folder is a leave-taxa-out set of `bench_accuracy.py` / `accuracy_study.py`; papara-py runs
with the alphabet's default penalties. Prints one JSON line per set: column accuracy banded (the
run) and unbanded (the re-alignment), and how many reads the whole matrix scores lower. The best
edge stays the banded run's; reverse-strand reads keep their banded columns.
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
from papara_py.io.run_file import RunFile
from papara_py.model.family import column_family
from papara_py.phylo.encoding import ALPHABETS, near_states
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

INF = 1 << 40

@njit(cache=True)
def full_dp(read, prof, near, cgap_bit, state_mask, p, margin, open_at):
    """Eq. 1 over the whole (m + 1) x (n + 1) matrix (row 0: before column 0, where residues can
    only be inserted; column 0: no residue yet, free at every column), DESIGN 5's tie-breaking:
    returns (score, each residue's column, -1 where inserted). With `margin` >= 0, DESIGN 4's
    band widened by that many offsets on each side instead (residue j in columns [j - margin,
    j + m - n + margin], no insertion before column 0, the free start in columns up to
    m - n - 1 + margin): the model change the measurement is for. `open_at` ([m]) is each
    column's gap-open cost: p's gap_open everywhere for Eq. 1 (scripts/proto_gap_open.py varies it)."""
    n, m = read.shape[0], prof.shape[0]
    mismatch, cgap, _, gap_extend, insertion, near_mismatch = p  # gap_open: open_at
    S = np.full((m + 1, n + 1), INF, np.int64)
    D = np.full((m + 1, n + 1), INF, np.int64)
    whole = margin < 0
    for i in range(m + 1):  # S[i, 0]: no residue yet, after column i - 1
        S[i, 0] = 0 if whole or i <= m - n + margin else INF
    for j in range(1, n + 1):
        S[0, j] = S[0, j - 1] + insertion if whole else INF

    def costs(i, j):
        a = prof[i - 1]
        gap = (a & cgap_bit) != 0
        match = 0 if a & state_mask & read[j - 1] else (near_mismatch if near[i - 1] & read[j - 1] else mismatch)
        return match + (cgap if gap else 0), (0 if gap else open_at[i - 1] + gap_extend), (0 if gap else gap_extend)

    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if not whole and not -margin <= i - j <= m - n + margin:
                continue  # outside the widened band: +infinity
            diagonal, open_extend, extend = costs(i, j)
            D[i, j] = min(S[i - 1, j] + open_extend, D[i - 1, j] + extend)
            S[i, j] = min(S[i - 1, j - 1] + diagonal, D[i, j], S[i, j - 1] + insertion)
    end = 1
    for i in range(2, m + 1):
        if S[i, n] < S[end, n]:
            end = i
    columns = np.full(n, -1, np.int64)
    i, j, in_d = end, n, False
    while j > 0:
        if i == 0:  # residues inserted before column 0
            j -= 1
            continue
        diagonal, open_extend, _ = costs(i, j)
        if in_d:
            in_d = D[i, j] != S[i - 1, j] + open_extend
            i -= 1
        elif S[i, j] == S[i - 1, j - 1] + diagonal:
            columns[j - 1] = i - 1
            i -= 1
            j -= 1
        elif S[i, j] == D[i, j]:
            in_d = True
        else:
            j -= 1
    return S[end, n], columns


def measure(folder: Path, alphabet_name: str, margin: int) -> dict:
    """Banded and unbanded column accuracy of one set (module docstring)."""
    data = ba.Data.from_dir(folder, folder.name, alphabet_name)
    work = Path(tempfile.mkdtemp())
    banded, _ = ba.run_papara_inprocess(data, work, None, 2)
    alphabet = ALPHABETS[alphabet_name]
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = match_tips(tree.tip_names, read_alignment(data.alignment, alphabet=alphabet_name), "tree").tip_rows
    builder = ProfileBuilder(tree, tip_rows, alphabet)
    family = column_family(tip_rows, alphabet)
    with RunFile(work / "papara.h5") as run:
        names, best, scores, strands = (run.names(), run.column("best_edge"), run.column("score"),
                                        run.column("strand"))
        p = np.array([run.record["parameters"][k] for k in
                      ("mismatch", "cgap", "gap_open", "gap_extend", "insertion", "near_mismatch")], np.int64)
    reads = dict(ba._reads_forward(data))
    unbanded, cheaper = {}, 0
    for name, edge, score, strand in zip(names, best, scores, strands):
        if name not in banded:
            continue
        if strand != "+":
            unbanded[name] = banded[name]
            continue
        profile = builder.profiles(np.array([edge]))[0]
        code = alphabet.read_code[np.frombuffer(reads[name].encode(), np.uint8)]
        whole, columns = full_dp(code, profile, near_states(profile, alphabet, family), alphabet.cgap_bit,
                                 alphabet.state_mask, p, margin, np.full(len(profile), p[2], np.int64))
        cheaper += whole < score
        unbanded[name] = ba.Placement([int(c) for c in columns], banded[name].split)
    return {"set": folder.name, "banded": round(ba.score(banded, data.truth)["column_accuracy"], 4),
            "unbanded": round(ba.score(unbanded, data.truth)["column_accuracy"], 4), "reads_cheaper": int(cheaper)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alphabet", choices=list(ALPHABETS), default="dna")
    parser.add_argument("--margin", type=int, default=-1,
                        help="widen DESIGN 4's band by this many offsets on each side (default: no band at all)")
    parser.add_argument("sets", nargs="+", type=Path)
    args = parser.parse_args()
    for folder in args.sets:
        print(json.dumps(measure(folder, args.alphabet, args.margin) | {"margin": args.margin}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
