"""The hybrid engine gives the reference answer whatever the schedule, and survives GPU faults.

CPU workers and a GPU consumer (the OpenCL kernel on PoCL in CI) compete for blocks with random
delays injected into every consumer; the merged candidates must equal the reference scorer's
matrix sorted by (score, edge). A fault hook makes the GPU consumer fail after k chunks: its
blocks go back to the queue, the CPU finishes them, the answer is unchanged.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest
from engine_cases import K, expected, gpu, random_case, run, run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.read_batch import ReadBatch
from papara_py.engine.scheduler import Engine, cpu_pieces, leave_to_gpus
from papara_py.model.params import ScoringParams


@pytest.mark.parametrize("seed", range(3))
def test_cpu_workers_with_random_delays_match_the_reference(seed):
    params = ScoringParams()
    profiles, reads, batch = random_case(seed)
    want_score, want_edge = expected(profiles, reads, params)
    # no block kept (block_cache_bytes=0): the queue is bounded, two items at most
    result = run(profiles, batch, params, True, [], EngineOptions(cpu_workers=3, queue_capacity=2, block_cache_bytes=0,
                                                                  jitter_seconds=0.01, jitter_seed=seed))
    assert np.array_equal(result.candidates.edge, want_edge)
    assert np.array_equal(result.candidates.score, want_score)
    assert sum(c.edges for c in result.consumers) == profiles.shape[0]


@pytest.mark.slow
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


@pytest.mark.slow
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
def test_gpu_fault_hands_blocks_back_and_cpu_finishes(use_cpu, opencl_device, caplog):
    caplog.set_level(logging.INFO, logger="papara_py")  # the engine's notices: logging
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
        assert "failed" in caplog.text
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
                                                        block_cache_bytes=0 if in_flight == 2 else 256 << 20,
                                                        jitter_seconds=0.01, jitter_seed=in_flight))
    seen = []
    before = time.perf_counter()
    for index, candidates in engine.run(batches):
        group = reads[index * 4:index * 4 + 4]
        want_score, want_edge = expected(profiles, group, params)
        assert np.array_equal(candidates.edge, want_edge)
        assert np.array_equal(candidates.score, want_score)
        # when a consumer first took work of the batch: after the run began, before it came back
        assert before < engine.batch_started.pop(index) < time.perf_counter()
        seen.append(index)
    assert sorted(seen) == list(range(len(batches)))
    assert not engine.batch_started  # none noted for a batch that was never yielded
    assert sum(c.edges for c in engine.consumers) == profiles.shape[0] * len(batches)
    assert 0 < engine.scoring_seconds


def test_cpu_workers_score_the_last_reads_of_each_block_and_the_gpu_takes_the_pieces_they_leave(opencl_device):
    # a first guess that gives the CPU nearly every read; each CPU worker scores one piece and
    # then leaves the rest to the GPU, which must launch over those pieces (read ranges that do
    # not start at the batch's first read) once it has taken the GPU part of every block
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
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], profiles.shape[1], 8, params, K, True, [scorer],
                    EngineOptions(cpu_workers=2, jitter_seconds=0.01, cpu_first_cells=10**12, cpu_first_share=1.0))
    engine._leave_to_gpus = lambda item, untaken, stats: stats.cells > 0
    [(_, candidates)] = list(engine.run([batch]))
    assert np.array_equal(candidates.edge, want_edge)
    assert np.array_equal(candidates.score, want_score)
    assert sum(c.cells for c in engine.consumers) == profiles.shape[0] * batch.residues * profiles.shape[1]
    assert sum(c.edges for c in engine.consumers) == profiles.shape[0]
    cpu_cells = [c.cells for c in engine.consumers if c.name.startswith("cpu")]
    assert all(cpu_cells) and not any(c.edges for c in engine.consumers if c.name.startswith("cpu"))
    assert 1 in launches and any(1 < count < batch.count for count in launches), launches


def test_the_first_cpu_part_of_a_batch_is_a_small_share_before_rates_are_known(opencl_device, monkeypatch):
    """Before any rate is measured a batch's CPU part is cpu_first_cells per worker, but at most
    cpu_first_share of its residues (on a small run the workers' first pieces were the run's
    tail); once rates are known they decide. Results stay exact either way."""
    from papara_py.engine import scheduler

    params = ScoringParams(mismatch=2, cgap=1, gap_open=3, gap_extend=1, insertion=2)
    profiles, reads, _ = random_case(5, n_edges=40, n_reads=40)
    batches = batches_of(reads, 20)
    parts: list[tuple[float, int]] = []
    real = scheduler.cpu_pieces

    def recording(offsets, cpu_residues, pieces):
        parts.append((cpu_residues, int(offsets[-1] - offsets[0])))
        return real(offsets, cpu_residues, pieces)

    monkeypatch.setattr(scheduler, "cpu_pieces", recording)
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], profiles.shape[1], 8, params, K, True,
                    [gpu(opencl_device)], EngineOptions(cpu_workers=2, cpu_first_cells=10**12, cpu_first_share=0.25))
    for index, candidates in engine.run(batches):
        want_score, want_edge = expected(profiles, reads[index * 20:index * 20 + 20], params)
        assert np.array_equal(candidates.edge, want_edge) and np.array_equal(candidates.score, want_score)
    first_part, first_residues = parts[0]
    assert first_part == 0.25 * first_residues  # capped: 2 x 10^12 cells would be every read


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=40), st.floats(0, 3000), st.integers(1, 6))
def test_cpu_pieces_are_the_last_reads_within_the_cpu_share_in_about_equal_parts(lengths, cpu_residues, pieces):
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    ranges = cpu_pieces(offsets, cpu_residues, pieces)
    count = len(lengths)
    if not ranges:  # not even the last read fits, or only the first read would be left
        assert count == 1 or lengths[-1] > cpu_residues
        return
    first = ranges[0][0]
    assert 1 <= first < count and ranges[-1][1] == count
    assert all(a < b == c for (a, b), (c, _) in zip(ranges, ranges[1:] + [(count, None)]))
    assert 1 <= len(ranges) <= pieces
    assert offsets[count] - offsets[first] <= cpu_residues
    assert first == 1 or offsets[count] - offsets[first - 1] > cpu_residues  # as many reads as fit
    share = (offsets[count] - offsets[first]) / pieces
    assert all(offsets[b] - offsets[a] <= share + max(lengths) for a, b in ranges)


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
    stream = engine.run(batches)
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


def test_cpu_workers_take_nothing_while_the_caller_holds_a_batch(opencl_device):
    # the caller (the pipeline's traceback) holds each yielded batch for a while; CPU workers
    # may finish what they hold but take no new item meanwhile, and the results stay exact
    params = ScoringParams(mismatch=2, cgap=3, gap_open=2, gap_extend=1, insertion=3)
    profiles, reads, _ = random_case(17, n_edges=48, n_reads=18)
    batches = batches_of(reads, 3)
    engine = Engine(lambda ids: profiles[ids], profiles.shape[0], profiles.shape[1], 8, params, K, True,
                    [gpu(opencl_device)], EngineOptions(cpu_workers=3, jitter_seconds=0.01, cpu_first_cells=10**12,
                                                        cpu_first_share=1.0))
    taken: list[float] = []
    take = engine._queue.take_for_cpu

    def recording(accept):
        item = take(accept)
        if item is not None:
            taken.append(time.perf_counter())
        return item

    engine._queue.take_for_cpu = recording
    holds = []
    for index, candidates in engine.run(batches):
        started = time.perf_counter()
        time.sleep(0.15)
        holds.append((started, time.perf_counter()))
        group = reads[index * 3:index * 3 + 3]
        want_score, want_edge = expected(profiles, group, params)
        assert np.array_equal(candidates.edge, want_edge)
        assert np.array_equal(candidates.score, want_score)
    assert taken, "the CPU workers took pieces between the holds"
    # a worker that passed the check just before a hold began may return a moment into it
    assert not [t for t in taken for first, end in holds if first + 0.02 < t < end], (holds, taken)
