"""What a report reads from a run file (`load_run` -> `RunView`): the per-read arrays the page and
the figures need, the outlier rule's verdict, the reference's column occupancy and the PP code
counts of the reads that fit (the other sections leave outliers out too), with read names and
/reads/aligned read on demand in bounded blocks, so a report of millions of reads fits in memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from papara_py.io.run_file import RunFile
from papara_py.model.outliers import OutlierNull, Outliers, find_outliers
from papara_py.phylo.encoding import IS_GAP

_GAP_BYTE = ord("-")


@dataclass
class RunView:
    """What the report needs from one run file; per-read arrays are over all Q reads."""

    path: str
    file_attrs: dict
    run_attrs: dict
    newick_numbered: str
    status: np.ndarray           # str [Q]
    best_edge: np.ndarray        # int32 [Q], -1 if not aligned
    score: np.ndarray            # int32 [Q]
    length: np.ndarray           # int64 [Q], residues of the read but N / X (the outlier rule's length)
    outliers: Outliers           # the outlier rule (model/outliers.py) applied to the run
    strand: np.ndarray           # str [Q]
    candidate_edge: np.ndarray   # int32 [Q, K]
    candidate_score: np.ndarray  # int32 [Q, K]
    occupancy: np.ndarray        # float64 [m], share of reference rows with a residue there
    pp_counts: np.ndarray        # int64 [11], residues of the reads that fit per PP code "0".."9", "*" (all 0:
                                 # no posteriors, or no read fits)

    @property
    def aligned(self) -> np.ndarray:
        """bool [Q]: reads that were aligned and placed (status "aligned", an edge)."""
        return (self.status == "aligned") & (self.best_edge >= 0)

    @property
    def parameters(self) -> dict:
        return self.run_attrs.get("parameters") or {}

    @property
    def n_columns(self) -> int:
        return len(self.occupancy)

    def names(self, indices: np.ndarray) -> list[str]:
        """Names of the reads at `indices`, in that order (read from the file on demand)."""
        if len(indices) == 0:
            return []
        order = np.argsort(indices)
        with RunFile(self.path) as run:
            found = run.names(np.asarray(indices)[order])
        names = [""] * len(indices)
        for slot, name in zip(order, found):
            names[slot] = name
        return names

    def read_depth(self, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """Per group of reads and reference column: (reads with a residue, reads spanning it).

        Both int64 [n_groups, m]; `group[q]` is read q's group (-1: not counted). A read spans
        the columns from its first to its last residue, so spans show the region a read covers
        even where it has deletions or crosses insertion columns of a few taxa (common in large
        alignments, where residue counts alone look like a barcode). /reads/aligned is scanned
        in row blocks of about 32 MB, so this works for any number of reads.
        """
        residues = np.zeros((n_groups, self.n_columns), dtype=np.int64)
        changes = np.zeros((n_groups, self.n_columns + 1), dtype=np.int64)
        with RunFile(self.path) as run:
            start = 0
            for block in run.row_blocks("reads/aligned"):
                labels = group[start:start + len(block)]
                start += len(block)
                for g in range(n_groups):
                    filled = block[labels == g] != _GAP_BYTE
                    filled = filled[filled.any(axis=1)]
                    residues[g] += np.count_nonzero(filled, axis=0)
                    np.add.at(changes[g], np.argmax(filled, axis=1), 1)
                    np.add.at(changes[g], self.n_columns - np.argmax(filled[:, ::-1], axis=1), -1)
        return residues, np.cumsum(changes, axis=1)[:, :-1]


def load_run(path: str | os.PathLike) -> RunView:
    """Read what the report needs; an unreadable, foreign or damaged file is an InputError.

    The reference is scanned in chunks of about 32 MB; read names and /reads/aligned are not
    loaded (see `RunView.names` and `read_depth`), so memory stays bounded for millions of reads.
    """
    with RunFile(path) as run:
        status, best_edge, score = run.column("status"), run.column("best_edge"), run.column("score")
        informative = run.informative_lengths()
        aligned = (status == "aligned") & (best_edge >= 0)
        outliers = find_outliers(score, informative, aligned, OutlierNull.in_run_record(run.record), run.alphabet.name)
        fitting = aligned & ~outliers.flagged
        step = 1 << 16  # strings: a bounded number at a time
        pp_counts = np.zeros(len(PP_CODES), dtype=np.int64)
        for start in range(0, run.n_reads, step):
            pp_counts += pp_histogram(run.column("pp", slice(start, start + step))[fitting[start:start + step]])
        filled = np.zeros(run.n_columns, dtype=np.int64)
        for block in run.row_blocks("reference/alignment"):
            filled += np.count_nonzero(~IS_GAP[block], axis=0)
        return RunView(
            path=run.path,
            file_attrs=run.attrs,
            run_attrs=run.record,
            newick_numbered=run.newick_numbered,
            status=status,
            best_edge=best_edge,
            score=score,
            length=informative,
            outliers=outliers,
            strand=run.column("strand"),
            candidate_edge=run.column("candidates/edge"),
            candidate_score=run.column("candidates/score"),
            occupancy=filled / max(1, run.n_reference),
            pp_counts=pp_counts,
        )


#: hmmalign's posterior probability codes, in order (DESIGN 5, /reads/pp).
PP_CODES = "0123456789*"
_PP_INDEX = np.full(256, -1, dtype=np.int64)
_PP_INDEX[np.frombuffer(PP_CODES.encode(), np.uint8)] = np.arange(len(PP_CODES))


def pp_histogram(pp: np.ndarray) -> np.ndarray:
    """int64 [11]: how many residues carry each PP code in the strings `pp` (one per read)."""
    codes = _PP_INDEX[np.frombuffer("".join(pp).encode("ascii"), np.uint8)]
    return np.bincount(codes[codes >= 0], minlength=len(PP_CODES))
