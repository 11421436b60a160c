"""Rows of a gzip-compressed, fletcher32-checked HDF5 dataset, compressed on a thread pool.

The run file's /reads/aligned holds a row of m bytes for every read (a GB for a million reads of
the rpsS reference) in chunks of 256 rows, gzip level 4 then HDF5's fletcher32 checksum. Written
through h5py, HDF5 compressed every chunk on the writer thread, one after the other, and most of
the writer's time went there (scripts/bench_writer.py). `ChunkStream` takes the rows
in order instead, compresses each whole chunk on a pool of threads (zlib releases the GIL; the
checksum is a GIL-free numba loop) and hands the filtered bytes to HDF5 as they are, with
`write_direct_chunk`: exactly the bytes HDF5's own filters make (zlib's `compress` at the
dataset's level, then H5_checksum_fletcher32 appended little-endian, `filtered_chunk`), so any
HDF5 reader decodes and verifies them, and h5py reads back what it would have written itself.

Rows are final once given: `put` takes rows at or after the last one given (rows skipped are the
dataset's fill value, as rows never written are; whole chunks of them are not written at all).
A chunk's last rows wait in `carry` until the chunk is whole; `flush` writes a partial one
padded with the fill value (HDF5 pads an edge chunk so) and every pending chunk, and rows put
after it complete that chunk, which is then written again, whole.
"""

from __future__ import annotations

import os
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import h5py
import numpy as np

#: Chunks compressed by one task of the pool (a task of ~2 MB of rows: few enough tasks that
#: their Python overhead is small, enough that a batch's chunks spread over the threads).
CHUNKS_PER_TASK = 8
#: Tasks in flight at most (~64 MB of rows at 8 chunks of 256 x 1,072) before `put` waits for the oldest.
MAX_TASKS = 32
#: Threads compressing, at most.
MAX_THREADS = 4


def pool_threads() -> int:
    """Threads for a compression pool: a quarter of the CPUs this process may use, 1 to
    MAX_THREADS (a 1M-read run compresses ~1 GB in ~40 s: ~30 MB/s, a fraction of one core's
    rate; more threads serve the last batch, which nothing overlaps)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cpus // 4))


def filtered_chunk(rows: np.ndarray, level: int) -> bytes:
    """A chunk's bytes as HDF5's deflate (`level`) and fletcher32 filters store them."""
    from papara_py.io.jit import fletcher32

    packed = zlib.compress(rows, level)
    return packed + int(fletcher32(np.frombuffer(packed, np.uint8))).to_bytes(4, "little")


def _filtered_chunks(blocks: list[np.ndarray], level: int) -> list[bytes]:
    return [filtered_chunk(block, level) for block in blocks]


def stream_filters(dataset: h5py.Dataset) -> int | None:
    """The gzip level of a dataset whose filters are exactly gzip then fletcher32 (what
    `ChunkStream` reproduces), with rows of whole chunks across; None for any other."""
    plist = dataset.id.get_create_plist()
    filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    if (len(filters) != 2 or filters[0][0] != h5py.h5z.FILTER_DEFLATE or filters[1][0] != h5py.h5z.FILTER_FLETCHER32
            or dataset.chunks is None or dataset.ndim != 2 or dataset.chunks[1] != dataset.shape[1]
            or dataset.dtype != np.uint8):
        return None
    return int(filters[0][2][0])


class ChunkStream:
    """Rows appended in order to a 2-D uint8 `dataset` (maxshape (None, m), chunks (R, m), gzip
    then fletcher32: `stream_filters`), whole chunks filtered on `pool` and written directly.
    Every h5py call is made by the thread calling `put` and `flush`."""

    def __init__(self, dataset: h5py.Dataset, pool: ThreadPoolExecutor) -> None:
        level = stream_filters(dataset)
        if level is None:
            raise ValueError(f"{dataset.name}: not a dataset of gzip then fletcher32 over whole rows")
        self.dataset, self.pool, self.level = dataset, pool, level
        self.chunk_rows, self.m = dataset.chunks
        self.fill = dataset.fillvalue
        self.end = 0  # rows given so far
        self.carry = np.full((self.chunk_rows, self.m), self.fill, np.uint8)  # the chunk of row `end`, rows before it
        self._pending: deque[tuple[list[int], Future]] = deque()  # (chunks' first rows, their filtered bytes)

    def put(self, first: int, rows: np.ndarray) -> None:
        """Rows [first, first + len(rows)) (first >= `end`; rows between are the fill value). The
        array is read until its chunks are compressed: it must not change meanwhile."""
        if first < self.end:
            raise ValueError(f"{self.dataset.name}: rows {first}.. given after row {self.end - 1}; rows go in order")
        rows = np.ascontiguousarray(rows, np.uint8)
        end = first + len(rows)
        if end == first:
            return
        if self.dataset.shape[0] < end:
            self.dataset.resize(end, axis=0)
        r = self.chunk_rows
        whole: list[tuple[int, np.ndarray]] = []
        position = self.end
        while position < end:
            lo = position - position % r
            hi = min(lo + r, end)
            if position == lo and hi == lo + r and first <= lo:  # a whole chunk of the given rows
                whole.append((lo, rows[lo - first:lo - first + r]))
            elif position == lo and hi == lo + r and lo + r <= first:  # a whole chunk of fill: not written
                pass
            else:  # into the carry: fill up to `first`, then the given rows
                gap_end = min(max(first, position), hi)
                self.carry[position - lo:gap_end - lo] = self.fill
                if gap_end < hi:
                    self.carry[gap_end - lo:hi - lo] = rows[gap_end - first:hi - first]
                if hi == lo + r:
                    whole.append((lo, self.carry))
                    self.carry = np.full((r, self.m), self.fill, np.uint8)
            position = hi
        self.end = end
        for at in range(0, len(whole), CHUNKS_PER_TASK):
            group = whole[at:at + CHUNKS_PER_TASK]
            self._pending.append(([lo for lo, _ in group],
                                  self.pool.submit(_filtered_chunks, [block for _, block in group], self.level)))
        self._write(wait=False)

    def flush(self) -> None:
        """Every chunk given so far written, the last one padded with the fill value where partial."""
        lo = self.end - self.end % self.chunk_rows
        if lo < self.end:
            partial = self.carry.copy()
            partial[self.end - lo:] = self.fill
            self._pending.append(([lo], self.pool.submit(_filtered_chunks, [partial], self.level)))
        self._write(wait=True)

    def _write(self, wait: bool) -> None:
        """The filtered chunks written in order: those done (and the oldest while more than
        MAX_TASKS are pending), or, with `wait`, all."""
        while self._pending and (wait or len(self._pending) > MAX_TASKS or self._pending[0][1].done()):
            firsts, future = self._pending.popleft()
            for first, data in zip(firsts, future.result()):
                self.dataset.id.write_direct_chunk((first, 0), data, 0)

    def cancel(self) -> None:
        """Pending chunks dropped (the file is being discarded)."""
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
