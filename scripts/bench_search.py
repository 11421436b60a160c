"""Guided against exhaustive search on the same reads (notebook/BENCHMARKS.md, "Guided search").

Runs the papara-py CLI once per search mode on a scripts/simulate.py data set (or reuses run
files given with --exhaustive / --guided) and reports, per mode: the cells computed (run record),
the wall and CPU time of the run and the wall time of its scoring, the share of the edges each read was scored
against; between the modes: the reads whose best edge (and score) the guided search shares with
the exhaustive one; against the truth (truth.tsv, scored by scripts/bench_accuracy.py's code):
column accuracy and best edge = true edge.

    python3 scripts/bench_search.py --simulated DIR --threads 2 --device cpu --json out.json
    python3 scripts/bench_search.py --simulated DIR --device gpu --work /tmp/runs   # on a GPU host

Every run uses the default penalties, --strand forward (simulate.py's reads are forward unless
asked otherwise) and the same thread count and device.

The issue 57 measurement in one call (10^5 taxa x 3,000 reads, one GPU, about 4 minutes on the
H200 host: the data made first unless DIR holds them, a small guided run to compile and build
everything, then exhaustive and guided, guided twice with --repeat 2):

    python3 scripts/bench_search.py --simulated /tmp/sim1e5 --make --device gpu --threads 16 --warmup --repeat 2

`--make` writes the BENCHMARKS.md data set (`simulate.py --taxa 100000 --columns 1500
--target-columns 1850 --reads 3000 --read-length 150 --seed 7`) where DIR has none. Each mode's
summary has its phases (run record timings: input, profiles, blocks, scoring, whole) and its
GCUPS effective (cells / scoring seconds); a table of them closes the output.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy  # noqa: E402  (scripts/ is not a package)

MODES = ("exhaustive", "guided")


#: The BENCHMARKS.md 10^5-taxa data set (`--make`): scripts/simulate.py's arguments.
SIMULATION = ["--taxa", "100000", "--columns", "1500", "--target-columns", "1850", "--reads", "3000",
              "--read-length", "150", "--seed", "7"]
#: The warm-up's data set (`--warmup`): big enough for the alignment's bulk path (1 MiB).
WARMUP_SIMULATION = ["--taxa", "1500", "--columns", "800", "--reads", "200", "--read-length", "150", "--seed", "3"]


def simulate_into(directory: Path, arguments: list[str]) -> float:
    """scripts/simulate.py into `directory` unless it holds a data set; seconds it took."""
    if (directory / "truth.tsv").exists() and (directory / "tree.nwk").exists():
        return 0.0
    started = time.perf_counter()
    subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "simulate.py"), "--out", str(directory),
                    *arguments], check=True)
    return time.perf_counter() - started


def run_mode(data: bench_accuracy.Data, mode: str, out: Path, threads: int, device: str) -> tuple[float, float]:
    """Run papara-py with `--search mode` into `out`; returns its wall time and CPU time (user +
    system) in seconds. On a shared machine the CPU time is the steadier of the two."""
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "papara_py", "-t", str(data.tree), "-s", str(data.alignment), "-r", str(data.reads),
           "-o", str(out), "--search", mode, "--device", device, "--threads", str(threads), "--strand", "forward",
           "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_summary(path: Path, data: bench_accuracy.Data, times: tuple[float, float] | None) -> dict:
    """What one run computed and how well it placed the reads."""
    from papara_py.io.run_file import RunFile

    decoded = RunFile(str(path)).record
    accuracy = bench_accuracy.score(bench_accuracy.read_run_file(path, data), data.truth)
    timings = decoded.get("timings_seconds", {})
    wall, cpu = times or (None, None)
    scoring = timings.get("scoring")
    return {"cells": int(decoded["cells"]), "wall_seconds": wall, "cpu_seconds": cpu,
            "scoring_seconds": scoring,
            "gcups_effective": int(decoded["cells"]) / scoring / 1e9 if scoring else None,
            "phases": {name: timings.get(key) for name, key in PHASES},
            "total_seconds": timings.get("total"), "search": decoded.get("search"),
            "edges_scored_fraction": decoded.get("edges_scored_fraction"),
            "column_accuracy": accuracy["column_accuracy"], "edge_accuracy": accuracy["edge_accuracy"],
            "device": decoded.get("device"), "n_edges": decoded.get("n_edges"),
            "n_columns": decoded.get("n_columns")}


def agreement(exhaustive: Path, guided: Path) -> dict:
    """Share of the aligned reads whose best edge, and score, the two runs share."""
    with h5py.File(exhaustive) as a, h5py.File(guided) as b:
        aligned = a["reads/best_edge"][:] >= 0
        same_edge = a["reads/best_edge"][:] == b["reads/best_edge"][:]
        same_score = a["reads/score"][:] == b["reads/score"][:]
    n = int(aligned.sum())
    return {"reads": n, "best_edge_equal": float(same_edge[aligned].mean()) if n else float("nan"),
            "score_equal": float(same_score[aligned].mean()) if n else float("nan")}


#: The phases a summary lists: (name, the run record's timings key).
PHASES = (("input", "input"), ("profiles", "profiles"), ("blocks", "build_blocks"), ("jit_wait", "jit_wait"),
          ("scoring", "scoring"), ("traceback", "traceback"), ("output", "output"), ("whole", "total"))


def table(results: dict) -> str:
    """The modes' phases, rates and agreement as a few lines of text."""
    lines = [f"{'':<14}" + "".join(f"{name:>10}" for name, _ in PHASES) + f"{'process':>10}{'GCUPS':>8}{'cells':>9}"]
    exhaustive_cells = results.get("exhaustive", {}).get("cells")
    for key, summary in results.items():
        if not isinstance(summary, dict) or "phases" not in summary:
            continue
        phases = "".join(f"{(summary['phases'].get(name) or 0):>10.2f}" for name, _ in PHASES)
        share = f"{summary['cells'] / exhaustive_cells:>9.2%}" if exhaustive_cells else ""
        lines.append(f"{key:<14}{phases}{(summary['wall_seconds'] or 0):>10.2f}{(summary['gcups_effective'] or 0):>8.0f}"
                     f"{share}")
    if "agreement" in results:
        a = results["agreement"]
        lines.append(f"agreement: best edge {a['best_edge_equal']:.4%}, score {a['score_equal']:.4%} of {a['reads']} "
                     f"reads; column accuracy exhaustive {results['exhaustive']['column_accuracy']:.6f}, guided "
                     f"{results['guided']['column_accuracy']:.6f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--simulated", required=True, metavar="DIR", help="scripts/simulate.py output")
    p.add_argument("--make", action="store_true",
                   help="simulate the 10^5-taxa x 3,000-read data set into DIR first, unless it holds one")
    p.add_argument("--warmup", action="store_true",
                   help="first a small guided run (numba's compilation, the kernels' builds), not reported")
    p.add_argument("--repeat", type=int, default=1, help="guided runs (the last one reported as 'guided')")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["auto", "cpu", "gpu", "hybrid"])
    p.add_argument("--work", type=Path, default=None, help="where the run files go (default: a temporary directory)")
    for mode in MODES:
        p.add_argument(f"--{mode}", type=Path, default=None, metavar="RUN.h5",
                       help=f"an existing {mode} run of these reads instead of running it")
    p.add_argument("--json", type=Path, default=None, help="write the results here too")
    args = p.parse_args(argv)
    results = {"data": args.simulated, "threads": args.threads, "device": args.device}
    if args.make:
        results["simulate_seconds"] = simulate_into(Path(args.simulated), SIMULATION)
    data = bench_accuracy.Data.from_dir(args.simulated)
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        if args.warmup:
            simulate_into(work / "warmup", WARMUP_SIMULATION)
            small = bench_accuracy.Data.from_dir(work / "warmup")
            results["warmup_seconds"] = run_mode(small, "guided", work / "warmup.h5", args.threads, args.device)[0]
        runs = {}
        for mode in MODES:
            given = getattr(args, mode)
            runs[mode] = given or work / f"{mode}.h5"
            for attempt in range(1 if given or mode == "exhaustive" else max(1, args.repeat)):
                times = None if given else run_mode(data, mode, runs[mode], args.threads, args.device)
                key = mode if attempt == max(1, args.repeat) - 1 or mode == "exhaustive" else f"{mode}-{attempt + 1}"
                results[key] = run_summary(runs[mode], data, times)
        results["agreement"] = agreement(runs["exhaustive"], runs["guided"])
    results["cells_ratio"] = results["guided"]["cells"] / results["exhaustive"]["cells"]
    text = json.dumps(results, indent=2, default=lambda value: value.item())  # numpy scalars
    print(text)
    print(table(results))
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
