"""The outlier rule: which aligned reads probably do not belong to the reference.

One rule for every part of papara-py that tells fitting reads from the rest: `papara-py report`
lists and draws the outliers (report/page.py), the exports leave them out unless asked
(`export --keep-outliers`, io/export.py's `keep`), the run's summary counts them and the API's
`Run.outliers` gives them. `find_outliers` is the rule on arrays; `run_outliers` applies it to a
run file (its status, best edge, scores, read lengths and mismatch penalty).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile

#: Outlier rule (see `find_outliers`): robust z above which a read is unusual for its sample ...
OUTLIER_ROBUST_Z = 5.0
#: ... but never flagged below this many mismatches per residue (sequencing errors, divergence)
OUTLIER_FLOOR = 0.1
#: ... and always flagged above this many (one residue in four mismatching: random-like).
OUTLIER_CEILING = 0.25


@dataclass
class Outliers:
    """Reads whose best score per residue says they probably do not belong to this reference.

    per_residue: float [Q], best score / read length (NaN where not aligned).
    threshold:   penalty per residue above which an aligned read is an outlier.
    indices:     the outliers, worst first.
    """

    per_residue: np.ndarray
    threshold: float
    median: float
    robust_sd: float
    floor: float
    ceiling: float
    indices: np.ndarray

    @property
    def flagged(self) -> np.ndarray:
        """bool [Q]: True for the outliers (`indices`)."""
        flagged = np.zeros(len(self.per_residue), dtype=bool)
        flagged[self.indices] = True
        return flagged

    def rule(self) -> str:
        """The rule in words, with this run's numbers."""
        return (f"A read is an outlier when its penalty per residue (best score / read length) exceeds "
                f"{self.threshold:.3f}. That is the sample's median ({self.median:.3f}) plus "
                f"{OUTLIER_ROBUST_Z:g} robust standard deviations ({self.robust_sd:.3f}: 1.4826 × the median "
                f"absolute deviation), kept above {self.floor:.3f} (one mismatch penalty in ten residues, so "
                f"that a few sequencing errors in a sample of near-perfect reads are not flagged)"
                + (f" and below {self.ceiling:.3f} (one mismatch penalty in four residues: random DNA scores "
                   f"about one in three, so a read above this fits hardly better than random sequence)."
                   if np.isfinite(self.ceiling) else "."))


def find_outliers(score: np.ndarray, length: np.ndarray, aligned: np.ndarray, mismatch: int,
                  alphabet: str = "dna") -> Outliers:
    """Flag aligned reads whose penalty per residue is unusual for the sample or random-like.

    threshold = min(ceiling, max(floor, median + 5 * 1.4826 * MAD)), with floor = 0.1 and
    ceiling = 0.25 mismatch penalties per residue. The ceiling is DNA's: a random base mismatches
    three times in four, so random DNA scores about a third of a mismatch penalty per residue
    whatever the reference. A protein read's penalty also holds the column profile cost (DESIGN 4),
    and real reads of the bundled protein example score 2.5 per residue at the median (0.85
    mismatch penalties, far above DNA's ceiling), so for protein there is no ceiling (it is
    infinite) and the rule is the sample's. The robust part (median and MAD, not mean and
    SD, so the outliers do not hide themselves) finds reads unusual for this sample; the
    ceiling still flags them when most of the sample is off (e.g. reads of the other strand, or a
    contaminated sample, where the median itself is random-like); the floor keeps a sample of
    near-perfect reads from flagging reads with a few sequencing errors.
    """
    per_residue = np.full(len(score), np.nan)
    usable = aligned & (length > 0)
    per_residue[usable] = score[usable] / length[usable]
    values = per_residue[usable]
    median = float(np.median(values)) if values.size else 0.0
    robust_sd = 1.4826 * float(np.median(np.abs(values - median))) if values.size else 0.0
    unit = max(int(mismatch), 1)
    floor = OUTLIER_FLOOR * unit
    ceiling = OUTLIER_CEILING * unit if alphabet == "dna" else float("inf")
    threshold = min(ceiling, max(floor, median + OUTLIER_ROBUST_Z * robust_sd))
    flagged = np.flatnonzero(usable & (np.nan_to_num(per_residue, nan=-1.0) > threshold))
    flagged = flagged[np.argsort(-per_residue[flagged], kind="stable")]
    return Outliers(per_residue, threshold, median, robust_sd, floor, ceiling, flagged)


def run_outliers(run: RunFile) -> Outliers:
    """The outlier rule (`find_outliers`) applied to the open run file `run`: aligned = status
    "aligned" with a best edge, score = /reads/score, length = residues of /reads/sequence,
    mismatch = the run record's mismatch penalty (3 where a record has none). Reads /reads/status,
    best_edge and score whole and the sequences' lengths (`RunFile.read_lengths`)."""
    aligned = (run.column("status") == STATUS_ALIGNED) & (run.column("best_edge") >= 0)
    parameters = run.record.get("parameters")
    mismatch = int(parameters.get("mismatch", 3)) if isinstance(parameters, dict) else 3
    return find_outliers(run.column("score"), run.read_lengths(), aligned, mismatch, run.alphabet.name)
