"""Exports of a run file (DESIGN 7): PaPaRa-compatible extended alignment, EPA-ng queries.

phylip / fasta: reference rows then read rows. Wherever any read inserts residues between two
reference columns, insertion columns are added (as many as the longest insertion there); they are
gaps in every other row, and each read's inserted residues fill them from the left.
epa: the aligned reads only, in reference columns (insertions removed), as EPA-ng expects queries.

Orientation: every export shows each read as it was aligned, i.e. reverse-complemented where
/reads/strand is "-". /reads/aligned, /reads/start and /reads/cigar already describe that oriented
read; /reads/sequence holds the read as given in the input, so its inserted residues are taken
from its reverse complement for "-" reads (`oriented_sequence`).

Reads without an alignment (status other than "aligned") have no row to export; they are
counted in a notice on stderr, never dropped silently.
"""

from __future__ import annotations

import sys
from typing import IO, Iterator

import h5py
import numpy as np

from papara_py.errors import InputError
from papara_py.io.cigar import parse_cigar
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_writer import FORMAT_NAME, atomic_path
from papara_py.phylo.encoding import reverse_complement

GAP = ord("-")


def insertion_runs(start: int, cigar: str) -> Iterator[tuple[int, int, int]]:
    """(position, read offset, length) of each insertion: residues placed before column `position`."""
    column, offset = start, 0
    for length, op in parse_cigar(cigar):
        if op == "I":
            yield column, offset, length
            offset += length
        elif op == "M":
            column += length
            offset += length
        else:
            column += length


def oriented_sequence(sequence: str, strand: str) -> np.ndarray:
    """The read as aligned (uint8 ASCII): `sequence` as given, reverse-complemented for strand "-"."""
    residues = np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)
    return reverse_complement(residues) if strand == "-" else residues


def _aligned_rows(reads: h5py.Group, ids: np.ndarray, chunk: int = 4096) -> Iterator[np.ndarray]:
    """/reads/aligned rows of `ids` (sorted), read a contiguous slab at a time, not row by row."""
    for lo in range(0, len(ids), chunk):
        part = ids[lo:lo + chunk]
        slab = reads["aligned"][int(part[0]):int(part[-1]) + 1]
        yield from slab[part - part[0]]


def _open_run(path: str) -> h5py.File:
    try:
        handle = h5py.File(path, "r")
    except (OSError, ValueError) as error:
        raise InputError(path, f"cannot open as an HDF5 run file ({error})") from None
    if handle.attrs.get("format") != FORMAT_NAME:
        handle.close()
        raise InputError(path, "not a papara-py run file (no format=\"papara-py\" attribute)")
    return handle


def _rows(names: list[str], rows: Iterator[bytes], fmt: str, n_rows: int, width: int, out: IO[bytes]) -> None:
    if fmt == "phylip":
        out.write(f"{n_rows} {width}\n".encode())
        for name, row in zip(names, rows):
            out.write(name.encode() + b" " + row + b"\n")
    else:
        for name, row in zip(names, rows):
            out.write(b">" + name.encode() + b"\n" + row + b"\n")


def export(run_path: str, fmt: str, output: str) -> None:
    """Write `run_path`'s alignment in `fmt` ("phylip", "fasta" or "epa") to `output`, atomically."""
    with _open_run(run_path) as run:
        reads = run["reads"]
        status = reads["status"].asstr()[:]
        aligned_ids = np.flatnonzero(status == STATUS_ALIGNED)
        skipped = len(status) - len(aligned_ids)
        read_names = reads["names"].asstr()[:]
        m = run["reference/alignment"].shape[1]
        with atomic_path(output) as tmp, open(tmp, "wb") as out:
            if fmt == "epa":
                rows = (row.tobytes() for row in _aligned_rows(reads, aligned_ids))
                _rows([read_names[q] for q in aligned_ids], rows, "fasta", len(aligned_ids), m, out)
            else:
                _write_extended(run, aligned_ids, read_names, fmt, out)
    if skipped:
        print(f"papara-py: {skipped} reads without an alignment (status other than \"aligned\") "
              f"are not in {output}", file=sys.stderr)


def _write_extended(run: h5py.File, aligned_ids: np.ndarray, read_names, fmt: str, out: IO[bytes]) -> None:
    reads = run["reads"]
    reference = run["reference/alignment"][:]
    ref_names = list(run["reference/names"].asstr()[:])
    m = reference.shape[1]
    starts = reads["start"][:]
    cigars = reads["cigar"].asstr()[:]
    sequences = reads["sequence"].asstr()
    strands = reads["strand"].asstr()[:]
    widest = np.zeros(m + 1, dtype=np.int64)  # insertion columns before reference column p
    for q in aligned_ids:
        for position, _, length in insertion_runs(int(starts[q]), cigars[q]):
            widest[position] = max(widest[position], length)
    # extended index of reference column c, and of the first insertion column before it
    insert_at = np.arange(m + 1) + np.concatenate(([0], np.cumsum(widest)[:-1]))
    column_at = insert_at[:m] + widest[:m]
    width = int(m + widest.sum())

    def reference_rows() -> Iterator[bytes]:
        for row in reference:
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = row
            yield extended.tobytes()

    def read_rows() -> Iterator[bytes]:
        for q, aligned in zip(aligned_ids, _aligned_rows(reads, aligned_ids)):
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = aligned
            residues = oriented_sequence(sequences[q], strands[q])
            for position, offset, length in insertion_runs(int(starts[q]), cigars[q]):
                first = insert_at[position]
                extended[first:first + length] = residues[offset:offset + length]
            yield extended.tobytes()

    names = ref_names + [read_names[q] for q in aligned_ids]
    rows = (row for part in (reference_rows(), read_rows()) for row in part)
    _rows(names, rows, fmt, len(names), width, out)
