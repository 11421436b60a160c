"""Time the CPU traceback of one batch (`model/decode.trace_reads`, the main job's code path) and the
column votes over several edges (`model.votes.vote`, DESIGN 5's vote window).

    python3 scripts/bench_traceback.py DATA_DIR [--reads 12500] [--threads 2] [--repeat 3] [--vote 5]

DATA_DIR holds tree.nwk, ref.phy or ref.fasta and reads.fa (`sample_reads.py` or `simulate.py`
output). The first --reads reads, forward, each traced back on --vote random edges (seed 0: the
traceback's cost does not depend on the edge being the best one), then, with --vote above 1, each
read's columns voted over its edges' alignments; prints the best of --repeat wall times of each
stage after one warm-up call (numba's cache).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from papara_py.io.inputs import iter_reads, match_tips, read_alignment, read_tree
from papara_py.io.reads import ReadSet
from papara_py.model.column_terms import ColumnTerms
from papara_py.model.decode import trace_reads
from papara_py.model.params import ScoringParams
from papara_py.model.votes import vote
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--reads", type=int, default=12_500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vote", type=int, default=1, metavar="K", help="edges per read (default 1: no vote)")
    args = parser.parse_args()
    reference = args.data / "ref.phy" if (args.data / "ref.phy").exists() else args.data / "ref.fasta"
    alignment = read_alignment(reference)
    tree = EdgeTree.from_dendropy(read_tree(args.data / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(reference)).tip_rows
    builder = ProfileBuilder(tree, tip_rows, alignment.alphabet)
    reads = ReadSet.from_sequences(((r.name, r.sequence) for r, _ in zip(
        iter_reads(args.data / "reads.fa", alphabet=alignment.alphabet), range(args.reads))), alignment.alphabet)
    count = len(reads.lengths)
    pairs = np.repeat(np.arange(count), args.vote)  # each read's edges one after another
    edges = np.random.default_rng(0).integers(0, tree.n_edges, pairs.size)
    params = ScoringParams.preset(alignment.alphabet.default_preset)
    columns = ColumnTerms.of(tip_rows, alignment.alphabet, params.column_weight)
    residues, offsets = reads.select_residues(np.arange(count))
    group_ends = np.arange(1, count + 1) * args.vote

    def traced():
        return trace_reads(reads, pairs, np.zeros(pairs.size, bool), edges, builder, params, columns, args.threads)

    def timed(work) -> float:
        work()  # warm-up: numba's cache
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        return min(times)

    _, starts, cigars, rows, _ = traced()
    print(f"trace_reads: {pairs.size} alignments ({count} reads x {args.vote} edges), {np.unique(edges).size} edges "
          f"x {alignment.rows.shape[1]} columns, {args.threads} threads: best of {args.repeat} {timed(traced):.2f} s")
    if args.vote > 1:
        voted = vote(group_ends, starts, cigars, rows, residues, offsets)[3]
        seconds = timed(lambda: vote(group_ends, starts, cigars, rows, residues, offsets))
        print(f"vote: {count} reads over {args.vote} alignments each ({int(voted.sum())} changed), one thread: "
              f"best of {args.repeat} {seconds:.2f} s")


if __name__ == "__main__":
    main()
