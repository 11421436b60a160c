"""Property tests: whatever bytes a user hands us, the parsers return or raise InputError.

Any other exception (UnicodeDecodeError, gzip errors, dendropy internals, IndexError ...) would
reach the user as a traceback, which DESIGN.md section 9 rules out. Examples are written to files
in a fresh temporary directory (hypothesis does not mix with function-scoped fixtures).
"""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable

import pytest
from bad_inputs import BASE_ALIGNMENT, BASE_FASTQ, BASE_READS, BASE_TREE
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.errors import InputError
from papara_py.io.alignment_input import read_alignment
from papara_py.io.read_input import iter_reads
from papara_py.io.tree_input import read_tree

PARSERS: dict[str, Callable[[str], object]] = {
    "tree": read_tree,
    "alignment": read_alignment,
    "reads": lambda path: list(iter_reads(path)),
}

VALID_FILES: dict[str, list[bytes]] = {
    "tree": [BASE_TREE.encode(), b"[&R] ('a b':1,(c_1:2,'d''e')0.9:1);\r\n"],
    "alignment": [
        BASE_ALIGNMENT.encode(),
        b"3 10\nalpha ACGTA\nb     CG-TA\ngamma ACNNA\n\nACGTA\nAC-TA\nACGTA\n",
        b">alpha desc\nACGTA\nCGTAC\n>b\nACGTACGTAC\n",
    ],
    "reads": [BASE_READS.encode(), BASE_FASTQ.encode(), gzip.compress(BASE_FASTQ.encode())],
}

#: Characters that steer the parsers into their interesting branches.
SYNTAX = "()[],;:'\" \t\r\n>@+-.?0123456789acgtnACGTNUxyz_\x00\xe9"

FUZZ = settings(max_examples=60, deadline=None)


def _run(parser: Callable[[str], object], data: bytes) -> object:
    """Write `data` to a fresh temporary file and parse it."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "input")
        with open(path, "wb") as handle:
            handle.write(data)
        return parser(path)


def _parse(kind: str, data: bytes) -> object | None:
    """Parse `data` as `kind`; InputError is an acceptable outcome, anything else propagates."""
    try:
        return _run(PARSERS[kind], data)
    except InputError:
        return None


def _outcome(parser: Callable[[str], object], data: bytes) -> object:
    """The parse result, or the problem an InputError reports (paths differ between runs)."""
    try:
        return _run(parser, data)
    except InputError as error:
        return error.problem


@pytest.mark.parametrize("kind", PARSERS)
@FUZZ
@given(data=st.binary(max_size=600))
def test_random_bytes(kind: str, data: bytes) -> None:
    _parse(kind, data)


@pytest.mark.parametrize("kind", PARSERS)
@FUZZ
@given(text=st.text(alphabet=SYNTAX, max_size=300), latin1=st.booleans())
def test_random_syntax(kind: str, text: str, latin1: bool) -> None:
    _parse(kind, text.encode("latin-1" if latin1 else "utf-8"))


@pytest.mark.parametrize("kind", PARSERS)
@FUZZ
@given(choice=st.integers(0, 2), cut=st.floats(0, 1))
def test_truncated_valid_files(kind: str, choice: int, cut: float) -> None:
    valid = VALID_FILES[kind][choice % len(VALID_FILES[kind])]
    _parse(kind, valid[: int(cut * len(valid))])


@pytest.mark.parametrize("kind", PARSERS)
@FUZZ
@given(choice=st.integers(0, 2), where=st.floats(0, 1), junk=st.binary(min_size=1, max_size=8))
def test_valid_files_with_bytes_spliced_in(
    kind: str, choice: int, where: float, junk: bytes
) -> None:
    valid = VALID_FILES[kind][choice % len(VALID_FILES[kind])]
    at = int(where * len(valid))
    _parse(kind, valid[:at] + junk + valid[at + 1 :])


#: Name bytes without whitespace or header characters; may be non-UTF-8 or repeat.
names = st.binary(min_size=1, max_size=12).filter(
    lambda name: not any(c in name for c in b" \t\n\r\x0b\x0c>@")
)
sequences = st.text(alphabet="ACGTNRYacgtu", min_size=2, max_size=30)


@FUZZ
@given(records=st.lists(st.tuples(names, sequences), min_size=1, max_size=6))
def test_reads_with_arbitrary_name_bytes(records: list[tuple[bytes, str]]) -> None:
    """Names that are not UTF-8 or repeat are reported; otherwise every record comes back."""
    data = b"".join(b">" + name + b"\n" + seq.encode() + b"\n" for name, seq in records)
    reads = _parse("reads", data)
    if reads is not None:
        assert [(r.name.encode(), r.sequence) for r in reads] == [
            (name, seq.upper().encode()) for name, seq in records
        ]


@FUZZ
@given(
    rows=st.lists(st.tuples(names, sequences), min_size=1, max_size=6),
    fasta=st.booleans(),
)
def test_crlf_alignment_parses_like_lf(rows: list[tuple[bytes, str]], fasta: bool) -> None:
    """CRLF line endings never change the result (content or error) of an alignment."""
    if fasta:
        data = b"".join(b">" + name + b"\n" + seq.encode() + b"\n" for name, seq in rows)
    else:
        data = f"{len(rows)} {len(rows[0][1])}\n".encode() + b"".join(
            name + b" " + seq.encode() + b"\n" for name, seq in rows
        )
    def content(path: str) -> tuple[list[str], bytes]:
        alignment = read_alignment(path)
        return alignment.names, alignment.rows.tobytes()

    assert _outcome(content, data) == _outcome(content, data.replace(b"\n", b"\r\n"))


@FUZZ
@given(records=st.lists(st.tuples(names, sequences), min_size=1, max_size=6))
def test_crlf_fastq_parses_like_lf(records: list[tuple[bytes, str]]) -> None:
    data = b"".join(
        b"@" + name + b"\n" + seq.encode() + b"\n+\n" + b"I" * len(seq) + b"\n"
        for name, seq in records
    )
    reads = PARSERS["reads"]
    assert _outcome(reads, data) == _outcome(reads, data.replace(b"\n", b"\r\n"))


@pytest.mark.parametrize("kind", PARSERS)
def test_huge_lines(kind: str) -> None:
    """A multi-megabyte line of valid or invalid content is handled, not choked on."""
    huge = b"ACGT" * 500_000
    contents = {
        "tree": [b"(" + b"a" * 2_000_000 + b",b,c);", b"(" * 100_000],
        "alignment": [b"2 2000000\na " + huge + b"\nb " + huge + b"\n", huge],
        "reads": [b">r\n" + huge + b"\n", b">" + huge, huge],
    }
    for data in contents[kind]:
        _parse(kind, data)
