"""The Python API: align reads from a notebook or a workflow script, and read runs back.

    import papara_py

    run = papara_py.align("tree.nwk", "ref.phy", "reads.fa", candidates=3)
    for read in run:                      # per-read results, in input order
        print(read.name, read.edge, read.score, read.cigar)
    msa = run.to_alignment()              # Bio.Align.MultipleSeqAlignment (extended alignment)
    table = run.to_pandas()               # one row per read (pandas, when installed)
    same = papara_py.open_run(run.path)   # any run file written by the CLI or the API

`align` takes the command line's options as keywords (`--gap-open 2` is `gap_open=2`), with the
same defaults and the same checks: it parses them with the CLI's own parser, so the two cannot
drift apart. Inputs are file paths, or sequences held in memory (a Newick string or a dendropy
tree; a dict of name -> sequence, Biopython records or a MultipleSeqAlignment, or (name, sequence)
pairs), which are written to a temporary directory first. Without `output` the run file lives in
a temporary directory that is removed when the `Run` is garbage-collected or closed.

Errors in the inputs or options raise `InputError` (`OptionError` for options) with the message
the CLI would print. The run file's layout is specified in docs/DESIGN.md section 7.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from papara_py.cli import build_parser, main_job_config
from papara_py.errors import InputError
from papara_py.io.export import extended_rows
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile

#: Reads per chunk when a run is iterated (their columns are read from the file a chunk at a time).
ITERATION_CHUNK = 4096

#: Keywords of `align` that name its inputs and output, not options.
_RESERVED = {"tree", "alignment", "reads", "output", "help", "version"}


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


class Run:
    """A papara-py run file, read through `RunFile`; no file handle is held between calls.

    Attributes: `path`, `n_reads`, `n_columns`, `tree` (Newick with jplace `{n}` edge numbers),
    `reference_names`, `alphabet` ("dna" or "protein"), `record` (the run record: parameters,
    timings, checksums, ...), and `command_line` (the CLI call, or the `align(...)` call, that
    wrote it).
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
        self._cleanup = (weakref.finalize(self, shutil.rmtree, _owned_directory, True)
                         if _owned_directory else None)

    @property
    def parameters(self) -> dict:
        """The model's parameters the run used (mismatch, cgap, gap_open, gap_extend, insertion,
        near_mismatch, column_weight, temperature, and the preset they equal); runs written before
        near states have no near_mismatch (then the mismatch penalty), before the column profile
        cost no column_weight (then 0), before the posterior decoding (0.12.0) no temperature (then
        0: the Viterbi traceback), and between 0.5.0 and 0.11.0 the traceback settings of their
        time (vote_window, nearest_bonus, band_margin, location_check, second_model)."""
        return dict(self.record.get("parameters") or {})

    def close(self) -> None:
        """Remove the run file if `align` made it in a temporary directory (no-op otherwise)."""
        if self._cleanup is not None:
            self._cleanup()

    def __len__(self) -> int:
        return self.n_reads

    def __iter__(self) -> Iterator[ReadResult]:
        with RunFile(self.path) as run:
            for lo in range(0, run.n_reads, ITERATION_CHUNK):
                yield from _chunk_results(run, slice(lo, min(run.n_reads, lo + ITERATION_CHUNK)))

    def __repr__(self) -> str:
        return f"Run({self.path!r}: {self.n_reads} reads, {self.n_columns} columns)"

    def to_alignment(self, reference: bool = True):
        """The extended alignment as a Bio.Align.MultipleSeqAlignment, as `export --format fasta`
        writes it: reference rows (unless `reference=False`), then every aligned read, with
        insertion columns added where reads insert residues. Held in memory: for millions of reads
        use `papara-py export` instead."""
        from Bio.Align import MultipleSeqAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        with RunFile(self.path) as run:
            aligned_ids = np.flatnonzero(run.column("status") == STATUS_ALIGNED)
            _, rows = extended_rows(run, aligned_ids)
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

        Requires pandas (not a dependency of papara-py: `pip install pandas`)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Run.to_pandas needs pandas: pip install pandas") from None
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
        """One row per read and candidate edge: name, rank (0 = best), edge, score (aligned reads only)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Run.candidates_to_pandas needs pandas: pip install pandas") from None
        with RunFile(self.path) as run:
            edge, score = run.column("candidates/edge"), run.column("candidates/score")
            read, rank = np.nonzero(edge >= 0)
            return pandas.DataFrame({"name": run.names()[read], "rank": rank,
                                     "edge": edge[read, rank], "score": score[read, rank]})


def _chunk_results(run: RunFile, rows: slice) -> Iterator[ReadResult]:
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
            weights=tuple(float(w) for e, w in zip(cand_edge[i], cand_weight[i]) if e >= 0), pp=pp[i])


def open_run(path: str | os.PathLike) -> Run:
    """Open a run file written by `papara-py` or `align` (checked: an InputError if it is not one)."""
    return Run(path)


def align(tree: Any, alignment: Any, reads: Any, output: str | os.PathLike | None = None,
          **options: Any) -> Run:
    """Align `reads` to the reference `alignment` and `tree`, the phylogeny-aware way (PaPaRa).

    tree: a Newick file path, a Newick string, or a dendropy.Tree.
    alignment: a PHYLIP/FASTA file path, a dict of name -> aligned sequence, Biopython SeqRecords or
        a MultipleSeqAlignment, or (name, sequence) pairs.
    reads: a FASTA/FASTQ(.gz) file path, or in memory like the alignment (unaligned sequences).
    output: the run file to write (HDF5); None: a temporary file, removed with the returned Run.
    options: the command line's options by their long names, `-` as `_` (mismatch=2,
        gap_open=2, device="cpu", threads=4, candidates=3, strand="forward", quiet=True, ...);
        same defaults as `papara-py --help` shows. Flags take True.
    Returns the `Run`. Raises InputError (bad input) or OptionError (bad option), as the CLI reports.
    """
    _refuse_reserved(options, "papara_py.align")
    owned = None if output is not None else tempfile.mkdtemp(prefix="papara-py-run-")
    try:
        with tempfile.TemporaryDirectory(prefix="papara-py-inputs-") as scratch:
            paths = [_tree_file(tree, scratch), _sequence_file(alignment, scratch, "alignment"),
                     _sequence_file(reads, scratch, "reads")]
            target = str(output) if output is not None else os.path.join(owned, "run.h5")
            argv = ["-t", paths[0], "-s", paths[1], "-r", paths[2], "-o", target, *_option_words(options)]
            args = build_parser(raising=True).parse_args(argv)
            from papara_py.run.runner import run as run_pipeline

            shown = ", ".join([_shown(tree, "tree"), _shown(alignment, "alignment"), _shown(reads, "reads")]
                              + [f"{key}={value!r}" for key, value in options.items()])
            run_pipeline(main_job_config(args, f"papara_py.align({shown})"))
        return Run(target, owned)
    except BaseException:
        if owned:
            shutil.rmtree(owned, ignore_errors=True)
        raise


def align_samples(tree: Any, alignment: Any, samples: Sequence[str | os.PathLike] | Mapping[str, Any],
                  outdir: str | os.PathLike, **options: Any) -> list[Run]:
    """Align several samples to one reference in one run (`papara-py -r S1.fa S2.fa --outdir DIR`):
    the reference's profiles, GPUs and compiled kernels are made once, and the samples' batches
    stream through one engine (papara_py/run/samples.py).

    samples: reads file paths, each written to `outdir`/NAME.h5 (`S1.fastq.gz` -> `S1.h5`); or a
        dict of NAME -> reads held in memory (as `align` takes them), written to NAME.h5.
    outdir: an existing directory. tree, alignment and options: as for `align`.
    Returns one `Run` per sample, in order. Raises InputError or OptionError as `align` does;
    bad reads in one sample keep the run files of the samples before it.
    """
    _refuse_reserved(options, "papara_py.align_samples")
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
        else:
            reads = [os.fspath(path) for path in samples]
        argv = ["-t", _tree_file(tree, scratch), "-s", _sequence_file(alignment, scratch, "alignment"),
                "-r", *reads, "--outdir", os.fspath(outdir), *_option_words(options)]
        args = build_parser(raising=True).parse_args(argv)
        from papara_py.run.runner import run as run_pipeline

        shown = ", ".join([_shown(tree, "tree"), _shown(alignment, "alignment"), f"samples=<{len(reads)}>",
                           f"outdir={os.fspath(outdir)!r}"] + [f"{key}={value!r}" for key, value in options.items()])
        summaries = run_pipeline(main_job_config(args, f"papara_py.align_samples({shown})"))
    return [Run(summary.output) for summary in summaries]


def _refuse_reserved(options: Mapping[str, Any], where: str) -> None:
    """Inputs and outputs are arguments of their own, never options (InputError)."""
    unknown = _RESERVED & set(options)
    if unknown:
        raise InputError(where, f"{min(unknown)!r} is not an option here")


def _option_words(options: Mapping[str, Any]) -> list[str]:
    words: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not None and value is not False:
            words += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return words


def _shown(value: Any, what: str) -> str:
    """How an input appears in the run record's command line: its path, or what it held."""
    if isinstance(value, (str, os.PathLike)) and os.path.exists(value):
        return f"{what}={os.fspath(value)!r}"
    return f"{what}=<in memory>"


def _tree_file(tree: Any, scratch: str) -> str:
    if isinstance(tree, os.PathLike) or (isinstance(tree, str) and not tree.lstrip().startswith("(")):
        return os.fspath(tree)
    if isinstance(tree, str):
        text = tree
    elif hasattr(tree, "as_string"):  # a dendropy.Tree
        text = tree.as_string(schema="newick", suppress_rooting=True)
    else:
        raise InputError("papara_py.align", f"tree must be a path, a Newick string or a dendropy.Tree, "
                                            f"not {type(tree).__name__}")
    path = os.path.join(scratch, "tree.nwk")
    with open(path, "w") as handle:
        handle.write(text)
    return path


def _records(sequences: Any, what: str) -> Iterable[tuple[str, str]]:
    if isinstance(sequences, Mapping):
        return ((str(name), str(seq)) for name, seq in sequences.items())
    try:
        items = iter(sequences)
    except TypeError:
        raise InputError("papara_py.align", f"{what} must be a path, a dict of name -> sequence, "
                                            f"Biopython records or (name, sequence) pairs") from None
    return ((str(item.id), str(item.seq)) if hasattr(item, "seq") else (str(item[0]), str(item[1]))
            for item in items)


def _sequence_file(sequences: Any, scratch: str, what: str) -> str:
    if isinstance(sequences, (str, os.PathLike)):
        return os.fspath(sequences)
    path = os.path.join(scratch, f"{what}.fasta")
    with open(path, "w") as handle:
        for name, seq in _records(sequences, what):
            if not name or any(ch.isspace() for ch in name):
                raise InputError("papara_py.align", f"the {what} name {name!r} is empty or holds white space; "
                                                    "FASTA and PHYLIP names cannot")
            handle.write(f">{name}\n{seq}\n")
    return path
