"""Measurement only: the nearest reference sequence as a location check (docs/ACCURACY.md, "The
dense sets out of sample", the lead).

Reads far from every reference sequence are sometimes placed by papara-py in the wrong region
altogether; one reference sequence at the true place then still shares more of the read than any
at the chosen one. This prototype aligns each read to every reference sequence (gaps removed;
semi-global: the whole read, any part of the sequence; BLOSUM62, gap opening 11, extension 1, as
BLAST's defaults), keeps the best-scoring one and maps the read onto that sequence's columns
(`nearest_columns`). Then per read (`choose`): papara-py's columns, unless fewer than AGREE of the
residues both place lie within 3 columns of the mapping's, in which case the mapping's. With a
prefilter (`PREFILTER`), a read meets only the K sequences sharing the most 3-mers with it
(`kmer_candidates`): what a production version must do, measured for its cost to accuracy.

    python3 scripts/proto_anchor.py OUT.jsonl DATA/sets/BBS30013 DATA/dval/BBS30013-s2 ...

writes one line per set and variant (`ours`: papara-py with the protein preset; `nearest`: the
mapping alone; `agree<A>`: the rule at A = 0.1, 0.2, 0.3, 0.5; `agree0.1-k<K>`: at 0.1, the
sequences prefiltered to K) with its column accuracy; the
margins over MAFFT and hmmalign are the study's (DATA/results.jsonl, DATA/val_results.jsonl,
DATA/dval_results.jsonl). Protein sets only.
"""

from __future__ import annotations

import json
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

AGREE = (0.1, 0.2, 0.3, 0.5)
#: Sequences kept by the 3-mer prefilter, per variant.
PREFILTER = (1, 3, 10)
KMER = 3
#: Columns within which papara-py's and the mapping's column for a residue agree.
NEAR_COLUMNS = 3
GAP_OPEN, GAP_EXTEND = 11.0, 1.0
PROTEIN_POINT = (3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1)


def _scores() -> tuple[np.ndarray, np.ndarray]:
    """(ASCII -> residue index 0..19, 20 for anything else; BLOSUM62 [21, 21], -1 against 20)."""
    from papara_py.phylo.column_costs import substitution_scores
    from papara_py.phylo.encoding import PROTEIN

    index = np.full(256, 20, np.int64)
    for k, letter in enumerate(PROTEIN.letters):
        index[ord(letter)] = index[ord(letter.lower())] = k
    matrix = np.full((21, 21), -1.0)
    matrix[:20, :20] = substitution_scores(PROTEIN)
    return index, matrix


@njit(cache=True)
def semi_global(read, row, matrix, gap_open, gap_extend):
    """Best score of the whole read against any part of `row` (affine gaps, Gotoh) and, for each
    read residue, the row position it faces (-1: an insertion in the read)."""
    n, m = read.shape[0], row.shape[0]
    neg = -1e18
    M = np.full((n + 1, m + 1), neg)
    X = np.full((n + 1, m + 1), neg)  # the read's residue j - 1 inserted
    Y = np.full((n + 1, m + 1), neg)  # the row's residue i - 1 skipped
    M[0, :] = 0.0
    for j in range(1, n + 1):
        for i in range(m + 1):
            if i > 0:
                M[j, i] = max(M[j - 1, i - 1], X[j - 1, i - 1], Y[j - 1, i - 1]) + matrix[read[j - 1], row[i - 1]]
                Y[j, i] = max(M[j, i - 1] - gap_open, Y[j, i - 1] - gap_extend)
            X[j, i] = max(M[j - 1, i] - gap_open, X[j - 1, i] - gap_extend)
    best, end, state = neg, 0, 0
    for i in range(m + 1):
        for s, v in ((0, M[n, i]), (1, X[n, i])):
            if v > best:
                best, end, state = v, i, s
    faced = np.full(n, -1, np.int64)
    j, i = n, end
    while j > 0:
        if state == 0:
            faced[j - 1] = i - 1
            before = M[j, i] - matrix[read[j - 1], row[i - 1]]
            j -= 1
            i -= 1
            state = 0 if M[j, i] == before else (1 if X[j, i] == before else 2)
        elif state == 1:
            here = X[j, i]
            j -= 1
            state = 0 if M[j, i] - gap_open == here else 1
        else:
            here = Y[j, i]
            i -= 1
            state = 0 if M[j, i] - gap_open == here else 2
    return best, faced


def _kmers(text: str) -> set[str]:
    return {text[i:i + KMER] for i in range(len(text) - KMER + 1)}


class Reference:
    """The reference rows as the mapping needs them, prepared once per set: each row's residue
    codes and their columns (gaps removed) and its distinct KMER-mers (case ignored)."""

    def __init__(self, rows: list[str], index: np.ndarray) -> None:
        self.columns = [np.array([i for i, c in enumerate(row) if c not in "-."], np.int64) for row in rows]
        self.codes = [index[np.frombuffer(row.encode(), np.uint8)[cols]] for row, cols in zip(rows, self.columns)]
        self.kmers = [_kmers(row.upper().replace("-", "").replace(".", "")) for row in rows]

    def kmer_order(self, read: str) -> list[int]:
        """Row numbers by distinct KMER-mers shared with the read, most first (ties: the first rows)."""
        mine = _kmers(read.upper())
        shared = [len(mine & row) for row in self.kmers]
        return sorted(range(len(shared)), key=lambda t: -shared[t])

    def alignments(self, read: str, index: np.ndarray, matrix: np.ndarray) -> list[tuple[float, np.ndarray]]:
        """`semi_global`'s (score, faced row positions) of the read against every row."""
        codes = index[np.frombuffer(read.encode(), np.uint8)]
        return [semi_global(codes, row, matrix, GAP_OPEN, GAP_EXTEND) for row in self.codes]

    def mapping(self, alignments: list[tuple[float, np.ndarray]], among: list[int]) -> list[int]:
        """The read on the columns of the best-scoring row of `among` (ties: the first of them):
        one column per residue, -1 for an insertion."""
        best = among[0]
        for t in among[1:]:
            if alignments[t][0] > alignments[best][0]:
                best = t
        return [int(self.columns[best][k]) if k >= 0 else -1 for k in alignments[best][1]]


def kmer_candidates(read: str, rows: list[str], keep: int) -> list[int]:
    """The `keep` rows sharing the most distinct KMER-mers with the read (gaps removed, case
    ignored; ties: the first rows)."""
    return Reference(rows, _scores()[0]).kmer_order(read)[:keep]


def nearest_columns(read: str, rows: list[str], index: np.ndarray, matrix: np.ndarray) -> list[int]:
    """The read mapped onto the alignment columns of its best-scoring reference row (`rows`:
    aligned, '-' or '.' for gaps): one column per residue, -1 for an insertion. Ties: the first row."""
    reference = Reference(rows, index)
    return reference.mapping(reference.alignments(read, index, matrix), list(range(len(rows))))


def choose(ours: list[int], nearest: list[int], agree: float) -> list[int]:
    """papara-py's columns, or the mapping's where fewer than `agree` of the residues both place
    lie within NEAR_COLUMNS of each other (a read papara-py put elsewhere altogether)."""
    both = [(a, b) for a, b in zip(ours, nearest) if a >= 0 and b >= 0]
    close = sum(1 for a, b in both if abs(a - b) <= NEAR_COLUMNS)
    return list(nearest) if close < agree * max(1, len(both)) else list(ours)


def measure(folder: str) -> list[dict]:
    """Column accuracy of each variant on one leave-taxa-out set."""
    index, matrix = _scores()
    data = ba.Data.from_dir(Path(folder), Path(folder).name, "protein")
    rows = list(ba.read_alignment(data.alignment).values())
    ours, _ = ba.run_papara_inprocess(data, Path(tempfile.mkdtemp()), PROTEIN_POINT, 1)
    reads = dict(ba._reads_forward(data))
    right: dict[str, int] = {"ours": 0, "nearest": 0, **{f"agree{a}": 0 for a in AGREE},
                             **{f"agree0.1-k{k}": 0 for k in PREFILTER}}
    total = 0
    reference = Reference(rows, index)
    everyone = list(range(len(rows)))
    for name, (truth, _) in data.truth.items():
        alignments = reference.alignments(reads[name], index, matrix)  # each read against each row once
        mapped = reference.mapping(alignments, everyone)
        placed = [(j, c) for j, c in enumerate(truth) if c >= 0]
        total += len(placed)
        variants = {"ours": list(ours[name].columns), "nearest": mapped,
                    **{f"agree{a}": choose(list(ours[name].columns), mapped, a) for a in AGREE}}
        order = reference.kmer_order(reads[name])
        for k in PREFILTER:
            variants[f"agree0.1-k{k}"] = choose(list(ours[name].columns), reference.mapping(alignments, order[:k]), 0.1)
        for key, columns in variants.items():
            right[key] += sum(1 for j, c in placed if columns[j] == c)
    return [{"set": data.name, "variant": key, "column_accuracy": round(count / total, 4)} for key, count in right.items()]


def main() -> int:
    out, folders = Path(sys.argv[1]), sys.argv[2:]
    with Pool(2) as pool, open(out, "a") as handle:
        for records in pool.imap_unordered(measure, folders):
            handle.writelines(json.dumps(record) + "\n" for record in records)
            print(records[0]["set"], {r["variant"]: r["column_accuracy"] for r in records}, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
