"""Column votes over near-best edges (model/votes.py, DESIGN 5's vote window): the consensus
against an exhaustive search on random alignments, its CIGARs and rows, the pairs a window takes,
and a protein run with and without votes through the main job."""

from __future__ import annotations

from itertools import pairwise, product
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.io.cigar import parse_cigar
from papara_py.io.inputs import iter_reads, match_tips, read_alignment, read_tree
from papara_py.io.run_file import RunFile
from papara_py.model.column_costs import column_costs
from papara_py.model.family import column_family
from papara_py.model.params import PRESETS, ScoringParams
from papara_py.model.paths import cigar_string, path_ops, place_read, read_columns
from papara_py.model.traceback import align
from papara_py.model.votes import _consensus, vote, vote_pairs
from papara_py.phylo.encoding import PROTEIN
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree
from papara_py.run.config import RunConfig
from papara_py.run.runner import run

PROTEIN_DATA = Path(__file__).resolve().parent.parent / "data" / "protein"


@st.composite
def alignments(draw) -> np.ndarray:
    """1-5 alignments of one read of 1-6 residues: per residue a column (strictly increasing along
    the read) or -1, columns below 12; alignments often share columns, as near edges' do."""
    n = draw(st.integers(1, 6))
    count = draw(st.integers(1, 5))
    out = np.full((count, n), -1, np.int64)
    for a in range(count):
        placed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        columns = sorted(draw(st.lists(st.integers(0, 11), min_size=n, max_size=n, unique=True)))
        out[a] = np.where(placed, columns, -1)
    return out


def assignment_votes(columns: np.ndarray, chosen) -> int:
    """Votes of an assignment: per residue, n + 1 per agreeing alignment, one more for the best's."""
    count, n = columns.shape
    return sum((n + 2 if a == 0 else n + 1) for a in range(count) for j in range(n) if columns[a, j] == chosen[j])


def exhaustive_best(columns: np.ndarray) -> tuple[int, int]:
    """(most votes of any increasing assignment with a placed residue, of the one with none)."""
    options = [sorted({-1, *columns[:, j].tolist()}) for j in range(columns.shape[1])]
    best = -1
    for chosen in product(*options):
        placed = [x for x in chosen if x >= 0]
        if placed and all(a < b for a, b in pairwise(placed)):
            best = max(best, assignment_votes(columns, chosen))
    return best, assignment_votes(columns, [-1] * columns.shape[1])


@settings(max_examples=400, deadline=None)
@given(alignments())
def test_the_consensus_has_the_most_votes_of_any_increasing_assignment(columns):
    out = np.empty(columns.shape[1], np.int64)
    placed_best, none = exhaustive_best(columns)
    if not _consensus(columns, out):
        assert none > placed_best  # only where leaving every residue out has strictly more votes
        return
    placed = out[out >= 0]
    assert placed.size and np.all(np.diff(placed) > 0)
    assert all(x < 0 or x in columns[:, j] for j, x in enumerate(out.tolist()))
    assert assignment_votes(columns, out) == placed_best >= none


def test_unanimous_alignments_are_their_own_consensus_and_the_best_edge_breaks_ties():
    out = np.empty(4, np.int64)
    same = np.array([[3, -1, 5, 9]] * 3)
    assert _consensus(same, out) and out.tolist() == [3, -1, 5, 9]
    two = np.array([[1, 2, 3, 4], [1, 2, 5, 6]])
    assert _consensus(two, out) and out.tolist() == [1, 2, 3, 4]  # one vote each: the best edge's
    three = np.array([[1, 2, 3, 4], [1, 2, 5, 6], [1, 2, 5, 7]])
    assert _consensus(three, out) and out.tolist() == [1, 2, 5, 6]  # two votes beat the best edge's
    split = np.array([[1, 2, 3, 4], [1, 5, 6, 7], [1, 5, 6, 7], [1, 2, 8, 9], [1, 2, 8, 9]])
    # residue 1: column 2 has three votes; residues 2-3: 6, 7 and 8, 9 have two each, the best
    # edge's 3, 4 one: of the equal two, the smaller columns
    assert _consensus(split, out) and out.tolist() == [1, 2, 6, 7]


@settings(max_examples=200, deadline=None)
@given(alignments())
def test_a_consensus_path_writes_back_to_its_columns(columns):
    """path_ops' CIGAR read back (read_columns) gives the assignment; its row (place_read) holds
    the placed residues at their columns; inserted residues come before skipped columns."""
    assignment = columns[0]
    if (assignment < 0).all():
        return
    n = assignment.size
    ops = np.empty(n + 12, np.uint8)
    start, length = path_ops(assignment, ops)
    cigar = cigar_string(ops[:length])
    back = np.empty(n, np.int64)
    read_columns(np.frombuffer(cigar.encode(), np.uint8), 0, len(cigar), start, back)
    assert back.tolist() == assignment.tolist()
    assert sum(length for length, op in parse_cigar(cigar) if op in "MI") == n
    assert "DI" not in "".join(op for _, op in parse_cigar(cigar))
    residues = bytes(range(65, 65 + n))
    row = place_read(residues, start, cigar, 12)
    assert [row[x] for x in assignment if x >= 0] == [residues[j] for j in range(n) if assignment[j] >= 0]


def test_a_window_takes_each_reads_candidates_within_it_best_first():
    scores = np.array([[10, 12, 14, 15], [7, 7, 20, 2**31 - 1], [5, 9, 9, 9]], np.int32)
    edges = np.array([[4, 1, 0, 3], [2, 6, 5, -1], [8, 0, 1, 2]], np.int32)
    reads, slots, ends = vote_pairs(scores, edges, 4)  # read 1: its empty slot and 20 left out, so
    assert reads.tolist() == [0, 0, 0, 1, 2, 2, 2, 2] and ends.tolist() == [3, 4, 8]  # one other: none
    assert slots.tolist() == [0, 1, 2, 0, 0, 1, 2, 3]
    reads, slots, ends = vote_pairs(scores, edges, 0)  # off: not even read 1's equal second edge
    assert reads.tolist() == [0, 1, 2] and slots.tolist() == [0, 0, 0] and ends.tolist() == [1, 2, 3]
    reads, slots, ends = vote_pairs(scores, edges, 1)  # read 1's one other edge cannot outvote its best
    assert reads.tolist() == [0, 1, 2] and slots.tolist() == [0, 0, 0] and ends.tolist() == [1, 2, 3]
    reads, slots, ends = vote_pairs(scores, edges, 2)
    assert reads.tolist() == [0, 1, 2] and ends.tolist() == [1, 2, 3]  # read 0: 10 and 12 only


def protein_edges():
    """data/protein's profile builder, column family residues, tip rows and edge count."""
    alignment = read_alignment(PROTEIN_DATA / "ref.phy")
    tree = EdgeTree.from_dendropy(read_tree(PROTEIN_DATA / "tree.nwk"))
    tip_rows = match_tips(tree.tip_names, alignment, "tree").tip_rows
    return ProfileBuilder(tree, tip_rows, PROTEIN), column_family(tip_rows, PROTEIN), tip_rows, tree.n_edges


def test_vote_keeps_single_alignments_and_rewrites_disagreeing_groups():
    """vote() over real tracebacks: a group of one is its alignment verbatim; a group of three where
    two agree takes theirs, written as a fresh path."""
    builder, family, tip_rows, n_edges = protein_edges()
    params = ScoringParams.preset("protein")
    costs = column_costs(tip_rows, PROTEIN, params.column_weight)
    profiles = builder.profiles(np.arange(n_edges))
    for record in iter_reads(PROTEIN_DATA / "reads.fa", alphabet=PROTEIN):  # the first read edges disagree on
        read = record.sequence
        code = PROTEIN.read_code[np.frombuffer(read, np.uint8)]
        found = [align(code, profile, params, family, costs) for profile in profiles]
        distinct = {}
        for e, a in enumerate(found):
            distinct.setdefault((a.start, a.cigar), e)
        if len(distinct) >= 2:
            break
    assert len(distinct) >= 2, "data/protein should have a read that edges align differently"
    m = profiles.shape[1]
    rows = np.stack([place_read(read, a.start, a.cigar, m) for a in found])
    cigars = [a.cigar for a in found]
    starts = np.array([a.start for a in found])
    offsets = np.array([0, len(read)])
    residues = np.frombuffer(read, np.uint8)
    first, second = list(distinct.values())[:2]
    group = [first, second, second]
    got_starts, got_cigars, got_rows, voted = vote(np.array([3]), starts[group], [cigars[e] for e in group],
                                                   rows[group], residues, offsets)
    assert voted.tolist() == [True]
    columns = np.empty(len(read), np.int64)
    read_columns(np.frombuffer(got_cigars[0].encode(), np.uint8), 0, len(got_cigars[0]), got_starts[0], columns)
    expected = np.empty(len(read), np.int64)
    read_columns(np.frombuffer(cigars[second].encode(), np.uint8), 0, len(cigars[second]), starts[second], expected)
    assert columns.tolist() == expected.tolist()
    np.testing.assert_array_equal(got_rows[0], rows[second])
    alone = vote(np.array([1]), starts[[first]], [cigars[first]], rows[[first]], residues, offsets)
    assert alone[0].tolist() == [starts[first]] and alone[1] == [cigars[first]] and not alone[3].any()
    np.testing.assert_array_equal(alone[2][0], rows[first])
    pair = vote(np.array([2]), starts[[first, second]], [cigars[first], cigars[second]], rows[[first, second]],
                residues, offsets)  # one other alignment never outvotes the best edge's (vote_pairs skips it)
    assert pair[1] == [cigars[first]] and not pair[3].any()


@pytest.fixture(scope="module")
def runs_with_and_without_votes(tmp_path_factory) -> tuple[RunFile, RunFile]:
    folder = tmp_path_factory.mktemp("votes")
    files = []
    for window in (0, PRESETS["protein"][7]):
        out = folder / f"w{window}.h5"
        params = ScoringParams(*PRESETS["protein"][:7], vote_window=window)
        run(RunConfig(tree=str(PROTEIN_DATA / "tree.nwk"), alignment=str(PROTEIN_DATA / "ref.phy"),
                      reads=str(PROTEIN_DATA / "reads.fa"), output=str(out), threads=2, device="cpu",
                      params=params))
        files.append(RunFile(out))
    yield tuple(files)
    for handle in files:
        handle.close()


def test_votes_change_columns_only_where_near_edges_disagree(runs_with_and_without_votes):
    """Votes leave scores, best edges and candidates as they were and change the columns of some
    reads (data/protein: each such read has a second candidate within the window); every voted
    residue sits in a column some candidate within the window gives it."""
    plain, voted = runs_with_and_without_votes
    window = PRESETS["protein"][7]
    assert voted.record["parameters"]["vote_window"] == window and plain.record["parameters"]["vote_window"] == 0
    for path in ("best_edge", "score", "candidates/edge", "candidates/score", "status"):
        np.testing.assert_array_equal(plain.column(path), voted.column(path), path)
    changed = np.flatnonzero(plain.column("cigar") != voted.column("cigar"))
    assert changed.size > 0, "data/protein should have reads whose near edges disagree"
    builder, family, tip_rows, _ = protein_edges()
    params = ScoringParams.preset("protein")
    costs = column_costs(tip_rows, PROTEIN, params.column_weight)
    reads = {r.name: r.sequence for r in iter_reads(PROTEIN_DATA / "reads.fa", alphabet=PROTEIN)}
    names, scores = voted.names(), voted.column("candidates/score")
    for q in changed.tolist():
        read = reads[names[q]]
        code = PROTEIN.read_code[np.frombuffer(read, np.uint8)]
        near = [e for e, s in zip(voted.column("candidates/edge")[q], scores[q]) if e >= 0 and s <= scores[q, 0] + window]
        assert len(near) >= 2
        options = []
        for edge in near:
            found = align(code, builder.profiles(np.array([edge]))[0], params, family, costs)
            columns = np.empty(len(read), np.int64)
            read_columns(np.frombuffer(found.cigar.encode(), np.uint8), 0, len(found.cigar), found.start, columns)
            options.append(columns)
        cigar, start = voted.column("cigar")[q], int(voted.column("start")[q])
        columns = np.empty(len(read), np.int64)
        read_columns(np.frombuffer(cigar.encode(), np.uint8), 0, len(cigar), start, columns)
        assert all(x in [o[j] for o in options] for j, x in enumerate(columns.tolist()))
        assert assignment_votes(np.array(options), columns) > assignment_votes(np.array(options), options[0])
