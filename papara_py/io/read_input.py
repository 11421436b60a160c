"""The reads: FASTA or FASTQ, plain or compressed (gzip, bzip2, xz; told apart by their first
bytes), streamed a chunk of reads at a time (`iter_read_chunks`) or one by one (`iter_reads`),
each residue checked against the reference's alphabet and each name checked to be new. Whatever
is wrong leaves as an `InputError` naming the file, the line, the read and the position
(DESIGN.md section 9).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, islice

import numpy as np

from papara_py.errors import InputError
from papara_py.io.checksums import Digest, drain, open_input
from papara_py.io.input_bytes import (
    UTF8_BOM,
    PathLike,
    decode_name,
    show,
    show_byte,
    strip_whitespace,
)
from papara_py.io.reads import ReadChunk
from papara_py.phylo.encoding import (
    DNA,
    IS_GAP,
    Alphabet,
)

#: What compressed files start with (what `_compression` tells them apart by).
_COMPRESSION_MAGIC = (("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("xz", b"\xfd7zXZ\x00"),
                      ("zstd", b"\x28\xb5\x2f\xfd"), ("zip", b"PK\x03\x04"))
_MAGIC_BYTES = max(len(magic) for _, magic in _COMPRESSION_MAGIC)


@dataclass(frozen=True)
class RawRead:
    """One read as parsed: upper-cased ASCII residues (b"" for an empty read), header line."""

    name: str
    sequence: bytes
    line: int


#: Decompressed bytes of read data taken at a time (the bulk path parses a block at once).
READ_BLOCK_BYTES = 8 << 20
LF = b"\n"
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
            f"sequence data before the first header: {show(line.strip())} (FASTA records start "
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
    """Lines (without their line break, the first without a BOM) of a plain, gzip, bzip2 or xz file
    (told apart by its first bytes, not its name), READ_BLOCK_BYTES at a time, read once into
    `digest` (to its very end, bytes after a compressed stream included). A line ends at LF, CRLF
    or a lone CR (classic Mac OS files), as bytes.splitlines and the alignment reader have it."""
    count = 0
    kind = None
    pending = bytearray()
    try:
        with open_input(source, digest) as raw:
            kind = _compression(raw.peek(_MAGIC_BYTES)[:_MAGIC_BYTES], source)
            stream = _decompressed(raw, kind)
            tail = b""
            first = True
            while data := _read_block(stream, pending):
                lines = _with_line_feeds(tail + data).split(LF)
                tail = lines.pop()
                if first and lines:
                    lines[0] = lines[0].removeprefix(UTF8_BOM)
                    first = False
                count += len(lines)
                if lines:
                    yield lines
            if tail:
                yield [(tail.removeprefix(UTF8_BOM) if first else tail).rstrip(b"\r")]
            drain(raw)
    except (gzip.BadGzipFile, EOFError, zlib.error, lzma.LZMAError) as exc:
        where = f"after line {count + pending.count(LF)}"
        raise InputError(source, f"the {kind or 'gzip'} data is corrupt or truncated ({exc})", where) from None
    except OSError as exc:
        if kind == "bzip2" and exc.errno is None:  # bz2 says "Invalid data stream" as a bare OSError
            where = f"after line {count + pending.count(LF)}"
            raise InputError(source, f"the bzip2 data is corrupt or truncated ({exc})", where) from None
        raise InputError(source, f"cannot read the file: {exc.strerror or exc}") from None


def _read_block(stream, pending: bytearray) -> bytes:
    """The next READ_BLOCK_BYTES of `stream` (fewer at its end; b"" after it), gathered in
    `pending` a decompressed piece at a time (read1): where the data turn out corrupt, the lines
    that came before are in `pending` to say where (the error's line number)."""
    pending.clear()
    while len(pending) < READ_BLOCK_BYTES:
        piece = stream.read1(READ_BLOCK_BYTES - len(pending))
        if not piece:
            break
        pending += piece
    return bytes(pending)


def _with_line_feeds(data: bytes) -> bytes:
    """`data` with each CRLF and lone CR made an LF; a CR at its very end is left (it may be a
    CRLF's first half, split across two blocks: the caller keeps it in the tail)."""
    if b"\r" not in data:
        return data
    data = data.replace(b"\r\n", b"\n")
    if data.endswith(b"\r"):
        return data[:-1].replace(b"\r", b"\n") + b"\r"
    return data.replace(b"\r", b"\n")


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
    name = decode_name(words[0], source, where)
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
            f"invalid character {show_byte(byte)} in read '{name}' at position "
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
        residues = strip_whitespace(line)
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
                f"expected a FASTQ header starting with '@', found {show(line)}",
                f"line {number}",
            )
        name = _read_name(line, number, names, source)
        sequence_number, sequence = _record_line(records, "sequence", name, number, source)
        separator_number, separator = _record_line(records, "'+' separator", name, number, source)
        quality_number, quality = _record_line(records, "quality", name, number, source)
        residues = strip_whitespace(sequence)
        _check_residues(residues, name, sequence_number, 0, source, alphabet)
        if not separator.startswith(b"+"):
            raise InputError(
                source,
                f"read '{name}': expected the FASTQ '+' separator line, found {show(separator)}",
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
