"""The location check's scoring pass on an OpenCL device (kernels/location_score.cl).

The check (model/location.py, DESIGN.md 5) scores every checked read against every reference
sequence: tips x sequence length x read length cells a read, which on the host's threads cost a
GPU run as much as its scoring and traceback together where reads are far from every reference
sequence (BENCHMARKS.md, "The location check"). On the device they are one launch per slice of
reads; `location_scores` gives the host's `tip_scores` bit for bit (integer arithmetic, the same
recurrence), and the host then traces each read on its best sequence as before.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from papara_py.engine.gpu import built_program, wait_sleeping
from papara_py.model.location import GAP_EXTEND, GAP_OPEN

#: Work-items per work-group.
WORK_GROUP = 128


def location_scores(context: cl.Context, queue: cl.CommandQueue, device: cl.Device, memory_bytes: int,
                    codes: np.ndarray, offsets: np.ndarray, which: np.ndarray, ref_codes: np.ndarray,
                    ref_offsets: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """int32 [len(which), tips]: each checked read's best score against each reference sequence
    (model/location.relocate's `device_scores`, whose arguments these are after the device's
    own). The reads go in launches whose cells (3 ints per residue of the longest read, per pair)
    fit `memory_bytes`, at least one read a launch."""
    tips = ref_offsets.size - 1
    out = np.zeros((which.size, tips), np.int32)
    if not which.size or not tips:
        return out
    lengths = (offsets[which + 1] - offsets[which]).astype(np.int64)
    program = built_program(context, device, "location_score.cl",
                            (f"-DGAP_OPEN={GAP_OPEN}", f"-DGAP_EXTEND={GAP_EXTEND}"))
    seqs_buf = upload(context, queue, np.ascontiguousarray(ref_codes, np.uint8))
    seq_start_buf = upload(context, queue, np.asarray(ref_offsets, np.int32))
    matrix_buf = upload(context, queue, np.ascontiguousarray(matrix, np.int32))
    per_launch = max(1, memory_bytes // (12 * tips * max(1, int(lengths.max()))))
    for begin in range(0, which.size, per_launch):
        _launch(context, queue, program, codes, offsets, which[begin:begin + per_launch], seqs_buf, seq_start_buf,
                tips, matrix_buf, matrix.shape[0], out[begin:begin + per_launch])
    del seqs_buf, seq_start_buf, matrix_buf  # held until every launch above completed (engine/gpu.py)
    return out


def _launch(context, queue, program, codes, offsets, reads, seqs_buf, seq_start_buf, tips, matrix_buf, width,
            out) -> None:
    """One launch: `reads` (indices into the batch) against every sequence, scores into `out`."""
    lengths = (offsets[reads + 1] - offsets[reads]).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    gather = np.arange(int(starts[-1])) + np.repeat(offsets[reads] - starts[:-1], lengths)
    pairs = reads.size * tips
    longest = max(1, int(lengths.max()))
    reads_buf = upload(context, queue, np.ascontiguousarray(codes[gather], np.uint8))
    start_buf = upload(context, queue, starts)
    cells_buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, 12 * longest * pairs)
    out_buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4 * pairs)
    kernel = cl.Kernel(program, "location_scores")
    kernel.set_args(reads_buf, start_buf, seqs_buf, seq_start_buf, np.int32(tips), matrix_buf, np.int32(width),
                    cl.LocalMemory(4 * width * width), cells_buf, np.int32(pairs), out_buf)
    done = cl.enqueue_nd_range_kernel(queue, kernel, (-(-pairs // WORK_GROUP) * WORK_GROUP,), (WORK_GROUP,))
    wait_sleeping(queue, done)
    host = np.empty(pairs, np.int32)
    cl.enqueue_copy(queue, host, out_buf)
    out[:] = host.reshape(reads.size, tips)
    del reads_buf, start_buf, cells_buf, out_buf  # held until the launch completed (engine/gpu.py)


def upload(context: cl.Context, queue: cl.CommandQueue, host: np.ndarray) -> cl.Buffer:
    """A read-only device copy of `host` (at least one byte: OpenCL has no empty buffers), written
    on `queue`; the GPU traceback's uploads too (engine/gpu_trace.py)."""
    buffer = cl.Buffer(context, cl.mem_flags.READ_ONLY, max(1, host.nbytes))
    cl.enqueue_copy(queue, buffer, host)
    return buffer
