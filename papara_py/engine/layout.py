"""The inter-reference structure-of-arrays layout of DESIGN.md section 6.

A block holds W edge profiles transposed to [m, W]: element [i, w] is the profile element (state
set + CGAP bit; uint8 for DNA, uint32 for protein, phylo/encoding.py) of edge w at column i, so
one column of a block is W contiguous lanes. A CPU
worker loads one column as one vector; on the GPU, W neighbouring work-items read W neighbouring
bytes (coalesced).

A block covers edges [first_edge, first_edge + n_edges); lanes past n_edges (only in the last
block) repeat the last real edge so kernels never see undefined data, and the merge ignores them.

Every block of a run also carries the run's column profile costs (`costs`,
model/column_costs.py; protein), the same on every edge, which the scorers take beside the lanes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papara_py.model.column_costs import ColumnCosts


@dataclass(frozen=True)
class Block:
    """W edges in SoA layout: `lanes` is [m, W] profile elements, C-contiguous; `costs` the run's
    column profile costs (None: none), shared by its blocks."""

    index: int
    first_edge: int
    n_edges: int
    lanes: np.ndarray
    costs: ColumnCosts | None = None

    @property
    def width(self) -> int:
        return self.lanes.shape[1]

    def edge_ids(self) -> np.ndarray:
        """Global edge numbers of the real lanes."""
        return np.arange(self.first_edge, self.first_edge + self.n_edges, dtype=np.int32)


def make_block(index: int, first_edge: int, profiles: np.ndarray, width: int,
               costs: ColumnCosts | None = None) -> Block:
    """Transpose `profiles` ([w, m] profile elements, w <= width) into one block of `width` lanes
    (with the run's column profile costs `costs`)."""
    n_edges, m = profiles.shape
    if not 0 < n_edges <= width:
        raise ValueError(f"a block holds 1..{width} edges, got {n_edges}")
    lanes = np.empty((m, width), dtype=profiles.dtype)
    lanes[:, :n_edges] = profiles.T
    lanes[:, n_edges:] = profiles[-1][:, None]
    return Block(index=index, first_edge=first_edge, n_edges=n_edges, lanes=lanes, costs=costs)


def block_count(n_edges: int, width: int) -> int:
    """How many blocks of `width` lanes cover `n_edges` edges."""
    return -(-n_edges // width)
