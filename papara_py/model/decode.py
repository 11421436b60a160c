"""A batch's reads decoded: each read's alignment on its candidate edges under the run's model
(DESIGN 5), from the engine's candidates to the columns written.

`decode_batch` is the one call the runner makes per scored batch (run/stages.py). It composes the
model's steps: the traceback on each read's best edge (model/traceback.py), the column votes
(model/votes.py), the nearest-sequence bonus (model/nearest.py), the location check
(model/location.py), and for protein the second model and the choice between its alignments and
the reference profile's own (model/choice.py, model/profile_alignment.py).

The model never imports the engine: where the run traces back on its GPUs, the runner hands in a
`GpuDecoder` (engine/tracer.Tracer), and the candidates come in as anything with the engine's
Candidates' `score` and `edge` arrays. `warm_up` loads (or compiles) the model's numba functions.
"""
from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import NamedTuple, Protocol

import numpy as np

from papara_py.io.reads import ReadSet
from papara_py.model.choice import load_choice, second_preferred
from papara_py.model.column_costs import kernel_costs
from papara_py.model.column_terms import ColumnTerms
from papara_py.model.location import load_location, relocate
from papara_py.model.nearest import bonus_reads, load_nearest
from papara_py.model.params import ScoringParams
from papara_py.model.paths import replace_paths, residue_columns
from papara_py.model.profile_alignment import load_profile_alignment, profile_preferred
from papara_py.model.reference_scorer import profile_near
from papara_py.model.traceback import align_many
from papara_py.model.votes import load_votes, vote, vote_pairs
from papara_py.phylo.profiles import EdgeProfiles
from papara_py.phylo.residues import residue_index_table

# reads per GIL-free traceback call: large enough that Python overhead is noise, small enough
# that a batch spreads over every thread
TRACEBACK_SLICE = 256
#: An empty candidate slot's score (engine/candidates.EMPTY_SCORE: the int32 maximum, paired with edge -1).
EMPTY_SCORE = np.iinfo(np.int32).max


class CandidateLists(NamedTuple):
    """Each read's candidate edges, best first: the fields of the engine's Candidates
    (engine/candidates.py), which the model takes as they are and does not import."""

    score: np.ndarray      # int32 [reads, K], EMPTY_SCORE where a slot is empty
    edge: np.ndarray       # int32 [reads, K], -1 where a slot is empty


class GpuDecoder(Protocol):
    """The traceback on the run's GPUs, as the runner hands it in (engine/tracer.Tracer): each
    call returns None where the CPU must do the work (no GPU left, a batch the device cannot take)."""

    @property
    def usable(self) -> bool: ...

    def align_many(self, *args, **options): ...

    def location_scores(self, *args): ...


class Traced(NamedTuple):
    """A batch's traceback (`decode_batch`), read by read."""

    scores: np.ndarray     # int32: the best edge's score
    starts: np.ndarray     # int32: the alignment's first column (DESIGN 5)
    cigars: list[str]
    rows: np.ndarray       # uint8 [reads, m]: the read in reference columns
    on_gpu: bool           # a GPU traced the batch back
    alignments: int        # alignments traced: a read's best edge, and more within its vote window
    voted: int             # reads whose columns the vote took from other edges than the best
    nearest: int           # reads traced back again with their nearest sequence's bonus
    relocated: int         # reads whose columns the location check took from their nearest sequence
    second: int = 0        # reads whose columns the second model's alignment gave (the choice)
    profile: int = 0       # reads whose columns the reference profile's own alignment gave (the choice)


def decode_batch(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: CandidateLists,
                 builder: EdgeProfiles, params: ScoringParams, columns: ColumnTerms, threads: int,
                 tracer: GpuDecoder | None = None) -> Traced:
    """Align each read, in its chosen orientation (`reverse`), as `trace_model` does under the
    run's model, and where `params.second_model` is on also under the second model
    (ScoringParams.second) on its candidate edges re-ranked by that model; each read then keeps
    the alignment the reference alignment's columns prefer (model/choice.py), or that profile's
    own alignment where it passes model/profile_alignment.py's margins (its cost under the run's
    model on the best edge `candidates` name). Scores, best edges and the counts of votes, bonuses
    and moved reads stay the run's model's.
    """
    if not params.second_model or columns.second_costs is None or not len(indices):
        return trace_model(reads, indices, reverse, candidates, builder, params, columns, threads, tracer)
    selected = reads.select_residues(indices, reverse)  # the batch's residues, for both models and the choice
    traced = trace_model(reads, indices, reverse, candidates, builder, params, columns, threads, tracer, selected)
    second, second_terms = params.second(), columns.second()
    ranked, ranking_on_gpu = _second_candidates(reads, indices, reverse, candidates, builder, second,
                                                second_terms, threads, tracer)
    other = trace_model(reads, indices, reverse, ranked, builder, second, second_terms, threads, tracer, selected)
    residues, offsets = selected
    indices_of = residue_index_table(reads.alphabet)[residues]
    first_columns = residue_columns(traced.starts, traced.cigars, offsets)
    second_columns = residue_columns(other.starts, other.cigars, offsets)
    take = second_preferred(columns.residues, indices_of, offsets, first_columns, second_columns, traced.rows,
                            reads.alphabet, threads)
    starts = np.where(take, other.starts, traced.starts).astype(np.int32)
    cigars = [b if t else a for a, b, t in zip(traced.cigars, other.cigars, take.tolist())]
    rows = np.where(take[:, None], other.rows, traced.rows)
    chosen = np.where(np.repeat(take, np.diff(offsets)), second_columns, first_columns)
    best_edges, edge_slot = np.unique(candidates.edge[:, 0], return_inverse=True)
    profiles = builder.profiles(best_edges)
    profiled, profile_columns = profile_preferred(
        columns.residues, indices_of, reads.alphabet.read_code[residues], offsets, chosen, rows, reads.alphabet,
        profiles, profile_near(profiles, columns.family), edge_slot, params, kernel_costs(columns.costs),
        candidates.score[:, 0], threads)
    starts, cigars, rows = replace_paths(starts, cigars, rows, residues, offsets, np.flatnonzero(profiled),
                                         profile_columns)
    return traced._replace(
        starts=starts, cigars=cigars, rows=rows, on_gpu=traced.on_gpu or ranking_on_gpu or other.on_gpu,
        alignments=traced.alignments + int((candidates.edge >= 0).sum()) + other.alignments,
        second=int((take & ~profiled).sum()), profile=int(profiled.sum()))


def _second_candidates(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: CandidateLists,
                       builder: EdgeProfiles, second: ScoringParams, columns: ColumnTerms, threads: int,
                       tracer: GpuDecoder | None) -> tuple[CandidateLists, bool]:
    """Each read's candidate edges scored under the second model as its engine would score them
    (DESIGN 4's band: no band margin, bonus or votes; the traceback's score is the engine's) and
    sorted again by (score, edge): the second model's candidate lists, and whether a GPU scored."""
    ranking = replace(second, band_margin=0, nearest_bonus=0, vote_window=0)
    pair_read, pair_slot = np.nonzero(candidates.edge >= 0)
    scores, *_, on_gpu = trace_reads(reads, indices[pair_read], reverse[pair_read],
                                     candidates.edge[pair_read, pair_slot], builder, ranking, columns, threads, tracer)
    score = np.full(candidates.score.shape, EMPTY_SCORE, np.int32)
    score[pair_read, pair_slot] = scores
    order = np.lexsort((candidates.edge, score), axis=-1)
    return CandidateLists(np.take_along_axis(score, order, 1), np.take_along_axis(candidates.edge, order, 1)), on_gpu


def trace_model(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: CandidateLists,
                builder: EdgeProfiles, params: ScoringParams, columns: ColumnTerms, threads: int,
                tracer: GpuDecoder | None = None, selected: tuple[np.ndarray, np.ndarray] | None = None) -> Traced:
    """Align each read, in its chosen orientation (`reverse`), to its best edge, or by vote over its
    candidate edges within `params.vote_window` of the best (model/votes.py), with the nearest
    reference sequence's bonus where `params.nearest_bonus` is on and the read's best-edge
    alignment is near enough to one (model/nearest.py), then the location check where
    `params.location_check` is on (model/location.py); `columns`: the model's column terms
    (model/column_terms.py); `selected`: the batch's residues and offsets
    (`reads.select_residues(indices, reverse)`) where the caller has them already.

    Returns the batch's `Traced` results; CIGARs and rows describe the oriented read. Every traced
    alignment's score must equal its candidate's (the engine's), and a bonused one's may only be
    lower, by at most the bonus per residue and a gap opening between residues; with the band
    margin (DESIGN 5), whose paths may cost less than the band's best by any amount, every one may
    only be lower or equal: anything else is an internal error.
    """
    pair_read, pair_slot, group_ends = vote_pairs(candidates.score, candidates.edge, params.vote_window)
    firsts = group_ends - np.diff(group_ends, prepend=0)
    expected = candidates.score[pair_read, pair_slot]
    pair_edges = candidates.edge[pair_read, pair_slot]

    def trace(pairs: np.ndarray, bonus: tuple[np.ndarray, int] | None = None):
        return trace_reads(reads, indices[pair_read[pairs]], reverse[pair_read[pairs]], pair_edges[pairs], builder,
                           params, columns, threads, tracer, bonus)

    if params.nearest_bonus and columns.residues is not None:
        alignments, (scores, starts, cigars, rows, on_gpu), nearest = _trace_with_bonus(
            trace, reads, indices, pair_read, firsts, expected, params, columns.residues, threads)
    else:
        traced, starts, cigars, rows, on_gpu = trace(np.arange(pair_read.size))
        _check_scores(traced, expected, params)
        scores = expected.astype(np.int32)  # the engine's (a band margin's path may cost less)
        alignments, nearest = pair_read.size, 0
    voted = relocated = 0
    if len(pair_read) != len(indices) or params.location_check:
        residues, offsets = selected if selected is not None else reads.select_residues(indices, reverse)
    if len(pair_read) != len(indices):  # a read has a second edge to vote
        starts, cigars, rows, changed = vote(group_ends, starts, cigars, rows, residues, offsets)
        scores, voted = scores[firsts], int(changed.sum())
    if params.location_check and columns.sequences is not None:
        on_device = tracer.location_scores if tracer is not None and tracer.usable else None
        starts, cigars, rows, moved = relocate(starts, cigars, rows, residues, offsets, reads.alphabet,
                                               columns.residues, columns.sequences, params.location_check, threads,
                                               device_scores=on_device)
        relocated = int(moved.sum())
    return Traced(scores, starts, cigars, rows, on_gpu, alignments, voted, nearest, relocated)


def _trace_with_bonus(trace, reads: ReadSet, indices: np.ndarray, pair_read: np.ndarray, firsts: np.ndarray,
                      expected: np.ndarray, params: ScoringParams, reference: np.ndarray, threads: int):
    """`decode_batch`'s alignments of every pair with the nearest-sequence bonus: each read's
    best edge first, which names its nearest reference rows (model/nearest.bonus_reads), then in
    one more call every pair of the reads near enough to theirs with the bonus and the other pairs
    of the rest without (their tips -1). Returns (the alignments traced, a best edge traced twice
    counting twice; every pair's (scores, starts, CIGARs, rows, whether a GPU traced any), as
    trace_reads gives them; the reads given the bonus)."""
    scores, starts, cigars, rows, on_gpu = trace(firsts)
    _check_scores(scores, expected[firsts], params)
    tips = bonus_reads(rows, reads.alphabet, reference, threads)
    bonused = tips[:, 0] >= 0
    is_first = np.zeros(pair_read.size, bool)
    is_first[firsts] = True
    again = np.flatnonzero(bonused[pair_read] | ~is_first)
    all_scores, all_starts = expected.astype(np.int32), np.empty(pair_read.size, np.int32)
    all_cigars, all_rows = [""] * pair_read.size, np.empty((pair_read.size, rows.shape[1]), np.uint8)
    all_starts[firsts], all_rows[firsts] = starts, rows
    for k, cigar in zip(firsts.tolist(), cigars):
        all_cigars[k] = cigar
    if again.size:
        again_tips = tips[pair_read[again]]
        lower, starts, cigars, rows, again_on_gpu = trace(again, (again_tips, params.nearest_bonus))
        on_gpu = on_gpu or again_on_gpu
        plain = again_tips[:, 0] < 0
        _check_scores(lower[plain], expected[again][plain], params)
        # the bonus takes at most nearest_bonus off each residue and one opening off each gap between two
        lengths = np.diff(reads.offsets)[indices[pair_read[again]]]
        opening = params.gap_open + params.gap_extend
        floor = expected[again] - params.nearest_bonus * lengths - opening * (lengths - 1)
        if np.any(lower > expected[again]) or (not params.band_margin and np.any(lower < floor)):
            raise RuntimeError("internal error: a bonused traceback's score is out of its bounds")
        all_starts[again], all_rows[again] = starts, rows
        for k, cigar in zip(again.tolist(), cigars):
            all_cigars[k] = cigar
    return firsts.size + again.size, (all_scores, all_starts, all_cigars, all_rows, on_gpu), int(bonused.sum())


def _check_scores(traced: np.ndarray, expected: np.ndarray, params: ScoringParams) -> None:
    """The traced scores against the engine's: equal, or with a band margin no higher (the margin
    only adds paths, which may cost less than the band's best)."""
    if not (np.all(traced <= expected) if params.band_margin else np.array_equal(traced, expected)):
        raise RuntimeError("internal error: traceback score differs from the engine's score")


def trace_reads(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, edges: np.ndarray, builder: EdgeProfiles,
                params: ScoringParams, columns: ColumnTerms, threads: int, tracer: GpuDecoder | None = None,
                bonus: tuple[np.ndarray, int] | None = None):
    """Reads `indices` (oriented by `reverse`) aligned to `edges` by DESIGN 5's traceback with the
    run's column terms `columns`: (scores, starts, cigars, rows, whether a GPU did it). bonus:
    each read's nearest tips [reads, k] and the amount of the nearest-sequence bonus
    (model/nearest.py; the tips' rows are `columns.residues`), or None.

    With a tracer (`--traceback auto` and a GPU) the whole batch is one device call; otherwise
    slices of TRACEBACK_SLICE reads run as single GIL-free numba calls, so the threads scale.
    Both give the same results bit for bit.
    """
    unique_edges, edge_slot = np.unique(edges, return_inverse=True)
    profiles = builder.profiles(unique_edges)
    if bonus is not None:
        bonus = (columns.residues, *bonus)
    if tracer is not None and tracer.usable:
        residues, offsets = reads.select_residues(indices, reverse)
        done = tracer.align_many(reads.alphabet.read_code[residues], residues, offsets, edge_slot, profiles, params,
                                 columns.family, columns.costs, bonus=bonus)
        if done is not None:
            return (*done, True)
    pieces = [slice(a, a + TRACEBACK_SLICE) for a in range(0, len(indices), TRACEBACK_SLICE)]
    near = profile_near(profiles, columns.family)  # once for the batch's slices, which share the profiles

    def one(piece: slice):
        residues, offsets = reads.select_residues(indices[piece], reverse[piece])
        read_bonus = None if bonus is None else (bonus[0], bonus[1][piece], bonus[2])
        return align_many(reads.alphabet.read_code[residues], residues, offsets, edge_slot[piece], profiles, params,
                          near=near, costs=columns.costs, bonus=read_bonus)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(one, pieces))
    if not results:
        return (np.empty(0, np.int32), np.empty(0, np.int32), [], np.empty((0, profiles.shape[1]), np.uint8), False)
    return (np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results]),
            [cigar for r in results for cigar in r[2]], np.concatenate([r[3] for r in results]), False)


def warm_up() -> None:
    """Load (or compile) the model's numba functions every run calls, on the runner's JIT thread
    while the inputs are read, instead of on the thread that first needs them: the read gather
    (io/reads.py), the column votes (model/votes.py), the nearest-sequence search
    (model/nearest.py), the location check (model/location.py) and the choice between two
    models' alignments and the reference profile's (model/choice.py, model/profile_alignment.py).
    A run that ends while numba still compiles (a stop signal, an input error) tears the
    interpreter down under that daemon thread, and numba's registries fail half-way: nothing to
    report then, as the run has said why it ended (tests/test_interrupts.py)."""
    try:
        ReadSet([], np.zeros(0, np.uint8), np.zeros(1, np.int64)).select_residues(np.zeros(0, np.int64))
        load_votes()
        load_nearest()
        load_location()
        load_choice()
        load_profile_alignment()
    except Exception:
        if sys.is_finalizing() or not threading.main_thread().is_alive():
            return
        raise
