"""The writer thread's work for N reads, alone: wall time, CPU time and the GIL it holds.

What it runs is what `run/stages.ScoreTraceWrite.write` runs on the writer thread, through the
same code: a run file opened (`run_writer`, the reference rows written), then for each stretch
`write_batch` (the decoded batch's alignments turned into rows and CIGARs, the numeric datasets,
/reads/aligned) and `write_stretch` (the string fields: names, status, strand, CIGAR, sequence,
PP and their CRC-32s), then the sample's end (`set_read_count`, the run record, the atomic
commit). Only the inputs are made up: rpsS-like (1,072 columns, a reference of 1,277 rows, 100-bp
reads whose residues step over the alignment's gap columns now and then, a few insertions, K = 5
candidates, posteriors mostly '*'). A few distinct batches are made once, before the clock, and
handed out in turn (each stretch at its own rows), so that making them costs nothing measured.

Measured (the writer runs on a thread of its own, as in a run; the main thread meanwhile):
- wall: the writer's whole work, first row to committed file;
- CPU: the process's CPU time over it (all threads: the writer and any pool it uses), and the
  writer thread's own;
- GIL: a pure-Python counter on the main thread, calibrated alone before and after; the time it
  lost while the writer ran (wall - counts / rate) is the time the writer's threads held the GIL
  while the counter wanted it (on a machine with fewer free cores than busy threads it also counts
  CPU contention: see --gil-profile), and its longest stall;
- with --gil-profile, the script runs itself under py-spy (`--gil`: only the thread holding the
  GIL is sampled) and reports the seconds each thread was seen holding it.

    PYTHONPATH=$PWD nice -n 10 python scripts/bench_writer.py --reads 200000
    PYTHONPATH=$PWD nice -n 10 python scripts/bench_writer.py --reads 1000000 --gil-profile
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.io.paths import INSERTED
from papara_py.io.read_stream import Stretch
from papara_py.io.reads import STATUSES, ReadSet, STATUS_ALIGNED, STATUS_EMPTY
from papara_py.io.run_writer import run_writer
from papara_py.model.decode import Decoded
from papara_py.model.fixed_point import PROB_ONE
from papara_py.run.writers import write_batch, write_stretch

ALIGNED, EMPTY = STATUSES.index(STATUS_ALIGNED), STATUSES.index(STATUS_EMPTY)


def make_batch(rng: np.random.Generator, n: int, m: int, k: int, read_length: int, serial: int,
               posteriors: bool = True, empty: float = 0.0):
    """One stretch's made-up inputs of `n` rows (a share `empty` of them empty reads): (reads,
    statuses, alignable, reverse, candidates, decoded)."""
    names = [f"sim{serial:02d}_{i:07d}_rpsS/1" for i in range(n)]
    lengths = np.full(n, read_length, np.int64)
    lengths[rng.random(n) < empty] = 0
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    residues = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, int(offsets[-1]))].copy()
    reads = ReadSet(names, residues, offsets)
    statuses = np.where(lengths == 0, EMPTY, ALIGNED).astype(np.uint8)
    alignable = np.flatnonzero(lengths > 0)
    q = len(alignable)
    total = q * read_length
    # each residue one column past the last, now and then a run of the alignment's gap columns
    steps = 1 + np.where(rng.random(total) < 0.15, rng.geometric(0.3, total), 0)
    steps = steps.reshape(q, read_length)
    steps[:, 0] = 0
    span = np.cumsum(steps, axis=1)
    start = rng.integers(0, m - span[:, -1] - 1)
    columns = (start[:, None] + span).astype(np.int32)
    inserted = rng.random((q, read_length)) < 0.01
    inserted[:, read_length // 2] = False  # at least one residue placed
    columns[inserted] = INSERTED
    pp = np.clip(PROB_ONE - rng.exponential(1500, total), 0, PROB_ONE).astype(np.uint16) if posteriors else None
    score = np.sort(rng.integers(100, 400, (q, k)), axis=1).astype(np.int32)
    edge = rng.integers(0, 2551, (q, k)).astype(np.int32)
    edge[rng.random((q, k)) < 0.02] = -1
    weights = rng.integers(0, PROB_ONE // k, (q, k)).astype(np.int32)
    decoded = Decoded(residues[np.concatenate([np.arange(offsets[a], offsets[a + 1]) for a in alignable])],
                      np.arange(q + 1, dtype=np.int64) * read_length, columns.ravel(), pp, weights, False)
    reverse = rng.random(q) < 0.25
    return reads, statuses, alignable, reverse, Candidates(score=score, edge=edge), decoded


def write_run(path: str, n_reads: int, batch_reads: int, templates, m: int, k: int, reference) -> dict:
    """The writer thread's work for `n_reads` rows, templates handed out in turn."""
    with run_writer(path, m, k, "bench_writer") as writer:
        writer.write_reference(*reference)
        first = 0
        for index in range(-(-n_reads // batch_reads)):
            reads, statuses, alignable, reverse, candidates, decoded = templates[index % len(templates)]
            n = min(batch_reads, n_reads - first)
            if n < len(reads):  # the last, shorter stretch
                keep = alignable < n
                reads = ReadSet(reads.names[:n], reads.residues, reads.offsets[:n + 1])
                statuses, alignable, reverse = statuses[:n], alignable[keep], reverse[keep]
                q = len(alignable)
                candidates = Candidates(score=candidates.score[:q], edge=candidates.edge[:q])
                cut = int(decoded.offsets[q])
                decoded = Decoded(decoded.residues[:cut], decoded.offsets[:q + 1], decoded.columns[:cut],
                                  None if decoded.pp is None else decoded.pp[:cut], decoded.weights[:q], False)
            stretch = Stretch(first, reads, statuses, alignable)
            batch = write_batch(writer, stretch.first + stretch.alignable, candidates, decoded, m)
            write_stretch(writer, stretch, batch_reads, reverse, batch)
            first += n
        writer.set_read_count(n_reads)
        writer.write_run_record({"bench": "writer", "reads": n_reads, "timings_seconds": {"output": 1.0}})
    return {}


def counter_rate(seconds: float = 0.5) -> float:
    """Counts per second of the pure-Python counter, alone."""
    count, end = 0, time.perf_counter() + seconds
    started = time.perf_counter()
    while True:
        for _ in range(1000):
            count += 1
        if time.perf_counter() >= end:
            break
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=200_000)
    parser.add_argument("--batch-reads", type=int, default=12_500)
    parser.add_argument("--columns", type=int, default=1_072)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--read-length", type=int, default=100)
    parser.add_argument("--templates", type=int, default=4, help="distinct batches made")
    parser.add_argument("--empty", type=float, default=0.0,
                        help="share of empty reads (not aligned: each splits its batch's numeric writes)")
    parser.add_argument("--no-posteriors", action="store_true", help="T = 0: no PP")
    parser.add_argument("--output", help="the run file (default: a temporary one, removed)")
    parser.add_argument("--switch", type=float, default=0.0005, help="sys.setswitchinterval (the main job's)")
    parser.add_argument("--no-counter", action="store_true", help="the main thread waits instead of counting")
    parser.add_argument("--gil-profile", action="store_true", help="run under py-spy --gil and report per thread")
    parser.add_argument("--json", help="append the results as a JSON line here")
    parser.add_argument("--ident-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gil_profile:
        return gil_profile(args)
    sys.setswitchinterval(args.switch)

    rng = np.random.default_rng(57)
    m, k = args.columns, args.k
    t0 = time.perf_counter()
    templates = [make_batch(rng, min(args.batch_reads, args.reads), m, k, args.read_length, i, not args.no_posteriors,
                            args.empty)
                 for i in range(args.templates)]
    reference_rows = np.full((1_277, m), ord("-"), np.uint8)
    reference_rows[:, ::3] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (1_277, len(range(0, m, 3))))]
    reference = ([f"taxon_{i}" for i in range(1_277)], reference_rows, "(" + ",".join(f"t{i}:0.1{{{i}}}" for i in range(1_277)) + ");")
    made = time.perf_counter() - t0
    # warm up: numba's functions loaded, h5py's paths run once
    with tempfile.TemporaryDirectory(dir=os.path.dirname(args.output) if args.output else None) as directory:
        write_run(os.path.join(directory, "warm.h5"), min(args.reads, 2 * args.batch_reads), args.batch_reads,
                  templates, m, k, reference)
        path = args.output or os.path.join(directory, "bench.h5")
        rate = counter_rate()
        result: dict = {}
        ident: dict = {}

        def writer_thread() -> None:
            ident["writer"] = threading.get_ident()
            if args.ident_file:
                with open(args.ident_file, "w") as handle:
                    handle.write(f"{threading.get_native_id()}\n")
            cpu0 = time.thread_time()
            started = time.perf_counter()
            write_run(path, args.reads, args.batch_reads, templates, m, k, reference)
            result["wall"] = time.perf_counter() - started
            result["writer_cpu"] = time.thread_time() - cpu0

        usage0 = resource.getrusage(resource.RUSAGE_SELF)
        thread = threading.Thread(target=writer_thread, name="papara-writer")
        started = time.perf_counter()
        thread.start()
        count, longest, last = 0, 0.0, time.perf_counter()
        if args.no_counter:
            thread.join()
        else:
            while thread.is_alive():
                for _ in range(1000):
                    count += 1
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now
        elapsed = time.perf_counter() - started
        thread.join()
        usage1 = resource.getrusage(resource.RUSAGE_SELF)
        rate_after = counter_rate()
        size = os.path.getsize(path)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    out = {"reads": args.reads, "wall_s": round(result["wall"], 3), "process_cpu_s": round(cpu, 3),
           "writer_thread_cpu_s": round(result["writer_cpu"], 3), "file_mb": round(size / 1e6, 1),
           "inputs_made_s": round(made, 2)}
    if not args.no_counter:
        alone = (rate + rate_after) / 2
        out.update({"counter_stall_s": round(elapsed - count / alone, 3),
                    "counter_longest_stall_ms": round(1e3 * longest, 1),
                    "counter_rate_spread": round(abs(rate - rate_after) / alone, 3)})
    print(json.dumps(out))
    if args.json:
        with open(args.json, "a") as handle:
            handle.write(json.dumps(out | {"argv": sys.argv[1:]}) + "\n")


def gil_profile(args) -> None:
    """Run this script under `py-spy record --gil` (counter off) and count each thread's samples."""
    argv = [a for a in sys.argv[1:] if a != "--gil-profile"]
    with tempfile.TemporaryDirectory() as directory:
        raw, ident = os.path.join(directory, "raw.txt"), os.path.join(directory, "ident")
        rate = 250
        command = ["py-spy", "record", "--gil", "--threads", "--format", "raw", "-r", str(rate), "-o", raw,
                   "--", sys.executable, os.path.abspath(__file__), *argv, "--no-counter", "--ident-file", ident]
        done = subprocess.run(command, capture_output=True, text=True)
        print(done.stdout.strip())
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return
        writer = open(ident).read().strip()
        per_thread: collections.Counter = collections.Counter()
        writer_frames: collections.Counter = collections.Counter()
        for line in open(raw):
            stack, _, count = line.rstrip().rpartition(" ")
            frames = stack.split(";")
            thread = frames[0]
            per_thread[thread] += int(count)
            # the writer's samples by the innermost papara_py / h5py function
            if re.search(rf"\b{writer}\b", thread):
                names = [f for f in frames if "papara_py" in f or "h5py" in f]
                writer_frames[names[-1].split(" (")[0] if names else frames[-1].split(" (")[0]] += int(count)
    print(f"GIL held (py-spy --gil at {rate} Hz; seconds):")
    for thread, count in per_thread.most_common(8):
        print(f"  {count / rate:7.2f}  {thread}")
    print("  writer thread, by innermost papara_py/h5py function:")
    for name, count in writer_frames.most_common(15):
        print(f"  {count / rate:7.2f}    {name}")


if __name__ == "__main__":
    main()
