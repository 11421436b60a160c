"""What this process may use of its host: the CPUs in its affinity mask (`affinity_cpus`).

The lowest layer's one answer to "how many threads": the input readers (io/), the profile passes
(phylo/) and the run file's compression (io/chunks.py) size their pools by it, and
engine/cpus.py builds `-j/--threads`' default on it (adding a container's CPU quota).
"""

from __future__ import annotations

import os


def affinity_cpus() -> int:
    """CPUs in this process's affinity mask (all of them where the platform has no mask, as on
    macOS)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
