"""Candidate merging is order-independent; the queue divides batches, hands back, finishes and
cancels correctly."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.engine.candidates import Candidates
from papara_py.engine.layout import make_block
from papara_py.engine.queue import WorkItem, WorkQueue, even_launch


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
    # the merge is a set union: a (read, edge) pair folded a second time must not show up twice
    # in the lists, so no schedule can push a pair out by scoring it twice
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
    seen: list[tuple[int, int]] = []
    queue.release_to_cpus()
    item = queue.take_for_cpu(lambda item, untaken: seen.append((item.batch, untaken)) or True)
    assert (item.block.index, seen) == (2, [(1, 300)])  # nothing of batch 0 untaken, all of batch 1
    held = queue.take(4)
    assert [b.block.index for b in held] == [3, 4]
    queue.put_back(held[1:])
    seen.clear()
    queue.take_for_cpu(lambda item, untaken: seen.append((item.batch, untaken)) or True)
    assert seen == [(1, 100)]


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
    queue = WorkQueue(capacity=None)
    queue.plan(0, 82, 8200)
    for i in range(82):
        queue.put(_item(i))
    queue.seal(0)
    assert [len(queue.take(40, fill=True)) for _ in range(3)] == [28, 27, 27]
    queue.plan(1, 82, 8200)
    for i in range(82):
        queue.put(_item(i, batch=1))
    queue.release_to_cpus()  # CPU workers take whole items too (as after a GPU failure)
    assert [queue.take_for_cpu().block.index for _ in range(15)] == list(range(15))
    assert [len(queue.take(40, fill=True)) for _ in range(2)] == [34, 33]


def test_even_launches():
    assert [even_launch(82, 40), even_launch(67, 40), even_launch(40, 40), even_launch(3, 40)] == [28, 34, 40, 3]
    assert even_launch(0, 40) == 40


def _piece(item: WorkItem, first: int, end: int) -> WorkItem:
    return WorkItem(item.batch, item.block, cells=10 * (end - first), reads=(first, end), cpu_piece=True)


def _halves(decided: list[int]):
    """A divider that gives the GPU reads [0, 6) and the CPU [6, 8) and [8, 10) of each block."""
    def divide(batch: int):
        decided.append(batch)
        return lambda item: (WorkItem(item.batch, item.block, 60, (0, 6)), [_piece(item, 6, 8), _piece(item, 8, 10)])
    return divide


def test_a_batch_is_divided_when_the_gpus_come_to_it_and_its_cpu_pieces_go_to_the_gpus_when_stale():
    decided: list[int] = []
    queue = WorkQueue(capacity=None, divide=_halves(decided))
    for batch in range(3):
        queue.plan(batch, 2, 200)
    for index, batch in [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)]:
        queue.put(_item(index, batch))
    queue.seal(0)
    queue.seal(1)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(queue.take_for_cpu()))
    waiter.start()
    waiter.join(timeout=0.2)
    assert waiter.is_alive(), "CPU workers wait for CPU pieces while a GPU lives"
    first = queue.take(1)  # the GPUs reach batch 0: it and the next are divided, not batch 2
    assert decided == [0, 1]
    assert [(item.block.index, item.reads, item.cpu_piece) for item in first] == [(0, (0, 6), False)]
    waiter.join(timeout=5)
    assert [(item.block.index, item.reads, item.cpu_piece) for item in got] == [(0, (6, 8), True)]
    # a CPU worker prefers the oldest batch, and leaves a batch to the GPUs when told to
    assert queue.take_for_cpu().launch_key == (0, (8, 10))
    assert queue.take_for_cpu(lambda item, untaken: item.batch != 0).launch_key == (1, (6, 8))
    assert [(i.block.index, i.reads) for i in queue.take(8, fill=True)] == [(1, (0, 6))]
    # every main item of batch 0 is taken: its pieces are stale and go out first, one range a launch
    assert [(i.block.index, i.reads) for i in queue.take(8, fill=True)] == [(1, (6, 8))]
    assert [(i.block.index, i.reads) for i in queue.take(8, fill=True)] == [(1, (8, 10))]
    assert [(i.block.index, i.reads) for i in queue.take(8, fill=True)] == [(2, (0, 6)), (3, (0, 6))]
    assert decided == [0, 1, 2]
    queue.put(_item(5, 2))  # a divided batch's later items are divided as they are put
    queue.seal(2)
    queue.close()
    launches = [[(i.block.index, i.reads) for i in queue.take(8, fill=True)] for _ in range(5)]
    assert launches == [[(2, (8, 10)), (3, (8, 10))], [(3, (6, 8))],          # batch 1's stale pieces
                        [(4, (0, 6)), (5, (0, 6))],                            # batch 2's GPU part
                        [(4, (6, 8)), (5, (6, 8))], [(4, (8, 10)), (5, (8, 10))]]
    queue.finished(18)  # everything taken is done
    assert queue.take(8) == [] and queue.take_for_cpu() is None


def test_cpu_workers_take_any_item_once_no_gpu_is_left_and_failed_items_go_first():
    queue = WorkQueue(capacity=None, divide=_halves([]))
    queue.plan(0, 3, 300)
    for index in range(3):
        queue.put(_item(index))
    queue.seal(0)
    held = queue.take(1)
    piece = queue.take_for_cpu()
    queue.put_back(held + [piece])  # both consumers failed: their items are served first
    queue.release_to_cpus()
    taken = [queue.take_for_cpu() for _ in range(8)]
    assert [(i.block.index, i.reads) for i in taken] == [
        (0, (6, 8)), (0, (8, 10)), (1, (6, 8)), (1, (8, 10)), (2, (6, 8)), (2, (8, 10)),  # pieces first
        (0, (0, 6)), (1, (0, 6))]
    assert [(i.block.index, i.reads) for i in queue.take(8)] == [(2, (0, 6))]


def test_a_full_queue_makes_cpu_pieces_stale_so_the_master_is_never_stuck_behind_them():
    queue = WorkQueue(capacity=4, divide=_halves([]))
    queue.plan(0, 3, 300)
    queue.put(_item(0))
    assert [i.block.index for i in queue.take(1)] == [0]  # divided: pieces (6, 8), (8, 10) of block 0
    queue.put(_item(1))  # divided on put: 1 + 4 queued, full
    stale = queue.take(8, fill=True)  # batch 0 is not sealed and has a main item queued, but full
    assert [(i.block.index, i.reads) for i in stale] == [(0, (6, 8)), (1, (6, 8))]
