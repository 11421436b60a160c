"""The outlier rule: which aligned reads fit the reference no better than random sequence.

A read that belongs to the reference scores far below random sequence of its length; a read of
another gene, another strand or no gene at all scores like random sequence. So every run scores a
null alongside its reads (run/stages.py): NULL_READS random reads of each power-of-two length
that its reads' lengths fall between (8 at least, below the alignment's width: `null_lengths`),
their residues drawn from the reference's own composition with a seed fixed per length
(`null_reads`), scored by the same engine, search and parameters as the reads. Their best
scores per residue give, for each length, the null's mean and SD (`OutlierNull`, kept in the
run record as `outlier_null`); a read is an outlier when its penalty per residue (best score /
its informative residues) exceeds the null's mean minus NULL_Z SDs at that many residues
(interpolated in log length between the null's lengths). A read's informative residues are all
but N (DNA) or X (protein): those stand for every state and fit any column at no cost, so they
would dilute the penalty of a read of no-calls into a perfect fit; a read with none (all N) is an
outlier, since it fits everywhere alike. A length's threshold depends on the
reference and the parameters alone, so shards of one run agree (merge joins their lengths) and a
sample of mostly foreign reads is flagged as such.

One rule for every part of papara-py that tells fitting reads from the rest: `papara-py report`
lists and draws the outliers (report/page.py), the exports leave them out unless asked
(`export --keep-outliers`, io/export.py's `keep`), the run's summary counts them and the API's
`Run.outliers` gives them. `find_outliers` is the rule on arrays; `run_outliers` applies it to a
run file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile
from papara_py.phylo.encoding import IS_GAP, Alphabet

#: Random reads of each length in the null: enough for a mean and SD per length (their standard
#: errors about a quarter and a fifth of the SD), few enough to add little to a small run.
NULL_READS = 16
#: A read is an outlier above the null's mean minus this many SDs per residue. A best score is a
#: minimum over alignments and branches, so its lower tail is Gumbel-like rather than normal:
#: about 1 random read in 100 scores below this (1 in 740 if it were normal).
NULL_Z = 3.0
#: The null's shortest length (shorter reads take its threshold); the others double it.
NULL_SHORTEST = 8
#: The null's random draws are fixed, so every run (and shard) of one reference scores the same null.
NULL_SEED = 20111


def null_lengths(read_lengths: np.ndarray, n_columns: int) -> np.ndarray:
    """The null lengths that reads of `read_lengths` need: for each, the powers of two next below
    and above it (its threshold is interpolated between them), kept to 8, 16, ... below
    `n_columns` (reads are shorter than the alignment); none where the alignment is 8 columns wide
    or less. Sorted, unique."""
    longest = NULL_SHORTEST
    while longest * 2 < n_columns:
        longest *= 2
    if longest >= n_columns:
        return np.zeros(0, dtype=np.int64)
    position = np.log2(np.maximum(np.asarray(read_lengths, dtype=np.float64), 1.0))
    bounds = np.concatenate((np.floor(position), np.ceil(position)))
    lengths = np.clip(2 ** bounds.astype(np.int64), NULL_SHORTEST, longest)
    return np.unique(lengths).astype(np.int64)


def null_reads(rows: np.ndarray, alphabet: Alphabet, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The null's reads of `lengths`, encoded as the engine takes reads: (codes, offsets), NULL_READS
    of each length in turn, each residue drawn at random from the residues of the alignment `rows`
    (uint8 ASCII [N, m], gaps left out): random sequence with the reference's composition. The
    draws of one length come from a generator seeded by (NULL_SEED, length) alone, so a length's
    reads are the same whichever other lengths a run (or shard) needs."""
    residues = rows[~IS_GAP[rows]]
    drawn = [residues[np.random.default_rng((NULL_SEED, int(length))).integers(0, residues.size,
                                                                              size=NULL_READS * int(length))]
             for length in lengths]
    picked = np.concatenate(drawn) if drawn else residues[:0]
    offsets = np.concatenate(([0], np.cumsum(np.repeat(np.asarray(lengths, dtype=np.int64), NULL_READS))))
    return alphabet.encode_read(picked), offsets.astype(np.int64)


@dataclass(frozen=True)
class OutlierNull:
    """The null's best scores per residue, summarised per length: `mean` and `sd` (float [L]) at
    `lengths` (int [L], ascending). `threshold_at` gives the rule's threshold for any length."""

    lengths: np.ndarray
    mean: np.ndarray
    sd: np.ndarray

    @classmethod
    def from_scores(cls, lengths: np.ndarray, scores: np.ndarray) -> "OutlierNull":
        """The null from the best scores of `null_reads(..., lengths)`' reads, in their order."""
        lengths = np.asarray(lengths, dtype=np.int64)
        per_residue = np.asarray(scores, dtype=np.float64).reshape(lengths.size, NULL_READS) / lengths[:, None]
        return cls(lengths, np.round(per_residue.mean(axis=1), 6), np.round(per_residue.std(axis=1, ddof=1), 6))

    @classmethod
    def union(cls, nulls: "list[OutlierNull]") -> "OutlierNull":
        """One null holding every length of `nulls` (a length's summary is the same in each: its
        reads depend on the length alone)."""
        lengths = np.concatenate([null.lengths for null in nulls])
        lengths, first = np.unique(lengths, return_index=True)
        return cls(lengths, np.concatenate([null.mean for null in nulls])[first],
                   np.concatenate([null.sd for null in nulls])[first])

    def subset(self, lengths: np.ndarray) -> "OutlierNull":
        """The null at `lengths` only (each one of this null's)."""
        keep = np.isin(self.lengths, lengths)
        return OutlierNull(self.lengths[keep], self.mean[keep], self.sd[keep])

    @property
    def thresholds(self) -> np.ndarray:
        """float [L]: the rule's threshold at each of `lengths`."""
        return self.mean - NULL_Z * self.sd

    def threshold_at(self, length: np.ndarray) -> np.ndarray:
        """The threshold for reads of `length` residues: linear in log2(length) between the null's
        lengths, the shortest's or the longest's beyond them."""
        position = np.log2(np.maximum(np.asarray(length, dtype=np.float64), 1.0))
        return np.interp(position, np.log2(self.lengths.astype(np.float64)), self.thresholds)

    def record(self) -> dict:
        """The run record's `outlier_null` (JSON)."""
        return {"reads_per_length": NULL_READS, "z": NULL_Z, "seed": NULL_SEED, "lengths": self.lengths.tolist(),
                "mean_per_residue": self.mean.tolist(), "sd_per_residue": self.sd.tolist()}

    @classmethod
    def in_run_record(cls, run_record: Mapping) -> "OutlierNull | None":
        """The null a run record keeps as `outlier_null` (`record`'s form), or None where it has
        none (run files written before the null, or of an alignment 8 columns wide or less)."""
        record = run_record.get("outlier_null")
        if not isinstance(record, dict) or not record.get("lengths"):
            return None
        return cls(np.array(record["lengths"], dtype=np.int64), np.array(record["mean_per_residue"], dtype=np.float64),
                   np.array(record["sd_per_residue"], dtype=np.float64))


@dataclass
class Outliers:
    """Reads whose best score per residue is no better than random sequence's.

    per_residue: float [Q], best score / informative residues (NaN where not aligned or where the
                 read has none).
    threshold:   float [Q], the rule's threshold at each read's informative residues (NaN where not
                 aligned).
    null:        the run's null, or None (no read is flagged then).
    indices:     the outliers, furthest above their threshold first (reads with no informative
                 residue before all).
    alphabet:    "dna" or "protein", for the rule in words.
    n_aligned:   how many reads the rule judged (aligned ones).
    """

    per_residue: np.ndarray
    threshold: np.ndarray
    null: OutlierNull | None
    indices: np.ndarray
    alphabet: str
    n_aligned: int

    @property
    def flagged(self) -> np.ndarray:
        """bool [Q]: True for the outliers (`indices`)."""
        flagged = np.zeros(len(self.per_residue), dtype=bool)
        flagged[self.indices] = True
        return flagged

    def rule(self) -> str:
        """The rule in words, with this run's numbers."""
        if self.null is None and not self.n_aligned:
            return "No read was aligned, so no read is an outlier."
        if self.null is None:
            return ("This run has no null (its alignment is 8 columns wide or less, or its run file was written "
                    "before papara-py scored one), so no read is flagged as an outlier.")
        shown = ", ".join(f"{t:.2f} at {n}" for n, t in zip(self.null.lengths.tolist(), self.null.thresholds))
        return (f"A read is an outlier when its penalty per residue (best score / read length) is no better than "
                f"random sequence's: above the mean minus {NULL_Z:g} standard deviations of the penalties per "
                f"residue of {NULL_READS} random reads of its length (residues drawn from the reference's own "
                f"composition) scored by this run like its reads. About one random read in a hundred "
                f"scores below it. A read's length here leaves out its {'N' if self.alphabet == 'dna' else 'X'} "
                f"residues, which fit any column at no cost: a read of them alone is an outlier. Thresholds "
                f"of this run by read length (residues): {shown}; between these lengths it is interpolated.")


def find_outliers(score: np.ndarray, informative: np.ndarray, aligned: np.ndarray, null: OutlierNull | None,
                  alphabet: str) -> Outliers:
    """Flag the aligned reads whose penalty per residue (`score` / `informative`, the residues of
    each read other than N / X: `Alphabet.informative_counts`) exceeds the `null`'s threshold at
    that many residues, and those with none, first (module docstring); none where `null` is None.
    `alphabet` ("dna", "protein") names the left-out letter in `Outliers.rule`."""
    per_residue = np.full(len(score), np.nan)
    threshold = np.full(len(score), np.nan)
    usable = aligned & (informative > 0)
    per_residue[usable] = score[usable] / informative[usable]
    if null is None:
        return Outliers(per_residue, threshold, None, np.zeros(0, dtype=np.int64), alphabet, int(aligned.sum()))
    threshold[aligned] = null.threshold_at(informative[aligned])
    above = np.where(aligned & (informative == 0), np.inf, np.nan_to_num(per_residue - threshold, nan=-np.inf))
    flagged = np.flatnonzero(aligned & (above > 0))
    flagged = flagged[np.argsort(-above[flagged], kind="stable")]
    return Outliers(per_residue, threshold, null, flagged, alphabet, int(aligned.sum()))


def run_outliers(run: RunFile) -> Outliers:
    """The outlier rule (`find_outliers`) applied to the open run file `run`: aligned = status
    "aligned" with a best edge, score = /reads/score, the informative residues of /reads/sequence,
    the null = the run record's `outlier_null`. Reads /reads/status, best_edge and score whole and
    the sequences' counts (`RunFile.informative_lengths`)."""
    aligned = (run.column("status") == STATUS_ALIGNED) & (run.column("best_edge") >= 0)
    return find_outliers(run.column("score"), run.informative_lengths(), aligned,
                         OutlierNull.in_run_record(run.record), run.alphabet.name)
