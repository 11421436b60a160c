"""Which slice of the reads one array-job task aligns (DESIGN 8): `--shard K/N` or the scheduler's variables.

Slicing rule (round robin): with Q reads in input order (the reads file, then the alignment taxa
that are not in the tree, DESIGN 9), read q (0-based) belongs to shard q mod N. Why round robin
and not contiguous ranges:
- a task can keep its slice while streaming the reads once, without first counting them, so it
  holds only 1/N of the reads in memory (every task still parses and validates all reads, so a
  bad read fails every task alike, and every task learns the total Q it records);
- reads sorted by length or by sample (common in read files) spread evenly over the tasks;
- `merge` restores input order exactly: row i of shard K is read K + i*N.
Every shard K < N exists even when Q < N (it may hold no reads), so "a slice is missing" always
means a task did not finish.

Scheduler variables (read only when `--shard` is absent; `--shard none` ignores them). What each
scheduler actually exports to an array task:
- SLURM: SLURM_ARRAY_TASK_ID and, since 14.03/17.02, SLURM_ARRAY_TASK_MIN, _MAX, _STEP, _COUNT.
  Ids need not start at 0 (`--array=1-4`) and may step (`--array=0-30:10`), so
  K = (ID - MIN) / STEP and N = (MAX - MIN) / STEP + 1, which must equal COUNT. Irregular lists
  (`--array=1,2,5`) have no such mapping and are refused.
- Grid Engine (SGE, OGE, UGE): SGE_TASK_ID, SGE_TASK_FIRST, SGE_TASK_LAST, SGE_TASK_STEPSIZE
  (`qsub -t FIRST-LAST:STEP`, ids start at 1 or more); outside an array job they hold the string
  "undefined". Same mapping as SLURM.
- PBS Pro (PBS_ARRAY_INDEX, `qsub -J`) and Torque (PBS_ARRAYID, `qsub -t`) export only the
  task's own index, neither the array's size nor its first index, so N cannot be derived; a task
  that sees one of them without `--shard` stops with an InputError showing the `--shard` to pass.
Two schedulers' variables at once (say, a SLURM job inside an SGE task) are refused as ambiguous.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Mapping

import numpy as np

from papara_py.errors import InputError, OptionError

#: How the slice is chosen, stored in every shard's run record so the file explains itself.
RULE = "round_robin: read q (0-based, input order, extra alignment taxa last) is in shard q mod N"

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_PBS_HELP = ("--shard \"$PBS_ARRAY_INDEX/N\" (PBS Pro, array submitted with qsub -J 0-N-1) or "
             "--shard \"$PBS_ARRAYID/N\" (Torque, qsub -t 0-N-1)")


@dataclass(frozen=True)
class Shard:
    """Slice `index` of `count` (0 <= index < count); `source` says where that came from."""

    index: int
    count: int
    source: str = "--shard"

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            error = OptionError if self.source == "--shard" else InputError  # the option, or a scheduler's variable
            raise error(self.source, f"shard {self.index}/{self.count} is not a slice: the form is K/N "
                                          f"with 0 <= K < N (slices are numbered from 0)")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, q: int) -> bool:
        """True when read q (0-based, input order) belongs to this shard."""
        return q % self.count == self.index

    def owned_among(self, first: int, n: int) -> np.ndarray:
        """int64: which of the n reads first .. first + n - 1 (as 0 .. n - 1) belong to this shard."""
        return np.arange((self.index - first) % self.count, n, self.count, dtype=np.int64)

    def read_indices(self, n_total: int) -> np.ndarray:
        """int64: the input-order indices of this shard's reads, ascending (its rows, in order)."""
        return np.arange(self.index, n_total, self.count, dtype=np.int64)

    def size(self, n_total: int) -> int:
        """How many of `n_total` reads this shard holds."""
        return len(range(self.index, n_total, self.count))

    def record(self, n_total: int) -> dict:
        """The slice as stored in the shard's /run record (attr "shard"), for `merge` and for people."""
        return {**asdict(self), "rule": RULE, "n_reads_total": n_total, "n_reads": self.size(n_total)}


def parse_shard(spec: str, source: str = "--shard") -> Shard:
    """'K/N' -> Shard(K, N); anything else is an OptionError naming `source`."""
    match = _SPEC.fullmatch(spec)
    if not match:
        raise OptionError(source, f"{spec!r} is not a shard: the form is K/N, e.g. 0/4 for the first of 4 slices")
    return Shard(int(match[1]), int(match[2]), source)


def _integer(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if value is None or value.strip() == "" or value.strip() == "undefined":
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(name, f"the scheduler variable {name}={value!r} is not an integer") from None


def _from_range(source: str, task: int, first: int, last: int, step: int, count: int | None) -> Shard:
    """Shard of a regular array FIRST..LAST by STEP (the SLURM and Grid Engine mapping)."""
    where = f"{source} (task {task} of {first}-{last}:{step})"
    if step < 1 or last < first or (last - first) % step or not first <= task <= last or (task - first) % step:
        raise InputError(where, "the array is not a regular range FIRST-LAST:STEP holding this task, so its "
                                "slice cannot be derived; pass --shard K/N explicitly")
    n = (last - first) // step + 1
    if count is not None and count != n:
        raise InputError(where, f"the array has {count} tasks but its range implies {n} (an irregular list "
                                "such as --array=1,2,5?); submit a range, or pass --shard K/N explicitly")
    return Shard((task - first) // step, n, where)


def _slurm(env: Mapping[str, str]) -> Shard:
    task = _integer(env, "SLURM_ARRAY_TASK_ID")
    lo, hi = _integer(env, "SLURM_ARRAY_TASK_MIN"), _integer(env, "SLURM_ARRAY_TASK_MAX")
    step, count = _integer(env, "SLURM_ARRAY_TASK_STEP"), _integer(env, "SLURM_ARRAY_TASK_COUNT")
    if lo is None or hi is None:
        if count is None:
            raise InputError("SLURM_ARRAY_TASK_ID", "this SLURM sets the task id but not the array's range or "
                                                    "size (SLURM_ARRAY_TASK_MIN/MAX/COUNT); pass --shard K/N")
        lo, hi, step = 0, count - 1, 1  # no range: assume ids 0..COUNT-1; _from_range checks the id
    if step is None:  # derive the stride from the count (a regular range has (hi - lo) / (count - 1))
        step = 1 if not count or count == 1 or (hi - lo) % (count - 1) else (hi - lo) // (count - 1)
    return _from_range("SLURM_ARRAY_TASK_ID", task, lo, hi, step, count)


def _grid_engine(env: Mapping[str, str]) -> Shard:
    task = _integer(env, "SGE_TASK_ID")
    first, last = _integer(env, "SGE_TASK_FIRST"), _integer(env, "SGE_TASK_LAST")
    step = _integer(env, "SGE_TASK_STEPSIZE")
    if first is None or last is None:
        raise InputError("SGE_TASK_ID", "Grid Engine set SGE_TASK_ID but not SGE_TASK_FIRST/SGE_TASK_LAST; "
                                        "pass --shard K/N")
    return _from_range("SGE_TASK_ID", task, first, last, step or 1, None)


def _pbs(env: Mapping[str, str]) -> Shard:
    name = "PBS_ARRAY_INDEX" if _integer(env, "PBS_ARRAY_INDEX") is not None else "PBS_ARRAYID"
    raise InputError(name, f"this is PBS array task {env[name]}, but PBS exports neither the array's size nor "
                           f"its first index, so papara-py cannot tell which slice of the reads is this task's; "
                           f"pass it explicitly: {_PBS_HELP}")


#: scheduler name -> (the variable that marks an array task, how to read its slice)
_SCHEDULERS = {
    "SLURM": ("SLURM_ARRAY_TASK_ID", _slurm),
    "Grid Engine": ("SGE_TASK_ID", _grid_engine),
    "PBS Pro": ("PBS_ARRAY_INDEX", _pbs),
    "Torque": ("PBS_ARRAYID", _pbs),
}


def shard_from_environment(env: Mapping[str, str] | None = None) -> Shard | None:
    """The array task's slice from SLURM / Grid Engine variables; None outside an array job.

    Raises InputError where the variables cannot give a slice safely (PBS, irregular arrays,
    several schedulers at once), rather than guessing and silently aligning the wrong reads.
    """
    env = os.environ if env is None else env
    found = {name: read for name, (variable, read) in _SCHEDULERS.items() if _integer(env, variable) is not None}
    if "PBS Pro" in found and "Torque" in found:
        del found["Torque"]
    if len(found) > 1:
        raise InputError("--shard", f"array-task variables of several schedulers are set ({', '.join(found)}); "
                                    "pass --shard K/N (or --shard none) to say which slice this is")
    return next(iter(found.values()))(env) if found else None


def resolve_shard(spec: str | None, env: Mapping[str, str] | None = None) -> Shard | None:
    """The command line's --shard: 'K/N', 'none' (a whole run, scheduler variables ignored) or
    absent (None: the scheduler's variables decide, a whole run outside an array job)."""
    if spec is None:
        return shard_from_environment(env)
    if spec.strip().lower() == "none":
        return None
    return parse_shard(spec)
