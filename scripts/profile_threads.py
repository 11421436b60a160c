#!/usr/bin/env python3
"""Where a papara-py run's threads spend their time: stack samples of every thread.

    python3 scripts/profile_threads.py [--interval 0.005] [--top 12] -- -t TREE -s REF -r READS -o RUN.h5

Runs the main job (`papara_py.cli.main`) in this process while a sampling thread records, every
`--interval` seconds, each other thread's innermost frame and its innermost papara_py frame, by
thread name (numbered pool threads counted together). The sampler needs the interpreter lock to
look, so it looks less often when the lock is busy: the samples' mean spacing, printed, is a
measure of that. A thread's share of the samples is its share of the run; waiting frames
(threading's `wait`, `wait_sleeping`) say a thread was idle or waiting for a device. Used for the
1M-read run's analysis in docs/performance.md ("Whole runs"). No dependency beyond papara-py.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import threading
import time
from types import FrameType


def _where(frame: FrameType) -> str:
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}"


def _ours(frame: FrameType | None) -> FrameType | None:
    """The innermost frame of papara_py's own code in `frame`'s stack, if any."""
    while frame is not None and f"{os.sep}papara_py{os.sep}" not in frame.f_code.co_filename:
        frame = frame.f_back
    return frame


class Sampler:
    """Counts, per thread name, the innermost frames and innermost papara_py frames seen."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.top: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.ours: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="profile-threads-sampler", daemon=True)

    def __enter__(self) -> "Sampler":
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.seconds = time.perf_counter() - self.started

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            names = {t.ident: re.sub(r"[-_ ]?\d+$", "", t.name.split(":")[0]) for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                name = names.get(ident, "(unnamed)")
                self.top[name][_where(frame)] += 1
                ours = _ours(frame)
                if ours is not None:
                    self.ours[name][_where(ours)] += 1
            self.rounds += 1

    def report(self, top: int) -> str:
        spacing = self.seconds / max(1, self.rounds)
        lines = [f"{self.rounds} sampling rounds in {self.seconds:.1f} s: one every {1000 * spacing:.1f} ms "
                 f"(asked: {1000 * self.interval:.1f} ms)"]
        for name in sorted(self.top, key=lambda n: -sum(self.top[n].values())):
            seen = sum(self.top[name].values())
            lines.append(f"\n== {name}: {seen} samples ({seen / max(1, self.rounds):.0%} of the rounds; "
                         "several threads of one name count together)")
            lines += [f"  {n:7d}  {where}" for where, n in self.top[name].most_common(top)]
            if self.ours[name]:
                lines.append("  innermost papara_py frames:")
                lines += [f"  {n:7d}  {where}" for where, n in self.ours[name].most_common(top)]
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s [--interval S] [--top N] -- PAPARA_ARGS")
    parser.add_argument("--interval", type=float, default=0.005, help="seconds between samples (default 0.005)")
    parser.add_argument("--top", type=int, default=12, help="frames listed per thread (default 12)")
    parser.add_argument("papara_args", nargs=argparse.REMAINDER, help="the main job's arguments, after --")
    args = parser.parse_args(argv)
    papara_args = args.papara_args[1:] if args.papara_args[:1] == ["--"] else args.papara_args
    if not papara_args:
        parser.error("give the main job's arguments after --")
    from papara_py.cli import main as papara_py

    with Sampler(args.interval) as sampler:
        status = papara_py(papara_args)
    print(sampler.report(args.top), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
