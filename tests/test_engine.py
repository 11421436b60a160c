"""The hybrid engine gives the reference answer whatever the schedule, and survives GPU faults.

CPU workers and a GPU consumer (the OpenCL kernel on PoCL in CI) compete for blocks with random
delays injected into every consumer; the merged candidates must equal the reference scorer's
matrix sorted by (score, edge). A fault hook makes the GPU consumer fail after k chunks: its
blocks go back to the queue, the CPU finishes them, the answer is unchanged.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

from papara_py.engine.consumers import GpuChunkScorer
from papara_py.engine.layout import make_block
from papara_py.engine.opencl_devices import discover_devices
from papara_py.engine.scheduler import Engine, EngineOptions, ReadBatch, leave_to_gpus
from papara_py.params import ScoringParams
from papara_py.scoring import score_matrix_reference

K = 4


def random_case(seed: int, n_edges: int = 45, m: int = 60, n_reads: int = 9):
    rng = np.random.default_rng(seed)
    states = rng.choice(np.array([1, 2, 4, 8, 3, 15], np.uint8), size=(n_edges, m))
    cgap = (rng.random((n_edges, m)) < 0.2).astype(np.uint8) << 4
    profiles = (states | cgap).astype(np.uint8)
    reads = [rng.choice(np.array([1, 2, 4, 8], np.uint8), size=int(rng.integers(1, m))) for _ in range(n_reads)]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    return profiles, reads, ReadBatch(np.concatenate(reads), offsets)


def expected(profiles, reads, params, k=K):
    matrix = score_matrix_reference(reads, profiles, params)
    order = [sorted(range(matrix.shape[1]), key=lambda e: (matrix[q, e], e))[:k] for q in range(len(reads))]
    edges = np.array(order, np.int32)
    return np.take_along_axis(matrix, edges, axis=1).astype(np.int32), edges


@pytest.fixture(scope="module")
def opencl_device():
    devices = discover_devices("any")
    if not devices:
        pytest.fail("no OpenCL device: the test extra installs PoCL, so CI always has one")
    return devices[0]


def gpu(opencl_device, chunk: int = 2):
    from papara_py.engine.gpu import GpuScorer

    return GpuChunkScorer(GpuScorer(opencl_device), "gpu-0:test", chunk)


@dataclass
class OneBatch:
    candidates: object
    consumers: list


def run_engine(build_profiles, n_edges, width, batch, params, k, use_cpu, gpus, options) -> OneBatch:
    """One batch through the engine: its candidates and the consumers' records."""
    n_columns = build_profiles(np.arange(1)).shape[1]
    engine = Engine(build_profiles, n_edges, n_columns, width, params, k, use_cpu, gpus, options)
    [(_, candidates)] = list(engine.run(lambda index: batch, 1))
    return OneBatch(candidates, engine.consumers)


def run(profiles, batch, params, use_cpu, gpus, options, width=8):
    return run_engine(lambda ids: profiles[ids], profiles.shape[0], width, batch, params, K,
                      use_cpu, gpus, options)


@pytest.mark.parametrize("seed", range(3))
def test_cpu_workers_with_random_delays_match_the_reference(seed):
    params = ScoringParams()
    profiles, reads, batch = random_case(seed)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, True, [], EngineOptions(cpu_workers=3, queue_capacity=2,
                                                                  jitter_seconds=0.01, jitter_seed=seed))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert sum(c.edges for c in result.consumers) == profiles.shape[0]


@pytest.mark.parametrize("seed", range(2))
def test_hybrid_matches_reference_under_random_scheduling(seed, opencl_device):
    params = ScoringParams(mismatch=2, cgap=4, gap_open=1, gap_extend=2, insertion=3)
    profiles, reads, batch = random_case(100 + seed)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, True, [gpu(opencl_device)],
                 EngineOptions(cpu_workers=2, jitter_seconds=0.02, jitter_seed=seed))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert {c.name.split("-")[0] for c in result.consumers} == {"cpu", "gpu"}


@pytest.mark.parametrize("feeders", [1, 2, 3])
def test_gpu_feeder_threads_share_one_device_without_changing_results(feeders, opencl_device):
    # feeder threads take, prepare and merge launches concurrently and take turns on the device;
    # whatever the interleaving, the lists are the reference's and each feeder has its record
    params = ScoringParams(mismatch=1, cgap=3, gap_open=3, gap_extend=1, insertion=2)
    profiles, reads, batch = random_case(300 + feeders, n_edges=90)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, False, [gpu(opencl_device, chunk=1)],
                 EngineOptions(gpu_feeders=feeders, jitter_seconds=0.01, jitter_seed=feeders))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert [c.name for c in result.consumers] == [f"gpu-0:test/feeder-{i}" for i in range(feeders)]
    assert sum(c.edges for c in result.consumers) == profiles.shape[0]


@pytest.mark.parametrize("use_cpu", [True, False], ids=["hybrid", "gpu-only"])
def test_gpu_fault_hands_blocks_back_and_cpu_finishes(use_cpu, opencl_device, capsys):
    params = ScoringParams()
    profiles, reads, batch = random_case(7, n_edges=70)
    want_score, want_edge = expected(profiles, reads, params)
    result = run(profiles, batch, params, use_cpu, [gpu(opencl_device)],
                 EngineOptions(cpu_workers=2, fail_after_chunks=1, jitter_seconds=0.01))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert sum(c.edges for c in result.consumers) == profiles.shape[0]
    gpu_stats = [c for c in result.consumers if c.name.startswith("gpu")][0]
    # gpu-only: the GPU surely takes blocks, so it surely fails; in hybrid the CPU workers may
    # drain the queue before the GPU's second chunk, and then there is nothing to fail on
    if not use_cpu or gpu_stats.error:
        assert gpu_stats.error and "injected fault" in gpu_stats.error
        assert "failed" in capsys.readouterr().err
        assert any(c.name.startswith("cpu") and c.edges for c in result.consumers)


def batches_of(reads, size: int) -> list[ReadBatch]:
    groups = [reads[i:i + size] for i in range(0, len(reads), size)]
    return [ReadBatch(np.concatenate(g), np.concatenate(([0], np.cumsum([len(r) for r in g]))).astype(np.int64))
            for g in groups]


@pytest.mark.parametrize("in_flight", [1, 2, 3])
def test_batches_stream_through_the_hybrid_engine_unchanged(in_flight, opencl_device):
    params = ScoringParams(mismatch=1, cgap=2, gap_open=4, gap_extend=1, insertion=2)
    profiles, reads, _ = random_case(200 + in_flight, n_edges=37, n_reads=14)
    batches = batches_of(reads, 4)
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], profiles.shape[1], 8, params, K, True,
                    [gpu(opencl_device)], EngineOptions(cpu_workers=2, queue_capacity=3, batches_in_flight=in_flight,
                                                        jitter_seconds=0.01, jitter_seed=in_flight))
    seen = []
    for index, candidates in engine.run(lambda b: batches[b], len(batches)):
        group = reads[index * 4:index * 4 + 4]
        want_score, want_edge = expected(profiles, group, params)
        assert np.array_equal(candidates.edge, want_edge)
        assert np.array_equal(candidates.score, want_score)
        seen.append(index)
    assert sorted(seen) == list(range(len(batches)))
    assert sum(c.edges for c in engine.consumers) == profiles.shape[0] * len(batches)
    assert 0 < engine.scoring_seconds


def test_cpu_scores_in_read_slices_and_hands_the_rest_of_a_block_to_the_gpu(opencl_device):
    # slices of one read with a delay before each: a CPU item takes ~0.5 s, while the GPU drains
    # the rest of the queue in a few chunks; once nothing is untaken, the tail rule sends the
    # CPU's unscored reads back, and the GPU must score a partial read range correctly
    params = ScoringParams(mismatch=2, cgap=1, gap_open=3, gap_extend=1, insertion=2)
    profiles, reads, batch = random_case(11, n_edges=80, n_reads=24)
    want_score, want_edge = expected(profiles, reads, params)
    scorer = gpu(opencl_device)
    launches: list[int] = []
    score_chunk = scorer.score

    def recording(blocks, launch_reads, launch_params, k):
        launches.append(launch_reads.count)
        return score_chunk(blocks, launch_reads, launch_params, k)

    scorer.score = recording
    result = run(profiles, batch, params, True, [scorer],
                 EngineOptions(cpu_workers=2, jitter_seconds=0.04, cpu_first_slice_cells=1, cpu_slice_seconds=1e-9))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert sum(c.cells for c in result.consumers) == profiles.shape[0] * batch.residues * profiles.shape[1]
    assert sum(c.edges for c in result.consumers) == profiles.shape[0]
    assert any(count < batch.count for count in launches), launches


def test_cpu_leaves_the_tail_only_when_the_gpus_would_finish_first():
    # one CPU block: 1e9 cells at 1e9 cells/s = 1 s; the GPUs drain the rest at 1e10 cells/s
    assert not leave_to_gpus(1e9, 1e9, 1e10, untaken_cells=2e10)   # GPUs need 2 s: keep working
    assert leave_to_gpus(1e9, 1e9, 1e10, untaken_cells=5e9)        # GPUs need 0.5 s: leave it
    assert not leave_to_gpus(1e9, 0.0, 1e10, untaken_cells=0)      # own rate unknown yet
    assert not leave_to_gpus(1e9, 1e9, 0.0, untaken_cells=0)       # no live GPU


def test_closing_a_run_early_stops_every_thread():
    profiles, reads, _ = random_case(11, n_edges=64, n_reads=40)
    batches = batches_of(reads, 2)
    engine = Engine(lambda ids: profiles[ids], 64, profiles.shape[1], 8, ScoringParams(), K, True, [],
                    EngineOptions(cpu_workers=2, jitter_seconds=0.02))
    stream = engine.run(lambda b: batches[b], len(batches))
    next(stream)
    stream.close()
    for thread in threading.enumerate():
        if thread.name.startswith("papara-"):
            thread.join(timeout=5)
            assert not thread.is_alive(), f"{thread.name} still runs after the run was closed"


def test_an_error_in_the_master_reaches_the_caller():
    profiles, reads, batch = random_case(12)

    def broken(ids):
        if ids[0] >= 16:
            raise MemoryError("profiles do not fit")
        return profiles[ids]

    with pytest.raises(MemoryError, match="do not fit"):
        run_engine(broken, profiles.shape[0], 8, batch, ScoringParams(), K, True, [], EngineOptions(cpu_workers=2))


def test_gpu_scores_the_handed_back_rests_of_a_batch_in_one_launch(opencl_device):
    # three CPU workers score their blocks a read at a time and hand the rest back as soon as
    # the GPU's first launch is done (the tail rule itself is tested above), each at its own
    # read. The GPU, held back a moment before each later take, then finds the rests queued and
    # scores them as one launch over the union of their ranges (one feeder thread: a second one,
    # idle, would take each rest as it comes, which is right for it and not what is tested
    # here): pairs scored twice must not
    # show up twice in the candidate lists (k is every edge, so a duplicate would push a pair out)
    params = ScoringParams(mismatch=3, cgap=1, gap_open=2, gap_extend=1, insertion=2)
    profiles, reads, batch = random_case(13, n_edges=40, n_reads=60)
    k = profiles.shape[0]
    want_score, want_edge = expected(profiles, reads, params, k)
    scorer = gpu(opencl_device, chunk=3)
    scorer.score([make_block(0, 0, profiles[:8], 8)], batch.slice(0, 1), params, k)  # build the programs
    launches: list[tuple[int, int]] = []
    first_launch_done = threading.Event()
    score_chunk = scorer.score

    def recording(blocks, launch_reads, launch_params, launch_k):
        launches.append((len(blocks), launch_reads.count))
        result = score_chunk(blocks, launch_reads, launch_params, launch_k)
        first_launch_done.set()
        return result

    scorer.score = recording
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], profiles.shape[1], 8, params, k, True, [scorer],
                    EngineOptions(cpu_workers=3, gpu_feeders=1, jitter_seconds=0.02, cpu_first_slice_cells=1,
                                  cpu_slice_seconds=1e-9))
    engine._leave_to_gpus = lambda piece, stats: first_launch_done.is_set()
    take = engine._queue.take

    def delayed_take(*args, **kwargs):
        if first_launch_done.is_set():
            threading.Event().wait(0.4)
        return take(*args, **kwargs)

    engine._queue.take = delayed_take
    [(_, candidates)] = list(engine.run(lambda index: batch, 1))
    assert np.array_equal(candidates.edge, want_edge)
    assert np.array_equal(candidates.score, want_score)
    assert sum(c.cells for c in engine.consumers) == profiles.shape[0] * batch.residues * profiles.shape[1]
    assert any(n_blocks >= 2 and count < batch.count for n_blocks, count in launches), launches
