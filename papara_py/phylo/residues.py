"""Single residues of an alphabet: the index of an unambiguous letter's one state.

The traceback's nearest-sequence bonus (model/nearest.py) counts identities between a read and
the reference rows; identity is of single residues, so gaps and ambiguity codes (N, X, B, Z, J)
never match anything, not even themselves. The reference rows keep their gaps apart
(GAP_RESIDUE): the bonus waives a read gap's opening cost where a nearest row has one. A read's
nearest rows reach the traceback as one mark set per column (`nearest_marks`). The location check
(model/location.py) aligns a read to each reference row as a sequence of its own
(`reference_sequences`; `LaneSequences` lays them side by side for its host scorer, once a run).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from papara_py.phylo.encoding import IS_GAP, Alphabet

#: Not one residue (a gap, an ambiguity code): never identical to anything.
NO_RESIDUE = 255
#: A gap in a reference row (GAP_CHARACTERS): matches no residue either.
GAP_RESIDUE = 254
#: The mark of a gap in `nearest_marks` (residue r marks bit r; residue indices stay below 31).
GAP_MARK = 1 << 31


def residue_index_table(alphabet: Alphabet) -> np.ndarray:
    """uint8 [256]: each ASCII letter's residue index (its one state), NO_RESIDUE for gaps,
    ambiguity codes and anything else."""
    table = np.full(256, NO_RESIDUE, np.uint8)
    codes = alphabet.read_code.astype(np.int64) & alphabet.state_mask
    single = (codes != 0) & (codes & (codes - 1) == 0)
    table[single] = np.log2(codes[single]).astype(np.uint8)
    return table


def reference_residues(tip_rows: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """uint8 [m, tips]: the reference alignment's residue indices, GAP_RESIDUE for its gaps, column
    by column (model/nearest.py walks a read's columns, each a contiguous run of tips)."""
    table = residue_index_table(alphabet)
    table[IS_GAP] = GAP_RESIDUE
    return np.ascontiguousarray(table[tip_rows].T)


#: Reference sequences side by side in `LaneSequences`: 16 int32 lanes, two AVX2 vectors of the
#: location check's host scorer (model/location.lane_scores).
LANES = 16


class LaneSequences(NamedTuple):
    """Sequences side by side, LANES at a time, for model/location.lane_scores: group g's
    position i holds its lanes' residue indices at codes[starts[g] + i], tips[g * LANES + lane] the
    sequence in each lane (-1: none), `padding` after a sequence's end and in empty lanes. The
    sequences go into groups by length (shortest first), so a group's sequences pad little."""

    codes: np.ndarray   # uint8 [positions, LANES]
    starts: np.ndarray  # int64 [groups + 1]
    tips: np.ndarray    # int64 [groups * LANES]

    @classmethod
    def of(cls, codes: np.ndarray, offsets: np.ndarray, padding: int) -> LaneSequences:
        """Sequence t's residue indices codes[offsets[t]:offsets[t + 1]] in lanes."""
        lengths = np.diff(offsets)
        order = np.argsort(lengths, kind="stable")
        groups = -(-order.size // LANES)
        tips = np.full(groups * LANES, -1, np.int64)
        tips[:order.size] = order
        padded = np.zeros(groups * LANES, np.int64)
        padded[:order.size] = lengths[order]
        group_lengths = padded.reshape(groups, LANES).max(axis=1)
        starts = np.concatenate(([0], np.cumsum(group_lengths))).astype(np.int64)
        lanes = np.full((int(starts[-1]), LANES), padding, np.uint8)
        for slot, tip in enumerate(tips.tolist()):  # a slice per sequence: faster than one scatter
            if tip >= 0:
                first = starts[slot // LANES]
                lanes[first:first + lengths[tip], slot % LANES] = codes[offsets[tip]:offsets[tip + 1]]
        return cls(lanes, starts, tips)


class ReferenceSequences(NamedTuple):
    """The reference rows as sequences of their own, gaps removed, for aligning a read to each
    alone (model/location.py): row t's residue indices are codes[offsets[t]:offsets[t + 1]]
    (an ambiguity code: the alphabet's state count, the location check's score matrix's extra
    index), columns[...] the alignment column of each, and `lanes` the same sequences side by
    side (padded with the state count + 1), built once a run for the host's scorer."""

    codes: np.ndarray    # uint8, the rows' residues one after another
    offsets: np.ndarray  # int64 [tips + 1]
    columns: np.ndarray  # int32, beside codes
    lanes: LaneSequences


def reference_sequences(residues: np.ndarray, states: int) -> ReferenceSequences:
    """`reference_residues`' rows ([m, tips]) as sequences without their gaps, in tip order;
    `states`: the alphabet's state count."""
    by_row = np.ascontiguousarray(residues.T)
    held = by_row != GAP_RESIDUE
    columns = np.nonzero(held)[1]  # row-major: each row's columns in order
    offsets = np.concatenate(([0], np.cumsum(held.sum(axis=1)))).astype(np.int64)
    codes = by_row[held]
    codes = np.where(codes == NO_RESIDUE, states, codes).astype(np.uint8)
    return ReferenceSequences(codes, offsets, columns.astype(np.int32), LaneSequences.of(codes, offsets, states + 1))


@njit(cache=True, nogil=True)
def nearest_marks(reference: np.ndarray, tips: np.ndarray, marks: np.ndarray) -> None:
    """What one read's nearest rows (`tips` [k] into `reference` (`reference_residues`), -1: no
    row) hold in each column, into `marks` (uint32 [m]): bit r for a residue of index r in one of
    the rows, GAP_MARK for a gap in one of them; no mark where none of them holds a residue (a
    read with no row has none: nothing matches it, no gap opens free). Residue indices stay below
    31 (20 amino acids, 4 nucleotides). kernels/band_trace.cl forms the same marks on the device."""
    marks[:] = 0
    for rank in range(tips.shape[0]):
        tip = tips[rank]
        if tip < 0:
            continue
        for i in range(reference.shape[0]):
            held = reference[i, tip]
            if held == GAP_RESIDUE:
                marks[i] |= np.uint32(GAP_MARK)
            elif held != NO_RESIDUE:
                marks[i] |= np.uint32(1) << np.uint32(held)
