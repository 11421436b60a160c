"""The Python API: align reads from a notebook or a workflow script, and read runs back.

    import papara_py

    with papara_py.align("tree.nwk", "ref.phy", "reads.fa", candidates=3) as run:
        for read in run:                  # per-read results, in input order
            print(read.name, read.edge, read.score, read.cigar)
        first, named = run[0], run["read_17"]  # by position or by read name
        msa = run.to_alignment()          # Bio.Align.MultipleSeqAlignment (extended alignment)
        flagged = run.outliers            # bool per read: the outlier rule's flags (left out of msa)
        table = run.to_pandas()           # one row per read (pip install 'papara-py[pandas]')
    same = papara_py.open_run("run.h5")   # any run file written by the CLI or the API

`align` takes the main job's options as keywords (`--gap-open 2` is `gap_open=2`), with the same
defaults and the same range checks: both come from one table, papara_py/run/options.py. Inputs
are file paths, open file handles, or sequences held in memory: a Newick string, a dendropy tree
or a Bio.Phylo tree; a dict of name -> sequence, a Biopython SeqRecord, a list of them or a
MultipleSeqAlignment, or (name, sequence) pairs; these are written to a temporary directory
first. Without `output` the run file lives in a temporary directory that is removed when the
`Run` is closed (or leaves its `with` block, or is garbage-collected).

Nothing is printed: notices go to the logging logger "papara_py" (`logging.basicConfig(level=
logging.INFO)` shows them). Errors in the inputs raise `InputError` (a ValueError), in the options
`OptionError` (an InputError), an output that cannot be written `OutputError` (an OSError), each
with the message the CLI would print; an input of a type the API does not take raises TypeError.
All are exported by `papara_py`. Ctrl-C (a notebook's interrupt) raises KeyboardInterrupt and
leaves no output behind; it is raised only once numba returns (run/stop_signals.py). The run
file's layout is specified in docs/DESIGN.md section 7.
"""

from __future__ import annotations

import operator
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from papara_py.errors import InputError
from papara_py.io.export import extended_rows
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile
from papara_py.model.outliers import run_outliers
from papara_py.run.options import option_values, run_config
from papara_py.run.stop_signals import interrupt_waits_for_libraries

#: Reads per chunk when a run is iterated (their columns are read from the file a chunk at a time).
ITERATION_CHUNK = 4096
#: What Run.to_pandas and Run.candidates_to_pandas say without pandas (papara-py's `pandas` extra).
_NEEDS_PANDAS = "{} needs pandas, papara-py's pandas extra: pip install 'papara-py[pandas]'"


@dataclass(frozen=True)
class ReadResult:
    """One read of a run. `edge`, `score` and `start` are None when the read was not aligned."""

    name: str
    status: str                             # "aligned", "empty" or "too_long"
    edge: int | None                        # best edge, in the tree's jplace numbering
    score: int | None                       # its score (Eq. 1 cost, smaller is better)
    start: int | None                       # first reference column of the path
    cigar: str                              # path, M/D/I (docs/DESIGN.md section 7)
    strand: str                             # "+" as given, "-" aligned reverse-complemented
    sequence: str                           # the read as given in the input
    aligned: str                            # the oriented read in reference columns, insertions left out
    candidates: tuple[tuple[int, int], ...]  # (edge, score) of the best K edges, best first
    weights: tuple[float, ...]              # each candidate's posterior weight (DESIGN 5), in that order
    pp: str                                 # each residue's posterior probability, hmmalign's 0-9,* code ("" at T = 0)
    outlier: bool = False                   # flagged by the outlier rule (`Run.outliers`): left out of exports


class Run:
    """A papara-py run file, read through `RunFile`; no file handle is held between calls.

    Attributes: `path`, `n_reads`, `n_columns`, `tree` (Newick with jplace `{n}` edge numbers),
    `reference_names`, `alphabet` ("dna" or "protein"), `record` (the run record: parameters,
    timings, checksums, ...), and `command_line` (the CLI call, or the `align(...)` call, that
    wrote it).

    A sequence of `ReadResult`s in input order: `len(run)`, `for read in run`, `run[i]` (negative
    from the end), `run[i:j]` (a list), `run["name"]` (by read name; KeyError if absent) and
    `"name" in run`. A context manager: leaving the `with` block closes it (`close`).
    """

    def __init__(self, path: str | os.PathLike, _owned_directory: str | None = None) -> None:
        self.path = str(path)
        with RunFile(self.path) as run:  # checks the file now, not at first use
            self.record = run.record
            self.command_line = str(run.attrs.get("command_line", ""))
            self.n_reads = run.n_reads
            self.n_columns = run.n_columns
            self.tree = run.newick_numbered
            self.reference_names = run.reference_names
            self.alphabet = run.alphabet.name
        self._rows_by_name: dict[str, int] | None = None
        self._outliers: np.ndarray | None = None
        self._cleanup = (weakref.finalize(self, shutil.rmtree, _owned_directory, True)
                         if _owned_directory else None)

    @property
    def parameters(self) -> dict:
        """The model's parameters the run used (mismatch, cgap, gap_open, gap_extend, insertion,
        near_mismatch, column_weight, temperature, placement_temperature, and the preset they
        equal); runs written before near states have no near_mismatch (then the mismatch penalty),
        before the column profile cost no column_weight (then 0), before the posterior decoding
        (0.12.0) no temperature (then 0: the Viterbi traceback), before 0.21.0 no
        placement_temperature (then the temperature), and between 0.5.0 and 0.11.0 the traceback
        settings of their time (vote_window, nearest_bonus, band_margin, location_check,
        second_model)."""
        return dict(self.record.get("parameters") or {})

    @property
    def outliers(self) -> np.ndarray:
        """bool [n_reads], in read order: True for the reads the outlier rule flags (model/outliers.py,
        the rule `papara-py report` explains: aligned reads whose penalty per residue is no better than
        that of random sequence of the reference's composition, scored by the run). The exports and
        `to_alignment` leave them out unless asked; `run.outliers.sum()` counts them,
        `np.flatnonzero(run.outliers)` gives their positions. Computed once, at first use."""
        return self._outlier_flags().copy()

    def _outlier_flags(self) -> np.ndarray:
        if self._outliers is None:
            with RunFile(self.path) as run:
                self._outliers = run_outliers(run).flagged
        return self._outliers

    def close(self) -> None:
        """Remove the run file if `align` made it in a temporary directory (no-op otherwise)."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __len__(self) -> int:
        return self.n_reads

    def __iter__(self) -> Iterator[ReadResult]:
        outliers = self._outlier_flags()
        with RunFile(self.path) as run:
            for lo in range(0, run.n_reads, ITERATION_CHUNK):
                yield from _chunk_results(run, slice(lo, min(run.n_reads, lo + ITERATION_CHUNK)), outliers)

    def __getitem__(self, key: int | slice | str) -> ReadResult | list[ReadResult]:
        """The read at position `key` (an int, negative from the end), the reads of a slice (a
        list), or the read named `key` (a str)."""
        if isinstance(key, str):
            position = self._row_of(key)
            if position is None:
                raise KeyError(key)
        elif isinstance(key, slice):
            rows = range(*key.indices(self.n_reads))
            if rows.step == 1:
                outliers = self._outlier_flags()
                with RunFile(self.path) as run:
                    return list(_chunk_results(run, slice(rows.start, max(rows.start, rows.stop)), outliers))
            return [self[row] for row in rows]
        else:
            try:
                position = operator.index(key)
            except TypeError:
                raise TypeError(f"a Run is indexed by position (int), a slice or a read name (str), "
                                f"not {type(key).__name__}") from None
            if position < 0:
                position += self.n_reads
            if not 0 <= position < self.n_reads:
                raise IndexError(f"read {key} of a run of {self.n_reads} reads")
        outliers = self._outlier_flags()
        with RunFile(self.path) as run:
            return next(_chunk_results(run, slice(position, position + 1), outliers))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._row_of(name) is not None

    def _row_of(self, name: str) -> int | None:
        if self._rows_by_name is None:  # read once, at the first lookup by name
            with RunFile(self.path) as run:
                self._rows_by_name = {str(read): q for q, read in enumerate(run.names())}
        return self._rows_by_name.get(name)

    def __repr__(self) -> str:
        return f"Run({self.path!r}: {self.n_reads} reads, {self.n_columns} columns)"

    def to_alignment(self, reference: bool = True, keep_outliers: bool = False):
        """The extended alignment as a Bio.Align.MultipleSeqAlignment, as `export --format fasta`
        writes it: reference rows (unless `reference=False`), then every aligned read but the
        outliers (`outliers`; `keep_outliers=True` keeps them, as `export --keep-outliers`), with
        insertion columns added where reads insert residues. Held in memory: for millions of reads
        use `papara-py export` instead."""
        from Bio.Align import MultipleSeqAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        with RunFile(self.path) as run:
            kept = run.column("status") == STATUS_ALIGNED
            if not keep_outliers:
                kept &= ~self._outlier_flags()
            _, rows = extended_rows(run, np.flatnonzero(kept))
            records = [SeqRecord(Seq(row.decode("ascii")), id=name, description="")
                       for i, (name, row, _) in enumerate(rows) if reference or i >= run.n_reference]
        return MultipleSeqAlignment(records)

    def reference_alignment(self):
        """The reference alignment as the run stored it (Bio.Align.MultipleSeqAlignment): the
        reference file EPA-ng takes beside the `export --format epa` queries."""
        from Bio.Align import MultipleSeqAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        with RunFile(self.path) as run:
            return MultipleSeqAlignment([SeqRecord(Seq(row.tobytes().decode("ascii")), id=name, description="")
                                         for name, row in zip(run.reference_names, run.reference_alignment())])

    def to_pandas(self):
        """One row per read: name, status, edge, score, start, cigar, strand, length (pandas.DataFrame).

        Requires pandas, papara-py's `pandas` extra: `pip install 'papara-py[pandas]'`."""
        try:
            import pandas
        except ImportError:
            raise ImportError(_NEEDS_PANDAS.format("Run.to_pandas")) from None
        with RunFile(self.path) as run:
            status = run.column("status")
            aligned = status == STATUS_ALIGNED
            frame = pandas.DataFrame({
                "name": run.names(), "status": status,
                **{name: pandas.array(run.column(column), dtype="Int64")
                   for name, column in (("edge", "best_edge"), ("score", "score"), ("start", "start"))},
                "cigar": run.column("cigar"), "strand": run.column("strand"),
                "length": [len(s) for s in run.column("sequence")],
            })
        frame.loc[~aligned, ["edge", "score", "start"]] = pandas.NA  # -1 in the file: no alignment
        return frame

    def candidates_to_pandas(self):
        """One row per read and candidate edge: name, rank (0 = best), edge, score (aligned reads
        only; pandas, as `to_pandas`)."""
        try:
            import pandas
        except ImportError:
            raise ImportError(_NEEDS_PANDAS.format("Run.candidates_to_pandas")) from None
        with RunFile(self.path) as run:
            edge, score = run.column("candidates/edge"), run.column("candidates/score")
            read, rank = np.nonzero(edge >= 0)
            return pandas.DataFrame({"name": run.names()[read], "rank": rank,
                                     "edge": edge[read, rank], "score": score[read, rank]})


def _chunk_results(run: RunFile, rows: slice, outliers: np.ndarray) -> Iterator[ReadResult]:
    names, status = run.names(rows), run.column("status", rows)
    edge, score, start = run.column("best_edge", rows), run.column("score", rows), run.column("start", rows)
    cigar, strand, sequence = run.column("cigar", rows), run.column("strand", rows), run.column("sequence", rows)
    cand_edge, cand_score = run.column("candidates/edge", rows), run.column("candidates/score", rows)
    cand_weight, pp = run.column("candidates/weight", rows), run.column("pp", rows)
    aligned_ids = np.flatnonzero(status == STATUS_ALIGNED)
    aligned_rows = dict(zip(aligned_ids.tolist(), run.aligned_rows(aligned_ids + rows.start)))
    for i in range(len(names)):
        ok = status[i] == STATUS_ALIGNED
        yield ReadResult(
            name=names[i], status=status[i],
            edge=int(edge[i]) if ok else None, score=int(score[i]) if ok else None,
            start=int(start[i]) if ok else None, cigar=cigar[i], strand=strand[i], sequence=sequence[i],
            aligned=aligned_rows[i].tobytes().decode("ascii") if ok else "",
            candidates=tuple((int(e), int(s)) for e, s in zip(cand_edge[i], cand_score[i]) if e >= 0),
            weights=tuple(float(w) for e, w in zip(cand_edge[i], cand_weight[i]) if e >= 0), pp=pp[i],
            outlier=bool(outliers[rows.start + i]))


def open_run(path: str | os.PathLike) -> Run:
    """Open a run file written by `papara-py` or `align` (checked: an InputError if it is not one)."""
    return Run(path)


@interrupt_waits_for_libraries()  # the whole call: numba loads functions outside the run too
def align(tree: Any, alignment: Any, reads: Any, output: str | os.PathLike | None = None,
          **options: Any) -> Run:
    """Align `reads` to the reference `alignment` and `tree`, the phylogeny-aware way (PaPaRa).

    tree: a Newick file path, a Newick string, a dendropy.Tree, a Bio.Phylo tree, or an open file.
    alignment: a PHYLIP/FASTA file path or open file, a dict of name -> aligned sequence, Biopython
        SeqRecords (a list, or a MultipleSeqAlignment), or (name, sequence) pairs.
    reads: a FASTA/FASTQ(.gz) file path or open file, or in memory like the alignment (unaligned
        sequences; a single SeqRecord too). Bare Seq objects and strings have no name: TypeError.
    output: the run file to write (HDF5); None: a temporary file, removed with the returned Run.
    options: the main job's options by their long names, `-` as `_` (mismatch=2, gap_open=2,
        device="cpu", threads=4, candidates=3, strand="forward", gpus=[0, 1], log="run.log", ...);
        the defaults and ranges of `papara-py --help-all`. Switches take True. Nothing is printed:
        notices go to the logging logger "papara_py".
    Returns the `Run`. Raises InputError (bad input), OptionError (bad option), OutputError (an
    output that cannot be written) or TypeError (an input of a type not taken).
    """
    values = option_values(options, "papara_py.align")
    owned = None if output is not None else tempfile.mkdtemp(prefix="papara-py-run-")
    try:
        with tempfile.TemporaryDirectory(prefix="papara-py-inputs-") as scratch:
            paths = [_tree_file(tree, scratch), _sequence_file(alignment, scratch, "alignment"),
                     _sequence_file(reads, scratch, "reads")]
            target = str(output) if output is not None else os.path.join(owned, "run.h5")
            from papara_py.run.runner import run as run_pipeline

            shown = ", ".join([_shown(tree, "tree"), _shown(alignment, "alignment"), _shown(reads, "reads")]
                              + [f"{key}={value!r}" for key, value in options.items()])
            run_pipeline(run_config(values, tree=paths[0], alignment=paths[1], reads=[paths[2]], output=target,
                                    outdir=None, command_line=f"papara_py.align({shown})"))
        return Run(target, owned)
    except BaseException:
        if owned:
            shutil.rmtree(owned, ignore_errors=True)
        raise


@interrupt_waits_for_libraries()  # the whole call: numba loads functions outside the run too
def align_samples(tree: Any, alignment: Any, samples: Sequence[str | os.PathLike] | Mapping[str, Any],
                  outdir: str | os.PathLike, **options: Any) -> list[Run]:
    """Align several samples to one reference in one run (`papara-py -r S1.fa S2.fa --outdir DIR`):
    the reference's profiles, GPUs and compiled kernels are made once, and the samples' batches
    stream through one engine (papara_py/run/samples.py).

    samples: reads file paths, each written to `outdir`/NAME.h5 (`S1.fastq.gz` -> `S1.h5`); or a
        dict of NAME -> reads held in memory (as `align` takes them), written to NAME.h5.
    outdir: an existing directory. tree, alignment and options: as for `align`.
    Returns one `Run` per sample, in order. Raises as `align` does; bad reads in one sample keep
    the run files of the samples before it.
    """
    values = option_values(options, "papara_py.align_samples")
    with tempfile.TemporaryDirectory(prefix="papara-py-inputs-") as scratch:
        if isinstance(samples, Mapping):
            reads = []
            for name, sequences in samples.items():
                if not name or os.sep in name or name.startswith("."):
                    raise InputError("papara_py.align_samples", f"the sample name {name!r} cannot name a file")
                if isinstance(sequences, (str, os.PathLike)):
                    raise InputError("papara_py.align_samples", f"sample {name!r} is a path: give reads files "
                                                                f"as a list of paths (named after their files)")
                os.makedirs(os.path.join(scratch, name))
                reads.append(_sequence_file(sequences, os.path.join(scratch, name), name))
        elif isinstance(samples, (str, os.PathLike)):
            raise TypeError("samples must be a list of reads files or a dict of sample name -> reads, not one path "
                            "(papara_py.align takes one reads file)")
        else:
            reads = [os.fspath(path) for path in samples]
        from papara_py.run.runner import run as run_pipeline

        shown = ", ".join([_shown(tree, "tree"), _shown(alignment, "alignment"), f"samples=<{len(reads)}>",
                           f"outdir={os.fspath(outdir)!r}"] + [f"{key}={value!r}" for key, value in options.items()])
        summaries = run_pipeline(run_config(
            values, tree=_tree_file(tree, scratch), alignment=_sequence_file(alignment, scratch, "alignment"),
            reads=reads, output=None, outdir=os.fspath(outdir), command_line=f"papara_py.align_samples({shown})"))
    return [Run(summary.output) for summary in summaries]


def _shown(value: Any, what: str) -> str:
    """How an input appears in the run record's command line: its path, or what it held."""
    if isinstance(value, (str, os.PathLike)) and os.path.exists(value):
        return f"{what}={os.fspath(value)!r}"
    return f"{what}=<in memory>"


def _is_handle(value: Any) -> bool:
    """An open file (or anything read like one: read and readline)."""
    return callable(getattr(value, "read", None)) and callable(getattr(value, "readline", None))


def _copy_handle(handle: Any, path: str) -> str:
    """An open file's content (text or bytes, from where it stands) into `path`."""
    first = handle.read(1 << 20)
    with open(path, "wb" if isinstance(first, bytes) else "w", **({} if isinstance(first, bytes) else
                                                                   {"encoding": "utf-8"})) as out:
        while first:
            out.write(first)
            first = handle.read(1 << 20)
    return path


def _tree_file(tree: Any, scratch: str) -> str:
    if isinstance(tree, os.PathLike) or (isinstance(tree, str) and not tree.lstrip().startswith("(")):
        return os.fspath(tree)
    path = os.path.join(scratch, "tree.nwk")
    if isinstance(tree, str):
        text = tree
    elif hasattr(tree, "as_string"):  # a dendropy.Tree
        text = tree.as_string(schema="newick", suppress_rooting=True)
    elif _is_handle(tree):
        return _copy_handle(tree, path)
    elif _is_phylo_tree(tree):
        import io

        from Bio import Phylo

        buffer = io.StringIO()
        Phylo.write(tree, buffer, "newick")
        text = buffer.getvalue()
    else:
        raise TypeError(f"tree must be a path, a Newick string, a dendropy.Tree, a Bio.Phylo tree or an open file, "
                        f"not {type(tree).__name__}")
    with open(path, "w") as handle:
        handle.write(text)
    return path


def _is_phylo_tree(tree: Any) -> bool:
    from Bio.Phylo.BaseTree import Tree

    return isinstance(tree, Tree)


def _records(sequences: Any, what: str) -> Iterator[tuple[str, str]]:
    """(name, sequence) of each record `sequences` holds, TypeError for what names none."""
    if isinstance(sequences, Mapping):
        yield from ((str(name), str(seq)) for name, seq in sequences.items())
        return
    if hasattr(sequences, "seq") and hasattr(sequences, "id"):  # one SeqRecord
        sequences = [sequences]
    if not isinstance(sequences, Iterable) or isinstance(sequences, (bytes, str)):
        raise TypeError(f"{what} must be a path, an open file, a dict of name -> sequence, Biopython SeqRecords or "
                        f"(name, sequence) pairs, not {type(sequences).__name__}")
    for k, item in enumerate(sequences):
        if hasattr(item, "seq") and hasattr(item, "id"):  # a SeqRecord
            yield str(item.id), str(item.seq)
        elif isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and len(item) == 2 \
                and isinstance(item[0], str):
            yield item[0], str(item[1])
        else:
            raise TypeError(f"{what}[{k}] is a {type(item).__name__}, which names no sequence: give SeqRecords "
                            f"(SeqRecord(seq, id=NAME)), (name, sequence) pairs or a dict of name -> sequence")


def _sequence_file(sequences: Any, scratch: str, what: str) -> str:
    if isinstance(sequences, (str, os.PathLike)):
        return os.fspath(sequences)
    path = os.path.join(scratch, f"{what}.fasta")
    if _is_handle(sequences):
        return _copy_handle(sequences, path)
    with open(path, "w") as handle:
        for name, seq in _records(sequences, what):
            if not name or any(ch.isspace() for ch in name):
                raise InputError("papara_py.align", f"the {what} name {name!r} is empty or holds white space; "
                                                    "FASTA and PHYLIP names cannot")
            handle.write(f">{name}\n{seq}\n")
    return path
