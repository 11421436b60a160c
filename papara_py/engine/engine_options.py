"""engine/scheduler.Engine's scheduling knobs (`EngineOptions`): how many consumers, how much is
queued and kept, how a batch is first divided between CPUs and GPUs, how a GPU survives running
out of memory, and the fault injection the tests use. None changes a score (DESIGN 6).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineOptions:
    """Scheduling knobs; `jitter_seconds` and `fail_after_chunks` exist for tests only."""

    cpu_workers: int = 1
    gpu_feeders: int = 2
    queue_capacity: int = 64  # items queued at most when the blocks are not all kept
    batches_in_flight: int = 5
    balance_tail: bool = True
    cpu_yields_to_caller: bool = True  # with GPUs, CPU workers take nothing while the caller holds a batch
    cpu_first_cells: int = 5_000_000_000  # per CPU worker, a batch's CPU part before rates are known
    #: ... and at most this share of the batch's residues: what 16-32 cores score beside one H100
    #: (1-5% of the cells, notebook/BENCHMARKS.md); more made a small run wait for its CPU pieces
    cpu_first_share: float = 0.05
    block_cache_bytes: int = 256 << 20
    #: cells of one GPU launch of a grouped batch (the guided search's rounds): about an exhaustive
    #: launch's (40 blocks of 32 edges x 2,000 reads of 150 bp x 1,000 columns is 3.8e11), ~70 ms
    #: of an H200's kernel time
    grouped_launch_cells: int = 400_000_000_000
    jitter_seconds: float = 0.0
    jitter_seed: int = 0
    fail_after_chunks: int | None = None
    #: fault injection (tests): after this many chunks, the next `oom_failures` launches of each
    #: GPU fail as out of memory
    oom_after_chunks: int | None = None
    oom_failures: int = 1
    #: out-of-memory faults in a row a GPU survives, and the first wait before it tries again
    oom_retries: int = 6
    oom_backoff_seconds: float = 0.5
