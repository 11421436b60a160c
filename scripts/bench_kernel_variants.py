"""band_score's build variants on one GPU in one call: verify, time, dump the machine code (issue 57).

    python3 scripts/bench_kernel_variants.py [--out DIR] [--small] [--repeat N] [--only NAME ...]

For each variant (VARIANTS, in order of interest: the candidates for the defaults first, DNA's
lookup path at register limits and stripe heights, protein's lookup path and its table form
(LOOKUP_TABLE), then the element paths, Eq. 1, protein without column costs, portable C):
1. Build it (band_score.cl with the variant's options, as engine/gpu.py builds it: a register
   limit is the build option -cl-nv-maxrregcount, band_inputs.Variant.registers).
2. Verify it bit-identical to the reference scorer (model/reference_scorer) on fresh random
   chunks: every (read, edge) score is checked (k = the chunk's edge count, so each read's list
   holds all of them, sorted by (score, edge)), with every output and scratch buffer filled with a
   poison word before the kernels run (GpuScorer.fill_outputs), reads of 1..m-1 residues, random
   penalties, near states cheaper and not, DNA reads with ambiguity codes beside single bases (the
   lookup path's stripes and the element path's in one read), protein reads with B, Z, J, X.
   A variant that disagrees is reported and not timed.
3. Time it at both shapes: kernel GCUPS from the band kernels' profiling events and wall GCUPS of
   score_chunk (uploads, host preparation, top-k included), median of --repeat passes after a
   warm-up pass, at shapes that fill the chip: "large" (20,000 reads of ~104 residues x 2,597
   edges x 1,072 columns, chunks of 640 edges as the engine calls it) and "m5000" (20,000 x 100 x
   320 x 5,000). After --deadline seconds the variants left are verified only, and after
   --grace more not run (the whole call about 4 minutes on an H200).
0. (NVIDIA, with --rates) Instruction rates: fused add-min, PRMT, LOP3 and the lookup path's mix
   per cell pair, in lanes per clock per SM: the ceiling notebook/BENCHMARKS.md's model assumes (64) checked
   (the H200 measured 58.8-62.5 on 2026-11-28).
4. The machine code of the build timed, in a worker thread beside the next variant's verification
   (a timing waits for it: a driver build beside a timed pass halved its wall GCUPS): the driver's PTX
   (the program binary), the driver's own ptxas report (the build again with -cl-nv-verbose:
   registers, spill bytes), and where ptxas and cuobjdump are found (PATH, /usr/local/cuda/bin)
   the SASS of that PTX assembled with the same register limit (the PTX does not record one;
   scripts/sass_count.ptxas_options): the hot loop's instructions and integer-pipe instructions
   per cell (the column loop where every row is in the band), local-memory operations, warps per SM.
5. Print a short table last; with --out, results.json and builds.tar.gz (PTX, SASS, logs) there.

Runs with a bare python3 + numpy + numba + pyopencl (no dendropy, no h5py needed); registers
NVIDIA's OpenCL ICD itself (engine/opencl_devices). `--small` is a smoke run on any OpenCL device
(PoCL): tiny shapes, options only NVIDIA takes left out where the device is not NVIDIA.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import sys
import tarfile
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sass_count  # noqa: E402  (a sibling script)
from synthetic import (  # noqa: E402  (a sibling script)
    CHUNK_BLOCKS,
    as_chunks,
    random_costs,
    random_profiles,
    random_reads,
    read_lengths,
    time_chunks,
)

from papara_py import kernels  # noqa: E402
from papara_py.engine.band_inputs import lookup_fits  # noqa: E402
from papara_py.engine.gpu import GpuScorer  # noqa: E402
from papara_py.engine.opencl_devices import build_program, describe_devices, discover_devices  # noqa: E402
from papara_py.model.params import ScoringParams  # noqa: E402
from papara_py.model.reference_scorer import score_matrix_reference  # noqa: E402
from papara_py.phylo.encoding import DNA, PROTEIN, Alphabet  # noqa: E402

POISON = 0xA5A5A5A5


@dataclass
class Case:
    """One variant: the scorer's settings and the penalties it is verified and timed with."""

    name: str
    alphabet: Alphabet
    preset: str
    column_weight: float = 0.0
    scorer: dict = field(default_factory=dict)  # GpuScorer keyword arguments
    shapes: tuple[str, ...] = ("large", "m5000")  # the shapes timed
    note: str = ""
    ambiguous: float = 0.0  # rate of ambiguity codes in the timed reads (their stripes take the element path)

    @property
    def nvidia_only(self) -> bool:
        """Build options only NVIDIA's compiler takes (-cl-nv-*)."""
        return any(o.startswith("-cl-nv-") for o in self.scorer.get("extra_options", ()))


#: In order of interest: the candidates for the defaults first (DNA's lookup path at its register
#: limits and stripe heights, protein's lookup path and its table form), then what they are
#: compared with. Every variant is timed at both shapes while the deadline allows.
AHEAD2 = ("-DBAND_AHEAD=2",)
VARIANTS = [
    Case("dna-lookup", DNA, "weighted",
         note="DNA default: lookup path, 32 rows, 168 registers (band_inputs.LOOKUP_REGISTERS: 12 warps per SM)"),
    Case("dna-lookup-reg128", DNA, "weighted", scorer=dict(max_registers=128),
         note="lookup, 32 rows, 128 registers (16 warps per SM; offline: the lookup loops keep no spills)"),
    Case("dna-lookup-ahead2", DNA, "weighted", scorer=dict(extra_options=AHEAD2),
         note="lookup, 32 rows, 168 registers, the band cell loaded two columns ahead (BAND_AHEAD=2)"),
    Case("dna-lookup-r40", DNA, "weighted", scorer=dict(rows=40),
         note="lookup, 40 rows, 168 registers (12 warps; 80 cells a column, offline: no spill in the hot loop)"),
    Case("protein-lookup", PROTEIN, "protein", column_weight=1.0,
         note="protein default: lookup path (near states, column costs), 16 rows, shifts without a mask"),
    Case("protein-lookup-reg128", PROTEIN, "protein", column_weight=1.0, scorer=dict(max_registers=128),
         note="protein lookup, 128 registers (16 warps per SM)"),
    Case("protein-table-ahead2", PROTEIN, "protein", column_weight=1.0,
         scorer=dict(lookup_table=True, extra_options=AHEAD2),
         note="protein, LOOKUP_TABLE (each cell pair's cost one load from a per-column table of the 20 "
              "states), band two columns ahead, 154 registers (12 warps)"),
    Case("protein-table-ahead2-reg128", PROTEIN, "protein", column_weight=1.0,
         scorer=dict(lookup_table=True, extra_options=AHEAD2, max_registers=128),
         note="protein table, band two ahead, 128 registers (16 warps)"),
    Case("protein-table-ahead2-reg128-g8", PROTEIN, "protein", column_weight=1.0,
         scorer=dict(lookup_table=True, extra_options=AHEAD2, max_registers=128, group_reads=8),
         note="protein table, band two ahead, 128 registers, 8 reads a group (the table's lines shared in L1)"),
    Case("protein-table", PROTEIN, "protein", column_weight=1.0, scorer=dict(lookup_table=True),
         note="protein table, band one column ahead, 154 registers (the latency model: slower than ahead2)"),
    Case("dna-lookup-amb0.5%", DNA, "weighted", ambiguous=0.005,
         note="DNA default, reads with 0.5% ambiguity codes (about 15% of stripes on the element path)"),
    Case("dna-lookup-reg128-amb0.5%", DNA, "weighted", scorer=dict(max_registers=128), ambiguous=0.005,
         note="128 registers, reads with 0.5% ambiguity codes (the element path spills at 128)"),
    Case("dna-element", DNA, "weighted", scorer=dict(lookup=False), note="the element path (DNA's default before)"),
    Case("protein-element", PROTEIN, "protein", column_weight=1.0, scorer=dict(lookup=False),
         note="the element path (protein's default before)"),
    Case("dna-lookup-noreglimit", DNA, "weighted", scorer=dict(max_registers=0),
         note="lookup, 32 rows, no register limit (203 registers with driver 580, 8 warps: the first "
              "device call's dna-lookup)"),
    Case("dna-eq1-lookup", DNA, "paper",
         note="Eq. 1 (the paper's preset: no near states), lookup path, 168 registers"),
    Case("protein-nocost-table", PROTEIN, "protein", scorer=dict(lookup_table=True, extra_options=AHEAD2),
         note="protein, column weight 0, table, band two ahead (13 rows)"),
    Case("protein-nocost-lookup", PROTEIN, "protein", note="protein, column weight 0, lookup (13 rows)"),
    Case("dna-table", DNA, "weighted", scorer=dict(lookup_table=True),
         note="DNA, LOOKUP_TABLE (offline: as many integer-pipe instructions as the PRMT words, more issued)"),
    Case("dna-portable", DNA, "weighted", scorer=dict(ptx=False),
         note="portable OpenCL C lookup (what non-NVIDIA devices build)"),
]

#: (tag, reads, read length or (mean, sd), edges, m)
SHAPES = [("large", 20000, (104, 8), 2597, 1072), ("m5000", 20000, 100, 320, 5000)]
SMALL_SHAPES = [("large", 200, (60, 6), 96, 200), ("m5000", 100, 50, 64, 600)]


def params_of(case: Case) -> ScoringParams:
    return replace(ScoringParams.preset(case.preset), column_weight=case.column_weight)


def verify(scorer: GpuScorer, case: Case, rng: np.random.Generator, rounds: int, small: bool) -> tuple[int, int]:
    """(mismatching scores, scores checked) over fresh random chunks, every (read, edge) score."""
    alphabet, base = case.alphabet, params_of(case)

    def random_params() -> ScoringParams:
        values = rng.integers(0, 8, size=5).tolist()
        near = int(rng.integers(0, values[0] + 1)) if rng.random() < 0.5 else values[0]
        return replace(ScoringParams(*values, near_mismatch=near), column_weight=base.column_weight)

    cases = [(int(rng.integers(2, 200)), int(rng.integers(1, 90)), int(rng.integers(1, 12)), random_params())
             for _ in range(rounds)]
    cases += [(300 if small else 1500, 64, 8, base), (150, 40, 10, random_params())]
    scorer.fill_outputs = POISON
    bad = checked = 0
    try:
        for m, n_edges, n_reads, params in cases:
            lengths = np.r_[1, m - 1, rng.integers(1, m, size=n_reads)]
            profiles = random_profiles(rng, n_edges, m, alphabet)
            costs = random_costs(rng, m, params, alphabet)
            codes, offsets = random_reads(rng, lengths, alphabet, float(rng.choice([0.0, 0.02, 0.2])),
                                          None if costs is None else costs.codes)
            reads = [codes[offsets[q]:offsets[q + 1]] for q in range(lengths.size)]
            ref = score_matrix_reference(reads, profiles, params, costs)
            order = np.lexsort((np.broadcast_to(np.arange(n_edges), ref.shape), ref), axis=1)
            want_score, want_edge = np.take_along_axis(ref, order, 1), order
            first_edge, _, blocks = as_chunks(profiles, 10_000)[0]
            score, edge = scorer.score_chunk(blocks, first_edge, n_edges, codes, offsets, params, n_edges, costs=costs)
            bad += int(np.count_nonzero(score != want_score) + np.count_nonzero(edge != want_edge))
            checked += score.size
    finally:
        scorer.fill_outputs = None
    return bad, checked


def time_shape(scorer: GpuScorer, case: Case, shape, repeat: int, rng: np.random.Generator) -> dict:
    tag, n_reads, read_len, n_edges, m = shape
    alphabet, params = case.alphabet, params_of(case)
    lengths = read_lengths(rng, n_reads, read_len, m)
    costs = random_costs(rng, m, params, alphabet)
    # with column costs single states only, as real reads mostly are (verify draws from the cost
    # table's rows, ambiguity codes included)
    codes, offsets = random_reads(rng, lengths, alphabet, case.ambiguous if costs is None else 0.0)
    chunks = as_chunks(random_profiles(rng, n_edges, m, alphabet), CHUNK_BLOCKS)
    cells = n_edges * int(lengths.sum()) * m
    walls, kernels_s = time_chunks(scorer, chunks, codes, offsets, params, repeat, costs)
    kernel, wall = statistics.median(kernels_s), statistics.median(walls)
    return {"shape": tag, "reads": n_reads, "edges": n_edges, "m": m, "cells": cells, "kernel_s": kernel,
            "wall_s": wall, "kernel_gcups": cells / kernel / 1e9, "wall_gcups": cells / wall / 1e9,
            "kernel_spread": (max(kernels_s) - min(kernels_s)) / kernel, "lookup_reads": scorer.stats.lookup_reads}


#: Instruction rates of the lookup path's integer work (NVIDIA only): eight independent chains per
#: work-item of one kind of instruction, or of the lookup path's mix per cell pair (three fused
#: add-mins and a PRMT), for the ceiling of notebook/BENCHMARKS.md's model (the ALU pipe at 64 lanes per
#: clock per SM is an assumption this checks).
RATE_SOURCE = """
#define ADDMIN(x, a, b) asm volatile("add.u16x2 %0, %0, %1; min.u16x2 %0, %0, %2;" : "+r"(x) : "r"(a), "r"(b))
#define PRMT(x, a, s) asm volatile("prmt.b32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(s))
kernel void rate(global uint *out, const uint a, const uint b, const uint s, const int n)
{
    uint x[8];
    for (int k = 0; k < 8; ++k) x[k] = get_global_id(0) * (k + 1);
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
#if OP == 0
            ADDMIN(x[k], a, b);
#elif OP == 1
            PRMT(x[k], a, s);
#elif OP == 2
            asm volatile("lop3.b32 %0, %0, %1, %2, 0x6a;" : "+r"(x[k]) : "r"(a), "r"(b));
#else
            ADDMIN(x[k], a, b); ADDMIN(x[k], a, b); ADDMIN(x[k], a, b); PRMT(x[k], a, s);
#endif
        }
    }
    uint acc = 0;
    for (int k = 0; k < 8; ++k) acc ^= x[k];
    out[get_global_id(0)] = acc;
}
"""
RATE_OPS = {0: ("add+min.u16x2 (VIADDMNMX)", 1), 1: ("prmt", 1), 2: ("lop3", 1), 3: ("lookup mix: 3 add-min + prmt", 4)}
SM_CLOCK_HZ = 1.98e9


def instruction_rates(device) -> dict:
    """Lanes per clock per SM (at SM_CLOCK_HZ) of each RATE_OPS kind; for the mix, also the cell
    rate its ALU work alone allows (one mix = one cell pair)."""
    import pyopencl as cl

    scorer = GpuScorer(device, profiling=True)
    ctx, queue = scorer.context, scorer.queue
    threads, n = device.compute_units * 2048, 2048
    sink = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, threads * 4)
    rates = {}
    for op, (name, per_step) in RATE_OPS.items():
        kernel = build_program(ctx, device.cl_device, RATE_SOURCE, (f"-DOP={op}",)).rate
        kernel.set_args(sink, np.uint32(0x00030003), np.uint32(0x7F007F00), np.uint32(0xC480), np.int32(n))
        cl.enqueue_nd_range_kernel(queue, kernel, (threads,), (256,)).wait()
        event = cl.enqueue_nd_range_kernel(queue, kernel, (threads,), (256,))
        event.wait()
        seconds = (event.profile.end - event.profile.start) * 1e-9
        steps = threads * n * 8
        lanes = steps * per_step / seconds / device.compute_units / SM_CLOCK_HZ
        rates[name] = {"lanes_per_clock_per_sm": lanes}
        if op == 3:
            rates[name]["cells_per_second"] = 2 * steps / seconds
        print(f"rate {name}: {lanes:.1f} lanes/clk/SM" + (
            f", {2 * steps / seconds / 1e12:.2f} TCUPS of ALU work alone" if op == 3 else ""), flush=True)
    return rates


def find_tool(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/local/cuda/bin") / name,) if p.exists()), None)


def timed_variant(scorer: GpuScorer, case: Case):
    """The packed build the case's timed batches run (GpuScorer._batches' choice)."""
    params = params_of(case)
    return scorer.packed_variant.of(case.alphabet, params.weighted, bool(params.column_weight),
                                    scorer.lookup and (case.alphabet.dtype.itemsize > 1 or scorer.packed_variant.table
                                                       or lookup_fits(params)))


def machine_code(scorer: GpuScorer, case: Case) -> tuple[dict, list[tuple[str, bytes]]]:
    """The machine code of the build the case is timed with (its options, a register limit
    included): the driver's PTX and, on NVIDIA, its own ptxas report (registers, spills: built again
    with -cl-nv-verbose), the registers and private memory the timed kernel reports, the reads per
    group it was launched with, and where ptxas and cuobjdump are found, the SASS of that PTX
    assembled with the same register limit (scripts/sass_count.ptxas_options): its hot loop, spills
    and warps per SM."""
    import pyopencl as cl

    variant = timed_variant(scorer, case)
    options = list(variant.options())
    out: dict = {"options": options}
    timed = cl.Kernel(scorer.build(variant, 4)[0], "band_score")
    dev = scorer.device.cl_device
    out["private_bytes"] = timed.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, dev)
    out["group_reads"] = scorer._group_reads.get(variant)
    verbose = ["-cl-nv-verbose"] if scorer.device.is_nvidia else []
    # the case's name in a comment: a source no cache (pyopencl's, the driver's) has seen, so the
    # build runs ptxas and its log has the report (the PTX is the timed build's)
    source = kernels.source("band_score.cl") + f"\n/* {case.name} */\n"
    program = build_program(scorer.context, dev, source, tuple(options + verbose))
    binary = program.binaries[0].rstrip(b"\0")
    log = program.get_build_info(dev, cl.program_build_info.LOG) or ""
    out["driver_registers"] = sass_count.registers(log)
    spilled = sass_count.spills(log)
    out["driver_spill_bytes"] = None if spilled is None else {"stores": spilled[0], "loads": spilled[1]}

    files: list[tuple[str, bytes]] = []

    def keep(name: str, data: bytes) -> None:
        files.append((f"{case.name}/{name}", data))

    keep("band_score.ptx" if scorer.device.is_nvidia else "band_score.bin", binary)
    keep("driver_build.log", log.encode())
    ptxas, cuobjdump = find_tool("ptxas"), find_tool("cuobjdump")
    if not (scorer.device.is_nvidia and ptxas and cuobjdump):
        out["sass"] = "no ptxas/cuobjdump here" if scorer.device.is_nvidia else "not NVIDIA"
        out["registers"] = out["driver_registers"]
        return out, files
    cc = scorer.device.nv_compute_capability or (9, 0)
    flags = sass_count.ptxas_options(options)
    out["ptxas_flags"] = flags
    try:
        sass, ptxas_log = sass_count.sass_of_ptx(binary, f"sm_{cc[0]}{cc[1]}", flags, ptxas, cuobjdump)
    except RuntimeError as error:
        out["sass"] = str(error)[-400:]
        return out, files
    keep("band_score.sass", sass.encode())
    keep("ptxas.log", ptxas_log.encode())
    out.update(sass_count.machine_summary(sass, ptxas_log, variant.lanes, variant.lookup,
                                          # WG_UNITS work-items: a warp a read
                                          group_warps=out["group_reads"] or variant.wg_reads))
    return out, files


def summary_table(rows: list[dict], device_summary: str, seconds: float, repeat: int) -> str:
    """The printed table: kernel and wall GCUPS at both shapes, the ratio to the element path of the
    alphabet, SASS per cell of the hot loop (total / integer ALU pipe), registers (the driver's),
    spill bytes (the driver's stores / loads), warps per SM, reads per group."""
    base = {r["variant"]: r for r in rows}
    lines = [f"{device_summary}; {seconds:.0f} s; kernel GCUPS (median of {repeat}), SASS hot loop per cell "
             "(total / integer ALU pipe) of the build timed",
             "| variant | verify | large kernel | large wall | m5000 kernel | m5000 wall | vs element | SASS/cell "
             "| ALU/cell | regs | spills | warps/SM | reads/group |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        code = r.get("machine_code") or {}
        hot = code.get("hot") or {}
        ref = base.get("dna-element" if r["alphabet"] == "dna" else "protein-element", {})
        large = r.get("large", {}).get("kernel_gcups")
        ratio = large / ref["large"]["kernel_gcups"] if large and ref.get("large") else None
        verdict = r.get("error", "")[:30] or ("OK" if r.get("mismatches") == 0 else f"{r.get('mismatches')} BAD")
        cells = lambda key: (f"{r[key[0]][key[1]]:.4g}" if key[0] in r else "-")  # noqa: E731
        per_cell = lambda key: f"{hot[key]:.2f}" if hot.get(key) else "-"  # noqa: E731
        spilled = code.get("driver_spill_bytes") or code.get("spill_bytes")
        spills = "-" if spilled is None else f"{spilled['stores']}/{spilled['loads']}"
        regs = code.get("driver_registers") or code.get("registers")
        lines.append(f"| {r['variant']} | {verdict} | {cells(('large', 'kernel_gcups'))} | "
                     f"{cells(('large', 'wall_gcups'))} | {cells(('m5000', 'kernel_gcups'))} | "
                     f"{cells(('m5000', 'wall_gcups'))} | {'-' if ratio is None else f'{ratio:.2f}'} | "
                     f"{per_cell('per_cell')} | {per_cell('alu_per_cell')} | {regs or '-'} | "
                     f"{spills} | "
                     f"{sass_count.warps_per_sm(regs, code.get('group_reads') or 4) or '-'} | "
                     f"{code.get('group_reads') or '-'} |")
    dna = [r for r in rows if r["alphabet"] == "dna" and r.get("large") and r["variant"] != "dna-portable"]
    protein = [r for r in rows if r["alphabet"] == "protein" and r.get("large") and r["column_weight"]]
    if dna and protein:
        best_dna = max(dna, key=lambda r: r["large"]["kernel_gcups"])
        for r in protein:
            lines.append(f"{r['variant']} / {best_dna['variant']} (the fastest DNA build), large kernel GCUPS: "
                         f"{r['large']['kernel_gcups'] / best_dna['large']['kernel_gcups']:.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--small", action="store_true", help="tiny shapes: a smoke run on any OpenCL device (PoCL)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="timed passes per shape after a warm-up (the first call's spreads: 0.0-0.2%%)")
    parser.add_argument("--rounds", type=int, default=4, help="random verification chunks per variant")
    parser.add_argument("--only", nargs="*", help="variant names (default: all)")
    parser.add_argument("--kind", default="gpu", help="device kind: gpu, or any (PoCL) with --small")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--deadline", type=float, default=185.0,
                        help="seconds after which the variants left are not timed (verified only, for "
                             "--grace seconds more)")
    parser.add_argument("--grace", type=float, default=25.0)
    parser.add_argument("--rates", action="store_true", help="measure the instruction rates first (NVIDIA)")
    args = parser.parse_args()
    started = time.perf_counter()
    print(describe_devices(), flush=True)
    device = discover_devices(args.kind, required=True)[0]
    print(f"using: {device.summary()}", flush=True)
    cases = [c for c in VARIANTS if (not args.only or c.name in args.only) and (device.is_nvidia or not c.nvidia_only)]
    shapes = SMALL_SHAPES if args.small else SHAPES
    rng = np.random.default_rng(int(time.time()))  # fresh data each call; the seed is printed
    seed = int(rng.integers(1 << 31))
    print(f"seed {seed}", flush=True)
    rng = np.random.default_rng(seed)
    rates = {}
    if device.is_nvidia and args.rates:
        try:
            rates = instruction_rates(device)
        except Exception as error:  # a measurement aside: report it and go on
            print(f"rates: failed: {type(error).__name__}: {error}", flush=True)
    rows = []
    # the machine code (a driver build with -cl-nv-verbose, ptxas, cuobjdump: CPU only) beside the
    # verifications, never beside a timing
    workers = ThreadPoolExecutor(max_workers=2)
    pending: list[tuple[dict, Future]] = []
    for case in cases:
        row = {"variant": case.name, "note": case.note, "alphabet": case.alphabet.name, "preset": case.preset,
               "column_weight": case.column_weight}
        rows.append(row)
        t0 = time.perf_counter()
        late = t0 - started > args.deadline
        if t0 - started > args.deadline + args.grace:
            row["error"] = "not run: past the deadline"
            print(f"{case.name}: not run (past the deadline)", flush=True)
            continue
        try:
            scorer = GpuScorer(device, profiling=True, **case.scorer)
            bad, checked = verify(scorer, case, rng, args.rounds, args.small)
        except Exception as error:  # a build or launch failure: report it, go on with the others
            row["error"] = f"{type(error).__name__}: {error}"[:600]
            print(f"{case.name}: FAILED to build or run: {row['error']}", flush=True)
            continue
        row.update(mismatches=bad, checked=checked)
        print(f"{case.name}: verify {'OK' if bad == 0 else f'{bad} MISMATCHES'} ({checked} scores, "
              f"{time.perf_counter() - t0:.1f} s)", flush=True)
        if late and not (bad or args.skip_timing):
            row["skipped"] = "deadline"
            print(f"  not timed: past the {args.deadline:.0f} s deadline", flush=True)
        if not (bad or args.skip_timing or late):
            # no machine code beside a timed pass: its driver build stalled the host side of the
            # passes it overlapped (the large shape's wall GCUPS down by half on the H200); a job
            # that hangs (ptxas, the driver) holds the timings up for --grace seconds at most
            wait([future for _, future in pending], timeout=args.grace)
            busy = sum(not future.done() for _, future in pending)
            if busy:  # said beside the figures, which may then read low
                row["timed_beside_machine_code"] = busy
                print(f"  timed beside {busy} machine-code job(s) still running after --grace {args.grace:g} s: "
                      "its wall GCUPS may read low", flush=True)
            for shape in (s for s in shapes if s[0] in case.shapes):
                result = time_shape(scorer, case, shape, args.repeat, rng)
                row[shape[0]] = result
                print(f"  {shape[0]}: kernel {result['kernel_gcups']:.4g} GCUPS "
                      f"(spread {result['kernel_spread']:.1%}), wall {result['wall_gcups']:.4g} GCUPS, "
                      f"{result['kernel_s']:.3f} s", flush=True)
        if not late:  # beside the next variant's verification
            pending.append((row, workers.submit(machine_code, scorer, case)))
        scorer = None
    archive_bytes = io.BytesIO()
    give_up = started + args.deadline + args.grace + 60.0  # the machine code's work left waits until then
    with tarfile.open(fileobj=archive_bytes, mode="w:gz") as archive:
        for row, future in pending:
            try:
                row["machine_code"], files = future.result(timeout=max(5.0, give_up - time.perf_counter()))
            except Exception as error:
                row["machine_code"], files = {"error": f"{type(error).__name__}: {error}"[:400]}, []
            for name, data in files:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            code, hot = row["machine_code"], row["machine_code"].get("hot")
            if hot:
                print(f"{row['variant']}: SASS hot loop {hot['instructions']} instructions / {hot['cells']} cells = "
                      f"{hot['per_cell']:.2f} per cell, ALU {hot['alu_per_cell']:.2f}; registers "
                      f"{code.get('driver_registers')} (driver) / {code.get('registers')} (ptxas here), spills "
                      f"{code.get('driver_spill_bytes')}, local ops in the hot loop {code.get('hot_local_ops')}, in "
                      f"the lookup loops {code.get('lookup_loop_local_ops')}", flush=True)
            elif code.get("error") or code.get("sass"):
                print(f"{row['variant']}: machine code: {code.get('error') or code.get('sass')}", flush=True)
    workers.shutdown(wait=False, cancel_futures=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "builds.tar.gz").write_bytes(archive_bytes.getvalue())
        (args.out / "results.json").write_text(json.dumps({"device": device.summary(), "seed": seed, "rates": rates,
                                                           "rows": rows}, indent=1, default=str))
    print()
    print(summary_table(rows, device.summary(), time.perf_counter() - started, args.repeat))
    for name, rate in rates.items():
        print(f"rate {name}: {rate['lanes_per_clock_per_sm']:.1f} lanes/clk/SM")
    return 1 if any(r.get("mismatches") or (r.get("error") and "deadline" not in r["error"]) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
