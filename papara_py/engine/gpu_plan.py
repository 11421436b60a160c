"""The host side of a GPU scoring launch (engine/gpu.py), no OpenCL call: which reads go into which
kernel batch, of which build variant, and what each batch reads besides its reads.

`plan_chunk` (the exhaustive search's chunk of consecutive blocks) and `plan_groups` (the guided
search's groups, each with its own edges) sort the reads longest first, cut them into batches of
one kernel variant each (packed 16-bit lanes where `ScoringParams.int16_safe` holds, the 32-bit
lane otherwise) within the device's band memory budget, and gather what the kernels read: the
sorted codes, the padded profiles, the column costs' rows and table, the lookup words or table.
They run before the device lock is taken, so a second feeder thread prepares its chunk while the
device runs another (engine/scheduler.py); the device side (uploads, launches, results) is
`GpuScorer`'s. No pyopencl here: the plans are numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from papara_py.engine.band_inputs import (
    WG_UNITS,
    Variant,
    cost_profile_starts,
    device_table,
    edge_units,
    lookup_fits,
    lookup_words,
    padded_profile,
    state_rows,
)
from papara_py.engine.candidates import EMPTY_SCORE, merge_rows
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import INT32_LIMIT, ScoringParams
from papara_py.phylo.encoding import Alphabet


@dataclass(frozen=True)
class LaunchRules:
    """What a plan takes from its scorer (`GpuScorer.launch_rules`): the two build variants, whether
    the packed lanes and the lookup path may be used, and the band memory a batch may take."""

    packed_variant: Variant
    wide_variant: Variant
    narrow: bool
    lookup: bool
    band_budget: int


@dataclass
class KernelBatch:
    """The reads of one band_score + top_k launch, all of one kernel variant."""

    variant: Variant
    reads: np.ndarray    # int64 [n]: the chunk's read indices, longest first
    starts: np.ndarray   # int32 [n]: offset of each read in the chunk's sorted codes
    lengths: np.ndarray  # int32 [n]: residues of each read
    #: uint32 [n + 1], column profile costs only: where each read's cost profile starts in the
    #: batch's, in uint4s (kernels/band_score.cl read_costs), and the total last
    cost_starts: np.ndarray | None = None
    #: the guided search's tasks (`GpuScorer.score_groups`; None otherwise): each row's first unit
    #: of the profile, its real edges and the number of the first; and the batch's distinct reads
    #: as (starts, lengths, each task's cost profile start) for read_cost_profile
    unit_base: np.ndarray | None = None
    row_edges: np.ndarray | None = None
    row_first: np.ndarray | None = None
    expand: tuple | None = None


#: Edges each group of a `score_groups` launch is padded to a multiple of: whole tasks of both
#: lane widths (WG_UNITS work-items of two 16-bit lanes, or of one 32-bit lane).
TASK_EDGES = 2 * WG_UNITS


@dataclass
class ChunkPlan:
    """What `plan_chunk` prepares on the host for one chunk, and where its results go."""

    score: np.ndarray  # int32 [Q, k], filled by the device side
    edge: np.ndarray
    n_columns: int
    sorted_codes: np.ndarray | None = None
    cost_rows: np.ndarray | None = None   # uint8, beside sorted_codes (column profile costs only)
    cost_table: np.ndarray | None = None  # uint8 [m][K] (`device_table`)
    profiles: dict[bool, np.ndarray] = field(default_factory=dict)  # packed? -> padded profile bytes
    lookup: np.ndarray | None = None  # the lookup words (`lookup_words`), where a batch takes that path
    #: the variant whose lookup table (kernels/band_score.cl LOOKUP_TABLE) the device builds for the
    #: chunk, and with column costs each single state's row of the cost table (uint8 [states])
    table: Variant | None = None
    state_rows: np.ndarray | None = None
    batches: list[KernelBatch] = field(default_factory=list)

    def put(self, reads: np.ndarray, score: np.ndarray, edge: np.ndarray) -> None:
        """A kernel batch's lists into its reads' rows."""
        self.score[reads], self.edge[reads] = score, edge

    def gather_reads(self, codes: np.ndarray, offsets: np.ndarray, pad: int, params: ScoringParams,
                     costs: ColumnCosts | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The reads the kernels score (0 < length < the profile's columns), longest first: their
        codes into `sorted_codes`, padded by `pad` residues (the last stripe loads a stripe's rows),
        and with column costs their cost rows alike (row 0, never computed: kernels/band_score.cl)
        and the chunk's cost table. Returns (order, each one's start in sorted_codes), or None when
        no read qualifies."""
        lengths = np.diff(offsets)
        order = np.flatnonzero((lengths > 0) & (lengths < self.n_columns))
        order = order[np.argsort(-lengths[order], kind="stable")]
        if order.size == 0:
            return None
        sorted_lengths = lengths[order]
        starts = np.concatenate([[0], np.cumsum(sorted_lengths)[:-1]])
        gather = np.arange(int(sorted_lengths.sum())) + np.repeat(offsets[order] - starts, sorted_lengths)
        read_codes = codes[gather]
        self.sorted_codes = np.concatenate([read_codes, np.zeros(pad, codes.dtype)])
        if costs is not None:
            self.cost_table = device_table(costs, params, self.n_columns)
            self.cost_rows = np.concatenate([costs.rows_of(read_codes), np.zeros(pad, np.uint8)])
        return order, starts

    def add_variant(self, variant: Variant, lanes: np.ndarray, params: ScoringParams, alphabet: Alphabet,
                    costs: ColumnCosts | None) -> None:
        """What a batch of `variant` reads besides its reads, made once per chunk: the profile padded
        for its packing, and the lookup table's variant (with column costs, the single states' cost
        rows) or the lookup words, where it takes a lookup path."""
        if variant.packed not in self.profiles:
            self.profiles[variant.packed] = padded_profile(lanes, variant)
        if variant.lookup and variant.table and self.table is None:
            self.table = variant
            if costs is not None:
                self.state_rows = state_rows(costs, alphabet)
        elif variant.lookup and not variant.split and self.lookup is None:
            self.lookup = lookup_words(lanes, variant, params)


@dataclass
class GroupPlan(ChunkPlan):
    """`ChunkPlan` of a `score_groups` launch: `score` and `edge` hold one row per task (filled
    by `GpuScorer._collect` through the batches' `reads`, here the tasks' reads), merged per read at the end."""

    n_lanes: int = 0  # the groups' lanes side by side, padded (the profile's width)

    def put(self, reads: np.ndarray, score: np.ndarray, edge: np.ndarray) -> None:
        """Fold tasks' lists (rows of `score`/`edge`) into their reads' rows (a read has a task per
        run of its group's edges)."""
        merge_rows(self.score, self.edge, reads.astype(np.int64), score, edge)


def plan_chunk(rules: LaunchRules, blocks: np.ndarray, n_edges: int, codes: np.ndarray, offsets: np.ndarray,
               params: ScoringParams, k: int, alphabet: Alphabet, costs: ColumnCosts | None) -> ChunkPlan:
    """The host side of `GpuScorer.score_chunk`: the reads of a chunk of consecutive blocks (their
    first `n_edges` lanes) sorted longest first, cut into kernel batches, and what they read."""
    m = blocks.shape[1]
    lengths = np.diff(offsets)
    n_reads = lengths.size
    plan = ChunkPlan(np.full((n_reads, k), EMPTY_SCORE, np.int32), np.full((n_reads, k), -1, np.int32), m)
    gathered = plan.gather_reads(codes, offsets, rules.packed_variant.rows, params, costs)
    if gathered is None:
        return plan
    order, starts = gathered
    lanes = np.moveaxis(blocks, 1, 0).reshape(m, -1)[:, :n_edges]
    for variant, slots in _batches(rules, order, lengths, m, n_edges, params, alphabet, costs is not None):
        plan.add_variant(variant, lanes, params, alphabet, costs)
        reads = order[slots]
        plan.batches.append(KernelBatch(variant, reads, starts[slots].astype(np.int32),
                                        lengths[reads].astype(np.int32),
                                        cost_profile_starts(lengths[reads], m, variant) if costs is not None else None))
    return plan


def plan_groups(rules: LaunchRules, lanes: list[np.ndarray], firsts: np.ndarray, codes: np.ndarray,
                offsets: np.ndarray, slot_ptr: np.ndarray, params: ScoringParams, k: int, alphabet: Alphabet,
                costs: ColumnCosts | None) -> GroupPlan:
    """The host side of `GpuScorer.score_groups`: the groups' profiles side by side, each
    padded to whole tasks of both lane widths (TASK_EDGES), the reads sorted longest first,
    and the tasks of each kernel batch."""
    m = lanes[0].shape[0]
    sizes = np.array([group.shape[1] for group in lanes], np.int64)
    spans = -(-sizes // TASK_EDGES) * TASK_EDGES
    bases = np.concatenate(([0], np.cumsum(spans)[:-1]))
    all_lanes = np.zeros((m, int(spans.sum())), lanes[0].dtype)
    for group, base in zip(lanes, bases):
        all_lanes[:, base:base + group.shape[1]] = group
    lengths = np.diff(offsets)
    n_slots = lengths.size
    plan = GroupPlan(np.full((n_slots, k), EMPTY_SCORE, np.int32), np.full((n_slots, k), -1, np.int32), m,
                     n_lanes=all_lanes.shape[1])
    gathered = plan.gather_reads(codes, offsets, rules.packed_variant.rows, params, costs)
    if gathered is None:
        return plan
    order, starts = gathered
    group_of = np.repeat(np.arange(sizes.size), np.diff(slot_ptr))
    for variant, slots in _batches(rules, order, lengths, m, TASK_EDGES, params, alphabet, costs is not None):
        plan.add_variant(variant, all_lanes, params, alphabet, costs)
        plan.batches.extend(_task_batches(rules.band_budget, variant, order[slots], starts[slots], lengths, m,
                                          group_of, sizes, bases, firsts, costs is not None))
    return plan


def _task_batches(band_budget: int, variant: Variant, reads, read_starts, lengths, m, group_of, sizes, bases, firsts,
                  costs: bool) -> list[KernelBatch]:
    """The kernel batches of one variant's reads (`reads`, longest first, at `read_starts` in the
    sorted codes): a task per read and WG_UNITS work-items of its group's edges, in batches within
    the band memory budget."""
    edges_per_task = WG_UNITS * variant.lanes
    group = group_of[reads]
    per_read = -(-sizes[group] // edges_per_task)  # tasks of each read
    task_read = np.repeat(np.arange(reads.size), per_read)
    nth = np.arange(task_read.size) - np.repeat(np.cumsum(per_read) - per_read, per_read)
    task_group = group[task_read]
    # tasks of one read length, group and edge run side by side: a work-group's reads share the run
    order = np.lexsort((task_read, nth, task_group, -lengths[reads][task_read]))
    task_read, nth, task_group = task_read[order], nth[order], task_group[order]
    per_task = WG_UNITS * (m + 1) * 4
    if costs:  # and the cost profile of the longest read, for each of its tasks (an upper bound)
        per_task += int(cost_profile_starts(lengths[reads[:1]], m, variant)[-1]) * 16
    most = max(1, band_budget // per_task)
    batches = []
    for lo in range(0, task_read.size, most):
        sel = slice(lo, lo + most)
        t_read, t_nth, t_group = task_read[sel], nth[sel], task_group[sel]
        distinct, inverse = np.unique(t_read, return_inverse=True)
        cost_starts = cost_profile_starts(lengths[reads[distinct]], m, variant) if costs else None
        batches.append(KernelBatch(
            variant, reads[t_read], read_starts[t_read].astype(np.int32), lengths[reads[t_read]].astype(np.int32),
            cost_starts,
            unit_base=((bases[t_group] + t_nth * edges_per_task) // variant.lanes).astype(np.int32),
            row_edges=np.minimum(sizes[t_group] - t_nth * edges_per_task, edges_per_task).astype(np.int32),
            row_first=(firsts[t_group] + t_nth * edges_per_task).astype(np.int32),
            expand=(read_starts[distinct].astype(np.int32), lengths[reads[distinct]].astype(np.int32),
                    None if cost_starts is None else cost_starts[inverse].astype(np.uint32))))
    return batches


def _batches(rules: LaunchRules, order, lengths, m, n_edges, params, alphabet: Alphabet, costs: bool):
    """(variant, slots into `order`) per batch: longest reads first, each batch within memory."""
    narrow_ok = params.int16_safe(lengths[order]) & rules.narrow & Variant.packs(alphabet)
    longest_wide = int(lengths[order[0]])
    if not narrow_ok.all() and params.cell_bound(longest_wide) >= INT32_LIMIT:
        raise ValueError(f"scores of {longest_wide}-residue reads may exceed the GPU's 32-bit range "
                         f"with these penalties; use the CPU engine")
    # narrow_ok is a suffix: reads are sorted by decreasing length
    first_narrow = int(np.argmax(narrow_ok)) if narrow_ok.any() else order.size
    near = params.weighted
    lookup = rules.lookup and (alphabet.dtype.itemsize > 1 or rules.packed_variant.table or lookup_fits(params))
    for variant, lo, hi in ((rules.wide_variant.of(alphabet, near, costs), 0, first_narrow),
                            (rules.packed_variant.of(alphabet, near, costs, lookup), first_narrow, order.size)):
        if lo == hi:
            continue
        per_read = edge_units(n_edges, variant) * (m + 1) * 4  # band rows
        if costs:  # and the cost profile of the range's longest read, 16 bytes a uint4
            per_read += int(cost_profile_starts(lengths[order[lo:lo + 1]], m, variant)[-1]) * 16
        if per_read > rules.band_budget:
            raise ValueError(f"one read against {n_edges} edges x {m} columns needs {per_read} bytes "
                             f"of band memory{' and cost profile' if costs else ''}, over this device's budget of "
                             f"{rules.band_budget}; "
                             f"use fewer blocks per chunk")
        n_batches = -(-(hi - lo) // (rules.band_budget // per_read))
        # equal batches: a small last one would leave most of the device idle for a full pass
        yield from ((variant, slots) for slots in np.array_split(np.arange(lo, hi), n_batches))
