"""band_score's build variants on one GPU in one call: verify, time, dump the machine code (issue 57).

    python3 scripts/bench_kernel_variants.py [--out DIR] [--small] [--repeat N] [--only NAME ...]

For each variant (VARIANTS: today's element path, the lookup path at several stripe heights and
register limits, Eq. 1 and near states, protein with and without column costs):
1. Build it (band_score.cl with the variant's options, as engine/gpu.py builds it).
2. Verify it bit-identical to the reference scorer (pairwise/reference_scorer) on fresh random
   chunks: every (read, edge) score is checked (k = the chunk's edge count, so each read's list
   holds all of them, sorted by (score, edge)), with every output and scratch buffer filled with a
   poison word before the kernels run (GpuScorer.fill_outputs), reads of 1..m-1 residues, random
   penalties, near states cheaper and not, DNA reads with ambiguity codes beside single bases (the
   lookup path's stripes and the element path's in one read), protein reads with B, Z, J, X.
   A variant that disagrees is reported and not timed.
3. Time it: kernel GCUPS from the band kernels' profiling events and wall GCUPS of score_chunk
   (uploads, host preparation, top-k included), median of --repeat passes after a warm-up pass,
   at shapes that fill the chip: "large" (20,000 reads of ~104 residues x 2,597 edges x 1,072
   columns, chunks of 640 edges as the engine calls it) and "m5000" (20,000 x 100 x 320 x 5,000).
0. (NVIDIA) Instruction rates: fused add-min, PRMT, LOP3 and the lookup path's mix per cell pair,
   in lanes per clock per SM: the ceiling BENCHMARKS.md's model assumes (64) checked.
4. Dump the driver's PTX of each build (the program binary) and, where ptxas and cuobjdump are
   found (PATH, /usr/local/cuda/bin), the SASS histogram of band_score's hot loop (the column
   loop where every row is in the band; scripts/sass_count.py) with instructions and integer-pipe
   instructions per cell.
5. Print a short table last; with --out, results.json and builds.tar.gz (PTX, SASS) there.

Runs with a bare python3 + numpy + numba + pyopencl (no dendropy, no h5py needed); registers
NVIDIA's OpenCL ICD itself (engine/opencl_devices). `--small` is a smoke run on any OpenCL device
(PoCL): tiny shapes, PTX variants skipped where the device is not NVIDIA.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from papara_py import kernels  # noqa: E402
from papara_py.engine.gpu import GpuScorer, lookup_fits  # noqa: E402
from papara_py.engine.layout import block_count, make_block  # noqa: E402
from papara_py.engine.opencl_devices import describe_devices, discover_devices  # noqa: E402
from papara_py.model.params import ScoringParams  # noqa: E402
from papara_py.model.reference_scorer import score_matrix_reference  # noqa: E402
from papara_py.model.column_costs import ColumnCosts, cost_codes  # noqa: E402
from papara_py.phylo.encoding import DNA, PROTEIN, Alphabet  # noqa: E402

import sass_count  # noqa: E402  (a sibling script)

POISON = 0xA5A5A5A5
BLOCK_WIDTH = 16
CHUNK_BLOCKS = 40  # 640 edges per score_chunk, as the engine calls it (DESIGN 6)


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


VARIANTS = [
    Case("dna-element", DNA, "weighted", scorer=dict(lookup=False), note="today's DNA default (element path)"),
    Case("dna-lookup", DNA, "weighted", note="lookup path, 32 rows (the new default)"),
    Case("protein-element", PROTEIN, "protein", column_weight=1.0, scorer=dict(lookup=False),
         note="today's protein default (near states, column costs; element path)"),
    Case("protein-lookup", PROTEIN, "protein", column_weight=1.0, note="protein default on the lookup path"),
    Case("dna-lookup-reg168", DNA, "weighted", scorer=dict(extra_options=("-cl-nv-maxrregcount=168",)),
         shapes=("large",), note="lookup, 32 rows, 168 registers (3 groups of 128 per SM)"),
    Case("dna-lookup-r28", DNA, "weighted", scorer=dict(rows=28), shapes=("large",), note="lookup, 28 rows"),
    Case("dna-lookup-r24", DNA, "weighted", scorer=dict(rows=24), shapes=("large",), note="lookup, 24 rows"),
    Case("dna-lookup-plain", DNA, "weighted", scorer=dict(extra_options=("-DLOOKUP_PLAIN_ADDS=1",)), shapes=("large",),
         note="lookup, plain adds + VIMNMX instead of DPX add-mins (pays only if DPX issue slower than VIMNMX)"),
    Case("dna-eq1-lookup", DNA, "robust", shapes=("large",), note="Eq. 1 (robust), lookup path"),
    Case("protein-lookup-reg128", PROTEIN, "protein", column_weight=1.0,
         scorer=dict(extra_options=("-cl-nv-maxrregcount=128",)), shapes=("large",),
         note="protein lookup, 128 registers"),
    Case("protein-lookup-r12", PROTEIN, "protein", column_weight=1.0, scorer=dict(rows=12), shapes=("large",),
         note="protein lookup, 12 rows"),
    Case("protein-nocost-lookup", PROTEIN, "protein", shapes=("large",), note="protein, column weight 0, lookup"),
    Case("dna-lookup-amb0.5%", DNA, "weighted", shapes=("large",), ambiguous=0.005,
         note="lookup, reads with 0.5% ambiguity codes (about 15% of stripes on the element path)"),
    Case("dna-portable", DNA, "weighted", scorer=dict(ptx=False), shapes=("large",),
         note="portable OpenCL C lookup (what non-NVIDIA devices build)"),
]

#: (tag, reads, read length or (mean, sd), edges, m)
SHAPES = [("large", 20000, (104, 8), 2597, 1072), ("m5000", 20000, 100, 320, 5000)]
SMALL_SHAPES = [("large", 200, (60, 6), 96, 200), ("m5000", 100, 50, 64, 600)]


def params_of(case: Case) -> ScoringParams:
    return replace(ScoringParams.preset(case.preset), column_weight=case.column_weight)


def as_chunks(profiles: np.ndarray, chunk_blocks: int) -> list[tuple[int, int, np.ndarray]]:
    """(first_edge, n_edges, [nb, m, W] blocks) per engine call."""
    n_edges = profiles.shape[0]
    blocks = [make_block(b, b * BLOCK_WIDTH, profiles[b * BLOCK_WIDTH:(b + 1) * BLOCK_WIDTH], BLOCK_WIDTH)
              for b in range(block_count(n_edges, BLOCK_WIDTH))]
    out = []
    for start in range(0, len(blocks), chunk_blocks):
        group = blocks[start:start + chunk_blocks]
        out.append((group[0].first_edge, sum(b.n_edges for b in group), np.stack([b.lanes for b in group])))
    return out


def single_states(alphabet: Alphabet) -> np.ndarray:
    return alphabet.read_code[np.frombuffer(alphabet.letters.encode(), np.uint8)]


def random_profiles(rng: np.random.Generator, n_edges: int, m: int, alphabet: Alphabet) -> np.ndarray:
    """Elements like real ones: mostly single states, some ambiguity, CGAP in runs, DNA's near
    fields in 40% of the columns (protein's follow from the set and the family residues)."""
    single = single_states(alphabet)
    extra = alphabet.read_code[np.frombuffer(("RYN" if alphabet is DNA else "BZX").encode(), np.uint8)]
    states = rng.choice(np.concatenate([single, single, extra]), size=(n_edges, m))
    cgap = np.repeat(rng.random((n_edges, -(-m // 8))) < 0.3, 8, axis=1)[:, :m]
    elements = states | (cgap * alphabet.dtype.type(alphabet.cgap_bit))
    if alphabet.stores_near_states:
        near = np.where(rng.random((n_edges, m)) < 0.4, rng.integers(1, 8, size=(n_edges, m)), 0)
        elements |= (near << alphabet.near_shift).astype(alphabet.dtype)
    return elements.astype(alphabet.dtype)


def random_reads(rng: np.random.Generator, lengths: np.ndarray, alphabet: Alphabet, ambiguous: float,
                 codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reads of single states with ambiguity codes at rate `ambiguous` (DNA: the 11 IUPAC sets;
    protein: B, Z, J, X), or drawn from `codes` (a column cost table's rows)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    if codes is not None:
        return rng.choice(codes, size=total).astype(alphabet.dtype), offsets
    out = rng.choice(single_states(alphabet), size=total)
    letters = "RYSWKMBDHVN" if alphabet is DNA else "BZJX"
    odd = rng.random(total) < ambiguous
    out[odd] = rng.choice(alphabet.read_code[np.frombuffer(letters.encode(), np.uint8)], size=int(odd.sum()))
    return out.astype(alphabet.dtype), offsets


def random_costs(rng: np.random.Generator, m: int, params: ScoringParams, alphabet: Alphabet) -> ColumnCosts | None:
    if not params.column_weight:
        return None
    codes = cost_codes(alphabet)
    table = rng.integers(0, params.column_cost_bound() + 1, (codes.size, m)).astype(np.uint8)
    return ColumnCosts(table=table, codes=codes)


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
            family = None
            if alphabet.family_percent is not None and rng.random() < 0.5:
                single = single_states(alphabet)
                family = np.where(rng.random(m) < 0.8, rng.choice(single, m) | rng.choice(single, m), 0
                                  ).astype(alphabet.dtype)
            reads = [codes[offsets[q]:offsets[q + 1]] for q in range(lengths.size)]
            ref = score_matrix_reference(reads, profiles, params, family, costs)
            order = np.lexsort((np.broadcast_to(np.arange(n_edges), ref.shape), ref), axis=1)
            want_score, want_edge = np.take_along_axis(ref, order, 1), order
            first_edge, _, blocks = as_chunks(profiles, 10_000)[0]
            score, edge = scorer.score_chunk(blocks, first_edge, n_edges, codes, offsets, params, n_edges,
                                             family=family, costs=costs)
            bad += int(np.count_nonzero(score != want_score) + np.count_nonzero(edge != want_edge))
            checked += score.size
    finally:
        scorer.fill_outputs = None
    return bad, checked


def time_shape(scorer: GpuScorer, case: Case, shape, repeat: int, rng: np.random.Generator) -> dict:
    tag, n_reads, read_len, n_edges, m = shape
    alphabet, params = case.alphabet, params_of(case)
    lengths = (np.full(n_reads, read_len) if np.isscalar(read_len)
               else np.clip(rng.normal(*read_len, size=n_reads), 40, m - 1).astype(np.int64))
    costs = random_costs(rng, m, params, alphabet)
    codes, offsets = random_reads(rng, lengths, alphabet, case.ambiguous, None if costs is None else costs.codes)
    if costs is not None:  # the cost table's rows hold ambiguity codes too: single states only
        codes = rng.choice(single_states(alphabet), size=codes.size).astype(alphabet.dtype)
    chunks = as_chunks(random_profiles(rng, n_edges, m, alphabet), CHUNK_BLOCKS)
    cells = n_edges * int(lengths.sum()) * m
    walls, kernels_s = [], []
    for run in range(repeat + 1):
        wall = kernel = 0.0
        for first_edge, chunk_edges, blocks in chunks:
            scorer.score_chunk(blocks, first_edge, chunk_edges, codes, offsets, params, 4, costs=costs)
            wall += scorer.stats.wall_seconds
            kernel += scorer.stats.kernel_seconds
        if run:
            walls.append(wall)
            kernels_s.append(kernel)
    kernel, wall = statistics.median(kernels_s), statistics.median(walls)
    return {"shape": tag, "reads": n_reads, "edges": n_edges, "m": m, "cells": cells, "kernel_s": kernel,
            "wall_s": wall, "kernel_gcups": cells / kernel / 1e9, "wall_gcups": cells / wall / 1e9,
            "kernel_spread": (max(kernels_s) - min(kernels_s)) / kernel, "lookup_reads": scorer.stats.lookup_reads}


#: Instruction rates of the lookup path's integer work (NVIDIA only): eight independent chains per
#: work-item of one kind of instruction, or of the lookup path's mix per cell pair (three fused
#: add-mins and a PRMT), for the ceiling of BENCHMARKS.md's model (the ALU pipe at 64 lanes per
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
        kernel = cl.Program(ctx, RATE_SOURCE).build(options=[f"-DOP={op}"]).rate
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


def machine_code(scorer: GpuScorer, case: Case, archive: tarfile.TarFile | None) -> dict:
    """The driver's PTX of the variant's packed build and, with ptxas and cuobjdump, its SASS hot loop."""
    import pyopencl as cl

    params = params_of(case)
    variant = scorer.packed_variant.of(case.alphabet, params.weighted, bool(params.column_weight),
                                       scorer.lookup and (case.alphabet.dtype.itemsize > 1 or lookup_fits(params)))
    program = cl.Program(scorer.context, kernels.source("band_score.cl")).build(
        options=list(variant.options()), devices=[scorer.device.cl_device])
    binary = program.binaries[0].rstrip(b"\0")
    out: dict = {"options": list(variant.options())}

    def keep(name: str, data: bytes) -> None:
        if archive is not None:
            info = tarfile.TarInfo(f"{case.name}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

    keep("band_score.ptx" if scorer.device.is_nvidia else "band_score.bin", binary)
    ptxas, cuobjdump = find_tool("ptxas"), find_tool("cuobjdump")
    if not (scorer.device.is_nvidia and ptxas and cuobjdump):
        out["sass"] = "no ptxas/cuobjdump here" if scorer.device.is_nvidia else "not NVIDIA"
        return out
    cc = scorer.device.nv_compute_capability or (9, 0)
    try:
        sass, log = sass_of_ptx(binary, f"sm_{cc[0]}{cc[1]}", ptxas, cuobjdump)
    except RuntimeError as error:
        out["sass"] = str(error)[-400:]
        return out
    keep("band_score.sass", sass.encode())
    keep("ptxas.log", log.encode())
    out.update(hot_loop_summary(sass, log, variant.lanes, variant.lookup))
    return out


def sass_of_ptx(ptx: bytes, arch: str, ptxas: str, cuobjdump: str) -> tuple[str, str]:
    """(cuobjdump -sass listing, ptxas -v log) of PTX assembled for `arch`."""
    with tempfile.TemporaryDirectory() as tmp:
        source, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        source.write_bytes(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", str(cubin), str(source)],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"ptxas failed: {done.stderr}")
        sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
    return sass, done.stderr


def hot_loop_summary(sass: str, log: str, lanes: int, lookup: bool) -> dict:
    """Registers, the number of innermost loops and the hot loop's histogram (scripts/sass_count.py)."""
    code = sass_count.functions(sass).get("band_score", [])
    loops = [sass_count.summary(loop, lanes) | {"start": hex(loop.start)} for loop in sass_count.innermost_loops(code)]
    loops = [loop for loop in loops if loop["cells"]]
    result = {"registers": sass_count.registers(log), "loops": loops}
    return {"registers": result["registers"], "hot": sass_count.hot_loop(result, lookup=lookup), "loops": len(loops)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--small", action="store_true", help="tiny shapes: a smoke run on any OpenCL device (PoCL)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per shape after a warm-up")
    parser.add_argument("--rounds", type=int, default=4, help="random verification chunks per variant")
    parser.add_argument("--only", nargs="*", help="variant names (default: all)")
    parser.add_argument("--kind", default="gpu", help="device kind: gpu, or any (PoCL) with --small")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--deadline", type=float, default=170.0,
                        help="seconds after which the variants left are not timed (they are still verified)")
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
    archive_bytes = io.BytesIO()
    archive = tarfile.open(fileobj=archive_bytes, mode="w:gz") if args.out else None
    rates = {}
    if device.is_nvidia:
        try:
            rates = instruction_rates(device)
        except Exception as error:  # a measurement aside: report it and go on
            print(f"rates: failed: {type(error).__name__}: {error}", flush=True)
    rows = []
    for case in cases:
        row = {"variant": case.name, "note": case.note, "alphabet": case.alphabet.name, "preset": case.preset,
               "column_weight": case.column_weight}
        rows.append(row)
        t0 = time.perf_counter()
        late = t0 - started > args.deadline
        if t0 - started > args.deadline + 60:
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
        try:
            if late:
                raise RuntimeError("past the deadline: verified only")
            row["machine_code"] = machine_code(scorer, case, archive)
            hot = row["machine_code"].get("hot")
            if hot:
                print(f"  SASS hot loop: {hot['instructions']} instructions / {hot['cells']} cells = "
                      f"{hot['per_cell']:.2f} per cell, ALU {hot['alu_per_cell']:.2f}, registers "
                      f"{row['machine_code']['registers']}", flush=True)
        except Exception as error:
            row["machine_code"] = {"error": f"{type(error).__name__}: {error}"[:400]}
        if bad or args.skip_timing:
            continue
        if time.perf_counter() - started > args.deadline:
            row["skipped"] = "deadline"
            print(f"  not timed: past the {args.deadline:.0f} s deadline", flush=True)
            continue
        for shape in (s for s in shapes if s[0] in case.shapes):
            result = time_shape(scorer, case, shape, args.repeat, rng)
            row[shape[0]] = result
            print(f"  {shape[0]}: kernel {result['kernel_gcups']:.4g} GCUPS (spread {result['kernel_spread']:.1%}), "
                  f"wall {result['wall_gcups']:.4g} GCUPS, {result['kernel_s']:.3f} s", flush=True)
        scorer = None
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        archive.close()
        (args.out / "builds.tar.gz").write_bytes(archive_bytes.getvalue())
        (args.out / "results.json").write_text(json.dumps({"device": device.summary(), "seed": seed, "rates": rates,
                                                           "rows": rows}, indent=1, default=str))
    base = {r["variant"]: r for r in rows}
    print(f"\n{device.summary()}; {time.perf_counter() - started:.0f} s; kernel GCUPS (median of {args.repeat}), "
          "SASS hot loop per cell (total / integer ALU pipe)")
    print("| variant | verify | large kernel | large wall | m5000 kernel | m5000 wall | vs element | SASS/cell | ALU/cell | regs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        hot = (r.get("machine_code") or {}).get("hot") or {}
        ref = base.get("dna-element" if r["alphabet"] == "dna" else "protein-element", {})
        large = r.get("large", {}).get("kernel_gcups")
        ratio = large / ref["large"]["kernel_gcups"] if large and ref.get("large") else None
        verdict = r.get("error", "")[:30] or ("OK" if r.get("mismatches") == 0 else f"{r.get('mismatches')} BAD")
        cells = lambda key: (f"{r[key[0]][key[1]]:.4g}" if key[0] in r else "-")  # noqa: E731
        print(f"| {r['variant']} | {verdict} | {cells(('large', 'kernel_gcups'))} | {cells(('large', 'wall_gcups'))} | "
              f"{cells(('m5000', 'kernel_gcups'))} | {cells(('m5000', 'wall_gcups'))} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} | "
              f"{hot.get('per_cell', 0):.2f} | {hot.get('alu_per_cell', 0):.2f} | "
              f"{(r.get('machine_code') or {}).get('registers', '-')} |")
    for name, rate in rates.items():
        print(f"rate {name}: {rate['lanes_per_clock_per_sm']:.1f} lanes/clk/SM")
    for protein, dna in (("protein-element", "dna-element"), ("protein-lookup", "dna-lookup")):
        p, d = base.get(protein, {}).get("large"), base.get(dna, {}).get("large")
        if p and d:
            print(f"{protein} / {dna}, large kernel GCUPS: {p['kernel_gcups'] / d['kernel_gcups']:.2f}")
    return 1 if any(r.get("mismatches") or (r.get("error") and "deadline" not in r["error"]) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
