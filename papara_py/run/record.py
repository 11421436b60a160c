"""Stage 6 of the main job: the run record, the /run attributes of a sample's run file (DESIGN 7):
what was run, on what, and how fast. `Tally` is what the scoring did for one sample
(`sample_tally`), `run_record` the record made of it and the earlier stages' results.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from papara_py.engine.guided import GuidedSearch, SearchStats
from papara_py.engine.scheduler import Engine
from papara_py.engine.tracer import Tracer
from papara_py.io.checksums import describe_input
from papara_py.phylo.profiles import EdgeProfiles
from papara_py.run.config import RunConfig
from papara_py.run.devices import Devices
from papara_py.run.inputs import Inputs, Work
from papara_py.run.log import Reporter
from papara_py.run.samples import SampleRun


@dataclass
class Tally:
    """What stage 5 (run/stages.ScoreTraceWrite) did for one sample, for its run record."""

    n_reads: int                   # rows of the output (the reads kept: a shard's slice)
    n_alignable: int
    status_counts: dict[str, int]
    cells: int
    gcups: float
    strand_counts: dict[str, int]
    consumers: dict[str, dict]     # the engine's consumers, over the run so far
    search: dict                   # the search's identity (mode, and the guided search's settings)
    edges_scored: dict[str, float]  # share of the edges each scored read met: mean, min, max
    traceback: dict                # where the batches were traced back: device, batches per device


def run_record(config: RunConfig, inputs: Inputs, profiles: EdgeProfiles, devices: Devices, work: Work,
               tally: Tally, timings: dict[str, float]) -> dict:
    """Stage 6: the /run attributes (docs/reference/run-file.md) of what was run, on what, and how fast."""
    record = {
        "parameters": asdict(inputs.params) | {"preset": inputs.params.preset_name()},
        "alphabet": inputs.alphabet.name,
        "near_states": inputs.alphabet.near_rule,
        "checksums_sha256": inputs.checksums,
        "inputs": {"tree": describe_input(config.tree), "alignment": describe_input(config.alignment),
                   "reads": describe_input(config.reads)},
        "timings_seconds": timings, "gcups": tally.gcups, "cells": tally.cells, "lanes": devices.width,
        "threads": {"count": config.threads, "source": config.threads_source},
        "device": config.device, **({"device_choice": devices.choice} if devices.choice else {}),
        "consumers": tally.consumers, "candidates_k": work.k,
        **({"unusable_gpus": devices.unusable} if devices.unusable else {}),
        **({"gpu_device_seconds": {scorer.name: scorer.device_seconds for scorer in devices.gpu_scorers}}
           if config.gpu_profile else {}),
        "status_counts": tally.status_counts, "n_edges": profiles.n_edges, "n_columns": inputs.n_columns,
        "strand": inputs.strand, "strand_counts": tally.strand_counts,
        "search": tally.search, "edges_scored_fraction": tally.edges_scored, "traceback": tally.traceback,
    }
    if config.shard is not None:  # the slice, for `papara-py merge` (papara_py/cluster/shards.py)
        record["shard"] = config.shard.record(inputs.n_reads_total)
    if config.profiles:
        record["profiles"] = os.path.abspath(config.profiles)
    return record


def sample_tally(sample: SampleRun, stats: Engine | SearchStats, search: GuidedSearch | None,
                  tracer: Tracer | None, several: bool, reporter: Reporter) -> Tally:
    """A sample's Tally once its last batch is written, and its scoring timings (`stats`: the
    engine's, or the guided search's, consumers and times; `tracer`: the GPU traceback or None)."""
    timings = sample.timings
    timings["scoring"] = sample.own_scoring
    if several:
        timings["run_scoring"] = sample.run_scoring
    timings["build_blocks"] = stats.build_seconds
    timings["reads"] = sample.inputs.reads.read_seconds
    timings["reads_wait"] = sample.inputs.reads.wait_seconds
    reporter.detail(f"{sample.label}: --strand {sample.inputs.strand}: {sample.strand_counts['scored_both']} "
                    f"of {sample.n_alignable} reads scored in both orientations ({timings['strand']:.3f} s)")
    if search:
        reporter.detail(f"--search guided: {search.clusters.n_clusters} clusters, {search.stats.rounds} "
                        f"rounds, {sample.edges_scored['mean']:.2%} of the edges per read on average")
    return Tally(
        n_reads=sample.inputs.reads.rows, n_alignable=sample.n_alignable, status_counts=sample.status_counts,
        cells=sample.cells, gcups=sample.cells / timings["scoring"] / 1e9 if timings["scoring"] > 0 else 0.0,
        strand_counts=sample.strand_counts, search=search.identity() if search else {"mode": "exhaustive"},
        edges_scored=sample.edges_scored,
        traceback={"device": tracer.describe() if tracer else "cpu", "batches": dict(sample.traced)},
        consumers={consumer.name: {"blocks": consumer.blocks, "edges": consumer.edges,
                                   "cells": consumer.cells, "calls": consumer.calls,
                                   "busy_seconds": consumer.busy_seconds,
                                   **({"error": consumer.error} if consumer.error else {}),
                                   **({"retries": consumer.retries} if consumer.retries else {}),
                                   **({"faults": consumer.faults} if consumer.faults else {})}
                   for consumer in stats.consumers})
