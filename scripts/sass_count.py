"""Count the machine instructions of band_score's column loops, offline: no GPU, no OpenCL driver.

    python3 scripts/sass_count.py [--alphabet dna|protein] [--near 0|1] [--costs 0|1] [--rows R]
                                  [--lookup 0|1] [--edges 0|1] [--dump DIR] [--arch sm_90]

NVIDIA's OpenCL compiler and CUDA's nvcc both lower to PTX through NVVM and end in the same
ptxas, so the kernel source compiled as CUDA through a thin shim (`SHIM`: OpenCL's address-space
qualifiers and `kernel` mapped to CUDA's, get_global_id, the vector types the kernel uses; its
inline PTX stays as it is) gives SASS close to what the driver makes of the OpenCL build: a close
proxy for instruction counts, not the driver's exact code (scripts/bench_kernel_variants.py reads
the driver's own PTX on the device, and its SASS where cuobjdump is there).

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
or H200 (BENCHMARKS.md, "Instructions per cell and the ceiling").
"""

from __future__ import annotations

import argparse
import collections
import os
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


def cuda_source(text: str) -> str:
    """The OpenCL source as CUDA: the shim first; OpenCL's qualifiers replaced as words (CUDA's own
    macros spell `global` and `inline` inside theirs, so they cannot be macros), vector literals as
    make_* calls."""
    text = re.sub(r"\((u?(?:int|char|short))([248])\)\(", r"make_\1\2(", text)
    text = re.sub(r"\b(?:__)?kernel\s+void\b", 'extern "C" __global__ void', text)
    text = re.sub(r"\b(?:__)?global\b", "", text)
    text = re.sub(r"\binline\b", "__device__ __forceinline__", text)
    # an "n" (immediate) asm operand must be a constant expression to CUDA's front end before
    # unrolling (OpenCL's takes the unrolled constant): pass it in a register, which ptxas folds
    # back into the immediate
    text = text.replace('"n"(', '"r"(')
    return SHIM + text


def build_cubin(options: list[str], workdir: Path, arch: str = "sm_90", source: str = "band_score.cl") -> Path:
    """nvcc -cubin of the kernel source with OpenCL build options `options` (-D...)."""
    cu = workdir / "kernel.cu"
    cu.write_text(cuda_source(kernels.source(source)))
    cubin = workdir / "kernel.cubin"
    defines = [o for o in options if o.startswith("-D")]
    cmd = ["nvcc", f"-arch={arch}", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(cubin), str(cu), *defines]
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


def registers(log: str, function: str = "band_score") -> int | None:
    lines = log.splitlines()
    for k, line in enumerate(lines):
        if f"'{function}'" in line:
            for follow in lines[k:k + 4]:
                hit = re.search(r"Used (\d+) registers", follow)
                if hit:
                    return int(hit.group(1))
    return None


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
    code = functions(sass).get("band_score", [])
    loops = [summary(loop, lanes) | {"start": hex(loop.start)} for loop in innermost_loops(code)]
    loops = [loop for loop in loops if loop["cells"]]
    return {"options": options, "registers": registers(log), "loops": loops, "total_instructions": len(code)}


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
        candidates = [loop for loop in candidates if loop["ops"].get("SHF.R.U64", 0) or (
            loop["ops"].get("PRMT", 0) >= most // 2 and (loop["ops"].get("VIMNMX.U16x2", 0) < most // 4
                                                         or not loop["ops"].get("VIADDMNMX.U16x2", 0)))] or candidates

    def tests(loop: dict) -> int:
        return sum(n for op, n in loop["ops"].items() if op.startswith(("ISETP", "SEL")))

    return min(candidates, key=lambda loop: (tests(loop) > most // 4, "STG.E" not in loop["ops"],
                                             loop["instructions"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--options", nargs="*", help="build options as the host passes them (overrides the rest)")
    parser.add_argument("--alphabet", choices=("dna", "protein"), default="dna")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--near", type=int, default=1)
    parser.add_argument("--costs", type=int, default=0)
    parser.add_argument("--ptx", type=int, default=1)
    parser.add_argument("--extra", action="append", default=[],
                        help="one more -D option (the kernel's variant switches), as --extra=-DLOOKUP=1; repeatable")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--all-loops", action="store_true")
    args = parser.parse_args()
    for tool in ("nvcc", "cuobjdump"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not on PATH (see the docstring)")
    if args.options:
        options = args.options
    else:
        from papara_py.engine.gpu import Variant
        from papara_py.phylo.encoding import ALPHABETS

        base = Variant(packed=True, ptx=bool(args.ptx), rows=args.rows or 32)
        variant = base.of(ALPHABETS[args.alphabet], bool(args.near), bool(args.costs))
        options = list(variant.options())
    options += args.extra
    result = analyse(options, args.arch, args.dump)
    print(f"options: {' '.join(options)}\nregisters: {result['registers']}, "
          f"instructions in band_score: {result['total_instructions']}")
    loops = result["loops"] if args.all_loops else [hot_loop(result, "-DLOOKUP=1" in options)]
    for loop in loops:
        if loop is None:
            continue
        print(f"loop at {loop['start']}: {loop['instructions']} instructions, {loop['cells']} cells, "
              f"{loop['per_cell']:.3f} per cell, ALU {loop['alu_per_cell']:.3f} per cell, "
              f"FMA {loop['fma_per_cell']:.3f}; ALU ceiling {loop['ceiling_tcups']:.2f} TCUPS")
        print("   ", ", ".join(f"{op} {n}" for op, n in loop["ops"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
