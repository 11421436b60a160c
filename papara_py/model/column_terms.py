"""The run's column terms (DESIGN.md 3-4): what the model adds per reference column, on every
edge alike, beside the edge's own profile.

Two terms come from the whole reference alignment rather than one edge's ancestral states: the
columns' family residues (model/family.py; protein's near states take them in) and the column
profile costs (model/column_costs.py). Every scorer and the traceback need both, so the engine,
its blocks and the traceback (model/decode.py) carry them as one value; the kernels' own entry points
(engine/cpu.score_block, engine/gpu.GpuScorer.score_chunk, model/traceback.align_many, the
reference scorer) keep taking them as two arguments, as their tests call them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from papara_py.model.column_costs import ColumnCosts, column_costs
from papara_py.model.family import column_family
from papara_py.phylo.encoding import Alphabet
from papara_py.phylo.residues import (
    ReferenceSequences,
    reference_residues,
    reference_sequences,
)


@dataclass(frozen=True)
class ColumnTerms:
    """The columns' family residues ([m] state sets; None for DNA), their column profile costs
    (None where the alphabet has none or the preset's column weight is 0), the reference rows'
    residue indices column by column ([m, tips], phylo/residues.py; None unless the traceback's
    nearest-sequence bonus, location check or second model is on), the same rows as sequences
    without gaps (None unless the location check is on) and the second model's column profile
    costs (None unless it is on: ScoringParams.second_model)."""

    family: np.ndarray | None = None
    costs: ColumnCosts | None = None
    residues: np.ndarray | None = None
    sequences: ReferenceSequences | None = None
    second_costs: ColumnCosts | None = None

    @classmethod
    def of(cls, tip_rows: np.ndarray, alphabet: Alphabet, column_weight: float, nearest: bool = False,
           location: bool = False, second_weight: float = 0.0) -> ColumnTerms:
        """The terms of a reference alignment (`tip_rows`: its rows in tip order) at a column
        weight (ScoringParams.column_weight), with its rows' residues where `nearest`, `location`
        or `second_weight` (ScoringParams.nearest_bonus, location_check, second_model on), its
        rows as sequences where `location`, and the second model's costs at `second_weight`."""
        residues = reference_residues(tip_rows, alphabet) if nearest or location or second_weight else None
        return cls(column_family(tip_rows, alphabet), column_costs(tip_rows, alphabet, column_weight), residues,
                   reference_sequences(residues, alphabet.n_states) if location else None,
                   column_costs(tip_rows, alphabet, second_weight) if second_weight else None)

    def second(self) -> ColumnTerms:
        """The terms of the second model (ScoringParams.second): its column costs in place of
        these; the rest shared."""
        return replace(self, costs=self.second_costs, second_costs=None)


#: No column terms (DNA, or a test's bare profiles): the default of the engine and its blocks.
NO_COLUMN_TERMS = ColumnTerms()
