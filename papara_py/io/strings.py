"""Many strings as one byte buffer, and how the run file's writer hands them to HDF5.

A run writes six string fields for every read (DESIGN 7). Built as one Python str per read and
written through h5py's object arrays, they were most of the writer thread's time and of the GIL
it held: h5py converts each object in turn, holding the GIL (scripts/bench_writer.py).
`PackedStrings` keeps a field as the strings' UTF-8 bytes with each one's start and end: the reads' residues, the CIGARs and the PP lines are born so (no copy, no object per read),
and names become so by one join. Its CRC-32s (the /checksums twins) come from a GIL-free numba
loop, and `write_strings` hands HDF5 the strings as C strings (one buffer, NUL after each, and
their addresses) in one call of HDF5's own H5Dwrite with its variable-length string type, made
through ctypes, which releases the GIL: HDF5 copies them into the file as it does h5py's, and
what reads back is what h5py's object path wrote, string for string.
"""

from __future__ import annotations

import ctypes
import sys
import zlib
from dataclasses import dataclass
from typing import Sequence

import h5py
import numpy as np
from h5py._objects import phil as _phil  # h5py's lock, held around every call into HDF5

#: Strings from which the numba kernels are imported when numba is not loaded yet (io/jit.py).
_JIT_STRINGS = 100_000



def _crc_table() -> np.ndarray:
    """The 256 entries of the table-driven CRC-32 (reflected polynomial 0xEDB88320, zlib's)."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1).astype(np.uint32)
    return table


_CRC_TABLE = _crc_table()

@dataclass(frozen=True)
class PackedStrings:
    """Strings i = 0 .. n - 1 as bytes data[starts[i]:ends[i]] (UTF-8); data uint8, starts and
    ends int64 [n]. Slicing (`part`) and `choose` copy no bytes."""

    data: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def of(cls, values) -> "PackedStrings":
        """Strings from str or bytes values (any iterable; bytes taken as UTF-8): ASCII text is
        joined once, other values are encoded one by one."""
        if isinstance(values, PackedStrings):
            return values
        if isinstance(values, np.ndarray):
            values = values.tolist()
        values = list(values)
        joined = None
        try:
            text = "".join(values)
        except TypeError:
            text = None
        if text is not None:
            if text.isascii():
                joined = text.encode("ascii")
        else:
            try:
                data = b"".join(values)
            except TypeError:
                data = None
            if data is not None and data.isascii():
                joined = data
        if joined is None:
            encoded = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
            joined = b"".join(encoded)
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        else:
            lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        ends = np.cumsum(lengths)
        return cls(np.frombuffer(bytearray(joined), np.uint8), ends - lengths, ends)

    @classmethod
    def table(cls, texts: Sequence[str], codes: np.ndarray) -> "PackedStrings":
        """String texts[codes[i]] for each i (few distinct values: statuses, strands)."""
        packed = cls.of(texts)
        codes = np.asarray(codes, np.intp)
        return cls(packed.data, packed.starts[codes], packed.ends[codes])

    @classmethod
    def empty(cls, n: int) -> "PackedStrings":
        """n empty strings."""
        return cls(np.zeros(1, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64))

    def spread(self, n: int, where: np.ndarray) -> "PackedStrings":
        """n strings: these at positions `where` (one each, in order), "" elsewhere."""
        starts, ends = np.zeros(n, np.int64), np.zeros(n, np.int64)
        starts[where], ends[where] = self.starts, self.ends
        return PackedStrings(self.data, starts, ends)

    def part(self, lo: int, hi: int) -> "PackedStrings":
        """Strings lo .. hi - 1 (the same bytes)."""
        return PackedStrings(self.data, self.starts[lo:hi], self.ends[lo:hi])

    def crc32(self) -> np.ndarray:
        """uint32 [n]: zlib's CRC-32 of each string's bytes. One GIL-free numba pass, zlib's bit for
        bit: the writer thread computes these for six string fields of every read, and one zlib
        call per string held the GIL for most of that time (BENCHMARKS.md, "Streaming the reads");
        fewer than _JIT_STRINGS strings in a process that has not imported numba (an export, a
        merge, the report reading a small run file) take zlib one by one: numba's import alone
        would cost more."""
        if len(self) >= _JIT_STRINGS or "numba" in sys.modules:
            from papara_py.io.jit import crc32_pieces

            return crc32_pieces(self.data, self.starts, self.ends, _CRC_TABLE)
        data = self.data.tobytes()
        return np.fromiter((zlib.crc32(data[a:b]) for a, b in zip(self.starts.tolist(), self.ends.tolist())),
                           dtype=np.uint32, count=len(self))

    def c_strings(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(the strings one after another, each followed by a NUL; uint64 [n] where each begins;
        whether a string holds a NUL itself)."""
        if len(self) >= _JIT_STRINGS or "numba" in sys.modules:
            from papara_py.io.jit import terminated_strings

            buffer, at, nul = terminated_strings(self.data, self.starts, self.ends)
            return buffer, at, bool(nul)
        lengths = self.ends - self.starts
        at = np.cumsum(lengths + 1) - (lengths + 1)
        buffer = np.zeros(int(lengths.sum()) + len(self), np.uint8)
        before = np.cumsum(lengths) - lengths
        inside = np.arange(int(lengths.sum())) - np.repeat(before, lengths)
        source = np.repeat(self.starts, lengths) + inside
        buffer[np.repeat(at, lengths) + inside] = self.data[source]
        return buffer, at.astype(np.uint64), bool((self.data[source] == 0).any())

    def bytes_values(self) -> list[bytes]:
        """The strings as bytes (for h5py's object path, `write_strings`)."""
        data = self.data.tobytes()
        return [data[a:b] for a, b in zip(self.starts.tolist(), self.ends.tolist())]


def write_strings(dataset: h5py.Dataset, start: int, strings: PackedStrings) -> None:
    """strings into rows [start, start + n) of a variable-length UTF-8 string dataset (long
    enough), in one H5Dwrite from C strings (`_h5dwrite`), the GIL released. Each reads back as
    its bytes, as when h5py wrote them from objects; a string holding a NUL, which a C string
    cannot carry, takes h5py's object path, which refuses it as it always did; so does every
    string where HDF5's H5Dwrite cannot be reached through ctypes."""
    n = len(strings)
    if n == 0:
        return
    buffer, at, nul = strings.c_strings()
    h5dwrite = _h5dwrite()
    if nul or h5dwrite is None:
        dataset[start:start + n] = np.array(strings.bytes_values(), dtype=object)
        return
    pointers = at + np.uint64(buffer.ctypes.data)
    file_space = dataset.id.get_space()
    file_space.select_hyperslab((start,), (n,))
    memory_space = h5py.h5s.create_simple((n,))
    with _phil:
        status = h5dwrite(dataset.id.id, _c_string_type().id, memory_space.id, file_space.id, _H5P_DEFAULT,
                          pointers.ctypes.data)
    if status < 0:
        raise RuntimeError(f"HDF5 could not write the strings of {dataset.name} (H5Dwrite: {status})")

#: hid_t of HDF5's default property list.
_H5P_DEFAULT = 0
_found: dict = {}


def _h5dwrite():
    """HDF5's H5Dwrite as a ctypes function (the library h5py uses: looked up through h5py's own
    extension module, which links it), or None where it cannot be found. ctypes releases the GIL
    for the call; h5py's lock (`_phil`) is held around it, as h5py holds it around its own."""
    if "h5dwrite" not in _found:
        try:
            function = ctypes.CDLL(h5py.h5d.__file__).H5Dwrite
            function.argtypes = [ctypes.c_int64] * 5 + [ctypes.c_void_p]  # hid_t: int64 since HDF5 1.10
            function.restype = ctypes.c_int
        except (OSError, AttributeError):
            function = None
        _found["h5dwrite"] = function
    return _found["h5dwrite"]


def _c_string_type() -> h5py.h5t.TypeID:
    """HDF5's variable-length UTF-8 C string in memory (char *), made once."""
    if "type" not in _found:
        string = h5py.h5t.C_S1.copy()
        string.set_size(h5py.h5t.VARIABLE)
        string.set_cset(h5py.h5t.CSET_UTF8)
        _found["type"] = string
    return _found["type"]
