"""The guided search's full launches (engine/gpu.py `GpuScorer.score_groups`, kernels/band_score.cl
`unit_base`, top_k.cl `top_k_rows`; engine/scheduler.py's grouped batches): many groups of (edges,
reads) in one launch give each group's reads exactly what scoring the group alone gives, on the
OpenCL device of the kernel tests (PoCL in CI). The reference is `score_chunk` of one group at a
time, itself held against the reference scorer by tests/test_gpu_kernel.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_data import random_profiles
from test_gpu_kernel import READ_STATES, pack_reads

from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import DNA, PROTEIN

cl = pytest.importorskip("pyopencl")
from papara_py.engine.gpu import GpuScorer  # noqa: E402  (needs pyopencl)
from papara_py.engine.gpu_plan import TASK_EDGES  # noqa: E402


@pytest.fixture(scope="module")
def scorers(opencl_device) -> dict:
    return {narrow: GpuScorer(opencl_device, narrow=narrow, rows=6) for narrow in (True, False)}


def random_reads(rng: np.random.Generator, count: int, m: int, alphabet=DNA) -> tuple[np.ndarray, np.ndarray]:
    """`count` reads of 1..m-1 residues (codes, offsets): DNA's mostly plain bases, protein's single states."""
    reads = []
    for _ in range(count):
        n = int(rng.integers(1, m))
        if alphabet is DNA:
            reads.append(rng.choice(READ_STATES, size=n))
        else:
            reads.append(np.left_shift(1, rng.integers(0, 20, size=n)).astype(np.uint32))
    return pack_reads(reads)


def _groups(rng: np.random.Generator, sizes: list[int], reads_per_group: list[int], m: int, alphabet=DNA):
    """Random groups: each its own profiles ([m, n_g] lanes) and reads (slots, concatenated)."""
    lanes = [random_profiles(rng, n, m, alphabet).T.copy() for n in sizes]
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1])) + rng.integers(0, 1000)
    reads = [random_reads(rng, q, m, alphabet) for q in reads_per_group]
    codes = np.concatenate([c for c, _ in reads])
    offsets = np.concatenate([[0]] + [o[1:] + sum(len(c) for c, _ in reads[:g]) for g, (_, o) in enumerate(reads)])
    slot_ptr = np.concatenate(([0], np.cumsum(reads_per_group)))
    return lanes, firsts, codes, offsets.astype(np.int64), slot_ptr, reads


def _alone(scorer, lanes, firsts, reads, params, k, alphabet):
    """Each group scored by itself (score_chunk of its lanes as one block), in slot order."""
    scores, edges = [], []
    for group, first, (codes, offsets) in zip(lanes, firsts, reads):
        if offsets[-1] == 0 and len(offsets) == 1:
            continue
        block = group[None]  # [1, m, n_g]
        score, edge = scorer.score_chunk(block, int(first), group.shape[1], codes, offsets, params, k)
        scores.append(score)
        edges.append(edge)
    return np.concatenate(scores), np.concatenate(edges)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_groups=st.integers(1, 6), narrow=st.booleans(), k=st.integers(1, 6),
       protein=st.booleans())
def test_groups_in_one_launch_equal_each_group_alone(scorers, seed, n_groups, narrow, k, protein):
    rng = np.random.default_rng(seed)
    alphabet = PROTEIN if protein else DNA
    m = int(rng.integers(12, 40))
    # group sizes across task boundaries: 1 edge, a task less one, a task, a task and one, several
    sizes = [int(rng.choice([1, 2, TASK_EDGES // 2 - 1, TASK_EDGES // 2 + 1, TASK_EDGES - 1, TASK_EDGES,
                             TASK_EDGES + 1, 2 * TASK_EDGES + 3])) for _ in range(n_groups)]
    reads_per_group = [int(rng.integers(1, 7)) for _ in range(n_groups)]
    lanes, firsts, codes, offsets, slot_ptr, reads = _groups(rng, sizes, reads_per_group, m, alphabet)
    values = [int(v) for v in rng.integers(0, 8, size=5)]
    params = ScoringParams(*values, near_mismatch=int(rng.integers(0, values[0] + 1)))
    scorer = scorers[narrow]
    score, edge = scorer.score_groups(lanes, firsts, codes, offsets, slot_ptr, params, k)
    want_score, want_edge = _alone(scorer, lanes, firsts, reads, params, k, alphabet)
    np.testing.assert_array_equal(score, want_score)
    np.testing.assert_array_equal(edge, want_edge)


def test_groups_split_into_several_kernel_batches(opencl_device):
    """A band budget of a few tasks: the reads' tasks spread over kernel batches, merged alike."""
    rng = np.random.default_rng(5)
    m = 30
    sizes, reads_per_group = [TASK_EDGES * 3 + 5, 7, TASK_EDGES + 1], [5, 3, 4]
    lanes, firsts, codes, offsets, slot_ptr, reads = _groups(rng, sizes, reads_per_group, m)
    params = ScoringParams(3, 2, 3, 1, 3)
    small = GpuScorer(opencl_device, rows=6)
    small.band_budget = 3 * 32 * (m + 1) * 4  # three tasks per kernel batch
    score, edge = small.score_groups(lanes, firsts, codes, offsets, slot_ptr, params, 4)
    assert small.stats.batches > 3
    want_score, want_edge = _alone(GpuScorer(opencl_device, rows=6), lanes, firsts, reads, params, 4, DNA)
    np.testing.assert_array_equal(score, want_score)
    np.testing.assert_array_equal(edge, want_edge)


# ---- the engine: grouped batches (engine/scheduler.py) ------------------------------------------

from papara_py.engine.consumers import GpuChunkScorer  # noqa: E402
from papara_py.engine.engine_options import EngineOptions  # noqa: E402
from papara_py.engine.queue import WorkItem, WorkQueue  # noqa: E402
from papara_py.engine.read_batch import EdgeGroups, ReadBatch  # noqa: E402
from papara_py.engine.scheduler import Engine  # noqa: E402


def _grouped_case(seed: int, n_edges: int = 90, m: int = 24, n_groups: int = 7):
    """Profiles of every edge, reads, and groups (ascending edge subsets, read rows) as a round of
    the guided search makes them: a read in several groups, groups of 1 to ~40 edges."""
    rng = np.random.default_rng(seed)
    profiles = random_profiles(rng, n_edges, m)
    codes, offsets = random_reads(rng, 11, m)
    groups = []
    for _ in range(n_groups):
        size = int(rng.integers(1, 40))
        edges = np.sort(rng.choice(n_edges, size=size, replace=False)).astype(np.int32)
        rows = np.sort(rng.choice(11, size=int(rng.integers(1, 8)), replace=False))
        groups.append((rows, edges))
    return profiles, codes, offsets, groups


def _grouped_batch(codes, offsets, groups) -> tuple[ReadBatch, np.ndarray]:
    rows = np.concatenate([r for r, _ in groups])
    lengths = offsets[rows + 1] - offsets[rows]
    slot_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    slot_codes = np.concatenate([codes[offsets[r]:offsets[r + 1]] for r in rows])
    edge_ptr = np.concatenate(([0], np.cumsum([e.size for _, e in groups]))).astype(np.int64)
    slot_ptr = np.concatenate(([0], np.cumsum([r.size for r, _ in groups]))).astype(np.int64)
    edges = np.concatenate([e for _, e in groups]).astype(np.int32)
    return ReadBatch(slot_codes, slot_offsets, edges, EdgeGroups(edge_ptr, slot_ptr)), rows


def _each_group_alone(profiles, codes, offsets, groups, m, k):
    """Each group as a subset batch of its own reads (the engine before grouped batches)."""
    out_score, out_edge = [], []
    for rows, edges in groups:
        lengths = offsets[rows + 1] - offsets[rows]
        sub = ReadBatch(np.concatenate([codes[offsets[r]:offsets[r + 1]] for r in rows]),
                        np.concatenate(([0], np.cumsum(lengths))).astype(np.int64), edges)
        engine = Engine(lambda ids: profiles[ids], profiles.shape[0], m, 8, PARAMS, k, True, [],
                        EngineOptions(cpu_workers=1))
        [(_, found)] = list(engine.run([sub]))
        out_score.append(found.score)
        out_edge.append(found.edge)
    return np.concatenate(out_score), np.concatenate(out_edge)


PARAMS = ScoringParams(3, 2, 4, 1, 3, near_mismatch=1)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("device", ["cpu", "gpu", "hybrid"])
def test_a_grouped_batch_gives_each_group_what_it_gets_alone(opencl_device, seed, device):
    profiles, codes, offsets, groups = _grouped_case(seed)
    m, k = profiles.shape[1], 4
    batch, _ = _grouped_batch(codes, offsets, groups)
    gpus = [] if device == "cpu" else [GpuChunkScorer(GpuScorer(opencl_device, rows=6), "gpu-0:test", 3)]
    # a few cells per launch: the groups' blocks go out in several launches of several groups each
    options = EngineOptions(cpu_workers=2, grouped_launch_cells=20 * 24 * 60, jitter_seconds=0.001, jitter_seed=seed)
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], m, 8, PARAMS, k, device != "gpu", gpus, options)
    [(_, found)] = list(engine.run([batch]))
    want_score, want_edge = _each_group_alone(profiles, codes, offsets, groups, m, k)
    np.testing.assert_array_equal(found.score, want_score)
    np.testing.assert_array_equal(found.edge, want_edge)
    if gpus:
        launches = sum(c.calls for c in engine.consumers if c.name.startswith("gpu"))
        assert 1 < launches < sum(-(-e.size // 8) for _, e in groups)  # several groups per launch


def test_grouped_items_go_out_by_cells_across_groups():
    queue = WorkQueue(None)
    queue.plan(0, 6, 600)
    block = object()
    for g in range(6):  # six groups of one block, each against its own reads
        queue.put(WorkItem(0, block, 100, (g * 3, g * 3 + 3), grouped=True))
    queue.seal(0)
    sizes = []
    while (taken := queue.take(2, fill=True, grouped_cells=250)):
        sizes.append(len(taken))
        assert len({item.reads for item in taken}) == len(taken)  # several read ranges in one launch
        queue.finished(len(taken))
        if sum(sizes) == 6:
            queue.close()
    assert sizes == [2, 2, 2]  # 600 cells in even launches of about 250: 200 each


@pytest.mark.parametrize("narrow", [True, False])
def test_protein_groups_with_column_costs(scorers, narrow):
    """Column profile costs (each read's cost profile expanded once, shared by its tasks) and
    protein's near states in one launch of several groups."""
    from test_cpu_kernel import random_column_costs, random_cost_codes

    rng = np.random.default_rng(11 + narrow)
    m = 33
    sizes, per_group = [3, TASK_EDGES + 2, 70, 1], [4, 2, 5, 3]
    lanes = [random_profiles(rng, n, m, PROTEIN).T.copy() for n in sizes]
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1])) + 7
    reads = [pack_reads([random_cost_codes(rng, int(rng.integers(1, m))) for _ in range(q)]) for q in per_group]
    codes = np.concatenate([c for c, _ in reads])
    offsets = np.concatenate([[0]] + [o[1:] + sum(len(c) for c, _ in reads[:g]) for g, (_, o) in enumerate(reads)])
    slot_ptr = np.concatenate(([0], np.cumsum(per_group)))
    params = ScoringParams(mismatch=3, cgap=6, gap_open=5, gap_extend=3, insertion=16, near_mismatch=1,
                           column_weight=5.0)
    costs = random_column_costs(rng, m, params.column_cost_bound())
    scorer = scorers[narrow]
    score, edge = scorer.score_groups(lanes, firsts, codes, offsets.astype(np.int64), slot_ptr, params, 3,
                                      costs=costs)
    want = [scorer.score_chunk(group[None], int(first), group.shape[1], c, o, params, 3, costs=costs)
            for group, first, (c, o) in zip(lanes, firsts, reads)]
    np.testing.assert_array_equal(score, np.concatenate([w[0] for w in want]))
    np.testing.assert_array_equal(edge, np.concatenate([w[1] for w in want]))
