"""scripts/bench_cpu.py --asm: the listing of the CPU kernel's DP loops a speed investigation
starts from (docs/performance.md)."""

from __future__ import annotations

import platform
import re
import subprocess
import sys

import pytest
from scripts_loader import SCRIPTS


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the listing looks for x86 packed minimum instructions")
def test_asm_lists_the_vector_dp_loop_of_every_kernel_variant() -> None:
    """Each of the four compiled steps (int16 and int32 lanes, Eq. 1 and near states) is listed
    with its packed minimums. It once listed nothing (a cached load keeps no assembly) and then
    failed on the kernel's changed signature."""
    listing = subprocess.run([sys.executable, str(SCRIPTS / "bench_cpu.py"), "--asm"], capture_output=True,
                             text=True, check=True, timeout=300).stdout
    for lanes in ("int16", "int32"):
        for step in ("Eq. 1", "near states"):
            loops = [line for line in listing.splitlines() if line.startswith(f"{lanes} {step} W=")]
            assert loops, f"no DP loop listed for {lanes} lanes, {step}:\n{listing}"
            assert all(re.search(r"\d+ v?pmins[wd] ", line) for line in loops), loops
