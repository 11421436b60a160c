"""The reference alignment, and its rows matched to the tree's tips.

- `read_alignment`: FASTA or PHYLIP (strict, relaxed, interleaved, sequential with rows wrapped
  over lines), Stockholm or Clustal (through Bio.AlignIO), told apart by content and parsed into
  rows by io/alignment_rows.py, then checked here; large well-formed files through a bulk path
  of numba passes over the bytes (`_bulk_alignment`).
- `match_tips`: the alignment rows in tree-tip order, plus the rows that are not tips.

Whatever is wrong leaves as an `InputError` naming the file, the line or sequence and the
problem (DESIGN.md section 9).
"""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass

import numpy as np

from papara_py.errors import InputError
from papara_py.host import affinity_cpus
from papara_py.io.alignment_rows import Row, alignio_rows, fasta_rows, phylip_header, phylip_rows
from papara_py.io.checksums import Digest
from papara_py.io.input_bytes import (
    UTF8_BOM,
    WHITESPACE,
    PathLike,
    decode_name,
    read_whole,
    show_byte,
)
from papara_py.phylo.encoding import (
    DNA,
    NUCLEOTIDE_SHARE,
    Alphabet,
    alphabet_from_counts,
    alphabet_named,
    detect_alphabet,
)

_MAX_LISTED_MISSING = 5
#: ASCII byte -> its upper-case byte; other bytes map to themselves.
_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8)


@dataclass(frozen=True, eq=False)
class Alignment:
    """A reference alignment: `rows` is uint8 [N, m], the ASCII characters as given, upper-cased,
    all of `alphabet` (given, or detected from the rows: DESIGN 2)."""

    names: list[str]
    rows: np.ndarray
    path: str
    alphabet: Alphabet = DNA


@dataclass(frozen=True, eq=False)
class TipMatch:
    """Alignment rows in tree-tip order (uint8 [tips, m]) and the indices of non-tip rows."""

    tip_rows: np.ndarray
    extra: list[int]


class _HashedAside:
    """`digest` fed `data` on a thread of its own (hashlib lets go of the GIL for large data)
    while the caller parses it; `wait` when done."""

    def __init__(self, data: bytes, digest: Digest | None) -> None:
        self._thread = None
        if digest is not None:
            self._thread = threading.Thread(target=digest.update, args=(data,), name="papara-hash", daemon=True)
            self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


#: First words of a Clustal file's header line, as the programs that write the format put them
#: (Biopython's Clustal reader takes the same).
_CLUSTAL_HEADERS = (b"CLUSTAL", b"MUSCLE", b"PROBCONS", b"MSAPROBS", b"Kalign")


def read_alignment(path: PathLike, digest: Digest | None = None, alphabet: str = "auto") -> Alignment:
    """Read a FASTA, PHYLIP (strict, relaxed, interleaved), Stockholm or Clustal alignment and
    validate it.

    Told apart by content: Stockholm when the first non-blank line is its `# STOCKHOLM` header
    (hmmalign's and Pfam's format), Clustal when it is a Clustal header (`CLUSTAL ...`, `MUSCLE
    ...`), FASTA when it starts with '>', PHYLIP otherwise. Stockholm and Clustal are read by
    Bio.AlignIO (one alignment per file; the annotation lines are left out, '.' gaps are gaps);
    FASTA and PHYLIP by this module's parsers, whose errors name the line. `alphabet` is
    --alphabet: dna, protein, or auto (detected from the rows, DESIGN.md section 2); characters
    must be the alphabet's letters or the gap characters '-.?'. The file is read once; its bytes
    go into `digest`.
    """
    source = str(path)
    data = read_whole(source)
    hashing = _HashedAside(data, digest)
    try:
        alignment = _parse_alignment(data.removeprefix(UTF8_BOM), source, alphabet)
    finally:
        hashing.wait()
    if alphabet != "auto":
        _note_other_alphabet(alignment)
    return alignment


def _note_other_alphabet(alignment: Alignment) -> None:
    """--alphabet named, and the rows look like the other one (DESIGN 2's rule): a logged warning,
    not a refusal (A, C, G, T are amino acids too, so either reading may be meant), so that a
    nucleotide alignment aligned as protein by a slip of the option does not pass unremarked."""
    detected = detect_alphabet(alignment.rows)
    if detected is not alignment.alphabet:
        share = "at least" if detected.name == "dna" else "less than"
        logging.getLogger(__name__).warning(
            f"{alignment.path}: aligned as {alignment.alphabet.name}, as --alphabet says, though {share} "
            f"{NUCLEOTIDE_SHARE:.0%} of its residues are A, C, G, T, U or N, which --alphabet auto reads as "
            f"{detected.name}")


def _parse_alignment(data: bytes, source: str, alphabet: str) -> Alignment:
    """`read_alignment` of the file's bytes (its byte-order mark removed)."""
    if len(data) >= BULK_ALIGNMENT_BYTES:
        bulk = _bulk_alignment(data, source, alphabet)
        if bulk is not None:
            return bulk
    lines = data.splitlines()
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not numbered:
        raise InputError(source, "the file is empty; expected a PHYLIP, FASTA, Stockholm or Clustal alignment")
    first = numbered[0][1].lstrip()
    if first.startswith(b"# STOCKHOLM") or first.startswith(_CLUSTAL_HEADERS):
        fmt = "stockholm" if first.startswith(b"#") else "clustal"
        rows = alignio_rows(lines, fmt, source)
        expected_length = len(rows[0].sequence())
        described = f"row '{rows[0].name.decode('utf-8', 'replace')}' (line {rows[0].line}) has"
    elif numbered[0][1].startswith(b">"):
        rows = fasta_rows(numbered, source)
        expected_length = len(rows[0].sequence())
        described = f"row '{rows[0].name.decode('utf-8', 'replace')}' (line {rows[0].line}) has"
    else:
        header_line, header = numbered[0]
        n_rows, expected_length = phylip_header(header, header_line, source)
        rows = phylip_rows(lines, header_line, n_rows, expected_length, source)
        described = f"the PHYLIP header (line {header_line}) gives"
    return _build_alignment(rows, expected_length, described, source, alphabet)


#: Alignments of at least this many bytes try the bulk path first (`_bulk_alignment`); smaller ones,
#: and those the bulk path leaves, take the line parsers (whose errors name the line).
BULK_ALIGNMENT_BYTES = 1 << 20
#: Threads the bulk path copies rows with (numba, GIL-free), at most; one per 8 MiB of alignment.
_BULK_THREADS = 8


def _bulk_alignment(data: bytes, source: str, alphabet: str) -> Alignment | None:
    """The alignment of `data` in a few numba passes over its bytes (io/jit.py), or None where the
    file is not of the two plain layouts this path takes, or is not valid: then the line parsers
    read it again (from `data`, the file is not reopened) and name what is wrong.

    The layouts: FASTA (a record's sequence over any lines), and sequential PHYLIP with one line
    per row whose relaxed name (the first word) leaves the header's column count (what the line
    parser takes too when every row reads that way). Whitespace inside a sequence is dropped, as
    there; a '\\r' that is not part of a '\\r\\n', a row of another length, a name that is not
    clean UTF-8 or occurs twice, or a character outside the alphabet sends the file to the line
    parsers. The result is the line parsers' for every file this path takes
    (tests/io/test_bulk_inputs.py holds the two against each other)."""
    from papara_py.io import jit

    buffer = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(buffer == ord("\n"))
    if np.count_nonzero(buffer == ord("\r")) and data.count(b"\r") != data.count(b"\r\n"):
        return None  # a '\r' line break (bytes.splitlines knows it; the line parser takes the file)
    starts, ends, blank = jit.line_spans(buffer, breaks)
    filled = np.flatnonzero(~blank)
    if filled.size < 2:
        return None
    first_line = int(filled[0])
    if buffer[starts[first_line]] == ord(">"):  # FASTA
        heads = filled[buffer[starts[filled]] == ord(">")]
        if heads[0] != first_line:
            return None
        name_start, name_end = jit.first_word(buffer, starts[heads], ends[heads], 1)
        # every non-blank line after a header up to the next one is sequence (blank lines add nothing)
        body = filled[buffer[starts[filled]] != ord(">")]
        row_ptr = np.append(np.searchsorted(body, heads), body.size).astype(np.int64)
        seg_start, seg_end = starts[body], ends[body]
        first = slice(row_ptr[0], row_ptr[1])
        length = sum(int(np.count_nonzero(~_SPACE_BYTE[buffer[a:b]]))
                     for a, b in zip(seg_start[first], seg_end[first]))
    else:  # sequential PHYLIP, one line per row
        header = bytes(buffer[starts[first_line]:ends[first_line]]).split()
        if len(header) != 2 or not all(f.isdigit() and int(f) > 0 for f in header):
            return None
        n_rows, length = int(header[0]), int(header[1])
        rows = filled[1:]
        if rows.size != n_rows or rows[-1] - rows[0] + 1 != n_rows:
            return None  # more or fewer lines than rows, or blank lines between them: the line parser
        name_start, name_end = jit.first_word(buffer, starts[rows], ends[rows], 0)
        row_ptr = np.arange(n_rows + 1, dtype=np.int64)
        seg_start, seg_end = name_end, ends[rows]
    n_rows = row_ptr.size - 1
    if length == 0 or np.any(name_start == name_end):
        return None
    names = _alignment_names(buffer, name_start, name_end)
    if names is None:
        return None
    rows_out = np.empty((n_rows, length), dtype=np.uint8)
    counts = _alignment_copy(buffer, seg_start, seg_end, row_ptr, rows_out)
    if counts is None:
        return None
    chosen = alphabet_from_counts(counts) if alphabet == "auto" else alphabet_named(alphabet)
    if np.any((counts > 0) & (chosen.ref_code == 0)):
        return None  # an invalid character: the line parser finds and names it
    return Alignment(names=names, rows=rows_out, path=source, alphabet=chosen)


#: bytes.split()'s whitespace, as a table of the 256 byte values.
_SPACE_BYTE = np.zeros(256, dtype=bool)
_SPACE_BYTE[list(WHITESPACE)] = True
_NAME_REFUSED = re.compile("[\\x00-\\x1f\\x7f]")


def _alignment_names(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str] | None:
    """The names at buffer[starts:ends] (whitespace-free) as text, decoded at once; None where one
    is not UTF-8, holds a control character (`decode_name` refuses those) or occurs twice."""
    lengths = ends - starts
    slots = lengths + 1  # each name and a separator
    at = np.repeat(starts - (np.cumsum(slots) - slots), slots) + np.arange(int(slots.sum()))
    joined = buffer[np.minimum(at, buffer.size - 1)]
    joined[np.cumsum(slots) - 1] = ord("\n")  # a separator no name holds
    try:
        text = joined.tobytes()[:-1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _NAME_REFUSED.search(text.replace("\n", "")):
        return None
    names = text.split("\n")
    if len(set(names)) != len(names):
        return None
    return names


def _alignment_copy(buffer: np.ndarray, seg_start, seg_end, row_ptr, out: np.ndarray) -> np.ndarray | None:
    """Copy every row into `out` (io/jit.copy_rows), upper-cased, in GIL-free pieces on up to
    _BULK_THREADS threads; the counts of the characters (int64 [256], upper-cased: the alphabets'
    letters are valid in either case), or None where a row has another length than out's."""
    from papara_py.io import jit
    from papara_py.phylo.counts import byte_counts

    n_rows = out.shape[0]
    pieces = max(1, min(_BULK_THREADS, affinity_cpus(), out.nbytes >> 23, n_rows))
    bounds = np.linspace(0, n_rows, pieces + 1).astype(np.int64)

    def copy(p: int) -> tuple[int, np.ndarray]:
        wrong = jit.copy_rows(buffer, seg_start, seg_end, row_ptr, bounds[p], bounds[p + 1], out)
        return wrong, byte_counts(out[bounds[p]:bounds[p + 1]])

    if pieces == 1:
        done = [copy(0)]
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(pieces, thread_name_prefix="papara-alignment") as pool:
            done = list(pool.map(copy, range(pieces)))
    if any(wrong >= 0 for wrong, _ in done):
        return None
    counts = np.sum([piece for _, piece in done], axis=0)
    if counts[_LOWER_CASE].any():  # rare: the rows are upper-cased (the counts' validity is the same)
        for p in range(pieces):
            jit.upper_rows(out, bounds[p], bounds[p + 1], _UPPER)
        counts = _UPPER_COUNTS @ counts
    return counts


_LOWER_CASE = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8) != np.arange(256)
#: [256, 256]: counts of bytes -> counts of their upper-case bytes
_UPPER_COUNTS = np.zeros((256, 256), dtype=np.int64)
_UPPER_COUNTS[np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8), np.arange(256)] = 1


def _build_alignment(rows: list[Row], length: int, described: str, source: str, alphabet: str) -> Alignment:
    """Check names, lengths and characters of assembled rows (in the alphabet named, or the one
    detected for "auto"); encode them as uint8 ASCII."""
    names: list[str] = []
    first_line: dict[str, int] = {}
    for row in rows:
        where = f"line {row.line}"
        if not row.name:
            raise InputError(source, "a row without a name", where)
        name = decode_name(row.name, source, where)
        if name in first_line:
            raise InputError(
                source,
                f"duplicate sequence name '{name}' (lines {first_line[name]} and {row.line})",
                where,
            )
        first_line[name] = row.line
        names.append(name)
    sequences = [row.sequence() for row in rows]
    for name, row, sequence in zip(names, rows, sequences):
        if len(sequence) != length:
            raise InputError(
                source,
                f"row '{name}' has {len(sequence)} characters, but {described} {length}",
                f"line {row.line}",
            )
    ascii_rows = np.frombuffer(b"".join(sequences), dtype=np.uint8).reshape(len(rows), length)
    chosen = detect_alphabet(ascii_rows) if alphabet == "auto" else alphabet_named(alphabet)
    bad = np.argwhere(chosen.ref_code[ascii_rows] == 0)
    if bad.size:
        index, column = (int(v) for v in bad[0])
        line, line_column = rows[index].locate(column)
        raise InputError(
            source,
            f"invalid character {show_byte(int(ascii_rows[index, column]))} in row "
            f"'{names[index]}' at alignment column {column + 1} (column {line_column} of the line); "
            f"the alignment is read as {chosen.name}: {chosen.describe()} or gaps -.?{_how_chosen(alphabet)}",
            f"line {line}",
        )
    return Alignment(names=names, rows=_UPPER[ascii_rows], path=source, alphabet=chosen)


def _how_chosen(alphabet: str) -> str:
    """Why the alignment has its alphabet, for messages: given, or how `auto` decided."""
    if alphabet != "auto":
        return f" (--alphabet {alphabet})"
    return (f" (--alphabet auto: DNA when at least {NUCLEOTIDE_SHARE:.0%} of the residues are A, C, G, T, U "
            f"or N, else protein; give --alphabet to choose)")


def _spaced_name_hint(missing: list[str], rows: dict[str, int]) -> str:
    """Where a missing tip holds whitespace (a quoted Newick label) and a row is that name with
    '_' for it, or its first word (an alignment's names end at whitespace), a sentence saying so."""
    for name in missing:
        if not any(character.isspace() for character in name):
            continue
        for candidate, how in (("_".join(name.split()), "with '_' for each space"),
                               (name.split()[0], "its first word")):
            if candidate in rows:
                return (f". The tip '{name}' has a space where the alignment names a row {candidate!r} "
                        f"({how}): an alignment's names end at whitespace, so write the tip {candidate} "
                        f"in the tree")
    return ""


def match_tips(tip_names: list[str], alignment: Alignment, tree_path: str) -> TipMatch:
    """Alignment rows in tree-tip order; rows that are not tips become extra reads (DESIGN 9)."""
    n_columns = alignment.rows.shape[1]
    if n_columns < 2:
        raise InputError(
            alignment.path, f"the alignment has {n_columns} column(s); at least 2 are needed"
        )
    index = {name: i for i, name in enumerate(alignment.names)}
    missing = [name for name in tip_names if name not in index]
    if missing:
        listed = ", ".join(f"'{name}'" for name in missing[:_MAX_LISTED_MISSING])
        hidden = len(missing) - _MAX_LISTED_MISSING
        more = f" and {hidden} more" if hidden > 0 else ""
        raise InputError(
            alignment.path,
            f"{len(missing)} tip(s) of the tree {tree_path} are missing from the alignment: "
            f"{listed}{more}{_spaced_name_hint(missing, index)}",
        )
    tips = set(tip_names)
    extra = [i for i, name in enumerate(alignment.names) if name not in tips]
    rows = alignment.rows[np.array([index[name] for name in tip_names], dtype=np.intp)]
    return TipMatch(tip_rows=rows, extra=extra)
