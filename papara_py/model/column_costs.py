"""Column profile costs (DESIGN.md 3-4): what a read residue costs in a column, on every edge alike.

Why: one edge's parsimony profile knows one branch's ancestral states, and with reads 30%
divergent from their nearest reference sequence Eq. 1's three cost levels (state set, near
state, mismatch) leave many paths within a few units of one another; the branch's sets then
decide among them and misplace residues next to sparse columns. A profile scores a residue
against the whole column; this term does the same inside Eq. 1 (notebook/ACCURACY.md, "Dense real
protein references and the column profile cost", measured it).

The score is the column's profile emission, as HMMER and PSI-BLAST score a residue: how likely s
is under the column's mixture of residues, against the background. BLOSUM62 is in half bits, so
a pair's odds are 2^(BLOSUM62 / 2), and with f_a the share of rows holding a,
P(s | column) / q_s = sum_a f_a odds(a, s):

    P(c, s) = 2 log2(the mean over the reference alignment's rows of 2^(BLOSUM62(s, the row's
              residue at column c) / 2)), U as C, O as K; a row without one of the 20 residues
              there (a gap, an ambiguity code) adds odds 1 (a score of 0) and counts in the mean
    X(c, s) = round(weight * (TOP - P(c, s)))      (round half to even)

TOP is the matrix's largest score (BLOSUM62: 11, W against W), the most P can be, so X is never
negative and has no tuned number in it: it is the column's log-odds deficit. Where TOP sits does
not matter: a constant added to the cost of every residue placed in a column is the same as
taking it off the insertion penalty (each residue is placed or inserted, so every path of a read
moves by that constant times the read's length, on every edge alike). A clip at a tuned score,
max(0, 5 - P), gained nothing held out (notebook/accuracy-2026-11/unclipped.md).

The log of the mean odds, not the mean of the log-odds (MAFFT's sum of pairs, 0.3.0 to 0.15.0):
a residue that a minority of the rows share, a subfamily's, scores near that minority's match
score instead of the column's average (notebook/accuracy-2026-11/profile-emission.md: +0.0037 on
32 new protein validation sets). The more the column favours a residue the less it costs; one it
disfavours costs up to weight * (TOP + 4) (P is at least the matrix's smallest score, -4); a
column most rows leave empty costs about weight * TOP for any residue. An ambiguous read residue
(B, Z, J, X) costs the least X of its states, as Eq. 1's M_ij takes the cheapest of its states.

The table is computed once per run on the host, in float64 then rounded, so every device sees
the same integers. Its rows are the alphabet's read codes (`cost_codes`: the single states in bit
order, then the ambiguity codes by value); kernels find a read residue's row by its code
(`cost_row`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from papara_py.phylo.encoding import PROTEIN, Alphabet

#: Largest weight (`--column-weight`): X then stays below 128 (kernels read it as one byte;
#: `largest_cost`: 8 x (11 + 4) = 120 with BLOSUM62).
MAX_COLUMN_WEIGHT = 8.0


@dataclass(frozen=True, eq=False)
class ColumnCosts:
    """X of the module docstring: `table` uint8 [K, m], row k for read code `codes[k]` (uint32 [K],
    the alphabet's `cost_codes`; 1 <= K <= 256, so a row number is a byte)."""

    table: np.ndarray
    codes: np.ndarray

    def __post_init__(self) -> None:
        if self.table.dtype != np.uint8 or self.table.ndim != 2 or self.codes.ndim != 1 \
                or not 0 < self.codes.size == self.table.shape[0] <= 256:
            raise ValueError(f"a column cost table is uint8 [K, m] with 1 <= K <= 256 row codes; got "
                             f"{self.table.dtype} {self.table.shape} for {self.codes.size} codes")

    @cached_property
    def largest(self) -> int:
        """The largest cost in the table (the overflow bounds add it to every diagonal step)."""
        return int(self.table.max(initial=0))

    @cached_property
    def by_column(self) -> np.ndarray:
        """The table transposed, uint8 [m, K] C-contiguous (a column's costs side by side, as the
        OpenCL kernels read it); made once, however many chunks upload it."""
        return np.ascontiguousarray(self.table.T)

    @cached_property
    def _row_lookup(self) -> np.ndarray:
        """int16 [max code + 1]: each code's first row (as `cost_row` finds it), -1 for none."""
        lookup = np.full(int(self.codes.max()) + 1, -1, np.int16)
        lookup[self.codes[::-1]] = np.arange(self.codes.size - 1, -1, -1)
        return lookup

    def rows_of(self, codes: np.ndarray) -> np.ndarray:
        """uint8 table row of every read code (`cost_row`, vectorised: what the OpenCL kernels read
        beside the codes). ValueError for a code without a row, as `cost_row` raises. A lookup
        table over the code values (a million entries for protein's 20-bit sets, built once per
        table) takes tens of ms for ten million residues, a twentieth of a sorted search's time."""
        lookup = self._row_lookup
        codes = np.asarray(codes)
        rows = lookup[np.minimum(codes, lookup.size - 1)]
        if codes.size and (codes.max() >= lookup.size or rows.min() < 0):
            raise ValueError("a read code has no row in the column cost table")
        return rows.astype(np.uint8)


def substitution_scores(alphabet: Alphabet) -> np.ndarray:
    """The alphabet's substitution matrix (`Alphabet.substitution_matrix`: BLOSUM62 for protein)
    over its states in bit order (float64 [S, S]; Biopython's copy)."""
    if alphabet.substitution_matrix is None:
        raise ValueError(f"the {alphabet.name} alphabet has no substitution matrix for column profile costs")
    return _matrix(alphabet.substitution_matrix, alphabet.letters).copy()


@cache
def _matrix(name: str, letters: str) -> np.ndarray:
    from Bio.Align import substitution_matrices

    matrix = substitution_matrices.load(name)
    return np.array([[matrix[a][b] for b in letters] for a in letters], float)


def largest_cost(weight: float) -> int:
    """The most X can be at `weight`: weight * (TOP - the least P), the least P being BLOSUM62's
    smallest score, -4 (a row without a residue adds a score of 0). Only protein has column
    costs, so its matrix sets the bound."""
    if weight == 0:
        return 0
    top, least = _score_span(PROTEIN.substitution_matrix, PROTEIN.letters)
    return math.ceil(weight * (top - least))


@cache
def _score_span(name: str, letters: str) -> tuple[float, float]:
    """(TOP, the least P) of a matrix: its largest score, and its smallest score or 0, whichever is
    lower (a row without a residue scores 0)."""
    matrix = _matrix(name, letters)
    return float(matrix.max()), float(min(matrix.min(), 0.0))


def cost_codes(alphabet: Alphabet) -> np.ndarray:
    """The read codes a cost table has rows for: each single state in bit order, then every other
    code the alphabet's reads can have (ambiguity codes), by value."""
    singles = [1 << k for k in range(alphabet.n_states)]
    others = sorted({int(c) for c in np.unique(alphabet.read_code)} - {0, *singles})
    return np.array(singles + others, np.uint32)


def column_costs(tip_rows: np.ndarray, alphabet: Alphabet, weight: float) -> ColumnCosts | None:
    """X of every read code and column of `tip_rows` (uint8 [rows, m] ASCII alignment rows,
    validated), or None where the term is off (weight 0). ValueError for an alphabet without a
    substitution matrix (DNA)."""
    if weight == 0:
        return None
    return ColumnCosts(table=emission_costs(mean_odds(tip_rows, alphabet), alphabet, weight),
                       codes=cost_codes(alphabet))


def mean_odds(tip_rows: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """The mean over the rows of each state's odds, float64 [m, S]: P(c, s) = 2 log2 of it (the
    module docstring). ValueError for an alphabet without a substitution matrix."""
    states = row_states(tip_rows, alphabet)
    counts = np.stack([(states == state).sum(axis=0) for state in range(alphabet.n_states)], axis=1)
    without = states.shape[0] - counts.sum(axis=1, keepdims=True)  # rows without a residue: odds 1
    odds = np.exp2(substitution_scores(alphabet) / 2)
    return (counts @ odds.T + without) / states.shape[0]


def row_states(tip_rows: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """Each row residue's state index, int64 [rows, m] (case ignored, U as C and O as K: DESIGN
    2); n_states where the row holds none of the single states (a gap, an ambiguity code: odds 1)."""
    codes = alphabet.read_code[np.asarray(tip_rows, np.uint8)]
    states = np.full(codes.shape, alphabet.n_states, np.int64)
    for state in range(alphabet.n_states):
        states[codes == 1 << state] = state
    return states


def emission_costs(odds: np.ndarray, alphabet: Alphabet, weight: float) -> np.ndarray:
    """X from a column's (mean) odds of each state, float64 [..., m, S]: uint8 [..., K, m], row k
    for read code cost_codes(alphabet)[k], the least X of the code's states (edge_emission.py
    gives it each edge's odds)."""
    top, _ = _score_span(alphabet.substitution_matrix, alphabet.letters)
    # TOP - P >= 0 up to float rounding (P <= TOP); a -0.0 from rint stores as 0
    per_state = np.rint(weight * (top - 2 * np.log2(odds)))  # [..., m, S]
    codes = cost_codes(alphabet)
    table = np.empty((*odds.shape[:-2], codes.size, odds.shape[-2]), np.uint8)
    for k, code in enumerate(codes.tolist()):
        states = [s for s in range(alphabet.n_states) if code >> s & 1]
        table[..., k, :] = per_state[..., states].min(axis=-1)
    return table


def kernel_costs(costs: ColumnCosts | None) -> tuple[np.ndarray, np.ndarray] | None:
    """`costs` as numba kernels take it: (table, codes), or None (the term off: numba then
    compiles the kernels without it, `read_cost_row` and `cell_cost` fold to 0)."""
    return None if costs is None else (costs.table, costs.codes)


#: The kernels' lookups (numba functions), kept in phylo/jit.py so that importing this module does
#: not import numba; `from papara_py.model.column_costs import cell_cost` still finds them.
_KERNEL_NAMES = ("cost_row", "read_cost_row", "cell_cost")


def __getattr__(name: str):
    if name in _KERNEL_NAMES:
        from papara_py.phylo import jit

        return getattr(jit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
