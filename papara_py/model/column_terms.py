"""The run's column terms (DESIGN.md 3-4): what the model adds per reference column, on every
edge alike, beside the edge's own profile.

Two terms come from the whole reference alignment rather than one edge's ancestral states: the
columns' family residues (model/family.py; protein's near states take them in) and the column
profile costs (model/column_costs.py). Every scorer and the posterior step need both, so the
engine, its blocks and the decoding (model/decode.py) carry them as one value; the kernels' own
entry points (engine/cpu.score_block, engine/gpu.GpuScorer.score_chunk, the posterior's and the
traceback's batch calls, the reference scorer) keep taking them as two arguments, as their tests
call them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papara_py.model.column_costs import ColumnCosts, column_costs
from papara_py.model.family import column_family
from papara_py.phylo.encoding import Alphabet


@dataclass(frozen=True)
class ColumnTerms:
    """The columns' family residues ([m] state sets; None for DNA) and their column profile costs
    (None where the alphabet has none or the preset's column weight is 0)."""

    family: np.ndarray | None = None
    costs: ColumnCosts | None = None

    @classmethod
    def of(cls, tip_rows: np.ndarray, alphabet: Alphabet, column_weight: float) -> ColumnTerms:
        """The terms of a reference alignment (`tip_rows`: its rows in tip order) at a column
        weight (ScoringParams.column_weight)."""
        return cls(column_family(tip_rows, alphabet), column_costs(tip_rows, alphabet, column_weight))


#: No column terms (DNA, or a test's bare profiles): the default of the engine and its blocks.
NO_COLUMN_TERMS = ColumnTerms()
