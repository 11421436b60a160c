"""Time the CPU traceback of one batch (`pipeline.traceback_batch`, the main job's code path).

    python3 scripts/bench_traceback.py DATA_DIR [--reads 12500] [--threads 2] [--repeat 3]

DATA_DIR holds tree.nwk, ref.phy or ref.fasta and reads.fa (`sample_reads.py` or `simulate.py`
output). The first --reads reads, forward, each traced back on a random edge (seed 0: the
traceback's cost does not depend on the edge being the best one); prints the best of --repeat
wall times after one warm-up call (numba's cache).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from papara_py.io.inputs import iter_reads, match_tips, read_alignment, read_tree
from papara_py.io.reads import ReadSet
from papara_py.pairwise.params import ScoringParams
from papara_py.phylo.column_costs import column_costs
from papara_py.phylo.family import column_family
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree
from papara_py.pipeline import traceback_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--reads", type=int, default=12_500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reference = args.data / "ref.phy" if (args.data / "ref.phy").exists() else args.data / "ref.fasta"
    alignment = read_alignment(reference)
    tree = EdgeTree.from_dendropy(read_tree(args.data / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(reference)).tip_rows
    builder = ProfileBuilder(tree, tip_rows, alignment.alphabet)
    family = column_family(tip_rows, alignment.alphabet)
    reads = ReadSet.from_sequences(((r.name, r.sequence) for r, _ in zip(
        iter_reads(args.data / "reads.fa", alphabet=alignment.alphabet), range(args.reads))), alignment.alphabet)
    count = len(reads.lengths)
    indices = np.arange(count)
    edges = np.random.default_rng(0).integers(0, tree.n_edges, count)
    params = ScoringParams.preset(alignment.alphabet.default_preset)
    costs = column_costs(tip_rows, alignment.alphabet, params.column_weight)

    def once() -> float:
        started = time.perf_counter()
        traceback_batch(reads, indices, np.zeros(count, bool), edges, builder, params, family, costs, args.threads)
        return time.perf_counter() - started

    once()
    best = min(once() for _ in range(args.repeat))
    print(f"traceback_batch: {count} reads, {np.unique(edges).size} edges x {alignment.rows.shape[1]} columns, "
          f"{args.threads} threads: best of {args.repeat} {best:.2f} s")


if __name__ == "__main__":
    main()
