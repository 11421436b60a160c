"""How the main job cuts the reads into batches and the input into written stretches, as they
are parsed (io/read_stream.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.errors import InputError
from papara_py.io.read_stream import ReadStream, split_batches
from papara_py.io.reads import STATUS_ALIGNED, STATUSES, ReadChunk
from papara_py.phylo.encoding import DNA
from papara_py.run.stages import MIN_BATCH_READS, MIN_BATCHES

N_COLUMNS = 6  # reads of 1-5 residues are aligned; 0: empty, 6 and more: too long


def _chunks(lengths: np.ndarray, cuts: list[int]) -> list[ReadChunk]:
    """The reads r0, r1, ... of these lengths (all A), parsed in chunks that end at `cuts`."""
    chunks, lo = [], 0
    for hi in sorted({*(min(cut, len(lengths)) for cut in cuts), len(lengths)}):
        if hi > lo:
            part = lengths[lo:hi]
            chunks.append(ReadChunk([f"r{q}" for q in range(lo, hi)], b"A" * int(part.sum()), part.astype(np.int64),
                                    np.arange(lo, hi, dtype=np.int64) * 2 + 1))
            lo = hi
    return chunks


def _stretches(chunks, batch_reads: int, min_batches: int = MIN_BATCHES, min_batch_reads: int = MIN_BATCH_READS,
               gate: threading.Event | None = None):
    def source():
        for i, chunk in enumerate(chunks):
            if gate is not None and i == 1:
                gate.wait()  # the rest of the file comes only when the test says so
            yield chunk
    stream = ReadStream(source(), DNA, N_COLUMNS).start()
    try:
        got = [(s.first, s.reads.names, s.statuses.tolist(), s.alignable.tolist())
               for s in stream.stretches(batch_reads, min_batches, min_batch_reads)]
    finally:
        stream.close()
    return got, stream


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3_000), st.integers(1, 400), st.integers(1, 4), st.integers(1, 60),
       st.lists(st.integers(0, 3_000), max_size=6), st.integers(0, 2**32 - 1))
def test_stretches_cover_the_input_in_order_and_batches_the_alignable_reads(n_reads, batch_reads, min_batches,
                                                                            min_batch_reads, cuts, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 3, 5, 6, 9], size=n_reads, p=[0.05, 0.3, 0.3, 0.2, 0.1, 0.05])
    got, stream = _stretches(_chunks(lengths, cuts), batch_reads, min_batches, min_batch_reads)
    aligned = STATUSES.index(STATUS_ALIGNED)
    # every row once, in order, with its status; the alignable ones are the batch
    rows = [name for _, names, _, _ in got for name in names]
    assert rows == [f"r{q}" for q in range(n_reads)]
    assert all(got[i + 1][0] == got[i][0] + len(got[i][1]) for i in range(len(got) - 1))
    expected_status = np.where(lengths == 0, STATUSES.index("empty"),
                               np.where(lengths >= N_COLUMNS, STATUSES.index("too_long"), aligned))
    assert [s for _, _, statuses, _ in got for s in statuses] == expected_status.tolist()
    for first, _, statuses, alignable in got:
        assert alignable == [i for i, s in enumerate(statuses) if s == aligned]
        assert len(alignable) <= batch_reads
    assert stream.stretch_count == len(got) and stream.rows == n_reads
    n_alignable = int(np.count_nonzero(expected_status == aligned))
    if n_alignable == 0:
        assert len(got) == (1 if n_reads else 0)  # the rows still written, in one stretch
        return
    assert all(alignable for _, _, _, alignable in got)
    # each stretch but the first starts with its first alignable read
    assert all(alignable[0] == 0 for _, _, _, alignable in got[1:])
    # the last stretches are `split_batches` of what was left: equal, and a small input is
    # cut as if read whole
    lookahead = max(min_batches * batch_reads, batch_reads + 1)
    sizes = [len(a) for _, _, _, a in got]
    if n_alignable < lookahead:
        whole = split_batches(np.flatnonzero(expected_status == aligned), batch_reads, min_batches, min_batch_reads)
        assert sizes == [len(b) for b in whole]
    else:  # full batches while at least `lookahead` reads were left, then the rest split
        n_full = (n_alignable - lookahead) // batch_reads + 1
        assert sizes[:n_full] == [batch_reads] * n_full
        rest = split_batches(np.arange(n_alignable - n_full * batch_reads), batch_reads, min_batches, min_batch_reads)
        assert sizes[n_full:] == [len(b) for b in rest]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2_000), st.integers(1, 300), st.lists(st.integers(0, 2_000), max_size=5),
       st.lists(st.integers(0, 2_000), max_size=5), st.integers(0, 2**32 - 1))
def test_cuts_do_not_depend_on_how_the_file_is_parsed(n_reads, batch_reads, cuts_a, cuts_b, seed):
    lengths = np.random.default_rng(seed).choice([0, 2, 4, 7], size=n_reads)
    # the whole file at once, against other chunks whose second part arrives only after the first cut
    at_once, _ = _stretches(_chunks(lengths, cuts_a), batch_reads, 2, 5)
    gate = threading.Event()
    chunks = _chunks(lengths, cuts_b)
    threading.Timer(0.01, gate.set).start()
    late, _ = _stretches(chunks, batch_reads, 2, 5, gate)
    assert [(f, len(n), a) for f, n, _, a in at_once] == [(f, len(n), a) for f, n, _, a in late]


def test_split_batches_are_equal_and_keep_the_minimum():
    alignable = np.arange(42_000)
    batches = split_batches(alignable, 12_500, MIN_BATCHES, MIN_BATCH_READS)
    assert [len(b) for b in batches] == [5_250] * 8
    assert [len(b) for b in split_batches(np.arange(3_000), 12_500, MIN_BATCHES, MIN_BATCH_READS)] == [3_000]
    assert split_batches(np.arange(0), 12_500, MIN_BATCHES, MIN_BATCH_READS) == []


def test_a_parse_error_reaches_the_reader_of_the_stretches_after_the_good_ones():
    lengths = np.full(100, 3)
    good = _chunks(lengths, [50])

    def source():
        yield from good
        raise InputError("reads.fa", "bad residue", where="line 201")

    stream = ReadStream(source(), DNA, N_COLUMNS).start()
    handed: list = []
    with pytest.raises(InputError, match="bad residue"):
        handed.extend(stream.stretches(10, 2, 1))  # keeps the stretches handed out before the error
    stream.close()
    # full stretches of the good reads (at most 9: cut while 20 were left), then the error
    assert [(s.first, len(s.alignable)) for s in handed] == [(10 * i, 10) for i in range(len(handed))]
    assert len(handed) <= 9


def test_the_device_choice_waits_only_for_the_residues_it_needs():
    gate = threading.Event()
    chunks = _chunks(np.full(1_000, 5), [10])

    def source():
        yield chunks[0]
        gate.wait()
        yield from chunks[1:]

    stream = ReadStream(source(), DNA, N_COLUMNS).start()
    assert stream.wait_for_residues(40) == (50, False)  # the first 10 reads of 5 residues are enough
    gate.set()
    assert stream.wait_for_residues(10**9) == (5_000, True)
    stream.close()


@pytest.mark.slow
def test_streamed_batches_give_one_result_on_every_device(opencl_device, monkeypatch, tmp_path):
    """The bundled example in batches of 7 reads (cut while the reads are parsed, the last ones
    split at the end) on cpu, gpu (PoCL in CI) and hybrid, against one batch on the CPU: every
    /reads dataset identical, and the outlier null (asked for batch by batch as new read lengths
    come, or at once) too."""
    from pathlib import Path

    from papara_py.engine import opencl_devices
    from papara_py.io.run_file import RunFile
    from papara_py.run.config import RunConfig
    from papara_py.run.runner import run

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    example = Path(__file__).resolve().parents[2] / "data" / "example"
    results, nulls = {}, {}
    for device, batch_reads in (("cpu", 12_500), ("cpu", 7), ("gpu", 7), ("hybrid", 7)):
        out = tmp_path / f"{device}-{batch_reads}.h5"
        run(RunConfig(tree=str(example / "tree.nwk"), alignment=str(example / "ref.phy"),
                      reads=str(example / "reads.fa"), output=str(out), threads=2, batch_reads=batch_reads,
                      device=device))
        with RunFile(out) as handle:
            results[device, batch_reads] = {path: dataset[()] for path, dataset in handle.read_datasets().items()}
            nulls[device, batch_reads] = handle.record["outlier_null"]
            if batch_reads == 7:  # 200 reads: full batches of 7 while 56 were left, then 8 equal ones
                assert handle.record["traceback"]["batches"]["gpu" if device != "cpu" else "cpu"] == 29
    whole = results["cpu", 12_500]
    for key, datasets in results.items():
        assert datasets.keys() == whole.keys()
        for path, values in datasets.items():
            np.testing.assert_array_equal(values, whole[path], f"{key}: {path}")
        assert nulls[key] == nulls["cpu", 12_500], key
    assert nulls["cpu", 12_500]["lengths"] == [64, 128, 256]  # the example's reads: 67-142 residues


def test_batch_stages_hold_one_batch_more_than_their_traceback_threads():
    """BatchStages keeps at least tracing_threads + 1 batches between scoring and the file, so
    every traceback thread (two per GPU) can hold a batch while `submit` returns at once; the
    writer still gets them in order."""
    import threading

    from papara_py.run.stages import BatchStages

    release, written = threading.Event(), []
    stages = BatchStages(lambda batch: (release.wait(10), batch)[1:], written.append, depth=1, tracing_threads=3)
    submitter = threading.Thread(target=lambda: [stages.submit(batch) for batch in range(3)])
    submitter.start()
    submitter.join(5)
    returned = not submitter.is_alive()  # with depth 1, the second submit would wait for the first batch
    release.set()
    submitter.join()
    stages.drain()
    stages.close(failed=False)
    assert returned and written == [0, 1, 2]


def test_a_failed_close_tells_the_batches_being_traced_back_to_stop():
    """BatchStages.close(failed=True) (a stopped run) sets `stopping`, which the traceback hands
    to the model (model/decode.decode_batch's stop), so the close waits for a slice of a batch,
    not for every batch in hand; a close after success leaves it unset."""
    import threading
    import time

    from papara_py.run.stages import BatchStages

    started = threading.Event()
    stages = BatchStages(lambda batch: (started.set(), stages.stopping.wait(30))[1:], lambda *_: None, depth=2)
    stages.submit(0)
    assert started.wait(10)
    t0 = time.perf_counter()
    stages.close(failed=True)
    assert stages.stopping.is_set() and time.perf_counter() - t0 < 10
    finished = BatchStages(lambda batch: (batch,), lambda *_: None, depth=2)
    finished.submit(0)
    finished.drain()
    finished.close(failed=False)
    assert not finished.stopping.is_set()
