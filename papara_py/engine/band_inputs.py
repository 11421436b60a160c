"""band_score.cl as the host builds and feeds it, apart from the device (no OpenCL call here, so
this needs no pyopencl): the build variants
(`Variant`: lane width, stripe height, alphabet, near states, column costs, lookup path; each a
set of build options of the one kernel source) and the layouts of what the kernel reads (a
chunk's padded profiles with split state sets and near states beside them, the lookup path's
words, where each read's cost profile starts, the column cost table). engine/gpu.py's GpuScorer
puts them on the device; its docstring says why they look the way they do.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from papara_py.engine.lane_tables import pair_words, table_lanes
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import DNA, Alphabet, near_states

#: Work-group shape: (edge units, reads per group, `Variant.wg_reads`). 32 units are one NVIDIA
#: warp over one read.
WG_UNITS = 32


#: Stripe height of split (protein) state sets in packed lanes without column profile costs.
#: H100, kernel GCUPS with the protein preset's other penalties (notebook/BENCHMARKS.md, "Protein state
#: sets split at 16 bits"), the 'large' shape Q=20000 E=2597 m=1072 / T1 Q=1250 E=320 m=5000:
#: 3,124 / 2,506 at 10 rows, 3,221 / 2,686 at 12, 3,310 / 2,831 at 13, 3,259 / 2,754 at 14,
#: 3,178 / 2,770 at 16.
SPLIT_ROWS = 13
#: Stripe height with column profile costs, in either lane width (at most 16: kernels/band_score.cl
#: loads a stripe's costs in one column as 16 bytes). Packed protein lanes, protein preset, same
#: shapes: 2,824 / 2,273 at 10 rows, 2,872 / 2,411 at 12, 2,918 / 2,456 at 14, 2,971 / 2,525 at
#: 15, 2,984 / 2,556 at 16; the 32-bit lane, 5,000 reads of the 'large' shape: 1,187 with 32
#: rows, 1,556 with 16.
COST_ROWS = 16
#: Register limit of DNA's lookup builds on NVIDIA (PTX), as -cl-nv-maxrregcount: without one
#: ptxas takes 198 registers for the 32-row build, so 2 groups of 4 reads (8 warps) fit an SM;
#: at 168, 3 groups (12 warps), and the column loop of a full stripe stays free of spills (the
#: last stripe's loops reload one word a column; the element path's head loop, run only by stripes
#: with an ambiguity code, spills 12). H200, kernel GCUPS on the 'large' shape: 4,778 without, 6,548
#: with (notebook/BENCHMARKS.md, "The lookup path on the H200").
LOOKUP_REGISTERS = 168
#: Register limit of protein's lookup builds on NVIDIA (None: ptxas's choice, 154 registers for the
#: 16-row build with column costs, 12 warps per SM; 128 gives 16 warps with 4 bytes spilled outside
#: the loops, offline: scripts/bench_kernel_variants.py's "protein-lookup-reg128" measures it).
PROTEIN_LOOKUP_REGISTERS: int | None = None
#: Split state sets (kernels/band_score.cl, SPLIT): states 0..15 in the low 16-bit part, the
#: rest with the CGAP bit in the high part, so each part of a read code is its low or high 16
#: bits (one byte permutation on NVIDIA).
SPLIT_LOW_BITS = 16


@dataclass(frozen=True)
class Variant:
    """Compile-time shape of band_score: lanes per work-item, arithmetic path, stripe height,
    the alphabet (profile element type and state count), whether near states cost less
    than a mismatch (DESIGN 4: the host puts each element's wider set beside it, `padded_profile`),
    and whether diagonal steps add column profile costs (a build without them has no code for them)."""

    packed: bool
    ptx: bool
    rows: int
    alphabet: Alphabet = DNA
    near: bool = False
    costs: bool = False
    lookup: bool = False
    #: the lookup path's diagonal costs from a per-column table of every single state's cost, one
    #: load per cell pair (kernels/band_score.cl LOOKUP_TABLE; built on the device per chunk)
    table: bool = False
    #: register limit of a PTX build: None the path's default (`registers`), 0 none
    max_registers: int | None = None
    #: reads per work-group instead of `wg_reads`'s rule (scripts/bench_kernel_variants.py)
    group_reads: int | None = None
    #: more build options (scripts/bench_kernel_variants.py tries kernel switches this way)
    extra: tuple[str, ...] = ()

    @property
    def lanes(self) -> int:
        return 2 if self.packed else 1

    def options(self) -> tuple[str, ...]:
        """The build options; -DCOLUMN_COSTS=1 only with costs (the kernel's default is 0), so a
        build without them has the options, and the cached binaries, it had before the term."""
        return (f"-DROWS={self.rows}", f"-DPACKED={int(self.packed)}",
                f"-DUSE_PTX={int(self.packed and self.ptx)}",
                f"-DPROF_BITS={self.alphabet.dtype.itemsize * 8}", f"-DSTATE_BITS={self.alphabet.n_states}",
                f"-DNEAR={int(self.near)}", *(("-DCOLUMN_COSTS=1",) if self.costs else ()),
                *(("-DLOOKUP=1",) if self.lookup else ()),
                *(("-DLOOKUP_TABLE=1",) if self.lookup and self.table else ()),
                *((f"-cl-nv-maxrregcount={self.registers}",) if self.registers else ()),
                *self.extra)

    @property
    def registers(self) -> int | None:
        """The register limit of this build (NVIDIA's PTX builds only; None: ptxas's choice):
        `max_registers` where given (0: none), else LOOKUP_REGISTERS for DNA's lookup path and
        PROTEIN_LOOKUP_REGISTERS for protein's."""
        if not (self.packed and self.ptx):
            return None
        if self.max_registers is not None:
            return self.max_registers or None
        if self.lookup:
            return PROTEIN_LOOKUP_REGISTERS if self.split else LOOKUP_REGISTERS
        return None

    @property
    def split(self) -> bool:
        """Wide (protein) state sets in packed lanes, each cut in two parts (kernels/band_score.cl)."""
        return self.packed and self.alphabet.dtype.itemsize > 1

    @property
    def wg_reads(self) -> int:
        """Reads per work-group. 8 for split sets with column profile costs: the 8 reads of a
        group share each column's 16-byte profile words in L1, and at their 128 registers two
        groups of 256 still fit an SM (H100, protein preset, T1: 2,623 kernel GCUPS against 2,556
        with 4; large: 2,962 against 2,984). 4 otherwise: DNA's 168-register builds fit only one
        group of 8 reads per SM (2,419 against 3,723), and so would the lookup path's protein build
        (154 registers on the H200: 3 groups of 4 reads, 12 warps, ran at 3,062 kernel GCUPS against
        the element path's 2,966). `group_reads` overrides the rule."""
        if self.group_reads:
            return self.group_reads
        return 8 if self.split and self.costs and not self.lookup else 4

    def of(self, alphabet: Alphabet, near: bool = False, costs: bool = False, lookup: bool = False) -> "Variant":
        """This variant for `alphabet`'s elements, with near states or not, with column profile
        costs or not, with stripes of single-state residues on the lookup path (`lookup`,
        kernels/band_score.cl LOOKUP: packed lanes only, DNA's diagonal costs looked up by residue,
        protein's state tests by a funnel shift, or with `table` either's from a per-column table;
        the 32-bit lane drops it). With
        column profile costs stripes are at most COST_ROWS rows high; without them split state
        sets in packed lanes, which keep each residue in two registers, at most SPLIT_ROWS."""
        split = self.packed and alphabet.dtype.itemsize > 1
        lookup = lookup and self.packed and (split or not costs or self.table)
        variant = replace(self, alphabet=alphabet, near=near, costs=costs, lookup=lookup)
        if costs:
            return replace(variant, rows=min(self.rows, COST_ROWS))
        return replace(variant, rows=min(self.rows, SPLIT_ROWS)) if variant.split else variant

    @staticmethod
    def packs(alphabet: Alphabet) -> bool:
        """Whether two elements of `alphabet` fit one work-item's 16-bit lane pair: 8-bit ones
        do; wider ones split at SPLIT_LOW_BITS, when their states above it, with the CGAP bit,
        fit the 16-bit high part."""
        return alphabet.dtype.itemsize == 1 or SPLIT_LOW_BITS < alphabet.n_states <= 2 * SPLIT_LOW_BITS - 1


def device_table(costs: ColumnCosts, params: ScoringParams, m: int) -> np.ndarray:
    """The kernels' cost table, uint8 [m][K] (a column's costs side by side), after checking it
    fits (`ScoringParams.check_column_costs`)."""
    params.check_column_costs(costs, m)
    return costs.by_column


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def edge_units(n_edges: int, variant: Variant) -> int:
    """Work-items per read for `n_edges` edges: `variant.lanes` edges each, whole work-groups."""
    return round_up(-(-n_edges // variant.lanes), WG_UNITS)


def cost_profile_starts(lengths: np.ndarray, m: int, variant: Variant) -> np.ndarray:
    """Where each read's cost profile starts (kernels/band_score.cl read_costs), in uint4s, and
    the total: one uint4 (a stripe's costs in one column, a byte per row) per stripe and column."""
    quads = m * -(-lengths.astype(np.int64) // variant.rows)  # m columns per stripe
    starts = np.concatenate([[0], np.cumsum(quads)])
    if starts[-1] >= 1 << 32:
        raise ValueError(f"the cost profiles of {lengths.size} reads exceed 2^32 16-byte words (the kernel's 32-bit "
                         "offsets); use fewer reads per chunk")
    return starts.astype(np.uint32)


def padded_profile(lanes: np.ndarray, variant: Variant) -> np.ndarray:
    """A chunk's profiles as the kernel's prof_t words per column: [m, units * lanes] elements
    zero-padded to whole work-groups, wide elements in packed lanes in the split layout
    (`_split_pairs`), and with NEAR each element's set | near states beside it
    (kernels/band_score.cl: DNA's in the high byte, `near_bytes`; protein's as its own words)."""
    m, n_edges = lanes.shape
    alphabet = variant.alphabet
    if alphabet.dtype.itemsize == 1 and variant.near:  # DNA with near states: one table lookup per byte, in numba
        out = np.empty((m, edge_units(n_edges, variant) * variant.lanes), np.uint16)
        table_lanes(lanes, _near_table16(alphabet), out)
        return out
    padded = np.zeros((m, edge_units(n_edges, variant) * variant.lanes), lanes.dtype)
    padded[:, :n_edges] = lanes
    if alphabet.dtype.itemsize == 1:  # DNA without near states: bytes as they are
        return padded
    elements = _split_pairs(padded, alphabet.n_states) if variant.split else padded
    if not variant.near:
        return elements
    # wide elements (protein) with NEAR: each element's words, then its wider set's, laid out alike
    wider = padded & alphabet.state_mask | near_states(padded, alphabet)
    if variant.split:
        wider = _split_pairs(wider, alphabet.n_states)
    words = 2 if variant.split else 1
    return np.concatenate([elements.reshape(m, -1, words), wider.reshape(m, -1, words)], axis=2).reshape(m, -1)


@functools.lru_cache(maxsize=None)
def _near_table16(alphabet: Alphabet) -> np.ndarray:
    """`near_bytes` of every element byte: uint16 [256]."""
    return near_bytes(np.arange(256, dtype=np.uint8), alphabet)


def near_bytes(padded: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """The kernel's NEAR layout of 8-bit elements (DNA), uint16 per lane: bits 0-3 the state set,
    bit 4 CGAP, bits 8-11 the state set with its near states (kernels/band_score.cl). The packed
    kernel reads lane pairs as one uint, lane 2u in the low half (little-endian hosts and devices)."""
    states = padded & alphabet.state_mask
    wide = (padded & (alphabet.state_mask | alphabet.cgap_bit)).astype(np.uint16)
    return wide | ((states | near_states(padded, alphabet)).astype(np.uint16) << 8)


def _split_pairs(padded: np.ndarray, n_states: int) -> np.ndarray:
    """Wide elements of lane pairs (2u, 2u+1) as the kernel's SPLIT words, uint32 [m, units*2]:
    per pair x = states 0..15 of both lanes (lane 2u+1 in bits 16+), y = the states above them
    and the CGAP bit (bit n_states of an element) of both lanes (kernels/band_score.cl)."""
    low_mask, high_mask = (1 << SPLIT_LOW_BITS) - 1, (1 << (n_states - SPLIT_LOW_BITS + 1)) - 1
    even, odd = padded[:, 0::2].astype(np.uint32), padded[:, 1::2].astype(np.uint32)
    x = (even & low_mask) | ((odd & low_mask) << 16)
    y = ((even >> SPLIT_LOW_BITS) & high_mask) | (((odd >> SPLIT_LOW_BITS) & high_mask) << 16)
    return np.stack([x, y], axis=2).reshape(padded.shape[0], -1)


#: Read residues the lookup path takes (kernels/band_score.cl LOOKUP): the single bases, in the
#: order of their selector index (the byte of a lookup word that holds their cost).
LOOKUP_RESIDUES = (1, 2, 4, 8)


def lookup_fits(params: ScoringParams) -> bool:
    """Whether the lookup path's cost bytes hold every diagonal cost CG_i + M_ij with bit 7 clear
    (kernels/band_score.cl LOOKUP: prmt's sign replication makes each half's upper byte zero)."""
    return params.cgap + max(params.mismatch, params.near_mismatch) <= 127


def lookup_words(lanes: np.ndarray, variant: Variant, params: ScoringParams) -> np.ndarray:
    """A chunk's lookup words (kernels/band_score.cl LOOKUP), uint32 [m + rows - 1, units * 4]:
    per work-item u and column, lane 2u's diagonal costs CG_i + M_ij of the read residues A, C, G,
    T as bytes, lane 2u+1's, then OE_i and E_i of both lanes as 16-bit halves; the last rows - 1
    columns zero (the kernel's virtual rows run past column m - 1).

    M_ij as the reference scorer takes it (model/reference_scorer.diagonal_cost): 0 where the
    element's set holds the residue, near_mismatch where its near states do, mismatch otherwise.
    Each lane pair's two element bytes index one table of every pair's words (`pair_table`).
    lanes: uint8 [m, n_edges] elements."""
    if not lookup_fits(params):
        raise ValueError(f"cgap {params.cgap} + mismatch {params.mismatch} exceed the lookup path's 127")
    m, n_edges = lanes.shape
    units = edge_units(n_edges, variant)
    words = np.empty((m + variant.rows - 1, units, 4), np.uint32)
    pair_words(np.ascontiguousarray(lanes), pair_table(variant.alphabet, params.values()), words)
    return words.reshape(m + variant.rows - 1, units * 4)


def _lookup_costs(elements: np.ndarray, near: np.ndarray, alphabet: Alphabet, params: ScoringParams) -> np.ndarray:
    """uint32: byte k = CG + M of read residue LOOKUP_RESIDUES[k] against each element (near: its
    near states)."""
    states = elements & alphabet.state_mask
    cg = np.where(elements & alphabet.cgap_bit, params.cgap, 0).astype(np.uint32)
    out = np.zeros(elements.shape, np.uint32)
    for k, residue in enumerate(LOOKUP_RESIDUES):
        level = np.where(states & residue, 0, np.where(near & residue, params.near_mismatch, params.mismatch))
        out |= (cg + level.astype(np.uint32)) << (8 * k)
    return out


def state_rows(costs: ColumnCosts, alphabet: Alphabet) -> np.ndarray:
    """Each single state's row of the column cost table, uint8 [states] (kernels/band_score.cl
    lookup_table); 0 for a state without one (no read holds it: `ColumnCosts.rows_of` refuses the
    batch's codes first)."""
    rows = np.zeros(alphabet.n_states, np.uint8)
    for state in range(alphabet.n_states):
        try:
            rows[state] = costs.rows_of(np.array([1 << state], np.uint32))[0]
        except ValueError:
            pass
    return rows


@functools.lru_cache(maxsize=16)
def pair_table(alphabet: Alphabet, values: tuple[int, ...]) -> np.ndarray:
    """The lookup words of every lane pair of element bytes, uint32 [65536, 4] indexed by
    even | odd << 8 (1 MiB, made once per penalties; DNA elements carry their near states)."""
    params = ScoringParams(*values)
    every = np.arange(256, dtype=alphabet.dtype)
    costs = _lookup_costs(every, near_states(every, alphabet), alphabet, params)
    gap = (every & alphabet.cgap_bit) != 0
    open_ = np.where(gap, 0, params.gap_open + params.gap_extend).astype(np.uint32)
    extend = np.where(gap, 0, params.gap_extend).astype(np.uint32)
    even, odd = np.arange(65536) & 0xFF, np.arange(65536) >> 8
    return np.stack([costs[even], costs[odd], open_[even] | open_[odd] << 16, extend[even] | extend[odd] << 16], axis=1)
