"""A scored batch decoded (DESIGN 5): each read's columns, their posterior probabilities and its
candidate edges' weights under the run's model, from the engine's candidates.

`decode_batch` is the one call the runner makes per scored batch (run/stages.py). At temperature
T > 0 it is the posterior step (model/posterior.py: Forward and Backward on every candidate edge,
the edges weighted by their partition functions, the pooled posteriors' optimal-accuracy
alignment), on a GPU where the runner hands one in, else on the CPU threads: the same integers
either way. At T = 0 it is Eq. 1's Viterbi traceback on the best edge (model/traceback.py).

The model never imports the engine: where the run decodes on its GPUs, the runner hands in a
`GpuDecoder` (engine/tracer.Tracer), and the candidates come in as anything with the engine's
Candidates' `score` and `edge` arrays. `warm_up` loads (or compiles) the model's numba functions.
"""
from __future__ import annotations

import sys
import threading
from concurrent.futures import CancelledError, ThreadPoolExecutor
from functools import lru_cache
from typing import NamedTuple, Protocol

import numpy as np

from papara_py.io.reads import ReadSet
from papara_py.model.column_costs import ColumnCosts
from papara_py.model.edge_emission import EdgeColumnCosts
from papara_py.model.fixed_point import PROB_ONE, PosteriorTables
from papara_py.model.params import ScoringParams
from papara_py.model.posterior import decode_batch as posterior_batch
from papara_py.model.reference_scorer import profile_near
from papara_py.model.traceback import align_many
from papara_py.phylo.profiles import EdgeProfiles

#: Reads per GIL-free traceback call (T = 0): large enough that Python overhead is noise, small
#: enough that a batch spreads over every thread.
TRACEBACK_SLICE = 256


class CandidateLists(NamedTuple):
    """Each read's candidate edges, best first: the fields of the engine's Candidates
    (engine/candidates.py), which the model takes as they are and does not import."""

    score: np.ndarray      # int32 [reads, K], the int32 maximum where a slot is empty
    edge: np.ndarray       # int32 [reads, K], -1 where a slot is empty


class GpuDecoder(Protocol):
    """The posterior step on the run's GPUs, as the runner hands it in (engine/tracer.Tracer):
    `decode_batch` returns None where the CPU must do the work (no GPU left, a batch the device
    cannot take)."""

    @property
    def usable(self) -> bool: ...

    def decode_batch(self, *args, **options): ...


class Decoded(NamedTuple):
    """A batch's reads decoded, in the order given (DESIGN 5)."""

    residues: np.ndarray   # uint8 [residues]: the reads as oriented, ASCII (what their rows show)
    offsets: np.ndarray    # int64 [reads + 1]: read r's residues are [offsets[r], offsets[r + 1])
    columns: np.ndarray    # int32 [residues]: each residue's column (io/paths.INSERTED where inserted)
    pp: np.ndarray | None  # uint16 [residues]: its posterior probability in PROB_ONE units; None at T = 0
    weights: np.ndarray    # int32 [reads, K]: each candidate's weight in PROB_ONE units (0: an empty slot)
    on_gpu: bool           # a GPU decoded the batch

    def expected_accuracy(self) -> np.ndarray:
        """float64 [reads]: each read's mean PP, the expected share of its residues in their right
        columns under the model (DESIGN 5); NaN at T = 0 (no posteriors)."""
        if self.pp is None:
            return np.full(self.offsets.size - 1, np.nan)
        sums = np.add.reduceat(self.pp.astype(np.int64), self.offsets[:-1]) if self.pp.size else np.zeros(0)
        return sums / (np.diff(self.offsets) * float(PROB_ONE))


def posterior_tables(params: ScoringParams) -> PosteriorTables:
    """The fixed-point tables of `params`' temperature and placement temperature
    (model/fixed_point.py), built once per run."""
    return _tables(params.temperature, params.placement_temperature)


@lru_cache(maxsize=4)
def _tables(temperature: float, placement_temperature: float) -> PosteriorTables:
    return PosteriorTables.build(temperature, placement_temperature=placement_temperature)


def decode_batch(reads: ReadSet, indices: np.ndarray, reverse: np.ndarray, candidates: CandidateLists,
                 builder: EdgeProfiles, params: ScoringParams, costs: ColumnCosts | None, threads: int,
                 gpu: GpuDecoder | None = None, edge_costs: EdgeColumnCosts | None = None,
                 stop: threading.Event | None = None) -> Decoded:
    """Decode reads `indices` of `reads`, each in its chosen orientation (`reverse`), on their
    candidate edges (`candidates`, rows in that order) whose profiles `builder` gives, under
    `params` with the run's column profile costs `costs` (DESIGN 3-5; None: none) and each edge's
    own (`edge_costs`, the posterior step's residue posteriors only; None: the shared ones).
    Once `stop` is set, the CPU's next slice of reads does not start and CancelledError is
    raised: a stopped run (run/stages.BatchStages.close) waits for a slice, not for the batch;
    a GPU's batch, a fraction of a second, is let finish."""
    residues, offsets = reads.select_residues(indices, reverse)
    codes = reads.alphabet.read_code[residues]
    unique_edges, slots = np.unique(candidates.edge, return_inverse=True)
    slots = slots.reshape(candidates.edge.shape)
    empty = candidates.edge < 0
    if empty.any():  # -1 sorts first: the empty slot is no profile
        unique_edges, slots = unique_edges[1:], np.where(empty, -1, slots - 1)
    profiles = builder.profiles(unique_edges)
    if params.temperature == 0:
        return Decoded(residues, offsets, *_viterbi(codes, offsets, slots, candidates.score, profiles, params, costs,
                                                    threads, stop))
    tables = posterior_tables(params)
    near = profile_near(profiles)
    arguments = (codes, offsets, slots, candidates.score, profiles, near, params.as_array(), costs, tables)
    local = None if edge_costs is None else edge_costs.of_edges(unique_edges)
    if gpu is not None and gpu.usable:
        done = gpu.decode_batch(*arguments, local=local)
        if done is not None:
            decoded_columns, pp, weights, _ = done
            return Decoded(residues, offsets, decoded_columns, pp, weights, True)
    decoded_columns, pp, weights, _ = posterior_batch(*arguments, threads=threads, local=local, stop=stop)
    return Decoded(residues, offsets, decoded_columns, pp, weights, False)


def _viterbi(codes: np.ndarray, offsets: np.ndarray, slots: np.ndarray, scores: np.ndarray, profiles: np.ndarray,
             params: ScoringParams, costs: ColumnCosts | None, threads: int,
             stop: threading.Event | None = None) -> tuple:
    """Decoded's columns, pp, weights and on_gpu at T = 0: each read's Viterbi path on its best
    edge (model/traceback.py; slices of TRACEBACK_SLICE reads as GIL-free numba calls on `threads`
    threads, none started once `stop` is set: CancelledError), its score checked against the
    engine's; the weight of the candidates tied at the best score shared among them (the
    posterior's limit as T -> 0)."""
    near = profile_near(profiles)  # once for the batch's slices, which share the profiles
    pieces = [slice(a, a + TRACEBACK_SLICE) for a in range(0, offsets.size - 1, TRACEBACK_SLICE)]

    def one(piece: slice):
        if stop is not None and stop.is_set():
            raise CancelledError("the run stopped while this batch was traced back")
        first, last = piece.start, min(piece.stop, offsets.size - 1)
        a, b = offsets[first], offsets[last]
        return align_many(codes[a:b], offsets[first:last + 1] - a, slots[first:last, 0], profiles, params, near=near,
                          costs=costs)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        results = list(pool.map(one, pieces))
    traced = np.concatenate([r[0] for r in results]) if results else np.empty(0, np.int32)
    if not np.array_equal(traced, scores[:, 0]):
        raise RuntimeError("internal error: traceback score differs from the engine's score")
    decoded_columns = np.concatenate([r[1] for r in results]) if results else np.empty(0, np.int32)
    tied = (slots >= 0) & (scores == scores[:, :1])
    weights = np.where(tied, PROB_ONE // np.maximum(tied.sum(axis=1, keepdims=True), 1), 0).astype(np.int32)
    return decoded_columns, None, weights, False


def warm_up() -> None:
    """Load (or compile) the numba functions every run calls, on the runner's JIT thread while
    the inputs are read, instead of on the thread that first needs them: the read gather
    (io/reads.py). A run that ends while numba still compiles (a stop signal, an input error)
    tears the interpreter down under that daemon thread, and numba's registries fail half-way:
    nothing to report then, as the run has said why it ended (tests/run/test_interrupts.py)."""
    try:
        ReadSet([], np.zeros(0, np.uint8), np.zeros(1, np.int64)).select_residues(np.zeros(0, np.int64))
    except Exception:
        if sys.is_finalizing() or not threading.main_thread().is_alive():
            return
        raise
