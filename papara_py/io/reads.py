"""Compact storage of the reads: one byte array for all residues plus offsets.

Python objects per read would cost ~100 bytes of overhead each; millions of reads are stored as
names, one concatenated uint8 array of upper-cased residues (as given, so exports show what the
user supplied) and int64 offsets. Encoded state sets (of the reads' alphabet: the reference
alignment's) are derived on demand.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

import numpy as np

from papara_py.phylo.encoding import COMPLEMENT_ASCII, COMPLEMENT_RNA, DNA, Alphabet

STATUS_ALIGNED = "aligned"
STATUS_EMPTY = "empty"
STATUS_TOO_LONG = "too_long"
#: The status strings of the output, in the order `ReadSet.status_codes` numbers them.
STATUSES = (STATUS_ALIGNED, STATUS_EMPTY, STATUS_TOO_LONG)


@dataclass
class ReadChunk:
    """Consecutive reads as parsed, in bulk (io/read_input.iter_read_chunks): names, upper-cased
    residues (all reads' joined), each read's length (int64) and 1-based header line (int64)."""

    names: list[str]
    residues: bytes
    lengths: np.ndarray
    lines: np.ndarray

    def take(self, keep: np.ndarray) -> "ReadChunk":
        """The reads at the sorted indices `keep`."""
        offsets = np.zeros(len(self.names) + 1, np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        residues = b"".join(self.residues[offsets[q]:offsets[q + 1]] for q in keep.tolist())
        return ReadChunk([self.names[q] for q in keep.tolist()], residues, self.lengths[keep], self.lines[keep])


@dataclass
class ReadSet:
    """Reads in input order: `residues[offsets[q]:offsets[q+1]]` is read q (upper-case ASCII) in
    `alphabet`'s letters."""

    names: list[str]
    residues: np.ndarray
    offsets: np.ndarray
    alphabet: Alphabet = DNA

    @classmethod
    def from_sequences(cls, records: Iterable[tuple[str, bytes]], alphabet: Alphabet = DNA) -> "ReadSet":
        """Collect (name, sequence) pairs; sequences are upper-cased.

        The arrays wrap the buffers they were collected in: a copy at the end would double the
        peak memory of a run with millions of reads (a list of Python ints would cost 36 bytes a
        read for the offsets)."""
        names: list[str] = []
        residues = bytearray()
        offsets = array("q", [0])
        for name, sequence in records:
            names.append(name)
            residues += sequence.upper()
            offsets.append(len(residues))
        return cls(names, np.frombuffer(residues, dtype=np.uint8), np.frombuffer(offsets, dtype=np.int64), alphabet)

    @classmethod
    def from_chunks(cls, chunks: Iterable[ReadChunk], alphabet: Alphabet = DNA) -> "ReadSet":
        """Collect parsed chunks (residues already upper-case), a chunk at a time: no Python
        object per read but its name (1M reads: notebook/BENCHMARKS.md, "Reading reads")."""
        names: list[str] = []
        residues = bytearray()
        offsets = array("q", [0])
        for chunk in chunks:
            names += chunk.names
            ends = np.cumsum(chunk.lengths, dtype=np.int64) + len(residues)
            residues += chunk.residues
            offsets.frombytes(ends.tobytes())
        return cls(names, np.frombuffer(residues, dtype=np.uint8), np.frombuffer(offsets, dtype=np.int64), alphabet)

    @classmethod
    def concatenate(cls, parts: list[ReadSet]) -> ReadSet:
        """The reads of `parts` (of one alphabet, at least one) one after another, in new arrays."""
        if len(parts) == 1:
            return parts[0]
        ends = np.cumsum([part.offsets[-1] - part.offsets[0] for part in parts])
        offsets = np.concatenate([[0]] + [part.offsets[1:] - part.offsets[0] + start
                                          for part, start in zip(parts, np.concatenate(([0], ends[:-1])))])
        return cls([name for part in parts for name in part.names],
                   np.concatenate([part.residues[part.offsets[0]:part.offsets[-1]] for part in parts]),
                   offsets.astype(np.int64), parts[0].alphabet)

    def rows(self, first: int, end: int) -> ReadSet:
        """Reads first .. end - 1 as a new ReadSet sharing this one's arrays (no copy of residues)."""
        return ReadSet(self.names[first:end], self.residues, self.offsets[first:end + 1], self.alphabet)

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def lengths(self) -> np.ndarray:
        """int64 [Q]; computed once (every batch looks its reads up in it)."""
        return np.diff(self.offsets)

    @cached_property
    def informative(self) -> np.ndarray:
        """int64 [Q]: each read's residues other than N / X (`Alphabet.informative_counts`), the
        outlier rule's lengths; computed once."""
        return self.alphabet.informative_counts(self.residues, self.offsets)

    def status_codes(self, n_columns: int) -> np.ndarray:
        """Why each read can or cannot be aligned against `n_columns` reference columns, as an
        index into STATUSES per read (one byte a read: a million Python strings would not be)."""
        lengths = self.lengths
        codes = np.full(len(lengths), STATUSES.index(STATUS_ALIGNED), dtype=np.uint8)
        codes[lengths >= n_columns] = STATUSES.index(STATUS_TOO_LONG)
        codes[lengths == 0] = STATUSES.index(STATUS_EMPTY)
        return codes

    def select(self, indices: np.ndarray, reverse: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Encoded residues and offsets of a subset of reads, reverse-complemented where flagged.

        Returns (codes [total] of the alphabet's element type, offsets int64 [len(indices) + 1])
        for the kernels.
        """
        residues, offsets = self.select_residues(indices, reverse)
        return self.alphabet.read_code[residues], offsets

    def select_residues(self, indices: np.ndarray,
                        reverse: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Like `select`, but the oriented residues as upper-case ASCII (what the output shows).

        One GIL-free numba pass: the per-read copies and reverse complements it replaced were
        the engine's master thread's largest cost in a 1M-read run, each small numpy call
        waiting for the GIL behind the writer and traceback threads (notebook/BENCHMARKS.md, "Streaming
        the reads")."""
        indices = np.asarray(indices, dtype=np.int64)
        flips = np.zeros(len(indices), np.bool_) if reverse is None else np.asarray(reverse, dtype=np.bool_)
        if flips.any() and not self.alphabet.stranded:
            raise ValueError(f"{self.alphabet.name} reads have no reverse complement")
        from papara_py.io.jit import gather_oriented

        return gather_oriented(self.residues, self.offsets, indices, flips, COMPLEMENT_ASCII, COMPLEMENT_RNA)
