"""Fixed-point arithmetic of the posterior step (DESIGN 5): every device computes the same
integers.

Energies. A cost c of DESIGN 4 (an integer) is the energy c * S in fixed point, S = 2^SCALE_BITS
a power of two (a shift). Energies are int32 on every device; `check_fixed_point` refuses a run
whose largest possible energy could overflow (`energy_bounds` says what that is).

Softmin. At temperature T > 0 the "sum" of two energies a, b is
    a (+) b = -T ln(exp(-a/T) + exp(-b/T)) = min(a, b) - T ln(1 + exp(-|a - b|/T)),
so in fixed point it is min(a, b) - softmin[|a - b|], with
    softmin[d] = round(S T ln(1 + exp(-d / (S T))))          d = 0, 1, ..., L - 1
where softmin[L - 1] is the first entry that rounds to 0 (the table ends with it, so a kernel
reads softmin[min(d, L - 1)] without a branch: every d past the end reads 0). Every entry is
>= 0, so a (+) b <= min(a, b) exactly, as in real arithmetic. At T = 0 the table is the single
entry 0 and (+) is min: the recurrence is then Eq. 1's min-plus recurrence exactly
(`PosteriorTables.build(0)`; the T -> 0 test).

Probabilities. exp(-x / T) for an energy difference x >= 0 (fixed point) is
    probability[x] = round(PROB_ONE exp(-x / (S T)))          x = 0, 1, ..., L - 1
ending with the first entry that rounds to 0 (a kernel reads probability[min(x, L - 1)]), in
units of PROB_ONE = 2^15 = 1.0. Why 2^15: a product of an edge weight and a posterior (both <=
PROB_ONE) is at most 2^30, so the pooling's products and sums stay in 32-bit integers (the GPU
pools with 32-bit atomics), a pooled posterior fits a uint16 (the PP output), and its
resolution (3e-5) is far below both the error the energies' rounding puts into a posterior
(SCALE_BITS: 0.001-0.007 at S = 1024) and the 0.1 steps of the PP code.

Rounding of the tables. Each entry is computed in float64 (numpy) and rounded half to even;
where the float64 value lies within 1e-6 of a rounding boundary (k + 1/2) the entry is computed
again in 50-digit decimal arithmetic (Python's `decimal`, correctly rounded, the same on every
platform), so hosts with different math libraries (the shards of a cluster run) build the same
tables. The tables are built once per run on the host and handed to every kernel as integer
arrays (uint16 where the entries fit, else int32), zero-padded to a power-of-two length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext

import numpy as np

#: log2 of the default energy scale S = 1024 fixed-point units per cost unit. Measured by
#: scripts/measure_posterior.py against the same recurrences in float64 (DNA: 10 reads of 150 nt
#: against 1,072 columns of tests/data/pyrg, the weighted preset; protein: 20 reads of 50 aa
#: against 300 columns of data/protein, the protein preset; 5 candidate edges each; T 0.5, 1, 2,
#: 4), the largest errors at S = 1024: Z 0.002-0.053 cost units, one edge's M posteriors
#: 0.002-0.007, the pooled posteriors 0.001-0.004, the weights 0.0002 (S = 256: about four times
#: those; S = 4096: about a quarter, but its tables, four times longer, made the CPU's Forward and
#: Backward 35% slower at T = 2). An error of 0.004 is far below the PP code's steps of 0.1; where
#: two columns' exact posteriors tie, the rounding rather than the tie rule picks the MEA's.
SCALE_BITS = 10
#: The default S.
DEFAULT_SCALE = 1 << SCALE_BITS
#: Probability 1.0 in fixed point (module docstring: why 2^15).
PROB_BITS = 15
PROB_ONE = 1 << PROB_BITS
#: Every energy, and every sum of energies a kernel forms, stays below this in magnitude
#: (int32 with a factor of two to spare).
ENERGY_LIMIT = 1 << 30
#: A stand-in for +infinity (a cell out of the band): any finite energy lies within ENERGY_LIMIT / 2
#: of 0 (`check_fixed_point`), so a sum with the sentinel differs from every finite energy by more
#: than any table is long, and the softmin of the two is the finite one exactly.
SENTINEL = ENERGY_LIMIT
#: The most entries a table may have (a temperature so high that the tables grow past this is
#: refused: 2^22 int32 entries are 16 MiB).
MAX_TABLE = 1 << 22

_LN3 = math.log(3.0)


def _rounded(values: np.ndarray, exact) -> np.ndarray:
    """Round float64 `values` half to even, recomputing with `exact(index)` (a Decimal) the
    entries within 1e-6 of a half-integer, where float64's last bits could decide."""
    out = np.rint(values)
    close = np.nonzero(np.abs(values - np.floor(values) - 0.5) < 1e-6)[0]
    for index in close.tolist():
        out[index] = float(exact(index).to_integral_value(rounding="ROUND_HALF_EVEN"))
    return out.astype(np.int64)


def _table_length(first_zero) -> int:
    """The smallest d >= 0 where `first_zero(d)` holds (a monotone predicate), by doubling and bisection."""
    hi = 1
    while not first_zero(hi):
        hi *= 2
        if hi > 4 * MAX_TABLE:
            raise ValueError(f"a posterior table would have more than {MAX_TABLE} entries: the temperature is "
                             f"too high for the energy scale")
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if first_zero(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _padded(table: np.ndarray) -> np.ndarray:
    """`table` padded with zeros to a power-of-two length (kernels clamp an index with a mask), as
    uint16 where its entries fit (half the cache footprint: the CPU kernels ran 10-20% faster
    with S = 1024, T = 2-4), else int32."""
    dtype = np.uint16 if table.max(initial=0) <= np.iinfo(np.uint16).max else np.int32
    out = np.zeros(1 << (table.size - 1).bit_length(), dtype)
    out[:table.size] = table
    return out


def softmin_table(temperature: float, scale: int) -> np.ndarray:
    """int32 softmin[d] = round(S T ln(1 + exp(-d/(S T)))) up to and including the first entry
    that rounds to 0 (module docstring); [0] at T = 0 (min)."""
    if temperature == 0:
        return np.zeros(1, np.int32)
    st = float(scale) * float(temperature)

    def value(d):
        return st * np.log1p(np.exp(-np.asarray(d, float) / st))

    def exact(d):
        with localcontext() as ctx:
            ctx.prec = 50
            big = Decimal(scale) * Decimal(temperature)
            return big * (1 + (-Decimal(d) / big).exp()).ln()

    # value(d) is decreasing; it rounds to 0 once below 1/2
    length = 1 + _table_length(lambda d: value(d) < 0.5 and _rounded(np.array([value(d)]), lambda _: exact(d))[0] == 0)
    table = _rounded(value(np.arange(length)), exact)
    if length > MAX_TABLE:
        raise ValueError(f"the softmin table would have {length} entries (at most {MAX_TABLE})")
    return _padded(table)


def probability_table(temperature: float, scale: int) -> np.ndarray:
    """int32 probability[x] = round(PROB_ONE exp(-x/(S T))) up to and including the first entry
    that rounds to 0 (module docstring); at T = 0 [PROB_ONE, 0] (x = 0: on a best path)."""
    if temperature == 0:
        return np.array([PROB_ONE, 0], np.int32)
    st = float(scale) * float(temperature)

    def value(x):
        return PROB_ONE * np.exp(-np.asarray(x, float) / st)

    def exact(x):
        with localcontext() as ctx:
            ctx.prec = 50
            return PROB_ONE * (-Decimal(x) / (Decimal(scale) * Decimal(temperature))).exp()

    length = 1 + _table_length(lambda x: value(x) < 0.5 and _rounded(np.array([value(x)]), lambda _: exact(x))[0] == 0)
    if length > MAX_TABLE:
        raise ValueError(f"the probability table would have {length} entries (at most {MAX_TABLE})")
    return _padded(_rounded(value(np.arange(length)), exact))


@dataclass(frozen=True, eq=False)
class PosteriorTables:
    """The run's fixed-point tables (module docstring): temperature T (cost units), scale S (a
    power of two; `shift` = log2 S), `softmin` and `probability` (uint16 or int32, zero-padded to
    a power-of-two length; built by `build`), and `placement`, the probability table of the edge
    weights' temperature T_p (DESIGN 5; the same array as `probability` where T_p = T)."""

    temperature: float
    scale: int
    softmin: np.ndarray
    probability: np.ndarray
    placement_temperature: float
    placement: np.ndarray

    @classmethod
    def build(cls, temperature: float, scale: int = DEFAULT_SCALE, *,
              placement_temperature: float | None = None) -> PosteriorTables:
        """The tables for temperature T >= 0 (0: min-plus, Eq. 1's recurrence) at scale S, the
        edge weights' at T_p (None: T_p = T)."""
        if not (isinstance(scale, (int, np.integer)) and scale >= 1 and scale & (scale - 1) == 0):
            raise ValueError(f"the energy scale must be a power of two, got {scale!r}")
        if placement_temperature is None:
            placement_temperature = temperature
        for name, value in (("temperature", temperature), ("placement temperature", placement_temperature)):
            if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"the {name} must be a finite number >= 0, got {value!r}")
        probability = probability_table(temperature, scale)
        placement = probability if placement_temperature == temperature \
            else probability_table(placement_temperature, scale)
        return cls(float(temperature), int(scale), softmin_table(temperature, scale), probability,
                   float(placement_temperature), placement)

    @property
    def shift(self) -> int:
        """log2 of the scale: a cost becomes an energy by `cost << shift`."""
        return int(self.scale).bit_length() - 1


def energy_bounds(p: np.ndarray, largest_cost: int, n: int, m: int, temperature: float) -> tuple[float, float]:
    """(upper, lower) bounds, in cost units, on every energy the posterior kernels store for a
    read of n residues against m columns (p: the six penalties, ScoringParams.as_array order;
    largest_cost: the largest column profile cost, 0 without).

    upper: a Forward or Backward energy is a softmin over paths, so at most its cheapest path's
    energy; every cell a path can reach has one from the boundary row and on to the last row of
    n diagonal or insertion steps (posterior.py's docstring), each at most the larger of
    mismatch + cgap + the column cost and the insertion, so at most n * that plus one step more.
    (M at column 0 after the first row follows the sentinel: its stored sum is the sentinel's.)
    lower: a softmin over N paths of energies >= 0 is >= -T ln N; a path is a sequence of at most
    n + m steps, each M, D or I, from one of at most 2m starts, so ln N <= (n + m + 1) ln 3 +
    ln(2m + 1). One cost unit is added to each for the tables' rounding (at most 1/2 fixed-point
    unit per softmin, a few per cell along a path of at most n + m cells: far below one unit)."""
    diag = int(p[0]) + int(p[1]) + int(largest_cost)
    step = max(diag, int(p[2]) + int(p[3]), int(p[3]), int(p[4]))
    upper = n * max(diag, int(p[4])) + step + 1.0
    lower = temperature * ((n + m + 1) * _LN3 + math.log(2 * m + 1)) + 1.0
    return upper, lower


def fixed_point_span(p: np.ndarray, largest_cost: int, n: int, m: int, temperature: float, scale: int) -> float:
    """The largest magnitude (fixed-point units) a kernel's sums can reach for such a read: a
    posterior's exponent F + B - Z adds two energies and subtracts a third, plus one step."""
    upper, lower = energy_bounds(p, largest_cost, n, m, temperature)
    step = max(int(p[0]) + int(p[1]) + int(largest_cost), int(p[2]) + int(p[3]), int(p[4]))
    return scale * (2 * upper + 2 * lower + step)


def check_fixed_point(p: np.ndarray, largest_cost: int, n_max: int, m: int, tables: PosteriorTables) -> None:
    """ValueError unless reads of up to n_max residues against m columns keep every fixed-point
    energy and sum below ENERGY_LIMIT at the tables' temperature and scale (call it up front,
    from the run's penalties, longest read and alignment length; `decode_batch` calls it too).
    p: the penalties (ScoringParams.as_array); largest_cost: ColumnCosts.largest (0 without)."""
    span = fixed_point_span(p, largest_cost, n_max, m, tables.temperature, tables.scale)
    if span >= ENERGY_LIMIT:
        upper, lower = energy_bounds(p, largest_cost, n_max, m, tables.temperature)
        raise ValueError(f"posterior energies of reads up to {n_max} residues against {m} columns could reach "
                         f"{span:.3g} fixed-point units (bounds {upper:.0f} and -{lower:.0f} cost units at "
                         f"temperature {tables.temperature:g}, scale {tables.scale}), beyond the int32 limit "
                         f"{ENERGY_LIMIT}: use a smaller scale, temperature or penalties")
