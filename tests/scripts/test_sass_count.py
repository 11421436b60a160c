"""scripts/sass_count.py's pure parts (no CUDA here): occupancy from registers, the register limit
passed on to ptxas, the ptxas log, and the CUDA shim of the kernel source."""

from __future__ import annotations

from scripts_loader import load_script

sass_count = load_script("sass_count")

#: ptxas -v of a register-limited build (ptxas 13.0), as scripts/bench_kernel_variants.py reads it
LOG = """ptxas info    : Overriding maximum register limit 256 for 'band_score' with  168 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'band_score' for 'sm_90'
ptxas info    : Function properties for band_score
    88 bytes stack frame, 92 bytes spill stores, 260 bytes spill loads
ptxas info    : Used 168 registers, used 0 barriers, 88 bytes cumulative stack size
ptxas info    : Compile time = 2961.195 ms
"""


def test_warps_per_sm_follow_sm90_register_allocation() -> None:
    """Each of the 4 sub-partitions holds floor(16,384 / (registers x 32, in units of 256)) warps,
    in whole groups of 4 warps: 198 registers 8 warps, 168 and 144 both 12, 128 16, 96 20."""
    assert [sass_count.warps_per_sm(r) for r in (255, 198, 168, 160, 144, 129, 128, 96, 80, 32)] == \
        [8, 8, 12, 12, 12, 12, 16, 20, 24, 64]
    assert sass_count.warps_per_sm(128, group_warps=8) == 16 and sass_count.warps_per_sm(154, group_warps=8) == 8
    assert sass_count.warps_per_sm(None) is None


def test_the_register_limit_goes_to_ptxas() -> None:
    options = ["-DROWS=32", "-DLOOKUP=1", "-cl-nv-maxrregcount=168"]
    assert sass_count.register_limit(options) == 168
    assert sass_count.ptxas_options(options) == ["--maxrregcount", "168"]
    assert sass_count.ptxas_options(["-DROWS=32"]) == []
    assert sass_count.register_limit(options + ["-cl-nv-maxrregcount=128"]) == 128  # the last one given


def test_the_ptxas_log_gives_registers_and_spills_of_the_kernel() -> None:
    assert sass_count.registers(LOG) == 168
    assert sass_count.spills(LOG) == (92, 260)
    assert sass_count.registers(LOG, "read_cost_profile") is None


def test_the_shim_keeps_ptx_state_spaces_in_inline_asm() -> None:
    """OpenCL's `global` qualifier goes, PTX's ld.global inside an asm string stays."""
    text = 'kernel void k(global uint *p) { asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p)); }'
    cuda = sass_count.cuda_source(text)
    assert "ld.global.nc.u32" in cuda and "global uint" not in cuda and '__global__ void k' in cuda
