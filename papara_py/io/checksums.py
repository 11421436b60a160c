"""SHA-256 of input files: the run record stores them, and shards and prepared profiles are
checked against them (docs/guide.md: Clusters).

Inputs are read once: the parsers (io/tree_input.py, alignment_input.py, read_input.py) feed every byte they read into a `Digest`, so a
pipe, a FIFO, process substitution or standard input (`-r -`) is hashed as it is parsed, never
opened a second time (a second read of a pipe saw an empty stream, and of a FIFO waited forever).
`sha256_file` is for files papara-py made itself. `string_crc32` checks the string datasets of
run files (io/run_writer.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import zlib
from typing import BinaryIO

import numpy as np


class Digest:
    """A running SHA-256 of one input, fed by the parser as it reads (`hexdigest` when done)."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.size = 0

    def update(self, data) -> None:
        self._hash.update(data)
        self.size += len(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class _HashingRaw(io.RawIOBase):
    """A raw binary stream that feeds every byte read into a Digest."""

    def __init__(self, raw: BinaryIO, digest: Digest | None) -> None:
        super().__init__()
        self._raw = raw
        self._digest = digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._raw.readinto(buffer)
        if count and self._digest is not None:
            self._digest.update(memoryview(buffer)[:count])
        return count

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


#: The input name that means standard input.
STDIN = "-"


def open_input(source: str, digest: Digest | None = None) -> io.BufferedReader:
    """`source` (a path, or `-` for standard input) for reading once, fed into `digest`."""
    raw = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False) if source == STDIN \
        else open(source, "rb", buffering=0)
    return io.BufferedReader(_HashingRaw(raw, digest), buffer_size=1 << 20)


def drain(stream: BinaryIO) -> None:
    """Read `stream` to its end, so that its digest covers every byte."""
    while stream.read(1 << 20):
        pass


def describe_input(source: str) -> str:
    """How the run record names an input: its absolute path, or `-` (standard input)."""
    return source if source == STDIN else os.path.abspath(source)


def sha256_file(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


#: Strings from which `string_crc32` imports numba for its one-pass kernel (io/jit.py).
_JIT_STRINGS = 100_000


def string_crc32(values) -> np.ndarray:
    """CRC-32 of each string's UTF-8 bytes (uint32, one per value; a scalar string gives shape ()).

    Run files keep these beside their string datasets: HDF5's own checksum filter (fletcher32,
    used on the numeric datasets) cannot be applied to variable-length data, whose bytes live in
    an unchecked heap, so without them a damaged name or CIGAR would read back as a valid one.

    Strings that are all str (or all bytes) and ASCII are joined and checked in one GIL-free
    numba pass, zlib's CRC-32 bit for bit (others one by one): the writer thread computes these
    for five string fields of every read, and one zlib call per string held the GIL for most of
    that time (notebook/BENCHMARKS.md, "Streaming the reads"). Fewer than _JIT_STRINGS strings in a process
    that has not imported numba (an export, a merge, the report reading a small run file) take
    zlib one by one instead: numba's import alone would cost more.
    """
    if isinstance(values, (str, bytes)):
        return np.uint32(zlib.crc32(values.encode("utf-8") if isinstance(values, str) else values))
    values = list(values)
    joined = _joined_ascii(values)
    if joined is None or len(values) < _JIT_STRINGS and "numba" not in sys.modules:
        return np.fromiter((zlib.crc32(v.encode("utf-8") if isinstance(v, str) else v) for v in values),
                           dtype=np.uint32, count=len(values))
    from papara_py.io.jit import crc32_pieces

    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    ends = np.cumsum(lengths)
    return crc32_pieces(np.frombuffer(joined, np.uint8), ends - lengths, ends, _CRC_TABLE)


def _joined_ascii(values: list) -> bytes | None:
    """The values' bytes one after another, where they are all str or all bytes and ASCII (so a
    value's length is its number of bytes); None otherwise."""
    try:
        text = "".join(values)
    except TypeError:
        try:
            data = b"".join(values)
        except TypeError:
            return None
        return data if data.isascii() else None
    return text.encode("ascii") if text.isascii() else None


def _crc_table() -> np.ndarray:
    """The 256 entries of the table-driven CRC-32 (reflected polynomial 0xEDB88320, zlib's)."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1).astype(np.uint32)
    return table


_CRC_TABLE = _crc_table()


def attributes_crc32(attrs) -> int:
    """CRC-32 of an HDF5 attribute set (an h5py AttributeManager) in a canonical form: every
    (name, value) in name order, values as plain Python (bytes decoded, numpy scalars unwrapped).

    The run record lives in attributes, which no HDF5 filter covers; a damaged record would
    otherwise hand exports and the report wrong parameters that still look valid.
    """
    def plain(value):
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
        return value
    items = [[name, plain(attrs[name])] for name in sorted(attrs.keys())]
    return zlib.crc32(json.dumps(items, sort_keys=True, default=str).encode("utf-8"))
