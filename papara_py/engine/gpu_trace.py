"""The traceback of DESIGN.md section 5 on an OpenCL device (kernels/band_trace.cl).

At sample scale the traceback (each read's band recomputed against its best edge, int64, numba)
was the host's bottleneck: 9.7e10 cells for a million 100-bp reads on the rpsS tree, 40-50 s of
all 16 cores of the H100 host, beside 85 s of GPU scoring whose feeders need those cores
(BENCHMARKS.md, "The 1M-read run with the weighted default"). On the GPU the same cells are a
small fraction of the scoring's device time. `GpuTracer.align_many` has the contract of
`model.traceback.align_many` and gives the same results bit for bit (tests hold the two equal on
PoCL and on the GPU); engine/tracer.Tracer hands it the run's batches when the run has a GPU.

Host side: the reads are sorted by length (work-items of a warp then step through their bands
together, and the per-launch grid of rows x offsets wastes little) and cut into launches whose
move bytes fit `memory_bytes`; each launch returns each read's score, start column and path in
walk order, and `alignments_from_walks` turns the paths into rows and CIGARs. Column profile
costs travel as the scorer's do (engine/gpu.py: each residue's table row beside the codes, the
table as [m][K]), built with -DCOLUMN_COSTS=1 only where there are costs.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl

from papara_py.engine.gpu import (
    INF32,
    built_program,
    device_table,
    shared_context,
    wait_sleeping,
)
from papara_py.engine.gpu_location import location_scores, upload
from papara_py.engine.opencl_devices import DeviceInfo
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import frame_width, profile_near
from papara_py.model.traceback import alignments_from_walks
from papara_py.phylo.encoding import alphabet_of
from papara_py.phylo.residues import (
    GAP_MARK,
    GAP_RESIDUE,
    NO_RESIDUE,
    residue_index_table,
)

#: Work-items per work-group: four NVIDIA warps.
WORK_GROUP = 128


class GpuTracer:
    """Aligns reads to their edges on one OpenCL device; safe to call from several threads (each
    call has buffers of its own; the device runs their launches side by side or in turn).

    memory_bytes: device memory the move bytes of one launch may take (default: an eighth of the
    device's memory, within its largest buffer), beside what the scoring's band rows take.
    """

    def __init__(self, device: DeviceInfo, memory_bytes: int | None = None) -> None:
        self.device = device
        self.context = shared_context(device.cl_device)
        self.queue = cl.CommandQueue(self.context, device.cl_device)
        self.memory_bytes = int(memory_bytes or min(device.max_alloc_bytes, device.global_mem_bytes // 8))
        self.device_cells = 0
        self._lock = threading.Lock()

    def align_many(self, codes: np.ndarray, residues: np.ndarray, offsets: np.ndarray, edge_slot: np.ndarray,
                   profiles: np.ndarray, params: ScoringParams, family: np.ndarray | None = None,
                   costs: ColumnCosts | None = None, gap: int = ord("-"),
                   bonus: tuple[np.ndarray, np.ndarray, int] | None = None):
        """`model.traceback.align_many` on the device: the same arguments (each read 0 < n < m;
        `costs` before `gap`, no `near`; `bonus`, the nearest-sequence bonus, as there), the same
        (scores int32, starts int32, CIGAR strings, aligned rows uint8 [reads, m]).

        Raises ValueError where the longest read's cells could reach the kernel's int range
        (the caller then traces back on the CPU), and, as the host traceback, where a read code
        has no row in `costs` (or a cost exceeds `params.column_cost_bound()`)."""
        offsets = np.asarray(offsets, np.int64)
        lengths = np.diff(offsets)
        count, m = lengths.size, profiles.shape[1]
        if count and not (0 < lengths.min() and lengths.max() < m):
            raise ValueError(f"read lengths must be in 1..{m - 1} to be aligned to {m} columns")
        if count and params.trace_bound(int(lengths.max())) >= INF32:
            raise ValueError(f"scores of {int(lengths.max())}-residue reads may exceed the GPU's 32-bit range "
                             f"with these penalties")
        alphabet = alphabet_of(profiles)
        max_ops = int(lengths.max()) + m if count else 1
        walks = np.zeros((count, max_ops), np.uint8)
        walk_lengths = np.zeros(count, np.int32)
        scores = np.zeros(count, np.int32)
        starts = np.zeros(count, np.int32)
        if count:
            states = np.ascontiguousarray(profiles, alphabet.dtype)
            near = profile_near(states, family)
            codes = np.asarray(codes, alphabet.dtype)
            rows = None if costs is None else self._cost_rows(codes, offsets, costs)
            if bonus is not None:
                reference, tips, amount = bonus
                tips = np.asarray(tips, np.int32).reshape(count, -1)  # [reads, nearest rows]
            program = built_program(self.context, self.device.cl_device, "band_trace.cl",
                                    (f"-DPROF_BITS={alphabet.dtype.itemsize * 8}", f"-DSTATE_BITS={alphabet.n_states}",
                                     *(("-DCOLUMN_COSTS=1",) if costs is not None else ()),
                                     *self._bonus_options(None if bonus is None else tips.shape[1])))
            if bonus is not None:  # (reference buffer, its tips, each read's tips, amount, read residue indices)
                bonus = (self._upload(np.ascontiguousarray(reference)), reference.shape[1], tips, amount,
                         residue_index_table(alphabet)[residues])
            states_buf, near_buf = self._upload(states), self._upload(near)
            table = None if costs is None else (self._upload(device_table(costs, params, m)), costs.codes.size)
            for launch in self._launches(lengths, np.asarray(edge_slot), m, params.band_margin):
                self._run(program, launch, states_buf, near_buf, table, bonus, m, codes, rows, offsets, lengths,
                          edge_slot, params, max_ops, walks, walk_lengths, scores, starts)
            with self._lock:
                self.device_cells += int((lengths * (m - lengths + 1)).sum())
        return alignments_from_walks(walks, walk_lengths, scores, starts, residues, offsets, m, gap)

    @staticmethod
    def _cost_rows(codes: np.ndarray, offsets: np.ndarray, costs: ColumnCosts) -> np.ndarray:
        """Each code's cost table row (ColumnCosts.rows_of), uint8 beside `codes`: the reads' codes
        checked before any launch (ValueError, as the host traceback raises), the rest row 0."""
        rows = np.zeros(codes.size, np.uint8)
        rows[offsets[0]:offsets[-1]] = costs.rows_of(codes[offsets[0]:offsets[-1]])
        return rows

    def _launches(self, lengths: np.ndarray, edge_slot: np.ndarray, m: int, margin: int) -> list[np.ndarray]:
        """Read indices per launch, longest first and reads of one length by edge, each launch's
        grid of move bytes (its longest read's rows x its shortest read's offsets per read)
        within `memory_bytes` (at least one read per launch).

        By edge: the work-items of a warp then mostly read the same profile, so its element
        loads touch a few cache lines instead of one per work-item (the kernel's bound)."""
        order = np.lexsort((edge_slot, -lengths))
        widths = frame_width(lengths[order], m, margin)  # the frame's columns (band_trace.cl); nondecreasing
        launches, begin = [], 0
        while begin < order.size:
            # the grid of reads begin..end-1 grows with end: the longest read x the last one's width
            grid = int(lengths[order[begin]]) * widths[begin:] * np.arange(1, order.size - begin + 1)
            end = begin + max(1, int(np.searchsorted(grid, self.memory_bytes, side="right")))
            launches.append(order[begin:end])
            begin = end
        return launches

    @staticmethod
    def _bonus_options(nearest_rows: int | None) -> tuple[str, ...]:
        """band_trace.cl's build options for the nearest-sequence bonus over `nearest_rows` rows a
        read (None: no bonus, no options)."""
        if nearest_rows is None:
            return ()
        return ("-DNEAREST_BONUS=1", f"-DNEAREST_ROWS={nearest_rows}", f"-DNO_RESIDUE={NO_RESIDUE}",
                f"-DGAP_RESIDUE={GAP_RESIDUE}", f"-DGAP_MARK={GAP_MARK}u")

    def _run(self, program, reads, states_buf, near_buf, table, bonus, m, codes, rows, offsets, lengths, edge_slot,
             params, max_ops, walks, walk_lengths, scores, starts) -> None:
        """One launch: the reads `reads` (indices into the batch), results into the batch's arrays.
        table: (cost table buffer, K) and rows: each residue's table row (beside `codes`), or None;
        bonus: (reference [m, tips] on the device, its tip count, each read's nearest tips
        [reads, k], amount, residue indices beside `codes`) or None."""
        n_reads = reads.size
        read_lengths = lengths[reads]
        local_offsets = np.concatenate(([0], np.cumsum(read_lengths))).astype(np.int32)
        gather = np.arange(int(local_offsets[-1])) + np.repeat(offsets[reads] - local_offsets[:-1], read_lengths)
        max_rows, max_width = int(read_lengths.max()), frame_width(int(read_lengths.min()), m, params.band_margin)
        mf = cl.mem_flags
        codes_buf = self._upload(np.ascontiguousarray(codes[gather]))
        rows_buf = None if rows is None else self._upload(rows[gather])
        residues_buf = tips_buf = None
        if bonus is not None:  # the launch's residue indices and nearest tips (band_trace.cl)
            residues_buf = self._upload(bonus[4][gather])
            tips_buf = self._upload(np.ascontiguousarray(bonus[2][reads]))
        table_buf, n_costs = table or (None, 0)
        offsets_buf = self._upload(local_offsets)
        slot_buf = self._upload(np.asarray(edge_slot, np.int32)[reads])
        row_buf = cl.Buffer(self.context, mf.READ_WRITE, 4 * max_width * n_reads)
        moves_buf = cl.Buffer(self.context, mf.READ_WRITE, max_rows * max_width * n_reads)
        ops_buf = cl.Buffer(self.context, mf.WRITE_ONLY, max_ops * n_reads)
        out = [cl.Buffer(self.context, mf.WRITE_ONLY, 4 * n_reads) for _ in range(3)]
        kernel = cl.Kernel(program, "band_trace")
        i32 = np.int32
        kernel.set_args(states_buf, near_buf, i32(m), codes_buf, offsets_buf, slot_buf, i32(n_reads),
                        i32(max_width), row_buf, moves_buf, i32(max_ops), ops_buf, *out,
                        i32(params.mismatch), i32(params.cgap), i32(params.gap_open + params.gap_extend),
                        i32(params.gap_extend), i32(params.insertion), i32(params.near_mismatch), i32(INF32),
                        rows_buf, table_buf, i32(n_costs), residues_buf, bonus[0] if bonus else None,
                        i32(bonus[1] if bonus else 0), tips_buf, i32(bonus[3] if bonus else 0),
                        i32(params.band_margin), i32(params.excursion_cost))
        done = cl.enqueue_nd_range_kernel(self.queue, kernel, (-(-n_reads // WORK_GROUP) * WORK_GROUP,),
                                          (WORK_GROUP,))
        wait_sleeping(self.queue, done)
        launch_walks = np.empty((n_reads, max_ops), np.uint8)
        launch_counts, launch_scores, launch_starts = (np.empty(n_reads, np.int32) for _ in range(3))
        for host, buffer in ((launch_walks, ops_buf), (launch_counts, out[0]), (launch_scores, out[1]),
                             (launch_starts, out[2])):
            cl.enqueue_copy(self.queue, host, buffer)
        walks[reads], walk_lengths[reads], scores[reads], starts[reads] = (
            launch_walks, launch_counts, launch_scores, launch_starts)
        # every buffer above is held until here, after its last command completed (engine/gpu.py:
        # releasing one in use makes NVIDIA's runtime spin a core until the queue drains)
        del codes_buf, rows_buf, residues_buf, tips_buf, offsets_buf, slot_buf, row_buf, moves_buf, ops_buf, out

    def location_scores(self, codes: np.ndarray, offsets: np.ndarray, which: np.ndarray, ref_codes: np.ndarray,
                        ref_offsets: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        """The location check's scoring pass on this device (engine/gpu_location.py), its launches'
        cells within `memory_bytes`."""
        return location_scores(self.context, self.queue, self.device.cl_device, self.memory_bytes, codes, offsets,
                               which, ref_codes, ref_offsets, matrix)

    def _upload(self, host: np.ndarray) -> cl.Buffer:
        return upload(self.context, self.queue, host)

