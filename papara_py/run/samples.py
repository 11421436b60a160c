"""The samples of a run: several reads files aligned against one reference in one process.

Why: the reference's part of a run (tree and alignment read, profiles built, the GPUs started,
numba's first use) takes about a second whatever the reads, as long as an H100 scores a
40,000-read sample in; and the last batch of a run is traced back and written with the GPU idle
(notebook/BENCHMARKS.md, "Sample scale"). A run given several reads files (`-r A.fa B.fa --outdir DIR`)
does the reference's part once, and the samples' batches stream through one engine, one sample
after the other, so that the GPUs score the next sample while the previous one's last batches are
traced back and written, and the next sample's reads are parsed while the previous one is scored.

Each sample still gets its own run file, the one a run of it alone would write (same rows, same
results; its run record says which sample of how many it was), committed as soon as its last
batch is written. Bad reads in a sample end the run after the samples before it are complete; a
signal or any other error keeps the samples already committed. Either way the others leave
nothing behind (io/outputs.py).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass

import numpy as np

from papara_py.errors import InputError
from papara_py.io.read_stream import Stretch
from papara_py.io.reads import STATUS_ALIGNED, STATUSES
from papara_py.io.run_writer import RunWriter, run_writer

#: Suffixes a reads file's name loses to name its run file in --outdir (compression first).
_COMPRESSION_SUFFIXES = (".gz", ".bgz", ".bz2", ".xz", ".zst")
_SEQUENCE_SUFFIXES = (".fasta", ".fastq", ".fa", ".fq", ".fna", ".faa", ".fas", ".seq", ".reads")


@dataclass(frozen=True)
class Sample:
    """One reads file of a run and the run file its reads are aligned into."""

    reads: str
    output: str


def output_name(reads: str) -> str:
    """The run file name of a reads file in --outdir: its name without directories, compression
    and sequence suffixes, plus `.h5` (`lane1/S3.fastq.gz` -> `S3.h5`; `-`, standard input, ->
    `stdin.h5`)."""
    if reads == "-":
        return "stdin.h5"
    name = os.path.basename(os.path.normpath(reads))
    for suffixes in (_COMPRESSION_SUFFIXES, _SEQUENCE_SUFFIXES):
        lowered = name.lower()
        cut = next((suffix for suffix in suffixes if lowered.endswith(suffix) and len(name) > len(suffix)), None)
        if cut:
            name = name[:-len(cut)]
    return name + ".h5"


def samples_in(reads: list[str], output: str | None, outdir: str | None) -> list[Sample]:
    """The run's samples from -r, -o and --outdir: one reads file into -o (default papara.h5), or
    each into DIR/`output_name` with --outdir. Two reads files that would write one run file, or
    several without --outdir, are refused (InputError) before any work."""
    if outdir is None:
        if len(reads) > 1:
            raise InputError("-r", f"{len(reads)} reads files were given: each is aligned into a run file of "
                                   f"its own, so give --outdir DIR (where DIR/NAME.h5 is written for each "
                                   f"NAME.fa) instead of -o")
        return [Sample(reads[0], "papara.h5" if output is None else output)]
    if output is not None:
        raise InputError("-o", "give either -o FILE (one reads file) or --outdir DIR (a run file per reads "
                               "file), not both")
    if not os.path.isdir(outdir):
        raise InputError("--outdir", f"the output directory {outdir} does not exist (or is not a directory)")
    samples, seen = [], {}
    for path in reads:
        if path in seen:
            raise InputError(path, "this reads file is given twice with -r; give each sample once")
        target = os.path.join(outdir, output_name(path))
        clash = next((other for other, made in seen.items() if made == target), None)
        if clash is not None:
            raise InputError(path, f"{clash} and {path} would both be written to {target}; give reads files "
                                   f"whose names differ (without directories and suffixes), or run them apart")
        seen[path] = target
        samples.append(Sample(path, target))
    return samples


class SampleRun:
    """One sample on its way through a run's stages (run/stages.ScoreTraceWrite).

    `inputs` is set when its reads are opened (the first at once, each next one when the reads
    before it are all parsed). Its run file opens at its first write and is committed after its
    last (`commit`), or removed (`abandon`). The counters are the Tally's, kept apart per sample;
    the engine's master thread, the caller of the engine and the writer thread each update their
    own.
    """

    def __init__(self, number: int, count: int, config, timings: dict[str, float]) -> None:
        # config: the run's run/config.RunConfig for this sample; inputs: its run/inputs.Inputs (not
        # annotated: those modules import this one, and the layout allows no import cycle)
        self.number, self.count, self.config = number, count, config
        self.inputs = None
        self.timings = timings  # the first sample's holds the run's stages before the scoring
        for stage in ("traceback", "output", "strand"):
            timings.setdefault(stage, 0.0)
        self.statuses = np.zeros(len(STATUSES), np.int64)
        self.strand_counts = {"+": 0, "-": 0, "scored_both": 0}
        self.traced = {"gpu": 0, "cpu": 0}
        self.scored = 0                           # batches back from the engine
        self.written = 0                          # stretches written
        self.entered = False                      # its first batch went to the engine
        self.scoring_from = float("inf")          # when the scorers first took work of its batches
        self.cells_before = 0                     # the guided search's cells before its first batch
        self.edge_batches_before = 0              # ... and its batches
        self.cells = 0                            # the cells its reads were scored in
        self.edges_scored = {"mean": 1.0, "min": 1.0, "max": 1.0}  # share of the edges per read
        self.own_scoring = 0.0                    # its scoring span (run/stages.ScoreTraceWrite)
        self.run_scoring = 0.0                    # the engine's start .. its last batch scored
        self.best_scores: list[np.ndarray] = []   # per written batch: its aligned reads' best score
        self.informative: list[np.ndarray] = []   # ... and their residues but N / X (the outlier rule's inputs)
        self.null_lengths: set[int] = set()       # the outlier null's lengths its reads need
        self.summary = None                       # its run/config.RunSummary, once committed
        self.failed = False                       # its reads are bad: nothing more of it is written
        self.complete = False
        self.lock = threading.Lock()              # traceback threads add up `timings`, `traced`
        self._writer: RunWriter | None = None
        self._closer = ExitStack()

    @property
    def label(self) -> str:
        """How notices name the sample: its reads file, with its number when there are several."""
        return self.config.reads if self.count == 1 else f"sample {self.number} of {self.count} ({self.config.reads})"

    def all_stretches_made(self, made: int) -> bool:
        """Whether `made` is every stretch of its reads (known once they are all parsed)."""
        return self.inputs.reads.stretch_count == made

    def writer(self, k: int) -> RunWriter:
        """Its run file (on the writer thread), opened with the reference rows at the first call."""
        if self._writer is None:
            started = time.perf_counter()
            inputs = self.inputs
            self._writer = self._closer.enter_context(
                run_writer(self.config.output, inputs.n_columns, k, self.config.command_line))
            self._writer.write_reference(inputs.alignment.names, inputs.alignment.rows,
                                         inputs.edge_tree.numbered_newick)
            self.timings["output"] += time.perf_counter() - started
        return self._writer

    def count_batch(self, stretch: Stretch, plan, reverse: np.ndarray, cells_per_residue: int) -> None:
        """A scored batch's statuses, cells and orientations (the engine's caller; `cells_per_residue`:
        edges x columns of the exhaustive search, 0 with the guided search, whose cells the
        stages take from the search's totals)."""
        self.statuses += np.bincount(stretch.statuses, minlength=len(STATUSES))
        self.cells += int(stretch.reads.lengths[plan.reads].sum()) * cells_per_residue
        self.strand_counts["scored_both"] += len(plan.second)
        self.strand_counts["-"] += int(np.count_nonzero(reverse))
        self.strand_counts["+"] += int(len(reverse) - np.count_nonzero(reverse))

    def first_batch_entering(self, search) -> None:
        """Its first batch goes to the engine now (the engine's master thread): the guided
        search's (`search`, or None) totals before it."""
        self.entered = True
        self.cells_before = search.stats.cells if search else 0
        self.edge_batches_before = len(search.stats.edges_per_read) if search else 0

    def batch_scored(self, started: float) -> None:
        """One of its batches is back from the engine; the scorers first took work of it at
        `started` (the engine's `batch_started`)."""
        self.scored += 1
        self.scoring_from = min(self.scoring_from, started)

    def last_batch_scored(self, now: float, run_scoring: float, search, n_edges: int) -> None:
        """Its last batch is back from the engine at `now` (`run_scoring`: the engine's scoring
        seconds so far). Its own scoring span: the engine's whole time for the first sample; for a
        later one, from the scorers' first take of any of its batches (which may be scored beside
        the previous sample's last ones: the spans of samples may overlap, never undercount). With
        the guided search, its cells and edge fractions: the search's totals now hold its batches
        and none after."""
        self.own_scoring = run_scoring if self.number == 1 else now - self.scoring_from
        self.run_scoring = run_scoring
        if search:
            self.cells = search.stats.cells - self.cells_before
            self.edges_scored = search.stats.edge_fraction(n_edges, since=self.edge_batches_before)

    @property
    def n_alignable(self) -> int:
        return int(self.statuses[STATUSES.index(STATUS_ALIGNED)])

    @property
    def status_counts(self) -> dict[str, int]:
        return {name: int(n) for name, n in sorted(zip(STATUSES, self.statuses)) if n}

    def commit(self) -> None:
        """Its run file complete: renamed into place (io/outputs.atomic_path)."""
        self._closer.close()
        self.complete = True

    def abandon(self, error: BaseException) -> None:
        """Its run file removed (the run failed with `error`); its reads' parsing stopped."""
        if not self.complete:
            with suppress(Exception):  # the run's own error is the one to report
                self._closer.__exit__(type(error), error, error.__traceback__)
        if self.inputs is not None:
            self.inputs.reads.close()
