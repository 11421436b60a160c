"""Which strand of each read to align: decided from shared k-mers, before the dynamic programming.

Why: shotgun reads come from both strands, but the scoring of DESIGN 4 compares a read with the
reference as written; a read from the other strand scores like random sequence (on the real pyrG
data half the reads do). Aligning every read both ways doubles the scoring work, so `auto` first
asks a cheap question: does the read, or its reverse complement, share more exact k-mers with
the reference sequences?

Evidence rule (`decide`): let f and r be how many of the read's k-mer windows (k = `K`, windows
with an ambiguity code skipped) occur in some reference row (gaps removed), for the read and for
its reverse complement. The orientation with more hits wins outright only when

    lead = |f - r| >= MIN_LEAD + Z * sqrt(2 * lam)   and   max(f, r) >= FOLD * min(f, r),

where lam = density * windows is the number of hits a random read of that length would get
(density: the share of all 4^K k-mers present in the reference; f - r of a read unrelated to
the reference has standard deviation about sqrt(2 * lam)). Otherwise the evidence is weak
(too divergent, too short, repetitive, or not from the reference at all) and the read is scored
in both orientations, the better best score winning (ties: forward), exactly as with
`--strand both`.

The decision uses only the read and the reference, never the batch or read order, so shards of
a run and a single run decide alike. It is symmetric: the reverse complement of a read gets the
opposite decision (f and r swap), and undecided stays undecided.

`StrandPlan` turns per-read decisions into what the engine scores (each read once in its
decided orientation, undecided reads a second time reverse-complemented) and picks per read the
orientation whose best score is smaller (ties: forward); the read's candidate list comes entirely
from the chosen orientation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from papara_py.engine.candidates import Candidates
from papara_py.errors import InputError
from papara_py.io.reads import ReadSet
from papara_py.phylo.encoding import IS_GAP, Alphabet

STRAND_MODES = ("auto", "both", "forward")

#: k-mer length: 4^12 = 16.7 M possible k-mers, a 2 MiB bitmap; long enough that a reference of
#: 100 k distinct k-mers covers under 1% of them, short enough that reads ~15% divergent from the
#: nearest reference still share several exact k-mers.
K = 12
#: Smallest lead of the winning orientation, in k-mer hits, when the background is empty.
MIN_LEAD = 3
#: Background allowance: standard deviations of (f - r) for a read unrelated to the reference.
Z = 4.0
#: The winning orientation needs at least this many times the loser's hits.
FOLD = 3

FORWARD, UNDECIDED, REVERSE = 1, 0, -1

#: ASCII -> 2-bit base (A0 C1 G2 T3, U is T); 255 for anything else (ambiguity codes, gaps).
_BASE = np.full(256, 255, dtype=np.uint8)
for _i, _letters in enumerate(("Aa", "Cc", "Gg", "TtUu")):
    for _letter in _letters:
        _BASE[ord(_letter)] = _i


class ReferenceKmers:
    """The set of k-mers of the reference rows (gaps removed), as a bitmap over all 4^k codes."""

    def __init__(self, rows: np.ndarray, k: int = K, rows_per_chunk: int = 512) -> None:
        """`rows`: the reference alignment, uint8 ASCII [N, m]; its rows without their gaps,
        `rows_per_chunk` at a time (bounded memory)."""
        if not 1 <= k <= 16:
            raise ValueError(f"k must be in 1..16 (codes are uint32), got {k}")
        self.k = k
        self._bitmap = np.zeros(max(1, 4 ** k // 8), np.uint8)  # bit c of byte c >> 3: code c occurs
        for lo in range(0, rows.shape[0], rows_per_chunk):
            chunk = rows[lo:lo + rows_per_chunk]
            residue = ~IS_GAP[chunk]
            lengths = residue.sum(axis=1, dtype=np.int64)
            ends = np.cumsum(lengths)
            _rolling_scan(np.ascontiguousarray(chunk[residue], dtype=np.uint8), ends - lengths, ends, k,
                          self._bitmap, _BASE, True)
        self.distinct = int(np.unpackbits(self._bitmap).sum())

    @property
    def density(self) -> float:
        """Share of all 4^k k-mers that occur in the reference (a random k-mer's hit chance)."""
        return self.distinct / 4 ** self.k

    def hits(self, ascii: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per sequence: (forward hits, reverse-complement hits, windows), int64 [S] each."""
        offsets = np.asarray(offsets, dtype=np.int64)
        return self.hits_at(ascii, offsets[:-1], offsets[1:])

    def hits_at(self, ascii: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`hits` of the sequences ascii[starts[s]:ends[s]], read in place (no copy of a read
        set's residues), in one GIL-free pass with rolling codes."""
        return _rolling_scan(np.asarray(ascii, dtype=np.uint8), np.asarray(starts, dtype=np.int64),
                             np.asarray(ends, dtype=np.int64), self.k, self._bitmap, _BASE, False)


@njit(cache=True, nogil=True)
def _rolling_scan(ascii, starts, ends, k, bitmap, base_of, mark):
    """Every k-mer window of each sequence ascii[starts[s]:ends[s]] that lies inside it and is
    free of non-ACGT characters, as a rolling 2-bit code (first base in the high bits) and the
    code of its reverse complement. With `mark`, each window's code is set in `bitmap` (bit c of
    byte c >> 3); otherwise the windows are counted per sequence, and those whose code, or whose
    reverse complement's, is in `bitmap`. Returns (forward hits, reverse hits, windows)."""
    n = starts.shape[0]
    forward_hits = np.zeros(n, np.int64)
    reverse_hits = np.zeros(n, np.int64)
    windows = np.zeros(n, np.int64)
    mask = (np.uint64(1) << np.uint64(2 * k)) - np.uint64(1)
    top = np.uint64(2 * (k - 1))
    for s in range(n):
        forward = np.uint64(0)
        reverse = np.uint64(0)
        run = 0
        for i in range(starts[s], ends[s]):
            b = base_of[ascii[i]]
            if b == 255:
                run = 0
                continue
            forward = ((forward << np.uint64(2)) | np.uint64(b)) & mask
            reverse = (reverse >> np.uint64(2)) | (np.uint64(3 - b) << top)
            run += 1
            if run >= k:
                windows[s] += 1
                if mark:
                    bitmap[forward >> np.uint64(3)] |= np.uint8(1) << np.uint8(forward & np.uint64(7))
                else:
                    forward_hits[s] += (bitmap[forward >> np.uint64(3)] >> (forward & np.uint64(7))) & 1
                    reverse_hits[s] += (bitmap[reverse >> np.uint64(3)] >> (reverse & np.uint64(7))) & 1
    return forward_hits, reverse_hits, windows


def decide(forward_hits: np.ndarray, reverse_hits: np.ndarray, windows: np.ndarray,
           density: float) -> np.ndarray:
    """The evidence rule of the module docstring: int8 FORWARD, REVERSE or UNDECIDED per read."""
    f = np.asarray(forward_hits, dtype=np.int64)
    r = np.asarray(reverse_hits, dtype=np.int64)
    needed = MIN_LEAD + Z * np.sqrt(2.0 * density * np.asarray(windows, dtype=np.float64))
    lead = np.abs(f - r)
    strong = (lead >= needed) & (np.maximum(f, r) >= FOLD * np.minimum(f, r))
    return np.where(strong, np.where(f > r, FORWARD, REVERSE), UNDECIDED).astype(np.int8)


def check_mode(mode: str) -> str:
    """`mode` if it is one of STRAND_MODES; InputError otherwise."""
    if mode not in STRAND_MODES:
        raise InputError("--strand", f"must be one of {', '.join(STRAND_MODES)}; got {mode!r}")
    return mode


def mode_for(mode: str, alphabet: Alphabet, alignment: str) -> str:
    """The strand mode a run of `alphabet` data uses: `mode` where reads have a reverse strand;
    for an alphabet without one (protein, DESIGN 2) "forward", the default `auto` included, and
    InputError for `both`, which cannot be honoured."""
    check_mode(mode)
    if alphabet.stranded:
        return mode
    if mode == "both":
        raise InputError("--strand", f"--strand both aligns reads and their reverse complements, but the alignment "
                                     f"{alignment} is {alphabet.name} and {alphabet.residue_kind} reads have no "
                                     f"reverse strand; leave --strand out (or give forward)")
    return "forward"


def orient(mode: str, reads: ReadSet, indices: np.ndarray, kmers: ReferenceKmers | None) -> np.ndarray:
    """int8 decision per read of `indices`: forward -> all FORWARD, both -> all UNDECIDED,
    auto -> `decide` on the k-mer evidence (`kmers` required)."""
    check_mode(mode)
    if mode == "forward":
        return np.full(len(indices), FORWARD, dtype=np.int8)
    if mode == "both":
        return np.full(len(indices), UNDECIDED, dtype=np.int8)
    if kmers is None:
        raise ValueError("--strand auto needs the reference k-mers")
    indices = np.asarray(indices, dtype=np.int64)
    f, r, windows = kmers.hits_at(reads.residues, reads.offsets[indices], reads.offsets[indices + 1])
    return decide(f, r, windows, kmers.density)


@dataclass(frozen=True)
class StrandPlan:
    """What to score for one batch, and how to pick each read's orientation from the scores.

    `reads[:n]` are the batch's reads in order, each in its decided orientation (forward when
    undecided); `reads[n:]` the undecided ones again, reverse-complemented. `reverse` flags the
    slots scored reverse-complemented (ReadSet.select's argument).
    """

    reads: np.ndarray     # int64 [S] read ids, S = n + undecided
    reverse: np.ndarray   # bool [S]
    n: int
    second: np.ndarray    # int64 [undecided]: batch positions of the reads scored twice

    @classmethod
    def for_batch(cls, indices: np.ndarray, decision: np.ndarray) -> "StrandPlan":
        indices = np.asarray(indices, dtype=np.int64)
        second = np.flatnonzero(decision == UNDECIDED)
        return cls(reads=np.concatenate((indices, indices[second])),
                   reverse=np.concatenate((decision == REVERSE, np.ones(len(second), dtype=bool))),
                   n=len(indices), second=second)

    def pick(self, scored: Candidates) -> tuple[np.ndarray, Candidates]:
        """(reverse bool [n], candidates [n, K]) from the candidates of every scored slot.

        A read scored twice takes the reverse complement only if its best score is strictly
        smaller than the forward one's; on equal scores it stays forward, whatever the edges.
        """
        reverse = self.reverse[:self.n].copy()
        score, edge = scored.score[:self.n].copy(), scored.edge[:self.n].copy()
        if len(self.second):
            better = scored.score[self.n:, 0] < score[self.second, 0]
            take = self.second[better]
            reverse[take] = True
            score[take] = scored.score[self.n:][better]
            edge[take] = scored.edge[self.n:][better]
        return reverse, Candidates(score=score, edge=edge)
