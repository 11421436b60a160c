"""Exports of a run file (DESIGN 7): PaPaRa-compatible extended alignment, EPA-ng queries, jplace.

phylip / fasta: reference rows then read rows. Wherever any read inserts residues between two
reference columns, insertion columns are added (as many as the longest insertion there); they are
gaps in every other row, and each read's inserted residues fill them from the left.
stockholm: the same extended alignment as Stockholm 1.0 (one block), each read followed by its
residues' posterior probabilities as hmmalign writes them (`#=GR <read> PP`: '0'-'9' and '*', DESIGN
5; '.' where the read has no residue; runs decoded at temperature 0 have none and get no PP line).
epa: the aligned reads only, in reference columns (insertions removed), as EPA-ng expects queries.
jplace: each aligned read's candidate edges as a jplace v3 placement document (`papara_py.io.jplace`).

Alphabets: rows are written as stored, in the letters of the run's alphabet (`RunFile.alphabet`,
DNA or protein), which also decides what a row may hold; protein reads are always "+".

Orientation: every export shows each read as it was aligned, i.e. reverse-complemented where
/reads/strand is "-". /reads/aligned, /reads/start and /reads/cigar already describe that oriented
read; /reads/sequence holds the read as given in the input, so its inserted residues are taken
from its reverse complement for "-" reads (`oriented_sequence`).

Reads without an alignment (status other than "aligned") have no row to export; they are
counted in a notice (logging; the command line shows it on stderr), never dropped silently.
`keep` (a bool per read) leaves out the aligned reads it does not hold in the same way: papara-py
passes the complement of the outlier rule's flags (model/outliers.py; `export --keep-outliers`
keeps them), so the notice counts those reads as outliers, apart from the ones not aligned.

Every export holds each name once and reads back as an alignment (`export`): an alignment taxon
that is not in the tree appears once, as the read it was aligned as; names with whitespace (from
strict PHYLIP's 10-character names) are written with '_' and the renaming listed beside
(io/export_names.py: the rule, and the main job's refusal of names the exports would write alike).
"""

from __future__ import annotations

import io
import logging
import os
import re
from pathlib import Path
from typing import IO, Iterator

import numpy as np

from papara_py.errors import InputError
from papara_py.io.cigar import cigar_columns, parse_cigar
from papara_py.io.export_names import exported_name
from papara_py.io.outputs import atomic_path, check_output, is_direct, output_stream
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile
from papara_py.phylo.encoding import reverse_complement

_log = logging.getLogger(__name__)

GAP = ord("-")


def insertion_runs(start: int, cigar: str) -> Iterator[tuple[int, int, int]]:
    """(position, read offset, length) of each insertion: residues placed before column `position`."""
    column, offset = start, 0
    for length, op in parse_cigar(cigar):
        if op == "I":
            yield column, offset, length
            offset += length
        elif op == "M":
            column += length
            offset += length
        else:
            column += length


def oriented_sequence(sequence: str, strand: str) -> np.ndarray:
    """The read as aligned (uint8 ASCII): `sequence` as given, reverse-complemented for strand "-"."""
    residues = np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)
    return reverse_complement(residues) if strand == "-" else residues


def _rows(named_rows: Iterator[tuple[str, bytes, bytes | None]], fmt: str, n_rows: int, width: int, out: IO[bytes],
          renamed: dict[str, str] | None = None) -> None:
    renamed = renamed or {}
    if fmt == "stockholm":
        rows = [(renamed.get(name, name), row, pp) for name, row, pp in named_rows]
        pad = max([len(name) for name, _, _ in rows] + [len("#=GR  PP") + max((len(n) for n, _, _ in rows), default=0)])
        out.write(b"# STOCKHOLM 1.0\n")
        for name, row, pp in rows:
            out.write(name.encode().ljust(pad + 1) + row + b"\n")
            if pp is not None:
                out.write(f"#=GR {name} PP".encode().ljust(pad + 1) + pp + b"\n")
        out.write(b"//\n")
        return
    if fmt == "phylip":
        out.write(f"{n_rows} {width}\n".encode())
        for name, row, _ in named_rows:
            out.write(renamed.get(name, name).encode() + b" " + row + b"\n")
    else:
        for name, row, _ in named_rows:
            out.write(b">" + renamed.get(name, name).encode() + b"\n" + row + b"\n")


def export(run_path: str, fmt: str, output: str, keep: np.ndarray | None = None) -> None:
    """Write `run_path` in `fmt` ("phylip", "fasta", "stockholm", "epa" or "jplace") to `output`: atomically to a
    regular file, directly to `-` (standard output), a device or a FIFO (io/outputs.py).

    `keep`: bool [Q] over the run's reads, the aligned reads to write (None: every aligned read);
    the others are left out like reads without an alignment, and counted as outliers in the
    notice (module docstring).

    Every row has its own name and the file reads back as an alignment (`exported_names`): the
    reference row of a taxon that was aligned as an extra read (not in the tree) is left out, its
    read row stands for it, and names that hold whitespace are written with '_' instead, the
    renaming listed in OUTPUT.names.tsv beside the export.
    """
    if fmt == "jplace":
        from papara_py.io.jplace import write_jplace

        with RunFile(run_path) as run, output_stream(output) as out:
            text = io.TextIOWrapper(out, encoding="utf-8")
            write_jplace(run, text, _checked_keep(run, keep))
            text.flush()
            text.detach()  # the stream belongs to output_stream
            left_out = _left_out(run, keep)
        _notice_skipped(left_out, output)
        return
    with RunFile(run_path) as run:
        aligned = run.column("status") == STATUS_ALIGNED
        left_out = _left_out(run, keep, aligned)
        aligned_ids = np.flatnonzero(aligned & _checked_keep(run, keep))
        read_names = [str(name) for name in run.names()[aligned_ids]]
        replaced = set(read_names) & set(run.reference_names) if fmt != "epa" else set()
        names = read_names if fmt == "epa" else \
            [name for name in run.reference_names if name not in replaced] + read_names
        renamed = exported_names(names, run)
        if renamed and is_direct(output):
            raise InputError(output, f"{len(renamed)} names hold whitespace, which {fmt} cannot carry (e.g. "
                                     f"{next(iter(renamed))!r}); export to a file: they are written with '_' "
                                     f"and the renaming is listed beside it")
        with output_stream(output) as out:
            if fmt == "epa":
                rows = ((name, _check_row(run, row, "an aligned row").tobytes(), None)
                        for name, row in zip(read_names, run.aligned_rows(aligned_ids)))
                _rows(rows, "fasta", len(aligned_ids), run.n_columns, out, renamed)
            else:
                width, named_rows = extended_rows(run, aligned_ids, skip_reference=replaced,
                                                  posteriors=fmt == "stockholm")
                _rows(named_rows, fmt, len(names), width, out, renamed)
        if renamed:
            _write_renaming(output, renamed, fmt)
    _notice_skipped(left_out, output)


def _write_renaming(output: str, renamed: dict[str, str], fmt: str) -> None:
    """OUTPUT.names.tsv: the names `output` holds with '_' for whitespace, and a notice."""
    with atomic_path(names_file(output)) as tmp:
        tmp.write_text("exported\toriginal\n" + "".join(f"{new}\t{old}\n" for old, new in renamed.items()),
                       encoding="utf-8")
    _log.info(f"{len(renamed)} names hold whitespace, which {fmt} cannot carry; they are written with '_' "
              f"instead, the renaming listed in {names_file(output)}")


def _checked_keep(run: RunFile, keep: np.ndarray | None) -> np.ndarray:
    """`keep` as bool [Q] (None: every read); a ValueError if it is not one value per read."""
    if keep is None:
        return np.ones(run.n_reads, dtype=bool)
    keep = np.asarray(keep)
    if keep.dtype != bool or keep.shape != (run.n_reads,):
        raise ValueError(f"keep must be a bool array over the run's {run.n_reads} reads, not "
                         f"{keep.dtype} {keep.shape}")
    return keep


def _left_out(run: RunFile, keep: np.ndarray | None, aligned: np.ndarray | None = None) -> tuple[int, int]:
    """(reads without an alignment, aligned reads that `keep` leaves out)."""
    if aligned is None:
        aligned = run.column("status") == STATUS_ALIGNED
    return run.n_reads - int(aligned.sum()), int((aligned & ~_checked_keep(run, keep)).sum())


def _notice_skipped(left_out: tuple[int, int], output: str) -> None:
    """Reads left out are never dropped silently: those without an alignment and the outliers
    (aligned reads not kept) are counted in a notice each."""
    not_aligned, outliers = left_out
    if not_aligned:
        _log.info(f"{not_aligned} reads without an alignment (status other than \"aligned\") are not in {output}")
    if outliers:
        _log.info(f"left out {outliers} outlier reads of {output} (reads whose penalty per residue is no better than "
                  f"random sequence's: papara-py report states the rule with the run's thresholds; "
                  f"--keep-outliers keeps them)")


def export_epa_pair(run_path: str, directory: str, keep: np.ndarray | None = None) -> tuple[str, str]:
    """The file pair EPA-ng reads, as `epa-ng --split` names it: DIR/reference.fasta (the reference
    rows of the taxa in the tree: alignment taxa missing from the tree were aligned as reads) and
    DIR/query.fasta (the aligned reads in `keep`, as `--format epa`, see `export`); each written atomically. `directory`
    is created if missing (its parent must exist). Returns the two paths."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise InputError(directory, "--outdir names a file, not a directory")
    if not target.parent.is_dir():
        raise InputError(directory, f"the parent directory {target.parent} does not exist")
    reference_path, query_path = epa_pair_paths(directory)
    for path in (reference_path, query_path):
        check_output(path, [("the run file", run_path)], option="--outdir", directory_made=True)
    target.mkdir(exist_ok=True)
    with RunFile(run_path) as run:
        tips = _tip_names(run)
        rows = ((name, row.tobytes(), None) for name, row in zip(run.reference_names, run.reference_alignment())
                if name in tips)
        renamed = exported_names([name for name in run.reference_names if name in tips], run)
        with atomic_path(reference_path) as tmp, open(tmp, "wb") as out:
            _rows(rows, "fasta", len(tips), run.n_columns, out, renamed)
        if renamed:
            _write_renaming(reference_path, renamed, "fasta")
    export(run_path, "epa", query_path, keep)
    return reference_path, query_path


def epa_pair_paths(directory: str) -> tuple[str, str]:
    """DIR/reference.fasta and DIR/query.fasta, the EPA pair of `export --outdir DIR`."""
    return os.path.join(directory, "reference.fasta"), os.path.join(directory, "query.fasta")


def export_outputs(output: str | None, outdir: str | None) -> dict[str, str | None]:
    """Every file `export -o FILE` or `export --outdir DIR` may write, by its role in
    io/output_roles.ROLES["export"]: FILE and FILE.names.tsv (written where names hold whitespace;
    none for a stream, which such names refuse), or the EPA pair and their names lists."""
    if outdir is not None:
        reference, query = epa_pair_paths(outdir)
        return {"reference": reference, "query": query, "reference names": names_file(reference),
                "query names": names_file(query)}
    return {"export": output, "names": None if output is None or is_direct(output) else names_file(output)}


def _tip_names(run: RunFile) -> set[str]:
    """Tip labels of the run's tree (its `{n}` edge numbers removed)."""
    import dendropy  # a quarter of a second to import: only the EPA pair needs it

    newick = re.sub(r"\{\d+\}", "", run.newick_numbered)
    tree = dendropy.Tree.get(data=newick, schema="newick", preserve_underscores=True)
    return {leaf.taxon.label for leaf in tree.leaf_node_iter()}


def names_file(output: str) -> str:
    """Where the renaming of an export's names is listed: OUTPUT.names.tsv."""
    return f"{output}.names.tsv"


def exported_names(names: list[str], run: RunFile) -> dict[str, str]:
    """{original: exported} for the names that hold whitespace (each run of it becomes '_');
    InputError if two rows would carry one name, as they cannot be told apart downstream, or a
    name is empty or holds control characters (papara-py's parsers never let such names in)."""
    run_path = run.path
    for name in names:
        if not name or not name.strip() or any(ord(c) < 32 and c not in " \t" or ord(c) == 127 for c in name):
            raise run.damaged(f"the name {name[:40]!r} is empty or holds control characters")
    renamed = {name: exported_name(name) for name in names if exported_name(name) != name}
    seen: dict[str, str] = {}
    for name in names:
        final = renamed.get(name, name)
        if final in seen:
            same = "" if seen[final] == name else f" (from {seen[final]!r} and {name!r})"
            raise InputError(run_path, f"two rows of the export would be named {final!r}{same}; an older "
                                       f"papara-py accepted names that the exports write alike (now refused "
                                       f"before scoring): rename one of them and run again")
        seen[final] = name
    return renamed


_CIGAR = re.compile(r"(?:[1-9][0-9]*[MID])*")


def _check_path(run: RunFile, q: int, start: int, cigar: str, m: int) -> None:
    """Read q's start and CIGAR describe a path inside the m reference columns, else the run is damaged."""
    if not isinstance(cigar, str) or not _CIGAR.fullmatch(cigar) or not 0 <= start < m:
        raise run.damaged(f"read {q} has the start {start} and CIGAR {str(cigar)[:40]!r}, which describe no "
                          f"alignment in {m} columns")
    columns = sum(length for length, op in parse_cigar(cigar) if op != "I")
    if start + columns > m:
        raise run.damaged(f"read {q}'s CIGAR {cigar[:40]!r} from column {start} runs past the {m} columns")


def _check_row(run: RunFile, row: np.ndarray, what: str) -> np.ndarray:
    """`row` if every byte is a residue or gap an alignment of the run's alphabet may hold, else
    the run is damaged."""
    ref_code = run.alphabet.ref_code
    if not ref_code[row].all():
        bad = int(row[np.flatnonzero(ref_code[row] == 0)[0]])
        raise run.damaged(f"{what} holds the byte 0x{bad:02x}, which is no {run.alphabet.name} residue or gap")
    return row


def _checked_residues(run: RunFile, q: int, sequence: str, strand: str, cigar: str) -> np.ndarray:
    """Read q as aligned (`oriented_sequence`), checked against its strand and CIGAR."""
    strands = ("+", "-") if run.alphabet.stranded else ("+",)
    if strand not in strands or not isinstance(sequence, str) or not sequence.isascii():
        raise run.damaged(f"read {q} has the strand {strand!r} ({run.alphabet.name} reads: {' or '.join(strands)}) "
                          f"or a sequence that is not ASCII text")
    residues = oriented_sequence(sequence, strand)
    if not run.alphabet.read_code[residues].all():
        raise run.damaged(f"read {q}'s sequence holds characters that are no {run.alphabet.name} residues")
    if sum(length for length, op in parse_cigar(cigar) if op != "D") != len(residues):
        raise run.damaged(f"read {q}'s CIGAR does not hold its {len(residues)} residues")
    return residues


def _pp_row(run: RunFile, q: int, placed: np.ndarray, width: int) -> bytes | None:
    """Read q's PP line in the extended alignment: its residues' PP code (/reads/pp) at their
    extended columns `placed`, '.' elsewhere; None where the run has no posteriors."""
    pp = str(run.column("pp", q))
    if not pp:
        return None
    if len(pp) != placed.size:
        raise run.damaged(f"read {q}'s posterior probabilities (/reads/pp) hold {len(pp)} values for "
                          f"{placed.size} residues")
    row = np.full(width, ord("."), np.uint8)
    row[placed] = np.frombuffer(pp.encode("ascii"), np.uint8)
    return row.tobytes()


def extended_rows(run: RunFile, aligned_ids: np.ndarray, skip_reference: set[str] | frozenset[str] = frozenset(),
                  posteriors: bool = False) -> tuple[int, Iterator[tuple[str, bytes, bytes | None]]]:
    """The extended alignment: its width and (name, row, PP row) for the reference (less the taxa
    named in `skip_reference`; PP row None), then reads `aligned_ids` (with `posteriors`, each
    read's PP code at its residues' columns and '.' elsewhere, where the run has posteriors;
    else None).

    Insertion columns are added wherever a read inserts residues (module docstring); rows are
    produced one at a time, so only the reference and the per-read columns are held in memory.
    """
    reference = run.reference_alignment()
    m = run.n_columns
    starts = run.column("start")
    cigars = run.column("cigar")
    strands = run.column("strand")
    read_names = run.names()
    widest = np.zeros(m + 1, dtype=np.int64)  # insertion columns before reference column p
    for q in aligned_ids:
        _check_path(run, int(q), int(starts[q]), cigars[q], m)
        for position, _, length in insertion_runs(int(starts[q]), cigars[q]):
            widest[position] = max(widest[position], length)
    # extended index of reference column c, and of the first insertion column before it
    insert_at = np.arange(m + 1) + np.concatenate(([0], np.cumsum(widest)[:-1]))
    column_at = insert_at[:m] + widest[:m]
    width = int(m + widest.sum())

    def rows() -> Iterator[tuple[str, bytes]]:
        for name, row in zip(run.reference_names, reference):
            if name in skip_reference:
                continue
            _check_row(run, row, f"reference row {name[:40]!r}")
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = row
            yield name, extended.tobytes(), None
        for q, aligned in zip(aligned_ids, run.aligned_rows(aligned_ids)):
            _check_row(run, aligned, f"the aligned row of read {int(q)}")
            extended = np.full(width, GAP, dtype=np.uint8)
            extended[column_at] = aligned
            residues = _checked_residues(run, int(q), run.column("sequence", int(q)), strands[q], cigars[q])
            placed = cigar_columns(int(starts[q]), cigars[q], residues.size)  # each residue's column
            placed = np.where(placed >= 0, column_at[np.maximum(placed, 0)], -1)
            for position, offset, length in insertion_runs(int(starts[q]), cigars[q]):
                first = insert_at[position]
                extended[first:first + length] = residues[offset:offset + length]
                placed[offset:offset + length] = np.arange(first, first + length)
            yield read_names[q], extended.tobytes(), _pp_row(run, int(q), placed, width) if posteriors else None

    return width, rows()
