"""Random profiles and reads for the kernels' tests (the GPU posterior and others)."""

from __future__ import annotations

import numpy as np

from papara_py.phylo.encoding import DNA


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


