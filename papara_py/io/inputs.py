"""Parse and validate the three user inputs: reference tree, reference alignment and reads.

This is the only module that reads user files. Everything wrong with them leaves here as an
`InputError` naming the file, the line (and sequence or position) and the problem, so the CLI can
print one paragraph and exit 2 (DESIGN.md section 9); no parser exception (UnicodeDecodeError,
gzip errors, dendropy's errors) escapes for malformed content.

- `read_tree`: one Newick tree via dendropy, tips labelled, unique, at least three, of any depth.
- `read_alignment`: FASTA or PHYLIP (strict, relaxed, interleaved, sequential with rows wrapped
  over lines), Stockholm or Clustal (through Bio.AlignIO), told apart by content.
- `iter_reads`: FASTA or FASTQ, plain or compressed (gzip, bzip2, xz; told apart by their first
  bytes), streamed record by record.
- `match_tips`: the alignment rows in tree-tip order, plus the rows that are not tips.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import sys
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, islice

import dendropy
import numpy as np
from dendropy.dataio.newickreader import NewickReader
from dendropy.utility.error import DataParseError

from papara_py.errors import InputError
from papara_py.host import affinity_cpus
from papara_py.io.checksums import Digest, drain, open_input
from papara_py.io.reads import ReadChunk
from papara_py.phylo.encoding import (
    DNA,
    IS_GAP,
    NUCLEOTIDE_SHARE,
    Alphabet,
    alphabet_named,
    alphabet_from_counts,
    detect_alphabet,
)
from papara_py.phylo.tree import EdgeTree

PathLike = str | os.PathLike

#: What compressed files start with (what `_compression` tells them apart by).
_COMPRESSION_MAGIC = (("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("xz", b"\xfd7zXZ\x00"),
                      ("zstd", b"\x28\xb5\x2f\xfd"), ("zip", b"PK\x03\x04"))
_MAGIC_BYTES = max(len(magic) for _, magic in _COMPRESSION_MAGIC)
_UTF8_BOM = codecs.BOM_UTF8
_STRICT_NAME_WIDTH = 10
_MAX_LISTED_MISSING = 5
#: ASCII byte -> its upper-case byte; other bytes map to themselves.
_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=np.uint8)
_RELAXED_NAME = re.compile(rb"\s*(\S+)\s*")
#: The bytes that bytes.split() treats as whitespace.
_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")


@dataclass(frozen=True, eq=False)
class Alignment:
    """A reference alignment: `rows` is uint8 [N, m], the ASCII characters as given, upper-cased,
    all of `alphabet` (given, or detected from the rows: DESIGN 2)."""

    names: list[str]
    rows: np.ndarray
    path: str
    alphabet: Alphabet = DNA


@dataclass(frozen=True)
class RawRead:
    """One read as parsed: upper-cased ASCII residues (b"" for an empty read), header line."""

    name: str
    sequence: bytes
    line: int


@dataclass(frozen=True, eq=False)
class TipMatch:
    """Alignment rows in tree-tip order (uint8 [tips, m]) and the indices of non-tip rows."""

    tip_rows: np.ndarray
    extra: list[int]


# ---------------------------------------------------------------------------------------------
# Shared helpers


def _show(raw: bytes, limit: int = 40) -> str:
    """A short printable rendering of raw file bytes for error messages."""
    text = raw[:limit].decode("utf-8", errors="backslashreplace")
    return repr(text + ("..." if len(raw) > limit else ""))


def _show_byte(byte: int) -> str:
    """One byte as a user would recognise it: the character if printable, else its hex code."""
    return f"'{chr(byte)}'" if 32 < byte < 127 else f"byte 0x{byte:02x}"


#: Bytes `_read_bytes` asks for at a time: a few large reads (one `read()` took 8 KiB pieces).
_READ_PIECE = 64 << 20


def _read_bytes(source: str, digest: Digest | None = None) -> bytes:
    """The whole file (read once, fed into `digest`), or InputError when it cannot be read."""
    try:
        with open_input(source) as handle:
            pieces = []
            while piece := handle.read(_READ_PIECE):
                pieces.append(piece)
    except OSError as exc:
        raise InputError(source, f"cannot read the file: {exc.strerror or exc}") from None
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    if digest is not None:
        digest.update(data)
    return data


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


def _decode_name(raw: bytes, source: str, where: str) -> str:
    """A sequence or read name as text; names must be UTF-8 so that outputs can store them."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(source, f"the name {_show(raw)} is not valid UTF-8 text", where) from None
    control = next((c for c in name if ord(c) < 32 or ord(c) == 127), None)
    if control is not None:  # HDF5 strings end at NUL; exports would break rows at the others
        raise InputError(source, f"the name {_show(raw)} holds the control character "
                                 f"{_show_byte(ord(control))}", where)
    return name


def _strip_whitespace(raw: bytes) -> bytes:
    """Sequence text with all whitespace removed (PHYLIP and FASTA allow spaces inside)."""
    return b"".join(raw.split())


# ---------------------------------------------------------------------------------------------
# Tree


def read_edge_tree(path: PathLike, digest: Digest | None = None) -> EdgeTree:
    """`read_tree`'s tree as an EdgeTree (phylo/tree.py). A plain Newick text (labels and lengths,
    no quotes, comments or whitespace inside, one tree, unique tips: `_plain_newick`) is read
    without dendropy, whose reader took 13 s for 10^5 taxa on the dev machine; anything else, and
    every error, goes through `read_tree`. The file is read once; its bytes go into `digest`."""
    source = str(path)
    data = _read_bytes(source, digest)
    try:
        plain = _plain_newick(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        plain = None
    if plain is not None:
        return EdgeTree.from_nodes(*plain, source=source)
    return EdgeTree.from_dendropy(_tree_of(data, source), source)


#: A Newick text `_plain_newick` takes has none of these (quotes, comments, the other characters
#: dendropy's tokenizer cuts words at, whitespace) ...
_NOT_PLAIN = re.compile(r"['\"\[\]{}=\\]|\s")
#: ... and is made of these tokens: punctuation, and labels or lengths between it.
_NEWICK_TOKEN = re.compile(r"[(),:;]|[^(),:;]+")


def _plain_newick(text: str) -> tuple[list[list[int]], list[str | None], list[float | None]] | None:
    """The nodes of a plain Newick tree as phylo/tree.py's `_read_nodes` copies them from dendropy
    (preorder lists of children, tip names, edge lengths), or None where the text is not plain
    or is not a tree of three or more uniquely named tips: dendropy reads those (and words the
    errors). Inner node labels are skipped, as EdgeTree does."""
    text = text.strip()
    if not text.endswith(";") or _NOT_PLAIN.search(text):
        return None
    tokens = _NEWICK_TOKEN.findall(text)
    kids: list[list[int]] = []
    names: list[str | None] = []
    lengths: list[float | None] = []
    stack: list[int] = []
    last = -1  # the node a label or length after it belongs to
    open_slot = True  # a node may start here (the start, after '(' or ',')
    n = len(tokens)
    i = 0
    while i < n:
        token = tokens[i]
        if token == "(" or token not in "),:;":  # a node: an inner one, or a tip's label
            if not open_slot or (not stack and kids):
                return None
            v = len(kids)
            if stack:
                kids[stack[-1]].append(v)
            kids.append([])
            lengths.append(None)
            if token == "(":
                names.append(None)
                stack.append(v)
            else:
                if not stack:
                    return None  # a lone tip
                names.append(token)
                last, open_slot = v, False
        elif token == ",":
            if open_slot or not stack:
                return None
            open_slot = True
        elif token == ")":
            if open_slot or not stack:
                return None
            last, open_slot = stack.pop(), False
            if i + 1 < n and tokens[i + 1] not in "(),:;":
                i += 1  # an inner node's label
        elif token == ":":
            if open_slot or last < 0 or lengths[last] is not None or i + 1 >= n or tokens[i + 1] in "(),:;":
                return None
            try:  # dendropy's edge lengths are float() of the word too
                lengths[last] = float(tokens[i + 1])
            except ValueError:
                return None
            i += 1
        else:  # ';': the end of the one tree
            if stack or open_slot or i != n - 1:
                return None
        i += 1
    tips = [name for name in names if name is not None]
    if len(tips) < 3 or len(set(tips)) != len(tips):
        return None
    return kids, names, lengths


def read_tree(path: PathLike, digest: Digest | None = None) -> dendropy.Tree:
    """Read exactly one Newick tree whose tips are labelled, unique and at least three.

    Underscores are preserved (they are part of taxon names in alignments) and labels are case
    sensitive, so tip names compare with alignment names exactly. The file is read once; its
    bytes go into `digest` (io/checksums.py).
    """
    source = str(path)
    return _tree_of(_read_bytes(source, digest), source)


def _tree_of(data: bytes, source: str) -> dendropy.Tree:
    """`read_tree` of the file's bytes."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(source, "the tree file is not UTF-8 text", f"line {line}") from None
    if not text.strip():
        raise InputError(source, "the file is empty; expected a Newick tree")
    trees = _parse_newick(text, source)
    if len(trees) != 1:
        raise InputError(source, f"expected exactly one tree, found {len(trees)}")
    tree = trees[0]
    _check_tips(tree, source)
    return tree


def _parse_newick(text: str, source: str) -> dendropy.TreeList:
    """All tree statements in `text`; dendropy's complaints become InputErrors with positions."""
    try:
        return dendropy.TreeList.get(
            data=text,
            schema="newick",
            preserve_underscores=True,
            case_sensitive_taxon_labels=True,
            taxon_namespace=dendropy.TaxonNamespace(is_case_sensitive=True),
        )
    except NewickReader.NewickReaderDuplicateTaxonError as exc:
        label = str(exc.message).rpartition("Duplicate taxon labels: ")[2]
        raise InputError(
            source, f"duplicate tip label: '{label}' occurs more than once", _position(exc)
        ) from None
    except DataParseError as exc:
        hint = " (is the closing ';' missing?)" if "end of stream" in str(exc.message) else ""
        raise InputError(
            source, f"malformed Newick: {exc.message}{hint}", _position(exc)
        ) from None
    except RecursionError:
        return _parse_deep_newick(text, source)


#: Stack of the thread that reads deeply nested trees: dendropy's reader recurses once per level
#: of parentheses; 512 MiB of (virtual, touched only as used) stack hold millions of levels.
_DEEP_STACK_BYTES = 512 << 20


def _parse_deep_newick(text: str, source: str) -> dendropy.TreeList:
    """`_parse_newick` for trees nested deeper than Python's recursion limit (a ladder-like tree
    of 10^4-10^5 taxa): dendropy's recursive reader runs in a thread with a large stack and a
    recursion limit above the nesting depth, both restored afterwards. The tree it builds is an
    ordinary dendropy tree; everything after the parse walks it iteratively."""
    result: list = []

    def parse() -> None:
        try:
            result.append(_parse_newick(text, source))
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            result.append(error)

    limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    try:
        sys.setrecursionlimit(max(limit, 20 * text.count("(") + 10_000))
        threading.stack_size(_DEEP_STACK_BYTES)
        worker = threading.Thread(target=parse, name="papara-newick")
        worker.start()
    finally:
        threading.stack_size(old_stack)
    worker.join()
    sys.setrecursionlimit(limit)
    if isinstance(result[0], RecursionError):
        raise InputError(source, "the tree is nested too deeply to read") from None
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def _position(exc: DataParseError) -> str | None:
    """dendropy's line/column of a parse error, when it knows them."""
    if exc.line_num is None:
        return None
    column = f", column {exc.col_num}" if exc.col_num is not None else ""
    return f"line {exc.line_num}{column}"


def _check_tips(tree: dendropy.Tree, source: str) -> None:
    """Every tip needs a label (it names an alignment row) and a tree needs three tips."""
    labels = [leaf.taxon.label if leaf.taxon else None for leaf in tree.leaf_node_iter()]
    for index, label in enumerate(labels):
        if not label:
            after = f" (after '{labels[index - 1]}')" if index > 0 and labels[index - 1] else ""
            raise InputError(source, f"tip number {index + 1}{after} has no label")
    if len(labels) < 3:
        raise InputError(source, f"the tree has {len(labels)} tip(s); at least 3 are needed")


# ---------------------------------------------------------------------------------------------
# Alignment


@dataclass
class _Row:
    """A row being assembled: its name, the line it starts on and its sequence pieces.

    Each piece is (line number, offset of the piece in that line, raw bytes); keeping offsets
    lets an invalid character be reported at its line and column of the file.
    """

    name: bytes
    line: int
    pieces: list[tuple[int, int, bytes]]

    def sequence(self) -> bytes:
        """The row's characters, whitespace removed."""
        return b"".join(_strip_whitespace(raw) for _, _, raw in self.pieces)

    def locate(self, column: int) -> tuple[int, int]:
        """File (line, 1-based column in the line) of alignment column `column` (0-based)."""
        positions = [
            (line, offset + i + 1)
            for line, offset, raw in self.pieces
            for i, byte in enumerate(raw)
            if byte not in _WHITESPACE
        ]
        return positions[column]


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
    data = _read_bytes(source)
    hashing = _HashedAside(data, digest)
    try:
        return _parse_alignment(data.removeprefix(_UTF8_BOM), source, alphabet)
    finally:
        hashing.wait()


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
        rows = _alignio_rows(lines, fmt, source)
        expected_length = len(rows[0].sequence())
        described = f"row '{rows[0].name.decode('utf-8', 'replace')}' (line {rows[0].line}) has"
    elif numbered[0][1].startswith(b">"):
        rows = _fasta_rows(numbered, source)
        expected_length = len(rows[0].sequence())
        described = f"row '{rows[0].name.decode('utf-8', 'replace')}' (line {rows[0].line}) has"
    else:
        header_line, header = numbered[0]
        n_rows, expected_length = _phylip_header(header, header_line, source)
        rows = _phylip_rows(lines, header_line, n_rows, expected_length, source)
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
_SPACE_BYTE[list(_WHITESPACE)] = True
_NAME_REFUSED = re.compile("[\\x00-\\x1f\\x7f]")


def _alignment_names(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str] | None:
    """The names at buffer[starts:ends] (whitespace-free) as text, decoded at once; None where one
    is not UTF-8, holds a control character (`_decode_name` refuses those) or occurs twice."""
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


def _alignio_rows(lines: list[bytes], fmt: str, source: str) -> list[_Row]:
    """The rows of a Stockholm or Clustal alignment (`fmt`, Bio.AlignIO's name) as Bio.AlignIO
    reads them, each located in the file (its lines and columns) for the checks' messages."""
    from Bio import AlignIO  # Biopython's readers: a tenth of a second to import, for these formats only

    label = {"stockholm": "Stockholm", "clustal": "Clustal"}[fmt]
    if sum(1 for line in lines if line.strip()) < 2:  # Biopython's Clustal reader waits forever for a first block
        raise InputError(source, f"the {label} file holds a header and no rows")
    try:
        text = b"\n".join(lines).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = b"\n".join(lines)[: exc.start].count(b"\n") + 1
        raise InputError(source, f"the {label} file is not UTF-8 text", f"line {line}") from None
    try:
        alignments = list(AlignIO.parse(io.StringIO(text), fmt))
    except Exception as exc:  # noqa: BLE001 - Bio's readers raise ValueError, but also assertions and index errors
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(source, f"malformed {label} alignment (Biopython's reader: {detail})") from None
    if len(alignments) != 1:
        raise InputError(source, f"the {label} file holds {len(alignments)} alignments; give a file of one")
    return [_located_row(record.id.encode("utf-8"), str(record.seq).encode("utf-8"), lines)
            for record in alignments[0]]


def _located_row(name: bytes, sequence: bytes, lines: list[bytes]) -> _Row:
    """A row read by Bio.AlignIO, its pieces found again in the file: the lines whose first word
    is the name (annotation lines start with '#', a Clustal conservation line with a space), each
    one's second word; where those do not spell the row's characters (Bio.AlignIO turned '.'
    into '-'), its first line stands for all of them."""
    pieces = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if len(words) >= 2 and words[0] == name and not line[:1].isspace():
            pieces.append((number, line.index(words[1], len(words[0])), words[1]))
    if not pieces:
        return _Row(name, 0, [(0, 0, sequence)])
    if b"".join(raw for _, _, raw in pieces).replace(b".", b"-") != sequence.replace(b".", b"-"):
        return _Row(name, pieces[0][0], [(pieces[0][0], 0, sequence)])
    return _Row(name, pieces[0][0], [(number, offset, sequence[at:at + len(raw)]) for (number, offset, raw), at in
                                     zip(pieces, _starts(pieces))])


def _starts(pieces: list[tuple[int, int, bytes]]) -> list[int]:
    """Where each piece starts in the row's characters."""
    starts, at = [], 0
    for _, _, raw in pieces:
        starts.append(at)
        at += len(raw)
    return starts


def _fasta_rows(numbered: list[tuple[int, bytes]], source: str) -> list[_Row]:
    """Records of a FASTA alignment; the name is the first word of the header."""
    rows: list[_Row] = []
    for number, line in numbered:
        if line.startswith(b">"):
            words = line[1:].split(maxsplit=1)
            if not words:
                raise InputError(source, "a FASTA header without a name", f"line {number}")
            rows.append(_Row(words[0], number, []))
        else:
            rows[-1].pieces.append((number, 0, line))
    return rows


def _phylip_header(header: bytes, line: int, source: str) -> tuple[int, int]:
    """(N, m) from the PHYLIP header 'N m'."""
    fields = header.split()
    if len(fields) != 2 or not all(f.isdigit() and int(f) > 0 for f in fields):
        raise InputError(
            source,
            "expected a PHYLIP header of two positive integers 'N m' (or a FASTA file starting "
            f"with '>'), found {_show(header.strip())}",
            f"line {line}",
        )
    return int(fields[0]), int(fields[1])


def _phylip_rows(
    lines: list[bytes], header_line: int, n_rows: int, length: int, source: str
) -> list[_Row]:
    """Rows of a PHYLIP body: strict or relaxed names, sequential or interleaved.

    The first N non-blank lines carry the names. Further lines continue the rows in turn
    (interleaved); when blank lines separate blocks, each block must hold one line per row. A
    single block that does not read that way is tried as sequential PHYLIP with each row wrapped
    over lines: a row ends where it reaches the header's column count (`_wrapped_rows`).
    """
    blocks = _blocks(lines[header_line:], first_number=header_line + 1)
    if not blocks:
        raise InputError(
            source,
            f"the PHYLIP header announces {n_rows} rows, but none follow",
            f"line {header_line}",
        )
    if len(blocks) > 1:
        named, continued = blocks[0], blocks[1:]
        _check_block(named, n_rows, "first block", source)
        for block in continued:
            _check_block(block, n_rows, "block", source)
        continuation = [line for block in continued for line in block]
    else:
        named, continuation = blocks[0][:n_rows], blocks[0][n_rows:]
        if len(named) < n_rows:
            raise InputError(
                source,
                f"the PHYLIP header announces {n_rows} rows, but there are only {len(named)}",
                f"line {header_line}",
            )
        if continuation and _complete_without_continuation(named, length):
            number = continuation[0][0]
            raise InputError(
                source,
                f"the PHYLIP header (line {header_line}) announces {n_rows} rows, but there are "
                "more (every row already has its full length)",
                f"line {number}",
            )
    candidates = [_name_rows(named, strict) for strict in (False, True)]
    for rows in candidates:
        for index, (number, line) in enumerate(continuation):
            rows[index % n_rows].pieces.append((number, 0, line))
    best = max(candidates, key=lambda rows: sum(len(row.sequence()) == length for row in rows))
    if len(blocks) == 1 and continuation and not all(len(row.sequence()) == length for row in best):
        # sequential PHYLIP with each row wrapped over several lines: the header's column count
        # says where a row ends and the next row's name line begins
        for strict in (False, True):
            wrapped = _wrapped_rows(blocks[0], n_rows, length, strict)
            if wrapped is not None:
                return wrapped
    return best


def _wrapped_rows(lines: list[tuple[int, bytes]], n_rows: int, length: int, strict: bool) -> list[_Row] | None:
    """Rows of a sequential PHYLIP body whose rows span several lines, or None if the lines do not
    split into `n_rows` rows of exactly `length` characters that way."""
    rows: list[_Row] = []
    position = 0
    while position < len(lines) and len(rows) < n_rows:
        row = _name_rows([lines[position]], strict)[0]
        position += 1
        have = len(row.sequence())
        while have < length and position < len(lines):
            number, line = lines[position]
            row.pieces.append((number, 0, line))
            have += len(_strip_whitespace(line))
            position += 1
        if have != length:
            return None
        rows.append(row)
    return rows if len(rows) == n_rows and position == len(lines) else None


def _blocks(lines: list[bytes], first_number: int) -> list[list[tuple[int, bytes]]]:
    """Groups of consecutive non-blank (line number, line), split at blank lines."""
    blocks: list[list[tuple[int, bytes]]] = [[]]
    for number, line in enumerate(lines, first_number):
        if line.strip():
            blocks[-1].append((number, line))
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _check_block(block: list[tuple[int, bytes]], n_rows: int, what: str, source: str) -> None:
    """An interleaved block must have exactly one line per row."""
    if len(block) != n_rows:
        first, last = block[0][0], block[-1][0]
        raise InputError(
            source,
            f"the PHYLIP header announces {n_rows} rows, but the {what} of this interleaved "
            f"alignment has {len(block)} line(s)",
            f"line {first}" if first == last else f"lines {first}-{last}",
        )


def _complete_without_continuation(named: list[tuple[int, bytes]], length: int) -> bool:
    """True if the name lines alone already hold full-length rows in either name style."""
    return any(
        all(len(row.sequence()) == length for row in _name_rows(named, strict))
        for strict in (False, True)
    )


def _name_rows(named: list[tuple[int, bytes]], strict: bool) -> list[_Row]:
    """Split each name line into a name and the start of its sequence.

    Strict PHYLIP: the name is the first 10 characters (may hold spaces). Relaxed: the first
    word. Both are tried; the caller keeps the one whose rows have the header's length, relaxed
    on a tie.
    """
    rows = []
    for number, line in named:
        if strict:
            name, offset = line[:_STRICT_NAME_WIDTH].strip(), _STRICT_NAME_WIDTH
        else:
            match = _RELAXED_NAME.match(line)
            name, offset = match.group(1), match.end()
        rows.append(_Row(name, number, [(number, offset, line[offset:])]))
    return rows


def _build_alignment(rows: list[_Row], length: int, described: str, source: str, alphabet: str) -> Alignment:
    """Check names, lengths and characters of assembled rows (in the alphabet named, or the one
    detected for "auto"); encode them as uint8 ASCII."""
    names: list[str] = []
    first_line: dict[str, int] = {}
    for row in rows:
        where = f"line {row.line}"
        if not row.name:
            raise InputError(source, "a row without a name", where)
        name = _decode_name(row.name, source, where)
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
            f"invalid character {_show_byte(int(ascii_rows[index, column]))} in row "
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


# ---------------------------------------------------------------------------------------------
# Reads


#: Decompressed bytes of read data taken at a time (the bulk path parses a block at once).
READ_BLOCK_BYTES = 8 << 20
#: Reads per chunk that the line-by-line path hands on.
_LINE_PATH_CHUNK = 1 << 16
#: Characters a name may not hold (besides whitespace, which ends a name): HDF5 strings end at
#: NUL, and exports would break rows at the others.
_NAME_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")


class _NotBulk(Exception):
    """A block the bulk parser does not take: the line-by-line parser reads on from there."""


def iter_reads(path: PathLike, digest: Digest | None = None, alphabet: Alphabet = DNA) -> Iterator[RawRead]:
    """The reads of `iter_read_chunks`, one at a time."""
    for chunk in iter_read_chunks(path, digest, alphabet):
        offsets = np.zeros(len(chunk.names) + 1, np.int64)
        np.cumsum(chunk.lengths, out=offsets[1:])
        for q, name in enumerate(chunk.names):
            yield RawRead(name, chunk.residues[offsets[q]:offsets[q + 1]], int(chunk.lines[q]))


def iter_read_chunks(path: PathLike, digest: Digest | None = None, alphabet: Alphabet = DNA) -> Iterator[ReadChunk]:
    """Stream reads from FASTA or FASTQ, plain, gzip, bzip2 or xz (told apart by content, not by
    name; zstd and zip are refused by name).

    Residues are validated as they are read (letters of `alphabet`, the reference alignment's;
    no gaps, DESIGN.md section 2); read names must be unique. An empty read has length 0, for
    the pipeline to report. `path` may be `-` (standard input), a pipe or a FIFO: it is read
    once, its bytes (as stored, compressed or not) going into `digest`, which is complete when
    the iteration ends.

    Two parsers, one result. Well-formed data (FASTA with one sequence line per read, four-line
    FASTQ, no blank lines, every name and residue valid) is parsed a block of READ_BLOCK_BYTES at
    a time with bytes and numpy operations (notebook/BENCHMARKS.md, "Reading reads": about 5x the line
    parser). From the first block that is anything else, the line-by-line parser reads on to the
    end, so whatever is wrong is reported by it, with its file, line, read and position.
    """
    source = str(path)
    names: dict[str, int] = {}
    blocks = _line_blocks(source, digest)
    pending: list[bytes] = []
    number = 1  # the line number of pending[0]
    parse = None
    for lines in blocks:
        pending = pending + lines if pending else lines
        if parse is None:  # the format, from the first line; anything unusual: the line parser
            parse = _BULK_PARSERS.get(pending[0][:1])
            if parse is None:
                break
        try:
            chunk, used = parse(pending, number, names, alphabet, final=False)
        except _NotBulk:
            break
        if chunk is not None:
            yield chunk
        number += used
        pending = pending[used:]
    else:
        if not pending:
            if number == 1:
                raise InputError(source, "the file is empty; expected FASTA or FASTQ reads")
            return
        try:
            chunk, used = parse(pending, number, names, alphabet, final=True) if parse else (None, 0)
        except _NotBulk:
            used = 0
        if used == len(pending):
            yield chunk
            return
    continuation = chain(enumerate(pending, number), _numbered_rest(blocks, number + len(pending)))
    yield from _line_path(continuation, names, source, alphabet, parse)


def _line_path(records: Iterator[tuple[int, bytes]], names: dict[str, int], source: str,
               alphabet: Alphabet, bulk=None) -> Iterator[ReadChunk]:
    """The line-by-line parser over numbered lines, its reads handed on in chunks; `bulk`, the
    bulk parser that stopped, says the format (else the first non-blank line does)."""
    if bulk is None:
        for number, line in records:
            if line.strip():
                break
        else:
            raise InputError(source, "the file is empty; expected FASTA or FASTQ reads")
        records = chain([(number, line)], records)
    if bulk is _fasta_block or bulk is None and line.startswith(b">"):
        reads = _fasta_reads(records, names, source, alphabet)
    elif bulk is _fastq_block or line.startswith(b"@"):
        reads = _fastq_reads(records, names, source, alphabet)
    else:
        raise InputError(
            source,
            f"sequence data before the first header: {_show(line.strip())} (FASTA records start "
            "with '>', FASTQ records with '@')",
            f"line {number}",
        )
    while True:
        part = list(islice(reads, _LINE_PATH_CHUNK))
        if not part:
            return
        yield ReadChunk([r.name for r in part], b"".join(r.sequence for r in part),
                        np.fromiter((len(r.sequence) for r in part), np.int64, len(part)),
                        np.fromiter((r.line for r in part), np.int64, len(part)))


def _bulk_names(headers: list[bytes], first_line: int, step: int, names: dict[str, int]) -> tuple[list[str], np.ndarray]:
    """The names of a block's headers (first word after '>' or '@'), if every one is non-empty,
    UTF-8, free of control characters and new; else _NotBulk (the line parser says which)."""
    try:
        words = [header[1:].split(None, 1)[0] for header in headers]
        text = b"\n".join(words).decode("utf-8")
    except (IndexError, UnicodeDecodeError):
        raise _NotBulk from None
    if _NAME_CONTROL.search(text):
        raise _NotBulk
    found = text.split("\n")
    if len(set(found)) != len(found) or not names.keys().isdisjoint(found):
        raise _NotBulk
    return found, first_line + step * np.arange(len(found), dtype=np.int64)


def _bulk_residues(sequences: list[bytes], alphabet: Alphabet) -> tuple[bytes, np.ndarray]:
    """Joined, upper-cased residues and lengths, if every byte is a residue of `alphabet`
    (whitespace, gaps and other letters go to the line parser for its message)."""
    joined = b"".join(sequences)
    if not alphabet.read_code[np.frombuffer(joined, np.uint8)].all():
        raise _NotBulk
    return joined.upper(), np.fromiter(map(len, sequences), np.int64, len(sequences))


def _fasta_block(lines: list[bytes], number: int, names: dict[str, int], alphabet: Alphabet,
                 final: bool) -> tuple[ReadChunk | None, int]:
    """FASTA of two lines a read. All but the last read unless `final` (the next block may
    continue its sequence); returns (chunk or None, lines used)."""
    n = len(lines) if final else len(lines) - 2 - len(lines) % 2
    if n <= 0:
        return None, 0
    if n % 2:  # the last header has no sequence line: an empty read, for the line parser
        raise _NotBulk
    headers, sequences = lines[0:n:2], lines[1:n:2]
    if any(h[:1] != b">" for h in headers) or any(s[:1] == b">" or not s for s in sequences):
        raise _NotBulk
    if n < len(lines) and lines[n][:1] != b">":  # the last read's sequence goes on
        raise _NotBulk
    found, header_lines = _bulk_names(headers, number, 2, names)
    residues, lengths = _bulk_residues(sequences, alphabet)
    names.update(zip(found, header_lines.tolist()))
    return ReadChunk(found, residues, lengths, header_lines), n


def _fastq_block(lines: list[bytes], number: int, names: dict[str, int], alphabet: Alphabet,
                 final: bool) -> tuple[ReadChunk | None, int]:
    """FASTQ of four lines a read, qualities without whitespace; whole records only."""
    n = len(lines) - len(lines) % 4
    if final and n != len(lines):
        raise _NotBulk
    if n == 0:
        return None, 0
    headers, sequences, separators, qualities = (lines[k:n:4] for k in range(4))
    if any(h[:1] != b"@" for h in headers) or any(p[:1] != b"+" for p in separators):
        raise _NotBulk
    if list(map(len, qualities)) != list(map(len, sequences)):
        raise _NotBulk
    joined = b"".join(qualities)
    if joined and np.frombuffer(joined, np.uint8).min() <= 32:  # whitespace: the line parser strips it
        raise _NotBulk
    found, header_lines = _bulk_names(headers, number, 4, names)
    residues, lengths = _bulk_residues(sequences, alphabet)
    names.update(zip(found, header_lines.tolist()))
    return ReadChunk(found, residues, lengths, header_lines), n


_BULK_PARSERS = {b">": _fasta_block, b"@": _fastq_block}


def _compression(head: bytes, source: str) -> str | None:
    """The compression `head` (a file's first bytes) starts with: "gzip", "bzip2", "xz" (read
    through Python's gzip, bz2 and lzma), None for none; InputError for one that is not read."""
    for name, magic in _COMPRESSION_MAGIC:
        if head.startswith(magic):
            if name == "zstd":
                raise InputError(source, "zstd-compressed reads are not supported: decompress with zstd -d "
                                         "(or recompress with gzip)")
            if name == "zip":
                raise InputError(source, "a zip archive is not a reads file: unzip it and give the FASTA/FASTQ "
                                         "file inside")
            return name
    return None


def _decompressed(raw, kind: str | None):
    """The stream of decompressed bytes of `raw` (a buffered reader) for compression `kind`."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw)
    if kind == "bzip2":
        return bz2.BZ2File(raw)
    if kind == "xz":
        return lzma.LZMAFile(raw)
    return raw


def _line_blocks(source: str, digest: Digest | None = None) -> Iterator[list[bytes]]:
    """Lines (without CR/LF, the first without a BOM) of a plain, gzip, bzip2 or xz file (told
    apart by its first bytes, not its name), READ_BLOCK_BYTES at a time, read once into `digest`
    (to its very end, bytes after a compressed stream included)."""
    count = 0
    kind = None
    try:
        with open_input(source, digest) as raw:
            kind = _compression(raw.peek(_MAGIC_BYTES)[:_MAGIC_BYTES], source)
            stream = _decompressed(raw, kind)
            tail = b""
            first = True
            while True:
                data = stream.read(READ_BLOCK_BYTES)
                if not data:
                    break
                data = tail + data
                lines = data.split(b"\n")
                tail = lines.pop()
                if first and lines:
                    lines[0] = lines[0].removeprefix(_UTF8_BOM)
                    first = False
                if b"\r" in data:
                    lines = [line.rstrip(b"\r") for line in lines]
                count += len(lines)
                if lines:
                    yield lines
            if tail:
                yield [(tail.removeprefix(_UTF8_BOM) if first else tail).rstrip(b"\r")]
            drain(raw)
    except (gzip.BadGzipFile, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise InputError(
            source, f"the {kind or 'gzip'} data is corrupt or truncated ({exc})", f"after line {count}"
        ) from None
    except OSError as exc:
        if kind == "bzip2" and exc.errno is None:  # bz2 says "Invalid data stream" as a bare OSError
            raise InputError(source, f"the bzip2 data is corrupt or truncated ({exc})", f"after line {count}") from None
        raise InputError(source, f"cannot read the file: {exc.strerror or exc}") from None


def _numbered_rest(blocks: Iterator[list[bytes]], number: int) -> Iterator[tuple[int, bytes]]:
    """The lines of the remaining blocks, numbered from `number`."""
    for lines in blocks:
        yield from enumerate(lines, number)
        number += len(lines)


def _read_name(header: bytes, number: int, names: dict[str, int], source: str) -> str:
    """The first word after '>' or '@', checked to be non-empty, UTF-8 and not seen before."""
    where = f"line {number}"
    words = header[1:].split(maxsplit=1)
    if not words:
        raise InputError(source, "a read header without a name", where)
    name = _decode_name(words[0], source, where)
    if name in names:
        raise InputError(
            source, f"duplicate read name '{name}' (lines {names[name]} and {number})", where
        )
    names[name] = number
    return name


def _check_residues(residues: bytes, name: str, number: int, before: int, source: str,
                    alphabet: Alphabet) -> None:
    """Reject any byte that is not a residue of `alphabet`; `before` residues precede these."""
    codes = np.frombuffer(residues, dtype=np.uint8)
    bad = np.flatnonzero(alphabet.read_code[codes] == 0)
    if bad.size:
        byte = int(codes[bad[0]])
        why = " (gaps are not allowed in reads)" if IS_GAP[byte] else \
            f"; reads must be {alphabet.name} like the reference alignment: {alphabet.describe()}"
        raise InputError(
            source,
            f"invalid character {_show_byte(byte)} in read '{name}' at position "
            f"{before + int(bad[0]) + 1}{why}",
            f"line {number}",
        )


def _fasta_reads(
    records: Iterator[tuple[int, bytes]], names: dict[str, int], source: str, alphabet: Alphabet
) -> Iterator[RawRead]:
    """FASTA records, sequences possibly over several lines; the first line is a header."""
    name, header_line, pieces, length = "", 0, [], 0
    for number, line in records:
        if line.startswith(b">"):
            if header_line:
                yield RawRead(name, b"".join(pieces).upper(), header_line)
            name = _read_name(line, number, names, source)
            header_line, pieces, length = number, [], 0
            continue
        residues = _strip_whitespace(line)
        _check_residues(residues, name, number, length, source, alphabet)
        pieces.append(residues)
        length += len(residues)
    yield RawRead(name, b"".join(pieces).upper(), header_line)


def _fastq_reads(
    records: Iterator[tuple[int, bytes]], names: dict[str, int], source: str, alphabet: Alphabet
) -> Iterator[RawRead]:
    """Four-line FASTQ records: '@name', sequence, '+', quality of the sequence's length."""
    for number, line in records:
        if not line.strip():
            continue
        if not line.startswith(b"@"):
            raise InputError(
                source,
                f"expected a FASTQ header starting with '@', found {_show(line)}",
                f"line {number}",
            )
        name = _read_name(line, number, names, source)
        sequence_number, sequence = _record_line(records, "sequence", name, number, source)
        separator_number, separator = _record_line(records, "'+' separator", name, number, source)
        quality_number, quality = _record_line(records, "quality", name, number, source)
        residues = _strip_whitespace(sequence)
        _check_residues(residues, name, sequence_number, 0, source, alphabet)
        if not separator.startswith(b"+"):
            raise InputError(
                source,
                f"read '{name}': expected the FASTQ '+' separator line, found {_show(separator)}",
                f"line {separator_number}",
            )
        quality = quality.strip()
        if len(quality) != len(residues):
            raise InputError(
                source,
                f"read '{name}': the quality string has {len(quality)} characters but the "
                f"sequence has {len(residues)}",
                f"line {quality_number}",
            )
        yield RawRead(name, residues.upper(), number)


def _record_line(
    records: Iterator[tuple[int, bytes]], what: str, name: str, header_line: int, source: str
) -> tuple[int, bytes]:
    """The next line of a FASTQ record, or InputError if the file ends inside the record."""
    line = next(records, None)
    if line is None:
        raise InputError(
            source,
            f"truncated FASTQ record: read '{name}' ends before its {what} line",
            f"line {header_line}",
        )
    return line


# ---------------------------------------------------------------------------------------------
# Tree tips <-> alignment rows


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
            f"{listed}{more}",
        )
    tips = set(tip_names)
    extra = [i for i, name in enumerate(alignment.names) if name not in tips]
    rows = alignment.rows[np.array([index[name] for name in tip_names], dtype=np.intp)]
    return TipMatch(tip_rows=rows, extra=extra)
