"""The reads, parsed on a thread of their own while the run goes on, handed out in stretches.

Why: parsing a million reads takes 3-4 s (notebook/BENCHMARKS.md, "Streaming the reads"), and a run that
read them all before scoring any spent that time with the GPU idle. A ReadStream parses on a
background thread from the moment the alignment is known; the first batch is cut as soon as
enough reads are parsed and the rest of the file is read while the first batches are scored.

The input rows are handed out as consecutive `Stretch`es, each holding up to `batch_reads`
alignable reads (the batch the engine scores) and every input row exactly once, in order (the
rows the writer writes with that batch, alignable or not). How the reads are cut into batches
(`plan_stretches`): a stretch is cut only when `min_batches * batch_reads` alignable reads past
its start are parsed, or the input has ended; what is left at the end is split into equal
batches (`split_batches`), at least `min_batches` of at least `min_batch_reads` reads where
there are that many. A small input is thus cut as if it had been read whole, and a large one
ends with small batches, whose traceback and writing nothing overlaps. Batches never depend on
how fast the file is read: the cuts fall on the same reads whatever the timing (and the results
do not depend on the batches at all: DESIGN 6).

Errors: whatever the parser raises (an InputError for bad reads) is raised again on the
thread that asks for the reads at or after the point of failure, so bad input at the end of a
file stops the run there (the output is atomic: nothing is left behind).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from papara_py.io.reads import STATUS_ALIGNED, STATUSES, ReadChunk, ReadSet
from papara_py.phylo.encoding import Alphabet

_ALIGNED = STATUSES.index(STATUS_ALIGNED)


@dataclass
class Stretch:
    """Input rows first .. first + len(reads) - 1: their reads, each one's status (index into
    STATUSES) and which of them (indices into `reads`, ascending) are scored."""

    first: int
    reads: ReadSet
    statuses: np.ndarray
    alignable: np.ndarray

    @property
    def end(self) -> int:
        return self.first + len(self.reads)


def split_batches(alignable: np.ndarray, batch_reads: int, min_batches: int,
                  min_batch_reads: int) -> list[np.ndarray]:
    """`alignable` (ascending) in equal batches of at most `batch_reads`: at least `min_batches`
    of them where each keeps `min_batch_reads` reads."""
    n = len(alignable)
    if n == 0:
        return []
    count = max(-(-n // batch_reads), min(min_batches, n // min_batch_reads), 1)
    return np.array_split(alignable, count)


class ReadStream:
    """Reads from `chunks` (parsed on a thread started by `start`) for stretches of the input.

    `wait_for_residues` lets a caller decide on a prefix of the input (`--device auto`);
    `stretches` hands every row out once; `close` stops the thread (it may be called at any time,
    also before the input ends). `rows`, `read_seconds` and `ended` describe what was read.
    """

    def __init__(self, chunks: Iterable[ReadChunk], alphabet: Alphabet, n_columns: int) -> None:
        self._chunks = chunks
        self._alphabet = alphabet
        self._n_columns = n_columns
        self._changed = threading.Condition()
        self._parsed: list[ReadSet] = []  # parsed and not yet taken by `stretches`
        self._parsed_alignable = 0
        self._ended = False
        self._stopped = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="papara-reads", daemon=True)
        #: input rows parsed so far, and the residues of the alignable ones among them
        self.rows = 0
        self.alignable_residues = 0
        #: the parsing thread's wall time, and the time callers waited for it
        self.read_seconds = 0.0
        self.wait_seconds = 0.0
        #: how many stretches `stretches` hands out in all, once it knows (the input has ended)
        self.stretch_count: int | None = None

    def start(self) -> ReadStream:
        self._thread.start()
        return self

    @property
    def ended(self) -> bool:
        """True once every read is parsed (and no error stopped the parsing)."""
        with self._changed:
            return self._ended and self._error is None

    def close(self) -> None:
        """Stop parsing after the chunk in hand. Not waited for: the thread may be blocked on a
        pipe that never ends (a run that failed must still end)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def _read(self) -> None:
        started = time.perf_counter()
        chunks = iter(self._chunks)
        try:
            for chunk in chunks:
                reads = ReadSet.from_chunks([chunk], self._alphabet)
                lengths = reads.lengths
                alignable = (lengths > 0) & (lengths < self._n_columns)
                with self._changed:
                    if self._stopped:
                        return
                    self._parsed.append(reads)
                    self._parsed_alignable += int(np.count_nonzero(alignable))
                    self.rows += len(reads)
                    self.alignable_residues += int(lengths[alignable].sum())
                    self._changed.notify_all()
        except BaseException as error:  # noqa: BLE001 - raised again where the reads are asked for
            with self._changed:
                self._error = error
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            self.read_seconds = time.perf_counter() - started
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _wait(self, ready: Callable[[], bool]) -> None:
        """Wait (under the lock) until `ready()` or the input ended; raise the parser's error."""
        started = time.perf_counter()
        self._changed.wait_for(lambda: self._error is not None or self._ended or self._stopped or ready())
        self.wait_seconds += time.perf_counter() - started
        if self._error is not None:
            raise self._error
        if self._stopped:
            raise RuntimeError("the read stream was closed")

    def wait_for_residues(self, residues: int) -> tuple[int, bool]:
        """Wait until the alignable reads parsed hold `residues` residues or the input has ended;
        returns (the residues parsed, whether that is all of them)."""
        with self._changed:
            self._wait(lambda: self.alignable_residues >= residues)
            return self.alignable_residues, self._ended

    def stretches(self, batch_reads: int, min_batches: int, min_batch_reads: int) -> Iterator[Stretch]:
        """Every input row once, in consecutive stretches (the module docstring: how they are cut).

        The reads not yet handed out are a pool: pool rows `start` on, of which `alignable[taken:]`
        are scored. Parsed reads join the pool (a copy of what is left of it) only when it holds
        too few for the next cut, so a file parsed faster than it is scored is copied about once.
        """
        lookahead = max(min_batches * batch_reads, batch_reads + 1)
        pool = ReadSet.from_chunks([], self._alphabet)
        statuses, alignable = np.empty(0, np.uint8), np.empty(0, np.int64)
        start = taken = first = 0  # first: the input row of pool row `start`
        handed = 0
        while True:
            if len(alignable) - taken < lookahead:
                pooled = len(alignable) - taken
                with self._changed:
                    self._wait(lambda: pooled + self._parsed_alignable >= lookahead)  # noqa: B023 - called here
                    parsed, self._parsed, self._parsed_alignable = self._parsed, [], 0
                if parsed:
                    pool = ReadSet.concatenate([pool.rows(start, len(pool)), *parsed])
                    statuses = pool.status_codes(self._n_columns)
                    alignable = np.flatnonzero(statuses == _ALIGNED)
                    start = taken = 0
                if len(alignable) - taken < lookahead:  # the wait ended with the input: the last stretches
                    rest = list(_split_rest(first, pool.rows(start, len(pool)), statuses[start:],
                                            alignable[taken:] - start, batch_reads, min_batches, min_batch_reads))
                    self.stretch_count = handed + len(rest)
                    yield from rest
                    return
            end = int(alignable[taken + batch_reads])  # the next stretch starts with the next alignable read
            yield Stretch(first, pool.rows(start, end), statuses[start:end], alignable[taken:taken + batch_reads] - start)
            first, start, taken, handed = first + end - start, end, taken + batch_reads, handed + 1


def _split_rest(first: int, pool: ReadSet, statuses: np.ndarray, alignable: np.ndarray, batch_reads: int,
                min_batches: int, min_batch_reads: int) -> Iterator[Stretch]:
    """The last rows (`pool`, from input row `first`) as stretches, one per batch of
    `split_batches`: each from its first read to the next batch's, the first from the pool's
    first row and the last to its end (one stretch without reads when no row is alignable,
    none when there is no row)."""
    batches = split_batches(alignable, batch_reads, min_batches, min_batch_reads)
    if not batches:
        if len(pool):
            yield Stretch(first, pool, statuses, alignable)
        return
    starts = [0] + [int(batch[0]) for batch in batches[1:]]
    for batch, lo, hi in zip(batches, starts, starts[1:] + [len(pool)]):
        yield Stretch(first + lo, pool.rows(lo, hi), statuses[lo:hi], batch - lo)
