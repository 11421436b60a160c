"""Rows written into a gzip + fletcher32 HDF5 dataset with their chunks compressed on several
threads (`write_compressed`), readable by any HDF5 reader exactly as if HDF5 had compressed them.

HDF5 compresses a dataset's chunks one after another on the writing thread: the 10^5-taxon
reference (180 MB) took about 5.5 s of a run's output stage on one core, and a million reads'
rows in reference columns (/reads/aligned, 1 GB for rpsS) most of the writer thread's time
(docs/performance.md).
Here each chunk goes through the dataset's own filter pipeline by hand, on a thread pool (zlib
releases the GIL): deflate at the dataset's level (zlib.compress, the call HDF5's deflate filter
makes), then HDF5's fletcher32 of the compressed bytes appended little-endian (H5Z_filter_fletcher32
with H5_checksum_fletcher32, src/H5checksum.c in HDFGroup/hdf5), and the result is stored with
`write_direct_chunk`. Edge chunks are padded with the dataset's fill value to the full chunk
shape, as HDF5 stores them; chunks only partly in the rows written go through HDF5. tests/io/test_chunks.py holds the chunks equal, byte for byte, to
those HDF5 writes itself.
"""

from __future__ import annotations

import itertools
import zlib
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

from papara_py.host import affinity_cpus

#: HDF5's fletcher32 folds its sums every 360 16-bit words (they cannot overflow 32 bits then).
_FLETCHER_BLOCK = 360


def fletcher32(data: bytes) -> int:
    """HDF5's H5_checksum_fletcher32 of `data`: 16-bit big-endian words, both sums folded to 16
    bits after every 360 words, then an odd last byte as the high byte of one more word (folded
    again), and a last fold."""
    words = np.frombuffer(data, dtype=">u2", count=len(data) // 2).astype(np.uint64)
    blocks = -(-words.size // _FLETCHER_BLOCK)
    padded = np.zeros((blocks, _FLETCHER_BLOCK), np.uint64)
    padded.reshape(-1)[:words.size] = words
    lengths = np.full(blocks, _FLETCHER_BLOCK, np.uint64)
    if words.size % _FLETCHER_BLOCK:
        lengths[-1] = words.size % _FLETCHER_BLOCK
    # a block of t words w_0 .. w_{t-1} adds sum(w) to sum1 and t x sum1 (before it) +
    # sum over i of (t - i) w_i to sum2; the padding words are 0 and add nothing
    totals = padded.sum(axis=1).tolist()
    weighted = (padded * (lengths[:, None] - np.arange(_FLETCHER_BLOCK, dtype=np.uint64))).sum(axis=1).tolist()
    steps = list(zip(totals, weighted, lengths.tolist()))
    if len(data) % 2:
        steps.append((data[-1] << 8, data[-1] << 8, 1))
    sum1 = sum2 = 0
    for total, weight, count in steps:
        sum2 = (sum2 + count * sum1 + weight) & 0xFFFFFFFF
        sum1 = (sum1 + total) & 0xFFFFFFFF
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    return (sum2 << 16) | sum1


def write_compressed(dataset: h5py.Dataset, data: np.ndarray, start: int = 0, threads: int | None = None) -> None:
    """dataset[start:start + len(data)] = data for a chunked gzip + fletcher32 dataset (no other
    filter): the chunks whose rows lie wholly in the range compressed on `threads` threads
    (default: the CPUs usable) and written directly, the partial ones at its two ends (which
    other writes share) through HDF5, which merges them with what the chunk holds."""
    chunks, level = dataset.chunks, dataset.compression_opts
    end = start + len(data)
    if (chunks is None or dataset.compression != "gzip" or not dataset.fletcher32 or dataset.shuffle
            or dataset.scaleoffset is not None or dataset.shape[1:] != data.shape[1:] or dataset.dtype != data.dtype
            or not 0 <= start <= end <= dataset.shape[0]):
        raise ValueError(f"write_compressed: {dataset.name} is not a gzip + fletcher32 dataset to hold {data.shape} "
                         f"at row {start}")
    rows = chunks[0]
    first, last = -(-start // rows) * rows, end // rows * rows  # the whole chunks' rows: [first, last)
    if first >= last:
        dataset[start:end] = data
        return
    if start < first:
        dataset[start:first] = data[:first - start]
    if last < end:
        dataset[last:end] = data[last - start:]
    fill = dataset.fillvalue

    def compressed(origin: tuple[int, ...]) -> tuple[tuple[int, ...], bytes]:
        at = (origin[0] - start, *origin[1:])
        piece = data[tuple(slice(o, o + size) for o, size in zip(at, chunks))]
        if piece.shape != chunks:  # an edge chunk in the other dimensions: padded as HDF5 stores it
            full = np.full(chunks, fill, data.dtype)
            full[tuple(slice(0, extent) for extent in piece.shape)] = piece
            piece = full
        packed = zlib.compress(np.ascontiguousarray(piece).tobytes(), level)
        return origin, packed + fletcher32(packed).to_bytes(4, "little")

    origins = itertools.product(range(first, last, rows),
                                *[range(0, extent, size) for extent, size in zip(data.shape[1:], chunks[1:])])
    workers = threads or affinity_cpus()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for origin, chunk in pool.map(compressed, origins):
            dataset.id.write_direct_chunk(origin, chunk, 0)
