"""Random profiles and reads for the kernels' tests (the GPU posterior and others)."""

from __future__ import annotations

import numpy as np

from papara_py.phylo.encoding import DNA, Alphabet


def protein_states(rng: np.random.Generator, shape) -> np.ndarray:
    """uint32 amino-acid state sets: mostly one of the 20 (mismatches are common), else any set,
    the empty one and all 20 included."""
    single = np.left_shift(1, rng.integers(0, 20, size=shape)).astype(np.uint32)
    return np.where(rng.random(shape) < 0.7, single, rng.integers(0, 1 << 20, size=shape, endpoint=True,
                                                                  dtype=np.uint32) & np.uint32(0xFFFFF))


def random_profiles(rng: np.random.Generator, n_edges: int, m: int, alphabet: Alphabet = DNA) -> np.ndarray:
    """[n_edges, m] profile elements of `alphabet`: random state sets (the empty and the full set
    included) with CGAP in runs."""
    if alphabet is DNA:
        states = rng.integers(0, 16, size=(n_edges, m), dtype=np.uint8)
        plain = rng.random((n_edges, m)) < 0.6
        states[plain] = rng.choice(np.array([1, 2, 4, 8], np.uint8), size=int(plain.sum()))
    else:
        states = protein_states(rng, (n_edges, m))
    run_starts = rng.random((n_edges, m)) < 0.15
    run_lengths = rng.integers(1, 6, size=(n_edges, m))
    cgap = np.zeros((n_edges, m), bool)
    for e, i in zip(*np.nonzero(run_starts)):
        cgap[e, i:i + run_lengths[e, i]] = True
    elements = states | np.where(cgap, alphabet.cgap_bit, 0).astype(alphabet.dtype)
    if alphabet.stores_near_states:  # random near-state fields (DESIGN 3; protein's follow from the set)
        elements |= (rng.integers(0, 8, size=(n_edges, m)) << alphabet.near_shift).astype(alphabet.dtype)
    return elements


def random_reads(rng: np.random.Generator, lengths, alphabet):
    """(codes, residues, offsets): random residues of the alphabet's letters, encoded."""
    letters = np.frombuffer(b"ACGTRYKMSWBDHVN" if alphabet is DNA else b"ACDEFGHIKLMNPQRSTVWYBZJX", np.uint8)
    residues = letters[rng.integers(0, letters.size, int(sum(lengths)))]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return alphabet.read_code[residues], residues, offsets


