"""The guided search (`--search guided`, DESIGN.md 6a): each read's best edges from a fraction of
the edges, every score an exact DP result of the same engine.

Exhaustive scoring costs edges x reads; at 100,000 taxa that is 200,000 DPs per read, although
neighbouring edges have nearly the same profile. The guided search scores in rounds, each round
one pass of the ordinary engine (engine/scheduler.py) over groups of (edges, reads):

1. centres: every read against the central edge of every cluster (phylo/clusters.py, about
   sqrt(E / (initial + 1)) edges each, which balances this round against the next);
2. the `initial` clusters whose centres scored best for the read, all their other edges;
3. widening, repeated until nothing is added: for each of a read's `stable` best edges so far, the
   clusters touching it that the read has not had yet. A read thus ends with its best edges
   surrounded by edges it was scored against: a best edge on a cluster's border pulls in the
   cluster beyond, a run of tied edges is followed to its lowest edge number.

A read is scored against each edge at most once (a centre is left out of its cluster's group).
Each round after the centres is one grouped engine batch (read_batch.EdgeGroups): every cluster a
round needs is a group, its edges against the reads that need it, and GPU launches take many
groups at once (engine/gpu.py `score_groups`), as full as the exhaustive search's; before, each
cluster was a batch of its own and a launch held ~100 edges against a few dozen reads (notebook/BENCHMARKS.md,
"Guided search on the H100"). What is computed depends only on the scores, which
are exact and identical on every device, so the search takes the same path and gives the same
results on CPU, GPU or both, whatever the schedule. Where a read's rounds reach every cluster,
its candidates equal the exhaustive search's.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from papara_py.engine.candidates import Candidates, merge_rows
from papara_py.engine.limits import INITIAL_CLUSTERS
from papara_py.engine.read_batch import EdgeGroups, ReadBatch
from papara_py.engine.scheduler import BlockCache, ConsumerStats, Engine
from papara_py.phylo.clusters import cluster_edges
from papara_py.phylo.tree import EdgeTree

#: INITIAL_CLUSTERS (engine/limits.py): clusters each read is scored in after the centres.
#: Bytes of blocks a search keeps across its rounds and read batches: every edge's block at 10^5
#: taxa x 1,800 columns of DNA (200,000 edges, 360 MB), so that a later round or read batch builds
#: none again.
GUIDED_BLOCK_CACHE_BYTES = 512 << 20


@dataclass(frozen=True)
class GuidedOptions:
    """The search's knobs. `cluster_size` None: sqrt(E / (initial + 1)). `stable` None: K."""

    initial: int = INITIAL_CLUSTERS
    stable: int | None = None
    cluster_size: int | None = None

    def size_for(self, n_edges: int) -> int:
        """Edges per cluster: about E / size centres plus initial x size cluster edges per read
        is smallest at size = sqrt(E / initial); one more for the widening round."""
        if self.cluster_size is not None:
            return self.cluster_size
        return max(1, round(math.sqrt(n_edges / (self.initial + 1))))


@dataclass
class SearchStats:
    """What the search did, for the run record: cells, edges scored per read, rounds."""

    cells: int = 0
    rounds: int = 0
    edges_per_read: list[np.ndarray] = field(default_factory=list)  # per finished batch, int64 [Q]
    scoring_seconds: float = 0.0  # wall time of the searches (rounds and the grouping between them)
    build_seconds: float = 0.0
    consumers: list[ConsumerStats] = field(default_factory=list)

    def add_engine(self, engine: Engine) -> None:
        """Fold one round's engine into the totals; consumers add up by their place in the
        engine's start order (workers and feeders start in the same order each round)."""
        self.build_seconds += engine.build_seconds
        for place, stats in enumerate(engine.consumers):
            if place == len(self.consumers):
                self.consumers.append(ConsumerStats(name=stats.name))
            total = self.consumers[place]
            total.blocks += stats.blocks
            total.edges += stats.edges
            total.cells += stats.cells
            total.calls += stats.calls
            total.busy_seconds += stats.busy_seconds
            total.retries += stats.retries
            total.error = total.error or stats.error
            total.faults.extend(stats.faults[:max(0, 20 - len(total.faults))])

    def edge_fraction(self, n_edges: int, since: int = 0) -> dict[str, float]:
        """Mean, min and max share of the edges each scored read was scored against (the reads of
        the batches from the `since`-th on: one sample's, run/samples.py)."""
        batches = self.edges_per_read[since:]
        counts = np.concatenate(batches) if batches else np.zeros(0)
        if counts.size == 0:
            return {"mean": 0.0, "min": 0.0, "max": 0.0}
        share = counts / n_edges
        return {"mean": float(share.mean()), "min": float(share.min()), "max": float(share.max())}


class GuidedSearch:
    """Runs the rounds of the module docstring for one read batch after another.

    The tree is cut into clusters of `options.size_for(E)` edges (phylo/clusters.py).
    `new_engine(k)` returns a fresh Engine (over all edges, K = k) for one round; the search
    hands it batches restricted to edge subsets (`ReadBatch.edges`).
    """

    def __init__(self, tree: EdgeTree, new_engine: Callable[[int], Engine], n_columns: int, k: int,
                 options: GuidedOptions, block_cache_bytes: int = GUIDED_BLOCK_CACHE_BYTES) -> None:
        self.cluster_size = options.size_for(tree.n_edges)
        self.clusters = clusters = cluster_edges(tree, self.cluster_size)
        self.new_engine = new_engine
        self.n_columns = n_columns
        self.k = k
        self.initial = max(1, min(options.initial, clusters.n_clusters))
        self.stable = max(1, min(options.stable or k, k))
        self.stats = SearchStats()
        self.batch_started: dict[int, float] = {}  # as Engine's: when batch b's search began
        self._centres = np.sort(clusters.centre)
        self._rest = [_without(clusters.edges_of(c), clusters.centre[c]) for c in range(clusters.n_clusters)]
        #: blocks of the clusters and the centres, kept across rounds and read batches
        self.blocks = BlockCache(block_cache_bytes)

    def run(self, batches: Iterable[ReadBatch]) -> Iterator[tuple[int, Candidates]]:
        """Like Engine.run: yields (b, candidates of batch b) for the batches in order."""
        for index, reads in enumerate(batches):
            started = self.batch_started[index] = time.perf_counter()
            found = self.search(reads)
            self.stats.scoring_seconds += time.perf_counter() - started
            yield index, found

    def identity(self) -> dict:
        """The settings that decide the results (the run record's `search`; shards must agree)."""
        return {"mode": "guided", "cluster_size": self.cluster_size, "clusters": self.clusters.n_clusters,
                "initial": self.initial, "stable": self.stable}

    def search(self, reads: ReadBatch) -> Candidates:
        """The K best (score, edge) of each read over the edges the rounds chose for it."""
        count = reads.count
        best = Candidates.empty(count, self.k)
        done = np.zeros((count, self.clusters.n_clusters), dtype=bool)  # clusters each read was scored in
        (_, found), = self._score([(np.arange(count), self._centres)], reads, max(self.k, self.initial))
        best.add(found)
        edges = np.full(count, len(self._centres), dtype=np.int64)
        chosen = self.clusters.cluster_of[found.edge[:, :self.initial]]  # initial <= clusters: no empty slot
        wanted = np.zeros_like(done)
        wanted[np.repeat(np.arange(count), self.initial), chosen.reshape(-1)] = True
        while wanted.any():
            done |= wanted
            groups = [(np.flatnonzero(wanted[:, c]), self._rest[c]) for c in range(self.clusters.n_clusters)]
            groups = [(rows, subset) for rows, subset in groups if rows.size and subset.size]
            for rows, subset in groups:
                edges[rows] += subset.size
            if groups:
                slots, found = self._score_round(groups, reads)
                merge_rows(best.score, best.edge, slots, found.score, found.edge)
            wanted = self._widen(best, done)
        self.stats.edges_per_read.append(edges)
        return best

    def _widen(self, best: Candidates, done: np.ndarray) -> np.ndarray:
        """bool [Q, C]: clusters touching a read's `stable` best edges that it has not had."""
        wanted = np.zeros_like(done)
        top = best.edge[:, :self.stable]
        ptr, border = self.clusters.border_ptr, self.clusters.border
        for q, e in zip(*np.nonzero(top >= 0)):
            edge = top[q, e]
            wanted[q, border[ptr[edge]:ptr[edge + 1]]] = True
        return wanted & ~done

    def _score(self, groups: list[tuple[np.ndarray, np.ndarray]], reads: ReadBatch,
               k: int) -> list[tuple[np.ndarray, Candidates]]:
        """The centres' round: each group (read rows, ascending edges) as one engine batch; returns
        the groups' rows with their candidates (edge numbers), in group order."""
        if not groups:
            return []
        batches = [_take(reads, rows, subset) for rows, subset in groups]
        self.stats.cells += sum(len(subset) * batch.residues for (_, subset), batch in zip(groups, batches)) \
            * self.n_columns
        self.stats.rounds += 1
        results = dict(self._engine_run(k, batches))
        return [(rows, results[i]) for i, (rows, _) in enumerate(groups)]

    def _score_round(self, groups: list[tuple[np.ndarray, np.ndarray]], reads: ReadBatch) -> tuple[np.ndarray, Candidates]:
        """A round after the centres: every group (read rows, ascending edges of one cluster) in one
        grouped engine batch (read_batch.ReadBatch.groups), so that a GPU launch holds the blocks of
        many clusters, each against its own reads, as full as the exhaustive search's. Returns each
        slot's read row and the slots' candidates (edge numbers): a read once per group it is in."""
        rows = np.concatenate([rows for rows, _ in groups])
        subsets = [subset for _, subset in groups]
        slot_ptr = np.concatenate(([0], np.cumsum([r.size for r, _ in groups]))).astype(np.int64)
        edge_ptr = np.concatenate(([0], np.cumsum([s.size for s in subsets]))).astype(np.int64)
        slots = _take(reads, rows, np.concatenate(subsets))
        batch = ReadBatch(slots.codes, slots.offsets, slots.edges, EdgeGroups(edge_ptr, slot_ptr))
        residues = slots.offsets[slot_ptr[1:]] - slots.offsets[slot_ptr[:-1]]
        self.stats.cells += int((np.diff(edge_ptr) * residues).sum()) * self.n_columns
        self.stats.rounds += 1
        [(_, found)] = list(self._engine_run(self.k, [batch]))
        return rows.astype(np.int64), found

    def _engine_run(self, k: int, batches: list[ReadBatch]) -> list[tuple[int, Candidates]]:
        """A fresh engine (`new_engine(k)`) over `batches`, keeping its blocks in the search's
        cache for the rounds and read batches after it; its work added to the stats."""
        engine = self.new_engine(k)
        engine.share_blocks(self.blocks)
        results = list(engine.run(batches))
        self.stats.add_engine(engine)
        return results


def _without(edges: np.ndarray, edge: int) -> np.ndarray:
    """`edges` (ascending) without `edge`."""
    return edges[edges != edge]


def _take(reads: ReadBatch, rows: np.ndarray, edges: np.ndarray) -> ReadBatch:
    """Reads `rows` of `reads` as a batch of their own, restricted to `edges`."""
    starts = reads.offsets[rows]
    lengths = reads.offsets[rows + 1] - starts
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    return ReadBatch(reads.codes[index], offsets, edges.astype(np.int32))
