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

import numpy as np

from papara_py.io.cigar import parse_cigar
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile
from papara_py.io.outputs import output_stream
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


def _rows(named_rows: Iterator[tuple[str, bytes]], fmt: str, n_rows: int, width: int, out: IO[bytes]) -> None:
    if fmt == "phylip":
        out.write(f"{n_rows} {width}\n".encode())
        for name, row in named_rows:
            out.write(name.encode() + b" " + row + b"\n")
    else:
        for name, row in named_rows:
            out.write(b">" + name.encode() + b"\n" + row + b"\n")


def export(run_path: str, fmt: str, output: str) -> None:
    """Write `run_path`'s alignment in `fmt` ("phylip", "fasta" or "epa") to `output`: atomically to a
    regular file, directly to `-` (standard output), a device or a FIFO (io/outputs.py)."""
    with RunFile(run_path) as run:
        aligned_ids = np.flatnonzero(run.column("status") == STATUS_ALIGNED)
        skipped = run.n_reads - len(aligned_ids)
        with output_stream(output) as out:
            if fmt == "epa":
                names = run.names()[aligned_ids]
                rows = zip(names, (row.tobytes() for row in run.aligned_rows(aligned_ids)))
                _rows(rows, "fasta", len(aligned_ids), run.n_columns, out)
            else:
                width, named_rows = extended_rows(run, aligned_ids)
                _rows(named_rows, fmt, run.n_reference + len(aligned_ids), width, out)
    if skipped:
        print(f"papara-py: {skipped} reads without an alignment (status other than \"aligned\") "
              f"are not in {output}", file=sys.stderr)


def extended_rows(run: RunFile, aligned_ids: np.ndarray) -> tuple[int, Iterator[tuple[str, bytes]]]:
    """The extended alignment: its width and (name, row) for the reference, then reads `aligned_ids`.

    Insertion columns are added wherever a read inserts residues (module docstring); rows are
    produced one at a time, so only the reference and the per-read columns are held in memory.
    """
    reference = run.reference_alignment()
    m = run.n_columns
    starts = run.column("start")
    cigars = run.column("cigar")
    strands = run.column("strand")
    read_names = run.names()
    widest = np.zeros(m + 1, dtype=np.int64)  # insertion columns before reference column p
    for q in aligned_ids:
        for position, _, length in insertion_runs(int(starts[q]), cigars[q]):
            widest[position] = max(widest[position], length)
    # extended index of reference column c, and of the first insertion column before it
    insert_at = np.arange(m + 1) + np.concatenate(([0], np.cumsum(widest)[:-1]))
    column_at = insert_at[:m] + widest[:m]
    width = int(m + widest.sum())

    def rows() -> Iterator[tuple[str, bytes]]:
        for name, row in zip(run.reference_names, reference):
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = row
            yield name, extended.tobytes()
        for q, aligned in zip(aligned_ids, run.aligned_rows(aligned_ids)):
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = aligned
            residues = oriented_sequence(run.column("sequence", int(q)), strands[q])
            for position, offset, length in insertion_runs(int(starts[q]), cigars[q]):
                first = insert_at[position]
                extended[first:first + length] = residues[offset:offset + length]
            yield read_names[q], extended.tobytes()

    return width, rows()
