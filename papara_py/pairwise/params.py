"""Scoring parameters of DESIGN.md section 4 and the overflow bound that gates the int16 paths."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from papara_py.errors import InputError

INT16_MAX = 32767
#: Largest penalty the command line takes: a DP step then adds at most 2,000, which keeps the
#: int16 kernels' stand-in infinity positive and lets the int32 kernels hold reads of up to
#: about half a million residues (`check_fits_int32`).
MAX_PENALTY = 1000
#: The GPU kernels' int32 infinity (engine/gpu.py INF32); the CPU's is larger. Every finite cell
#: must stay below it.
INT32_LIMIT = 1 << 30


#: Named penalty sets (mismatch, cgap, gap_open, gap_extend, insertion); `--preset NAME`.
#: paper: the 2012 paper's values. robust: chosen by the leave-taxa-out study in docs/ACCURACY.md
#: (maximises the worst of seven data sets; at least as accurate as paper on every one); the
#: default for DNA. protein: the default for amino-acid data (phylo/encoding.py PROTEIN), provisional
#: until a protein accuracy study: PaPaRa 2.5's -a defaults translated into Eq. 1's terms
#: (docs/ACCURACY.md, "Protein defaults").
PRESETS: dict[str, tuple[int, int, int, int, int]] = {
    "robust": (3, 6, 2, 2, 7),
    "paper": (3, 3, 3, 1, 3),
    "protein": (2, 3, 2, 1, 5),
}
DEFAULT_PRESET = "robust"
PENALTY_NAMES = ("mismatch", "cgap", "gap_open", "gap_extend", "insertion")


@dataclass(frozen=True)
class ScoringParams:
    """Penalties of Equation 1 (minimised). Defaults: the `robust` preset (docs/ACCURACY.md)."""

    mismatch: int = PRESETS[DEFAULT_PRESET][0]
    cgap: int = PRESETS[DEFAULT_PRESET][1]
    gap_open: int = PRESETS[DEFAULT_PRESET][2]
    gap_extend: int = PRESETS[DEFAULT_PRESET][3]
    insertion: int = PRESETS[DEFAULT_PRESET][4]

    @classmethod
    def preset(cls, name: str) -> "ScoringParams":
        """The named penalty set (`PRESETS`)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        return cls(*PRESETS[name])

    def preset_name(self) -> str | None:
        """The preset these penalties equal, or None."""
        values = (self.mismatch, self.cgap, self.gap_open, self.gap_extend, self.insertion)
        return next((name for name, preset in PRESETS.items() if preset == values), None)

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"scoring parameter {name} must be a non-negative integer, got {value!r}")

    def as_array(self) -> np.ndarray:
        """(mismatch, cgap, gap_open, gap_extend, insertion) as int64, the order kernels take."""
        return np.array(
            [self.mismatch, self.cgap, self.gap_open, self.gap_extend, self.insertion], dtype=np.int64
        )

    def max_addend(self) -> int:
        """Largest value a single DP step adds to a cell (diagonal, gap open, extend or insertion)."""
        return max(
            self.mismatch + self.cgap, self.gap_open + self.gap_extend, self.gap_extend, self.insertion
        )

    def cell_bound(self, read_length: int) -> int:
        """Upper bound on every finite S and D value of a band for a read of this length.

        Every in-band cell (i, j) is reachable from the free boundary row by j+1 diagonal steps,
        each costing at most mismatch + cgap, so S <= n (mismatch + cgap); D and I add one step.
        """
        return read_length * (self.mismatch + self.cgap) + self.max_addend()

    def int16_infinity(self) -> int:
        """The value narrow kernels use for +infinity: adding any single step still fits int16."""
        return INT16_MAX - self.max_addend()

    def check_fits_int32(self, read_length: int, source: str = "--mismatch/--cgap") -> None:
        """InputError unless reads of up to `read_length` residues score exactly in int32 lanes."""
        if self.cell_bound(read_length) >= INT32_LIMIT - self.max_addend():
            longest = (INT32_LIMIT - 2 * self.max_addend()) // max(1, self.mismatch + self.cgap)
            raise InputError(source, f"with these penalties (mismatch {self.mismatch} + cgap {self.cgap} per "
                                     f"residue) scores of reads longer than {longest} residues overflow the "
                                     f"32-bit kernels, and this alignment takes reads of up to {read_length}: "
                                     f"use smaller penalties")

    def int16_safe(self, read_length: int) -> bool:
        """True when int16 arithmetic gives exactly the int64 answer for reads of this length.

        Finite values stay below the stand-in infinity, and infinity plus one step cannot wrap.
        """
        return self.cell_bound(read_length) < self.int16_infinity()


@dataclass(frozen=True)
class PenaltyChoice:
    """The penalties as asked for: `--preset` (None: the alphabet's default, which is known only
    once the alignment is read) and the single penalties given, each replacing the preset's."""

    preset: str | None = None
    given: tuple[tuple[str, int], ...] = ()

    def resolve(self, default_preset: str = DEFAULT_PRESET) -> ScoringParams:
        """The penalties, with `default_preset` (the alphabet's) where no --preset was given."""
        base = ScoringParams.preset(self.preset or default_preset)
        return ScoringParams(**(asdict(base) | dict(self.given)))
