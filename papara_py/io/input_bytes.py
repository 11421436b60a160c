"""What the three input parsers share (io/tree_input.py, io/alignment_input.py,
io/read_input.py): a whole file read once into its digest, names decoded and checked, and raw
bytes shown in an InputError's message as a user would recognise them.
"""
from __future__ import annotations

import codecs
import os

from papara_py.errors import InputError
from papara_py.io.checksums import Digest, open_input

PathLike = str | os.PathLike
#: Stripped from the start of a file (editors on Windows write it).
UTF8_BOM = codecs.BOM_UTF8


def show(raw: bytes, limit: int = 40) -> str:
    """A short printable rendering of raw file bytes for error messages."""
    text = raw[:limit].decode("utf-8", errors="backslashreplace")
    return repr(text + ("..." if len(raw) > limit else ""))


def show_byte(byte: int) -> str:
    """One byte as a user would recognise it: the character if printable, else its hex code."""
    return f"'{chr(byte)}'" if 32 < byte < 127 else f"byte 0x{byte:02x}"


#: Bytes `read_whole` asks for at a time: a few large reads (one `read()` took 8 KiB pieces).
_READ_PIECE = 64 << 20


def read_whole(source: str, digest: Digest | None = None) -> bytes:
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


def decode_name(raw: bytes, source: str, where: str) -> str:
    """A sequence or read name as text; names must be UTF-8 so that outputs can store them."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(source, f"the name {show(raw)} is not valid UTF-8 text", where) from None
    control = next((c for c in name if ord(c) < 32 or ord(c) == 127), None)
    if control is not None:  # HDF5 strings end at NUL; exports would break rows at the others
        raise InputError(source, f"the name {show(raw)} holds the control character "
                                 f"{show_byte(ord(control))}", where)
    return name


#: The bytes that bytes.split() treats as whitespace: what strip_whitespace removes.
WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")


def strip_whitespace(raw: bytes) -> bytes:
    """Sequence text with all whitespace removed (PHYLIP and FASTA allow spaces inside)."""
    return b"".join(raw.split())
