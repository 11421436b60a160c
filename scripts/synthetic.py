"""Random scoring-engine inputs for the benchmark scripts (bench_cpu, bench_gpu, bench_kernel_variants).

Profile elements like real ones (mostly single states, some ambiguity sets, CGAP in runs, DNA's
near-state fields), reads, a column cost table, the engine's chunks of blocks, and the loop that
times a GPU scorer over those chunks. One home so that the CPU, GPU and variant benchmarks time
the same kind of data. Random data has no alignment rows, so the column cost table is random
within the column weight's bound. tests/random_data.py is the tests' generator: it aims at edge
cases (the empty and the full state set) rather than at realistic inputs.

Needs numpy and papara_py's pure-numpy modules only: the scripts that import it set numba's and
OpenCL's environment first.
"""

from __future__ import annotations

import numpy as np

from papara_py.engine.layout import block_count, make_block
from papara_py.model.column_costs import ColumnCosts, cost_codes
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import DNA, Alphabet

#: Edges per block, as the engine lays them out (DESIGN 6).
BLOCK_WIDTH = 16
#: Blocks per GPU call in the engine (DESIGN 6).
CHUNK_BLOCKS = 40


def single_states(alphabet: Alphabet) -> np.ndarray:
    """The read codes of `alphabet`'s single states (no ambiguity sets)."""
    return alphabet.read_code[np.frombuffer(alphabet.letters.encode(), np.uint8)]


def random_profiles(rng: np.random.Generator, n_edges: int, m: int, alphabet: Alphabet = DNA) -> np.ndarray:
    """[n_edges, m] elements like real ones: mostly single states, some ambiguity, CGAP in runs of
    eight columns, DNA's near fields in 40% of the columns (protein's follow from the set)."""
    single = single_states(alphabet)
    extra = alphabet.read_code[np.frombuffer(("RYN" if alphabet is DNA else "BZX").encode(), np.uint8)]
    states = rng.choice(np.concatenate([single, single, extra]), size=(n_edges, m))
    cgap = np.repeat(rng.random((n_edges, -(-m // 8))) < 0.3, 8, axis=1)[:, :m]
    elements = states | (cgap * alphabet.dtype.type(alphabet.cgap_bit))
    if alphabet.stores_near_states:
        near = np.where(rng.random((n_edges, m)) < 0.4, rng.integers(1, 8, size=(n_edges, m)), 0)
        elements |= (near << alphabet.near_shift).astype(alphabet.dtype)
    return elements.astype(alphabet.dtype)


def read_lengths(rng: np.random.Generator, n_reads: int, read_len: int | tuple[float, float], m: int) -> np.ndarray:
    """`n_reads` lengths: all `read_len`, or normal (mean, SD) clipped to 40 .. m - 1."""
    if np.isscalar(read_len):
        return np.full(n_reads, read_len)
    return np.clip(rng.normal(*read_len, size=n_reads), 40, m - 1).astype(np.int64)


def random_reads(rng: np.random.Generator, lengths: np.ndarray, alphabet: Alphabet = DNA, ambiguous: float = 0.0,
                 codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(codes, offsets): reads of single states with ambiguity codes at rate `ambiguous` (DNA: the
    11 IUPAC sets; protein: B, Z, J, X), or drawn from `codes` (a column cost table's rows)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    if codes is not None:
        return rng.choice(codes, size=total).astype(alphabet.dtype), offsets
    out = rng.choice(single_states(alphabet), size=total)
    if ambiguous:
        letters = "RYSWKMBDHVN" if alphabet is DNA else "BZJX"
        odd = rng.random(total) < ambiguous
        out[odd] = rng.choice(alphabet.read_code[np.frombuffer(letters.encode(), np.uint8)], size=int(odd.sum()))
    return out.astype(alphabet.dtype), offsets


def random_costs(rng: np.random.Generator, m: int, params: ScoringParams, alphabet: Alphabet) -> ColumnCosts | None:
    """A column cost table of `alphabet`'s read codes x m columns, 0 up to `params`' bound, or None
    where the column weight is 0."""
    if not params.column_weight:
        return None
    codes = cost_codes(alphabet)
    table = rng.integers(0, params.column_cost_bound() + 1, (codes.size, m)).astype(np.uint8)
    return ColumnCosts(table=table, codes=codes)


def as_chunks(profiles: np.ndarray, chunk_blocks: int = CHUNK_BLOCKS) -> list[tuple[int, int, np.ndarray]]:
    """(first_edge, n_edges, [nb, m, W] blocks) per engine call."""
    n_edges = profiles.shape[0]
    blocks = [make_block(b, b * BLOCK_WIDTH, profiles[b * BLOCK_WIDTH:(b + 1) * BLOCK_WIDTH], BLOCK_WIDTH)
              for b in range(block_count(n_edges, BLOCK_WIDTH))]
    out = []
    for start in range(0, len(blocks), chunk_blocks):
        group = blocks[start:start + chunk_blocks]
        out.append((group[0].first_edge, sum(b.n_edges for b in group), np.stack([b.lanes for b in group])))
    return out


def time_chunks(scorer, chunks: list[tuple[int, int, np.ndarray]], codes: np.ndarray, offsets: np.ndarray,
                params: ScoringParams, repeat: int, costs: ColumnCosts | None,
                k: int = 4) -> tuple[list[float], list[float]]:
    """(wall seconds, kernel seconds) of each of `repeat` passes of `scorer.score_chunk` (an
    engine.gpu.GpuScorer) over `chunks`, after a warm-up pass (builds, first allocations)."""
    walls, kernels = [], []
    for run in range(repeat + 1):
        wall = kernel = 0.0
        for first_edge, chunk_edges, blocks in chunks:
            scorer.score_chunk(blocks, first_edge, chunk_edges, codes, offsets, params, k, costs=costs)
            wall += scorer.stats.wall_seconds
            kernel += scorer.stats.kernel_seconds
        if run:
            walls.append(wall)
            kernels.append(kernel)
    return walls, kernels
