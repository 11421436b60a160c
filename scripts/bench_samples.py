"""Several samples against one reference: a process per sample against one run of them all.

    python3 scripts/bench_samples.py DATA_DIR [--device gpu] [-j N] [--out DIR] [--mode apart,together] [-- OPTIONS]

DATA_DIR holds tree.nwk, ref.phy (or ref.fasta) and the samples, every `*.fa` file beside them
(`scripts/sample_reads.py --seed S` makes one per seed). `apart` runs `papara-py` once per sample
(each process pays the reference's start-up: tree, alignment, profiles, GPU, numba) and prints
each one's T_all / T_scoring; `together` runs `papara-py -r S1.fa S2.fa ... --outdir DIR` once
(papara_py/samples.py) and prints each sample's own scoring span and the whole run's T_all /
T_scoring (the last sample's `total` against `run_scoring`, the engine's time from its first
batch to the last). Both print the process wall time, reads per second of it and the peak RSS,
and the per-read datasets of the two modes are compared (exit status 1 if any differs).
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

COMPARED = ["status", "best_edge", "score", "start", "cigar", "strand", "aligned", "candidates/edge",
            "candidates/score"]

#: Runs the main job as its only child and reports that child's peak RSS (KiB) on its last stderr line.
_PEAK_RSS = ("import resource, subprocess, sys\n"
             "code = subprocess.run(sys.argv[1:]).returncode\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
             "sys.exit(code)")


def timed(command: list[str]) -> tuple[float, float]:
    """Run `command`; its wall seconds and peak RSS in MiB (exits if it fails)."""
    started = time.perf_counter()
    finished = subprocess.run([sys.executable, "-c", _PEAK_RSS, *command], check=False, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    sys.stderr.write("".join(finished.stderr.splitlines(True)[:-1]))
    if finished.returncode:
        raise SystemExit(f"{' '.join(command[:6])} ... failed (exit status {finished.returncode})")
    return wall, int(finished.stderr.strip().splitlines()[-1]) / 1024


def record(path: Path) -> dict:
    with h5py.File(path, "r") as handle:
        return {key: (json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value)
                for key, value in handle["run"].attrs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("-j", "--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_samples"))
    parser.add_argument("--mode", default="apart,together")
    parser.epilog = "Options for papara-py itself follow a lone --, e.g. -- --gpu-profile."
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    extra = argv[split + 1:]
    reference = args.data / "ref.phy" if (args.data / "ref.phy").exists() else args.data / "ref.fasta"
    samples = sorted(args.data.glob("*.fa"))
    if not samples:
        raise SystemExit(f"no *.fa samples in {args.data}")
    base = [sys.executable, "-m", "papara_py", "-t", str(args.data / "tree.nwk"), "-s", str(reference),
            "--device", args.device, "-j", str(args.threads), "--quiet", *extra]
    outputs: dict[str, list[Path]] = {}
    for mode in args.mode.split(","):
        directory = args.out / mode
        directory.mkdir(parents=True, exist_ok=True)
        outputs[mode] = [directory / (sample.stem + ".h5") for sample in samples]
        if mode == "apart":
            walls = []
            for sample, output in zip(samples, outputs[mode]):
                wall, peak = timed([*base, "-r", str(sample), "-o", str(output)])
                walls.append(wall)
                t = record(output)["timings_seconds"]
                print(f"apart    {sample.name}: process {wall:.2f} s  T_all {t['total']:.2f} s  scoring "
                      f"{t['scoring']:.2f} s  T_all/T_scoring {t['total'] / t['scoring']:.3f}  peak RSS {peak:.0f} MiB",
                      flush=True)
            wall = sum(walls)
        elif mode == "together":
            wall, peak = timed([*base, "-r", *map(str, samples), "--outdir", str(directory)])
            for sample, output in zip(samples, outputs[mode]):
                rec = record(output)
                t = rec["timings_seconds"]
                print(f"together {sample.name}: scoring {t['scoring']:.2f} s ({rec['gcups']:.0f} GCUPS)  done at "
                      f"{t['total']:.2f} s  engine {t['run_scoring']:.2f} s", flush=True)
            t = record(outputs[mode][-1])["timings_seconds"]
            print(f"together: process {wall:.2f} s  T_all {t['total']:.2f} s  T_scoring {t['run_scoring']:.2f} s  "
                  f"T_all/T_scoring {t['total'] / t['run_scoring']:.3f}  peak RSS {peak:.0f} MiB", flush=True)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        reads = sum(int(record(o)["status_counts"].get("aligned", 0)) for o in outputs[mode])
        print(f"{mode}: {len(samples)} samples, {reads} reads aligned, {wall:.2f} s of processes, "
              f"{reads / wall:.0f} reads/s", flush=True)
    differ = []
    if len(outputs) == 2:
        for first, second in zip(*outputs.values()):
            with h5py.File(first, "r") as a, h5py.File(second, "r") as b:
                differ += [f"{first.name}: {name}" for name in COMPARED
                           if not np.array_equal(a["reads"][name][()], b["reads"][name][()])]
        print("per-read datasets identical in both modes" if not differ else f"DIFFER: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
