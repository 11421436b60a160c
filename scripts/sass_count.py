"""Count the machine instructions of band_score's column loops, offline: no GPU, no OpenCL driver.

    python3 scripts/sass_count.py [--alphabet dna|protein] [--near 0|1] [--costs 0|1] [--rows R]
                                  [--extra=-DLOOKUP=1] [--registers N ...] [--dump DIR] [--arch sm_90]
    python3 scripts/sass_count.py --ptx FILE.ptx --registers 0 168 128 [--lookup 1]   (a driver's PTX)

NVIDIA's OpenCL compiler and CUDA's nvcc both lower to PTX through NVVM and end in the same
ptxas, so the kernel source compiled as CUDA through a thin shim (`SHIM`: OpenCL's address-space
qualifiers and `kernel` mapped to CUDA's, get_global_id, the vector types the kernel uses; its
inline PTX stays as it is) gives SASS close to what the driver makes of the OpenCL build: a close
proxy for instruction counts, not the driver's exact code (scripts/bench_kernel_variants.py reads
the driver's own PTX on the device, and its SASS where cuobjdump is there; `--ptx` reads such a
PTX file here). A register limit (`--registers N`, or NVIDIA's OpenCL option
-cl-nv-maxrregcount=N among the options) goes to ptxas as --maxrregcount: the driver's PTX does not
record it, so its SASS must be assembled with it to be the build that ran.

Needs `nvcc` (CUDA 12.8+ for sm_90 DPX) and `cuobjdump` with `nvdisasm` on PATH; where the CUDA
install lacks the two, PyPI's `nvidia-cuda-cuobjdump` and `nvidia-cuda-nvdisasm` wheels carry
them (unzip both; PATH=.../nvidia/cu13/bin:$PATH).

What it prints, for each innermost loop of the SASS (a backward branch and the instructions
between its target and it): the instruction count, the rows it computes (fused add-min DPX
instructions / 3 per packed cell pair, or / 2 + 1 ...: see `_rows`), per-mnemonic counts, and the
instructions per cell, in total and on the integer ALU pipe (Hopper: LOP3, IADD3, ISETP, SEL,
SHF, PRMT, LEA, the DPX add-min and min, MOV; IMAD and its MOV/IADD/SHL forms issue on the FMA
pipe; loads, stores and branches on their own units). The ALU pipe issues 64 lanes per clock per
SM, so the kernel's ceiling is 132 SMs x 64 x 1.98 GHz / (ALU instructions per cell) on an H100
or H200 (notebook/BENCHMARKS.md, "Instructions per cell and the ceiling"). Also printed: the spill bytes
(ptxas -v), local-memory loads and stores (LDL/STL) in the hot loop and in the lookup path's other
loops, and the warps per SM the registers leave (`warps_per_sm`: sm_90's rules, 4 warps a group).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from papara_py import kernels  # noqa: E402

#: OpenCL C -> CUDA C++, just what band_score.cl uses.
SHIM = r"""
#include <stddef.h>
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
__device__ __forceinline__ size_t get_global_id(int d)
{
    return d == 0 ? (size_t)blockIdx.x * blockDim.x + threadIdx.x
         : d == 1 ? (size_t)blockIdx.y * blockDim.y + threadIdx.y
                  : (size_t)blockIdx.z * blockDim.z + threadIdx.z;
}
__device__ __forceinline__ uint clz(uint x) { return __clz(x); }
__device__ __forceinline__ ushort2 as_ushort2(uint v) { ushort2 r; r.x = v & 0xFFFFu; r.y = v >> 16; return r; }
__device__ __forceinline__ uint as_uint(ushort2 v) { return (uint)v.x | ((uint)v.y << 16); }
__device__ __forceinline__ ushort2 min(ushort2 a, ushort2 b)
{
    ushort2 r; r.x = a.x < b.x ? a.x : b.x; r.y = a.y < b.y ? a.y : b.y; return r;
}
"""

#: Hopper's issue ports per mnemonic (the first dotted part). Everything else counts as "other".
ALU = {"LOP3", "IADD3", "ISETP", "SEL", "SHF", "PRMT", "LEA", "VIADDMNMX", "VIMNMX", "VIMNMX3", "IMNMX",
       "MOV", "PLOP3", "FLO", "POPC", "IABS", "ISCADD", "LEA.HI", "BMSK", "SGXT", "BREV", "P2R", "R2P", "VIADD"}
FMA = {"IMAD", "IMUL", "FFMA", "FADD", "FMUL"}
MEMORY = {"LDG", "STG", "LD", "ST", "LDS", "STS", "LDL", "STL", "LDC", "ULDC", "CCTL"}
SM_COUNT, ALU_LANES, CLOCK_HZ = 132, 64, 1.98e9
#: sm_90's register file: 65,536 per SM in 4 sub-partitions (one per warp scheduler), allocated per
#: warp in units of 256 (8 per thread); at most 64 warps per SM.
SM_REGISTERS, SUB_PARTITIONS, WARP_ALLOCATION, MAX_WARPS = 65536, 4, 256, 64


def cuda_source(text: str) -> str:
    """The OpenCL source as CUDA: the shim first; OpenCL's qualifiers replaced as words (CUDA's own
    macros spell `global` and `inline` inside theirs, so they cannot be macros), vector literals as
    make_* calls."""
    text = re.sub(r"\((u?(?:int|char|short))([248])\)\(", r"make_\1\2(", text)
    text = re.sub(r"\b(?:__)?kernel\s+void\b", 'extern "C" __global__ void', text)
    text = re.sub(r"(?<!\.)\b(?:__)?global\b", "", text)  # not PTX's state space (ld.global) in inline asm
    text = re.sub(r"\binline\b", "__device__ __forceinline__", text)
    # an "n" (immediate) asm operand must be a constant expression to CUDA's front end before
    # unrolling (OpenCL's takes the unrolled constant): pass it in a register, which ptxas folds
    # back into the immediate
    text = text.replace('"n"(', '"r"(')
    return SHIM + text


def register_limit(options) -> int | None:
    """The register limit among OpenCL build options (NVIDIA's -cl-nv-maxrregcount=N; the last one
    given), or None."""
    limit = None
    for option in options:
        if option.startswith("-cl-nv-maxrregcount="):
            limit = int(option.split("=", 1)[1])
    return limit


def ptxas_options(options) -> list[str]:
    """ptxas flags that make an offline assembly of the driver's PTX the build the OpenCL options
    asked for (the PTX does not record a register limit)."""
    limit = register_limit(options)
    return ["--maxrregcount", str(limit)] if limit else []


def warps_per_sm(registers: int | None, group_warps: int = 4) -> int | None:
    """Resident warps per SM (sm_90) for a kernel of `registers` per thread in groups of
    `group_warps` warps, as far as registers limit it: each sub-partition holds
    floor(16,384 / (registers x 32 rounded up to 256)) warps, and whole groups fit."""
    if not registers:
        return None
    per_warp = -(-registers * 32 // WARP_ALLOCATION) * WARP_ALLOCATION
    warps = SM_REGISTERS // SUB_PARTITIONS // per_warp * SUB_PARTITIONS
    return min(MAX_WARPS, warps // group_warps * group_warps)


def build_cubin(options: list[str], workdir: Path, arch: str = "sm_90", source: str = "band_score.cl") -> Path:
    """nvcc -cubin of the kernel source with OpenCL build options `options` (-D..., and a register
    limit as -cl-nv-maxrregcount=N)."""
    cu = workdir / "kernel.cu"
    cu.write_text(cuda_source(kernels.source(source)))
    cubin = workdir / "kernel.cubin"
    defines = [o for o in options if o.startswith("-D")]
    limit = register_limit(options)
    cmd = ["nvcc", f"-arch={arch}", "-cubin", "-O3", "-Xptxas", "-v", *([f"-maxrregcount={limit}"] if limit else []),
           "-o", str(cubin), str(cu), *defines]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)}\n{done.stderr}")
    (workdir / "ptxas.log").write_text(done.stderr)
    return cubin


def sass_text(cubin: Path) -> str:
    done = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr)
    return done.stdout


_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def functions(sass: str) -> dict[str, list[tuple[int, str]]]:
    """(address, instruction text) per function of a cuobjdump -sass listing."""
    out: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in sass.splitlines():
        head = re.search(r"Function : (\S+)", line)
        if head:
            current = head.group(1)
            out[current] = []
            continue
        hit = _LINE.search(line)
        if hit and current is not None:
            out[current].append((int(hit.group(1), 16), hit.group(2).strip()))
    return out


def mnemonic(instruction: str) -> str:
    """The opcode with its modifiers, predicate guard dropped (`@P0 BRA` -> `BRA`)."""
    words = instruction.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def port(op: str) -> str:
    base = op.split(".")[0]
    if base == "IMAD" and op.startswith("IMAD.WIDE"):
        return "fma"
    if base in FMA:
        return "fma"
    if base in ALU:
        return "alu"
    if base in MEMORY:
        return "mem"
    if base in {"BRA", "EXIT", "BSYNC", "BSSY", "RET", "CALL", "WARPSYNC", "BAR", "NOP", "YIELD"}:
        return "branch"
    if base.startswith("U"):
        return "uniform"
    return "other"


@dataclass
class Loop:
    start: int
    end: int
    ops: collections.Counter = field(default_factory=collections.Counter)

    @property
    def size(self) -> int:
        return sum(self.ops.values())

    def count(self, prefix: str) -> int:
        return sum(n for op, n in self.ops.items() if op.split(".")[0] == prefix)

    def ports(self) -> collections.Counter:
        out: collections.Counter = collections.Counter()
        for op, n in self.ops.items():
            out[port(op)] += n
        return out


def innermost_loops(code: list[tuple[int, str]]) -> list[Loop]:
    """Loops closed by a backward branch whose body holds no other backward branch."""
    branches = []
    for address, text in code:
        target = re.search(r"BRA\s+(?:`?\(?\.?L_x_\d+\)?|0x([0-9a-f]+))", text)
        if mnemonic(text).startswith("BRA") and target:
            hexa = re.search(r"0x([0-9a-f]+)", text)
            if hexa:
                dest = int(hexa.group(1), 16)
                if dest <= address:
                    branches.append((dest, address))
    loops = []
    for dest, address in branches:
        if any(dest <= d2 and a2 < address and (d2, a2) != (dest, address) for d2, a2 in branches):
            continue  # holds an inner loop
        loop = Loop(dest, address)
        for a, text in code:
            if dest <= a <= address:
                loop.ops[mnemonic(text)] += 1
        loops.append(loop)
    return loops


def cells_per_iteration(loop: Loop, lanes: int) -> int:
    """Cells one iteration computes: every cell (pair) takes three fused add-mins (D, diagonal,
    insertion), or, built with -DLOOKUP_PLAIN_ADDS=1, three plain mins (VIMNMX) instead."""
    dpx = loop.count("VIADDMNMX")
    return ((dpx or loop.count("VIMNMX")) // 3) * lanes


def summary(loop: Loop, lanes: int) -> dict:
    cells = cells_per_iteration(loop, lanes)
    ports = loop.ports()
    return {"instructions": loop.size, "cells": cells,
            "per_cell": loop.size / cells if cells else None,
            "alu_per_cell": ports["alu"] / cells if cells else None,
            "fma_per_cell": ports["fma"] / cells if cells else None,
            "ports": dict(ports), "ops": dict(loop.ops.most_common()),
            "ceiling_tcups": SM_COUNT * ALU_LANES * CLOCK_HZ / (ports["alu"] / cells) / 1e12 if cells else None}


def _function_lines(log: str, function: str) -> list[str]:
    """The lines of a ptxas -v log about `function` (its 'Compiling entry function' line and the
    few after it)."""
    lines = log.splitlines()
    for k, line in enumerate(lines):
        if f"entry function '{function}'" in line:
            return lines[k:k + 5]
    return []


def registers(log: str, function: str = "band_score") -> int | None:
    for line in _function_lines(log, function):
        hit = re.search(r"Used (\d+) registers", line)
        if hit:
            return int(hit.group(1))
    return None


def spills(log: str, function: str = "band_score") -> tuple[int, int] | None:
    """(spill store bytes, spill load bytes) of `function` in a ptxas -v log."""
    for line in _function_lines(log, function):
        hit = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if hit:
            return int(hit.group(1)), int(hit.group(2))
    return None


def local_ops(loop: dict) -> int:
    """Local-memory loads and stores (spilled registers) in a loop's histogram."""
    return sum(n for op, n in loop["ops"].items() if op.split(".")[0] in ("LDL", "STL"))


def is_lookup_loop(loop: dict) -> bool:
    """A loop of the lookup path: DNA's PRMT per cell pair (and no min of a hit test), protein's
    funnel shifts, or LOOKUP_TABLE's read-only load per cell pair."""
    cells, ops = loop["cells"], loop["ops"]
    return bool(ops.get("SHF.R.U64", 0) or ops.get("LDG.E.CONSTANT", 0) >= cells // 2 or (
        ops.get("PRMT", 0) >= cells // 2 and (ops.get("VIMNMX.U16x2", 0) < cells // 4
                                              or not ops.get("VIADDMNMX.U16x2", 0))))


def machine_summary(sass: str, log: str, lanes: int = 2, lookup: bool = False, group_warps: int = 4) -> dict:
    """What both scripts report of one build's SASS and ptxas log: registers, spill bytes, warps per
    SM, the number of cell loops, the hot loop (with its local-memory operations) and the local
    operations in the lookup path's loops."""
    code = functions(sass).get("band_score", [])
    loops = [summary(loop, lanes) | {"start": hex(loop.start)} for loop in innermost_loops(code)]
    loops = [loop for loop in loops if loop["cells"]]
    regs = registers(log)
    spilled = spills(log)
    hot = hot_loop({"loops": loops}, lookup)
    return {"registers": regs, "spill_bytes": None if spilled is None else {"stores": spilled[0], "loads": spilled[1]},
            "warps_per_sm": warps_per_sm(regs, group_warps), "hot": hot, "loops": len(loops),
            "hot_local_ops": None if hot is None else local_ops(hot),
            "lookup_loop_local_ops": sum(local_ops(loop) for loop in loops if is_lookup_loop(loop)),
            "local_ops": sum(1 for _, text in code if mnemonic(text).split(".")[0] in ("LDL", "STL"))}


def analyse(options: list[str], arch: str = "sm_90", dump: Path | None = None, lanes: int = 2) -> dict:
    """Build, disassemble and summarise band_score's innermost loops for build `options`."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cubin = build_cubin(options, work, arch)
        sass = sass_text(cubin)
        log = (work / "ptxas.log").read_text()
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            tag = "_".join(o.lstrip("-D").replace("=", "") for o in options)
            (dump / f"{tag}.sass").write_text(sass)
            (dump / f"{tag}.cu").write_text((work / "kernel.cu").read_text())
            (dump / f"{tag}.ptxas.log").write_text(log)
    return _result(options, sass, log, lanes)


def _result(options, sass: str, log: str, lanes: int) -> dict:
    code = functions(sass).get("band_score", [])
    loops = [summary(loop, lanes) | {"start": hex(loop.start)} for loop in innermost_loops(code)]
    loops = [loop for loop in loops if loop["cells"]]
    return {"options": list(options), "registers": registers(log), "loops": loops, "total_instructions": len(code),
            "summary": machine_summary(sass, log, lanes, "-DLOOKUP=1" in options)}


def sass_of_ptx(ptx: bytes, arch: str, flags: list[str], ptxas: str = "ptxas",
                cuobjdump: str = "cuobjdump") -> tuple[str, str]:
    """(cuobjdump -sass listing, ptxas -v log) of PTX (a driver's program binary) assembled for
    `arch` with ptxas `flags` (`ptxas_options` of the build's OpenCL options)."""
    with tempfile.TemporaryDirectory() as tmp:
        source, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        source.write_bytes(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", "-v", *flags, "-o", str(cubin), str(source)],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"ptxas failed: {done.stderr}")
        sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
    return sass, done.stderr


def hot_loop(result: dict, lookup: bool = False) -> dict | None:
    """The column loop where every row is in the band, of a stripe that writes the band (not the
    last): among the loops with the most cells, those without per-row band tests (ISETP, SEL) and,
    for a LOOKUP build, those of the lookup path (DNA: a PRMT per cell pair; protein: SHF.R.U64);
    the one with a band store (STG) and then the fewest instructions."""
    loops = result["loops"]
    if not loops:
        return None
    most = max(loop["cells"] for loop in loops)
    candidates = [loop for loop in loops if loop["cells"] == most]
    if lookup:  # DNA: a PRMT per cell pair and no min of a hit; protein: the funnel shifts
        candidates = [loop for loop in candidates if is_lookup_loop(loop)] or candidates

    def tests(loop: dict) -> int:
        return sum(n for op, n in loop["ops"].items() if op.startswith(("ISETP", "SEL")))

    return min(candidates, key=lambda loop: (tests(loop) > most // 4, "STG.E" not in loop["ops"],
                                             loop["instructions"]))


def describe(result: dict, all_loops: bool = False) -> str:
    """The printed report of one `analyse` result."""
    summ = result["summary"]
    spilled = summ["spill_bytes"] or {"stores": "?", "loads": "?"}
    lines = [f"options: {' '.join(result['options'])}",
             f"registers: {result['registers']} ({summ['warps_per_sm']} warps per SM in groups of 4), spills: "
             f"{spilled['stores']} bytes stored / {spilled['loads']} loaded, local loads+stores: {summ['local_ops']} "
             f"in band_score, {summ['hot_local_ops']} in the hot loop, {summ['lookup_loop_local_ops']} in the lookup "
             f"loops; instructions in band_score: {result['total_instructions']}"]
    loops = result["loops"] if all_loops else [summ["hot"]]
    for loop in loops:
        if loop is None:
            continue
        lines.append(f"loop at {loop['start']}: {loop['instructions']} instructions, {loop['cells']} cells, "
                     f"{loop['per_cell']:.3f} per cell, ALU {loop['alu_per_cell']:.3f} per cell, "
                     f"FMA {loop['fma_per_cell']:.3f}; ALU ceiling {loop['ceiling_tcups']:.2f} TCUPS")
        lines.append("    " + ", ".join(f"{op} {n}" for op, n in loop["ops"].items()))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--options", nargs="*", help="build options as the host passes them (overrides the rest)")
    parser.add_argument("--alphabet", choices=("dna", "protein"), default="dna")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--near", type=int, default=1)
    parser.add_argument("--costs", type=int, default=0)
    parser.add_argument("--ptx", type=int, default=1, help="1: the PTX build (USE_PTX)")
    parser.add_argument("--ptx-file", type=Path, help="a driver's PTX (program binary) to assemble instead of nvcc")
    parser.add_argument("--lookup", type=int, default=None, help="with --ptx-file: 1 if it is a LOOKUP build")
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("--extra", action="append", default=[],
                        help="one more -D option (the kernel's variant switches), as --extra=-DLOOKUP=1; repeatable")
    parser.add_argument("--registers", type=int, nargs="*", default=[],
                        help="register limits to build with, one report each (0: none; default: the options')")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--all-loops", action="store_true")
    args = parser.parse_args()
    for tool in ("ptxas", "cuobjdump") if args.ptx_file else ("nvcc", "cuobjdump"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not on PATH (see the docstring)")
    if args.ptx_file:
        options = ["-DLOOKUP=1"] if args.lookup else []
    elif args.options:
        options = args.options
    else:
        from papara_py.engine.band_inputs import Variant
        from papara_py.phylo.encoding import ALPHABETS

        base = Variant(packed=True, ptx=bool(args.ptx), rows=args.rows or 32)
        variant = base.of(ALPHABETS[args.alphabet], bool(args.near), bool(args.costs))
        options = list(variant.options())
    options += args.extra
    for limit in args.registers or [None]:
        built = options if limit is None else [o for o in options if not o.startswith("-cl-nv-maxrregcount=")] + (
            [f"-cl-nv-maxrregcount={limit}"] if limit else [])
        if args.ptx_file:
            sass, log = sass_of_ptx(args.ptx_file.read_bytes(), args.arch, ptxas_options(built))
            result = _result(built, sass, log, args.lanes)
        else:
            result = analyse(built, args.arch, args.dump, args.lanes)
        print(describe(result, args.all_loops), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
