"""Peak memory of the main job against the read count (notebook/BENCHMARKS.md, Memory).

    python3 scripts/bench_memory.py [--counts 10000,100000,1000000] [--out DIR] [-- papara-py options]

Simulates one reference (default 500 taxa, ~1500 columns; --taxa/--root-columns for others) and 10,000 reads of 150 bp with
scripts/simulate.py, then makes the larger read files by repeating those reads under new names
(memory depends on how many reads there are and how long, not on what they say). Each count runs
as its own `python -m papara_py` process; its peak RSS comes from the kernel (wait4 rusage).
Printed per count: peak RSS, the compact read storage (names + residues + offsets), the output
file size, and RSS minus both, which must stay flat as the count grows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py

HERE = Path(__file__).resolve().parent


def simulate(out: Path, reads: int, taxa: int, root_columns: int) -> None:
    if (out / "reads.fa").exists():
        return
    subprocess.run([sys.executable, str(HERE / "simulate.py"), "--out", str(out), "--seed", "15",
                    "--taxa", str(taxa), "--held-out", str(max(3, taxa // 10)), "--columns", str(root_columns),
                    "--reads", str(reads), "--read-length", "150"], check=True)


def repeated_reads(source: Path, target: Path, count: int) -> tuple[int, int]:
    """Write `count` reads cycling through `source`'s; returns (name bytes, residues)."""
    records = source.read_text().split(">")[1:]
    pairs = [(r.split("\n", 1)[0], "".join(r.split("\n", 1)[1].split())) for r in records]
    names = residues = 0
    with target.open("w") as handle:
        for i in range(count):
            name, sequence = pairs[i % len(pairs)]
            name = f"{name}_{i}"
            handle.write(f">{name}\n{sequence}\n")
            names += len(name)
            residues += len(sequence)
    return names, residues


def peak_rss(command: list[str]) -> tuple[int, float]:
    """(peak RSS in bytes, wall seconds) of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} failed with status {os.waitstatus_to_exitcode(status)}")
    return usage.ru_maxrss * 1024, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="10000,100000,1000000")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_memory"))
    parser.add_argument("--taxa", type=int, default=500, help="reference taxa (default 500)")
    parser.add_argument("--root-columns", type=int, default=975,
                        help="simulated root length (default 975, which gives ~1500 alignment columns)")
    parser.add_argument("extra", nargs="*", help="more options for papara-py, after --")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.out / "sim"
    simulate(base, 10_000, args.taxa, args.root_columns)
    rows = []
    print("| reads | peak RSS MiB | compact reads MiB | output MiB | RSS - compact reads MiB | wall s |")
    print("|---|---|---|---|---|---|")
    for count in (int(c) for c in args.counts.split(",")):
        reads = args.out / f"reads_{count}.fa"
        names, residues = repeated_reads(base / "reads.fa", reads, count)
        output = args.out / f"run_{count}.h5"
        rss, wall = peak_rss([sys.executable, "-m", "papara_py", "-t", str(base / "tree.nwk"),
                              "-s", str(base / "ref.phy"), "-r", str(reads), "-o", str(output), "--quiet", *args.extra])
        # names as Python str (~49 bytes + length each), residues 1 byte, offsets 8 bytes
        compact = names + 49 * count + residues + 8 * (count + 1)
        size = output.stat().st_size
        mib = 1 << 20
        with h5py.File(output, "r") as handle:
            timings = json.loads(handle["run"].attrs["timings_seconds"])
        rows.append({"reads": count, "peak_rss": rss, "compact_reads": compact, "output": size, "wall": wall,
                     "timings_seconds": timings})
        print(f"| {count} | {rss / mib:.0f} | {compact / mib:.0f} | {size / mib:.0f} | "
              f"{(rss - compact) / mib:.0f} | {wall:.1f} |", flush=True)
        print(f"  stages (s): {json.dumps({k: round(v, 1) for k, v in timings.items()})}", flush=True)
        output.unlink()
        reads.unlink()
    (args.out / "bench_memory.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
