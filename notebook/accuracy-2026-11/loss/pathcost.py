"""What the model charges for papara-py's columns and for the truth's, read by read, on each of the
read's candidate edges (docs/accuracy.md, "Where the remaining loss is"): does the model prefer the
wrong path, or does the decoding miss a cheaper right one? And which term makes the difference?

    python3 notebook/accuracy-2026-11/loss/pathcost.py SET_DIR RUN.h5 READ[,READ...]

SET_DIR holds tree.nwk, ref.fasta (or ref.phy), reads.fa and truth.tsv (a DNA set); RUN.h5 is
papara-py's run on it at the `weighted` preset (e.g. perread.py's WORK_DIR/papara.h5). Per read
and candidate edge it prints the edge's weight, the best score on it (the reference scorer), and
the cost of papara-py's and of the truth's columns on it, split into the profile's gap columns
(cgap), substitutions (Eq. 1's M plus near states), deletions and insertions. A path's cost
is Eq. 1 along it: free read ends, a deletion run opening at its first column.
"""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import bench_accuracy as ba  # noqa: E402
from papara_py.io.inputs import match_tips, read_alignment, read_tree  # noqa: E402
from papara_py.model.params import ScoringParams  # noqa: E402
from papara_py.model.reference_scorer import column_penalties, diagonal_cost, profile_near, score_one  # noqa: E402
from papara_py.phylo.encoding import state_mask_of  # noqa: E402
from papara_py.phylo.profiles import ProfileBuilder  # noqa: E402
from papara_py.phylo.tree import EdgeTree  # noqa: E402


def path_cost(read: np.ndarray, columns: list[int], profile: np.ndarray, near: np.ndarray, p: np.ndarray) -> dict:
    """Eq. 1's cost of aligning `read` to `columns` (-1: inserted) on one edge's profile, by term."""
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    parts = {"cgap": 0, "substitution": 0, "deletion": 0, "insertion": 0}
    previous = None
    for j, column in enumerate(columns):
        if column < 0:
            parts["insertion"] += int(p[4])
            continue
        parts["cgap"] += int(cg[column])
        parts["substitution"] += int(diagonal_cost(profile[column], near[column], read[j], states, p, None, 0, column))
        if previous is not None and column > previous + 1:
            parts["deletion"] += int(oe[previous + 1] + ex[previous + 2:column].sum())
        previous = column
    return parts


def main() -> int:
    set_dir, run, names = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
    data = ba.Data.from_dir(set_dir, alphabet="dna")
    alignment = read_alignment(data.alignment)
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = match_tips(tree.tip_names, alignment, str(data.alignment)).tip_rows
    builder = ProfileBuilder(tree, np.ascontiguousarray(tip_rows), alignment.alphabet)
    p = ScoringParams.preset(alignment.alphabet.default_preset).as_array()
    placed = ba.read_run_file(run, data)
    sequences = dict(ba._reads_forward(data))
    with h5py.File(run) as handle:
        run_names = [n.decode() if isinstance(n, bytes) else n for n in handle["reads/names"][:]]
        edges, weights = handle["reads/candidates/edge"][:], handle["reads/candidates/weight"][:]
    for name in names:
        q = run_names.index(name)
        read = alignment.alphabet.read_code[np.frombuffer(sequences[name].encode(), np.uint8)]
        for edge, weight in zip(edges[q], weights[q]):
            if edge < 0:
                continue
            profile = builder.profiles(np.array([edge]))
            near = profile_near(profile, None)[0]
            costs = {who: path_cost(read, cols, profile[0], near, p)
                     for who, cols in (("papara-py", placed[name].columns), ("truth", data.truth[name][0]))}
            print(f"{name} edge {edge} weight {weight:.3f} best {score_one(read, profile[0], near, p, None)}  " +
                  "  ".join(f"{who} {sum(c.values())} ({' / '.join(f'{k} {v}' for k, v in c.items())})"
                            for who, c in costs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
