"""The run file's rows as the stages make them (on the writer thread): a decoded batch's
alignments in the run file's forms and its numeric results (`write_batch`), a stretch's string
fields (`write_stretch`), and a sample's run file completed with its record and committed after
its last batch (`commit_sample`), its summary line counting the outliers of the committed file.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.io.paths import batch_forms
from papara_py.io.read_stream import Stretch
from papara_py.io.reads import STATUS_ALIGNED, STATUSES
from papara_py.io.run_file import RunFile
from papara_py.io.run_writer import RunWriter
from papara_py.io.strings import PackedStrings
from papara_py.model.decode import Decoded
from papara_py.model.fixed_point import PROB_ONE
from papara_py.model.outliers import run_outliers
from papara_py.model.posterior import pp_digits
from papara_py.phylo.profiles import EdgeProfiles
from papara_py.run.config import RunSummary
from papara_py.run.devices import Devices
from papara_py.run.inputs import Work, log_inputs
from papara_py.run.log import Reporter
from papara_py.run.record import Tally, run_record
from papara_py.run.samples import SampleRun

#: The strand field's two values, by `reverse`.
STRANDS = ("+", "-")


class BatchStrings(NamedTuple):
    """A decoded batch's string fields, per alignable read (`write_batch`), for `write_stretch`."""

    cigars: PackedStrings      # each read's CIGAR
    pp: PackedStrings | None   # each read's PP line; None where the run has no posteriors ("")


def write_batch(writer: RunWriter, batch: np.ndarray, candidates: Candidates, decoded: Decoded,
                m: int) -> BatchStrings:
    """One decoded batch's numeric results into the per-read datasets (`batch`: the reads' rows,
    ascending): its alignments turned into the run file's forms (io/paths.py), the candidates
    with their weights. Returns the batch's string fields, which go with its stretch's
    (`write_stretch`).

    Rows from the batch's first to its last, each field in one write: the rows between (reads of
    the stretch that are not aligned) hold the datasets' fill values, which is what they read as
    unwritten. Every step is a numba or numpy call over the batch: no Python object per read."""
    first = int(batch[0])
    span = int(batch[-1]) + 1 - first
    at = np.asarray(batch, np.int64) - first
    starts, rows, cigar_bytes, cigar_ends = batch_forms(decoded.columns, decoded.offsets, decoded.residues, m, at,
                                                        span)
    weights = decoded.weights / np.float32(PROB_ONE)

    def spread(values: np.ndarray, fill) -> np.ndarray:
        if span == len(batch):
            return values
        out = np.full((span,) + values.shape[1:], fill, values.dtype)
        out[at] = values
        return out

    edges = candidates.edge
    writer.write_reads(first, {
        "best_edge": spread(edges[:, 0], -1), "score": spread(candidates.score[:, 0], -1),
        "start": spread(starts, -1), "aligned": rows, "candidates/edge": spread(edges, -1),
        "candidates/score": spread(np.where(edges >= 0, candidates.score, -1), -1),
        "candidates/weight": spread(weights, 0),
    })
    cigars = PackedStrings(cigar_bytes, np.concatenate(([0], cigar_ends[:-1])), cigar_ends)
    if decoded.pp is None:
        return BatchStrings(cigars, None)
    return BatchStrings(cigars, PackedStrings(pp_digits(decoded.pp), decoded.offsets[:-1], decoded.offsets[1:]))


def write_stretch(writer: RunWriter, stretch: Stretch, chunk: int, reverse: np.ndarray | None = None,
                  batch: BatchStrings | None = None) -> None:
    """The string fields of a stretch's rows: names, statuses and sequences (as given), and the
    strand, CIGAR and PP line (of its aligned reads, `reverse` and `batch` per alignable read;
    "+", "" and "" for the others), `chunk` rows at a time (a stretch may hold any number of reads
    that are not aligned; memory stays bounded). Each string field is written once, from
    PackedStrings (io/strings.py): the sequences are the reads' residues as they lie, the CIGARs
    and PP lines the batch's bytes; only the names are joined.
    """
    reads = stretch.reads
    n = len(reads)
    strand = np.zeros(n, np.uint8)
    if reverse is not None:
        strand[stretch.alignable] = reverse
        cigar = batch.cigars.spread(n, stretch.alignable)
        pp = PackedStrings.empty(n) if batch.pp is None else batch.pp.spread(n, stretch.alignable)
    else:
        cigar = pp = PackedStrings.empty(n)
    offsets = np.asarray(reads.offsets, np.int64)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        writer.write_reads(stretch.first + lo, {
            "names": PackedStrings.of(reads.names[lo:hi]),
            "status": PackedStrings.table(STATUSES, stretch.statuses[lo:hi]),
            "strand": PackedStrings.table(STRANDS, strand[lo:hi]),
            "cigar": cigar.part(lo, hi), "pp": pp.part(lo, hi),
            "sequence": PackedStrings(reads.residues, offsets[lo:hi], offsets[lo + 1:hi + 1])})


def _fitting(path: str, tally: Tally) -> str:
    """How many of the aligned reads fit the reference and how many are outliers, by the outlier
    rule (model/outliers.py) on the committed run file `path`: the per-read scores and lengths are
    not held while the run is written, so they are read back (status, best edge, score and the
    sequences' lengths: about a second for a million reads)."""
    if not tally.n_alignable:
        return ""
    with RunFile(path) as run:
        outliers = len(run_outliers(run).indices)
    if not outliers:
        return " (all fit the reference: no outliers)"
    return (f" ({tally.n_alignable - outliers} of them fit the reference, {outliers} outliers: left out of exports; "
            f"papara-py report explains)")


def commit_sample(sample: SampleRun, profiles: EdgeProfiles, devices: Devices, work: Work, tally: Tally,
            reporter: Reporter, run_started: float) -> None:
    """A sample's last batch written: its record, then its run file committed (writer thread)."""
    config, inputs, timings = sample.config, sample.inputs, sample.timings
    writer = sample.writer(work.k)
    writer.set_read_count(inputs.reads.rows)
    log_inputs(config, reporter, inputs)
    writer.write_run_record(run_record(config, inputs, profiles, devices, work, tally, timings)
                            | ({"sample": {"number": sample.number, "of": sample.count}} if sample.count > 1 else {}))
    timings["total"] = time.perf_counter() - run_started
    writer.write_run_record({"timings_seconds": timings})
    reporter.log.check()  # no run file is committed after a log fault
    sample.commit()
    reporter.record(f"{sample.label}: phases (s): "
                    + ", ".join(f"{name} {seconds:.3f}" for name, seconds in timings.items())
                    + f"; {tally.cells} cells, {tally.gcups:.1f} GCUPS")
    counts = tally.status_counts
    reporter.notice(("" if sample.count == 1 else f"{sample.label}: ")
                    + f"{tally.n_alignable} of {tally.n_reads} reads aligned" + _fitting(config.output, tally)
                    + "".join(f", {n} {s}" for s, n in counts.items() if s != STATUS_ALIGNED)
                    + f"; scoring {timings['scoring']:.2f} s ({tally.gcups:.1f} GCUPS); wrote {config.output}")
    sample.summary = RunSummary(config.output, tally.n_reads, tally.n_alignable, counts, dict(timings), tally.gcups)
