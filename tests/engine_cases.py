"""The engine's test cases, shared by the engine's tests (tests/engine) and the protein model's
(tests/model/test_protein.py): random profiles and reads, the reference's candidate lists, a GPU
consumer on the tests' OpenCL device, and one batch through the engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from papara_py.engine.consumers import GpuChunkScorer
from papara_py.engine.read_batch import ReadBatch
from papara_py.engine.scheduler import Engine
from papara_py.model.reference_scorer import score_matrix_reference

K = 4


def random_case(seed: int, n_edges: int = 45, m: int = 60, n_reads: int = 9):
    rng = np.random.default_rng(seed)
    states = rng.choice(np.array([1, 2, 4, 8, 3, 15], np.uint8), size=(n_edges, m))
    cgap = (rng.random((n_edges, m)) < 0.2).astype(np.uint8) << 4
    profiles = (states | cgap).astype(np.uint8)
    reads = [rng.choice(np.array([1, 2, 4, 8], np.uint8), size=int(rng.integers(1, m))) for _ in range(n_reads)]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    return profiles, reads, ReadBatch(np.concatenate(reads), offsets)


def expected(profiles, reads, params, k=K, costs=None):
    matrix = score_matrix_reference(reads, profiles, params, costs)
    order = [sorted(range(matrix.shape[1]), key=lambda e: (matrix[q, e], e))[:k] for q in range(len(reads))]
    edges = np.array(order, np.int32)
    return np.take_along_axis(matrix, edges, axis=1).astype(np.int32), edges


def gpu(opencl_device, chunk: int = 2):
    from papara_py.engine.gpu import GpuScorer

    return GpuChunkScorer(GpuScorer(opencl_device), "gpu-0:test", chunk)


@dataclass
class OneBatch:
    candidates: object
    consumers: list


def run_engine(build_profiles, n_edges, width, batch, params, k, use_cpu, gpus, options,
               costs=None) -> OneBatch:
    """One batch through the engine: its candidates and the consumers' records."""
    n_columns = build_profiles(np.arange(1)).shape[1]
    engine = Engine(build_profiles, n_edges, n_columns, width, params, k, use_cpu, gpus, options,
                    costs=costs)
    [(_, candidates)] = list(engine.run([batch]))
    return OneBatch(candidates, engine.consumers)


def run(profiles, batch, params, use_cpu, gpus, options, width=8, costs=None):
    return run_engine(lambda ids: profiles[ids], profiles.shape[0], width, batch, params, K,
                      use_cpu, gpus, options, costs)
