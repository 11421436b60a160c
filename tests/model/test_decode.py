"""model/decode.decode_batch, the runner's one call per scored batch: how a stopped run ends it."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import numpy as np
import pytest
from random_data import random_profiles, random_reads
from stop_after import StopAfter

from papara_py.io.reads import ReadSet
from papara_py.model.decode import TRACEBACK_SLICE, CandidateLists, decode_batch
from papara_py.model.params import ScoringParams
from papara_py.model.posterior import DECODE_SLICE
from papara_py.phylo.encoding import DNA


class Profiles:
    """An EdgeProfiles of fixed random rows."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    @property
    def n_edges(self) -> int:
        return self.rows.shape[0]

    def profiles(self, edge_ids: np.ndarray) -> np.ndarray:
        return self.rows[edge_ids]


@pytest.mark.parametrize("preset, slice_reads", [("paper", TRACEBACK_SLICE), ("weighted", DECODE_SLICE)])
def test_a_stop_set_during_a_batch_ends_it_at_the_next_slice(preset, slice_reads):
    """A stop set while a batch is decoded (a stopped run: run/stages.BatchStages.close) lets the
    slice in hand finish and starts no other: the batch raises CancelledError after one slice of
    its three, on the T = 0 traceback (paper) and on the posterior step (weighted) alike."""
    rng = np.random.default_rng(7)
    m, count = 40, 2 * slice_reads + 5
    rows = random_profiles(rng, 6, m, DNA)
    _, residues, offsets = random_reads(rng, rng.integers(8, 20, count), DNA)
    reads = ReadSet([f"r{q}" for q in range(count)], residues, offsets)
    edges = np.stack([rng.permutation(6)[:3] for _ in range(count)]).astype(np.int32)
    candidates = CandidateLists(np.zeros_like(edges), edges)
    arguments = (reads, np.arange(count), np.zeros(count, bool), candidates, Profiles(rows),
                 ScoringParams.preset(preset), None, 1)
    stop = StopAfter(1)
    with pytest.raises(CancelledError):
        decode_batch(*arguments, stop=stop)
    assert stop.passed == 1  # the first slice decoded, no other started
    set_before = threading.Event()
    set_before.set()
    with pytest.raises(CancelledError):  # on several threads too
        decode_batch(*arguments[:-1], 2, stop=set_before)
