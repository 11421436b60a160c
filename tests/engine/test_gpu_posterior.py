"""The device's posterior step (engine/gpu_posterior.py, kernels/posterior.cl) against the
CPU's (model/posterior.py, itself held against brute force in test_posterior.py).

`GpuPosterior.decode_batch` must give `model.posterior.decode_batch`'s columns, posteriors,
edge weights and expected accuracies bit for bit: random reads and profiles (DNA with near-state
fields and CGAP runs, protein with column profile costs), empty candidate
slots, several temperatures and scales, launches split by a small memory budget; and the real
data sets' reads on their best edges. Runs on the OpenCL device of the kernel tests (PoCL in
CI).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from posterior_cases import TIES, example_each, pooled_matrices
from random_data import random_profiles, random_reads

from papara_py.io.alignment_input import match_tips, read_alignment
from papara_py.io.read_input import iter_reads
from papara_py.io.reads import ReadSet
from papara_py.io.tree_input import read_tree
from papara_py.model.column_costs import column_costs, kernel_costs
from papara_py.model.edge_emission import edge_column_costs
from papara_py.model.fixed_point import PosteriorTables
from papara_py.model.mea import mea_alignment
from papara_py.model.params import ScoringParams
from papara_py.model.posterior import Batch, decode_batch
from papara_py.model.reference_scorer import profile_near, score_one
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

pytestmark = pytest.mark.gpu
pytest.importorskip("pyopencl")
from papara_py.engine.gpu_posterior import GpuPosterior  # needs pyopencl

DATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def decoders(opencl_device) -> dict[str, GpuPosterior]:
    """Decoders by what splits a batch into launches: nothing (one launch per call), a budget of
    a few kilobytes, and a device whose largest buffer is a few kilobytes (many launches)."""
    small_buffers = dataclasses.replace(opencl_device, max_alloc_bytes=3000)
    return {"one": GpuPosterior(opencl_device, memory_bytes=1 << 26),
            "budget": GpuPosterior(opencl_device, memory_bytes=3000),
            "largest buffer": GpuPosterior(small_buffers, memory_bytes=1 << 26)}


def test_launches_keep_within_the_budget_and_the_largest_buffer(decoders):
    """Each launch's F and MEA rows fit the device's largest buffer and its work space the budget
    (one read a launch where a single read does not fit); every read is in one launch."""
    rng = np.random.default_rng(3)
    profiles = random_profiles(rng, 5, 30, DNA)
    codes, _, offsets = random_reads(rng, rng.integers(1, 30, 12), DNA)
    slots = np.stack([rng.permutation(5)[:3] for _ in range(12)])
    batch = Batch.of(codes, offsets, slots, None, profiles, None, ScoringParams.preset("weighted").as_array(), None,
                     PosteriorTables.build(1.0, 64))
    decoded = np.arange(12)
    for name, decoder in decoders.items():
        launches = decoder._launches(batch, decoded, 30)
        np.testing.assert_array_equal(np.sort(np.concatenate(launches)), decoded)
        for reads in launches:
            rows, width = batch.lengths[reads].max(), 30 + 1  # the MEA's rows: m + 1
            forward, mea = 4 * rows * width * 3 * reads.size, 8 * rows * width * reads.size
            if reads.size > 1:
                assert max(forward, mea) <= decoder.device.max_alloc_bytes and forward + 2 * mea <= decoder.memory_bytes
        assert (len(launches) == 1) == (name == "one")


def assert_same(cpu, gpu) -> None:
    for name, a, b in zip(("columns", "pp", "weights", "accuracy"), cpu, gpu):
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, name)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(2, 30), reads=st.integers(1, 20), k=st.integers(1, 4),
       values=st.lists(st.sampled_from([0, 1, 2, 3, 5, 17]), min_size=5, max_size=5), near=st.booleans(),
       protein=st.booleans(), with_costs=st.sampled_from(["none", "one table", "per edge"]),
       launches=st.sampled_from(["one", "budget", "largest buffer"]),
       temperature=st.sampled_from([0.3, 1.0, 2.5]), scale=st.sampled_from([64, 1024]),
       placement=st.sampled_from([None, 8.0]))
def test_device_posterior_equals_host_posterior(decoders, seed, m, reads, k, values, near, protein, with_costs,
                                                launches, temperature, scale, placement):
    rng = np.random.default_rng(seed)
    alphabet = PROTEIN if protein else DNA
    profiles = random_profiles(rng, 5, m, alphabet)
    lengths = rng.integers(1, m, reads) if m > 1 else np.ones(reads, int)
    codes, _, offsets = random_reads(rng, lengths, alphabet)
    slots = np.stack([rng.permutation(5)[:k] for _ in range(reads)])
    slots[rng.random(slots.shape) < 0.25] = -1
    costs = local = None
    if protein and with_costs != "none":
        letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYV-X", np.uint8)
        costs = column_costs(letters[rng.integers(0, letters.size, (4, m))], PROTEIN, 1.0)
        if with_costs == "per edge":  # each profile's own table (model/edge_emission.py), here random
            local = rng.integers(0, 10, (5, *costs.table.shape)).astype(np.uint8)
    params = ScoringParams(*values, near_mismatch=int(rng.integers(0, values[0] + 1)) if near else values[0],
                           column_weight=0.0 if costs is None else 1.0)
    tables = PosteriorTables.build(temperature, scale, placement_temperature=placement)
    args = (codes, offsets, slots, None, profiles, None, params.as_array(), costs, tables)
    cpu = decode_batch(*args, local=local)
    gpu = decoders[launches].decode_batch(*args, local=local)
    assert_same(cpu, gpu)


@settings(max_examples=150, deadline=None)
@given(pooled_matrices())
@example_each(TIES)
def test_device_mea_equals_host_mea_ties_included(decoders, pooled):
    """posterior_mea on chosen pooled posteriors (a few values, so its tie rule decides often)
    gives model.mea.mea's columns, posteriors and objective."""
    expected = mea_alignment(np.array(pooled, np.int32))
    got = decoders["one"].mea_alignment(np.array(pooled, np.int32))
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[2] == expected[2]


def real_batch(directory, reads: int, candidates: int = 5):
    """The first `reads` reads of a data set with their `candidates` best edges by Eq. 1 (the
    reference scorer over every edge, ties to the smaller edge: the engine's candidate lists),
    and every edge's own column costs (None for DNA), the profiles' `local`."""
    reference = directory / "ref.phy"
    alignment = read_alignment(reference)
    tree = EdgeTree.from_dendropy(read_tree(directory / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, str(reference)).tip_rows
    params = ScoringParams.preset(alignment.alphabet.default_preset)
    costs = column_costs(tip_rows, alignment.alphabet, params.column_weight)
    profiles = ProfileBuilder(tree, tip_rows, alignment.alphabet).profiles(np.arange(tree.n_edges))
    read_set = ReadSet.from_sequences(((r.name, r.sequence) for r, _ in zip(
        iter_reads(directory / "reads.fa", alphabet=alignment.alphabet), range(reads))), alignment.alphabet)
    residues, offsets = read_set.select_residues(np.arange(len(read_set.lengths)))
    codes = alignment.alphabet.read_code[residues]
    near = profile_near(profiles)
    p, table = params.as_array(), kernel_costs(costs)
    scores = np.array([[score_one(codes[offsets[q]:offsets[q + 1]], profiles[e], near[e], p, table)
                        for e in range(tree.n_edges)] for q in range(offsets.size - 1)])
    slots = np.argsort(scores, axis=1, kind="stable")[:, :candidates]
    edge_costs = edge_column_costs(tree, tip_rows, alignment.alphabet, params.column_weight)
    local = None if edge_costs is None else edge_costs.of_edges(np.arange(tree.n_edges))
    return codes, offsets, slots, np.take_along_axis(scores, slots, axis=1), profiles, near, p, costs, local


@pytest.mark.slow
@pytest.mark.parametrize("name, temperature, placement", [("example", 1.0, None), ("example", 0.75, 12.0),
                                                         ("protein", 1.0, None)])
def test_device_posterior_equals_host_posterior_on_real_data(decoders, name, temperature, placement):
    """data/example (DNA, the weighted preset's penalties, once at its temperatures) and data/protein
    (the protein preset: near states with family residues, column profile costs, each edge's own):
    24 reads each on their 5 best edges."""
    codes, offsets, slots, scores, profiles, near, p, costs, local = real_batch(DATA / name, 24)
    assert (local is not None) == (name == "protein")
    tables = PosteriorTables.build(temperature, placement_temperature=placement)
    args = (codes, offsets, slots, scores, profiles, near, p, costs, tables)
    cpu = decode_batch(*args, threads=2, local=local)
    assert_same(cpu, decoders["one"].decode_batch(*args, local=local))
    assert np.all(cpu[2].sum(axis=1) <= 1 << 15) and np.all(cpu[3] > 0.5)  # real reads fit their edges


def test_device_posterior_of_an_empty_batch(decoders):
    args = (np.zeros(0, np.uint8), np.array([0]), np.zeros((0, 3), np.int64), None, np.ones((2, 5), np.uint8), None,
            ScoringParams().as_array(), None, PosteriorTables.build(1.0))
    assert_same(decode_batch(*args), decoders["one"].decode_batch(*args))
