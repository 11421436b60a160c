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
from contextlib import contextmanager
from typing import Iterator

import h5py
import numpy as np

from papara_py import __version__
from papara_py.io.checksums import attributes_crc32, string_crc32
from papara_py.io.chunks import write_compressed
from papara_py.io.hdf5_guard import check_writes, hdf5_output
from papara_py.io.outputs import atomic_path

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
def run_writer(path: str | os.PathLike, n_columns: int, k: int, command_line: str) -> Iterator["RunWriter"]:
    """Open a RunWriter on a temporary file that becomes `path` only when the block completes."""
    with hdf5_output(path) as handle:
        yield RunWriter(handle, n_columns, k, command_line)


class RunWriter:
    """Lays out and fills one run file (use `run_writer` to get one with atomic commit)."""

    def __init__(self, handle: h5py.File, n_columns: int, k: int, command_line: str) -> None:
        self.file = handle
        self.n_columns = n_columns
        self.k = k
        self.command_line = command_line
        #: datasets stay open while the file is written: a dataset closed mid-run flushes its
        #: cached chunks in a destructor, where a full disk is only printed, never raised
        self._datasets: dict[str, h5py.Dataset] = {}
        self._create_layout()

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
        self._numbers("reference/alignment", rows.shape, np.uint8, chunks=True, compression="gzip",
                      compression_opts=4)
        write_compressed(self.file["reference/alignment"], np.ascontiguousarray(rows, np.uint8))  # chunks on threads

    def write_reads(self, start: int, fields: dict[str, np.ndarray]) -> None:
        """Write rows [start, start + len) of the per-read datasets named in `fields`.

        Keys are dataset paths below /reads (e.g. "score", "candidates/edge"); a string dataset's
        CRC-32s are written with it. Datasets grow to hold the rows.
        """
        for name, values in fields.items():
            end = start + len(values)
            dataset = self._grown(f"reads/{name}", end)
            if dataset.dtype == STRINGS:
                values = np.asarray(values, dtype=object)
                crcs = self._grown(f"{CHECKSUMS}/reads/{name}", end)
                if crcs is not None:
                    crcs[start:end] = string_crc32(values)
            if dataset.compression == "gzip":  # /reads/aligned, the largest: chunks compressed on every core
                write_compressed(dataset, np.ascontiguousarray(values, dataset.dtype), start)
            else:
                dataset[start:end] = values
        check_writes(self.file)  # a full disk stops the run now, not at its end

    def set_read_count(self, n_reads: int) -> None:
        """Every per-read dataset (and its checksums) `n_reads` rows long: the rows never
        written read back as their fill values."""
        def resize(name: str, node) -> None:
            if isinstance(node, h5py.Dataset) and node.maxshape[0] is None:
                node.resize(n_reads, axis=0)
        for group in ("reads", f"{CHECKSUMS}/reads"):
            self.file[group].visititems(resize)
        check_writes(self.file)

    def _grown(self, path: str, rows: int) -> h5py.Dataset | None:
        """Dataset `path`, at least `rows` long."""
        dataset = self._dataset(path)
        if dataset is not None and dataset.shape[0] < rows:
            dataset.resize(rows, axis=0)
        return dataset

    def _dataset(self, path: str) -> h5py.Dataset | None:
        dataset = self._datasets.get(path)
        if dataset is None:
            dataset = self.file.get(path)
            if dataset is not None:
                self._datasets[path] = dataset
        return dataset

    def write_run_record(self, record: dict) -> None:
        """Store the run record as /run attributes (nested values as JSON strings)."""
        run = self.file.require_group("run")
        for key, value in record.items():
            run.attrs[key] = value if isinstance(value, (int, float, str, np.integer, np.floating)) \
                else json.dumps(value, sort_keys=True)
        self.file.require_group(CHECKSUMS).attrs["run"] = np.uint32(attributes_crc32(run.attrs))
