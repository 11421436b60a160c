"""The HDF5 run file of DESIGN 7, written atomically.

The file is created under a temporary name beside the target and renamed over it only after
every dataset is complete and the file is closed, so a crash, Ctrl-C or SIGKILL leaves either no
file or the previous complete one (io/outputs.py: the output policy, write faults). Per-read
datasets grow as batches are written (chunked, no size limit: the read count is known only when
the reads, which stream in while the first batches are scored, have all been parsed), so memory
does not grow with the read count; `set_read_count` gives every one its final length.

Damaged values are detectable (format version 2): every numeric dataset carries HDF5's fletcher32
checksum per chunk, which HDF5 verifies on every read, and every string dataset has a twin under
/checksums (same path, uint32, one CRC-32 per string, itself fletcher32-checked), and the run
record's attributes have one CRC-32 (/checksums attribute `run`); io/run_file.RunFile compares
them with what it reads. A flipped bit in a score, a name or a CIGAR is
then refused as damage instead of being exported as a valid result.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator, Sequence

import h5py
import numpy as np

from papara_py import __version__
from papara_py.io.checksums import attributes_crc32, string_crc32
from papara_py.io.chunks import ChunkStream, pool_threads
from papara_py.io.outputs import atomic_path, check_writes, hdf5_output
from papara_py.io.strings import PackedStrings, write_strings

__all__ = ["RunWriter", "run_writer", "atomic_path", "FORMAT_NAME", "FORMAT_VERSION", "STRINGS", "CHECKSUMS"]

FORMAT_NAME = "papara-py"
#: 1: the layout of DESIGN 7; 2: the same plus checksums (fletcher32, /checksums); 3: plus each
#: residue's posterior probability (/reads/pp) and the candidates' weights (/reads/candidates/weight)
FORMAT_VERSION = 3
#: The group that mirrors every string dataset's path with its per-string CRC-32s.
CHECKSUMS = "checksums"
STRINGS = h5py.string_dtype("utf-8")
_ALIGNED_CHUNK_ROWS = 256
#: rows per chunk of the other per-read datasets (4-16 KB: a small run's file stays small)
_READ_CHUNK_ROWS = 1_024


@contextmanager
def run_writer(path: str | os.PathLike, n_columns: int, k: int, command_line: str,
               parallel: bool | None = None) -> Iterator["RunWriter"]:
    """Open a RunWriter on a temporary file that becomes `path` only when the block completes
    (`parallel`: see RunWriter)."""
    with hdf5_output(path) as handle:
        writer = RunWriter(handle, n_columns, k, command_line, parallel)
        try:
            yield writer
            writer.finish()
        finally:
            writer.close()


class RunWriter:
    """Lays out and fills one run file (use `run_writer` to get one with atomic commit).

    With `parallel` (default: where numba is loaded already, as in a run; its kernels cost half a
    second to import elsewhere), the rows of /reads/aligned go through a `ChunkStream`: compressed
    on a pool of threads and written whole, in order (io/chunks.py); without, through h5py."""

    def __init__(self, handle: h5py.File, n_columns: int, k: int, command_line: str,
                 parallel: bool | None = None) -> None:
        self.file = handle
        self.n_columns = n_columns
        self.k = k
        self.command_line = command_line
        #: datasets stay open while the file is written: a dataset closed mid-run flushes its
        #: cached chunks in a destructor, where a full disk is only printed, never raised
        self._datasets: dict[str, h5py.Dataset] = {}
        self._rows: dict[str, int] = {}  # each dataset's length, as `_grown` left it
        self._tails: dict[str, tuple] = {}  # each dataset's shape past the read axis
        self._create_layout()
        self._pool: ThreadPoolExecutor | None = None
        self._aligned: ChunkStream | None = None
        if "numba" in sys.modules if parallel is None else parallel:
            self._pool = ThreadPoolExecutor(max_workers=pool_threads(), thread_name_prefix="papara-chunks")
            self._aligned = ChunkStream(self._dataset("reads/aligned"), self._pool)

    def finish(self) -> None:
        """Every row given written (the aligned rows' chunks still compressing, their last one)."""
        if self._aligned is not None:
            self._aligned.flush()
            check_writes(self.file)

    def close(self) -> None:
        """The compression pool stopped (chunks not yet written are dropped: after `finish`, none)."""
        if self._aligned is not None:
            self._aligned.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _create_layout(self) -> None:
        f, m, k = self.file, self.n_columns, self.k
        f.attrs["format"] = FORMAT_NAME
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["version"] = __version__
        f.attrs["command_line"] = self.command_line
        rows = {"maxshape": (None,), "chunks": (_READ_CHUNK_ROWS,)}
        for name in ("names", "status", "cigar", "strand", "sequence", "pp"):
            self._strings(f"reads/{name}", (0,), **rows)
        for name in ("best_edge", "score", "start"):
            self._numbers(f"reads/{name}", (0,), np.int32, fillvalue=-1, **rows)
        self._numbers("reads/aligned", (0, m), np.uint8, fillvalue=ord("-"), maxshape=(None, m),
                      chunks=(_ALIGNED_CHUNK_ROWS, m), compression="gzip", compression_opts=4, shuffle=False)
        for name in ("edge", "score"):
            self._numbers(f"reads/candidates/{name}", (0, k), np.int32, fillvalue=-1, maxshape=(None, k),
                          chunks=(_READ_CHUNK_ROWS, k))
        self._numbers("reads/candidates/weight", (0, k), np.float32, fillvalue=0, maxshape=(None, k),
                      chunks=(_READ_CHUNK_ROWS, k))

    def _numbers(self, path: str, shape: tuple, dtype, **options) -> None:
        """A numeric dataset with HDF5's fletcher32 checksum per chunk (a dataset that is not
        chunked (no `chunks`, and empty or scalar) has none)."""
        if "chunks" in options or (shape and 0 not in shape):
            options["fletcher32"] = True
        else:
            options = {key: value for key, value in options.items() if key in ("fillvalue", "data")}
        self.file.create_dataset(path, shape, dtype=dtype, **options)

    def _strings(self, path: str, shape: tuple, data=None, **layout) -> None:
        """A string dataset and its CRC-32 twin under /checksums (filled with the data, if given;
        `layout`: maxshape and chunks, for both). An unwritten string reads back as "", whose
        CRC-32 is 0: the twin's fill value."""
        self.file.create_dataset(path, shape, dtype=STRINGS, data=data, **layout)
        self._numbers(f"{CHECKSUMS}/{path}", shape, np.uint32, fillvalue=0,
                      **({} if data is None else {"data": string_crc32(data)}), **layout)

    def write_reference(self, names: list[str], rows: np.ndarray, numbered_newick: str) -> None:
        self._strings("tree/newick_numbered", (), numbered_newick)
        self._strings("reference/names", (len(names),), np.array(names, dtype=object))
        self._numbers("reference/alignment", rows.shape, np.uint8, data=rows, compression="gzip",
                      compression_opts=4)

    def write_reads(self, start: int, fields: dict[str, np.ndarray | PackedStrings | Sequence]) -> None:
        """Write rows [start, start + len) of the per-read datasets named in `fields`.

        Keys are dataset paths below /reads (e.g. "score", "candidates/edge"); a string dataset's
        values (str or bytes, or a PackedStrings) are written with their CRC-32s. Datasets grow to
        hold the rows. With a ChunkStream, rows of "aligned" go in order (see RunWriter).
        """
        for name, values in fields.items():
            if name == "aligned" and self._aligned is not None:
                self._aligned.put(start, values)
                continue
            path = f"reads/{name}"
            dataset = self._dataset(path)
            if dataset is not None and dataset.dtype == STRINGS:
                self._write_strings(path, start, PackedStrings.of(values))
                continue
            self._write_rows(path, start, values)
        check_writes(self.file)  # a full disk stops the run now, not at its end

    def _write_strings(self, path: str, start: int, strings: PackedStrings) -> None:
        """A string dataset's rows and their CRC-32s (io/strings.py)."""
        end = start + len(strings)
        if self._dataset(f"{CHECKSUMS}/{path}") is not None:
            self._write_rows(f"{CHECKSUMS}/{path}", start, strings.crc32())
        write_strings(self._grown(path, end), start, strings)

    def _write_rows(self, path: str, start: int, values: np.ndarray | Sequence) -> None:
        """Rows [start, start + len(values)) of numeric dataset `path`, grown to hold them: h5py's
        low-level write (HDF5 converts the values' type as `dataset[a:b] = values` would), without
        the high-level selection machinery, which held the GIL longer than the write itself."""
        dataset = self._dataset(path)
        values = np.ascontiguousarray(values if isinstance(values, np.ndarray) else np.asarray(values, dataset.dtype))
        n = len(values)
        self._grown(path, start + n)
        if n == 0:
            return
        shape = (n,) + self._tails[path]
        if values.shape != shape:
            raise ValueError(f"{dataset.name}: rows of shape {values.shape[1:]}, not {shape[1:]}")
        file_space = dataset.id.get_space()
        file_space.select_hyperslab((start,) + (0,) * (len(shape) - 1), shape)
        dataset.id.write(h5py.h5s.create_simple(shape), file_space, values)

    def set_read_count(self, n_reads: int) -> None:
        """Every per-read dataset (and its checksums) `n_reads` rows long: the rows never
        written read back as their fill values."""
        def resize(name: str, node) -> None:
            if isinstance(node, h5py.Dataset) and node.maxshape[0] is None:
                node.resize(n_reads, axis=0)
        for group in ("reads", f"{CHECKSUMS}/reads"):
            self.file[group].visititems(resize)
        self._rows.clear()
        self.finish()
        check_writes(self.file)

    def _grown(self, path: str, rows: int) -> h5py.Dataset | None:
        """Dataset `path`, at least `rows` long (its length kept here: h5py asks HDF5 each time)."""
        dataset = self._dataset(path)
        if dataset is not None:
            length = self._rows.get(path)
            if length is None:
                length = self._rows[path] = dataset.shape[0]
            if length < rows:
                dataset.resize(rows, axis=0)
                self._rows[path] = rows
        return dataset

    def _dataset(self, path: str) -> h5py.Dataset | None:
        dataset = self._datasets.get(path)
        if dataset is None:
            dataset = self.file.get(path)
            if dataset is not None:
                self._datasets[path] = dataset
                self._tails[path] = dataset.shape[1:]
        return dataset

    def write_run_record(self, record: dict) -> None:
        """Store the run record as /run attributes (nested values as JSON strings)."""
        run = self.file.require_group("run")
        for key, value in record.items():
            run.attrs[key] = value if isinstance(value, (int, float, str, np.integer, np.floating)) \
                else json.dumps(value, sort_keys=True)
        self.file.require_group(CHECKSUMS).attrs["run"] = np.uint32(attributes_crc32(run.attrs))
