"""io/chunks.py: chunks compressed on threads are the chunks HDF5 writes itself, byte for byte,
and read back through HDF5's own filters (which verify the fletcher32 checksum)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.io.chunks import fletcher32, write_compressed


def hdf5_chunks(path, chunks, data, level, cuts=(), rng=None):
    """Every chunk of `data` as HDF5 writes it (gzip `level`, fletcher32, one write) and as
    `write_compressed` writes it in pieces (rows cut at `cuts`, written in row order or, given
    `rng`, shuffled, into a dataset grown to each piece's end, as the run writer grows
    /reads/aligned)."""
    bounds = [0, *sorted(set(cuts)), len(data)]
    pieces = [(a, b) for a, b in zip(bounds, bounds[1:]) if a < b]
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data.shape, dtype=data.dtype, chunks=chunks, compression="gzip",
                         compression_opts=level, fletcher32=True, data=data)
        ours = f.create_dataset("ours", (0, *data.shape[1:]), dtype=data.dtype, chunks=chunks, compression="gzip",
                                compression_opts=level, fletcher32=True, maxshape=(None, *data.shape[1:]))
        for piece in (rng.permutation(len(pieces)) if rng is not None else range(len(pieces))):
            a, b = pieces[piece]
            if ours.shape[0] < b:
                ours.resize(b, axis=0)
            write_compressed(ours, data[a:b], a, threads=3)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["ours"][()], data)  # HDF5 verifies each chunk's checksum
        origins = [f["plain"].id.get_chunk_info(i).chunk_offset for i in range(f["plain"].id.get_num_chunks())]
        assert f["ours"].id.get_num_chunks() == len(origins)
        return [(f["plain"].id.read_direct_chunk(o), f["ours"].id.read_direct_chunk(o)) for o in origins]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), rows=st.integers(1, 300), columns=st.integers(1, 90),
       chunk_rows=st.integers(1, 64), chunk_columns=st.integers(1, 40), level=st.sampled_from([1, 4, 9]),
       cuts=st.lists(st.integers(0, 300), max_size=6), shuffled=st.booleans())
def test_chunks_are_those_hdf5_writes(tmp_path_factory, seed, rows, columns, chunk_rows, chunk_columns, level, cuts,
                                      shuffled):
    """Whole or in pieces cut anywhere (a chunk shared by two pieces goes through HDF5 twice), in
    row order or not: every chunk is the one HDF5 writes for the whole array."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGT-", np.uint8)
    data = letters[rng.integers(0, 2 if seed % 2 else 5, (rows, columns))]  # runs (compress well) or noise
    path = tmp_path_factory.mktemp("chunks") / "c.h5"
    for theirs, ours in hdf5_chunks(path, (min(chunk_rows, rows), min(chunk_columns, columns)), data, level,
                                    [c for c in cuts if c < rows], rng if shuffled else None):
        assert ours == theirs


@given(data=st.binary(max_size=2000))
def test_fletcher32_is_hdf5s(data):
    """The checksum HDF5 appends to a chunk (stored uncompressed: the chunk's bytes, then the
    checksum little-endian), odd lengths and every 360-word fold included."""
    assert fletcher32(data) == reference_fletcher32(data)


def reference_fletcher32(data: bytes) -> int:
    """H5_checksum_fletcher32 (src/H5checksum.c), line for line."""
    sum1 = sum2 = 0
    words, at = len(data) // 2, 0
    while words:
        block = min(words, 360)
        words -= block
        for _ in range(block):
            sum1 = (sum1 + ((data[at] << 8) | data[at + 1])) & 0xFFFFFFFF
            at += 2
            sum2 = (sum2 + sum1) & 0xFFFFFFFF
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    if len(data) % 2:
        sum1 = (sum1 + (data[at] << 8)) & 0xFFFFFFFF
        sum2 = (sum2 + sum1) & 0xFFFFFFFF
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    return (sum2 << 16) | sum1


def test_uncompressed_fletcher32_chunk_matches(tmp_path):
    """The reference implementation above is HDF5's: a fletcher32-only chunk is the raw bytes and
    their checksum."""
    data = np.frombuffer(bytes(range(256)) * 3 + b"x", np.uint8)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("d", data.shape, dtype=np.uint8, chunks=data.shape, fletcher32=True, data=data)
    with h5py.File(tmp_path / "f.h5", "r") as f:
        _, raw = f["d"].id.read_direct_chunk((0,))
    assert raw[:-4] == data.tobytes()
    assert int.from_bytes(raw[-4:], "little") == reference_fletcher32(data.tobytes())


def test_refuses_a_dataset_of_other_filters(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        d = f.create_dataset("d", (4, 4), dtype=np.uint8, chunks=(2, 2), compression="gzip", shuffle=True,
                             fletcher32=True)
        with pytest.raises(ValueError, match="not a gzip"):
            write_compressed(d, np.zeros((4, 4), np.uint8))
