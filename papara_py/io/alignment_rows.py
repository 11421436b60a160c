"""The alignment's text parsers: a FASTA, PHYLIP (strict or relaxed names; sequential,
interleaved, or sequential with rows wrapped over lines), Stockholm or Clustal file's lines into
its rows (`Row`: a name and its sequence pieces, each located at its line and column, so that
io/alignment_input.py's checks can name them). Stockholm and Clustal are read by Bio.AlignIO,
its rows then found again in the file. Whatever does not parse leaves as an `InputError`.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

from papara_py.errors import InputError
from papara_py.io.input_bytes import WHITESPACE, show, strip_whitespace

#: Strict PHYLIP: a row's name is its line's first 10 characters (spaces allowed).
_STRICT_NAME_WIDTH = 10
#: Relaxed PHYLIP: a row's name is its line's first word.
_RELAXED_NAME = re.compile(rb"\s*(\S+)\s*")


@dataclass
class Row:
    """A row being assembled: its name, the line it starts on and its sequence pieces.

    Each piece is (line number, offset of the piece in that line, raw bytes); keeping offsets
    lets an invalid character be reported at its line and column of the file.
    """

    name: bytes
    line: int
    pieces: list[tuple[int, int, bytes]]

    def sequence(self) -> bytes:
        """The row's characters, whitespace removed."""
        return b"".join(strip_whitespace(raw) for _, _, raw in self.pieces)

    def locate(self, column: int) -> tuple[int, int]:
        """File (line, 1-based column in the line) of alignment column `column` (0-based)."""
        positions = [
            (line, offset + i + 1)
            for line, offset, raw in self.pieces
            for i, byte in enumerate(raw)
            if byte not in WHITESPACE
        ]
        return positions[column]


def alignio_rows(lines: list[bytes], fmt: str, source: str) -> list[Row]:
    """The rows of a Stockholm or Clustal alignment (`fmt`, Bio.AlignIO's name) as Bio.AlignIO
    reads them, each located in the file (its lines and columns) for the checks' messages."""
    from Bio import (
        AlignIO,  # Biopython's readers: a tenth of a second to import, for these formats only
    )

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


def _located_row(name: bytes, sequence: bytes, lines: list[bytes]) -> Row:
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
        return Row(name, 0, [(0, 0, sequence)])
    if b"".join(raw for _, _, raw in pieces).replace(b".", b"-") != sequence.replace(b".", b"-"):
        return Row(name, pieces[0][0], [(pieces[0][0], 0, sequence)])
    return Row(name, pieces[0][0], [(number, offset, sequence[at:at + len(raw)]) for (number, offset, raw), at in
                                     zip(pieces, _starts(pieces))])


def _starts(pieces: list[tuple[int, int, bytes]]) -> list[int]:
    """Where each piece starts in the row's characters."""
    starts, at = [], 0
    for _, _, raw in pieces:
        starts.append(at)
        at += len(raw)
    return starts


def fasta_rows(numbered: list[tuple[int, bytes]], source: str) -> list[Row]:
    """Records of a FASTA alignment; the name is the first word of the header."""
    rows: list[Row] = []
    for number, line in numbered:
        if line.startswith(b">"):
            words = line[1:].split(maxsplit=1)
            if not words:
                raise InputError(source, "a FASTA header without a name", f"line {number}")
            rows.append(Row(words[0], number, []))
        else:
            rows[-1].pieces.append((number, 0, line))
    return rows


def phylip_header(header: bytes, line: int, source: str) -> tuple[int, int]:
    """(N, m) from the PHYLIP header 'N m'."""
    fields = header.split()
    if len(fields) != 2 or not all(f.isdigit() and int(f) > 0 for f in fields):
        raise InputError(
            source,
            "expected a PHYLIP header of two positive integers 'N m' (or a FASTA file starting "
            f"with '>'), found {show(header.strip())}",
            f"line {line}",
        )
    return int(fields[0]), int(fields[1])


def phylip_rows(
    lines: list[bytes], header_line: int, n_rows: int, length: int, source: str
) -> list[Row]:
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


def _wrapped_rows(lines: list[tuple[int, bytes]], n_rows: int, length: int, strict: bool) -> list[Row] | None:
    """Rows of a sequential PHYLIP body whose rows span several lines, or None if the lines do not
    split into `n_rows` rows of exactly `length` characters that way."""
    rows: list[Row] = []
    position = 0
    while position < len(lines) and len(rows) < n_rows:
        row = _name_rows([lines[position]], strict)[0]
        position += 1
        have = len(row.sequence())
        while have < length and position < len(lines):
            number, line = lines[position]
            row.pieces.append((number, 0, line))
            have += len(strip_whitespace(line))
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


def _name_rows(named: list[tuple[int, bytes]], strict: bool) -> list[Row]:
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
        rows.append(Row(name, number, [(number, offset, line[offset:])]))
    return rows

