"""The run file's writer (io/chunks.py, io/strings.py, run/writers.py): /reads/aligned compressed
on a thread pool and written chunk by chunk, the string fields handed to HDF5 as C strings, and
the rows made without a Python object per read. What h5py reads back must be what h5py's own
writes of the same arrays give (scripts/bench_writer.py), and damage to a chunk
written so must be refused."""

from __future__ import annotations

import zlib
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import h5py
import numpy as np
import pytest

import papara_py.run.writers as writers
from papara_py.cli import main
from papara_py.errors import InputError
from papara_py.io.checksums import string_crc32
from papara_py.io.chunks import ChunkStream, filtered_chunk
from papara_py.io.jit import fletcher32
from papara_py.io.paths import alignment_forms
from papara_py.io.reads import STATUSES
from papara_py.io.run_file import RunFile
from papara_py.io.run_writer import CHECKSUMS, run_writer
from papara_py.io.strings import PackedStrings, write_strings
from papara_py.model.posterior import pp_digits

ROOT = Path(__file__).resolve().parents[2]


def aligned_dataset(handle: h5py.File, name: str, m: int, chunk_rows: int = 256, level: int = 4) -> h5py.Dataset:
    return handle.create_dataset(name, (0, m), np.uint8, maxshape=(None, m), chunks=(chunk_rows, m),
                                 compression="gzip", compression_opts=level, fletcher32=True, fillvalue=ord("-"))


def rows_like_reads(rng, n: int, m: int) -> np.ndarray:
    rows = np.full((n, m), ord("-"), np.uint8)
    width = min(50, m // 2)
    for q in range(n):
        start = int(rng.integers(0, m - width))
        rows[q, start:start + width] = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, width)]
    return rows


def hdf5_own_bytes_match_zlib(tmp_path) -> bool:
    """Whether this HDF5's deflate makes zlib.compress's bytes (both link a zlib; they may differ)."""
    with h5py.File(tmp_path / "probe.h5", "w") as handle:
        data = rows_like_reads(np.random.default_rng(1), 16, 40)
        dataset = handle.create_dataset("d", data=data, chunks=(16, 40), compression="gzip", compression_opts=4)
        return dataset.id.read_direct_chunk((0, 0))[1] == zlib.compress(data.tobytes(), 4)


@pytest.mark.parametrize("size", [1, 2, 3, 719, 720, 721, 1440, 5001, 70_000])
def test_fletcher32_is_hdf5s(tmp_path, size):
    """The checksum HDF5's fletcher32 filter appends (no other filter: the raw bytes before it), for
    even and odd sizes around the 360-word folds."""
    data = np.random.default_rng(size).integers(0, 256, size).astype(np.uint8)
    data[: size // 3] = 255  # long runs of large words: the folds matter
    with h5py.File(tmp_path / "f.h5", "w") as handle:
        dataset = handle.create_dataset("d", data=data, chunks=(size,), fletcher32=True)
        stored = dataset.id.read_direct_chunk((0,))[1]
    assert stored[:-4] == data.tobytes()
    assert int.from_bytes(stored[-4:], "little") == int(fletcher32(data))


def test_chunk_stream_matches_h5pys_own_writes(tmp_path):
    """The same rows, in the pieces a run gives them (rows skipped between, a final partial chunk,
    a flush then more rows completing that chunk), through ChunkStream and through h5py: the same
    values read back (HDF5 verifying every fletcher32), and the same stored bytes where this
    HDF5's zlib and Python's agree."""
    rng = np.random.default_rng(7)
    m, r = 57, 16
    pieces = [(0, 5), (5, 40), (45, 3), (100, 17), (117, 16), (133, 1)]  # (first row, rows); gaps at 48-99
    blocks = [(first, rows_like_reads(rng, n, m)) for first, n in pieces]
    with h5py.File(tmp_path / "stream.h5", "w") as a, h5py.File(tmp_path / "h5py.h5", "w") as b, \
            ThreadPoolExecutor(2) as pool:
        streamed, plain = aligned_dataset(a, "aligned", m, r), aligned_dataset(b, "aligned", m, r)
        stream = ChunkStream(streamed, pool)
        for index, (first, rows) in enumerate(blocks):
            stream.put(first, rows)
            plain.resize(first + len(rows), axis=0)
            plain[first:first + len(rows)] = rows
            if index == 3:
                stream.flush()  # the partial chunk written, then completed by the next rows
        stream.flush()
    with h5py.File(tmp_path / "stream.h5") as a, h5py.File(tmp_path / "h5py.h5") as b:
        assert a["aligned"].shape == b["aligned"].shape == (134, m)
        assert np.array_equal(a["aligned"][:], b["aligned"][:])
        assert np.all(a["aligned"][48:96] == ord("-"))
        assert a["aligned"].id.get_num_chunks() == b["aligned"].id.get_num_chunks() == 6  # rows 48-95: none
        if hdf5_own_bytes_match_zlib(tmp_path):
            for i in range(6):
                info = a["aligned"].id.get_chunk_info(i)
                assert (a["aligned"].id.read_direct_chunk(info.chunk_offset)
                        == b["aligned"].id.read_direct_chunk(info.chunk_offset))


def test_rows_go_in_order(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as handle, ThreadPoolExecutor(1) as pool:
        stream = ChunkStream(aligned_dataset(handle, "aligned", 8, 4), pool)
        stream.put(10, np.zeros((3, 8), np.uint8))
        with pytest.raises(ValueError, match="in order"):
            stream.put(5, np.zeros((1, 8), np.uint8))
        stream.flush()


def test_a_damaged_direct_chunk_is_refused(tmp_path):
    """A bit flipped in a chunk the pool compressed: HDF5's fletcher32 check fails on read, and
    RunFile refuses the file as damaged."""
    path = tmp_path / "run.h5"
    n, m = 600, 300
    rows = rows_like_reads(np.random.default_rng(3), n, m)
    with run_writer(path, m, 2, "test", parallel=True) as writer:
        writer.write_reference(["a", "b"], np.full((2, m), ord("A"), np.uint8), "(a,b);")
        writer.write_reads(0, {"names": [f"r{q}" for q in range(n)], "status": ["aligned"] * n,
                               "cigar": ["50M"] * n, "strand": ["+"] * n, "sequence": ["A" * 50] * n,
                               "pp": ["*" * 50] * n, "aligned": rows})
        writer.set_read_count(n)
        writer.write_run_record({"parameters": {}})
    with RunFile(path) as run:
        assert np.array_equal(np.array(list(run.aligned_rows(np.arange(n)))), rows)
    with h5py.File(path) as handle:
        info = handle["reads/aligned"].id.get_chunk_info(1)
    with open(path, "r+b") as raw:
        raw.seek(info.byte_offset + info.size // 2)
        byte = raw.read(1)[0]
        raw.seek(-1, 1)
        raw.write(bytes([byte ^ 0x10]))
    with RunFile(path) as run, pytest.raises(InputError, match="damaged or incomplete.*/reads/aligned cannot be read"):
        list(run.aligned_rows(np.arange(n)))


STRING_CASES = [
    ["", "", ""],
    ["a", "", "abc" * 300, "x"],
    ["read/1", "wérld", "名前", "ok"],
    [f"r{q}" for q in range(2_000)],
]


@pytest.mark.parametrize("values", STRING_CASES)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_strings_read_back_as_h5pys_object_writes(tmp_path, values, as_bytes):
    given = [v.encode() for v in values] if as_bytes else values
    with h5py.File(tmp_path / "f.h5", "w") as handle:
        ours = handle.create_dataset("ours", (len(values) + 3,), h5py.string_dtype(), maxshape=(None,), chunks=(64,))
        theirs = handle.create_dataset("theirs", (len(values) + 3,), h5py.string_dtype(), maxshape=(None,),
                                       chunks=(64,))
        packed = PackedStrings.of(given)
        write_strings(ours, 2, packed)
        theirs[2:2 + len(values)] = np.array(given, dtype=object)
        assert list(ours[:]) == list(theirs[:])
        assert list(ours.asstr()[2:2 + len(values)]) == values
        assert np.array_equal(packed.crc32(), string_crc32(values))


def test_a_string_with_a_nul_is_refused_as_before(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as handle:
        dataset = handle.create_dataset("s", (2,), h5py.string_dtype())
        with pytest.raises(ValueError, match="NUL"):
            write_strings(dataset, 0, PackedStrings.of(["ok", "a\0b"]))


def test_packed_strings_without_numba_agree(monkeypatch):
    """The numpy paths (a process without numba: a merge, a small export) give the kernels' bytes."""
    import sys

    values = ["", "abc", "wérld", "x" * 70]
    packed = PackedStrings.of(values)
    fast = packed.c_strings(), packed.crc32()
    monkeypatch.delitem(sys.modules, "numba")
    slow = packed.c_strings(), packed.crc32()
    assert np.array_equal(fast[0][0], slow[0][0]) and np.array_equal(fast[0][1], slow[0][1])
    assert fast[0][2] == slow[0][2] is False
    assert np.array_equal(fast[1], slow[1])


# --- a real run against the writer it replaced ------------------------------------------------


def reference_rows(records: list, n_reads: int, m: int, k: int) -> dict[str, np.ndarray]:
    """Every per-read dataset of a run as the writer before this one made it (one Python string
    per read; alignment_forms' rows and CIGARs; unwritten rows left at the fill values), from the
    batches the run wrote (`records`: (first row, stretch, reverse, candidates, decoded))."""
    out = {"names": np.full(n_reads, "", object), "status": np.full(n_reads, "", object),
           "strand": np.full(n_reads, "", object), "cigar": np.full(n_reads, "", object),
           "sequence": np.full(n_reads, "", object), "pp": np.full(n_reads, "", object),
           "aligned": np.full((n_reads, m), ord("-"), np.uint8)}
    for name in ("best_edge", "score", "start"):
        out[name] = np.full(n_reads, -1, np.int32)
    out["candidates/edge"] = np.full((n_reads, k), -1, np.int32)
    out["candidates/score"] = np.full((n_reads, k), -1, np.int32)
    out["candidates/weight"] = np.zeros((n_reads, k), np.float32)
    for first, stretch, reverse, candidates, decoded in records:
        reads = stretch.reads
        rows_of = first + np.arange(len(reads))
        text = reads.residues.tobytes()
        out["names"][rows_of] = reads.names
        out["status"][rows_of] = np.array(STATUSES, dtype=object)[stretch.statuses]
        out["sequence"][rows_of] = [text[a:b].decode() for a, b in pairwise(reads.offsets.tolist())]
        out["strand"][rows_of] = "+"
        if decoded is None:
            continue
        at = first + stretch.alignable
        starts, cigars, rows = alignment_forms(decoded.columns, decoded.offsets, decoded.residues, m)
        out["strand"][at] = np.where(reverse, "-", "+")
        out["cigar"][at] = cigars
        if decoded.pp is not None:
            pp = pp_digits(decoded.pp).tobytes().decode()
            out["pp"][at] = [pp[a:b] for a, b in pairwise(decoded.offsets.tolist())]
        out["aligned"][at] = rows
        out["start"][at] = starts
        out["best_edge"][at], out["score"][at] = candidates.edge[:, 0], candidates.score[:, 0]
        out["candidates/edge"][at] = candidates.edge
        out["candidates/score"][at] = np.where(candidates.edge >= 0, candidates.score, -1)
        out["candidates/weight"][at] = decoded.weights / np.float32(writers.PROB_ONE)
    return out


@pytest.mark.parametrize("example, extra", [("example", ["--batch-reads", "40"]), ("protein", [])])
def test_a_real_run_writes_what_the_old_writer_wrote(tmp_path, monkeypatch, example, extra):
    """data/example and data/protein through the CLI (in this process, the batches recorded on
    their way to the writer): every per-read dataset equals what the writer before the chunk
    pool and the C strings wrote (`reference_rows`), its checksums are the strings' CRC-32s, and
    RunFile reads the whole file back, checking them."""
    records = []
    original_stretch = writers.write_stretch

    def recording(writer, stretch, chunk, reverse=None, batch=None):
        records.append([stretch.first, stretch, reverse])
        original_stretch(writer, stretch, chunk, reverse, batch)

    decoded_of = {}
    original_batch = writers.write_batch

    def recording_batch(writer, batch, candidates, decoded, m):
        decoded_of[int(batch[0])] = candidates, decoded
        return original_batch(writer, batch, candidates, decoded, m)

    import papara_py.run.stages as stages

    monkeypatch.setattr(stages, "write_stretch", recording)
    monkeypatch.setattr(stages, "write_batch", recording_batch)
    data = ROOT / "data" / example
    output = tmp_path / "run.h5"
    alignment = data / ("ref.phy" if (data / "ref.phy").exists() else "ref.fasta")
    assert main(["-t", str(data / "tree.nwk"), "-s", str(alignment), "-r", str(data / "reads.fa"), "-o", str(output),
                 "--quiet", "--device", "cpu", *extra]) == 0
    full = []
    for first, stretch, reverse in records:
        key = first + int(stretch.alignable[0]) if len(stretch.alignable) else None
        candidates, decoded = decoded_of.get(key, (None, None))
        full.append((first, stretch, reverse, candidates, decoded))
    with h5py.File(output) as handle:
        n_reads, m = handle["reads/aligned"].shape
        k = handle["reads/candidates/edge"].shape[1]
        expected = reference_rows(full, n_reads, m, k)
        assert len(records) > (1 if example == "example" else 0)
        for name, values in expected.items():
            dataset = handle[f"reads/{name}"]
            if dataset.dtype == object:
                found = dataset.asstr()[:]
                assert list(found) == list(values), name
                assert np.array_equal(handle[f"{CHECKSUMS}/reads/{name}"][:], string_crc32(list(values))), name
            else:
                assert dataset.dtype == values.dtype and np.array_equal(dataset[:], values), name
    with RunFile(output) as run:
        for name in expected:
            if name != "aligned":
                run.column(name)
        assert np.array_equal(np.array(list(run.aligned_rows(np.arange(run.n_reads)))), expected["aligned"])
