"""What the model charges for papara-py's columns and for the truth's, read by read, on each of the
read's candidate edges (docs/accuracy.md, "Where the remaining loss is"): does the model prefer the
wrong path, or does the decoding miss a cheaper right one? And which term makes the difference?

    python3 scripts/pathcost.py SET_DIR RUN.h5 READ[,READ...] [EDGE,...]

SET_DIR holds tree.nwk, ref.fasta (or ref.phy), reads.fa and truth.tsv (DNA or protein); RUN.h5
is papara-py's run on it at the alphabet's default preset (e.g. notebook/accuracy-2026-11/loss/
perread.py's WORK_DIR/papara.h5). Per read and candidate edge (or each EDGE given) it prints the edge's
weight in the run, the best score on it (the reference scorer), and the cost of papara-py's and
of the truth's columns on it, split into the profile's gap columns (cgap), substitutions (Eq. 1's
M with the near states), the column profile cost X (protein), deletions and insertions. A path's cost is Eq. 1 along it: free read ends, a
deletion run opening at its first column. The truth's edge (the one its split names) is marked.
"""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba  # noqa: E402

from papara_py.io.alignment_input import match_tips, read_alignment  # noqa: E402
from papara_py.io.tree_input import read_tree  # noqa: E402
from papara_py.model.column_costs import (  # noqa: E402
    cell_cost,
    column_costs,
    kernel_costs,
    read_cost_row,
)
from papara_py.model.params import ScoringParams  # noqa: E402
from papara_py.model.reference_scorer import (  # noqa: E402
    column_penalties,
    diagonal_cost,
    profile_near,
    score_one,
)
from papara_py.phylo.encoding import state_mask_of  # noqa: E402
from papara_py.phylo.profiles import ProfileBuilder  # noqa: E402
from papara_py.phylo.tree import EdgeTree  # noqa: E402


def path_cost(read: np.ndarray, columns: list[int], profile: np.ndarray, near: np.ndarray, p: np.ndarray,
              costs=None) -> dict:
    """Eq. 1's cost of aligning `read` to `columns` (-1: inserted) on one edge's profile, by term
    (`costs`: the column profile costs as kernel_costs gives them, None: none)."""
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    parts = {"cgap": 0, "substitution": 0, "column": 0, "deletion": 0, "insertion": 0}
    previous = None
    for j, column in enumerate(columns):
        if column < 0:
            parts["insertion"] += int(p[4])
            continue
        parts["cgap"] += int(cg[column])
        parts["substitution"] += int(diagonal_cost(profile[column], near[column], read[j], states, p, None, 0, column))
        parts["column"] += int(cell_cost(costs, read_cost_row(costs, read[j]), column))
        if previous is not None and column > previous + 1:
            parts["deletion"] += int(oe[previous + 1] + ex[previous + 2:column].sum())
        previous = column
    return parts


def main() -> int:
    set_dir, run, names = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
    data = ba.Data.from_dir(set_dir)
    alignment = read_alignment(data.alignment)
    alphabet = alignment.alphabet
    data.alphabet = "dna" if alphabet.n_states == 4 else "protein"  # what the set's reads are read as
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = np.ascontiguousarray(match_tips(tree.tip_names, alignment, str(data.alignment)).tip_rows)
    builder = ProfileBuilder(tree, tip_rows, alphabet)
    params = ScoringParams.preset(alphabet.default_preset)
    p, costs = params.as_array(), kernel_costs(column_costs(tip_rows, alphabet, params.column_weight))
    all_tips = frozenset(tree.tip_names)
    edge_of_split = {ba.normalise_split(tree.edge_split(e), all_tips): e for e in range(tree.n_edges)}
    sequences = dict(ba._reads_forward(data))
    with h5py.File(run) as handle:  # the run file, opened once
        placed = ba.read_placements(handle, data)
        run_names = list(handle["reads/names"].asstr()[:])
        edges, weights = handle["reads/candidates/edge"][:], handle["reads/candidates/weight"][:]
    for name in names:
        q = run_names.index(name)
        true_columns, true_split = data.truth[name]
        true_edge = edge_of_split.get(ba.normalise_split(true_split, all_tips)) if true_split else None
        read = alphabet.read_code[np.frombuffer(sequences[name].encode(), np.uint8)]
        run_weight = {int(e): float(w) for e, w in zip(edges[q], weights[q]) if e >= 0}
        chosen = [int(e) for e in sys.argv[4].split(",")] if len(sys.argv) > 4 else list(run_weight)
        for edge in chosen:
            profile = builder.profiles(np.array([edge]))
            near = profile_near(profile)[0]
            costs_by = {who: path_cost(read, cols, profile[0], near, p, costs)
                        for who, cols in (("papara-py", placed[name].columns), ("truth", true_columns))}
            mark = " (the truth's edge)" if edge == true_edge else ""
            print(f"{name} edge {edge}{mark} weight {run_weight.get(edge, 0.0):.3f} "
                  f"best {score_one(read, profile[0], near, p, costs)}  " +
                  "  ".join(f"{who} {sum(c.values())} ({' / '.join(f'{k} {v}' for k, v in c.items() if v)})"
                            for who, c in costs_by.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
