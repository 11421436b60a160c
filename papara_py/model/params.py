"""Scoring parameters of DESIGN.md section 4 and the overflow bound that gates the int16 paths."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from papara_py.errors import InputError
from papara_py.model.column_costs import MAX_COLUMN_WEIGHT, ColumnCosts, largest_cost

INT16_MAX = 32767
#: Largest penalty the command line takes: a DP step then adds at most 2,000, which keeps the
#: int16 kernels' stand-in infinity positive and lets the int32 kernels hold reads of up to
#: about half a million residues (`check_fits_int32`).
MAX_PENALTY = 1000
#: The GPU kernels' int32 infinity (engine/gpu.py INF32); the CPU's is larger. Every finite cell
#: must stay below it.
INT32_LIMIT = 1 << 30


#: Named penalty sets (mismatch, cgap, gap_open, gap_extend, insertion, near_mismatch,
#: column_weight, vote_window, nearest_bonus, band_margin, location_check, second_model); `--preset
#: NAME`. column_weight 0: no column profile cost (DESIGN 4); vote_window 0: each read takes its best
#: edge's alignment (DESIGN 5); nearest_bonus 0: no second traceback towards the read's nearest
#: reference sequence (DESIGN 5); band_margin 0: the traceback keeps to DESIGN 4's band (DESIGN 5);
#: location_check 0: no location check after the traceback (DESIGN 5); second_model 0: no second
#: model (DESIGN 5).
#: paper: the 2012 paper's values. robust: chosen by the leave-taxa-out study in docs/ACCURACY.md
#: for Eq. 1 (maximises the worst of seven data sets; at least as accurate as paper on every one).
#: protein: the default for amino-acid data (phylo/encoding.py PROTEIN): a read residue that
#: substitutes for one of the edge's states (BLOSUM62 >= 0) or is common in the column (its family
#: residues), protein's near states (DESIGN.md 3), costs near_mismatch 3 instead of 6; chosen by
#: the protein leave-taxa-out study in docs/ACCURACY.md ("Column family residues for protein":
#: maximises the worst margin over the better of MAFFT --addfragments and hmmalign on Pfam seed
#: families and twelve validation seeds; it replaced 5, 6, 8, 2, 12, 3 of the near states without
#: family residues, 4, 7, 8, 2, 12 of Eq. 1 and, before that, the provisional 2, 3, 2, 1, 5,
#: PaPaRa 2.5's -a defaults in Eq. 1's terms). Its vote window 4 (model/votes.py) was chosen by
#: the study "Votes over near-best edges in the model" in docs/ACCURACY.md, its nearest bonus 2
#: (model/nearest.py) by the study "The nearest reference sequence in the model" there, its band
#: margin 1 by "The traceback's band margin" there, its location check 10 by "The location check"
#: there, its second model 1.75 by "A second model and the choice between them" there (the DNA
#: presets keep 0 for all five; DNA has no substitution matrix for the check or the column costs).
#: weighted: the default for DNA since near states exist: a read residue one parsimony step away
#: from the edge's set (its near states, DESIGN.md 3-4) costs near_mismatch instead of mismatch;
#: chosen by the leave-taxa-out study in docs/ACCURACY.md ("Near states"): at least MAFFT
#: --addfragments and the paper preset on all seven study sets. robust was the Eq. 1 default
#: before it. robust and paper have near_mismatch = mismatch, i.e. Eq. 1 of the paper.
PRESETS: dict[str, tuple[int, int, int, int, int, int, float, int, int, int, int, float]] = {
    "weighted": (5, 10, 4, 4, 12, 2, 0.0, 0, 0, 0, 0, 0.0),
    "robust": (3, 6, 2, 2, 7, 3, 0.0, 0, 0, 0, 0, 0.0),
    "paper": (3, 3, 3, 1, 3, 3, 0.0, 0, 0, 0, 0, 0.0),
    "protein": (3, 6, 5, 3, 16, 2, 1.0, 4, 2, 1, 10, 1.75),
}
DEFAULT_PRESET = "weighted"
PENALTY_NAMES = ("mismatch", "cgap", "gap_open", "gap_extend", "insertion", "near_mismatch")


@dataclass(frozen=True)
class ScoringParams:
    """Penalties of DESIGN.md section 4 (minimised).

    `ScoringParams()` is DEFAULT_PRESET (docs/ACCURACY.md). Otherwise a penalty not given takes
    DEFAULT_PRESET's value, except near_mismatch (a read residue among the edge's near states),
    which defaults to mismatch: penalties written as the paper's five numbers are Eq. 1. It may
    not exceed mismatch (near states are the cheaper mismatches, and the GPU's packed lanes
    subtract in that order without borrowing)."""

    mismatch: int | None = None
    cgap: int | None = None
    gap_open: int | None = None
    gap_extend: int | None = None
    insertion: int | None = None
    near_mismatch: int | None = None
    #: The column profile cost's weight (model/column_costs.py; DESIGN 4): 0 turns it off.
    column_weight: float = 0.0
    #: Reads whose candidate edges score within this of their best take each residue's column by
    #: vote over those edges' alignments (model/votes.py; DESIGN 5); 0: the best edge's
    #: alignment alone. A traceback setting: it changes no score, placement or candidate list.
    vote_window: int = 0
    #: Reads whose nearest reference sequence (the row with the most identities along the best
    #: edge's alignment) shares at least NEAREST_SHARE of their placed residues are traced back
    #: again with each residue identical to that row's in a column costing this much less there,
    #: and gaps opening free where that row has one (model/nearest.py; DESIGN 5); 0: off. A
    #: traceback setting, as vote_window.
    nearest_bonus: int = 0
    #: The traceback may place a read residue up to this many offsets outside DESIGN 4's band (a
    #: read that ends at the alignment's last column with a deletion before an insertion, or starts
    #: at its first with the reverse), each excursion costing `excursion_cost` more; 0: the band
    #: (DESIGN 5). A traceback setting, as vote_window: scores and best edges keep the band.
    band_margin: int = 0
    #: Reads whose final alignment and their mapping onto the best-scoring reference sequence
    #: (aligned to each alone) agree on fewer than this percentage of their residues' columns take
    #: the mapping's (model/location.py; DESIGN 5); 0: off. A traceback setting, as vote_window;
    #: it needs the alphabet's substitution matrix (protein).
    location_check: int = 0
    #: The column weight of a second model (`second`: every penalty, vote window and nearest bonus
    #: doubled, this column weight): each read is also aligned under it, on its candidate edges
    #: re-ranked by it, and keeps whichever of the two alignments the reference alignment's column
    #: composition prefers (model/choice.py; DESIGN 5); 0: off. A traceback setting, as
    #: vote_window; it needs the alphabet's substitution matrix (protein).
    second_model: float = 0.0

    @classmethod
    def preset(cls, name: str) -> "ScoringParams":
        """The named penalty set (`PRESETS`)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        return cls(*PRESETS[name])

    def preset_name(self) -> str | None:
        """The preset these penalties equal, or None."""
        return next((name for name, preset in PRESETS.items() if preset == self.setting()), None)

    def __post_init__(self) -> None:
        nothing_given = all(getattr(self, name) is None for name in PENALTY_NAMES)
        for name, value in zip(PENALTY_NAMES, PRESETS[DEFAULT_PRESET]):
            if getattr(self, name) is None:
                near_as_eq1 = name == "near_mismatch" and not nothing_given
                object.__setattr__(self, name, self.mismatch if near_as_eq1 else value)
        for name in PENALTY_NAMES:
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"scoring parameter {name} must be a non-negative integer, got {value!r}")
        if self.near_mismatch > self.mismatch:
            raise ValueError(f"near_mismatch ({self.near_mismatch}) may not exceed mismatch ({self.mismatch})")
        weight = self.column_weight
        if not isinstance(weight, (int, float, np.integer, np.floating)) or not 0 <= weight <= MAX_COLUMN_WEIGHT:
            raise ValueError(f"column_weight must be a number from 0 to {MAX_COLUMN_WEIGHT:g}, got {weight!r}")
        object.__setattr__(self, "column_weight", float(weight))
        window = self.vote_window
        if not isinstance(window, (int, np.integer)) or isinstance(window, bool) or not 0 <= window <= MAX_PENALTY:
            raise ValueError(f"vote_window must be an integer from 0 to {MAX_PENALTY}, got {window!r}")
        object.__setattr__(self, "vote_window", int(window))
        bonus = self.nearest_bonus
        if not isinstance(bonus, (int, np.integer)) or isinstance(bonus, bool) or not 0 <= bonus <= MAX_PENALTY:
            raise ValueError(f"nearest_bonus must be an integer from 0 to {MAX_PENALTY}, got {bonus!r}")
        object.__setattr__(self, "nearest_bonus", int(bonus))
        margin = self.band_margin
        if not isinstance(margin, (int, np.integer)) or isinstance(margin, bool) or not 0 <= margin <= MAX_PENALTY:
            raise ValueError(f"band_margin must be an integer from 0 to {MAX_PENALTY}, got {margin!r}")
        object.__setattr__(self, "band_margin", int(margin))
        agree = self.location_check
        if not isinstance(agree, (int, np.integer)) or isinstance(agree, bool) or not 0 <= agree <= 100:
            raise ValueError(f"location_check must be a percentage from 0 to 100, got {agree!r}")
        object.__setattr__(self, "location_check", int(agree))
        second = self.second_model
        if not isinstance(second, (int, float, np.integer, np.floating)) or isinstance(second, bool) \
                or not 0 <= second <= MAX_COLUMN_WEIGHT:
            raise ValueError(f"second_model must be a column weight from 0 to {MAX_COLUMN_WEIGHT:g}, got {second!r}")
        object.__setattr__(self, "second_model", float(second))

    @property
    def weighted(self) -> bool:
        """Whether near states cost less than other mismatches (else this is Eq. 1 exactly, and
        kernels may ignore the near states)."""
        return self.near_mismatch != self.mismatch

    def values(self) -> tuple[int, ...]:
        """The six penalties in PENALTY_NAMES order."""
        return tuple(int(getattr(self, name)) for name in PENALTY_NAMES)

    def setting(self) -> tuple:
        """The six penalties, the column weight, the vote window, the nearest bonus, the band
        margin, the location check and the second model: what a preset names (PRESETS)."""
        return (*self.values(), self.column_weight, self.vote_window, self.nearest_bonus, self.band_margin,
                self.location_check, self.second_model)

    def second(self) -> ScoringParams:
        """The second model (`second_model`): these penalties, vote window and nearest bonus
        doubled, so the column profile cost is rounded twice as finely, at column weight
        `second_model` (window and bonus at most MAX_PENALTY); the band margin and location check as
        here, no second model of its own."""
        return replace(self, **{name: 2 * value for name, value in zip(PENALTY_NAMES, self.values())},
                       column_weight=self.second_model, vote_window=min(2 * self.vote_window, MAX_PENALTY),
                       nearest_bonus=min(2 * self.nearest_bonus, MAX_PENALTY), second_model=0.0)

    @property
    def excursion_cost(self) -> int:
        """What the traceback adds where its path leaves DESIGN 4's band (`band_margin`): an
        insertion and a gap opening, the indel pair the band forbids near the alignment's ends, so a
        path leaves it only where that saves more than one more such pair would cost."""
        return self.insertion + self.gap_open + self.gap_extend

    def column_cost_bound(self) -> int:
        """The most the column profile cost adds to one diagonal step (0 where it is off)."""
        return largest_cost(self.column_weight)

    def check_column_costs(self, costs: ColumnCosts, m: int) -> None:
        """ValueError unless `costs` has m columns and no cost above `column_cost_bound`: the
        narrow kernels' overflow bounds (`int16_safe`, `cell_bound`) count on that."""
        if costs.table.shape[1] != m:
            raise ValueError(f"a column cost table of {costs.table.shape[1]} columns for {m} columns")
        if costs.largest > self.column_cost_bound():
            raise ValueError(f"column costs up to {costs.largest} exceed the bound of column_weight "
                             f"{self.column_weight:g} ({self.column_cost_bound()})")

    def as_array(self) -> np.ndarray:
        """(mismatch, cgap, gap_open, gap_extend, insertion, near_mismatch) as int64, the order
        kernels take."""
        return np.array(self.values(), dtype=np.int64)

    def max_addend(self) -> int:
        """Largest value a single DP step adds to a cell (diagonal, gap open, extend or insertion)."""
        return max(
            self.mismatch + self.cgap + self.column_cost_bound(), self.gap_open + self.gap_extend, self.gap_extend,
            self.insertion
        )

    def cell_bound(self, read_length: int) -> int:
        """Upper bound on every finite S and D value of a band for a read of this length.

        Every in-band cell (i, j) is reachable from the free boundary row by j+1 diagonal steps,
        each costing at most mismatch + cgap + the column cost, so S <= n times that; D and I add
        one step.
        """
        return read_length * (self.mismatch + self.cgap + self.column_cost_bound()) + self.max_addend()

    def trace_bound(self, read_length: int) -> int:
        """`cell_bound` for the traceback's band (`band_margin`): a cell outside DESIGN 4's band is
        reached as an in-band one is, plus one excursion."""
        return self.cell_bound(read_length) + (self.excursion_cost if self.band_margin else 0)

    def int16_infinity(self) -> int:
        """The value narrow kernels use for +infinity: adding any single step still fits int16."""
        return INT16_MAX - self.max_addend()

    def check_fits_int32(self, read_length: int, source: str = "--mismatch/--cgap") -> None:
        """InputError unless reads of up to `read_length` residues score exactly in int32 lanes."""
        if self.cell_bound(read_length) >= INT32_LIMIT - self.max_addend():
            longest = (INT32_LIMIT - 2 * self.max_addend()) // max(1, self.mismatch + self.cgap
                                                                     + self.column_cost_bound())
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
    given: tuple[tuple[str, int | float], ...] = ()

    def resolve(self, default_preset: str = DEFAULT_PRESET) -> ScoringParams:
        """The penalties, with `default_preset` (the alphabet's) where no --preset was given.

        A --mismatch given without --near-mismatch takes near_mismatch along where the preset has
        them equal (an Eq. 1 preset stays Eq. 1), and lowers it to the new mismatch where it would
        exceed it."""
        base = asdict(ScoringParams.preset(self.preset or default_preset))
        given = dict(self.given)
        if "mismatch" in given and "near_mismatch" not in given:
            equal = base["near_mismatch"] == base["mismatch"]
            given["near_mismatch"] = given["mismatch"] if equal else min(base["near_mismatch"], given["mismatch"])
        values = base | given
        if values["near_mismatch"] > values["mismatch"]:
            raise InputError("--near-mismatch", f"the near-state mismatch ({values['near_mismatch']}) may not "
                                                f"exceed the mismatch penalty ({values['mismatch']})")
        return ScoringParams(**values)
