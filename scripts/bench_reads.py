"""Time `ReadSet.select_residues`, which every batch calls (strand decision, kernels, traceback).

    python3 scripts/bench_reads.py [--reads 12500] [--length 150]

Prints the median of 7 calls with half the reads reverse-complemented and with none.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from papara_py.io.reads import ReadSet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=12_500)
    parser.add_argument("--length", type=int, default=150)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACGT", np.uint8)
    reads = ReadSet.from_sequences((f"r{i}", letters[rng.integers(0, 4, args.length)].tobytes())
                                   for i in range(args.reads))
    indices = np.arange(args.reads)
    for label, reverse in (("half reversed", rng.random(args.reads) < 0.5), ("none reversed", None)):
        times = []
        for _ in range(7):
            started = time.perf_counter()
            reads.select_residues(indices, reverse)
            times.append(time.perf_counter() - started)
        print(f"select_residues, {args.reads} reads of {args.length} bp, {label}: median {np.median(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
