"""Throughput of the numba CPU kernel (papara_py.engine.cpu) on the paper's shapes.

GCUPS = E * sum(read lengths) * m / seconds (DESIGN 4: the full rectangle, as the paper and
PaPaRa count; the kernel itself only computes the band). Blocks are scored by a
ThreadPoolExecutor of 1 and 2 threads (the engine's queue does the same job in production).
Data are random: profile state nibbles 1..15 with ~10% CGAP columns, reads of A/C/G/T; with
`--alphabet protein`, uint32 profiles of one of the 20 amino acids (a quarter any set of them)
with ~10% CGAP columns and reads of single amino acids (the same kernel source, compiled for
uint32 elements).

    python scripts/bench_cpu.py                      # every shape, 1 and 2 threads
    python scripts/bench_cpu.py --shape real --repeat 3
    python scripts/bench_cpu.py --asm                # packed instructions of the hot loop
    python scripts/bench_cpu.py --shape real --alphabet protein
    python scripts/bench_cpu.py --shape real --alphabet protein --preset protein --column-weight 1

Large m: read counts are scaled down so each measurement stays near --cells cell updates
(the "reads" column says how many were used). The machine is shared: take the best of
--repeat runs and say so.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Shape:
    name: str
    reads: int
    read_length: int
    edges: int
    columns: int


def shapes(which: str) -> list[Shape]:
    """Table 1 (1250 reads x 100 bp x 320 edges, m varies), Table 2 (reads vary, m = 5000), real."""
    table1 = [Shape(f"T1 m={m}", 1250, 100, 320, m) for m in (500, 1000, 5000, 10000, 50000, 100000)]
    table2 = [Shape(f"T2 q={q}", q, 100, 320, 5000) for q in (100, 250, 500, 1000, 1250)]
    real = [Shape("real", 2100, 104, 2597, 1072)]
    return {"table1": table1, "table2": table2, "real": real, "all": table1 + table2 + real}[which]


def make_data(shape: Shape, width: int, max_cells: float, rng: np.random.Generator, alphabet: str = "dna"):
    """Blocks, codes, offsets for `shape`, the read count cut so E * sum(n) * m <= max_cells."""
    from papara_py.engine.layout import block_count, make_block
    from papara_py.phylo.encoding import ALPHABETS

    chosen = ALPHABETS[alphabet]
    reads = max(1, min(shape.reads, int(max_cells // (shape.edges * shape.read_length * shape.columns))))
    size = (shape.edges, shape.columns)
    singles = (1 << np.arange(chosen.n_states)).astype(chosen.dtype)
    if alphabet == "dna":
        profiles = rng.integers(1, 16, size=size, dtype=np.uint8)
    else:
        profiles = np.where(rng.random(size) < 0.75, rng.choice(singles, size=size),
                            rng.integers(1, chosen.state_mask + 1, size=size, dtype=chosen.dtype))
    profiles |= np.where(rng.random(profiles.shape) < 0.1, chosen.cgap_bit, 0).astype(chosen.dtype)
    if chosen.stores_near_states:  # near-state fields (DESIGN 3): used by the weighted preset only
        profiles |= (rng.integers(0, 8, size=size) << chosen.near_shift).astype(chosen.dtype)
    blocks = [make_block(b, b * width, profiles[b * width:(b + 1) * width], width)
              for b in range(block_count(shape.edges, width))]
    codes = rng.choice(singles, size=reads * shape.read_length)
    offsets = np.arange(reads + 1, dtype=np.int64) * shape.read_length
    return blocks, codes, offsets


def time_blocks(blocks, codes, offsets, params, threads: int, strip: int, costs=None) -> float:
    """Wall seconds to score every block with `threads` worker threads."""
    from papara_py.engine.cpu import score_block

    def score(block):
        return score_block(block.lanes, codes, offsets, params, costs=costs, strip=strip)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        start = time.perf_counter()
        list(pool.map(score, blocks))
        return time.perf_counter() - start


def run(args: argparse.Namespace) -> None:
    from synthetic import random_costs  # a sibling script (scripts/ is not a package)

    from papara_py.engine.cpu import DEFAULT_STRIP, default_lane_width
    from papara_py.model.params import ScoringParams
    from papara_py.phylo.encoding import ALPHABETS

    width = args.lanes or default_lane_width()
    strip = args.strip or DEFAULT_STRIP
    params = ScoringParams.preset(args.preset) if args.preset else ScoringParams()
    params = replace(params, column_weight=args.column_weight)  # random data: a random table, or none at 0
    rng = np.random.default_rng(2026)
    print(f"# {args.alphabet}, penalties {params.setting()}, lanes W={width}, strip={strip}, best of {args.repeat}, "
          f"threads {args.threads}")
    print("| shape | reads x bp | edges | m | threads | wall s | GCUPS |")
    print("|---|---|---|---|---|---|---|")
    for shape in shapes(args.shape):
        blocks, codes, offsets = make_data(shape, width, args.cells, rng, args.alphabet)
        costs = random_costs(rng, shape.columns, params, ALPHABETS[args.alphabet])
        reads = offsets.size - 1
        time_blocks(blocks[:1], codes[:offsets[1]], offsets[:2], params, 1, strip, costs)  # compile / load
        cells = shape.edges * codes.size * shape.columns
        for threads in args.threads:
            best = min(time_blocks(blocks, codes, offsets, params, threads, strip, costs)
                       for _ in range(args.repeat))
            print(f"| {shape.name} | {reads} x {shape.read_length} | {shape.edges} | {shape.columns} "
                  f"| {threads} | {best:.2f} | {cells / best / 1e9:.1f} |", flush=True)


def hot_loop_instructions() -> None:
    """List the instructions of the DP loops of the int16 and int32 kernels, with and without near states.

    Inspection needs freshly compiled code, so main() points NUMBA_CACHE_DIR at an empty folder.
    The DP loops are the basic blocks that jump back to themselves and hold packed minimum
    instructions (three per DP step, a fourth in the last row's copy, which also keeps the
    running best score); LLVM may unroll them, so a block can hold several steps.
    """
    from papara_py.engine import cpu
    from papara_py.model.params import ScoringParams

    width = cpu.default_lane_width()
    lanes = np.full((40, width), 15, dtype=np.uint8)
    for params in (ScoringParams.preset("paper"), ScoringParams()):  # Eq. 1's step and the one with near states
        for force_int32 in (False, True):
            cpu.score_block(lanes, np.ones(3, np.uint8), np.array([0, 3], np.int64), params, force_int32=force_int32)
    for signature in cpu._score_read.signatures:
        asm = cpu._score_read.inspect_asm(signature)
        for block in re.split(r"\n(?=\.LBB\d+_\d+:)", asm):
            label = block.split(":", 1)[0]
            jumps_back = re.search(rf"\bj\w+\s+{re.escape(label)}\b", block)
            if not (jumps_back and re.search(r"\bvpmins[wd]\b", block)):
                continue
            counts: collections.Counter[str] = collections.Counter()
            for line in block.splitlines()[1:]:
                fields = line.split()
                if fields and not fields[0].startswith((".", "#")):
                    register = next((r for r in ("zmm", "ymm", "xmm") if f"%{r}" in line), "scalar")
                    counts[f"{fields[0]} ({register})"] += 1
                    if fields[-1] == label:  # the back edge ends the loop
                        break
            listing = ", ".join(f"{count} {name}" for name, count in
                                sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            step = "Eq. 1" if str(signature[1]) == "none" else "near states"
            print(f"{signature[4].dtype} {step} W={width} loop {label}: {sum(counts.values())} instructions: "
                  f"{listing}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["table1", "table2", "real", "all"], default="all")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is kept")
    parser.add_argument("--cells", type=float, default=6.5e11, help="cell budget per measurement")
    parser.add_argument("--strip", type=int, default=0, help="column strip (default: the kernel's)")
    parser.add_argument("--lanes", type=int, default=0, help="block width W (default: default_lane_width())")
    parser.add_argument("--alphabet", choices=["dna", "protein"], default="dna",
                        help="profile elements: dna (uint8) or protein (uint32)")
    parser.add_argument("--preset", default="", help="penalties (default: the default preset; robust: Eq. 1)")
    parser.add_argument("--column-weight", type=float, default=0.0,
                        help="protein: score with a random column profile cost table up to this weight's bound "
                             "(default 0: none, whatever the preset's weight)")
    parser.add_argument("--asm", action="store_true", help="print the hot loop's instructions and exit")
    args = parser.parse_args()
    if args.asm:
        with tempfile.TemporaryDirectory(prefix="bench_cpu_asm_") as cache:
            os.environ["NUMBA_CACHE_DIR"] = cache  # read when numba is first imported
            hot_loop_instructions()
        return
    run(args)


if __name__ == "__main__":
    sys.exit(main())
