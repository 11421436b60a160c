"""How the main job cuts the alignable reads into batches and the input into written stretches."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.pipeline import (
    MIN_BATCH_READS,
    MIN_BATCHES,
    input_stretches,
    split_batches,
)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40_000), st.integers(1, 30_000), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_batches_cover_the_alignable_reads_in_order_and_stretches_cover_the_input(n_reads, batch_reads, gaps, seed):
    # alignable reads: a sorted subset of the input rows (unaligned rows are the gaps between)
    rng = np.random.default_rng(seed)
    alignable = np.sort(rng.choice(n_reads + gaps, size=n_reads, replace=False)).astype(np.int64)
    batches = split_batches(alignable, batch_reads)
    joined = np.concatenate(batches) if batches else np.empty(0, np.int64)
    assert np.array_equal(joined, alignable)
    assert all(0 < len(b) <= batch_reads for b in batches)
    if n_reads:
        sizes = [len(b) for b in batches]
        assert max(sizes) - min(sizes) <= 1  # equal batches
        if n_reads >= MIN_BATCHES * MIN_BATCH_READS:
            assert len(batches) >= MIN_BATCHES
        # no batch smaller than MIN_BATCH_READS unless --batch-reads itself asks for smaller ones
        fewest = -(-n_reads // batch_reads)
        assert len(batches) == fewest or min(sizes) >= MIN_BATCH_READS
    # the stretches written with the batches cover every input row once, in order
    total = n_reads + gaps
    stretches = input_stretches(batches, total)
    if batches:
        assert stretches[0][0] == 0 and stretches[-1][1] == total
        assert all(a[1] == b[0] for a, b in zip(stretches, stretches[1:]))
        assert all(lo <= batch[0] and batch[-1] < hi for (lo, hi), batch in zip(stretches, batches))
