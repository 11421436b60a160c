"""Candidate merging is order-independent; the queue hands back, finishes and cancels correctly."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings, strategies as st

from papara_py.engine.layout import make_block
from papara_py.engine.queue import WorkItem, WorkQueue, launch_reads
from papara_py.engine.topk import Candidates


def expected_topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row's (score, edge) pairs lexicographically, plainly."""
    q, e = scores.shape
    best_s = np.full((q, k), -1, np.int64)
    best_e = np.full((q, k), -1, np.int64)
    for r in range(q):
        pairs = sorted((int(scores[r, c]), c) for c in range(e))[:k]
        for slot, (s, c) in enumerate(pairs):
            best_s[r, slot], best_e[r, slot] = s, c
    return best_s, best_e


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(1, 9), st.integers(1, 12), st.randoms(use_true_random=False))
def test_block_merges_in_any_order_give_the_sorted_topk(n_reads, n_edges, k, width, rnd):
    rng = np.random.default_rng(rnd.randrange(2**32))
    scores = rng.integers(0, 4, size=(n_reads, n_edges)).astype(np.int32)  # many ties
    blocks = [(first, min(width, n_edges - first)) for first in range(0, n_edges, width)]
    rnd.shuffle(blocks)
    halves = [Candidates.empty(n_reads, k), Candidates.empty(n_reads, k)]
    for i, (first, count) in enumerate(blocks):
        block_scores = np.full((n_reads, width), -7, np.int32)  # padding lanes must be ignored
        block_scores[:, :count] = scores[:, first:first + count]
        halves[i % 2].add_block(block_scores, first, count)
    merged = Candidates.empty(n_reads, k)
    merged.add(halves[1])
    merged.add(halves[0])
    want_s, want_e = expected_topk(scores, k)
    filled = want_e >= 0
    assert np.array_equal(merged.edge[filled], want_e[filled])
    assert np.array_equal(merged.score[filled], want_s[filled])
    assert np.all(merged.edge[~filled] == -1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.integers(1, 9), st.randoms(use_true_random=False))
def test_merging_overlapping_parts_keeps_each_pair_once(n_reads, n_edges, k, rnd):
    # a GPU launch over the union of handed-back read ranges scores some (read, edge) pairs a
    # second time; folding them again must not duplicate them in the lists
    rng = np.random.default_rng(rnd.randrange(2**32))
    scores = rng.integers(0, 4, size=(n_reads, n_edges)).astype(np.int32)
    merged = Candidates.empty(n_reads, k)
    for _ in range(rnd.randint(1, 6)):
        first_edge = rnd.randrange(n_edges)
        count = rnd.randint(1, n_edges - first_edge)
        first_read = rnd.randrange(n_reads)
        part = Candidates.empty(n_reads - first_read, k)
        part.add_block(scores[first_read:, first_edge:first_edge + count], first_edge, count)
        merged.add(part, first_read)
    merged.add_block(scores, 0, n_edges)  # every pair once more, so the union is all of them
    want_s, want_e = expected_topk(scores, k)
    filled = want_e >= 0
    assert np.array_equal(merged.edge[filled], want_e[filled])
    assert np.array_equal(merged.score[filled], want_s[filled])
    assert np.all(merged.edge[~filled] == -1)


def _item(index: int, batch: int = 0) -> WorkItem:
    return WorkItem(batch, make_block(index, index * 4, np.ones((4, 10), np.uint8), 4), cells=100, reads=(0, 10))


def test_queue_waits_for_blocks_in_flight_that_may_come_back():
    queue = WorkQueue(capacity=8)
    for i in range(3):
        queue.put(_item(i))
    queue.close()
    held = queue.take(2)
    assert [b.block.index for b in held] == [0, 1]
    assert [b.block.index for b in queue.take(5)] == [2]
    got: list[list[int]] = []
    waiter = threading.Thread(target=lambda: got.append([b.block.index for b in queue.take(5)]))
    waiter.start()
    waiter.join(timeout=0.2)
    assert waiter.is_alive(), "an idle consumer must wait while blocks are in flight"
    queue.put_back(held)  # the holder failed: its blocks go to the waiting consumer
    waiter.join(timeout=5)
    assert got == [[0, 1]]
    queue.finished(3)
    assert queue.take(1) == []


def test_queue_cancel_wakes_a_blocked_producer():
    queue = WorkQueue(capacity=1)
    queue.put(_item(0))
    result: list[bool] = []
    producer = threading.Thread(target=lambda: result.append(queue.put(_item(1))))
    producer.start()
    producer.join(timeout=0.2)
    assert producer.is_alive()
    queue.cancel()
    producer.join(timeout=5)
    assert result == [False]
    assert queue.take(1) == []


def test_queue_take_stops_at_a_batch_boundary_and_tracks_untaken_cells_per_batch():
    queue = WorkQueue(capacity=8)
    queue.plan(0, 2, 200)
    queue.plan(1, 3, 300)
    for i, batch in enumerate([0, 0, 1, 1, 1]):
        queue.put(_item(i, batch))
    assert [b.block.index for b in queue.take(4)] == [0, 1]
    assert (queue.untaken_cells(0), queue.untaken_cells(1)) == (0, 300)
    held = queue.take(4)
    assert [b.block.index for b in held] == [2, 3, 4]
    assert queue.untaken_cells(1) == 0
    queue.put_back(held[1:])
    assert (queue.untaken_cells(0), queue.untaken_cells(1)) == (0, 200)


def _handed_back(index: int, batch: int, first: int) -> WorkItem:
    return WorkItem(batch, make_block(index, index * 4, np.ones((4, 10), np.uint8), 4), cells=10 * (10 - first),
                    reads=(first, 10), handed_back=True)


def test_handed_back_items_go_to_the_gpus_together_and_to_cpus_only_when_no_gpu_is_left():
    queue = WorkQueue(capacity=8)
    queue.plan(0, 2, 200)
    queue.plan(1, 2, 200)
    for index, batch in [(0, 0), (5, 1), (1, 0), (2, 1)]:
        queue.put(_item(index, batch))
    queue.close()
    # three CPU workers take an item each and hand most of it back at their batch's tail
    assert [queue.take_for_cpu().block.index for _ in range(3)] == [0, 5, 1]
    queue.put_back([_handed_back(0, 0, first=4), _handed_back(5, 1, first=2), _handed_back(1, 0, first=7)])
    # a CPU worker passes over the handed-back items to the first one of its own
    assert queue.take_for_cpu().block.index == 2
    waiter = threading.Thread(target=lambda: got.append(queue.take_for_cpu()))
    got: list = []
    waiter.start()
    waiter.join(timeout=0.2)
    assert waiter.is_alive(), "a CPU worker waits while only handed-back items are queued"
    # a GPU takes every handed-back item of the head's batch, wherever it is queued
    chunk = queue.take(8, fill=True)
    assert [item.block.index for item in chunk] == [0, 1]
    assert launch_reads(chunk) == (4, 10)
    queue.release_handed_back()  # the last GPU failed: the CPU may take the rest
    waiter.join(timeout=5)
    assert [item.block.index for item in got] == [5]
    queue.finished(4)
    assert queue.take_for_cpu() is None


def test_queue_fill_waits_for_a_full_launch_until_the_batch_is_sealed():
    queue = WorkQueue(capacity=8)
    queue.put(_item(0))
    got: list[list[int]] = []
    taker = threading.Thread(target=lambda: got.append([b.block.index for b in queue.take(3, fill=True)]))
    taker.start()
    taker.join(timeout=0.2)
    assert taker.is_alive(), "a filling consumer waits for more items of the head batch"
    queue.put(_item(1))
    queue.seal(0)
    taker.join(timeout=5)
    assert got == [[0, 1]]


def test_gpu_launches_split_what_is_left_of_a_batch_evenly():
    queue = WorkQueue(capacity=100)
    queue.plan(0, 82, 8200)
    for i in range(82):
        queue.put(_item(i))
    queue.seal(0)
    assert [len(queue.take(40, fill=True)) for _ in range(3)] == [28, 27, 27]
    queue.plan(1, 82, 8200)
    for i in range(82):
        queue.put(_item(i, batch=1))
    cpu_items = [queue.take_for_cpu() for _ in range(15)]
    assert [len(queue.take(40, fill=True)) for _ in range(2)] == [34, 33]
    queue.put_back([WorkItem(1, item.block, 50, (5, 10), handed_back=True) for item in cpu_items])
    assert len(queue.take(40, fill=True)) == 15


def test_handed_back_rests_queue_behind_their_batch_and_a_failed_consumers_items_in_front():
    queue = WorkQueue(capacity=16)
    queue.plan(0, 4, 400)
    queue.plan(1, 1, 100)
    for index, batch in [(0, 0), (1, 0), (2, 0), (3, 0), (9, 1)]:
        queue.put(_item(index, batch))
    queue.seal(0)
    queue.seal(1)
    cpu_item = queue.take_for_cpu()
    gpu_items = queue.take(1)
    queue.put_back([_handed_back(cpu_item.block.index, 0, first=6)])
    queue.put_back([_handed_back(7, 0, first=3)])
    queue.put_back(gpu_items)  # the GPU failed
    launches = [[item.block.index for item in queue.take(8, fill=True)] for _ in range(3)]
    assert launches == [[1, 2, 3], [0, 7], [9]]
