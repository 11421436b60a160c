"""Measure the posterior step's fixed-point arithmetic (papara_py/model): its error against the
same recurrences in float64, and its speed.

    python3 scripts/measure_posterior.py DATA_DIR [--columns 1072] [--length 150] [--reads 20]
        [--candidates 5] [--temperatures 0.5 1 2 4] [--scales 64 256 1024 4096 16384]
        [--time [--timing-temperature 1] [--repeat 15] [--no-errors]]

DATA_DIR holds tree.nwk, ref.phy or ref.fasta (the alignment, cut to its first --columns
columns). Reads of --length residues are simulated from random reference rows (10% substitutions,
2% indels; seed 0); each read's --candidates best edges by Eq. 1 (the reference scorer over all
edges) are its candidates, as the engine would give them. For every temperature and scale it
prints the largest error, over all reads, of Z (cost units), of one edge's M posteriors and of
the pooled posteriors (probability), of the edge weights, and how many reads' MEA columns
differ from the MEA of the float64 pooled posteriors (rounded to PROB_ONE units: exact ties there
fall to the tie rule, in fixed point to the rounding). With --time: ns per cell and state of the
Forward + Backward (one thread), against the integer traceback's fill_band_into per cell.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from papara_py.io.alignment_input import match_tips, read_alignment
from papara_py.io.tree_input import read_tree
from papara_py.model.column_costs import column_costs, kernel_costs, read_cost_row
from papara_py.model.fixed_point import PROB_ONE, PosteriorTables
from papara_py.model.mea import mea_alignment
from papara_py.model.params import ScoringParams
from papara_py.model.posterior import (
    SIGN,
    backward_pool,
    decode_batch,
    edge_terms,
    forward,
)
from papara_py.model.reference_scorer import (
    column_penalties,
    diagonal_cost,
    fill_band_into,
    profile_near,
    score_one,
)
from papara_py.phylo.encoding import state_mask_of
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree


@njit(cache=True)
def _smin(a, b, T):
    lo = min(a, b)
    return lo - T * math.log1p(math.exp(-abs(a - b) / T))


@njit(cache=True)
def float_posteriors(read, profile, near, p, costs, T):
    """The kernels' recurrences (posterior.py) in float64 over the whole rectangle, by column:
    (Z, M posteriors [n, m])."""
    n = read.shape[0]
    m = profile.shape[0]
    cg, oe, ex = column_penalties(profile, p)
    states = state_mask_of(profile)
    cm = np.empty((n, m))
    for j in range(n):
        row = read_cost_row(costs, read[j])
        for i in range(m):
            cm[j, i] = diagonal_cost(profile[i], near[i], read[j], states, p, costs, row, i) + cg[i]
    ins = float(p[4])
    inf = np.inf
    FM = np.full((n, m), inf)
    FI = np.full((n, m), inf)
    FD = np.full((n, m), inf)
    for j in range(n):
        for i in range(m):
            if j == 0:
                FM[j, i] = cm[j, i]
                FI[j, i] = ins
            else:
                if i > 0:
                    FM[j, i] = cm[j, i] + _smin(_smin(FM[j - 1, i - 1], FI[j - 1, i - 1], T), FD[j - 1, i - 1], T)
                FI[j, i] = ins + _smin(_smin(FM[j - 1, i], FI[j - 1, i], T), FD[j - 1, i], T)
            if i > 0:
                mi = _smin(FM[j, i - 1], FI[j, i - 1], T) + oe[i]
                FD[j, i] = _smin(mi, FD[j, i - 1] + ex[i], T) if FD[j, i - 1] < inf else mi
    z = inf
    for i in range(m):
        t = _smin(_smin(FM[n - 1, i], FI[n - 1, i], T), FD[n - 1, i], T)
        z = t if z == inf else _smin(z, t, T)
    B = np.empty((n, m))
    BD = np.empty((n, m))
    post = np.empty((n, m))
    for j in range(n - 1, -1, -1):
        for i in range(m - 1, -1, -1):
            if j == n - 1:
                x = 0.0
            else:
                x = ins + B[j + 1, i]
                if i < m - 1:
                    x = _smin(cm[j + 1, i + 1] + B[j + 1, i + 1], x, T)
            if i < m - 1:
                B[j, i] = _smin(x, oe[i + 1] + BD[j, i + 1], T)
                BD[j, i] = _smin(x, ex[i + 1] + BD[j, i + 1], T)
            else:
                B[j, i] = x
                BD[j, i] = x
            post[j, i] = math.exp(-(FM[j, i] + B[j, i] - z) / T) if FM[j, i] < inf else 0.0
    return z, post


def simulate(rows: np.ndarray, alphabet, length: int, count: int, rng) -> list[np.ndarray]:
    """Reads of `length` residues from random rows: 10% substitutions, 2% insertions, 2% deletions."""
    letters = np.frombuffer(b"ACGT" if alphabet.name == "dna" else b"ARNDCQEGHILKMFPSTWYV", np.uint8)
    reads = []
    while len(reads) < count:
        row = rows[rng.integers(rows.shape[0])]
        residues = row[np.isin(row, np.frombuffer(b"-.?", np.uint8), invert=True)]
        if residues.size < length + 10:
            continue
        start = rng.integers(0, residues.size - length - 5)
        out = []
        for letter in residues[start:]:
            u = rng.random()
            if u < 0.02:
                continue
            out.append(letters[rng.integers(letters.size)] if u < 0.12 else letter)
            if rng.random() < 0.02:
                out.append(letters[rng.integers(letters.size)])
            if len(out) == length:
                break
        if len(out) == length:
            reads.append(alphabet.read_code[np.array(out, np.uint8)])
    return reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--columns", type=int, default=1072)
    parser.add_argument("--length", type=int, default=150)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--scales", type=int, nargs="+", default=[64, 256, 1024, 4096, 16384])
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--timing-temperature", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-errors", action="store_true", help="only --time")
    args = parser.parse_args()
    reference = args.data / "ref.phy" if (args.data / "ref.phy").exists() else args.data / "ref.fasta"
    alignment = read_alignment(reference)
    tree = EdgeTree.from_dendropy(read_tree(args.data / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(reference)).tip_rows[:, :args.columns]
    m = tip_rows.shape[1]
    builder = ProfileBuilder(tree, np.ascontiguousarray(tip_rows), alignment.alphabet)
    params = ScoringParams.preset(alignment.alphabet.default_preset)
    p = params.as_array()
    table = column_costs(tip_rows, alignment.alphabet, params.column_weight)
    profiles = builder.profiles(np.arange(tree.n_edges))
    near = profile_near(profiles)
    costs = kernel_costs(table)
    rng = np.random.default_rng(0)
    reads = simulate(tip_rows, alignment.alphabet, args.length, args.reads, rng)
    scores = np.array([[score_one(r, profiles[e], near[e], p, costs) for e in range(tree.n_edges)] for r in reads])
    order = np.argsort(scores, axis=1, kind="stable")[:, :args.candidates]
    print(f"{alignment.alphabet.name}: {len(reads)} reads of {args.length} against {m} columns, {tree.n_edges} edges, "
          f"{args.candidates} candidates each; preset {params.preset_name()}")
    codes = np.concatenate(reads)
    offsets = np.concatenate(([0], np.cumsum([r.size for r in reads]))).astype(np.int64)
    for T in [] if args.no_errors else args.temperatures:
        exact = []
        for q, read in enumerate(reads):
            zs, posts = zip(*[float_posteriors(read, profiles[e], near[e], p, costs, T) for e in order[q]])
            zs = np.array(zs)
            raw = np.exp(-(zs - zs.min()) / T)
            weights = raw / raw.sum()
            pooled = sum(w * post for w, post in zip(weights, posts))
            exact.append((zs, posts, weights, pooled))
        for S in args.scales:
            tables = PosteriorTables.build(T, S)
            err_z = err_post = err_pool = err_w = 0.0
            differ = 0
            cols, pp, w, acc = decode_batch(codes, offsets, order, None, profiles, near, p, table, tables)
            for q, read in enumerate(reads):
                zs, posts, weights, pooled = exact[q]
                n = read.size
                F = np.empty((n, m), np.int32)
                rows = np.empty((4, m + n), np.int64)
                fixed_pool = np.zeros((n, m), np.int64)
                for c, e in enumerate(order[q]):
                    et = edge_terms(profiles[e:e + 1], p, tables.shift)[0]
                    z = forward(read, profiles[e], near[e], p, costs, et, tables.shift, tables.softmin, F, rows[0],
                                rows[1], SIGN)
                    err_z = max(err_z, abs(z / S - zs[c]))
                    one = np.zeros_like(F)
                    backward_pool(read, profiles[e], near[e], p, costs, et, tables.shift, tables.softmin,
                                  tables.probability, F, z, PROB_ONE, one, rows[0], rows[1], rows[2], rows[3], SIGN)
                    err_post = max(err_post, np.abs(one / PROB_ONE - posts[c]).max())
                err_w = max(err_w, np.abs(w[q] / PROB_ONE - weights).max())
                # the pooled posteriors through decode's own path: rebuild from its weights
                for c, e in enumerate(order[q]):
                    if w[q, c]:
                        et = edge_terms(profiles[e:e + 1], p, tables.shift)[0]
                        z = forward(read, profiles[e], near[e], p, costs, et, tables.shift, tables.softmin, F,
                                    rows[0], rows[1], SIGN)
                        part = np.zeros_like(F)
                        backward_pool(read, profiles[e], near[e], p, costs, et, tables.shift, tables.softmin,
                                      tables.probability, F, z, w[q, c], part, rows[0], rows[1], rows[2], rows[3], SIGN)
                        fixed_pool += part
                err_pool = max(err_pool, np.abs(fixed_pool / PROB_ONE - pooled).max())
                # the MEA of the float64 pool, rounded to PROB_ONE units
                float_cols, _, _ = mea_alignment(np.rint(pooled * PROB_ONE).astype(np.int32))
                differ += not np.array_equal(float_cols, cols[offsets[q]:offsets[q + 1]])
            print(f"T {T:g} S {S:6d} (tables {tables.softmin.size:6d} + {tables.probability.size:6d}): "
                  f"|dZ| {err_z:.5f}  |dP edge| {err_post:.5f}  |dP pooled| {err_pool:.5f}  |dw| {err_w:.5f}  "
                  f"MEA differs from float's {differ}/{len(reads)}  mean accuracy {np.nanmean(acc):.4f}")
    if args.time:
        timing(reads, order, profiles, near, p, table, costs, m, args)


def timing(reads, order, profiles, near, p, column_costs, costs, m, args) -> None:
    """ns per cell of the Forward, the Backward (with its pooling) and the integer traceback's
    fill_band_into on the same (read, edge) pairs, one thread: the least of --repeat runs of each,
    in this thread's CPU time (the machine may be shared), and of the whole decode_batch."""
    tables = PosteriorTables.build(args.timing_temperature)
    codes = np.concatenate(reads)
    offsets = np.concatenate(([0], np.cumsum([r.size for r in reads]))).astype(np.int64)
    cells = sum(r.size * m for r in reads) * order.shape[1]  # the posterior step's: every column of each row
    band_cells = sum(r.size * (m - r.size + 1) for r in reads) * order.shape[1]  # the integer traceback's
    et = edge_terms(profiles, p, tables.shift)
    longest = max(r.size for r in reads)
    F_space = np.empty(longest * m, np.int32)
    rows = np.empty((4, m + longest), np.int64)
    S_space = np.empty(longest * m, np.int64)
    D_space = np.empty(longest * m, np.int64)
    zs = {}

    def band(space, read):
        return space[:read.size * (m - read.size + 1)].reshape((read.size, m - read.size + 1))

    def rectangle(space, read):
        return space[:read.size * m].reshape((read.size, m))

    def fwd():
        for q, read in enumerate(reads):
            for e in order[q]:
                zs[q, e] = forward(read, profiles[e], near[e], p, costs, et[e], tables.shift, tables.softmin,
                                   rectangle(F_space, read), rows[0], rows[1], SIGN)

    def bwd():  # F_space holds the last edge's Forward; the Backward's work does not depend on it
        for q, read in enumerate(reads):
            pooled = np.zeros((read.size, m), np.int32)
            for e in order[q]:
                backward_pool(read, profiles[e], near[e], p, costs, et[e], tables.shift, tables.softmin,
                              tables.probability, rectangle(F_space, read), zs[q, e], PROB_ONE // 8, pooled, rows[0],
                              rows[1], rows[2], rows[3], SIGN)

    def integer():
        for q, read in enumerate(reads):
            for e in order[q]:
                fill_band_into(read, profiles[e], near[e], p, costs, band(S_space, read), band(D_space, read))

    def batch():
        decode_batch(codes, offsets, order, None, profiles, near, p, column_costs, tables)

    runs = {"forward": fwd, "backward": bwd, "fill_band_into": integer, "decode_batch": batch}
    for work in runs.values():
        work()  # numba's cache
    best = dict.fromkeys(runs, np.inf)
    for _ in range(args.repeat):
        for name, work in runs.items():
            started = time.thread_time()
            work()
            best[name] = min(best[name], time.thread_time() - started)
    ns = {name: 1e9 * seconds / (band_cells if name == "fill_band_into" else cells) for name, seconds in best.items()}
    both = ns["forward"] + ns["backward"]
    print(f"one thread, T {tables.temperature:g}, S {tables.scale}, {cells} cells (reads x candidates x columns; "
          f"the integer traceback's band {band_cells}), "
          f"least of {args.repeat} runs (thread CPU time):")
    print(f"  Forward {ns['forward']:.2f} + Backward {ns['backward']:.2f} = {both:.2f} ns per cell, "
          f"{both / 3:.2f} ns per cell-state (3 states)")
    print(f"  integer fill_band_into {ns['fill_band_into']:.2f} ns per cell: ratio {both / ns['fill_band_into']:.2f}")
    print(f"  decode_batch (Forward on all, Backward on weighted edges, MEA) {ns['decode_batch']:.2f} ns per cell")


if __name__ == "__main__":
    sys.exit(main())
