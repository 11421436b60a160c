"""The GPU consumer's scorer (DESIGN.md section 6): a chunk of consecutive blocks against all reads.

`GpuScorer.score_chunk` runs kernels/band_score.cl (the banded recurrence of DESIGN 4, one
work-item per read and edge pair) and kernels/top_k.cl (each read's k best edges of the chunk)
on one OpenCL device; only Q x k (score, edge) pairs come back. The kernel's build variants and
the layouts of what it reads are engine/band_inputs.py's (no OpenCL there); this module puts them
on the device.

Why the host side looks the way it does:
- Reads are sorted by length and cut into batches: each work-item needs a band row of m + 1
  cells in device memory, so a batch holds as many reads as the memory budget allows; sorting
  keeps reads of similar length (similar run time, same arithmetic width) together.
- A batch runs with two 16-bit lanes per work-item where `ScoringParams.int16_safe` holds for
  its longest read, with one 32-bit lane otherwise; both give identical scores. The profile
  element type (uint8 DNA, uint32 protein: the alphabet of the blocks' dtype) is a build option
  of the one kernel source. A 20-bit protein state set does not fit a 16-bit lane, so for the
  packed lanes its sets are split in two parts, states 0-15 and 16-19 (band_inputs.padded_profile,
  the kernel's "SPLIT" layout): protein keeps the DPX path at one more AND and OR per cell pair (at
  1.86 TCUPS on the 32-bit lane it ran at 46% of DNA's rate on the H100).
- Where near states cost less than a mismatch (the kernel's NEAR), each element travels with
  its set | near states beside it (`padded_profile`): DNA's widened to 16 bits, protein's
  (looked up from its set, phylo/encoding.near_states) as a second word split like the
  element.
- With column profile costs (model/column_costs.py, protein; the kernel's COLUMN_COSTS) the host
  looks up each read residue's table row once per chunk (`ColumnCosts.rows_of`, which also refuses a
  code without one, as the CPU path does) and uploads it beside the codes, with the table transposed
  to [m][K] (`device_table`). Each batch then first expands them on the device into every read's
  own cost profile, X(i, b_j) as bytes ([stripes][m], a stripe's column of costs in 16 bytes,
  `read_cost_profile`): every work-item of a read adds the same costs, so band_score loads a
  stripe's column of them in one broadcast load, where looking each one up cost it 16%
  (notebook/BENCHMARKS.md). The posterior step (engine/gpu_posterior.py), whose work-items each hold their
  own read, reads the table.
- On NVIDIA sm_90+ the 16-bit lane arithmetic is inline PTX (add/min.u16x2, fused into DPX
  instructions); elsewhere portable OpenCL C. Tests hold the two against each other.
- Stripes of single-state residues take the kernel's lookup path in packed lanes (LOOKUP, on by
  default, `GpuScorer(lookup=False)` leaves it): DNA's diagonal cost CG_i + M_ij of each read
  residue is looked up in a per-column word the host builds per chunk (`lookup_words`: per lane
  pair the four bases' cost bytes of both lanes and their gap terms, where the penalties keep
  each cost under 128, `lookup_fits`), one byte permutation per cell pair on NVIDIA; protein's
  state tests are a 64-bit funnel shift of the element words. Stripes with an ambiguity code
  keep the element path; the results are the same (the kernel's comment has the layout). On
  NVIDIA DNA's lookup build is limited to LOOKUP_REGISTERS (more warps per SM hide the band's
  memory latency). `GpuScorer(lookup_table=True)` (a variant to measure) takes each diagonal cost
  from a per-column table of every single state's cost instead, built on the device per chunk
  (`_enqueue_table`, the kernel's lookup_table), column costs included.
- Waiting for the device sleeps in short steps between status queries: NVIDIA's blocking waits
  and completion callbacks spin a CPU core, which the hybrid engine's CPU workers need.
- Two chunks may be on the device at once (`queue_depth`): the next one's kernels wait in the
  queue while the current one runs, so the device does not idle while the host collects one
  result and launches the next. Uploads and downloads are blocking calls on a second queue:
  pyopencl releases the GIL only in blocking calls, and a non-blocking download queued behind
  a running kernel held the GIL until that kernel ended (PoCL).
- Programs are built once per (device, kernel, options) and kept for the process; pyopencl also
  caches the binaries on disk.
- A chunk is prepared on the host (engine/gpu_plan.py: read sorting, batches, padded profiles;
  no OpenCL call) before the device lock is taken, so a second thread can prepare the next chunk while
  the device runs this one; between two chunks the device then waits only for the uploads and
  the launch, not for numpy work and result merging (engine/scheduler.py, GPU feeders).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from papara_py import kernels
from papara_py.engine.band_inputs import WG_UNITS, Variant, edge_units, round_up
from papara_py.engine.gpu_plan import ChunkPlan, KernelBatch, LaunchRules, plan_chunk, plan_groups
from papara_py.engine.opencl_devices import DeviceInfo, build_program
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import INT32_LIMIT, ScoringParams
from papara_py.phylo.encoding import alphabet_of

_shared_lock = threading.Lock()
_contexts: dict[object, cl.Context] = {}
_programs: dict[tuple, cl.Program] = {}



@dataclass
class ChunkStats:
    """What the last score_chunk did, for benchmarks. kernel_seconds (band_score only) and
    device_seconds (band_score start to top_k end, per batch) need `profiling=True`; wall_seconds
    runs from the call to its return, the host-side preparation included."""

    batches: int = 0
    packed_reads: int = 0
    wide_reads: int = 0
    lookup_reads: int = 0  # packed reads of batches built with the lookup path (their plain stripes take it)
    kernel_seconds: float = 0.0
    device_seconds: float = 0.0
    wall_seconds: float = 0.0


def shared_context(device: cl.Device) -> cl.Context:
    """The process's one OpenCL context for `device` (the scorer's and the tracer's buffers live in it)."""
    with _shared_lock:
        if device not in _contexts:
            _contexts[device] = cl.Context([device])
        return _contexts[device]


def built_program(context: cl.Context, device: cl.Device, source: str, options: tuple[str, ...]) -> cl.Program:
    """Kernel source `source` (papara_py/kernels) built with `options`, once per process."""
    key = (device, source, options)
    with _shared_lock:
        if key not in _programs:
            _programs[key] = build_program(context, device, kernels.source(source), options)
        return _programs[key]



def _reads_per_group(kernel, device, variant: Variant) -> int:
    """`variant.wg_reads`, or as many as the built kernel allows beside WG_UNITS edge units where
    its registers leave the device fewer work-items per group (band_score's work-items share
    nothing, so the group's shape never changes a result)."""
    fits = kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device) // WG_UNITS
    return max(1, min(variant.wg_reads, fits))



@dataclass
class _Launch:
    """One kernel batch in the device queue: its events, its result buffers, and every object its
    commands use (held until they complete)."""

    reads: np.ndarray  # rows of the chunk's result lists this batch fills
    packed: bool
    lookup: bool
    band_done: cl.Event
    topk_done: cl.Event
    top_shape: tuple[int, int]  # [reads, k]
    top_score_buf: cl.Buffer
    top_edge_buf: cl.Buffer
    held: tuple


@dataclass
class _ChunkBuffers:
    """A chunk's inputs on the device (`GpuScorer._upload_inputs`), held until its launches complete."""

    codes: cl.Buffer                     # the sorted read codes
    profiles: dict[bool, cl.Buffer]      # packed? -> padded profile
    tables: list[tuple[cl.Buffer, cl.Buffer, cl.Buffer | None]]  # per batch: (starts, lengths, cost_starts)
    costs: tuple[cl.Buffer, cl.Buffer, int] | None  # (cost rows, cost table, K), or None (NULLs, K 0)
    lookup: cl.Buffer | None = None      # the lookup words, or None (NULL: no batch takes that path)
    state_rows: cl.Buffer | None = None  # `ChunkPlan.state_rows` (a lookup table with column costs)


class GpuScorer:
    """Scores chunks of edge blocks on one OpenCL device; safe to call from a worker thread.

    narrow: allow the packed 16-bit path (False forces 32-bit everywhere, e.g. for testing).
    ptx: use NVIDIA inline PTX; None chooses it on NVIDIA devices of compute capability >= 9.
    memory_fraction: share of the device's global memory the band buffers may take.
    queue_depth: chunks queued or running on the device at once, from any number of threads
    (engine/scheduler.py runs two feeder threads per GPU): with 2, the next chunk's commands
    wait in the queue while the current one runs, and the device never waits for the host.
    """

    def __init__(self, device: DeviceInfo, *, narrow: bool = True, ptx: bool | None = None,
                 rows: int = 32, memory_fraction: float = 0.5,
                 profiling: bool = False, queue_depth: int = 2, lookup: bool = True, lookup_table: bool = False,
                 max_registers: int | None = None, group_reads: int | None = None,
                 extra_options: tuple[str, ...] = ()) -> None:
        if ptx is None:
            ptx = device.is_nvidia and (device.nv_compute_capability or (0, 0)) >= (9, 0)
        self.device = device
        self.narrow = narrow
        #: packed DNA lanes look each diagonal cost up by the read's residue (kernels/band_score.cl
        #: LOOKUP) where the penalties fit its bytes (`lookup_fits`); False: the element path only
        self.lookup = lookup
        #: lookup_table, max_registers, group_reads: the packed builds' Variant.table, .max_registers
        #: and .group_reads (build variants scripts/bench_kernel_variants.py measures)
        self.packed_variant = Variant(packed=True, ptx=ptx, rows=rows, table=lookup_table, max_registers=max_registers,
                                      group_reads=group_reads, extra=tuple(extra_options))
        self.wide_variant = Variant(packed=False, ptx=False, rows=rows, extra=tuple(extra_options))
        #: verification only (scripts/bench_kernel_variants.py): a word every output and scratch
        #: buffer is filled with before the kernels run, so a score never written shows
        self.fill_outputs: int | None = None
        self.context = shared_context(device.cl_device)
        properties = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
        self.queue = cl.CommandQueue(self.context, device.cl_device, properties=properties)
        #: uploads and result downloads, as blocking calls (pyopencl releases the GIL for those
        #: only) on a queue of their own, so they need not wait for the kernels of another chunk
        self.transfers = cl.CommandQueue(self.context, device.cl_device)
        self.profiling = profiling
        self.band_budget = int(min(device.max_alloc_bytes, device.global_mem_bytes * memory_fraction))
        self.stats = ChunkStats()
        #: device time of every chunk so far (with profiling): the GPU's own clock, whichever
        #: thread fed it
        self.device_seconds = 0.0
        self._scratches: dict[str, cl.Buffer] = {}
        self._group_reads: dict[Variant, int] = {}  # `_reads_per_group`, asked once per build
        self._lock = threading.Lock()
        self._on_device = threading.BoundedSemaphore(max(1, queue_depth))

    def launch_rules(self) -> LaunchRules:
        """What the host-side plans (engine/gpu_plan.py) take from this scorer, as it is set now."""
        return LaunchRules(self.packed_variant, self.wide_variant, self.narrow, self.lookup, self.band_budget)

    def build(self, variant: Variant, k: int) -> tuple[cl.Program, cl.Program]:
        """The band_score program of `variant` and the top_k program for lists of k (built once)."""
        kmax = max(4, 1 << (k - 1).bit_length())
        return (built_program(self.context, self.device.cl_device, "band_score.cl", variant.options()),
                built_program(self.context, self.device.cl_device, "top_k.cl", (f"-DKMAX={kmax}",)))

    def score_chunk(self, blocks: np.ndarray, first_edge: int, n_edges: int, codes: np.ndarray,
                    offsets: np.ndarray, params: ScoringParams, k: int,
                    costs: ColumnCosts | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each read's k best (score, edge) over the chunk's first n_edges lanes.

        blocks: [nb, m, W] profile elements (uint8 DNA, uint32 protein), consecutive blocks (edge
        first_edge + b*W + w at [b, :, w]).
        codes / offsets: encoded reads of the same alphabet, read q = codes[offsets[q]:offsets[q+1]].
        costs: the column profile costs (model/column_costs.py), or None; ValueError where a read
        code has no row in it or a cost exceeds `params.column_cost_bound()`.
        Returns int32 [Q, k] scores and global edge numbers, sorted by (score, edge), padded with
        (INT32_MAX, -1); reads that cannot be scored (empty, or not shorter than m) are all padding.
        """
        nb, m, width = blocks.shape
        if not 0 < n_edges <= nb * width:
            raise ValueError(f"n_edges must be in 1..{nb * width}, got {n_edges}")
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        started = time.perf_counter()
        alphabet = alphabet_of(blocks)
        plan = plan_chunk(self.launch_rules(), blocks, n_edges, np.asarray(codes, alphabet.dtype),
                          np.asarray(offsets, np.int64), params, k, alphabet, costs)
        stats = ChunkStats()
        if plan.batches:
            inputs = self._upload_inputs(plan)  # while another chunk's kernels may run
            with self._on_device:  # at most queue_depth chunks queued or running on the device
                with self._lock:
                    launches = self._enqueue(plan, inputs, first_edge, n_edges, params, k)
                self._collect(plan, launches, stats)
        stats.wall_seconds = time.perf_counter() - started
        with self._lock:
            self.stats = stats
            self.device_seconds += stats.device_seconds
        return plan.score, plan.edge

    def score_groups(self, lanes: list[np.ndarray], firsts: np.ndarray, codes: np.ndarray, offsets: np.ndarray,
                     slot_ptr: np.ndarray, params: ScoringParams, k: int,
                     costs: ColumnCosts | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The guided search's launch (engine/guided.py): group g's reads, slots
        slot_ptr[g]..slot_ptr[g+1]-1 of (codes, offsets), against its own edges, lanes[g] ([m, n_g]
        profile elements, numbered firsts[g], firsts[g] + 1, ...), all groups in one launch.

        Each group's edges are cut into tasks of one work-group row (WG_UNITS work-items: 64 edges
        in packed lanes, 32 in the 32-bit lane), each read of the group one band_score row per
        task (kernels/band_score.cl `unit_base`), so the launch holds every (read, edge) pair of
        every group once, and the device sees launches as full as the exhaustive search's however
        few reads a group has. top_k_rows keeps each task's k best of its real edges; the host
        merges a read's tasks. Returns int32 [slots, k] scores and edge numbers as score_chunk."""
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        started = time.perf_counter()
        alphabet = alphabet_of(lanes[0])
        plan = plan_groups(self.launch_rules(), lanes, np.asarray(firsts, np.int64), np.asarray(codes, alphabet.dtype),
                           np.asarray(offsets, np.int64), np.asarray(slot_ptr, np.int64), params, k, alphabet, costs)
        stats = ChunkStats()
        if plan.batches:
            inputs = self._upload_inputs(plan)
            task_tables = [self._upload_tasks(batch) for batch in plan.batches]
            with self._on_device:
                with self._lock:
                    table = None if plan.table is None else self._enqueue_table(plan, inputs, plan.n_lanes, params, k)
                    launches = [self._enqueue_batch(batch, inputs.profiles[batch.variant.packed], WG_UNITS,
                                                    plan.n_columns, 0, 0, inputs.codes, batch_tables, params, k,
                                                    inputs, table, profile_units=plan.n_lanes // batch.variant.lanes,
                                                    task_tables=tasks)
                                for batch, batch_tables, tasks in zip(plan.batches, inputs.tables, task_tables)]
                    self.queue.flush()
                self._collect(plan, launches, stats)
        score, edge = plan.score, plan.edge
        stats.wall_seconds = time.perf_counter() - started
        with self._lock:
            self.stats = stats
            self.device_seconds += stats.device_seconds
        return score, edge

    def _upload_tasks(self, batch: KernelBatch) -> tuple:
        """A task batch's tables on the device (`_enqueue_batch`'s task_tables)."""
        starts, lens, task_costs = batch.expand
        return (self._upload(batch.unit_base), self._upload(batch.row_edges), self._upload(batch.row_first),
                None if task_costs is None else self._upload(task_costs),
                self._upload(starts), self._upload(lens),
                None if batch.cost_starts is None else self._upload(batch.cost_starts), int(starts.size))

    def _upload_inputs(self, plan: ChunkPlan) -> _ChunkBuffers:
        """Device copies of a chunk's reads, profiles, per-batch read tables and column costs."""
        return _ChunkBuffers(codes=self._upload(plan.sorted_codes),
                             profiles={packed: self._upload(padded) for packed, padded in plan.profiles.items()},
                             tables=[(self._upload(b.starts), self._upload(b.lengths),
                                      None if b.cost_starts is None else self._upload(b.cost_starts))
                                     for b in plan.batches],
                             costs=None if plan.cost_table is None else (
                                 self._upload(plan.cost_rows), self._upload(plan.cost_table),
                                 plan.cost_table.shape[1]),
                             lookup=None if plan.lookup is None else self._upload(plan.lookup),
                             state_rows=None if plan.state_rows is None else self._upload(plan.state_rows))

    def _enqueue(self, plan: ChunkPlan, inputs: _ChunkBuffers, first_edge, n_edges, params, k) -> list["_Launch"]:
        """Queue the kernels of a chunk's batches (called under the lock: they share the band rows)."""
        launches = []
        table = None if plan.table is None else self._enqueue_table(plan, inputs, n_edges, params, k)
        for batch, batch_tables in zip(plan.batches, inputs.tables):
            variant = batch.variant
            units = edge_units(n_edges, variant)
            launches.append(self._enqueue_batch(batch, inputs.profiles[variant.packed], units, plan.n_columns,
                                                n_edges, first_edge, inputs.codes, batch_tables, params, k, inputs,
                                                table))
        self.queue.flush()
        return launches

    def _collect(self, plan: ChunkPlan, launches: list["_Launch"], stats: ChunkStats) -> None:
        """Wait for a chunk's launches and download their results into `plan`."""
        for launch in launches:
            self._wait(launch.topk_done)
            launch.band_done.wait()  # returns at once; raises if band_score failed
            if self.profiling:
                stats.kernel_seconds += (launch.band_done.profile.end - launch.band_done.profile.start) * 1e-9
                stats.device_seconds += (launch.topk_done.profile.end - launch.band_done.profile.start) * 1e-9
            top_score = np.empty(launch.top_shape, np.int32)
            top_edge = np.empty(launch.top_shape, np.int32)
            cl.enqueue_copy(self.transfers, top_score, launch.top_score_buf)
            cl.enqueue_copy(self.transfers, top_edge, launch.top_edge_buf)
            plan.put(launch.reads, top_score, top_edge)
            stats.batches += 1
            if launch.packed:
                stats.packed_reads += launch.reads.size
                stats.lookup_reads += launch.reads.size if launch.lookup else 0
            else:
                stats.wide_reads += launch.reads.size

    def _upload(self, host: np.ndarray) -> cl.Buffer:
        """A device copy of `host`: a blocking write on the transfer queue, which returns while
        the kernel queue is busy (a non-blocking one, on PoCL, waits for it with the GIL held)."""
        buffer = cl.Buffer(self.context, cl.mem_flags.READ_ONLY, host.nbytes)
        cl.enqueue_copy(self.transfers, buffer, host)
        return buffer

    def _scratch(self, name: str, nbytes: int) -> cl.Buffer:
        """Scratch memory `name` (the band rows, the reads' cost profiles), kept between calls and
        grown when a batch needs more (the chunks' kernels run in one in-order queue, so they
        share it)."""
        buffer = self._scratches.get(name)
        if buffer is None or buffer.size < nbytes:
            # release the old one first (a chunk still queued keeps it until it completes); a
            # quarter more than asked, within what the budget leaves beside the other scratches,
            # so that batches a few reads longer than the first do not each replace it
            self._scratches.pop(name, None)
            left = self.band_budget - sum(other.size for other in self._scratches.values())
            buffer = self._scratches[name] = cl.Buffer(self.context, cl.mem_flags.READ_WRITE,
                                                       max(nbytes, min(left, nbytes * 5 // 4)))
        return buffer

    def _enqueue_table(self, plan: ChunkPlan, inputs: _ChunkBuffers, n_edges, params, k) -> cl.Buffer:
        """Queue lookup_table (kernels/band_score.cl LOOKUP_TABLE): the chunk's table of every single
        state's diagonal cost per column and work-item, [m + rows - 1][states + 3][units] uint32, from
        the packed profile, the penalties and the column costs (scratch memory: the in-order queue
        runs it after the last chunk's band kernels)."""
        variant, m = plan.table, plan.n_columns
        units = edge_units(n_edges, variant)
        columns = m + variant.rows - 1
        table_buf = self._scratch("lookup_table", columns * (variant.alphabet.n_states + 3) * units * 4)
        kernel = cl.Kernel(self.build(variant, k)[0], "lookup_table")
        u32 = np.uint32
        cost_table, n_costs = (None, 0) if inputs.costs is None else (inputs.costs[1], inputs.costs[2])
        kernel.set_args(inputs.profiles[True], np.int32(m), np.int32(units), np.int32(columns), u32(params.mismatch),
                        u32(params.cgap), u32(params.gap_open + params.gap_extend), u32(params.gap_extend),
                        u32(params.near_mismatch), cost_table, np.int32(n_costs), inputs.state_rows, table_buf)
        cl.enqueue_nd_range_kernel(self.queue, kernel, (units, round_up(columns, 8)), (WG_UNITS, 8))
        return table_buf

    def _enqueue_batch(self, batch: KernelBatch, profile_buf, units, m, n_edges, first_edge, codes_buf,
                       batch_tables, params, k, inputs: _ChunkBuffers, table: cl.Buffer | None = None,
                       profile_units: int | None = None, task_tables: tuple | None = None) -> "_Launch":
        """Queue band_score and top_k for one batch (its read table already on the device), with
        column profile costs read_cost_profile before them.

        Every OpenCL object a command uses is held in the returned launch until the command has
        completed: NVIDIA's runtime spins a CPU core until the queue drains when one is released
        while in use (notebook/BENCHMARKS.md, GPU section).
        """
        variant, reads = batch.variant, batch.reads
        starts_buf, lens_buf, cost_starts_buf = batch_tables
        # the guided search's tasks (`score_groups`): band_score's reads are the tasks, each with its
        # unit base (and, with column costs, its read's cost profile start); the column costs are
        # expanded for the batch's distinct reads, top_k_rows keeps each task's real edges
        task_buf = row_edges_buf = row_first_buf = None
        expand_starts, expand_lens, expand_costs, n_expand = starts_buf, lens_buf, cost_starts_buf, reads.size
        if task_tables is not None:
            (task_buf, row_edges_buf, row_first_buf, task_cost_buf,
             expand_starts, expand_lens, expand_costs, n_expand) = task_tables
            cost_starts_buf = task_cost_buf
        band_prog, topk_prog = self.build(variant, k)
        n_batch = reads.size
        band_buf = self._scratch("band", n_batch * units * (m + 1) * 4)
        row_lanes = units * variant.lanes
        scores_buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, n_batch * row_lanes * 4)
        top_score_buf = cl.Buffer(self.context, cl.mem_flags.WRITE_ONLY, n_batch * k * 4)
        top_edge_buf = cl.Buffer(self.context, cl.mem_flags.WRITE_ONLY, n_batch * k * 4)
        if self.fill_outputs is not None:
            for buffer in (band_buf, scores_buf, top_score_buf, top_edge_buf):
                cl.enqueue_fill_buffer(self.queue, buffer, np.uint32(self.fill_outputs), 0, buffer.size // 4 * 4)
        inf = params.int16_infinity() if variant.packed else INT32_LIMIT
        u32 = np.uint32
        read_costs_buf = expand = None
        if inputs.costs is not None:
            rows_buf, table_buf, n_costs = inputs.costs
            n_quads = int(batch.cost_starts[-1])
            read_costs_buf = self._scratch("read_costs", n_quads * 16)
            expand = cl.Kernel(band_prog, "read_cost_profile")
            expand.set_args(rows_buf, table_buf, np.int32(n_costs), np.int32(m), expand_starts, expand_lens,
                            expand_costs, np.int32(n_expand), read_costs_buf)
            cl.enqueue_nd_range_kernel(self.queue, expand, (round_up(n_quads, 256),), (256,))
        band = cl.Kernel(band_prog, "band_score")
        band.set_args(profile_buf, np.int32(m), np.int32(units), codes_buf, starts_buf, lens_buf,
                      np.int32(n_batch), band_buf, scores_buf, u32(params.mismatch), u32(params.cgap),
                      u32(params.gap_open + params.gap_extend), u32(params.gap_extend),
                      u32(params.insertion), u32(inf), u32(params.near_mismatch), read_costs_buf,
                      cost_starts_buf, table if variant.lookup and variant.table else (
                          inputs.lookup if variant.lookup and not variant.split else None),
                      np.int32(profile_units or units), task_buf)
        group_reads = self._group_reads.get(variant)
        if group_reads is None:
            group_reads = self._group_reads[variant] = _reads_per_group(band, self.device.cl_device, variant)
        band_done = cl.enqueue_nd_range_kernel(
            self.queue, band, (units, round_up(n_batch, group_reads)), (WG_UNITS, group_reads))
        if task_tables is None:
            topk = cl.Kernel(topk_prog, "top_k")
            topk.set_args(scores_buf, np.int32(row_lanes), np.int32(n_edges), np.int32(first_edge),
                          np.int32(k), np.int32(n_batch), top_score_buf, top_edge_buf)
        else:
            topk = cl.Kernel(topk_prog, "top_k_rows")
            topk.set_args(scores_buf, np.int32(row_lanes), row_edges_buf, row_first_buf,
                          np.int32(k), np.int32(n_batch), top_score_buf, top_edge_buf)
        topk_done = cl.enqueue_nd_range_kernel(self.queue, topk, (round_up(n_batch, 64),), None)
        return _Launch(reads, variant.packed, variant.lookup, band_done, topk_done, (n_batch, k), top_score_buf,
                       top_edge_buf, (inputs, band_buf, read_costs_buf, expand, scores_buf, band, topk, table,
                                      task_tables))

    def _wait(self, event: cl.Event) -> None:
        wait_sleeping(self.queue, event)


def wait_sleeping(queue: cl.CommandQueue, event: cl.Event) -> None:
    """Sleep until `event` (of `queue`) completes, looking at its status every 2 ms at most.

    NVIDIA's clWaitForEvents and completion callbacks keep a CPU core busy for the whole
    wait (scripts/bench_gpu.py measures it); short sleeps leave that core to the CPU workers.
    A status query is cheap and does not start the driver spinning.
    """
    queue.flush()
    pause = 1e-4
    while event.command_execution_status > cl.command_execution_status.COMPLETE:
        time.sleep(pause)
        pause = min(2 * pause, 2e-3)
    event.wait()  # returns at once; raises if the command failed
