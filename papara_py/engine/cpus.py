"""How many CPUs this process may use: the default of `-j/--threads`.

`os.cpu_count()` counts the machine's CPUs, not the process's: under `taskset`, a SLURM
allocation (which sets the affinity) or a container's CPU quota (a cgroup `cpu.max`), a job given
2 CPUs of a 64-core node would start 64 threads that fight over 2. EPA-ng's `-T 0` and pyhmmer's
`cpus=0` follow the affinity; papara-py does too, and also honours a cgroup quota (rounded up: a
quota of 1.5 CPUs lets two threads make progress).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from papara_py.host import affinity_cpus

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _quota(cpu_max: str) -> float | None:
    """CPUs granted by a cgroup v2 `cpu.max` line ("QUOTA PERIOD", QUOTA "max" = no limit)."""
    fields = cpu_max.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_quota(root: Path = CGROUP_ROOT, self_cgroup: str | None = None) -> float | None:
    """The smallest CPU quota on this process's cgroup path (v2), or v1's cfs quota; None: none set."""
    limits = []
    try:
        lines = self_cgroup if self_cgroup is not None else Path("/proc/self/cgroup").read_text()
    except OSError:
        lines = ""
    for line in lines.splitlines():
        if line.startswith("0::"):  # cgroup v2: walk from the process's group up to the root
            group = root / line[3:].strip().lstrip("/")
            while True:
                try:
                    limit = _quota((group / "cpu.max").read_text())
                except OSError:
                    limit = None
                if limit is not None:
                    limits.append(limit)
                if group == root or root not in group.parents:
                    break
                group = group.parent
    for v1 in (root / "cpu,cpuacct", root / "cpu"):  # cgroup v1, at the mount's root
        try:
            quota = int((v1 / "cpu.cfs_quota_us").read_text())
            period = int((v1 / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        if quota > 0 and period > 0:
            limits.append(quota / period)
        break
    return min(limits) if limits else None


def available_cpus() -> tuple[int, str]:
    """(CPUs this process may use, why): the affinity mask, capped by a cgroup CPU quota."""
    count = affinity_cpus()
    reason = f"CPU affinity: {count} of {os.cpu_count() or count} CPUs"
    quota = cgroup_quota()
    if quota is not None and math.ceil(quota) < count:
        count = max(1, math.ceil(quota))
        reason = f"cgroup CPU quota of {quota:g} CPUs (affinity allows {affinity_cpus()})"
    return count, reason
