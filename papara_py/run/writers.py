"""The run file's rows as the stages make them (on the writer thread): a decoded batch's
alignments in the run file's forms and its numeric results (`write_batch`), a stretch's string
fields (`write_stretch`), and a sample's run file completed with its record and committed after
its last batch (`commit_sample`), its summary line counting the outliers.
"""
from __future__ import annotations

import time
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.io.paths import alignment_forms
from papara_py.io.read_stream import Stretch
from papara_py.io.reads import STATUS_ALIGNED, STATUSES
from papara_py.io.run_writer import RunWriter
from papara_py.model.decode import Decoded
from papara_py.model.fixed_point import PROB_ONE
from papara_py.model.outliers import OutlierNull, find_outliers
from papara_py.model.pp_code import pp_digits
from papara_py.phylo.profiles import EdgeProfiles
from papara_py.report.page import gcups_text
from papara_py.run.config import RunSummary
from papara_py.run.devices import Devices
from papara_py.run.inputs import Work, log_inputs
from papara_py.run.log import Reporter
from papara_py.run.record import Tally, run_record
from papara_py.run.samples import SampleRun


class BatchStrings(NamedTuple):
    """A decoded batch's string fields, per alignable read (`write_batch`), for `write_stretch`."""

    cigars: np.ndarray     # object [reads]: each read's CIGAR
    pp: np.ndarray         # object [reads]: each read's PP line ("" where the run has no posteriors)


def write_batch(writer: RunWriter, batch: np.ndarray, candidates: Candidates, decoded: Decoded,
                m: int) -> BatchStrings:
    """One decoded batch's numeric results scattered into the per-read datasets (`batch`: the
    reads' rows, in input order): its alignments turned into the run file's forms (io/paths.py),
    the candidates with their weights. Returns the batch's string fields, which go with its
    stretch's (`write_stretch`)."""
    starts, cigars, rows = alignment_forms(decoded.columns, decoded.offsets, decoded.residues, m)
    weights = decoded.weights / np.float32(PROB_ONE)
    # batches are slices of the alignable reads in input order; write contiguous runs
    breaks = np.flatnonzero(np.diff(batch) != 1) + 1
    for lo, hi in zip(np.concatenate(([0], breaks)), np.concatenate((breaks, [len(batch)]))):
        writer.write_reads(int(batch[lo]), {
            "best_edge": candidates.edge[lo:hi, 0], "score": candidates.score[lo:hi, 0], "start": starts[lo:hi],
            "aligned": rows[lo:hi], "candidates/edge": candidates.edge[lo:hi],
            "candidates/score": np.where(candidates.edge[lo:hi] >= 0, candidates.score[lo:hi], -1),
            "candidates/weight": weights[lo:hi],
        })
    if decoded.pp is None:
        pp = np.full(len(batch), "", dtype=object)
    else:
        text = pp_digits(decoded.pp).tobytes().decode("ascii")
        bounds = decoded.offsets.tolist()
        pp = np.array([text[a:b] for a, b in pairwise(bounds)], dtype=object)
    return BatchStrings(np.array(cigars, dtype=object), pp)


def write_stretch(writer: RunWriter, stretch: Stretch, chunk: int, reverse: np.ndarray | None = None,
                  batch: BatchStrings | None = None) -> None:
    """The string fields of a stretch's rows: names, statuses and sequences (as given), and the
    strand, CIGAR and PP line (of its aligned reads, `reverse` and `batch` per alignable read;
    "+", "" and "" for the others), `chunk` rows at a time (a stretch may hold any number of reads
    that are not aligned; memory stays bounded). Each string field is written once: h5py's
    variable-length string writes are the writer thread's largest cost.
    """
    reads = stretch.reads
    strand = np.full(len(reads), "+", dtype=object)
    cigar = np.full(len(reads), "", dtype=object)
    pp = np.full(len(reads), "", dtype=object)
    if reverse is not None:
        strand[stretch.alignable] = np.where(reverse, "-", "+")
        cigar[stretch.alignable] = batch.cigars
        pp[stretch.alignable] = batch.pp
    for lo in range(0, len(reads), chunk):
        hi = min(len(reads), lo + chunk)
        # the sequences: one decoded text and a str slice per read (a numpy slice, bytes and str
        # per read held the GIL three times as long)
        first, ends = reads.offsets[lo], reads.offsets[lo + 1:hi + 1]
        text = reads.residues[first:ends[-1]].tobytes().decode("ascii")
        bounds = (np.concatenate(([first], ends)) - first).tolist()
        writer.write_reads(stretch.first + lo, {
            "names": np.array(reads.names[lo:hi], dtype=object),
            "status": np.array(STATUSES, dtype=object)[stretch.statuses[lo:hi]],
            "strand": strand[lo:hi], "cigar": cigar[lo:hi], "pp": pp[lo:hi],
            "sequence": np.array([text[a:b] for a, b in pairwise(bounds)], dtype=object)})


def _fitting(sample: SampleRun, null: OutlierNull | None) -> str:
    """How many of the aligned reads fit the reference and how many are outliers, by the outlier
    rule (model/outliers.py) on the best scores and informative residues the writer kept (a read's row in the
    run file has the same: `run_outliers` on the committed file counts the same reads)."""
    scores = np.concatenate(sample.best_scores) if sample.best_scores else np.zeros(0, np.int32)
    if not scores.size:
        return ""
    informative = np.concatenate(sample.informative)
    outliers = find_outliers(scores, informative, np.ones(scores.size, bool), null,
                             sample.inputs.alphabet.name).indices.size
    if not outliers:
        return " (all fit the reference: no outliers)"
    return (f" ({scores.size - outliers} of them fit the reference, {outliers} outliers: left out of exports; "
            f"papara-py report explains)")


def commit_sample(sample: SampleRun, profiles: EdgeProfiles, devices: Devices, work: Work, tally: Tally,
            reporter: Reporter, run_started: float, null: OutlierNull | None) -> None:
    """A sample's last batch written: its record (with the outlier `null` of its read lengths,
    None where it has none), then its run file committed (writer thread)."""
    config, inputs, timings = sample.config, sample.inputs, sample.timings
    writer = sample.writer(work.k)
    writer.set_read_count(inputs.reads.rows)
    log_inputs(config, reporter, inputs)
    writer.write_run_record(run_record(config, inputs, profiles, devices, work, tally, timings)
                            | ({"sample": {"number": sample.number, "of": sample.count}} if sample.count > 1 else {})
                            | ({"outlier_null": null.record()} if null is not None else {}))
    timings["total"] = time.perf_counter() - run_started
    writer.write_run_record({"timings_seconds": timings})
    reporter.log.check()  # no run file is committed after a log fault
    sample.commit()
    reporter.record(f"{sample.label}: phases (s): "
                    + ", ".join(f"{name} {seconds:.3f}" for name, seconds in timings.items())
                    + f"; {tally.cells} cells, {gcups_text(tally.gcups)} GCUPS")
    counts = tally.status_counts
    reporter.notice(("" if sample.count == 1 else f"{sample.label}: ")
                    + f"{tally.n_alignable} of {tally.n_reads} reads aligned" + _fitting(sample, null)
                    + "".join(f", {n} {s}" for s, n in counts.items() if s != STATUS_ALIGNED)
                    + f"; scoring {timings['scoring']:.2f} s ({gcups_text(tally.gcups)} GCUPS); wrote {config.output}")
    sample.summary = RunSummary(config.output, tally.n_reads, tally.n_alignable, counts, dict(timings), tally.gcups)
