"""The posterior step (model/posterior.py) on an OpenCL device (kernels/posterior.cl).

`GpuPosterior.decode_batch` has the contract of `model.posterior.decode_batch` and gives the
same integers bit for bit (tests hold the two equal on PoCL): the kernels run the CPU's
fixed-point recurrences in the same evaluation order with the same tables, pool with integer
atomics (each term floored, so the order of the adds changes nothing), and the edge weights
between the Forward and the Backward are computed on the host by the CPU's own function
(`model.posterior.batch_weights`).

Host side: reads without a candidate are settled on the host (every residue inserted, pp 0);
the others are sorted by length, longest first, and a launch's (read, candidate) pairs by read
length, then edge (the work-items of a warp then step through rows of one width, load one
profile's element where their edge is the same, and their interleaved loads, stores and
atomic adds coalesce), and cut into launches whose device
memory (each pair's Forward energies of M, the largest share, and each read's pooled
posteriors and MEA work space) fits `memory_bytes`. A launch: posterior_forward over its
(read, candidate) pairs, the weights on the host, posterior_backward over the pairs of weight
above 0, posterior_mea over its reads.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl

from papara_py.engine.gpu import built_program, shared_context, wait_sleeping
from papara_py.engine.opencl_devices import DeviceInfo
from papara_py.io.paths import INSERTED
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.fixed_point import SENTINEL, PosteriorTables
from papara_py.model.posterior import SIGN, Batch, batch_weights
from papara_py.phylo.encoding import DNA, alphabet_of

#: Work-items per work-group: four NVIDIA warps.
WORK_GROUP = 128
#: A launch's work space is at most 1 / MEMORY_SHARE of the device's memory (its Forward energies
#: within the largest buffer the device allows). Each work-item decodes one (read, candidate)
#: pair and each pair's Forward energies take most of the space, so this share bounds a launch's
#: parallelism: on an H200 a 12,500-read batch of 100-bp reads against rpsS (W about 970) took
#: 0.82 s of the device in three launches at an eighth, 0.59 s in two at a quarter and 0.35 s in
#: one (docs/performance.md). A third leaves room for the scoring beside the two decoding threads
#: (engine/tracer.GPU_TRACING_THREADS).
MEMORY_SHARE = 3


class GpuPosterior:
    """Decodes batches of reads on one OpenCL device; safe to call from several threads (each
    call has buffers of its own).

    memory_bytes: device memory one launch's work space may take (default: 1 / MEMORY_SHARE of the
    device's memory; its Forward energies, one buffer, also within the device's largest buffer).
    """

    def __init__(self, device: DeviceInfo, memory_bytes: int | None = None) -> None:
        self.device = device
        self.context = shared_context(device.cl_device)
        self.queue = cl.CommandQueue(self.context, device.cl_device)
        self.memory_bytes = int(memory_bytes or device.global_mem_bytes // MEMORY_SHARE)
        self.device_cells = 0
        self._lock = threading.Lock()

    def decode_batch(self, codes: np.ndarray, offsets: np.ndarray, slots: np.ndarray, scores: np.ndarray | None,
                     profiles: np.ndarray, near: np.ndarray | None, p: np.ndarray, costs: ColumnCosts | None,
                     tables: PosteriorTables, local: np.ndarray | None = None):
        """`model.posterior.decode_batch` on the device: the same arguments (no `threads`) and
        the same (columns int32, pp uint16, weights int32 [Q, K], accuracy float64 [Q])."""
        batch = Batch.of(codes, offsets, slots, scores, profiles, near, p, costs, tables, local)
        q, count = batch.lengths.size, batch.slots.shape[1]
        m = batch.profiles.shape[1]
        columns = np.full(batch.offsets[-1] if q else 0, INSERTED, np.int32)
        pp = np.zeros(columns.size, np.uint16)
        weights = np.zeros((q, count), np.int32)
        objective = np.full(q, -1, np.int64)
        decoded = np.flatnonzero((batch.slots >= 0).any(axis=1))
        if decoded.size:
            alphabet = alphabet_of(batch.profiles)
            program = built_program(self.context, self.device.cl_device, "posterior.cl",
                                    (f"-DPROF_BITS={alphabet.dtype.itemsize * 8}", f"-DSTATE_BITS={alphabet.n_states}",
                                     *(("-DCOLUMN_COSTS=1",) if costs is not None else ())))
            rows = None if costs is None else costs.rows_of(batch.codes)
            shared = (self._upload(batch.profiles), self._upload(batch.near),
                      self._upload(tables.softmin.astype(np.int32)), self._upload(tables.probability.astype(np.int32)),
                      None if costs is None else self._upload(costs.by_column),
                      # each profile's own table, laid out as by_column: [U][m][K]
                      None if batch.local is None else self._upload(batch.local.transpose(0, 2, 1)))
            for launch in self._launches(batch, decoded, m):
                self._run(program, batch, launch, shared, rows, columns, pp, weights, objective)
            with self._lock:
                lengths = batch.lengths[decoded]
                self.device_cells += int(((batch.slots[decoded] >= 0).sum(axis=1) * lengths * m).sum())
        return columns, pp, weights, batch.accuracy(objective)

    def mea_alignment(self, pooled: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """`model.mea.mea_alignment` of one read's pooled posteriors (int [n, m] by column)
        by the device's posterior_mea: (columns int32 [n], pp int64 [n], objective). For tests: the
        MEA and its tie rule on chosen posteriors, ties included."""
        pooled = np.ascontiguousarray(pooled, np.int32)
        n, m = pooled.shape
        program = built_program(self.context, self.device.cl_device, "posterior.cl",
                                ("-DPROF_BITS=8", f"-DSTATE_BITS={DNA.n_states}"))  # (the MEA reads no element)
        mf = cl.mem_flags
        buffers = (self._upload(np.array([0, n], np.int32)), self._upload(pooled),
                   cl.Buffer(self.context, mf.READ_WRITE, 4 * n),
                   cl.Buffer(self.context, mf.READ_WRITE, 8 * n * (m + 1)),
                   cl.Buffer(self.context, mf.WRITE_ONLY, 4 * n), cl.Buffer(self.context, mf.WRITE_ONLY, 4 * n),
                   cl.Buffer(self.context, mf.WRITE_ONLY, 8))
        offsets_buf, pooled_buf, ins_buf, best_buf, columns_buf, pp_buf, objective_buf = buffers
        kernel = cl.Kernel(program, "posterior_mea")
        kernel.set_args(offsets_buf, np.int32(1), np.int32(m), pooled_buf, ins_buf, best_buf, columns_buf, pp_buf,
                        objective_buf)
        done = cl.enqueue_nd_range_kernel(self.queue, kernel, (WORK_GROUP,), (WORK_GROUP,))
        wait_sleeping(self.queue, done)
        columns, pp, objective = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(1, np.int64)
        for host, buffer in ((columns, columns_buf), (pp, pp_buf), (objective, objective_buf)):
            cl.enqueue_copy(self.queue, host, buffer)
        del buffers, offsets_buf, pooled_buf, ins_buf, best_buf, columns_buf, pp_buf, objective_buf
        return columns, pp.astype(np.int64), int(objective[0])

    def _upload(self, array: np.ndarray) -> cl.Buffer:
        return cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=np.ascontiguousarray(array))

    def _launches(self, batch: Batch, decoded: np.ndarray, m: int) -> list[np.ndarray]:
        """The reads `decoded` (indices into the batch) in launches, longest first: each launch's
        work space (F: its pairs x its longest read's rows x m columns, 4 bytes a cell; pooled,
        ins and the MEA's rows: 16 bytes a cell of each read) within memory_bytes and each of its
        two largest buffers (F, the MEA's rows) within the device's largest, at least one read a
        launch."""
        lengths = batch.lengths[decoded]
        order = decoded[np.argsort(-lengths, kind="stable")]
        pairs = (batch.slots[order] >= 0).sum(axis=1)
        rows = batch.lengths[order]
        launches, begin = [], 0
        while begin < order.size:
            cells = int(rows[begin]) * (m + 1)  # a pair's / read's cell grid (the MEA's rows m + 1 wide)
            forward = cells * (4 * np.cumsum(pairs[begin:]))  # F
            mea = cells * (8 * np.arange(1, order.size - begin + 1))  # the MEA's rows
            need = forward + 2 * mea  # and pooled and ins, within 8 bytes a cell
            fits = (need <= self.memory_bytes) & (np.maximum(forward, mea) <= self.device.max_alloc_bytes)
            end = begin + max(1, int(fits.sum()))  # need grows along `order`: the fits are a prefix
            launches.append(order[begin:end])
            begin = end
        return launches

    def _run(self, program, batch: Batch, reads: np.ndarray, shared, rows, columns, pp, weights, objective) -> None:
        """One launch: the reads `reads` (indices into the batch), results into the batch's arrays."""
        states_buf, near_buf, softmin_buf, prob_buf, table_buf, local_buf = shared
        tables, m = batch.tables, batch.profiles.shape[1]
        n_reads = reads.size
        read_lengths = batch.lengths[reads]
        local_offsets = np.concatenate(([0], np.cumsum(read_lengths))).astype(np.int32)
        gather = np.arange(int(local_offsets[-1])) + np.repeat(batch.offsets[reads] - local_offsets[:-1], read_lengths)
        slots = batch.slots[reads]
        pair_read, pair_column = np.nonzero(slots >= 0)
        pair_slot = slots[pair_read, pair_column]
        # pairs by read length, then edge: neighbouring work-items step through the same column
        # of the same profile (one element load for the warp) and pool into neighbouring reads
        order = np.lexsort((pair_read, pair_slot, -read_lengths[pair_read]))
        pair_read, pair_column, pair_slot = pair_read[order], pair_column[order], pair_slot[order]
        n_pairs = pair_read.size
        max_rows = int(read_lengths.max())
        row_width = m + max_rows - 1  # the longest read's work row width W (model/posterior.py)
        mf = cl.mem_flags
        i32 = np.int32
        codes_buf = self._upload(batch.codes[gather])
        rows_buf = None if rows is None else self._upload(rows[gather])
        offsets_buf = self._upload(local_offsets)
        pair_read_buf = self._upload(pair_read.astype(np.int32))
        pair_slot_buf = self._upload(pair_slot.astype(np.int32))
        row_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * (row_width + 1) * n_pairs)
        grow_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * (row_width + 1) * n_pairs)
        # the offsets no row writes (column m - 1's of the row above): no diagonal step from there
        cl.enqueue_fill_buffer(self.queue, grow_buf, np.int32(SENTINEL), 0, 4 * (row_width + 1) * n_pairs)
        f_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * max_rows * m * n_pairs)
        z_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * n_pairs)
        p = batch.p
        shift = tables.shift
        energies = [i32(int(value) << shift) for value in (p[0], p[5], p[1], p[2] + p[3], p[3], p[4])]
        n_costs = 0 if batch.costs is None else batch.costs.codes.size
        soft_mask, prob_mask = i32(tables.softmin.size - 1), i32(tables.probability.size - 1)
        groups = lambda count: (-(-count // WORK_GROUP) * WORK_GROUP,)  # noqa: E731

        forward = cl.Kernel(program, "posterior_forward")
        forward.set_args(states_buf, near_buf, i32(m), codes_buf, offsets_buf, pair_read_buf, pair_slot_buf,
                         i32(n_pairs), row_buf, f_buf, z_buf, i32(shift), *energies, softmin_buf,
                         soft_mask, rows_buf, table_buf, i32(n_costs), i32(0), None, i32(n_pairs))
        done = cl.enqueue_nd_range_kernel(self.queue, forward, groups(n_pairs), (WORK_GROUP,))
        wait_sleeping(self.queue, done)
        z = np.empty(n_pairs, np.int32)
        cl.enqueue_copy(self.queue, z, z_buf)

        # the weights, by the CPU's function on the device's Z
        z_reads = np.zeros(slots.shape, np.int64)
        z_reads[pair_read, pair_column] = z
        launch_weights = np.zeros(slots.shape, np.int32)
        batch_weights(z_reads, slots, tables.placement, SIGN, launch_weights)
        weights[reads] = launch_weights
        pair_weight = launch_weights[pair_read, pair_column].astype(np.int32)
        active = np.flatnonzero(pair_weight > 0).astype(np.int32)
        active_buf = self._upload(active)
        own_table, own_stride = table_buf, 0
        if local_buf is not None:  # the weighted pairs' Forward again, under their own tables
            own_table, own_stride = local_buf, m * n_costs
            forward.set_args(states_buf, near_buf, i32(m), codes_buf, offsets_buf, pair_read_buf, pair_slot_buf,
                             i32(n_pairs), row_buf, f_buf, z_buf, i32(shift), *energies, softmin_buf,
                             soft_mask, rows_buf, own_table, i32(n_costs), i32(own_stride), active_buf,
                             i32(active.size))
            cl.enqueue_nd_range_kernel(self.queue, forward, groups(active.size), (WORK_GROUP,))

        pooled_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * max_rows * m * n_reads)
        cl.enqueue_fill_buffer(self.queue, pooled_buf, np.int32(0), 0, 4 * max_rows * m * n_reads)
        weight_buf = self._upload(pair_weight)
        backward = cl.Kernel(program, "posterior_backward")
        backward.set_args(states_buf, near_buf, i32(m), codes_buf, offsets_buf, pair_read_buf, pair_slot_buf,
                          i32(n_pairs), active_buf, i32(active.size), i32(n_reads), row_buf,
                          grow_buf, f_buf, z_buf, weight_buf, pooled_buf, i32(shift), *energies, softmin_buf,
                          soft_mask, prob_buf, prob_mask, rows_buf, own_table, i32(n_costs), i32(own_stride))
        cl.enqueue_nd_range_kernel(self.queue, backward, groups(active.size), (WORK_GROUP,))

        ins_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * max_rows * n_reads)
        best_buf = cl.Buffer(self.context, mf.READ_WRITE, 8 * max_rows * (m + 1) * n_reads)
        columns_buf = cl.Buffer(self.context, mf.WRITE_ONLY, 4 * int(local_offsets[-1]))
        pp_buf = cl.Buffer(self.context, mf.WRITE_ONLY, 4 * int(local_offsets[-1]))
        objective_buf = cl.Buffer(self.context, mf.WRITE_ONLY, 8 * n_reads)
        mea = cl.Kernel(program, "posterior_mea")
        mea.set_args(offsets_buf, i32(n_reads), i32(m), pooled_buf, ins_buf, best_buf, columns_buf, pp_buf,
                     objective_buf)
        done = cl.enqueue_nd_range_kernel(self.queue, mea, groups(n_reads), (WORK_GROUP,))
        wait_sleeping(self.queue, done)
        launch_columns = np.empty(int(local_offsets[-1]), np.int32)
        launch_pp = np.empty(int(local_offsets[-1]), np.int32)
        launch_objective = np.empty(n_reads, np.int64)
        for host, buffer in ((launch_columns, columns_buf), (launch_pp, pp_buf), (launch_objective, objective_buf)):
            cl.enqueue_copy(self.queue, host, buffer)
        columns[gather] = launch_columns
        pp[gather] = launch_pp.astype(np.uint16)
        objective[reads] = launch_objective
        # every buffer above is held until here, after its last command completed (engine/gpu.py:
        # releasing one in use makes NVIDIA's runtime spin a core until the queue drains)
        del (codes_buf, rows_buf, offsets_buf, pair_read_buf, pair_slot_buf, row_buf, grow_buf, f_buf, z_buf,
             pooled_buf, active_buf, weight_buf, ins_buf, best_buf, columns_buf, pp_buf, objective_buf)
