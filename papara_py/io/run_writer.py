"""The HDF5 run file of DESIGN 7, written atomically.

The file is created under a temporary name beside the target and renamed over it only after
every dataset is complete and the file is closed, so a crash, Ctrl-C or SIGKILL leaves either no
file or the previous complete one (io/outputs.py: the output policy, write faults). Per-read
datasets are allocated for all reads up front and filled batch by batch, so memory does not grow
with the read count.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from typing import Iterator

import h5py
import numpy as np

from papara_py import __version__
from papara_py.io.outputs import atomic_path, check_writes, hdf5_output

__all__ = ["RunWriter", "run_writer", "atomic_path", "FORMAT_NAME", "FORMAT_VERSION", "STRINGS"]

FORMAT_NAME = "papara-py"
FORMAT_VERSION = 1
STRINGS = h5py.string_dtype("utf-8")
_ALIGNED_CHUNK_ROWS = 256


@contextmanager
def run_writer(path: str | os.PathLike, n_reads: int, n_columns: int, k: int,
               command_line: str) -> Iterator["RunWriter"]:
    """Open a RunWriter on a temporary file that becomes `path` only when the block completes."""
    with hdf5_output(path) as handle:
        yield RunWriter(handle, n_reads, n_columns, k, command_line)


class RunWriter:
    """Lays out and fills one run file (use `run_writer` to get one with atomic commit)."""

    def __init__(self, handle: h5py.File, n_reads: int, n_columns: int, k: int, command_line: str) -> None:
        self.file = handle
        self.n_reads = n_reads
        self.n_columns = n_columns
        self.k = k
        self.command_line = command_line
        #: datasets stay open while the file is written: a dataset closed mid-run flushes its
        #: cached chunks in a destructor, where a full disk is only printed, never raised
        self._datasets: dict[str, h5py.Dataset] = {}
        self._create_layout()

    def _create_layout(self) -> None:
        f, q, m, k = self.file, self.n_reads, self.n_columns, self.k
        f.attrs["format"] = FORMAT_NAME
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["version"] = __version__
        f.attrs["command_line"] = self.command_line
        reads = f.create_group("reads")
        reads.create_dataset("names", (q,), dtype=STRINGS)
        reads.create_dataset("status", (q,), dtype=STRINGS)
        reads.create_dataset("best_edge", (q,), dtype=np.int32, fillvalue=-1)
        reads.create_dataset("score", (q,), dtype=np.int32, fillvalue=-1)
        reads.create_dataset("start", (q,), dtype=np.int32, fillvalue=-1)
        reads.create_dataset("cigar", (q,), dtype=STRINGS)
        reads.create_dataset("strand", (q,), dtype=STRINGS)
        reads.create_dataset("sequence", (q,), dtype=STRINGS)
        chunk_rows = max(1, min(q, _ALIGNED_CHUNK_ROWS))
        reads.create_dataset("aligned", (q, m), dtype=np.uint8, fillvalue=ord("-"),
                             chunks=(chunk_rows, m) if q else None, compression="gzip" if q else None,
                             compression_opts=4 if q else None, shuffle=False)
        candidates = reads.create_group("candidates")
        candidates.create_dataset("edge", (q, k), dtype=np.int32, fillvalue=-1)
        candidates.create_dataset("score", (q, k), dtype=np.int32, fillvalue=-1)

    def write_reference(self, names: list[str], rows: np.ndarray, numbered_newick: str) -> None:
        f = self.file
        f.create_dataset("tree/newick_numbered", data=numbered_newick, dtype=STRINGS)
        f.create_dataset("reference/names", data=np.array(names, dtype=object), dtype=STRINGS)
        f.create_dataset("reference/alignment", data=rows, dtype=np.uint8,
                         compression="gzip", compression_opts=4)

    def write_reads(self, start: int, fields: dict[str, np.ndarray]) -> None:
        """Write rows [start, start + len) of the per-read datasets named in `fields`.

        Keys are dataset paths below /reads (e.g. "score", "candidates/edge").
        """
        for name, values in fields.items():
            dataset = self._datasets.get(name)
            if dataset is None:
                dataset = self._datasets[name] = self.file["reads"][name]
            if dataset.dtype == STRINGS:
                values = np.asarray(values, dtype=object)
            dataset[start:start + len(values)] = values
        check_writes(self.file)  # a full disk stops the run now, not at its end

    def write_run_record(self, record: dict) -> None:
        """Store the run record as /run attributes (nested values as JSON strings)."""
        run = self.file.require_group("run")
        for key, value in record.items():
            run.attrs[key] = value if isinstance(value, (int, float, str, np.integer, np.floating)) \
                else json.dumps(value, sort_keys=True)
