"""The OpenCL scorer against the reference scorer, on whatever OpenCL device is present (PoCL in CI).

Every check compares `GpuScorer.score_chunk` with `scoring.score_matrix_reference` sorted by
(score, edge): scores must be bit-identical and the k-best lists must be in exactly that order.
Random instances hit the places a striped, packed kernel gets wrong: reads of 1 and m-1 residues
(band of width m or 2), stripe heights that do not divide the read, CGAP runs, ambiguous states,
edge counts that leave half-empty lane pairs and work-groups, partial last blocks, k > n_edges,
both arithmetic widths and both stripe heights, and the lookup path (kernels/band_score.cl LOOKUP)
beside the element path in one read. The PTX path needs an NVIDIA sm_90 device and is checked by
scripts/bench_gpu.py and scripts/bench_kernel_variants.py on the device machine before they time
anything.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from time import perf_counter, thread_time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_data import protein_states, random_profiles
from test_cpu_kernel import random_column_costs, random_cost_codes

from papara_py.engine import opencl_devices
from papara_py.engine.band_inputs import Variant
from papara_py.engine.layout import block_count, make_block
from papara_py.model.params import INT32_LIMIT, ScoringParams
from papara_py.model.reference_scorer import score_matrix_reference
from papara_py.phylo.encoding import DNA, PROTEIN, READ_CODE

pytestmark = pytest.mark.gpu
cl = pytest.importorskip("pyopencl")
from papara_py.engine.gpu import GpuScorer, _reads_per_group  # noqa: E402  (needs pyopencl)

EMPTY = np.iinfo(np.int32).max
#: Read states: mostly plain bases, some ambiguity codes (R, S, N).
READ_STATES = np.array([1, 2, 4, 8, 1, 2, 4, 8, 5, 6, 15], np.uint8)


@pytest.fixture(scope="module")
def device(opencl_device) -> opencl_devices.DeviceInfo:
    return opencl_device


@pytest.fixture(scope="module")
def scorers(device) -> dict:
    """Scorers kept for the module, so hypothesis examples reuse the built programs."""
    return {(narrow, rows): GpuScorer(device, narrow=narrow, rows=rows)
            for narrow in (True, False) for rows in (6, 32)}


def as_chunk(profiles: np.ndarray, width: int, first_edge: int) -> np.ndarray:
    """uint8 [nb, m, W] consecutive blocks, the last one partial (lanes repeat its last edge)."""
    n_edges = profiles.shape[0]
    return np.stack([make_block(b, first_edge + b * width, profiles[b * width:(b + 1) * width], width).lanes
                     for b in range(block_count(n_edges, width))])


def pack_reads(reads: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.concatenate([[0], np.cumsum([r.size for r in reads])]).astype(np.int64)
    codes = np.concatenate(reads) if reads else np.zeros(0, np.uint8)
    return codes, offsets


def expected_top(reference: np.ndarray, first_edge: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row of the reference matrix by (score, edge); pad to k with (INT32_MAX, -1)."""
    n_reads, n_edges = reference.shape
    edges = np.broadcast_to(np.arange(n_edges), reference.shape)
    order = np.lexsort((edges, reference), axis=1)[:, :k]
    score = np.full((n_reads, k), EMPTY, np.int32)
    edge = np.full((n_reads, k), -1, np.int32)
    take = order.shape[1]
    score[:, :take] = np.take_along_axis(reference, order, axis=1)
    edge[:, :take] = order + first_edge
    return score, edge


def check(scorer: GpuScorer, profiles, reads, params, k, width=8, first_edge=0, costs=None) -> None:
    codes, offsets = pack_reads(reads)
    blocks = as_chunk(profiles, width, first_edge)
    score, edge = scorer.score_chunk(blocks, first_edge, profiles.shape[0], codes, offsets, params, k, costs=costs)
    want_score, want_edge = expected_top(score_matrix_reference(reads, profiles, params, costs), first_edge, k)
    np.testing.assert_array_equal(score, want_score)
    np.testing.assert_array_equal(edge, want_edge)


@st.composite
def instances(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    m = draw(st.integers(2, 56))
    n_edges = draw(st.integers(1, 45))
    lengths = draw(st.lists(st.one_of(st.just(1), st.just(m - 1), st.integers(1, m - 1)),
                            min_size=1, max_size=7))
    values = draw(st.tuples(*[st.integers(0, 7)] * 5))
    near = draw(st.one_of(st.just(values[0]), st.integers(0, values[0])))  # Eq. 1, or near states cheaper
    params = ScoringParams(*values, near_mismatch=near)
    return dict(seed=seed, m=m, n_edges=n_edges, lengths=lengths, params=params,
                k=draw(st.integers(1, 9)), width=draw(st.sampled_from([1, 4, 8, 16])),
                first_edge=draw(st.integers(0, 1000)), narrow=draw(st.booleans()),
                rows=draw(st.sampled_from([6, 32])))


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_chunks_match_reference(scorers, case) -> None:
    rng = np.random.default_rng(case["seed"])
    profiles = random_profiles(rng, case["n_edges"], case["m"])
    reads = [rng.choice(READ_STATES, size=n) for n in case["lengths"]]
    check(scorers[case["narrow"], case["rows"]], profiles, reads, case["params"], case["k"],
          case["width"], case["first_edge"])


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_protein_chunks_match_reference(scorers, case) -> None:
    """uint32 profile elements (20 states, CGAP at bit 20) through the same kernel source built
    with -DPROF_BITS=32: packed lanes with split state sets where `narrow` allows, else the
    32-bit lane; with near_mismatch < mismatch, the near states by similarity (DESIGN 3) beside
    each element."""
    rng = np.random.default_rng(case["seed"])
    profiles = random_profiles(rng, case["n_edges"], case["m"], PROTEIN)
    reads = [protein_states(rng, n) | np.uint32(1) << rng.integers(0, 20, size=n).astype(np.uint32)
             for n in case["lengths"]]
    scorer = scorers[case["narrow"], case["rows"]]
    check(scorer, profiles, reads, case["params"], case["k"], case["width"], case["first_edge"])
    if not case["narrow"]:
        assert scorer.stats.packed_reads == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from([0.5, 1.0, 5.0]))
def test_random_protein_chunks_with_column_costs_match_reference(scorers, case, weight) -> None:
    """The random protein chunks above with column profile costs (-DCOLUMN_COSTS=1): a random
    table up to the weight's bound, read residues among its codes (B, Z, J, X included)."""
    rng = np.random.default_rng(case["seed"])
    profiles = random_profiles(rng, case["n_edges"], case["m"], PROTEIN)
    params = replace(case["params"], column_weight=weight)
    costs = random_column_costs(rng, case["m"], params.column_cost_bound())
    reads = [random_cost_codes(rng, n) for n in case["lengths"]]
    check(scorers[case["narrow"], case["rows"]], profiles, reads, params, case["k"], case["width"],
          case["first_edge"], costs)


def test_protein_states_above_a_byte_and_the_cgap_bit_reach_the_device(scorers) -> None:
    """Profiles differing only in bits 8-20: a kernel that read bytes or DNA's CGAP bit fails."""
    w = np.uint32(PROTEIN.read_code[ord("W")])  # bit 17
    profiles = np.array([[w] * 6, [w >> 1] * 6, [w << 1] * 6, [w | PROTEIN.cgap_bit] * 6], np.uint32)
    params = ScoringParams(mismatch=5, cgap=7, gap_open=2, gap_extend=2, insertion=9)
    codes, offsets = pack_reads([np.full(3, w, np.uint32)])
    for narrow in (True, False):  # split states in packed lanes, and the 32-bit lane
        scorer = scorers[narrow, 32]
        score, edge = scorer.score_chunk(as_chunk(profiles, 4, 0), 0, 4, codes, offsets, params, 4)
        np.testing.assert_array_equal(score[0], [0, 15, 15, 21])
        np.testing.assert_array_equal(edge[0], [0, 1, 2, 3])
        assert scorer.stats.packed_reads == int(narrow)


@pytest.mark.parametrize("narrow", [True, False])
def test_protein_reads_of_every_stripe_remainder_in_both_widths(scorers, narrow) -> None:
    """Split state sets in packed lanes: every state bit, in either lane of a pair, on odd edge counts."""
    rng = np.random.default_rng(17)
    profiles = random_profiles(rng, 45, 41, PROTEIN)
    reads = [np.uint32(1) << rng.integers(0, 20, size=n).astype(np.uint32) for n in range(1, 41)]
    scorer = scorers[narrow, 32]
    check(scorer, profiles, reads, ScoringParams.preset("protein"), k=6, width=16, first_edge=3)
    assert (scorer.stats.packed_reads, scorer.stats.wide_reads) == ((40, 0) if narrow else (0, 40))


#: Penalties whose column cost bound (45 at column_weight 5) covers `random_column_costs`' 0..39.
COST_PARAMS = {"mismatch": 3, "cgap": 6, "gap_open": 5, "gap_extend": 3, "insertion": 16, "column_weight": 5.0}


@pytest.mark.parametrize("narrow", [True, False])
@pytest.mark.parametrize("near_mismatch", [3, 1])
@pytest.mark.parametrize("rows", [6, 32])
def test_protein_column_costs_match_reference(scorers, narrow, near_mismatch, rows) -> None:
    """-DCOLUMN_COSTS=1: each diagonal step adds its column's cost of the read residue, from
    every row of the table (ambiguity codes included), in packed lanes (split state sets, the cost
    in both halves) and the 32-bit lane, with near states cheaper than a mismatch and
    without; stripes of 6 rows (most reads end in a part-filled stripe, and a
    stripe's costs end inside a word of their 16 bytes) and
    of 32 (16 in either lane width, engine/band_inputs.COST_ROWS: reads in one to three stripes)."""
    rng = np.random.default_rng(31 + near_mismatch)
    m = 83
    profiles = random_profiles(rng, 21, m, PROTEIN)
    costs = random_column_costs(rng, m, 39)
    reads = [rng.choice(costs.codes, size=n) for n in (1, 5, 11, 24, 30, 37, 40)]
    params = ScoringParams(**COST_PARAMS, near_mismatch=near_mismatch)
    assert costs.largest <= params.column_cost_bound()
    scorer = scorers[narrow, rows]
    check(scorer, profiles, reads, params, k=5, width=8, first_edge=2, costs=costs)
    assert (scorer.stats.packed_reads, scorer.stats.wide_reads) == ((7, 0) if narrow else (0, 7))


def test_column_costs_refuse_read_codes_without_a_row_and_costs_above_the_bound(scorers) -> None:
    """A read code the table has no row for is a caller's error (ValueError, as on the CPU), and so is
    a cost above what the penalties' column_weight bounds (the overflow checks count on it)."""
    rng = np.random.default_rng(8)
    profiles = random_profiles(rng, 4, 30, PROTEIN)
    costs = random_column_costs(rng, 30, 39)
    blocks = as_chunk(profiles, 4, 0)
    stray = np.uint32(0b11)  # {A, R}: no letter reads as this set
    assert stray not in costs.codes
    codes, offsets = pack_reads([costs.codes[:6], np.array([costs.codes[0], stray], np.uint32)])
    with pytest.raises(ValueError, match="no row in the column cost table"):
        scorers[True, 32].score_chunk(blocks, 0, 4, codes, offsets, ScoringParams(**COST_PARAMS), 2, costs=costs)
    codes, offsets = pack_reads([costs.codes[:6]])
    low_weight = ScoringParams(**COST_PARAMS | {"column_weight": 1.0})
    with pytest.raises(ValueError, match="exceed the bound of column_weight"):
        scorers[True, 32].score_chunk(blocks, 0, 4, codes, offsets, low_weight, 2, costs=costs)


@pytest.mark.parametrize("narrow", [True, False])
def test_both_widths_cover_reads_of_every_stripe_remainder(scorers, narrow) -> None:
    """Reads of 1..40 residues against 45 edges (22.5 lane pairs) and 41 columns."""
    rng = np.random.default_rng(7)
    profiles = random_profiles(rng, 45, 41)
    reads = [rng.choice(READ_STATES, size=n) for n in range(1, 41)]
    scorer = scorers[narrow, 32]
    check(scorer, profiles, reads, ScoringParams.preset("protein"), k=6, width=16, first_edge=3)
    assert (scorer.stats.packed_reads, scorer.stats.wide_reads) == ((40, 0) if narrow else (0, 40))


def test_long_reads_take_the_32_bit_path_with_identical_results(scorers) -> None:
    """Penalties that overflow int16 for the longer reads: those go wide, the short ones packed."""
    params = ScoringParams(mismatch=700, cgap=500, gap_open=900, gap_extend=40, insertion=800)
    assert params.int16_safe(5) and not params.int16_safe(30)
    rng = np.random.default_rng(11)
    profiles = random_profiles(rng, 19, 60)
    reads = [rng.choice(READ_STATES, size=n) for n in (2, 5, 30, 59, 44, 3)]
    scorer = scorers[True, 32]
    check(scorer, profiles, reads, params, k=4, width=8)
    assert scorer.stats.packed_reads == 3 and scorer.stats.wide_reads == 3


def test_unscorable_reads_are_padding_and_ties_go_to_the_lower_edge(scorers) -> None:
    """Identical profiles tie every edge: the k best are the k lowest edge numbers, in order."""
    m = 30
    profiles = np.tile(random_profiles(np.random.default_rng(3), 1, m), (21, 1))
    reads = [np.full(0, 1, np.uint8), np.full(m, 1, np.uint8), np.full(m + 4, 2, np.uint8),
             np.array([1, 2, 4], np.uint8)]
    codes, offsets = pack_reads(reads)
    score, edge = scorers[True, 32].score_chunk(as_chunk(profiles, 8, 40), 40, 21, codes, offsets,
                                                ScoringParams(), k=25)
    assert (score[:3] == EMPTY).all() and (edge[:3] == -1).all()
    np.testing.assert_array_equal(edge[3], np.r_[np.arange(40, 61), [-1] * 4])
    assert (score[3, :21] == score[3, 0]).all() and (score[3, 21:] == EMPTY).all()


def test_batches_split_by_memory_and_threads_give_the_same_answer(device) -> None:
    rng = np.random.default_rng(5)
    profiles = random_profiles(rng, 33, 48)
    reads = [rng.choice(READ_STATES, size=n) for n in rng.integers(1, 48, size=23)]
    codes, offsets = pack_reads(reads)
    blocks = as_chunk(profiles, 16, 0)
    params = ScoringParams()
    whole = GpuScorer(device)
    split = GpuScorer(device)
    split.band_budget = 3 * 32 * (48 + 1) * 4  # three reads per batch
    expected = whole.score_chunk(blocks, 0, 33, codes, offsets, params, 5)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda s: s.score_chunk(blocks, 0, 33, codes, offsets, params, 5),
                                [split, whole]))
    assert split.stats.batches == 8 and whole.stats.batches == 1
    for score, edge in results:
        np.testing.assert_array_equal(score, expected[0])
        np.testing.assert_array_equal(edge, expected[1])
    want = expected_top(score_matrix_reference(reads, profiles, params), 0, 5)
    np.testing.assert_array_equal(expected[0], want[0])


def test_scores_beyond_the_32_bit_range_are_refused(scorers) -> None:
    params = ScoringParams(mismatch=INT32_LIMIT // 4)
    profiles = random_profiles(np.random.default_rng(1), 4, 20)
    codes, offsets = pack_reads([np.full(10, 1, np.uint8)])
    with pytest.raises(ValueError, match="32-bit range"):
        scorers[True, 32].score_chunk(as_chunk(profiles, 4, 0), 0, 4, codes, offsets, params, 1)


@pytest.mark.slow
def test_real_pyrg_profiles_and_reads(pyrg_dir: Path, scorers) -> None:
    """Real edge profiles (pyrG tree and alignment, 2054 columns) and real reads."""
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.io.read_input import iter_reads
    from papara_py.io.tree_input import read_tree
    from papara_py.phylo.profiles import ProfileBuilder
    from papara_py.phylo.tree import EdgeTree

    tree = EdgeTree.from_dendropy(read_tree(pyrg_dir / "tree.nwk"))
    tips = match_tips(tree.tip_names, read_alignment(pyrg_dir / "ref.phy"), "tree.nwk")
    profiles = ProfileBuilder(tree, tips.tip_rows).profiles(np.arange(tree.n_edges))
    raw = list(iter_reads(pyrg_dir / "reads.fasta"))
    by_length = sorted(raw, key=lambda r: len(r.sequence))
    chosen = by_length[:3] + by_length[len(raw) // 2:len(raw) // 2 + 2] + by_length[-3:]
    reads = [READ_CODE[np.frombuffer(r.sequence, np.uint8)] for r in chosen]
    check(scorers[True, 32], profiles, reads, ScoringParams(), k=7, width=16)


def test_icd_registration_keeps_existing_vendors(tmp_path, monkeypatch) -> None:
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").write_text("libpocl.so.2\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(vendors))
    monkeypatch.setattr(opencl_devices, "find_nvidia_library", lambda: "libnvidia-opencl.so.1")
    monkeypatch.setattr(opencl_devices.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(opencl_devices, "_loader_initialised", False)
    note = opencl_devices.register_nvidia_icd()
    registered = Path(os.environ["OCL_ICD_VENDORS"])
    assert registered != vendors and "registered libnvidia-opencl.so.1" in note
    assert sorted(p.name for p in registered.glob("*.icd")) == ["papara-py-nvidia.icd", "pocl.icd"]
    assert (registered / "papara-py-nvidia.icd").read_text() == "libnvidia-opencl.so.1\n"
    assert opencl_devices.register_nvidia_icd() is None  # now registered: nothing to do


def test_icd_registration_after_enumeration_says_what_to_export(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path / "none"))
    monkeypatch.setattr(opencl_devices, "find_nvidia_library", lambda: "/opt/libnvidia-opencl.so.1")
    monkeypatch.setattr(opencl_devices.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(opencl_devices, "_loader_initialised", True)
    note = opencl_devices.register_nvidia_icd()
    assert f"export OCL_ICD_VENDORS={os.environ['OCL_ICD_VENDORS']}" in note


def test_no_nvidia_library_means_no_registration(monkeypatch) -> None:
    monkeypatch.setattr(opencl_devices, "find_nvidia_library", lambda: None)
    assert opencl_devices.register_nvidia_icd() is None


@pytest.mark.slow
def test_describe_lists_every_device(device) -> None:
    text = opencl_devices.describe_devices()
    assert device.name.strip() in text and f"{device.compute_units} compute units" in text
    if device.kind != "gpu":
        assert "CPU engine only" in text
        with pytest.raises(opencl_devices.DeviceUnavailable, match="No usable OpenCL GPU device"):
            opencl_devices.discover_devices("gpu", required=True)


def _a_busy_chunk(scorer, seed: int, edges: int, width: int) -> tuple[list, np.ndarray, np.ndarray]:
    """(blocks, codes, offsets): `edges` random profiles in blocks of `width` and enough 100-residue
    reads to keep `scorer`'s device busy for 0.2 s or more, found by doubling the reads (PoCL
    takes seconds for 16 reads, an H200 milliseconds) once its programs are built."""
    rng = np.random.default_rng(seed)
    blocks = as_chunk(random_profiles(rng, edges, 400), width, 0)
    codes, offsets = pack_reads([rng.choice(READ_STATES, size=100)])
    scorer.score_chunk(blocks[:1], 0, width, codes, offsets, ScoringParams(), 3)  # programs built: not timed
    reads = 16
    while True:
        codes, offsets = pack_reads(list(rng.choice(READ_STATES, size=(reads, 100))))
        started = perf_counter()
        scorer.score_chunk(blocks, 0, edges, codes, offsets, ScoringParams(), 3)
        if perf_counter() - started >= 0.2 or reads >= 1 << 18:
            return blocks, codes, offsets
        reads *= 2


#: A kernel that keeps one work-item busy for `n` steps of a linear congruential generator.
_SPIN = """__kernel void spin(__global uint *out, uint n) {
    uint x = get_global_id(0);
    for (uint i = 0; i < n; i++) x = x * 1664525u + 1013904223u;
    out[get_global_id(0)] = x;
}"""


def test_waiting_sleeps_instead_of_spinning(device) -> None:
    """While the device works, `wait_sleeping` (how the feeders wait for a launch) uses almost no
    CPU time of the waiting thread: measured around the wait alone, on a kernel doubled in length
    until it runs 0.2 s or more on this device (the chunk scorer's own host work would dominate on
    a fast GPU)."""
    import pyopencl as cl

    from papara_py.engine.gpu import shared_context, wait_sleeping

    context = shared_context(device.cl_device)
    queue = cl.CommandQueue(context, device.cl_device)
    kernel = opencl_devices.build_program(context, device.cl_device, _SPIN).spin  # NVIDIA speaks: logged
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 4)
    steps = 1 << 16
    while True:
        kernel.set_args(out, np.uint32(steps))
        event = cl.enqueue_nd_range_kernel(queue, kernel, (1,), (1,))
        cpu, wall = thread_time(), perf_counter()
        wait_sleeping(queue, event)
        cpu, wall = thread_time() - cpu, perf_counter() - wall
        if wall >= 0.2 or steps >= 1 << 31:
            break
        steps *= 2
    assert wall >= 0.2, f"{steps} steps took {wall:.3f} s"
    assert cpu < 0.2 * wall, (cpu, wall)


@pytest.mark.slow
def test_a_chunk_on_the_device_leaves_the_gil_to_other_threads(scorers) -> None:
    """While a chunk runs, other Python threads run: the engine's CPU workers, the other GPU
    feeder and the traceback need the GIL. (A non-blocking result download held it for the
    whole kernel on PoCL: 12 s of a 12 s kernel.)"""
    scorer = scorers[True, 32]
    blocks, codes, offsets = _a_busy_chunk(scorer, 4, 256, 32)
    worker = threading.Thread(target=scorer.score_chunk, args=(blocks, 0, 256, codes, offsets, ScoringParams(), 3))
    longest_pause, wall = 0.0, perf_counter()
    worker.start()
    while worker.is_alive():
        before = perf_counter()
        threading.Event().wait(0.001)  # wakes up only with the GIL
        longest_pause = max(longest_pause, perf_counter() - before)
    wall = perf_counter() - wall
    assert wall > 0.2, "the chunk should keep the device busy for a while"
    assert longest_pause < 0.5 * wall, (longest_pause, wall)


def test_device_time_is_recorded_within_the_wall_time(device) -> None:
    """The run record's device seconds (profiling events) lie between the band kernel's own time
    and the wall time of the chunk, and add up over a consumer's launches."""
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.layout import make_block
    from papara_py.engine.read_batch import ReadBatch

    rng = np.random.default_rng(3)
    profiles = random_profiles(rng, 40, 300)
    codes, offsets = pack_reads([rng.choice(READ_STATES, size=int(n)) for n in rng.integers(20, 80, 12)])
    consumer = GpuChunkScorer(GpuScorer(device, profiling=True), "gpu-0:test", 5)
    blocks = [make_block(b, b * 8, profiles[b * 8:(b + 1) * 8], 8) for b in range(5)]
    seen = []
    for _ in range(2):
        consumer.score(blocks, ReadBatch(codes, offsets), ScoringParams(), 3)
        stats = consumer.gpu.stats
        assert 0 < stats.kernel_seconds <= stats.device_seconds <= stats.wall_seconds
        seen.append(stats.device_seconds)
    assert consumer.device_seconds == pytest.approx(sum(seen))


def test_work_groups_shrink_to_what_the_built_kernel_allows() -> None:
    """A device whose build of band_score takes fewer work-items per group than WG_UNITS x wg_reads
    (registers) gets groups of fewer reads, never an invalid launch."""
    class Built:
        def __init__(self, size: int) -> None:
            self.size = size

        def get_work_group_info(self, what, device) -> int:
            return self.size

    protein_costs = Variant(packed=True, ptx=False, rows=32).of(PROTEIN, costs=True)
    assert [_reads_per_group(Built(size), None, protein_costs) for size in (1024, 256, 128, 32, 16)] == [8, 8, 4, 1, 1]
    assert _reads_per_group(Built(1024), None, Variant(packed=True, ptx=False, rows=32).of(DNA)) == 4


# ---- the lookup path (kernels/band_score.cl LOOKUP): DNA diagonal costs looked up by residue ----

#: Single bases only: every stripe of such a read takes the lookup path.
SINGLE_BASES = np.array([1, 2, 4, 8], np.uint8)


@pytest.fixture(scope="module")
def lookup_scorers(device) -> dict:
    """Packed scorers with the lookup path at stripe heights 6 (the last stripe's height is 6 for
    every read), 20 (last stripes of 8, 16 and 20 rows), 32 (8, 16, 24, 32) and 40 (8, 16, 24, 32,
    40); ("table", rows): the same path with LOOKUP_TABLE's per-column table."""
    scorers: dict = {rows: GpuScorer(device, rows=rows) for rows in (6, 20, 32, 40)}
    scorers.update({("table", rows): GpuScorer(device, rows=rows, lookup_table=True) for rows in (6, 32)})
    return scorers


def mixed_reads(rng: np.random.Generator, lengths, ambiguous: float) -> list[np.ndarray]:
    """Reads of single bases with an ambiguity code (R, Y, S, W, K, M, B, D, H, V, N) at rate
    `ambiguous`: stripes without one take the lookup path, stripes with one the element path."""
    codes = np.array([5, 10, 6, 9, 12, 3, 14, 13, 11, 7, 15], np.uint8)
    reads = []
    for n in lengths:
        read = rng.choice(SINGLE_BASES, size=n)
        odd = rng.random(n) < ambiguous
        read[odd] = rng.choice(codes, size=int(odd.sum()))
        reads.append(read)
    return reads


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from([6, 20, 32, 40, ("table", 6), ("table", 32)]),
       st.sampled_from([0.0, 0.0, 0.02, 0.2]))
def test_lookup_path_matches_reference(lookup_scorers, case, rows, ambiguous) -> None:
    """Random chunks through the lookup path: reads of 1..m-1 single bases (bands as narrow as
    two columns, so head and tail columns overlap), stripes of 6, 20, 32 and 40 rows with last
    stripes of every height class and their virtual rows, the lookup words and the table, stripes
    with ambiguity codes on the element path beside them, Eq. 1 and near states cheaper."""
    rng = np.random.default_rng(case["seed"])
    profiles = random_profiles(rng, case["n_edges"], case["m"])
    reads = mixed_reads(rng, case["lengths"], ambiguous)
    scorer = lookup_scorers[rows]
    check(scorer, profiles, reads, case["params"], case["k"], case["width"], case["first_edge"])
    assert scorer.stats.lookup_reads == scorer.stats.packed_reads == len(reads)


@pytest.mark.parametrize("rows", [6, 20, 32, 40, ("table", 6), ("table", 32)])
def test_lookup_path_covers_every_read_length_and_height(lookup_scorers, rows) -> None:
    """Reads of 1..76 single bases against 77 columns: every last-stripe height (1..rows real rows
    in stripes of 8, 16, 24, 32 or 40 with virtual rows below), head-only, body and tail columns,
    and bands narrower than the stripe (reads of 46..76 against stripes of 32)."""
    rng = np.random.default_rng(100 + (rows if isinstance(rows, int) else 1000 + rows[1]))
    profiles = random_profiles(rng, 37, 77)
    reads = [rng.choice(SINGLE_BASES, size=n) for n in range(1, 77)]
    scorer = lookup_scorers[rows]
    check(scorer, profiles, reads, ScoringParams.preset("weighted"), k=5, width=16, first_edge=7)
    assert scorer.stats.lookup_reads == len(reads)


def test_lookup_path_is_left_where_costs_exceed_a_byte(lookup_scorers) -> None:
    """cgap + mismatch above 127: no lookup path with the lookup words (the element path gives the
    same scores); the table holds 16-bit costs and keeps it."""
    rng = np.random.default_rng(9)
    profiles = random_profiles(rng, 19, 40)
    reads = [rng.choice(SINGLE_BASES, size=n) for n in (3, 20, 39)]
    params = ScoringParams(mismatch=100, cgap=28, gap_open=5, gap_extend=2, insertion=9)
    scorer = lookup_scorers[32]
    check(scorer, profiles, reads, params, k=4, width=8)
    assert scorer.stats.lookup_reads == 0 and scorer.stats.packed_reads == 3
    check(scorer, profiles, reads, replace(params, cgap=27), k=4, width=8)
    assert scorer.stats.lookup_reads == 3
    table = lookup_scorers["table", 32]
    check(table, profiles, reads, params, k=4, width=8)
    assert table.stats.lookup_reads == 3


@pytest.mark.parametrize("rows", [6, 16])
@pytest.mark.parametrize("near_mismatch", [3, 1])
@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("table", [False, True])
def test_protein_lookup_path_matches_reference(device, rows, near_mismatch, costs, table) -> None:
    """Protein stripes of single amino acids on the lookup path (a 64-bit funnel shift tests each
    state in both lanes; with `table` each cost is an entry of the per-column table, column costs
    included), with and without column costs and near states, every read length from 1 to m - 1
    (last stripes of 8 rows or the full height tracking row h - 1, or with the table heights of 8
    and 16 with virtual rows, narrow bands), and reads with B, Z, J, X on the element path beside
    them."""
    rng = np.random.default_rng(40 + rows + near_mismatch + costs)
    m = 45
    profiles = random_profiles(rng, 23, m, PROTEIN)
    params = ScoringParams(**COST_PARAMS, near_mismatch=near_mismatch) if costs else ScoringParams(
        mismatch=5, cgap=6, gap_open=8, gap_extend=2, insertion=12, near_mismatch=near_mismatch)
    single = PROTEIN.read_code[np.frombuffer(PROTEIN.letters.encode(), np.uint8)]
    odd = PROTEIN.read_code[np.frombuffer(b"BZJX", np.uint8)]
    reads = [rng.choice(single, size=n) for n in range(1, m)]
    for read in reads[::5]:
        read[rng.integers(0, read.size)] = rng.choice(odd)
    column_costs = None
    if costs:
        column_costs = random_column_costs(rng, m, 39)
        assert set(single) | set(odd) <= set(column_costs.codes.tolist())
    scorer = GpuScorer(device, rows=rows, lookup_table=table)
    check(scorer, profiles, reads, params, k=4, width=8, first_edge=1, costs=column_costs)
    assert scorer.stats.lookup_reads == scorer.stats.packed_reads == len(reads)


@pytest.mark.parametrize("table", [False, True])
def test_band_two_columns_ahead_gives_the_same_scores(device, table) -> None:
    """-DBAND_AHEAD=2 (the lookup path loads the band cell two columns before its use): every read
    length against 77 columns and bands of two and three columns (m = 3, 4), DNA with the lookup
    words or the table, and protein with column costs on the table."""
    rng = np.random.default_rng(77 + table)
    scorer = GpuScorer(device, rows=32, lookup_table=table, extra_options=("-DBAND_AHEAD=2",))
    for m in (77, 4, 3):
        profiles = random_profiles(rng, 21, m)
        check(scorer, profiles, mixed_reads(rng, range(1, m), 0.02), ScoringParams.preset("weighted"), k=3, width=8)
    if table:
        m = 40
        params = ScoringParams(**COST_PARAMS, near_mismatch=1)
        single = PROTEIN.read_code[np.frombuffer(PROTEIN.letters.encode(), np.uint8)]
        reads = [rng.choice(single, size=n) for n in range(1, m)]
        protein = GpuScorer(device, rows=16, lookup_table=True, extra_options=("-DBAND_AHEAD=2",))
        check(protein, random_profiles(rng, 19, m, PROTEIN), reads, params, k=3, width=8,
              costs=random_column_costs(rng, m, 39))
        assert protein.stats.lookup_reads == len(reads)


