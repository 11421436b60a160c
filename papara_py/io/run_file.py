"""`RunFile`: the one reader of papara-py run files (DESIGN 7).

Every consumer of a run file (export, merge, report, the Python API, the tests) opens it here, so
a file that is not a papara-py run, comes from a newer papara-py, or lacks a dataset is refused in
one place with one message (an `InputError`: file and problem, exit status 2 in the CLI).

Opening checks the whole structure before anything is read: the `format` attribute, the
`format_version` (a newer one is refused, naming both versions), and every dataset the writer
creates, with its rank, its length along the read axis and its kind (integer, string, bytes).
Reading checks the values too (format version 2): HDF5 verifies the numeric datasets' fletcher32
checksums, and every string read is compared with its CRC-32 under /checksums (io/run_writer.py),
so a damaged value is refused like damaged structure. Version 1 files (no checksums) still read.
Per-read data is read on demand: small columns whole, `/reads/aligned` and the reference in
bounded row blocks, so a run of millions of reads is never loaded at once.
"""

from __future__ import annotations

import json
import os
from typing import Iterator, NamedTuple

import h5py
import numpy as np

from papara_py import __version__
from papara_py.errors import InputError
from papara_py.io.checksums import attributes_crc32, string_crc32
from papara_py.io.run_writer import CHECKSUMS, FORMAT_NAME, FORMAT_VERSION
from papara_py.phylo.encoding import ALPHABETS, DNA, Alphabet

#: Most attributes a group of a run file may have (papara-py writes a few dozen).
MAX_ATTRIBUTES = 1024
#: Bytes of a 2-D dataset read at once by `row_blocks`.
ROW_BLOCK_BYTES = 32 << 20

class DatasetSpec(NamedTuple):
    """One dataset of a run file. `kind`: "i" integer, "s" string, "u1" bytes (uint8), "f"
    floating point; `rows`: "reads" = one row per read, "reference" = one per reference taxon;
    `since`: the format version that added it; `content`: what it holds (docs/reference/run-file.md
    is generated from this table by scripts/reference_docs.py)."""

    path: str
    rank: int
    kind: str
    rows: str | None
    since: int
    dtype: str
    content: str


#: Every dataset of a run file, as the writer (io/run_writer.py) creates it and this reader checks it.
LAYOUT = (
    DatasetSpec("tree/newick_numbered", 0, "s", None, 1, "string",
                "the unrooted tree with jplace-style `{n}` edge numbers; edges are numbered 0..E-1 in post-order "
                "of this string (the `tree` of `export --format jplace`, unchanged)"),
    DatasetSpec("reference/names", 1, "s", "reference", 1, "string [N]", "reference taxa, alignment order"),
    DatasetSpec("reference/alignment", 2, "u1", "reference", 1, "uint8 [N, m]",
                "the reference alignment (ASCII, upper case; gzip)"),
    DatasetSpec("reads/names", 1, "s", "reads", 1, "string [Q]",
                "read names, input order (alignment taxa that are not in the tree last)"),
    DatasetSpec("reads/status", 1, "s", "reads", 1, "string [Q]",
                "`aligned`, `empty` (no residues) or `too_long` (at least m residues)"),
    DatasetSpec("reads/best_edge", 1, "i", "reads", 1, "int32 [Q]",
                "the best edge: smallest (score, edge number); -1 if not aligned"),
    DatasetSpec("reads/score", 1, "i", "reads", 1, "int32 [Q]", "its score (lower is better); -1 if not aligned"),
    DatasetSpec("reads/start", 1, "i", "reads", 1, "int32 [Q]",
                "first reference column (0-based) of the alignment; -1 if not aligned"),
    DatasetSpec("reads/cigar", 1, "s", "reads", 1, "string [Q]",
                "the alignment from `start`: `M` a column holding a read residue, `D` a column without one, "
                "`I` a read residue between columns"),
    DatasetSpec("reads/strand", 1, "s", "reads", 1, "string [Q]",
                "`+`: aligned as given; `-`: its reverse complement was aligned (every other field describes the "
                "read in that orientation)"),
    DatasetSpec("reads/sequence", 1, "s", "reads", 1, "string [Q]",
                "the read as given in the input (upper case, not reverse-complemented)"),
    DatasetSpec("reads/aligned", 2, "u1", "reads", 1, "uint8 [Q, m]",
                "the read in reference columns, insertions removed, `-` elsewhere (gzip)"),
    DatasetSpec("reads/candidates/edge", 2, "i", "reads", 1, "int32 [Q, K]",
                "the K best edges by (score, edge) for the chosen orientation, -1 padded"),
    DatasetSpec("reads/candidates/score", 2, "i", "reads", 1, "int32 [Q, K]", "their scores, -1 padded"),
    DatasetSpec("reads/pp", 1, "s", "reads", 3, "string [Q]",
                "each read residue's posterior probability of its column, one character per residue in read "
                "order, hmmalign's code (`0`-`9`, `*` for 0.95 and above); the Stockholm export's `#=GR PP` line"),
    DatasetSpec("reads/candidates/weight", 2, "f", "reads", 3, "float32 [Q, K]",
                "each candidate's posterior edge weight (a read's weights sum to 1); the jplace export's "
                "`like_weight_ratio`"),
)

#: The root attributes of a run file.
ROOT_ATTRIBUTES = {
    "format": "`papara-py`",
    "format_version": "the layout's version (io/run_writer.FORMAT_VERSION): 1 without `/checksums`, 2 with them, "
                      "3 with `/reads/pp` and `/reads/candidates/weight`; older versions are still read",
    "version": "the papara-py version that wrote the file",
    "command_line": "the command line (or the API call) that made the run",
}

#: When a run record field about a run's own execution is present: a merged file keeps these per
#: shard, in `merged_shards` (cluster/merge.py).
PER_EXECUTION = "always, but in a merged file per shard (`merged_shards`)"

#: The run record: the attributes of `/run` (run/record.py writes them; nested values are JSON
#: strings). name -> (when it is present, what it holds).
RUN_RECORD_FIELDS = {
    "parameters": ("always", "the scoring parameters: the six penalties, `column_weight`, `temperature`, "
                             "`placement_temperature` (since 0.21.0; before, the temperature) and `preset` (the "
                             "`--preset` name they equal, null for another set)"),
    "alphabet": ("always", "`dna` or `protein`"),
    "near_states": ("always", "the near states' rule, in words (DESIGN.md 3)"),
    "checksums_sha256": ("always", "sha256 of the tree, the alignment and the reads"),
    "inputs": ("always", "the input files' paths (tree, alignment, reads)"),
    "timings_seconds": ("always", "seconds per stage: input, profiles, devices_wait, strand, jit_wait, scoring, "
                                  "build_blocks, traceback, output, reads, reads_wait, total (and run_scoring in a "
                                  "run of several samples; sums over the shards plus merge in a merged file)"),
    "gcups": ("always", "cell updates per second over the scoring, in 10^9 (DESIGN.md 4)"),
    "cells": ("always", "cells scored"),
    "lanes": (PER_EXECUTION, "edges per block"),
    "threads": (PER_EXECUTION, "`count` and `source`: `--threads`, or why that many CPUs"),
    "device": (PER_EXECUTION, "the `--device` asked for"),
    "device_choice": ("when `--device auto` kept a small run on the CPU", "why"),
    "consumers": (PER_EXECUTION, "per CPU worker and GPU feeder: blocks, edges, cells, calls, busy seconds, and any "
                            "error, retries and faults"),
    "unusable_gpus": ("when a GPU could not be used", "each such GPU and what it answered"),
    "gpu_device_seconds": ("with `--gpu-profile`", "each GPU's kernel time"),
    "candidates_k": ("always", "K, candidate edges kept per read"),
    "status_counts": ("always", "reads by status"),
    "n_edges": ("always", "edges of the tree"),
    "n_columns": ("always", "alignment columns"),
    "strand": ("always", "the `--strand` mode used (`forward` for protein)"),
    "strand_counts": ("always", "reads aligned as `+` and `-`, and `scored_both`: scored in both orientations"),
    "search": ("always", "`mode` (the `--search`); for guided also its cluster settings"),
    "edges_scored_fraction": (PER_EXECUTION, "`mean`, `min`, `max` over the scored reads of the share of the "
                                              "edges each was scored against"),
    "traceback": (PER_EXECUTION, "`device` (the GPUs' names or `cpu`) and `batches` (batches per device) of "
                                  "the posterior step"),
    "outlier_null": ("where a read was aligned and the alignment is over 8 columns wide",
                     "the outlier rule's null (DESIGN 5): `lengths`, `mean_per_residue` and `sd_per_residue` at "
                     "each, `reads_per_length`, `z`, `seed`"),
    "sample": ("in a run of several samples", "`number` and `of`"),
    "shard": ("in a shard file (`--shard K/N`)", "`index`, `count`, `n_reads`, `n_reads_total`, `rule`, `source`"),
    "profiles": ("with `--profiles`", "the profiles file's absolute path"),
    "merged_shards": ("in a merged file", "each shard's file, slice, command line, timings and devices"),
    "n_shards": ("in a merged file", "how many shards were merged"),
}


def decode_attribute(value: object) -> object:
    """An HDF5 attribute as plain Python: bytes decoded, JSON objects/lists parsed, numpy scalars unwrapped."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def datasets_below(group: h5py.Group) -> dict[str, h5py.Dataset]:
    """Every dataset below `group`, by path relative to it (e.g. "candidates/edge"), sorted."""
    found: dict[str, h5py.Dataset] = {}

    def visit(name: str, obj) -> None:  # returning anything but None would stop visititems
        if isinstance(obj, h5py.Dataset):
            found[name] = obj

    group.visititems(visit)
    return dict(sorted(found.items()))


def _kind_ok(dataset: h5py.Dataset, kind: str) -> bool:
    if kind == "s":
        return h5py.check_string_dtype(dataset.dtype) is not None
    if kind == "u1":
        return dataset.dtype == np.uint8
    if kind == "f":
        return np.issubdtype(dataset.dtype, np.floating)
    return np.issubdtype(dataset.dtype, np.integer)


def _layout(version: int) -> list[tuple[str, int, str, str | None]]:
    """The datasets a file of format `version` holds."""
    return [entry[:4] for entry in LAYOUT if entry.since <= version]


class RunFile:
    """A papara-py run file, open for reading and checked. Use as a context manager or `close()`.

    Attributes: `path`, `attrs` (the file's attributes), `record` (the run record, /run),
    `n_reads`, `n_columns`, `k` (candidates per read), `n_reference`.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self._handle = self._open(self.path)
        try:
            self._check()
        except BaseException:
            self._handle.close()
            raise

    # -- opening and checking ---------------------------------------------------------------

    @staticmethod
    def _open(path: str) -> h5py.File:
        if not os.path.exists(path):
            raise InputError(path, "no such run file (write one with papara-py -t ... -o RUN.h5)")
        if os.path.isdir(path):
            raise InputError(path, "a directory, not a run file")
        try:
            is_hdf5 = h5py.is_hdf5(path)
        except OSError as error:
            raise InputError(path, f"cannot read the run file ({error.strerror or error})") from None
        if not is_hdf5:
            raise InputError(path, "not an HDF5 file; expected a papara-py run file (papara-py ... -o RUN.h5)")
        try:
            return h5py.File(path, "r")
        except OSError as error:
            raise InputError(path, f"cannot open the run file ({error})") from None

    def _check(self) -> None:
        handle, path = self._handle, self.path
        self.attrs = self._attributes(handle, "its attributes")
        if self.attrs.get("format") != FORMAT_NAME:
            raise InputError(path, "an HDF5 file, but not a papara-py run file (no format=\"papara-py\" attribute)")
        version = self.attrs.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise self.damaged(f"its format_version is {version!r}, not a number")
        if version < 1:
            raise self.damaged(f"its format_version is {version}; papara-py run files start at 1")
        if version > FORMAT_VERSION:
            raise InputError(path, f"written in run-file format version {version} (by papara-py "
                                   f"{self.attrs.get('version', '?')}); this papara-py {__version__} reads "
                                   f"format versions up to {FORMAT_VERSION}: update papara-py to read it")
        lengths: dict[str, int] = {}
        self.format_version = version
        for name, rank, kind, rows in _layout(version):
            dataset = handle.get(name)
            if not isinstance(dataset, h5py.Dataset):
                raise self.damaged(f"/{name} is missing")
            if dataset.ndim != rank or not _kind_ok(dataset, kind):
                raise self.damaged(f"/{name} has shape {dataset.shape} and type {dataset.dtype}, not the "
                                   f"{rank}-dimensional {dict(i='integer', s='string', u1='uint8', f='float')[kind]} "
                                   "dataset the format specifies")
            if rows is not None:
                expected = lengths.setdefault(rows, dataset.shape[0])
                if dataset.shape[0] != expected:
                    raise self.damaged(f"/{name} has {dataset.shape[0]} rows where the other {rows} "
                                       f"datasets have {expected}")
        self.n_reads = lengths["reads"]
        self.n_reference = lengths["reference"]
        self.n_columns = int(handle["reference/alignment"].shape[1])
        self.k = int(handle["reads/candidates/edge"].shape[1])
        self._checksummed = version >= 2
        for name, rank, kind, _ in _layout(version):
            twin = handle.get(f"{CHECKSUMS}/{name}")
            if kind == "s" and self._checksummed and not (
                    isinstance(twin, h5py.Dataset) and twin.dtype == np.uint32
                    and twin.shape == handle[name].shape):
                raise self.damaged(f"/{CHECKSUMS}/{name}, the checksums of /{name}, is missing or "
                                   "not shaped like it")
        for name in ("reads/aligned",):
            if handle[name].shape[1] != self.n_columns:
                raise self.damaged(f"/{name} has {handle[name].shape[1]} columns, the reference {self.n_columns}")
        for name in ("score", "weight") if version >= 3 else ("score",):
            if handle[f"reads/candidates/{name}"].shape[1] != self.k:
                raise self.damaged(f"/reads/candidates/{name} and /reads/candidates/edge differ in width")
        run = handle.get("run")
        self.record = self._attributes(run, "its run record") if isinstance(run, h5py.Group) else {}
        if self._checksummed:
            self._check_record(run)

    def _check_record(self, run: h5py.Group | None) -> None:
        """The run record against its CRC-32 (/checksums attribute `run`)."""
        try:
            expected = self._handle[CHECKSUMS].attrs.get("run")
            found = attributes_crc32(run.attrs) if isinstance(run, h5py.Group) else None
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            raise self.damaged(f"the run record's checksum cannot be read ({error})") from None
        if expected is None or found != int(expected):
            raise self.damaged("the run record (/run attributes) does not match its checksum: "
                               "it was changed after papara-py wrote it")

    def _attributes(self, obj: h5py.HLObject, what: str) -> dict:
        """The attributes of `obj`, decoded; a damaged count (a flipped byte made one file claim
        billions, and reading them never ended) or unreadable values make the file damaged."""
        try:
            count = obj.id.get_num_attrs() if hasattr(obj.id, "get_num_attrs") else len(obj.attrs)
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            raise self.damaged(f"{what} cannot be read ({error})") from None
        if count > MAX_ATTRIBUTES:
            raise self.damaged(f"{what} claim {count} attributes (papara-py writes a few dozen)")
        try:
            return {key: decode_attribute(obj.attrs[key]) for key in list(obj.attrs.keys())[:MAX_ATTRIBUTES]}
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            raise self.damaged(f"{what} cannot be read ({error})") from None

    def damaged(self, problem: str) -> InputError:
        """The error for a run file whose content is not what the format promises."""
        return InputError(self.path, f"the run file is damaged or incomplete: {problem}")

    # -- life cycle --------------------------------------------------------------------------

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "RunFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- content -----------------------------------------------------------------------------

    def dataset(self, name: str) -> h5py.Dataset:
        """The raw dataset at `name` (e.g. "reads/score"), for bulk copies (merge)."""
        return self._handle[name]

    def read_datasets(self) -> dict[str, h5py.Dataset]:
        """Every dataset below /reads, by path relative to it (e.g. "candidates/edge"), sorted."""
        return datasets_below(self._handle["reads"])

    def _column(self, name: str, selection=slice(None)) -> np.ndarray:
        dataset = self._handle[name]
        try:
            if h5py.check_string_dtype(dataset.dtype) is None:
                return dataset[selection]
            found = dataset.asstr()[selection]
            twin = self._handle.get(f"{CHECKSUMS}/{name}") if self._checksummed else None
            expected = twin[selection] if twin is not None else None
        except (OSError, ValueError, UnicodeDecodeError) as error:
            raise self.damaged(f"/{name} cannot be read ({error})") from None
        if expected is not None:
            bad = np.flatnonzero(np.atleast_1d(string_crc32(found) != expected))
            if bad.size:
                where = "" if np.ndim(found) == 0 else f" (row {np.arange(dataset.shape[0])[selection][bad[0]]})"
                raise self.damaged(f"/{name} does not match its checksum{where}: its data were changed "
                                   "after papara-py wrote them")
        return found if isinstance(found, str) else np.asarray(found, dtype=object)

    @property
    def alphabet(self) -> Alphabet:
        """The run's alphabet (/run attr `alphabet`; a run file from before protein support has
        none and is DNA)."""
        name = self.record.get("alphabet", DNA.name)
        if name not in ALPHABETS:
            raise self.damaged(f"its run record names the alphabet {str(name)[:40]!r}, which is neither "
                               f"{' nor '.join(ALPHABETS)}")
        return ALPHABETS[name]

    @property
    def newick_numbered(self) -> str:
        """The unrooted tree with jplace `{n}` edge numbers."""
        return self._column("tree/newick_numbered", ())

    @property
    def reference_names(self) -> list[str]:
        return list(self._column("reference/names"))

    def reference_alignment(self) -> np.ndarray:
        """uint8 [N, m] ASCII, the whole reference (use `row_blocks` for a bounded scan)."""
        return self._column("reference/alignment")

    def names(self, selection=slice(None)) -> np.ndarray:
        """Read names (object [Q] or of `selection`: a slice, or sorted indices)."""
        return self._column("reads/names", selection)

    def column(self, name: str, selection=slice(None)) -> np.ndarray:
        """A per-read dataset below /reads ("status", "best_edge", "score", "start", "cigar",
        "strand", "sequence", "pp", "candidates/edge", "candidates/score", "candidates/weight"),
        whole or at `selection`. A file from before format version 3 has no posteriors: its "pp"
        reads as "" and its "candidates/weight" as the Viterbi traceback's (DESIGN 5, temperature
        0: the candidates tied at the best score share the weight)."""
        if self.format_version < 3 and name == "pp":
            return np.full(np.arange(self.n_reads)[selection].shape, "", dtype=object)
        if self.format_version < 3 and name == "candidates/weight":
            edges, scores = self.column("candidates/edge", selection), self.column("candidates/score", selection)
            tied = (edges >= 0) & (scores == scores[..., :1])
            return (tied / np.maximum(tied.sum(axis=-1, keepdims=True), 1)).astype(np.float32)
        return self._column(f"reads/{name}", selection)

    def informative_lengths(self, block: int = 1 << 16) -> np.ndarray:
        """int64 [Q]: the residues of each read that say something (`Alphabet.informative_counts`:
        all but N / X), from /reads/sequence read `block` rows at a time as bytes: the sequences are
        not decoded nor checked against their checksums, so this takes about a third of
        `column("sequence")`'s time (the outlier rule needs these counts alone; every export that
        writes a sequence still reads it checked)."""
        dataset = self._handle["reads/sequence"]
        alphabet = self.alphabet
        lengths = np.zeros(dataset.shape[0], dtype=np.int64)
        for lo in range(0, len(lengths), block):
            try:
                part = dataset[lo:lo + block]
            except (OSError, ValueError) as error:
                raise self.damaged(f"/reads/sequence cannot be read ({error})") from None
            offsets = np.concatenate(([0], np.cumsum(np.fromiter(map(len, part), np.int64, len(part)))))
            residues = np.frombuffer(b"".join(part), dtype=np.uint8)
            lengths[lo:lo + len(part)] = alphabet.informative_counts(residues, offsets)
        return lengths

    def aligned_rows(self, ids: np.ndarray, chunk: int = 4096) -> Iterator[np.ndarray]:
        """/reads/aligned rows (uint8 [m]) of the sorted read indices `ids`, one contiguous slab at a time."""
        ids = np.asarray(ids)
        dataset = self._handle["reads/aligned"]
        for lo in range(0, len(ids), chunk):
            part = ids[lo:lo + chunk]
            try:
                slab = dataset[int(part[0]):int(part[-1]) + 1]
            except (OSError, ValueError) as error:
                raise self.damaged(f"/reads/aligned cannot be read ({error})") from None
            yield from slab[part - part[0]]

    def row_blocks(self, name: str) -> Iterator[np.ndarray]:
        """The 2-D dataset `name` in consecutive row blocks of about ROW_BLOCK_BYTES."""
        dataset = self._handle[name]
        rows, width = dataset.shape
        step = max(1, ROW_BLOCK_BYTES // max(1, width * dataset.dtype.itemsize))
        for start in range(0, rows, step):
            try:
                yield dataset[start:start + step]
            except (OSError, ValueError) as error:
                raise self.damaged(f"/{name} cannot be read ({error})") from None

