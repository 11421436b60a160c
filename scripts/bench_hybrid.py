"""Run the main job with --device cpu, gpu and hybrid on the same data; prints GCUPS and shares.

    python3 scripts/bench_hybrid.py DATA_DIR [--devices cpu,gpu,hybrid] [-j N] [--out DIR] [-- PAPARA_OPTIONS]

DATA_DIR holds tree.nwk, ref.phy (or ref.fasta) and reads.fa (scripts/simulate.py writes that layout). Each
device runs as its own `python -m papara_py` process (each pays its own start-up, JIT cache
loads and OpenCL build, as a user's run does). From each run file's /run record it prints:
scoring GCUPS (DESIGN 4), reads per second of process time, the process's peak RSS, the share of blocks and cells each consumer kind took, the stage
timings, T_all (the run from reading inputs to the closed output file) and T_all / T_scoring,
and the process wall time. Then it checks that every per-read dataset and the outlier null are
identical across the devices (exit status 1 if not) and, for hybrid, compares its GCUPS with cpu + gpu.
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
import numpy as np

COMPARED = ["status", "best_edge", "score", "start", "cigar", "strand", "pp", "candidates/edge", "candidates/score",
            "candidates/weight"]


#: Runs the main job as its only child and reports that child's peak RSS (KiB) on its last stderr line.
_PEAK_RSS = ("import resource, subprocess, sys\n"
             "code = subprocess.run(sys.argv[1:]).returncode\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
             "sys.exit(code)")


def run_device(data: Path, device: str, threads: int, out: Path, extra: list[str]) -> dict:
    """One run of the main job; returns its /run record plus the process wall time and peak RSS."""
    output = out / f"run-{device}.h5"
    reference = data / "ref.phy" if (data / "ref.phy").exists() else data / "ref.fasta"
    command = [sys.executable, "-m", "papara_py", "-t", str(data / "tree.nwk"), "-s", str(reference),
               "-r", str(data / "reads.fa"), "-o", str(output), "--device", device, "-j", str(threads), *extra]
    started = time.perf_counter()
    finished = subprocess.run([sys.executable, "-c", _PEAK_RSS, *command], stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    sys.stderr.write("".join(finished.stderr.splitlines(True)[:-1]))
    if finished.returncode:
        raise SystemExit(f"papara-py --device {device} failed (exit status {finished.returncode})")
    peak_kib = int(finished.stderr.strip().splitlines()[-1])
    with h5py.File(output, "r") as handle:
        attrs = handle["run"].attrs
        record = {key: (json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value)
                  for key, value in attrs.items()}
    record["process_wall_seconds"] = wall
    record["peak_rss_mib"] = peak_kib / 1024
    record["file"] = str(output)
    return record


def shares(record: dict) -> dict[str, float]:
    """Fraction of the cells each consumer kind (cpu, gpu) scored."""
    totals: dict[str, float] = {}
    for name, stats in record["consumers"].items():
        kind = name.split("-")[0]
        totals[kind] = totals.get(kind, 0) + stats.get("cells", stats["edges"])
    whole = sum(totals.values()) or 1
    return {kind: value / whole for kind, value in sorted(totals.items())}


def identical(files: list[str]) -> list[str]:
    """Per-read datasets, and the run record's outlier null, that differ between the run files
    (empty when all agree)."""
    differ = []
    with h5py.File(files[0], "r") as first:
        for name in COMPARED + ["aligned"]:
            want = first["reads"][name][()]
            for other in files[1:]:
                with h5py.File(other, "r") as handle:
                    if not np.array_equal(handle["reads"][name][()], want):
                        differ.append(f"{name} ({other})")
        null = first["run"].attrs.get("outlier_null")
        for other in files[1:]:
            with h5py.File(other, "r") as handle:
                if handle["run"].attrs.get("outlier_null") != null:
                    differ.append(f"/run outlier_null ({other})")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--devices", default="cpu,gpu,hybrid")
    parser.add_argument("-j", "--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_hybrid"))
    parser.epilog = "Options for papara-py itself follow a lone --, e.g. -- --gpu-profile."
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.extra = argv[split + 1:]
    args.out.mkdir(parents=True, exist_ok=True)
    records = {}
    for device in args.devices.split(","):
        record = run_device(args.data, device, args.threads, args.out, ["--quiet", *args.extra])
        records[device] = record
        t = record["timings_seconds"]
        total = t.get("total", sum(t.values()))
        print(f"{device:7s} GCUPS {record['gcups']:8.1f}  scoring {t['scoring']:8.2f} s  T_all {total:8.2f} s  "
              f"T_all/T_scoring {total / t['scoring']:.3f}  process {record['process_wall_seconds']:.1f} s  "
              f"reads/s {sum(record['status_counts'].values()) / record['process_wall_seconds']:.0f}  "
              f"peak RSS {record['peak_rss_mib']:.0f} MiB  "
              f"shares {json.dumps({k: round(v, 4) for k, v in shares(record).items()})}", flush=True)
        print(f"        timings {json.dumps({k: round(v, 3) for k, v in t.items()})}", flush=True)
        print(f"        consumers {json.dumps(record['consumers'])}", flush=True)
    if {"cpu", "gpu", "hybrid"} <= records.keys():
        both = records["cpu"]["gcups"] + records["gpu"]["gcups"]
        print(f"hybrid / (cpu + gpu) = {records['hybrid']['gcups']:.1f} / {both:.1f} = "
              f"{records['hybrid']['gcups'] / both:.3f}")
    differ = identical([r["file"] for r in records.values()])
    print("per-read datasets and outlier null identical across devices" if not differ else f"DIFFER: {differ}")
    (args.out / "bench_hybrid.json").write_text(json.dumps(records, indent=1, default=str))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
