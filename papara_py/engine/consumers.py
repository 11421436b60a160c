"""Adapters that give the CPU kernel and the GPU scorer the scheduler's `Scorer` shape."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.engine.layout import Block
from papara_py.model.params import ScoringParams

_cpu_ids = itertools.count()


class CpuScorer:
    """One CPU worker: scores one block at a time with the numba lane kernel; once `stop` (the
    engine's queue's `stopping`) is set, the block in hand ends at its next slice of reads
    (CancelledError)."""

    max_blocks = 1

    def __init__(self, stop: threading.Event | None = None) -> None:
        self.name = f"cpu-{next(_cpu_ids)}"
        self.stop = stop

    def score(self, blocks: list[Block], reads, params: ScoringParams, k: int) -> Candidates:
        from papara_py.engine.cpu import score_block

        result = Candidates.empty(reads.count, k)
        for block in blocks:
            result.add_block(score_block(block.lanes, reads.codes, reads.offsets, params, costs=block.costs,
                                         stop=self.stop),
                             block.first_edge, block.n_edges)
        return result


class GpuChunkScorer:
    """One GPU: scores up to `max_blocks` blocks per kernel launch, top-k on the device. Safe to
    call from several threads (the engine's feeders); launches take turns on the device."""

    def __init__(self, gpu_scorer, name: str, max_blocks: int) -> None:
        self.gpu = gpu_scorer
        self.name = name
        self.max_blocks = max_blocks

    def score(self, blocks: list[Block], reads, params: ScoringParams, k: int) -> Candidates:
        results: list[Candidates] = []
        ordered = sorted(blocks, key=lambda b: b.first_edge)
        # a launch needs consecutive edges; blocks handed back by a failed consumer may break runs
        run: list[Block] = []
        for block in ordered + [None]:
            if run and (block is None or block.first_edge != run[-1].first_edge + run[-1].width):
                lanes = np.stack([b.lanes for b in run])
                n_edges = sum(b.n_edges for b in run)
                score, edge = self.gpu.score_chunk(lanes, run[0].first_edge, n_edges,
                                                   reads.codes, reads.offsets, params, k, costs=run[0].costs)
                results.append(Candidates(score=score, edge=edge))
                run = []
            if block is not None:
                run.append(block)
        if len(results) == 1:  # the usual case: one run of blocks, lists already sorted
            return results[0]
        merged = Candidates.empty(reads.count, k)
        for result in results:
            merged.add(result)
        return merged

    def score_groups(self, groups: list[tuple[list[Block], object]], params: ScoringParams, k: int) -> list[Candidates]:
        """A grouped batch's launch (engine/scheduler.py, the guided search's rounds): each group's
        blocks against its own reads, all in one `GpuScorer.score_groups` call; candidates per
        group (edges numbered as the blocks' lanes)."""
        lanes, firsts, codes, offsets, owner = [], [], [], [np.zeros(1, np.int64)], []
        slots = 0
        for g, (blocks, reads) in enumerate(groups):
            # a launch needs each group's lanes consecutive; blocks handed back may break runs
            for run in _runs(sorted(blocks, key=lambda b: b.first_edge)):
                lanes.append(np.concatenate([b.lanes[:, :b.n_edges] for b in run], axis=1))
                firsts.append(run[0].first_edge)
                codes.append(reads.codes)
                offsets.append(reads.offsets[1:] - reads.offsets[0] + (offsets[-1][-1] if slots else 0))
                owner.append(g)
                slots += reads.count
        counts = np.array([groups[g][1].count for g in owner], np.int64)
        slot_ptr = np.concatenate(([0], np.cumsum(counts)))
        first_block = groups[0][0][0]
        score, edge = self.gpu.score_groups(lanes, np.array(firsts, np.int64), np.concatenate(codes),
                                            np.concatenate(offsets), slot_ptr, params, k, costs=first_block.costs)
        results = [Candidates.empty(reads.count, k) for _, reads in groups]
        for run, g in enumerate(owner):
            part = Candidates(score[slot_ptr[run]:slot_ptr[run + 1]], edge[slot_ptr[run]:slot_ptr[run + 1]])
            results[g].add(part)
        return results

    @property
    def device_seconds(self) -> float:
        """Device time of all launches so far (with a profiling GpuScorer)."""
        return self.gpu.device_seconds


def _runs(blocks: list[Block]) -> list[list[Block]]:
    """Blocks (by first edge) cut into runs of consecutive edges."""
    runs: list[list[Block]] = []
    for block in blocks:
        if runs and block.first_edge == runs[-1][-1].first_edge + runs[-1][-1].n_edges:
            runs[-1].append(block)
        else:
            runs.append([block])
    return runs
