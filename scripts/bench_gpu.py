"""Verify, then time, the OpenCL scorer on a GPU; prints GCUPS tables (notebook/BENCHMARKS.md, GPU section).

    python3 scripts/bench_gpu.py [--out DIR] [--quick] [--alphabet protein]

1. Discovery: lists the OpenCL devices (registering NVIDIA's ICD itself when needed).
2. Verification, before any timing: every variant timed here (PTX and portable 16-bit lanes,
   32-bit lanes, several stripe heights) is checked bit-identical to the reference scorer on
   random chunks with band-edge cases; any mismatch exits with status 1.
3. Instruction rates (NVIDIA only): fused add-min and min on u16x2, and LOP3, in lanes per
   clock per SM, for the kernel's ceiling.
4. Waiting: on one pinned core, a numba loop is timed alone and while a long chunk runs on the
   device, with the scorer's own wait and with the usual alternatives (a completion callback,
   clWaitForEvents); the process CPU time beyond the loop's own shows a spinning driver.
5. Timing: GCUPS = E * sum(read lengths) * m / seconds (DESIGN 4, full rectangle), from the
   device time of the band kernels (profiling events) and from the wall time of score_chunk
   (uploads, top-k and copies included); median of --repeat runs after a warm-up.
With --out, the build logs, the PTX of each variant and a JSON of all numbers go there.
`--alphabet protein` verifies and times uint32 profiles (20 amino-acid states, -DPROF_BITS=32):
the packed variants with split state sets, the wide one on the 32-bit lane. `--column-weight W`
(protein only) adds column profile costs (model/column_costs.py, the kernel's -DCOLUMN_COSTS=1):
a random table of 0..ScoringParams.column_cost_bound() (about 9 W) per read code and column, for
verification and timing alike, so GCUPS with and without the term can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from numba import njit

from papara_py import kernels
from papara_py.engine.band_inputs import Variant
from papara_py.engine.gpu import GpuScorer
from papara_py.engine.opencl_devices import build_program, describe_devices, discover_devices
from papara_py.model.params import DEFAULT_PRESET, PRESETS, ScoringParams
from papara_py.model.reference_scorer import score_matrix_reference
from papara_py.phylo.encoding import ALPHABETS, DNA, PROTEIN, Alphabet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import (  # a sibling script (scripts/ is not a package)
    CHUNK_BLOCKS,
    as_chunks,
    random_costs,
    random_profiles,
    random_reads,
    read_lengths,
    time_chunks,
)

PARAMS = ScoringParams()


def random_instance(rng: np.random.Generator, m: int, n_edges: int, n_reads: int,
                    params: ScoringParams, alphabet: Alphabet = DNA):
    """Profiles, reads (including 1 and m-1 residues), the column profile costs (with
    `params.column_weight`) and the expected k-best lists."""
    lengths = np.r_[1, m - 1, rng.integers(1, m, size=n_reads)]
    profiles = random_profiles(rng, n_edges, m, alphabet)
    codes, offsets = random_reads(rng, lengths, alphabet)
    costs = random_costs(rng, m, params, alphabet)
    ref = score_matrix_reference([codes[offsets[q]:offsets[q + 1]] for q in range(lengths.size)],
                                 profiles, params, costs)
    order = np.lexsort((np.broadcast_to(np.arange(n_edges), ref.shape), ref), axis=1)
    return profiles, codes, offsets, costs, ref, order


def verify(scorers: dict[str, GpuScorer], rng: np.random.Generator, rounds: int,
           alphabet: Alphabet = DNA) -> dict[str, int]:
    """Mismatching reads per scorer over random chunks (k-best scores and edges vs the reference),
    every case with PARAMS' column weight (column profile costs where it is not 0)."""
    def random_params() -> ScoringParams:
        values = rng.integers(0, 8, size=5).tolist()
        near = int(rng.integers(0, values[0] + 1)) if rng.random() < 0.5 else values[0]
        return ScoringParams(*values, near_mismatch=near)

    cases = [(int(rng.integers(2, 200)), int(rng.integers(1, 90)), int(rng.integers(1, 12)), random_params())
             for _ in range(rounds)]
    cases += [(1500, 64, 8, PARAMS), (300, 40, 10, ScoringParams(2000, 900, 3000, 100, 2500))]
    cases += [(1500, 64, 8, ScoringParams.preset(alphabet.default_preset)),  # near states cheaper in both
              (300, 40, 10, ScoringParams(2000, 900, 3000, 100, 2500, 1000))]
    bad = dict.fromkeys(scorers, 0)
    for m, n_edges, n_reads, params in cases:
        params = replace(params, column_weight=PARAMS.column_weight)
        profiles, codes, offsets, costs, ref, order = random_instance(rng, m, n_edges, n_reads, params,
                                                                              alphabet)
        k = int(rng.integers(1, 10))
        take = min(k, n_edges)
        want_score = np.take_along_axis(ref, order[:, :take], 1)
        for name, scorer in scorers.items():
            first_edge, _, blocks = as_chunks(profiles, 10_000)[0]
            score, edge = scorer.score_chunk(blocks, first_edge, n_edges, codes, offsets, params, k, costs=costs)
            wrong = (np.any(score[:, :take] != want_score, axis=1)
                     | np.any(edge[:, :take] != order[:, :take], axis=1)
                     | np.any(edge[:, take:] != -1, axis=1))
            bad[name] += int(wrong.sum())
    return bad


@njit(nogil=True, cache=True)
def _host_work(n: int) -> int:
    """A CPU-bound loop standing in for the engine's CPU workers."""
    acc = 0
    for i in range(n):
        acc = (acc * 1103515245 + i) % 2147483647
    return acc


def measure_waiting(scorer: GpuScorer, chunk, codes, offsets) -> dict:
    """Host loop speed alone and while the device scores `chunk`, and the CPU time spent meanwhile.

    This thread and the scorer's thread are pinned to one core (threads the driver started
    earlier are not), so a scorer thread that spins halves the loop's speed. The process CPU
    time beyond what the loop itself needs counts every thread, the driver's included: about
    the wait's length means one core was kept busy.
    """
    first_edge, n_edges, blocks = chunk
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        _host_work(1000)
        loops = 20_000_000
        start = time.perf_counter()
        _host_work(loops)
        alone = time.perf_counter() - start
        cpu0, wall0 = time.process_time(), time.perf_counter()
        worker = threading.Thread(target=scorer.score_chunk,
                                  args=(blocks, first_edge, n_edges, codes, offsets, PARAMS, 4))
        worker.start()
        speeds = []
        while worker.is_alive():
            start = time.perf_counter()
            _host_work(loops)
            speeds.append(alone / (time.perf_counter() - start))
        worker.join()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        os.sched_setaffinity(0, cores)
    return {"gpu_wall_s": round(wall, 3), "host_loop_alone_s": round(alone, 4),
            "host_loop_speed_median": round(statistics.median(speeds), 3) if speeds else None,
            "host_loop_speed_min": round(min(speeds), 3) if speeds else None,
            "process_cpu_s": round(cpu, 3), "cpu_s_beyond_host_loop": round(cpu - len(speeds) * alone, 3)}


class _CallbackWait(GpuScorer):
    """Waits on a completion callback (the driver's thread wakes a sleeping Python thread)."""

    def _wait(self, event) -> None:
        import pyopencl as cl

        done = threading.Event()
        event.set_callback(cl.command_execution_status.COMPLETE, lambda status: done.set())
        self.queue.flush()
        done.wait()


class _BlockingWait(GpuScorer):
    """Waits in clWaitForEvents."""

    def _wait(self, event) -> None:
        event.wait()


#: The scorer's own wait (sleeping between status queries) and the two usual alternatives.
WAITERS = {"sleep-poll": GpuScorer, "callback": _CallbackWait, "clWaitForEvents": _BlockingWait}


def time_shape(scorer: GpuScorer, name: str, n_reads: int, read_len, n_edges: int, m: int,
               repeat: int, rng: np.random.Generator, chunk_blocks: int = CHUNK_BLOCKS,
               alphabet: Alphabet = DNA) -> dict:
    lengths = read_lengths(rng, n_reads, read_len, m)
    codes, offsets = random_reads(rng, lengths, alphabet)
    chunks = as_chunks(random_profiles(rng, n_edges, m, alphabet), chunk_blocks)
    costs = random_costs(rng, m, PARAMS, alphabet)
    cells = n_edges * int(lengths.sum()) * m
    walls, kernel_times = time_chunks(scorer, chunks, codes, offsets, PARAMS, repeat, costs)
    wall, kernel = statistics.median(walls), statistics.median(kernel_times)
    return {"shape": name, "reads": n_reads, "mean_len": float(lengths.mean()), "edges": n_edges,
            "m": m, "chunks": len(chunks), "cells": cells, "kernel_s": kernel, "wall_s": wall,
            "kernel_gcups": cells / kernel / 1e9, "wall_gcups": cells / wall / 1e9,
            "spread": (max(walls) - min(walls)) / wall}


def dump_builds(scorer: GpuScorer, variants: list[Variant], out: Path) -> None:
    """Build log (with -cl-nv-verbose where the driver takes it) and PTX/binary of each variant."""
    import pyopencl as cl

    source = kernels.source("band_score.cl")  # its #include lines replaced, as every build reads it
    device = scorer.device.cl_device
    for v in variants:
        tag = f"{'ptx' if v.ptx else 'portable'}-{'packed' if v.packed else 'wide'}-r{v.rows}"
        options = list(v.options()) + (["-cl-nv-verbose"] if scorer.device.is_nvidia else [])
        program = build_program(scorer.context, device, source, tuple(options))
        (out / f"{tag}.log").write_text(program.get_build_info(device, cl.program_build_info.LOG))
        (out / f"{tag}.ptx").write_bytes(program.binaries[0].rstrip(b"\0"))


def make_scorers(device) -> dict[str, GpuScorer]:
    """The default scorer and the variants it is compared with."""
    variants = {"default": {}, "portable": dict(ptx=False), "wide": dict(narrow=False),
                "rows16": dict(rows=16), "rows20": dict(rows=20), "rows24": dict(rows=24)}
    scorers = {name: GpuScorer(device, profiling=True, **kw) for name, kw in variants.items()}
    return scorers


#: H100 SXM boost clock, which nvidia-smi showed under load (the rates below assume it).
SM_CLOCK_HZ = 1.98e9

#: Eight independent chains per thread of one instruction kind (OP 0: add.u16x2 + min.u16x2,
#: which ptxas fuses into one VIADDMNMX; 1: min.u16x2, VIMNMX; 2: LOP3), to measure the rate
#: the band kernel's instructions issue at, for its ceiling.
RATE_SOURCE = """
kernel void rate(global uint *out, const uint a, const uint b, const int n)
{
    uint x[8];
    for (int k = 0; k < 8; ++k) x[k] = get_global_id(0) * (k + 1);
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
#if OP == 0
            asm volatile("add.u16x2 %0, %1, %2;" : "=r"(x[k]) : "r"(x[k]), "r"(a));
            asm volatile("min.u16x2 %0, %1, %2;" : "=r"(x[k]) : "r"(x[k]), "r"(b));
#elif OP == 1
            asm volatile("min.u16x2 %0, %1, %2;" : "=r"(x[k]) : "r"(x[k]), "r"(b));
#else
            asm volatile("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(x[k]) : "r"(x[k]), "r"(a), "r"(b));
#endif
        }
    }
    uint acc = 0;
    for (int k = 0; k < 8; ++k) acc ^= x[k];
    out[get_global_id(0)] = acc;
}
"""


def instruction_rates(device, out: Path | None) -> dict:
    """Lanes per clock per SM of fused add-min (u16x2), min (u16x2) and LOP3; PTX to `out`."""
    import pyopencl as cl

    scorer = GpuScorer(device, profiling=True)
    ctx, queue = scorer.context, scorer.queue
    threads, n = device.compute_units * 2048, 4096
    sink = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, threads * 4)
    rates = {}
    for op, name in enumerate(("add+min.u16x2", "min.u16x2", "lop3")):
        prg = build_program(ctx, device.cl_device, RATE_SOURCE, (f"-DOP={op}",))
        if out:
            (out / f"rate-{op}.ptx").write_bytes(prg.binaries[0].rstrip(b"\0"))
        kernel = prg.rate
        kernel.set_args(sink, np.uint32(0x00030003), np.uint32(0x7F007F00), np.int32(n))
        cl.enqueue_nd_range_kernel(queue, kernel, (threads,), (256,)).wait()
        event = cl.enqueue_nd_range_kernel(queue, kernel, (threads,), (256,))
        event.wait()
        seconds = (event.profile.end - event.profile.start) * 1e-9
        instructions = threads * n * 8
        rates[name] = instructions / seconds / device.compute_units / SM_CLOCK_HZ
        print(f"rate {name}: {rates[name]:.1f} lanes/clk/SM", flush=True)
    return rates


def measure_waits(device, rng: np.random.Generator, scale, quick: bool) -> dict:
    """measure_waiting for each way of waiting, on a chunk needing six batches and on one batch."""
    waiting = {}
    m = 500 if quick else 20000
    setups = [("6 batches", scale(4000), 100), ("1 batch", scale(700), 100 if quick else 1000)]
    for label, n_reads, read_len in setups:
        chunk = as_chunks(random_profiles(rng, 640, m), CHUNK_BLOCKS)[0]
        reads = random_reads(rng, np.full(n_reads, read_len))
        for how, waiter in WAITERS.items():
            waiting[f"{label}, {how}"] = measure_waiting(waiter(device), chunk, *reads)
            print(f"waiting, {label}, {how}: {waiting[f'{label}, {how}']}", flush=True)
    return waiting


def shapes(quick: bool) -> list[tuple]:
    """(tag, reads, read length or (mean, sd), edges, m): the paper's Tables 1 and 2, real, large."""
    table = [("T1", 1250, 100, 320, m) for m in (500, 1000, 5000, 10000, 50000)]
    table += [("T2", q, 100, 320, 5000) for q in (100, 250, 500, 750, 1000, 1250)]
    table += [("real", 2100, (104, 8), 2597, 1072), ("large", 20000, (104, 8), 2597, 1072),
              ("large-T1", 20000, 100, 320, 5000)]
    return [s for s in table if s[-1] <= 1000 and s[3] <= 320] if quick else table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1/100 of the reads, m <= 1000 (e.g. on PoCL)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--verify-rounds", type=int, default=12)
    parser.add_argument("--kind", default="gpu", help="device kind: gpu, or any to try the script on PoCL")
    parser.add_argument("--skip-timing", action="store_true", help="verify and measure waiting only")
    parser.add_argument("--preset", choices=list(PRESETS), default=DEFAULT_PRESET,
                        help="the penalties timed (weighted: near states, the kernel's NEAR build)")
    parser.add_argument("--alphabet", choices=list(ALPHABETS), default="dna",
                        help="profile elements to verify and time: dna (uint8) or protein (uint32)")
    parser.add_argument("--column-weight", type=float, default=0.0, metavar="W",
                        help="protein: verify and time with a random column profile cost table (0..9 W)")
    args = parser.parse_args()
    alphabet = ALPHABETS[args.alphabet]
    if args.column_weight and alphabet is not PROTEIN:
        parser.error("--column-weight needs --alphabet protein")
    global PARAMS
    PARAMS = replace(ScoringParams.preset(args.preset), column_weight=args.column_weight)
    rng = np.random.default_rng(2026)
    scale = (lambda q: max(4, q // 100)) if args.quick else (lambda q: q)

    print(describe_devices(), flush=True)
    device = discover_devices(args.kind, required=True)[0]
    print(f"using: {device.summary()}", flush=True)
    costs = bool(PARAMS.column_weight)
    cost_label = f"weight {PARAMS.column_weight:g}, random 0..{PARAMS.column_cost_bound()}" if costs else "off"
    print(f"column profile costs: {cost_label}", flush=True)
    scorers = make_scorers(device)
    default = scorers["default"]
    print(f"default: {default.packed_variant.of(alphabet, PARAMS.weighted, costs)}", flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        dump_builds(default, [s.packed_variant.of(alphabet, PARAMS.weighted, costs) for s in scorers.values()]
                    + [default.wide_variant.of(alphabet, PARAMS.weighted, costs)], args.out)

    bad = verify(scorers, rng, args.verify_rounds, alphabet)
    print("verify: " + ", ".join(f"{name} {'OK' if n == 0 else f'{n} MISMATCHING READS'}"
                                 for name, n in bad.items()), flush=True)
    if any(bad.values()):
        print("FAILED: a variant disagrees with the reference scorer; no timings taken", file=sys.stderr)
        return 1

    results = []
    m = 1000 if args.quick else 5000
    for name, scorer in (() if args.skip_timing else scorers.items()):  # the variants on T1, one m
        row = time_shape(scorer, f"T1 Q={scale(1250)} E=320 m={m}", scale(1250), 100, 320, m,
                         args.repeat, rng, alphabet=alphabet)
        results.append({"variant": name, **row})
        print(f"{name:10s} {row['kernel_gcups']:8.1f} GCUPS kernel {row['wall_gcups']:8.1f} wall", flush=True)
    scorers = scorer = None  # frees the other variants' band buffers

    if device.is_nvidia:
        try:
            instruction_rates(device, args.out)
        except Exception as exc:  # a measurement aside: report and go on
            print(f"rates: failed: {exc}", flush=True)
    waiting = measure_waits(device, rng, scale, args.quick)
    for tag, q, length, e, m in ([] if args.skip_timing else shapes(args.quick)):
        row = time_shape(default, f"{tag} Q={scale(q)} E={e} m={m}", scale(q), length, e, m,
                         args.repeat, rng, alphabet=alphabet)
        results.append({"variant": "default", **row})
        print(f"{row['shape']:32s} {row['kernel_gcups']:8.1f} kernel {row['wall_gcups']:8.1f} wall GCUPS "
              f"({row['kernel_s']:.3f} s, {row['chunks']} call(s))", flush=True)

    if args.out:
        summary = {"device": device.summary(), "alphabet": alphabet.name, "column_weight": PARAMS.column_weight,
                   "results": results, "waiting": waiting}
        (args.out / "bench.json").write_text(json.dumps(summary, indent=1))
    print(f"\ncolumn profile costs: {cost_label}")
    print("| variant | shape | kernel GCUPS | wall GCUPS | kernel s | wall s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['variant']} | {r['shape']} | {r['kernel_gcups']:.0f} | {r['wall_gcups']:.0f} | "
              f"{r['kernel_s']:.3f} | {r['wall_s']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
