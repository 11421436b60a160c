"""The device traceback (engine/gpu_trace.py, kernels/band_trace.cl) against the host traceback.

`GpuTracer.align_many` must give `model.traceback.align_many`'s scores, start columns, CIGARs and
rows bit for bit (the host traceback is itself held against DESIGN 5 spelled out, test_scoring.py):
random reads of every length 1..m-1 against random profiles with CGAP runs, ambiguous states and
near-state fields, random penalties (near_mismatch below mismatch and equal to it) and band margins
(0: DESIGN 4's band; 1-3: paths leaving it at the excursion cost, DESIGN 5), DNA and
protein (with and without column family residues, with and without column profile costs),
launches split by a small memory budget. Runs on the OpenCL device of the kernel tests (PoCL in
CI; the H100 through scripts/bench_gpu.py-style device runs).
"""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cpu_kernel import random_column_costs

from papara_py.model.column_costs import column_costs
from papara_py.model.params import ScoringParams
from papara_py.model.traceback import align_many
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.phylo.residues import reference_residues

pytest.importorskip("pyopencl")
from papara_py.engine.gpu_trace import GpuTracer  # needs pyopencl


@pytest.fixture(scope="module")
def tracers(opencl_device) -> dict[int, GpuTracer]:
    """Tracers by launch budget: one launch per call, and a few hundred bytes (many launches)."""
    return {budget: GpuTracer(opencl_device, memory_bytes=budget) for budget in (1 << 26, 400)}


def random_profiles(rng: np.random.Generator, count: int, m: int, alphabet) -> np.ndarray:
    """[count, m] elements: plain and ambiguous state sets, CGAP in runs, random near fields."""
    if alphabet is DNA:
        states = rng.integers(0, 16, size=(count, m)).astype(np.uint8)
        plain = rng.random((count, m)) < 0.6
        states[plain] = rng.choice(np.array([1, 2, 4, 8], np.uint8), size=int(plain.sum()))
        states |= (rng.integers(0, 8, size=(count, m)) << DNA.near_shift).astype(np.uint8)
    else:
        states = np.left_shift(1, rng.integers(0, 20, size=(count, m))).astype(np.uint32)
        wide = rng.random((count, m)) < 0.3
        states[wide] = rng.integers(0, 1 << 20, size=int(wide.sum()), dtype=np.uint32)
    cgap = np.zeros((count, m), bool)
    for e, i in zip(*np.nonzero(rng.random((count, m)) < 0.15)):
        cgap[e, i:i + int(rng.integers(1, 6))] = True
    return states | np.where(cgap, alphabet.cgap_bit, 0).astype(alphabet.dtype)


def random_reads(rng: np.random.Generator, lengths, alphabet):
    """(codes, residues, offsets): random residues of the alphabet's letters, encoded."""
    letters = np.frombuffer(b"ACGTRYKMSWBDHVN" if alphabet is DNA else b"ACDEFGHIKLMNPQRSTVWYBZJX", np.uint8)
    residues = letters[rng.integers(0, letters.size, int(sum(lengths)))]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return alphabet.read_code[residues], residues, offsets


def assert_same(tracer, codes, residues, offsets, slots, profiles, params, family=None, costs=None,
                bonus=None) -> None:
    expected = align_many(codes, residues, offsets, slots, profiles, params, family, costs=costs, bonus=bonus)
    got = tracer.align_many(codes, residues, offsets, slots, profiles, params, family, costs, bonus=bonus)
    np.testing.assert_array_equal(got[0], expected[0], "scores")
    np.testing.assert_array_equal(got[1], expected[1], "start columns")
    assert got[2] == expected[2], "CIGARs"
    np.testing.assert_array_equal(got[3], expected[3], "aligned rows")


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(2, 40), reads=st.integers(1, 24),
       values=st.lists(st.sampled_from([0, 1, 2, 3, 5, 17]), min_size=5, max_size=5),
       near=st.booleans(), protein=st.booleans(), small_launches=st.booleans(), margin=st.integers(0, 3))
def test_device_traceback_equals_host_traceback(tracers, seed, m, reads, values, near, protein, small_launches,
                                                margin):
    rng = np.random.default_rng(seed)
    alphabet = PROTEIN if protein else DNA
    params = ScoringParams(*values, near_mismatch=values[0] // 2 if near else values[0], band_margin=margin)
    lengths = rng.integers(1, m, size=reads)  # 1 .. m-1: bands of width m down to 2
    codes, residues, offsets = random_reads(rng, lengths, alphabet)
    profiles = random_profiles(rng, int(rng.integers(1, 5)), m, alphabet)
    slots = rng.integers(0, profiles.shape[0], size=reads)
    # protein: the columns' family residues (DESIGN 3) in half the cases
    family = random_profiles(rng, 1, m, alphabet)[0] & alphabet.state_mask if protein and seed % 2 else None
    assert_same(tracers[400 if small_launches else 1 << 26], codes, residues, offsets, slots, profiles, params,
                family)


@pytest.mark.parametrize("near", [True, False])
def test_device_traceback_with_column_costs_equals_host_traceback(tracers, near):
    """-DCOLUMN_COSTS=1: costs 0..39 on each diagonal step, every protein read letter (B, Z, J, X
    included), reads of 1 and 5..40 residues (stripes of 8 with every remainder), near states
    cheaper than a mismatch (with the columns' family residues) or not, in one launch and in many."""
    rng = np.random.default_rng(41 + near)
    m = 77
    lengths = np.r_[1, rng.integers(5, 41, size=19)]
    codes, residues, offsets = random_reads(rng, lengths, PROTEIN)
    profiles = random_profiles(rng, 3, m, PROTEIN)
    slots = rng.integers(0, 3, size=lengths.size)
    family = random_profiles(rng, 1, m, PROTEIN)[0] & PROTEIN.state_mask if near else None
    params = ScoringParams(3, 6, 5, 3, 16, near_mismatch=1 if near else 3, column_weight=5.0)
    costs = random_column_costs(rng, m, 39)
    assert costs.largest <= params.column_cost_bound()
    for tracer in tracers.values():
        assert_same(tracer, codes, residues, offsets, slots, profiles, params, family, costs)


@pytest.mark.parametrize("costs_on", [True, False])
def test_device_traceback_with_the_nearest_bonus_equals_host_traceback(tracers, costs_on):
    """-DNEAREST_BONUS=1 (with and without column costs): each read's two nearest rows, drawn from
    a few reference rows of amino acids, ambiguity codes and gaps (the reads' letters too), or
    none (-1), take 0..7 off its cells identical to either and open its gaps free where either has
    one; reads of 1 and 5..40 residues, in one launch and in many; the band margin 0 and 1."""
    rng = np.random.default_rng(7 + costs_on)
    m = 61
    lengths = np.r_[1, rng.integers(5, 41, size=23)]
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZJXarnd", np.uint8)
    residues = letters[rng.integers(0, letters.size, int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    codes = PROTEIN.read_code[residues]
    tip_rows = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBX-", np.uint8)[rng.integers(0, 23, size=(5, m))]
    profiles = random_profiles(rng, 3, m, PROTEIN)
    slots = rng.integers(0, 3, size=lengths.size)
    costs = column_costs(tip_rows, PROTEIN, 1.0) if costs_on else None
    for amount, margin in itertools.product((0, 2, 7), (0, 1)):
        params = ScoringParams(3, 6, 5, 3, 16, near_mismatch=2, column_weight=1.0 if costs_on else 0.0,
                               band_margin=margin)
        bonus = (reference_residues(tip_rows, PROTEIN), rng.integers(-1, 5, size=(lengths.size, 2)), amount)
        for tracer in tracers.values():
            assert_same(tracer, codes, residues, offsets, slots, profiles, params, None, costs, bonus)


def test_device_traceback_refuses_read_codes_without_a_cost_row(tracers):
    """A read code the column cost table has no row for raises ValueError, as the host traceback
    does (the pipeline's GPU tracing then hands the batch to the CPU, which raises it too)."""
    rng = np.random.default_rng(5)
    codes, residues, offsets = random_reads(rng, [6, 9], PROTEIN)
    codes[8] = 0b11  # {A, R}: no letter reads as this set
    profiles = random_profiles(rng, 1, 30, PROTEIN)
    with pytest.raises(ValueError, match="no row in the column cost table"):
        tracers[400].align_many(codes, residues, offsets, np.zeros(2, np.int64), profiles,
                                ScoringParams(3, 6, 5, 3, 16, column_weight=5.0), None, random_column_costs(rng, 30, 39))


@pytest.mark.parametrize("preset", ["weighted", "robust", "protein"])
def test_device_traceback_on_marker_gene_shapes(tracers, preset):
    """Hundreds of reads of 60-150 residues against 900 columns, in several launches (protein's
    preset with its band margin)."""
    rng = np.random.default_rng(7)
    alphabet = PROTEIN if preset == "protein" else DNA
    lengths = rng.integers(60, 151, size=300)
    codes, residues, offsets = random_reads(rng, lengths, alphabet)
    profiles = random_profiles(rng, 12, 900, alphabet)
    tracer = GpuTracer(tracers[400].device, memory_bytes=3_000_000)
    slots = rng.integers(0, 12, size=300)
    params = ScoringParams.preset(preset)
    launches = tracer._launches(lengths, slots, 900, params.band_margin)
    assert len(launches) > 1
    order = np.concatenate(launches)  # longest first, and by edge among reads of one length
    assert sorted(order.tolist()) == list(range(300))
    assert all((lengths[a], -slots[a]) >= (lengths[b], -slots[b]) for a, b in itertools.pairwise(order))
    assert_same(tracer, codes, residues, offsets, slots, profiles, params)
    assert tracer.device_cells == int((lengths * (900 - lengths + 1)).sum())


def test_device_traceback_of_no_reads(tracers):
    scores, starts, cigars, rows = tracers[400].align_many(
        np.empty(0, np.uint8), np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64),
        np.ones((1, 10), np.uint8), ScoringParams.preset("weighted"))
    assert (scores.size, starts.size, cigars, rows.shape) == (0, 0, [], (0, 10))


def test_device_traceback_refuses_what_int32_cannot_hold(tracers):
    """Scores that could reach the kernel's int range are refused (the pipeline then traces back
    on the CPU), never computed wrong."""
    params = ScoringParams(1 << 22, 1, 1, 1, 1)
    codes, residues, offsets = random_reads(np.random.default_rng(1), [400], DNA)
    with pytest.raises(ValueError, match="32-bit"):
        tracers[400].align_many(codes, residues, offsets, np.zeros(1, np.int64), np.ones((1, 500), np.uint8), params)


def example_run(tmp_path, name: str, example: str = "example", **options) -> tuple[dict, dict]:
    """A bundled example (data/example, or data/protein) through the main job; (run record, every
    /reads dataset's values)."""
    from pathlib import Path

    from papara_py.io.run_file import RunFile
    from papara_py.run.config import RunConfig
    from papara_py.run.runner import run

    example = Path(__file__).resolve().parents[1] / "data" / example
    out = tmp_path / name
    run(RunConfig(tree=str(example / "tree.nwk"), alignment=str(example / "ref.phy"),
                  reads=str(example / "reads.fa"), output=str(out), threads=2, batch_reads=64,
                  **options))
    with RunFile(out) as handle:
        return handle.record, {path: dataset[()] for path, dataset in handle.read_datasets().items()}


def assert_same_reads(one: dict, other: dict) -> None:
    assert one.keys() == other.keys()
    for path, values in one.items():
        np.testing.assert_array_equal(values, other[path], path)


def test_a_gpu_run_traces_back_on_the_gpu_with_the_cpus_results(opencl_device, monkeypatch, tmp_path):
    """--device gpu: every batch traced back on the device (the run record says so), every /reads
    dataset equal to a --traceback cpu run's and to a CPU-only run's."""
    from papara_py.engine import opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    gpu_record, on_gpu = example_run(tmp_path, "gpu.h5", device="gpu")
    aligned = int((on_gpu["status"] == b"aligned").sum())  # DNA: no vote window, one alignment a read
    assert gpu_record["traceback"] == {"device": opencl_device.name, "batches": {"gpu": 4, "cpu": 0},
                                       "alignments": aligned, "voted": 0, "nearest": 0, "relocated": 0,
                                       "second": 0, "profile": 0}
    cpu_record, on_cpu = example_run(tmp_path, "cpu.h5", device="gpu", traceback="cpu")
    assert cpu_record["traceback"] == {"device": "cpu", "batches": {"gpu": 0, "cpu": 4}, "alignments": aligned,
                                       "voted": 0, "nearest": 0, "relocated": 0, "second": 0, "profile": 0}
    assert_same_reads(on_gpu, on_cpu)
    _, cpu_only = example_run(tmp_path, "cpu-only.h5", device="cpu")
    assert_same_reads(on_gpu, cpu_only)


def test_a_gpu_traceback_of_protein_reads_votes_as_the_cpu(opencl_device, monkeypatch, tmp_path):
    """data/protein with its preset, whose vote window traces reads back on several candidate edges
    (model/votes.py), most of them again with their nearest sequence's bonus
    (model/nearest.py): every /reads dataset of a GPU traceback equals a CPU-only run's."""
    from papara_py.engine import opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    record, on_gpu = example_run(tmp_path, "gpu.h5", "protein", device="gpu")
    traceback = record["traceback"]
    assert record["parameters"]["vote_window"] > 0 and traceback["batches"]["cpu"] == 0
    assert traceback["batches"]["gpu"] > 0 and traceback["alignments"] > 120 and traceback["voted"] > 0
    assert record["parameters"]["nearest_bonus"] > 0 and traceback["nearest"] > 0
    _, cpu_only = example_run(tmp_path, "cpu-only.h5", "protein", device="cpu")
    assert_same_reads(on_gpu, cpu_only)


def test_a_failing_gpu_traceback_moves_to_the_cpu_with_a_notice(opencl_device, monkeypatch, tmp_path, caplog):
    """A device fault in the traceback (here: out of resources on the second batch) is one notice;
    that batch and the rest are traced back on the CPU, with the same results."""
    caplog.set_level(logging.INFO, logger="papara_py")
    import pyopencl as cl

    from papara_py.engine import gpu_trace, opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device])
    _, expected = example_run(tmp_path, "cpu.h5", device="cpu")
    calls = []
    real = gpu_trace.GpuTracer.align_many

    def failing(self, *args, **options):
        calls.append(1)
        if len(calls) == 2:
            raise cl.MemoryError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        return real(self, *args, **options)

    monkeypatch.setattr(gpu_trace.GpuTracer, "align_many", failing)
    record, got = example_run(tmp_path, "gpu.h5", device="gpu")
    assert record["traceback"]["batches"] == {"gpu": 1, "cpu": 3} and len(calls) == 2
    assert "the GPU traceback failed (MemoryError" in caplog.text  # the run's notices: logging
    assert_same_reads(got, expected)


def test_two_gpus_share_the_traceback_and_survive_one_failing(opencl_device, monkeypatch, tmp_path, caplog):
    """With two GPUs (the test's OpenCL device twice) batches are traced back on both: the second
    batch goes to the other GPU whether or not the first is done. A fault on one GPU takes it out
    of the traceback (one notice; that batch on the CPU), the other traces back the rest; every
    /reads dataset equals a CPU-only run's."""
    caplog.set_level(logging.INFO, logger="papara_py")
    import pyopencl as cl

    from papara_py.engine import gpu_trace, opencl_devices

    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu": [opencl_device, opencl_device])
    _, expected = example_run(tmp_path, "cpu.h5", device="cpu")
    real = gpu_trace.GpuTracer.align_many
    calls: list[int] = []

    def spying(self, *args, **options):
        calls.append(id(self))
        return real(self, *args, **options)

    monkeypatch.setattr(gpu_trace.GpuTracer, "align_many", spying)
    record, got = example_run(tmp_path, "two.h5", device="gpu")
    assert record["traceback"] | {"alignments": 0} == {"device": f"{opencl_device.name}, {opencl_device.name}",
                                                       "batches": {"gpu": 4, "cpu": 0}, "alignments": 0, "voted": 0,
                                                       "nearest": 0, "relocated": 0, "second": 0,
                                                       "profile": 0}
    assert len(set(calls)) == 2 and calls[0] != calls[1]
    assert_same_reads(got, expected)

    calls.clear()

    def failing(self, *args, **options):
        calls.append(id(self))
        if len(calls) == 2:
            raise cl.MemoryError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        return real(self, *args, **options)

    monkeypatch.setattr(gpu_trace.GpuTracer, "align_many", failing)
    record, got = example_run(tmp_path, "one-fails.h5", device="gpu")
    assert record["traceback"]["batches"] == {"gpu": 3, "cpu": 1}
    assert set(calls[2:]) == {calls[0]} and calls[1] != calls[0]  # the failed GPU is given no more
    assert "tracing back the remaining reads on the other GPUs" in caplog.text
    assert_same_reads(got, expected)
