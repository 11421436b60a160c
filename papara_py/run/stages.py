"""Stage 5 of the main job (`ScoreTraceWrite`): the reads scored, traced back and written, each
batch in its own stage at once.

Stretches of the input are cut as the reads are parsed (io/read_stream.py), each one's alignable
reads a batch through the engine (strand decision on its master thread); each finished batch goes
on to a traceback thread, which hands it to the model (model/decode.decode_batch), and then to the
writer thread, which writes it with its stretch's rows, while later batches are scored
(`BatchStages`). Several samples go through one engine one after the other (run/samples.py),
each committed after its last batch is written (on the writer thread).

Each stretch's batch may be preceded by a batch of the outlier null's random reads
(model/outliers.py) for the read lengths that no earlier batch needed; a sample is committed once
the null of all its read lengths is scored (`_finish`).

Only the first batch's preparation and the last batch's traceback and writing stand outside the
scoring; a run ends with at least MIN_BATCHES batches where the reads allow it, so that the last
batch is a small part of the whole.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing

import numpy as np

from papara_py.engine.candidates import Candidates
from papara_py.engine.guided import GuidedSearch
from papara_py.engine.layout import block_count
from papara_py.engine.read_batch import ReadBatch
from papara_py.engine.scheduler import Engine
from papara_py.engine.strand import StrandPlan, orient
from papara_py.io.read_stream import Stretch
from papara_py.io.reads import STATUSES
from papara_py.model.decode import decode_batch
from papara_py.model.outliers import OutlierNull, null_lengths, null_reads
from papara_py.phylo.profiles import EdgeProfiles
from papara_py.report.page import gcups_text
from papara_py.run.config import RunConfig
from papara_py.run.devices import Devices
from papara_py.run.inputs import Work, sample_inputs
from papara_py.run.log import Reporter
from papara_py.run.record import sample_tally
from papara_py.run.samples import SampleRun
from papara_py.run.writers import commit_sample, write_batch, write_stretch

#: Scored batches that may wait for their traceback or writing at once (BatchStages; at least one
#: more than the traceback threads): enough that a slow batch in either stage does not stop the
#: engine, few enough to bound the rows held.
TRACE_DEPTH = 3
#: Batches a run is cut into at least (each at most --batch-reads), so that the traceback and
#: writing of the last batch, which nothing overlaps, is a small part of the run ...
MIN_BATCHES = 8
#: ... but no batch below this many reads, which keep a GPU launch of 40 blocks over a full device.
MIN_BATCH_READS = 2_000


class ScoreTraceWrite:
    """Stage 5 for the run's `samples`: `run` scores every sample's reads through one engine and
    returns once each sample's run file is committed (or raises the first error).

    Who runs what: the engine's master thread takes the batches from `batches` (the strand
    decision; the next sample's reads opened once the previous one's are parsed); the caller's
    thread takes each finished batch (`_scored`) and hands it on at once; a traceback thread runs
    `trace`, the writer thread `write`, which commits a sample after its last stretch (`_finish`).
    """

    def __init__(self, config: RunConfig, reporter: Reporter, samples: list[SampleRun], profiles: EdgeProfiles,
                 devices: Devices, work: Work, run_started: float) -> None:
        self.config, self.reporter, self.samples = config, reporter, samples
        self.profiles, self.devices, self.work, self.run_started = profiles, devices, work, run_started
        self.tracer = devices.tracer
        self.m = samples[0].inputs.n_columns
        self.held: dict[int, tuple[SampleRun, Stretch, StrandPlan]] = {}  # batches made and not yet traced back
        self.deferred: list[BaseException] = []  # bad reads in a sample: raised once the samples before it are complete
        self.search: GuidedSearch | None = None
        self.stats = None  # the engine's, or the guided search's, consumers and times (sample_tally)
        self._blocks_per_batch = None if config.search == "guided" else block_count(profiles.n_edges, devices.width)
        self._bar = None
        self._cells_scored = 0
        # the outlier null (model/outliers.py): its lengths asked for, the batches asking (index ->
        # lengths), the scored part, and the samples whose commit waits for a length of it
        self._null_asked: set[int] = set()
        self._null_batches: dict[int, np.ndarray] = {}
        self._null_made = 0
        self._null: OutlierNull | None = None
        self._null_lock = threading.Lock()
        self._awaiting_null: list[SampleRun] = []
        self._stages: BatchStages | None = None
        self._engine_started = 0.0

    def run(self, jit_loader: threading.Thread) -> None:
        """Score, trace back and write every sample (`jit_loader`: the thread loading numba's
        functions, waited for before the engine starts)."""
        with self.reporter.bar(None, "block", "scoring") as bar:
            self._bar = bar
            self._engine_started = time.perf_counter()
            t0 = time.perf_counter()
            jit_loader.join()  # left to wait only when the inputs were read in less time
            self.samples[0].timings["jit_wait"] = time.perf_counter() - t0
            if self.config.search == "guided":
                self.search = GuidedSearch(self.samples[0].inputs.edge_tree, self._new_engine, self.m, self.work.k,
                                           self.config.guided)
            engine = self.search or self._new_engine(self.work.k)
            self.stats = self.search.stats if self.search else engine
            # batches arrive as they finish and go on to the traceback thread, then the writer thread
            # (BatchStages): the engine's batch slot is handed back at once, so neither stage's time
            # (a GPU traceback waits for the scoring launch in progress) keeps the GPU from its next batch
            stages = self._stages = BatchStages(self.trace, self.write, TRACE_DEPTH,
                                                self.tracer.threads if self.tracer else 1)
            failed = True
            try:
                with closing(engine.run(self.batches())) as finished:
                    for index, candidates in finished:
                        self._scored(engine, stages, index, candidates)
                stages.drain()
                failed = False
            finally:
                stages.close(failed)
        if self.deferred:
            raise self.deferred[0]

    def _new_engine(self, k: int) -> Engine:
        inputs, devices = self.samples[0].inputs, self.devices
        return Engine(self.profiles.profiles, self.profiles.n_edges, self.m, devices.width, inputs.params, k,
                      devices.use_cpu, devices.gpu_scorers, devices.options, self._progress, costs=inputs.costs,
                      build_lanes=getattr(self.profiles, "lanes", None))

    def _progress(self, blocks: int, block_cells: int) -> None:
        """The engine's progress callback: the bar and its GCUPS."""
        self._cells_scored += block_cells
        self._bar.update(blocks)
        elapsed = max(time.perf_counter() - self._engine_started, 1e-9)
        self._bar.set_postfix_str(f"{gcups_text(self._cells_scored / elapsed / 1e9)} GCUPS", refresh=False)

    def batches(self) -> Iterator[ReadBatch]:
        """Each sample's stretches' alignable reads in their orientations (on the engine's
        master thread); the next sample's reads opened once the previous one's are parsed."""
        samples = self.samples
        index = earlier = 0  # batches made; stretches of the samples before this one
        for number, sample in enumerate(samples):
            stretches = sample.inputs.reads.stretches(self.config.batch_reads, MIN_BATCHES, MIN_BATCH_READS)
            made = 0
            while True:
                try:  # the first cut waits for enough reads (or all of them) to be parsed
                    stretch = next(stretches, None)
                except Exception as error:  # noqa: BLE001 - bad reads: the samples before this one are finished
                    sample.failed = True
                    self.deferred.append(error)
                    return
                if stretch is None:
                    break
                made += 1
                if sample.inputs.reads.ended:
                    self._open_next(number)
                if not len(stretch.alignable):  # no read to score: the input ended in this stretch
                    self.write(sample, stretch)
                    continue
                null = self._null_batch(sample, stretch)
                if null is not None:
                    self._null_batches[index] = null[0]
                    self._null_made += 1
                    yield null[1]
                    index += 1
                started = time.perf_counter()
                plan = StrandPlan.for_batch(stretch.alignable, orient(sample.inputs.strand, stretch.reads,
                                                                      stretch.alignable, self.work.kmers))
                self.held[index] = sample, stretch, plan
                sample.timings["strand"] += time.perf_counter() - started
                if self._blocks_per_batch is not None and number + 1 == len(samples) \
                        and sample.inputs.reads.stretch_count is not None:
                    self._bar.total = self._blocks_per_batch * (earlier + self._null_made
                                                                 + sample.inputs.reads.stretch_count)
                if not sample.entered:
                    sample.first_batch_entering(self.search)
                yield ReadBatch(*stretch.reads.select(plan.reads, plan.reverse))
                index += 1
            if made == 0:  # no reads at all
                self._finish(sample)
            earlier += made
            self._open_next(number)

    def _null_batch(self, sample: SampleRun, stretch: Stretch) -> tuple[np.ndarray, ReadBatch] | None:
        """The null lengths the stretch's reads need (noted in the sample) that no earlier batch
        asked for, and the batch of their null reads; None where there are none."""
        inputs = sample.inputs
        needed = null_lengths(stretch.reads.informative[stretch.alignable], self.m)
        sample.null_lengths.update(needed.tolist())
        new = np.array(sorted(set(needed.tolist()) - self._null_asked), dtype=np.int64)
        if not new.size:
            return None
        self._null_asked.update(new.tolist())
        return new, ReadBatch(*null_reads(inputs.alignment.rows, inputs.alphabet, new))

    def _open_next(self, number: int) -> None:
        """The reads of the sample after samples[number] opened (their parsing started)."""
        samples = self.samples
        if number + 1 < len(samples) and samples[number + 1].inputs is None:
            samples[number + 1].inputs = sample_inputs(samples[number + 1].config, samples[number].inputs)

    def _scored(self, engine, stages: BatchStages, index: int, candidates: Candidates) -> None:
        """A batch back from the engine (`engine`: the Engine or the GuidedSearch), counted and
        handed on to its traceback and writing."""
        started = engine.batch_started.pop(index)  # noted at its first take (engine's)
        if index in self._null_batches:
            self._null_scored(OutlierNull.from_scores(self._null_batches.pop(index), candidates.score[:, 0]))
            return
        sample, stretch, plan = self.held.pop(index)
        if sample.failed:  # its reads turned out bad further on: it is not written
            return
        reverse, candidates = plan.pick(candidates)
        sample.count_batch(stretch, plan, reverse, 0 if self.search else self.profiles.n_edges * self.m)
        sample.batch_scored(started)
        if sample.all_stretches_made(sample.scored):  # its last batch: its scoring span
            sample.last_batch_scored(time.perf_counter(), self.stats.scoring_seconds, self.search,
                                     self.profiles.n_edges)
        stages.submit(sample, stretch, reverse, candidates)

    def trace(self, sample: SampleRun, stretch: Stretch, reverse: np.ndarray, candidates: Candidates):
        """One scored batch decoded by the run's model (on a traceback thread)."""
        t0 = time.perf_counter()
        decoded = decode_batch(stretch.reads, stretch.alignable, reverse, candidates, self.profiles,
                               sample.inputs.params, sample.inputs.costs, self.config.threads, self.tracer,
                               sample.inputs.edge_costs, stop=self._stages.stopping)
        with sample.lock:  # summed over batches, which may overlap (BatchStages)
            sample.timings["traceback"] += time.perf_counter() - t0
            sample.traced["gpu" if decoded.on_gpu else "cpu"] += 1
        return sample, stretch, reverse, candidates, decoded

    def write(self, sample: SampleRun, stretch: Stretch, *traced) -> None:
        """One stretch's rows and its decoded batch (`trace`'s results; none where it has no read
        to align) into the sample's run file (on the writer thread, in order), and the file
        committed after the sample's last stretch."""
        if sample.failed:
            return
        t0 = time.perf_counter()
        writer = sample.writer(self.work.k)
        if traced:
            reverse, candidates, decoded = traced
            batch = write_batch(writer, stretch.first + stretch.alignable, candidates, decoded, self.m)
            write_stretch(writer, stretch, self.config.batch_reads, reverse, batch)
            placed = candidates.edge[:, 0] >= 0  # the summary's outlier count (run/writers.py)
            sample.best_scores.append(candidates.score[placed, 0])
            informative = sample.inputs.alphabet.informative_counts(decoded.residues, decoded.offsets)
            sample.informative.append(informative[placed])
        else:
            write_stretch(writer, stretch, self.config.batch_reads)
            sample.statuses += np.bincount(stretch.statuses, minlength=len(STATUSES))
        sample.timings["output"] += time.perf_counter() - t0
        sample.written += 1
        self.reporter.record(f"{sample.label}, batch {sample.written}: rows {stretch.first + 1}-{stretch.end}, "
                             f"{len(stretch.alignable)} reads aligned, "
                             f"{time.perf_counter() - self.run_started:.2f} s into the run")
        self.reporter.log.check()  # a log fault stops the run at once, as the run file's would
        if sample.all_stretches_made(sample.written):
            self._finish(sample)

    def _null_scored(self, null: OutlierNull) -> None:
        """A null batch back from the engine (the caller's thread): its lengths join the null, and
        the samples that waited for them go on to their commit (on the writer thread)."""
        with self._null_lock:
            self._null = null if self._null is None else OutlierNull.union([self._null, null])
            ready = [sample for sample in self._awaiting_null if self._has_null_of(sample)]
            self._awaiting_null = [sample for sample in self._awaiting_null if sample not in ready]
        for sample in ready:
            self._stages.then_write(self._commit, sample)

    def _has_null_of(self, sample: SampleRun) -> bool:
        known = set() if self._null is None else set(self._null.lengths.tolist())
        return sample.null_lengths <= known

    def _finish(self, sample: SampleRun) -> None:
        """The sample's record and its run file committed (run/samples.py), at once if the null
        of its read lengths is scored, else once it is (`_null_scored`)."""
        with self._null_lock:
            if not self._has_null_of(sample):
                self._awaiting_null.append(sample)
                return
        self._commit(sample)

    def _commit(self, sample: SampleRun) -> None:
        tally = sample_tally(sample, self.stats, self.search, self.tracer, several=len(self.samples) > 1,
                             reporter=self.reporter)
        null = self._null.subset(np.array(sorted(sample.null_lengths))) if sample.null_lengths else None
        commit_sample(sample, self.profiles, self.devices, self.work, tally, self.reporter, self.run_started, null)


class BatchStages:
    """The two stages after scoring: traceback (`tracing_threads` batches at once: a GPU traceback
    mostly waits for the device to finish the scoring launch in progress, so with two threads one
    batch's wait overlaps the next's), then writing, one thread, batch after batch in order.
    `submit` returns at once unless `depth` batches (at least one more than the traceback
    threads, so that none of them idles) are already between the two (which bounds the memory
    held: each holds its rows); the first error of either stage is raised by the next
    `submit` or by `drain`. `close(failed=True)` drops the batches not yet started and sets
    `stopping`, which the traceback hands to the model, so that the batches being decoded end
    at their next slice (an interrupted run writes nothing more, and ends in a fraction of a
    second, not after the batches in hand)."""

    def __init__(self, trace, write, depth: int, tracing_threads: int = 1) -> None:
        self._trace, self._write, self._depth = trace, write, max(depth, tracing_threads + 1)
        self._tracing = ThreadPoolExecutor(max_workers=tracing_threads, thread_name_prefix="papara-traceback")
        self._writing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="papara-writer")
        self._pending: deque[Future] = deque()
        self.stopping = threading.Event()

    def submit(self, *batch) -> None:
        traced = self._tracing.submit(self._trace, *batch)
        self._pending.append(self._writing.submit(lambda: self._write(*traced.result())))
        while self._pending and (len(self._pending) > self._depth or self._pending[0].done()):
            self._pending.popleft().result()

    def then_write(self, write, *args) -> None:
        """`write(*args)` on the writer thread after the batches submitted so far."""
        self._pending.append(self._writing.submit(write, *args))

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self, failed: bool) -> None:
        """Wait for the stages' threads; with `failed`, drop the batches not yet started and stop
        the ones being decoded at their next slice."""
        if failed:
            self.stopping.set()
        for executor in (self._tracing, self._writing):
            executor.shutdown(wait=True, cancel_futures=failed)
