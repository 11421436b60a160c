"""The model's parameters (DESIGN.md 4-5): the penalties of Eq. 1 with near states, the column
profile cost's weight, the posterior decoding's temperature and the edge weights' (placement)
temperature; the named presets; and the overflow bounds that gate the kernels' integer widths."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from papara_py.errors import InputError
from papara_py.model.column_costs import MAX_COLUMN_WEIGHT, ColumnCosts, largest_cost

INT16_MAX = 32767
#: Largest penalty the command line takes: a DP step then adds at most 2,000, which keeps the
#: int16 kernels' stand-in infinity positive and lets the int32 kernels hold reads of up to
#: about half a million residues (`check_fits_int32`).
MAX_PENALTY = 1000
#: The GPU kernels' int32 infinity (band_score's `inf` on the 32-bit lane); the CPU's is larger.
#: Every finite cell must stay below it.
INT32_LIMIT = 1 << 30


#: The temperature's upper bound (cost units): far above any fitted value; at T much larger than the
#: penalties every alignment is almost equally likely and the posterior says nothing.
MAX_TEMPERATURE = 100.0


@dataclass(frozen=True)
class Preset:
    """A named parameter set (`--preset NAME`): the model of DESIGN 4-5 at chosen values.

    The six penalties of Eq. 1 with near states (DESIGN 4), the column profile cost's weight
    (protein; DESIGN 3), the temperature of the posterior decoding (DESIGN 5; 0: the Viterbi
    traceback of Eq. 1) and that of the edge weights (DESIGN 5; equal to the temperature, the
    plain posterior over edges, unless fitted apart). `chosen` says where the values come from
    (docs/accuracy.md)."""

    name: str
    mismatch: int
    cgap: int
    gap_open: int
    gap_extend: int
    insertion: int
    near_mismatch: int
    column_weight: float
    temperature: float
    placement_temperature: float
    chosen: str

    def values(self) -> dict[str, int | float]:
        """The parameters by name, as ScoringParams takes them."""
        return {name: getattr(self, name) for name in PARAMETER_NAMES}

    def placement_with(self, temperature: float) -> float:
        """The placement temperature that goes with `temperature` given in place of this preset's:
        the preset's own where it sets the two apart (fitted), else the temperature itself (the
        plain posterior over edges)."""
        return self.placement_temperature if self.placement_temperature != self.temperature else temperature


#: The presets. Each value is a tuned number a run of that preset depends on (docs/accuracy.md
#: counts them and says which data sets fitted them).
PRESETS: dict[str, Preset] = {preset.name: preset for preset in (
    Preset("weighted", 5, 10, 4, 4, 12, 2, 0.0, 1.25, 12.0,
           "the DNA default: penalties from the leave-taxa-out study with near states, temperatures fitted "
           "on the DNA study sets (docs/accuracy.md)"),
    Preset("protein", 3, 6, 6, 4, 24, 2, 1.0, 1.75, 7.0,
           "the protein default: penalties, column weight and temperatures fitted on the protein study "
           "sets (docs/accuracy.md)"),
    Preset("paper", 3, 3, 3, 1, 3, 3, 0.0, 0.0, 0.0,
           "the 2012 paper's Equation 1 and its Viterbi traceback, bit for bit"),
)}
DEFAULT_PRESET = "weighted"
PENALTY_NAMES = ("mismatch", "cgap", "gap_open", "gap_extend", "insertion", "near_mismatch")
PARAMETER_NAMES = (*PENALTY_NAMES, "column_weight", "temperature", "placement_temperature")


@dataclass(frozen=True)
class ScoringParams:
    """The model's parameters: the penalties of DESIGN.md section 4 (minimised), the column
    weight and the temperatures of section 5.

    `ScoringParams()` is DEFAULT_PRESET (docs/accuracy.md). Otherwise a penalty not given takes
    DEFAULT_PRESET's value, except near_mismatch (a read residue among the edge's near states),
    which defaults to mismatch, and the temperature, which defaults to 0: penalties written as the
    paper's five numbers are Eq. 1 with its Viterbi traceback. The placement temperature defaults
    to DEFAULT_PRESET's where no penalty is given and the preset sets it apart from its
    temperature, else to the temperature (the plain posterior over edges). near_mismatch may not
    exceed mismatch (near states are the cheaper mismatches, and the GPU's packed lanes subtract
    in that order without borrowing)."""

    mismatch: int | None = None
    cgap: int | None = None
    gap_open: int | None = None
    gap_extend: int | None = None
    insertion: int | None = None
    near_mismatch: int | None = None
    #: The column profile cost's weight (model/column_costs.py; DESIGN 3-4): 0 turns it off.
    column_weight: float = 0.0
    #: The posterior decoding's temperature in cost units (model/posterior.py; DESIGN 5): a path
    #: of cost c weighs exp(-c / T); 0: the Viterbi traceback of Eq. 1 (model/traceback.py).
    temperature: float | None = None
    #: The edge weights' temperature (model/posterior.py edge_weights; DESIGN 5): candidate edge
    #: e weighs exp(-(Z_e - Z_min) / T_p); not used at temperature 0 (the Viterbi's weights).
    placement_temperature: float | None = None

    @classmethod
    def preset(cls, name: str) -> "ScoringParams":
        """The named penalty set (`PRESETS`)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        return cls(**PRESETS[name].values())

    def preset_name(self) -> str | None:
        """The preset these penalties equal, or None."""
        return next((name for name, preset in PRESETS.items() if tuple(preset.values().values()) == self.setting()),
                    None)

    def __post_init__(self) -> None:
        nothing_given = all(getattr(self, name) is None for name in PENALTY_NAMES)
        for name, value in zip(PENALTY_NAMES, PRESETS[DEFAULT_PRESET].values().values()):
            if getattr(self, name) is None:
                near_as_eq1 = name == "near_mismatch" and not nothing_given
                object.__setattr__(self, name, self.mismatch if near_as_eq1 else value)
        if self.temperature is None:
            object.__setattr__(self, "temperature", PRESETS[DEFAULT_PRESET].temperature if nothing_given else 0.0)
        if self.placement_temperature is None:
            object.__setattr__(self, "placement_temperature", PRESETS[DEFAULT_PRESET].placement_with(self.temperature)
                               if nothing_given else self.temperature)
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
        for name in ("temperature", "placement_temperature"):
            temperature = getattr(self, name)
            if not isinstance(temperature, (int, float, np.integer, np.floating)) or isinstance(temperature, bool) \
                    or not 0 <= temperature <= MAX_TEMPERATURE:
                raise ValueError(f"{name} must be a number from 0 to {MAX_TEMPERATURE:g}, got {temperature!r}")
            object.__setattr__(self, name, float(temperature))

    @property
    def weighted(self) -> bool:
        """Whether near states cost less than other mismatches (else this is Eq. 1 exactly, and
        kernels may ignore the near states)."""
        return self.near_mismatch != self.mismatch

    def values(self) -> tuple[int, ...]:
        """The six penalties in PENALTY_NAMES order."""
        return tuple(int(getattr(self, name)) for name in PENALTY_NAMES)

    def setting(self) -> tuple:
        """The six penalties, the column weight and the temperatures: what a preset names (PRESETS)."""
        return (*self.values(), self.column_weight, self.temperature, self.placement_temperature)

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
        exceed it. A --temperature given without --placement-temperature takes the placement
        temperature along where the preset has them equal (the plain posterior over edges)."""
        base = asdict(ScoringParams.preset(self.preset or default_preset))
        given = dict(self.given)
        if "mismatch" in given and "near_mismatch" not in given:
            equal = base["near_mismatch"] == base["mismatch"]
            given["near_mismatch"] = given["mismatch"] if equal else min(base["near_mismatch"], given["mismatch"])
        if "temperature" in given and "placement_temperature" not in given:
            given["placement_temperature"] = PRESETS[self.preset or default_preset].placement_with(given["temperature"])
        values = base | given
        if values["near_mismatch"] > values["mismatch"]:
            raise InputError("--near-mismatch", f"the near-state mismatch ({values['near_mismatch']}) may not "
                                                f"exceed the mismatch penalty ({values['mismatch']})")
        return ScoringParams(**values)
