"""The GPU kernel's inputs as the host lays them out (engine/band_inputs.py), without OpenCL: the
build variants' options, stripe heights and groups, the lookup path's words against the reference
scorer's costs, the numba layouts against the numpy forms they replace, and where each read's cost
profile starts. test_gpu_kernel.py runs the kernel on them; these run where pyopencl is missing
too (.ci/package's CPU-only step)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from random_data import random_profiles

from papara_py.engine.band_inputs import (
    COST_ROWS,
    LOOKUP_REGISTERS,
    LOOKUP_RESIDUES,
    PROTEIN_LOOKUP_REGISTERS,
    SPLIT_ROWS,
    Variant,
    cost_profile_starts,
    edge_units,
    lookup_words,
    near_bytes,
    padded_profile,
    pair_table,
    state_rows,
)
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import column_penalties, profile_near
from papara_py.phylo.encoding import DNA, PROTEIN


def test_read_cost_profiles_are_laid_out_by_whole_stripes_and_refuse_a_32_bit_overflow() -> None:
    """Each read's cost profile (kernels/band_score.cl read_costs) holds one uint4 per stripe of
    the variant's height and column (m per stripe), one read after the other; a batch whose
    profiles would pass 2^32 uint4s (the kernel's 32-bit offsets) is refused, not wrapped."""
    variant = Variant(packed=True, ptx=False, rows=12, alphabet=PROTEIN, costs=True)
    starts = cost_profile_starts(np.array([1, 12, 13]), 5, variant)
    assert starts.dtype == np.uint32 and starts.tolist() == [0, 5, 10, 20]
    with pytest.raises(ValueError, match="exceed 2\\^32"):
        cost_profile_starts(np.full(4, 1 << 24), 1 << 20, variant)


def test_variants_take_their_stripe_height_and_group_from_the_alphabet_and_the_costs() -> None:
    """Variant.of caps the stripe height (split protein sets without column costs at SPLIT_ROWS,
    any build with them at COST_ROWS, DNA as asked) and wg_reads groups 8 reads only for split
    sets with costs; whether two elements pack in a lane pair follows from the state count."""
    packed, wide = Variant(packed=True, ptx=False, rows=32), Variant(packed=False, ptx=False, rows=32)
    assert packed.of(DNA).rows == wide.of(PROTEIN).rows == 32
    assert packed.of(PROTEIN).rows == SPLIT_ROWS and packed.of(PROTEIN).split
    assert packed.of(PROTEIN, costs=True).rows == wide.of(PROTEIN, costs=True).rows == COST_ROWS
    assert Variant(packed=True, ptx=False, rows=6).of(PROTEIN, costs=True).rows == 6
    assert packed.of(PROTEIN, costs=True).wg_reads == 8
    assert {v.wg_reads for v in (packed.of(DNA), packed.of(PROTEIN), wide.of(PROTEIN, costs=True))} == {4}
    assert not wide.of(PROTEIN).split and not packed.of(DNA).split
    assert Variant.packs(DNA) and Variant.packs(PROTEIN)
    wide_states = [SimpleNamespace(dtype=np.dtype(np.uint32), n_states=n) for n in (16, 17, 31, 32)]
    assert [Variant.packs(alphabet) for alphabet in wide_states] == [False, True, True, False]


def test_register_limits_are_build_options_of_ptx_builds_only() -> None:
    """DNA's lookup builds on NVIDIA (PTX) take LOOKUP_REGISTERS as -cl-nv-maxrregcount, protein's
    PROTEIN_LOOKUP_REGISTERS; max_registers overrides (0: none); portable builds never get the
    option (other compilers refuse it); LOOKUP_TABLE is a build option of lookup builds only."""
    ptx, portable = Variant(packed=True, ptx=True, rows=32), Variant(packed=True, ptx=False, rows=32)

    def limits(variant: Variant) -> list[str]:
        return [o for o in variant.options() if o.startswith("-cl-nv-maxrregcount=")]

    assert limits(ptx.of(DNA, near=True, lookup=True)) == [f"-cl-nv-maxrregcount={LOOKUP_REGISTERS}"]
    assert limits(ptx.of(DNA, near=True)) == limits(portable.of(DNA, near=True, lookup=True)) == []
    assert ptx.of(PROTEIN, costs=True, lookup=True).registers == PROTEIN_LOOKUP_REGISTERS
    assert limits(replace(ptx, max_registers=128).of(PROTEIN, lookup=True)) == ["-cl-nv-maxrregcount=128"]
    assert limits(replace(ptx, max_registers=0).of(DNA, lookup=True)) == []
    assert limits(replace(portable, max_registers=128).of(DNA, lookup=True)) == []
    table = replace(portable, table=True)
    assert "-DLOOKUP_TABLE=1" in table.of(PROTEIN, costs=True, lookup=True).options()
    assert "-DLOOKUP_TABLE=1" not in table.of(PROTEIN, costs=True).options()
    assert replace(portable, group_reads=8).of(DNA).wg_reads == 8


def test_lookup_words_hold_the_reference_costs() -> None:
    """Each lookup word's bytes are CG_i + M_ij of the reference scorer for residues A, C, G, T,
    lane pairs side by side, then OE_i and E_i per half; the virtual rows' columns are zero."""

    rng = np.random.default_rng(12)
    m, n_edges = 23, 11
    profiles = random_profiles(rng, n_edges, m, DNA)
    params = ScoringParams.preset("weighted")
    variant = Variant(packed=True, ptx=False, rows=8).of(DNA, near=True, lookup=True)
    words = lookup_words(profiles.T.copy(), variant, params)
    units = words.shape[1] // 4
    assert words.shape == (m + 7, units * 4) and not words[m:].any()
    words = words[:m].reshape(m, units, 4)
    near = profile_near(profiles)
    p = params.as_array()
    for e in range(n_edges):
        cg, oe, ex = column_penalties(profiles[e], p)
        u, half = divmod(e, 2)
        for i in range(m):
            for k, b in enumerate(LOOKUP_RESIDUES):
                level = 0 if profiles[e, i] & 0xF & b else (params.near_mismatch if near[e, i] & b else params.mismatch)
                assert words[i, u, half] >> (8 * k) & 0xFF == cg[i] + level
            assert words[i, u, 2] >> (16 * half) & 0xFFFF == oe[i]
            assert words[i, u, 3] >> (16 * half) & 0xFFFF == ex[i]


def test_lookup_table_entries_of_single_states_follow_the_cost_table() -> None:
    """With column costs each single state's table entry adds its row of the cost table
    (`state_rows`); a state without a row gets row 0 (no read may hold it)."""

    codes = np.array([1 << 3, 1 << 0, 0xFFFFF, 1 << 19], np.uint32)
    costs = ColumnCosts(table=np.zeros((4, 5), np.uint8), codes=codes)
    rows = state_rows(costs, PROTEIN)
    assert rows.dtype == np.uint8 and rows.size == PROTEIN.n_states
    assert rows[3] == 0 and rows[0] == 1 and rows[19] == 3 and not rows[[1, 2, 4, 18]].any()


@pytest.mark.parametrize("n_edges", [1, 2, 63, 64, 65, 130])
def test_dna_profile_words_in_numba_equal_numpy(n_edges):
    """The numba `padded_profile` (DNA with near states) and `lookup_words`
    against the numpy forms they replace."""
    rng = np.random.default_rng(n_edges)
    m = 37
    lanes = random_profiles(rng, n_edges, m, DNA).T.copy()
    variant = Variant(packed=True, ptx=False, rows=6).of(DNA, near=True, lookup=True)
    padded = np.zeros((m, edge_units(n_edges, variant) * 2), np.uint8)
    padded[:, :n_edges] = lanes
    np.testing.assert_array_equal(padded_profile(lanes, variant), near_bytes(padded, DNA))
    np.testing.assert_array_equal(padded_profile(lanes[:, ::-1], variant), near_bytes(
        np.pad(lanes[:, ::-1], ((0, 0), (0, padded.shape[1] - n_edges))), DNA))
    params = ScoringParams(5, 7, 9, 2, 11, near_mismatch=3)
    words = np.zeros((m + 5, padded.shape[1] // 2, 4), np.uint32)
    keys = padded[:, 0::2] | padded[:, 1::2].astype(np.uint16) << 8
    words[:m] = pair_table(DNA, params.values())[keys]
    np.testing.assert_array_equal(lookup_words(lanes, variant, params), words.reshape(m + 5, -1))
