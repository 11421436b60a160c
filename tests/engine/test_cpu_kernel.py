"""The numba lane kernel (engine/cpu.py) is bit-identical to the reference scorer (DESIGN 4).

Random blocks cover: m 2..300, reads of length 1, m-1 and between, IUPAC reads, profiles with
no CGAP, all CGAP, random CGAP and CGAP runs, every parameter at 0 and at 1000 (which sends
long reads to the int32 path), block widths 8, 16, 32, 40 with partial last blocks, both lane
dtypes on the same inputs, and column strips far shorter than m so strip edges are crossed.
"""

from __future__ import annotations

import platform
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.engine import cpu
from papara_py.engine.cpu import (
    DEFAULT_STRIP,
    default_lane_width,
    native_lane_width,
    score_block,
)
from papara_py.engine.layout import make_block
from papara_py.errors import InputError
from papara_py.model.column_costs import ColumnCosts, cost_codes
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import score_matrix_reference
from papara_py.phylo.encoding import CGAP_BIT, DNA, PROTEIN, READ_CODE

parameter = st.sampled_from([0, 1, 2, 3, 5, 1000])


def random_states(rng: np.random.Generator, shape, alphabet=DNA) -> np.ndarray:
    """Non-empty state sets of `alphabet`: any nibble for DNA; for protein mostly one amino acid
    (so that mismatches are common), else any of the 2^20 - 1 sets."""
    if alphabet is DNA:
        return rng.integers(1, 16, size=shape, dtype=np.uint8)
    single = np.left_shift(1, rng.integers(0, 20, size=shape)).astype(np.uint32)
    return np.where(rng.random(shape) < 0.7, single, rng.integers(1, 1 << 20, size=shape, dtype=np.uint32))


def random_profiles(rng: np.random.Generator, n_edges: int, m: int, cgap_style: str, alphabet=DNA) -> np.ndarray:
    """[n_edges, m] profile elements of `alphabet`: random state sets and CGAP flags in the given style."""
    states = random_states(rng, (n_edges, m), alphabet)
    if cgap_style == "none":
        flags = np.zeros((n_edges, m), bool)
    elif cgap_style == "all":
        flags = np.ones((n_edges, m), bool)
    elif cgap_style == "random":
        flags = rng.random((n_edges, m)) < 0.3
    else:  # runs: a few gap runs per edge, as alignment gaps come
        flags = np.zeros((n_edges, m), bool)
        for e in range(n_edges):
            for _ in range(int(rng.integers(1, 4))):
                start = int(rng.integers(0, m))
                flags[e, start:start + int(rng.integers(1, m + 1))] = True
    elements = states | (flags.astype(alphabet.dtype) * alphabet.dtype.type(alphabet.cgap_bit))
    if alphabet.stores_near_states:  # random near-state fields (DESIGN 3; protein's follow from the set)
        elements |= (rng.integers(0, 8, size=(n_edges, m)) << alphabet.near_shift).astype(alphabet.dtype)
    return elements


def pack(reads: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    return np.concatenate(reads), offsets


def kernel_scores(profiles, reads, params, width, costs=None, **options) -> np.ndarray:
    """Scores of every read against every profile through make_block and score_block (with the
    column profile costs `costs`, carried by the blocks)."""
    codes, offsets = pack(reads)
    columns = []
    for first in range(0, profiles.shape[0], width):
        block = make_block(first // width, first, profiles[first:first + width], width, costs)
        scores = score_block(block.lanes, codes, offsets, params, costs=block.costs, **options)
        assert scores.shape == (len(reads), width) and scores.dtype == np.int32
        # padding lanes repeat the last edge, so they must repeat its score
        assert (scores[:, block.n_edges:] == scores[:, block.n_edges - 1:block.n_edges]).all()
        columns.append(scores[:, :block.n_edges])
    return np.concatenate(columns, axis=1)


@st.composite
def cases(draw, alphabet=DNA):
    m = draw(st.integers(2, 300))
    width = draw(st.sampled_from([8, 16, 32, 40]))
    n_edges = draw(st.integers(1, 2 * width))  # one full block and a partial one, or less
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    profiles = random_profiles(rng, n_edges, m, draw(st.sampled_from(["none", "all", "random", "runs"])), alphabet)
    lengths = draw(st.lists(st.one_of(st.just(1), st.just(m - 1), st.integers(1, m - 1)),
                            min_size=1, max_size=3))
    reads = [random_states(rng, n, alphabet) for n in lengths]
    values = [draw(parameter) for _ in range(5)]
    near = draw(st.one_of(st.just(values[0]), st.integers(0, values[0])))  # Eq. 1, or near states cheaper
    params = ScoringParams(*values, near_mismatch=near)
    strip = draw(st.sampled_from([1, 2, 3, 7, 64, DEFAULT_STRIP]))
    return profiles, reads, params, width, strip


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(cases())
def test_kernel_equals_reference_on_both_lane_dtypes(case):
    profiles, reads, params, width, strip = case
    expected = score_matrix_reference(reads, profiles, params)
    for force_int32 in (False, True):
        got = kernel_scores(profiles, reads, params, width, strip=strip, force_int32=force_int32)
        np.testing.assert_array_equal(got, expected, err_msg=f"force_int32={force_int32}")


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(cases(PROTEIN))
def test_protein_kernel_equals_reference_on_both_lane_dtypes(case):
    """uint32 elements (20 states, CGAP at bit 20): the same kernel source, specialised by numba,
    with protein's near states by similarity."""
    profiles, reads, params, width, strip = case
    assert profiles.dtype == np.uint32 and reads[0].dtype == np.uint32
    expected = score_matrix_reference(reads, profiles, params)
    for force_int32 in (False, True):
        got = kernel_scores(profiles, reads, params, width, strip=strip, force_int32=force_int32)
        np.testing.assert_array_equal(got, expected, err_msg=f"force_int32={force_int32}")


def random_column_costs(rng: np.random.Generator, m: int, largest: int) -> ColumnCosts:
    """A random column profile cost table ([K, m], 0..largest) over protein's read codes."""
    codes = cost_codes(PROTEIN)
    return ColumnCosts(table=rng.integers(0, largest + 1, (codes.size, m)).astype(np.uint8), codes=codes)


def random_cost_codes(rng: np.random.Generator, n: int) -> np.ndarray:
    """n protein read codes a cost table has rows for: mostly single amino acids, some B, Z, J, X."""
    codes = cost_codes(PROTEIN)
    return codes[np.where(rng.random(n) < 0.8, rng.integers(0, 20, n), rng.integers(20, codes.size, n))]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(cases(PROTEIN), st.sampled_from([0.25, 1.0, 5.0]))
def test_protein_kernel_with_column_costs_equals_reference(case, weight):
    """The column profile cost (DESIGN 4) in the lane kernel: a random table as large as the weight
    allows, read residues among the table's codes, both lane dtypes and strips."""
    profiles, reads, params, width, strip = case
    rng = np.random.default_rng(len(reads) * 7919 + profiles.shape[1])
    params = replace(params, column_weight=weight)
    costs = random_column_costs(rng, profiles.shape[1], params.column_cost_bound())
    reads = [random_cost_codes(rng, read.size) for read in reads]
    expected = score_matrix_reference(reads, profiles, params, costs)
    for force_int32 in (False, True):
        got = kernel_scores(profiles, reads, params, width, costs, strip=strip, force_int32=force_int32)
        np.testing.assert_array_equal(got, expected, err_msg=f"force_int32={force_int32}")


def test_column_costs_the_kernel_cannot_trust_are_refused():
    """A state set that is no read code of the alphabet (two arbitrary amino acids) has no column
    cost: the kernel raises rather than guess one. Costs above what the weight bounds (the int16
    lanes' overflow check counts on that bound), a table of other columns, and a table that is not
    uint8 [K, m] with K codes are refused before any scoring."""
    rng = np.random.default_rng(3)
    profiles = random_profiles(rng, 4, 30, "random", PROTEIN)
    costs = random_column_costs(rng, 30, 9)
    read = np.array([1, 0b101, 2], np.uint32)  # A, {A, N}, R
    with pytest.raises(ValueError, match="no row in the column cost table"):
        kernel_scores(profiles, [read], ScoringParams(column_weight=1.0), 16, costs=costs)
    with pytest.raises(ValueError, match="no row in the column cost table"):
        costs.rows_of(read)
    assert costs.rows_of(read[[0, 2]]).tolist() == [0, 1]
    with pytest.raises(ValueError, match="exceed the bound of column_weight 0.5"):
        kernel_scores(profiles, [read[:1]], ScoringParams(column_weight=0.5), 16, costs=costs)
    with pytest.raises(ValueError, match="of 29 columns for 30 columns"):
        kernel_scores(profiles, [read[:1]], ScoringParams(column_weight=1.0), 16,
                      costs=ColumnCosts(costs.table[:, :29].copy(), costs.codes))
    with pytest.raises(ValueError, match="uint8 \\[K, m\\]"):
        ColumnCosts(costs.table.astype(np.int16), costs.codes)
    with pytest.raises(ValueError, match="uint8 \\[K, m\\]"):
        ColumnCosts(costs.table[:5], costs.codes)


def test_protein_states_above_the_nibble_decide_matches():
    """A read of W (bit 17) against profiles of W, of W's neighbours and of W with CGAP: only the
    high state bits and bit 20 tell them apart, so a kernel reading DNA's nibble or CGAP bit fails."""
    w = np.uint32(PROTEIN.read_code[ord("W")])
    profiles = np.array([[w] * 6, [w >> 1] * 6, [w << 1] * 6, [w | PROTEIN.cgap_bit] * 6], np.uint32)
    reads = [np.full(3, w, np.uint32)]
    params = ScoringParams(mismatch=5, cgap=7, gap_open=2, gap_extend=2, insertion=9)
    got = kernel_scores(profiles, reads, params, 16)
    np.testing.assert_array_equal(got, score_matrix_reference(reads, profiles, params))
    np.testing.assert_array_equal(got[0], [0, 15, 15, 21])


@pytest.mark.parametrize("beyond", [False, True])
def test_int16_at_its_longest_safe_read_and_int32_one_residue_later(beyond):
    """Scores near the int16 stand-in infinity: a read of mismatches, large extension costs.

    gap_open 0 makes gap_extend the largest step, so the first D of every row sits one step
    above infinity; the kernel must still not wrap (DESIGN 4: narrow only where it cannot).
    """
    params = ScoringParams(mismatch=300, cgap=0, gap_open=0, gap_extend=1000, insertion=1000)
    n = max(n for n in range(1, 200) if params.int16_safe(n)) + int(beyond)
    assert params.int16_safe(n) != beyond
    m = n + 9
    rng = np.random.default_rng(n)
    profiles = np.full((12, m), 1, np.uint8)  # all A; a few CGAP columns on some edges
    profiles[::3, rng.integers(0, m, 5)] |= CGAP_BIT
    reads = [np.full(n, 8, np.uint8), np.full(n - 1, 8, np.uint8), rng.integers(1, 16, n, dtype=np.uint8)]
    expected = score_matrix_reference(reads, profiles, params)
    assert expected.max() > 0.9 * params.int16_infinity()  # the test only counts if scores are near the top
    for strip in (5, DEFAULT_STRIP):
        np.testing.assert_array_equal(kernel_scores(profiles, reads, params, 16, strip=strip), expected)


def test_long_reference_crosses_the_default_strip():
    m = 2 * DEFAULT_STRIP + 300
    rng = np.random.default_rng(5)
    profiles = random_profiles(rng, 20, m, "runs")
    reads = [rng.integers(1, 16, size=n, dtype=np.uint8) for n in (1, 150, m - 1)]
    params = ScoringParams()
    expected = score_matrix_reference(reads, profiles, params)
    np.testing.assert_array_equal(kernel_scores(profiles, reads, params, 32), expected)


@pytest.mark.slow
def test_threads_scoring_blocks_at_once_agree_with_one_thread():
    rng = np.random.default_rng(11)
    profiles = random_profiles(rng, 8 * 32, 400, "random")
    reads = [rng.integers(1, 16, size=int(n), dtype=np.uint8) for n in rng.integers(1, 399, 40)]
    codes, offsets = pack(reads)
    params = ScoringParams()
    blocks = [make_block(b, 32 * b, profiles[32 * b:32 * (b + 1)], 32) for b in range(8)]
    alone = [score_block(b.lanes, codes, offsets, params, strip=100) for b in blocks]
    start = threading.Barrier(4)

    def job(block):
        start.wait(timeout=60)
        return score_block(block.lanes, codes, offsets, params, strip=100)

    for _ in range(2):
        with ThreadPoolExecutor(max_workers=4) as pool:
            together = list(pool.map(job, blocks[:4])) + list(pool.map(job, blocks[4:]))
        for a, b in zip(alone, together):
            np.testing.assert_array_equal(a, b)
    # the reads loop must run without the GIL, or the threads above ran one after the other
    assert cpu._score_reads.targetoptions["nogil"] and cpu._score_read.targetoptions["nogil"]


@pytest.mark.slow
def test_real_reads_against_real_edge_profiles(pyrg_dir):
    from papara_py.io.alignment_input import read_alignment
    from papara_py.io.read_input import iter_reads
    from papara_py.io.tree_input import read_tree
    from papara_py.phylo.profiles import ProfileBuilder
    from papara_py.phylo.tree import EdgeTree

    edge_tree = EdgeTree.from_dendropy(read_tree(pyrg_dir / "tree.nwk"))
    alignment = read_alignment(pyrg_dir / "ref.phy")
    row_of = {name: row for name, row in zip(alignment.names, alignment.rows)}
    builder = ProfileBuilder(edge_tree, np.stack([row_of[name] for name in edge_tree.tip_names]))
    profiles = builder.profiles(np.arange(builder.n_edges))
    raw = list(iter_reads(pyrg_dir / "reads.fasta"))
    reads = [READ_CODE[np.frombuffer(r.sequence, np.uint8)] for r in raw[::5]]
    params = ScoringParams()
    expected = score_matrix_reference(reads, profiles, params)
    np.testing.assert_array_equal(kernel_scores(profiles, reads, params, 32), expected)
    np.testing.assert_array_equal(kernel_scores(profiles, reads, params, 32, force_int32=True), expected)


def test_unscorable_reads_and_bad_strips_are_refused():
    lanes = make_block(0, 0, np.full((3, 10), 15, np.uint8), 8).lanes
    params = ScoringParams()
    for lengths in ([0], [10], [3, 11]):
        codes = np.ones(sum(lengths), np.uint8)
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        with pytest.raises(ValueError, match="0 < n < m"):
            score_block(lanes, codes, offsets, params)
    for strip in (0, cpu.MAX_STRIP + 1):
        with pytest.raises(ValueError, match="strip"):
            score_block(lanes, np.ones(3, np.uint8), np.array([0, 3]), params, strip=strip)
    assert score_block(lanes, np.zeros(0, np.uint8), np.array([0]), params).shape == (0, 8)


def test_lane_width_follows_the_compile_target_and_the_override(monkeypatch):
    from numba.core import config as numba_config

    for features, lanes in (("+avx2,+avx512bw", 32), ("+avx2,-avx512bw", 16), ("+sse4.2,-avx2", 8), ("", 8)):
        monkeypatch.setattr(numba_config, "CPU_FEATURES", features)
        assert native_lane_width() == lanes
    monkeypatch.setattr(numba_config, "CPU_FEATURES", "+avx2")
    monkeypatch.delenv("PAPARA_LANES", raising=False)
    assert default_lane_width() == 16
    monkeypatch.setenv("PAPARA_LANES", "64")
    assert default_lane_width() == 64
    for bad in ("0", "-8", "wide", "257", "1000"):
        monkeypatch.setenv("PAPARA_LANES", bad)
        with pytest.raises(InputError, match="PAPARA_LANES"):
            default_lane_width()


def test_a_stop_ends_a_block_at_its_next_slice_of_reads():
    """A stopped run (the engine's queue cancelled) waits for one STOP_SLICE of a block's reads,
    not for the block: score_block raises CancelledError before its next slice."""
    from concurrent.futures import CancelledError

    from stop_after import StopAfter

    lanes = make_block(0, 0, np.full((8, 40), 15, np.uint8), 8).lanes
    count = 2 * cpu.STOP_SLICE + 3
    codes = np.ones(5 * count, np.uint8)
    offsets = np.arange(0, 5 * count + 1, 5, dtype=np.int64)
    stop = StopAfter(1)
    with pytest.raises(CancelledError):
        score_block(lanes, codes, offsets, ScoringParams(), stop=stop)
    assert stop.passed == 1
    assert score_block(lanes, codes, offsets, ScoringParams(), stop=threading.Event()).shape == (count, 8)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the check reads x86 instruction names; another CPU's vector minimum has other names")
@pytest.mark.parametrize("preset", ["paper", "weighted", "protein"])
def test_the_dp_step_compiles_to_packed_minimum_instructions(preset):
    """The kernel's speed rests on LLVM vectorising the lane loop (module docstring): freshly
    compiled for this CPU, every preset's step holds packed minimum instructions (SSE/AVX
    `pminsw`, `vpminsw`). The `weighted` step once ran scalar on AVX2 (0.2 GCUPS against 7.4):
    its near state was loaded only on a mismatch, which only AVX-512's masked byte loads vectorise."""
    import re

    import numba

    from papara_py.phylo.encoding import near_states

    params = ScoringParams.preset(preset)
    alphabet = PROTEIN if preset == "protein" else DNA
    width = default_lane_width()
    lanes = make_block(0, 0, np.full((width, 40), 1, alphabet.dtype), width).lanes
    near = near_states(lanes) if params.weighted else None
    fresh = numba.njit(nogil=True)(cpu._score_read.py_func)  # the cache's copy keeps no assembly
    out = np.zeros(width, np.int32)
    fresh(lanes, near, None, np.ones(3, alphabet.dtype), cpu._lane_costs(params, np.int16), DEFAULT_STRIP,
          np.zeros((3, 2, width), np.int16), out, (0,) * width)
    assembly = fresh.inspect_asm(fresh.signatures[0])
    assert re.search(r"\bv?pmins[wd]\b", assembly), f"the {preset} DP step compiled without vector minimums"
