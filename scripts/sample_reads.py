"""Sample-scale DNA reads cut from a reference alignment's rows, for throughput runs
(`bench_hybrid.py`; notebook/BENCHMARKS.md's 2,101 / 42,000 / 1,000,000-read runs on rpsS).

    python3 scripts/sample_reads.py -t TREE -s REF --reads 1000000 --out DIR [--seed 23]

REF is a DNA alignment, FASTA or PHYLIP (read by papara-py's own parser). Each read: a random
row of the alignment (gaps removed, upper case; rows shorter than the read
are left out), a random start, `--length` bases, each base replaced by a random one with
probability `--substitution`, and the whole read reverse-complemented with probability
`--reverse`. Writes DIR/reads.fa (`read_0000000`, ...) and copies the tree and the alignment
beside it as tree.nwk and ref.phy or ref.fasta (as given), the layout `bench_hybrid.py` reads. The rows are drawn for all reads first, so
another --reads gives other reads, not a prefix. No true columns are kept: for accuracy use
`bench_accuracy.py`. (Until 2026-11-26 this generator lived outside the repository as
`.devrun/onem.py`; notebook/BENCHMARKS.md names it so in its earlier sections, and the output is the
same, byte for byte.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

from papara_py.io.alignment_input import read_alignment
from papara_py.phylo.encoding import COMPLEMENT_ASCII, IS_GAP

BASES = np.frombuffer(b"ACGT", np.uint8)


def reference_rows(alignment: Path) -> list[np.ndarray]:
    """The alignment's rows as uint8 bases (upper case, as the parser gives them), gaps removed."""
    return [row[~IS_GAP[row]] for row in read_alignment(alignment, alphabet="dna").rows]


def write_reads(rows: list[np.ndarray], count: int, length: int, substitution: float, reverse: float, seed: int,
                out: Path) -> None:
    """`count` reads (module docstring) into `out` as FASTA, one line per sequence."""
    rows = [r for r in rows if len(r) >= length]
    if not rows:
        raise SystemExit(f"no alignment row has {length} bases")
    rng = np.random.default_rng(seed)
    which = rng.integers(0, len(rows), count)
    with open(out, "wb") as handle:
        for i in range(count):
            row = rows[which[i]]
            start = rng.integers(0, len(row) - length + 1)
            read = row[start:start + length].copy()
            hit = rng.random(length) < substitution
            read[hit] = BASES[rng.integers(0, 4, hit.sum())]
            if rng.random() < reverse:
                read = COMPLEMENT_ASCII[read[::-1]]
            handle.write(b">read_%07d\n" % i + read.tobytes() + b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-t", "--tree", type=Path, required=True)
    parser.add_argument("-s", "--alignment", type=Path, required=True, help="FASTA alignment (the reference)")
    parser.add_argument("--reads", type=int, required=True)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--substitution", type=float, default=0.01)
    parser.add_argument("--reverse", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(args.tree, args.out / "tree.nwk")
    fasta = args.alignment.read_bytes().lstrip().startswith(b">")
    shutil.copy(args.alignment, args.out / ("ref.fasta" if fasta else "ref.phy"))
    write_reads(reference_rows(args.alignment), args.reads, args.length, args.substitution, args.reverse, args.seed,
                args.out / "reads.fa")
    return 0


if __name__ == "__main__":
    sys.exit(main())
