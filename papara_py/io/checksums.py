"""SHA-256 of input files: the run record stores them, and shards and prepared profiles are
checked against them (docs/guide.md: Clusters).

Inputs are read once: the parsers (io/inputs.py) feed every byte they read into a `Digest`, so a
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


def string_crc32(values) -> np.ndarray:
    """CRC-32 of each string's UTF-8 bytes (uint32, one per value; a scalar string gives shape ()).

    Run files keep these beside their string datasets: HDF5's own checksum filter (fletcher32,
    used on the numeric datasets) cannot be applied to variable-length data, whose bytes live in
    an unchecked heap, so without them a damaged name or CIGAR would read back as a valid one.
    Many strings are packed once and checked in one GIL-free numba pass (`PackedStrings.crc32`).
    """
    if isinstance(values, (str, bytes)):
        return np.uint32(zlib.crc32(values.encode("utf-8") if isinstance(values, str) else values))
    from papara_py.io.strings import PackedStrings

    return PackedStrings.of(values).crc32()


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
