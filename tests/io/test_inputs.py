"""Input layer: every supported format variant parses to the same content; bad input is named.

The malformed-input catalogue lives in bad_inputs.py so that the CLI tests can reuse it.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import dendropy
import numpy as np
import pytest
from bad_inputs import BASE, CATALOGUE, BadInput

from papara_py.errors import InputError
from papara_py.io import read_input
from papara_py.io.alignment_input import match_tips, read_alignment
from papara_py.io.read_input import iter_reads
from papara_py.io.tree_input import read_tree
from papara_py.phylo.encoding import DNA


def _write(directory: Path, name: str, content: str | bytes) -> Path:
    path = directory / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _tip_labels(tree: dendropy.Tree) -> list[str]:
    return [leaf.taxon.label for leaf in tree.leaf_node_iter()]


# ---------------------------------------------------------------------------------------------
# Alignment: every layout of the same alignment gives the same names and rows

NAMES = ["alpha", "beta_2", "gamma", "delta", "eps"]
SEQUENCES = [
    "ACGTACGTAC-ATTGCA?NRYAC",
    "acgttcgtac-attgcagnnyac",
    "ACGAACG-ACTATTG..GCCUAC",
    "TCGTACGTACGATTGCAGCMKAC",
    "TCGTACCTACGA-----------",
]
EXPECTED_ROWS = np.array([list(s.upper().encode()) for s in SEQUENCES], dtype=np.uint8)
M = len(SEQUENCES[0])


def _chunks(sequence: str, size: int) -> list[str]:
    return [sequence[i : i + size] for i in range(0, len(sequence), size)]


def _phylip(name_width: int | None, block: int | None = None, blank_lines: bool = True) -> str:
    """PHYLIP text: strict names (padded to `name_width`) or relaxed (None); interleaved when
    `block` is given, with or without blank lines between blocks."""
    header = f"{len(NAMES)} {M}\n"

    def named(name: str) -> str:
        return name.ljust(name_width) if name_width else name + "  "

    if block is None:
        return header + "".join(f"{named(n)}{s}\n" for n, s in zip(NAMES, SEQUENCES))
    chunked = [_chunks(s, block) for s in SEQUENCES]
    blocks = ["".join(f"{named(n)}{c[0]}\n" for n, c in zip(NAMES, chunked))]
    for k in range(1, len(chunked[0])):
        blocks.append("".join(f"{c[k]}\n" for c in chunked))
    return header + ("\n" if blank_lines else "").join(blocks)


def _fasta(width: int) -> str:
    return "".join(
        f">{n} description {i}\n" + "".join(f"{c}\n" for c in _chunks(s, width))
        for i, (n, s) in enumerate(zip(NAMES, SEQUENCES))
    )


ALIGNMENT_VARIANTS = {
    "relaxed": _phylip(None),
    "relaxed_spaces_in_sequence": f"{len(NAMES)} {M}\n"
    + "".join(f"{n}\t{' '.join(_chunks(s, 5))}\n" for n, s in zip(NAMES, SEQUENCES)),
    "strict": _phylip(10),
    "strict_interleaved": _phylip(10, block=10),
    "relaxed_interleaved": _phylip(None, block=7),
    "interleaved_without_blank_lines": _phylip(None, block=10, blank_lines=False),
    "phylip_crlf": _phylip(None, block=10).replace("\n", "\r\n"),
    "phylip_blank_lines_around": "\n\n" + _phylip(None).replace("\n", "\n\n", 1) + "\n\n",
    "phylip_all_lowercase": f"{len(NAMES)} {M}\n"
    + "".join(f"{n} {s.lower()}\n" for n, s in zip(NAMES, SEQUENCES)),
    "fasta_one_line": _fasta(1000),
    "fasta_wrapped": _fasta(6),
    "fasta_crlf": _fasta(10).replace("\n", "\r\n"),
    "fasta_blank_lines": "\n" + _fasta(8).replace(">", "\n>"),
    "fasta_utf8_bom": "\ufeff" + _fasta(1000),
}


@pytest.mark.parametrize("variant", ALIGNMENT_VARIANTS)
def test_alignment_variants_parse_to_the_same_content(tmp_path: Path, variant: str) -> None:
    path = _write(tmp_path, "aln", ALIGNMENT_VARIANTS[variant])
    alignment = read_alignment(path)
    assert alignment.names == NAMES
    assert alignment.rows.dtype == np.uint8
    np.testing.assert_array_equal(alignment.rows, EXPECTED_ROWS)
    assert alignment.path == str(path)


def test_strict_phylip_names_may_hold_spaces_and_touch_the_sequence(tmp_path: Path) -> None:
    text = "3 8\nHomo sapi ACGTACGT\nabcdefghijACGTTTGT\nshort     ACG-ACGT\n"
    alignment = read_alignment(_write(tmp_path, "aln", text))
    assert alignment.names == ["Homo sapi", "abcdefghij", "short"]
    assert bytes(alignment.rows[2]) == b"ACG-ACGT"


def test_relaxed_is_preferred_when_every_row_fits_it(tmp_path: Path) -> None:
    # Relaxed reading fits every row; a strict reading would cut "longername" at 10 characters.
    text = "2 4\nlongername_1 ACGT\nb            TTTT\n"
    alignment = read_alignment(_write(tmp_path, "aln", text))
    assert alignment.names == ["longername_1", "b"]


def test_row_length_error_uses_the_interpretation_that_fits_more_rows(tmp_path: Path) -> None:
    text = "3 4\nalpha ACGT\nbeta ACG\ngamma TTTT\n"
    with pytest.raises(InputError, match=r"line 3: row 'beta' has 3 characters"):
        read_alignment(_write(tmp_path, "aln", text))


def test_alignment_columns_are_reported_in_the_interleaved_block_they_are_in(
    tmp_path: Path,
) -> None:
    text = "2 8\na ACGT\nb ACGT\n\nAC GT\nAC G!\n"
    with pytest.raises(InputError) as info:
        read_alignment(_write(tmp_path, "aln", text))
    message = str(info.value)
    assert "line 6" in message and "alignment column 8" in message and "column 5 of" in message


# ---------------------------------------------------------------------------------------------
# Reads: FASTA, FASTQ, gzip, CRLF, lowercase all give the same records

READS = [("r1", "ACGTACGTNNRY"), ("r2", "cgtaccta"), ("empty", ""), ("r_4", "GUACGAu")]
EXPECTED_READS = [(name, seq.upper().encode()) for name, seq in READS]


def _reads_fasta(width: int) -> str:
    return "".join(
        f">{n} some description\n" + "".join(f"{c}\n" for c in _chunks(s, width)) for n, s in READS
    )


def _reads_fastq() -> str:
    return "".join(f"@{n} desc\n{s}\n+{n}\n{'I' * len(s)}\n" for n, s in READS)


READ_VARIANTS: dict[str, str | bytes] = {
    "fasta": _reads_fasta(1000),
    "fasta_wrapped": _reads_fasta(5),
    "fasta_crlf": _reads_fasta(5).replace("\n", "\r\n"),
    "fasta_blank_lines": "\n\n" + _reads_fasta(3).replace(">", "\n>"),
    "fasta_lowercase": _reads_fasta(1000).lower(),
    "fastq": _reads_fastq(),
    "fastq_crlf": _reads_fastq().replace("\n", "\r\n"),
    "fasta_cr": _reads_fasta(5).replace("\n", "\r"),  # classic Mac OS line breaks
    "fastq_cr_gzip": gzip.compress(_reads_fastq().replace("\n", "\r").encode()),
    "fastq_blank_lines_between_records": _reads_fastq().replace("\n@", "\n\n@") + "\n\n",
    "fasta_utf8_bom": "\ufeff" + _reads_fasta(1000),
    "fasta_gzip": gzip.compress(_reads_fasta(7).encode()),
    "fastq_gzip": gzip.compress(_reads_fastq().replace("\n", "\r\n").encode()),
}


@pytest.mark.parametrize("variant", READ_VARIANTS)
def test_read_variants_parse_to_the_same_records(tmp_path: Path, variant: str) -> None:
    reads = list(iter_reads(_write(tmp_path, "reads", READ_VARIANTS[variant])))
    assert [(read.name, read.sequence) for read in reads] == EXPECTED_READS


def test_read_line_is_the_header_line(tmp_path: Path) -> None:
    fasta = list(iter_reads(_write(tmp_path, "fa", _reads_fasta(5))))
    assert [read.line for read in fasta] == [1, 5, 8, 9]
    fastq = list(iter_reads(_write(tmp_path, "fq", _reads_fastq())))
    assert [read.line for read in fastq] == [1, 5, 9, 13]


@pytest.mark.parametrize(
    "text",
    [
        ">first\n>a\nACGT\n>last\n",
        ">first\n\n>a\nACGT\n>last",
        "@first\n\n+\n\n@a\nACGT\n+\nIIII\n@last\n\n+\n\n",
    ],
    ids=["fasta", "fasta_blank_lines_no_final_newline", "fastq"],
)
def test_empty_reads_are_yielded_wherever_they_are(tmp_path: Path, text: str) -> None:
    reads = list(iter_reads(_write(tmp_path, "reads", text)))
    assert [(read.name, read.sequence) for read in reads] == [
        ("first", b""), ("a", b"ACGT"), ("last", b"")
    ]


def test_gzip_is_detected_by_content_not_by_extension(tmp_path: Path) -> None:
    zipped = _write(tmp_path, "reads.fasta", gzip.compress(_reads_fasta(9).encode()))
    plain = _write(tmp_path, "reads.fa.gz", _reads_fasta(9))
    assert list(iter_reads(zipped)) == list(iter_reads(plain))


def test_reads_stream_record_by_record(tmp_path: Path) -> None:
    """The first read is available before a later bad record is reached."""
    path = _write(tmp_path, "reads", ">good\nACGT\n>bad\nAC!T\n")
    records = iter_reads(path)
    assert next(records).name == "good"
    with pytest.raises(InputError, match="'!' in read 'bad'"):
        next(records)


# ---------------------------------------------------------------------------------------------
# Trees

TIPS = {"alpha", "beta_2", "gamma", "delta", "eps"}
TREE_VARIANTS = {
    "plain": "((alpha,beta_2),gamma,(delta,eps));",
    "branch_lengths": "((alpha:0.1,beta_2:2e-3):1,gamma:0.5,(delta:1,eps:1):0);",
    "support_and_inner_labels": "((alpha:1,beta_2:2)0.95:0.1,gamma:1,(delta,eps)inner:1)root;",
    "quoted_labels": "(('alpha','beta_2'),gamma,(delta,'eps'));",
    "rooted": "[&R] ((alpha,beta_2),(gamma,(delta,eps)));",
    "unrooted": "[&U] ((alpha,beta_2),gamma,(delta,eps));",
    "polytomy": "(alpha,beta_2,gamma,delta,eps);",
    "crlf_multiline": "((alpha,\r\nbeta_2),gamma,\r\n(delta,eps));\r\n",
    "utf8_bom_and_comments": "\ufeff[a tree] ((alpha,beta_2)[&&NHX:S=x],gamma,(delta,eps));\n",
}


@pytest.mark.parametrize("variant", TREE_VARIANTS)
def test_tree_variants_have_the_same_tips(tmp_path: Path, variant: str) -> None:
    tree = read_tree(_write(tmp_path, "tree", TREE_VARIANTS[variant]))
    labels = _tip_labels(tree)
    assert sorted(labels) == sorted(TIPS)


def test_rooting_comments_are_honoured(tmp_path: Path) -> None:
    assert read_tree(_write(tmp_path, "r", TREE_VARIANTS["rooted"])).is_rooted is True
    assert read_tree(_write(tmp_path, "u", TREE_VARIANTS["unrooted"])).is_rooted is False


def test_tip_labels_keep_quotes_spaces_underscores_and_case(tmp_path: Path) -> None:
    tree = read_tree(_write(tmp_path, "tree", "('a b',A_1,a_1,'it''s');"))
    assert _tip_labels(tree) == ["a b", "A_1", "a_1", "it's"]


# ---------------------------------------------------------------------------------------------
# Tips <-> rows


def test_match_tips_orders_rows_by_tip_and_lists_extra_rows(tmp_path: Path) -> None:
    alignment = read_alignment(_write(tmp_path, "aln", _phylip(None)))
    match = match_tips(["eps", "alpha", "gamma"], alignment, "tree.nwk")
    np.testing.assert_array_equal(match.tip_rows, EXPECTED_ROWS[[4, 0, 2]])
    assert match.extra == [1, 3]


def test_match_tips_names_five_missing_tips_and_the_count(tmp_path: Path) -> None:
    alignment = read_alignment(_write(tmp_path, "aln", _phylip(None)))
    tips = ["alpha"] + [f"t{i}" for i in range(7)]
    with pytest.raises(InputError) as info:
        match_tips(tips, alignment, "my_tree.nwk")
    message = str(info.value)
    assert "7 tip(s)" in message and "my_tree.nwk" in message and "and 2 more" in message
    assert all(f"'t{i}'" in message for i in range(5)) and "'t5'" not in message


@pytest.mark.parametrize("tip, row, how", [("beta 2", "beta_2", "with '_' for each space"),
                                          ("alpha one", "alpha", "its first word")])
def test_a_missing_tip_with_a_space_is_matched_to_its_row_in_the_message(tmp_path: Path, tip, row, how) -> None:
    """A quoted Newick label with a space can never match an alignment name (names end at
    whitespace); the refusal names the row it was probably meant as."""
    alignment = read_alignment(_write(tmp_path, "aln", _phylip(None)))
    with pytest.raises(InputError) as info:
        match_tips(["gamma", tip], alignment, "tree.nwk")
    message = str(info.value)
    assert f"The tip '{tip}' has a space where the alignment names a row '{row}' ({how})" in message
    assert f"write the tip {row} in the tree" in message
    with pytest.raises(InputError) as info:
        match_tips(["gamma", "zeta"], alignment, "tree.nwk")
    assert "has a space" not in str(info.value)


@pytest.mark.parametrize("reader", [read_tree, read_alignment, lambda p: list(iter_reads(p))])
@pytest.mark.parametrize("target", ["missing", "directory"])
def test_unreadable_files_are_input_errors(tmp_path: Path, reader, target: str) -> None:
    path = tmp_path / "nothing" if target == "missing" else tmp_path
    with pytest.raises(InputError, match="cannot read"):
        reader(path)


# ---------------------------------------------------------------------------------------------
# Real data


def test_pyrg_inputs_parse(pyrg_dir: Path) -> None:
    tree = read_tree(pyrg_dir / "tree.nwk")
    phylip = read_alignment(pyrg_dir / "ref.phy")
    fasta = read_alignment(pyrg_dir / "ref.fasta")
    reads = list(iter_reads(pyrg_dir / "reads.fasta"))
    assert len(_tip_labels(tree)) == 65
    assert phylip.rows.shape == (65, 2054)
    assert phylip.names == fasta.names
    np.testing.assert_array_equal(phylip.rows, fasta.rows)
    assert len(reads) == 106 and all(71 <= len(read.sequence) <= 119 for read in reads)
    match = match_tips(_tip_labels(tree), phylip, str(pyrg_dir / "tree.nwk"))
    assert match.tip_rows.shape == (65, 2054) and match.extra == []


# ---------------------------------------------------------------------------------------------
# The catalogue of bad inputs


def _parse_all(paths: dict[str, Path]) -> None:
    """The parser layer as the pipeline uses it: tree, alignment, tips, then every read."""
    tree = read_tree(paths["tree"])
    alignment = read_alignment(paths["alignment"])
    match_tips(_tip_labels(tree), alignment, str(paths["tree"]))
    for _ in iter_reads(paths["reads"]):
        pass


def test_catalogue_base_case_is_valid_and_cases_are_distinct(tmp_path: Path) -> None:
    _parse_all(BadInput("base", expect=[], **BASE).write(tmp_path))
    assert len(CATALOGUE) >= 30
    assert len({case.id for case in CATALOGUE}) == len(CATALOGUE)
    assert {case.culprit for case in CATALOGUE} == {"tree", "alignment", "reads"}


@pytest.mark.parametrize("case", CATALOGUE, ids=[case.id for case in CATALOGUE])
def test_catalogue_case_raises_a_named_input_error(tmp_path: Path, case: BadInput) -> None:
    paths = case.write(tmp_path)
    with pytest.raises(InputError) as info:
        _parse_all(paths)
    error = info.value
    assert error.source == str(paths[case.culprit])
    message = str(error).lower()
    missing = [fragment for fragment in case.expect if fragment not in message]
    assert not missing, f"message {str(error)!r} lacks {missing}"


# ---------------------------------------------------------------------------------------------
# Reads: the bulk parser and the line parser agree on everything

def _by_lines(path: Path) -> list:
    """What the line-by-line parser alone makes of `path` (reads, or the error's message)."""
    lines = path.read_bytes()
    if lines[:2] == b"\x1f\x8b":
        try:
            lines = gzip.decompress(lines)
        except (EOFError, OSError):
            return ["the gzip data is corrupt or truncated"]
    numbered = enumerate((line.rstrip(b"\r") for line in lines.removeprefix(b"\xef\xbb\xbf").split(b"\n")), 1)
    numbered = list(numbered)
    if numbered and numbered[-1][1] == b"" and lines.endswith(b"\n"):
        numbered.pop()  # the text after the last newline
    try:
        chunks = list(read_input._line_path(iter(numbered), {}, str(path), DNA))
    except InputError as error:
        return [str(error)]
    return _flat(chunks)


def _flat(chunks) -> list:
    out = []
    for chunk in chunks:
        offsets = np.concatenate([[0], np.cumsum(chunk.lengths)])
        out += [(name, chunk.residues[a:b], int(line))
                for name, a, b, line in zip(chunk.names, offsets[:-1], offsets[1:], chunk.lines)]
    return out


def _both_parsers(path: Path) -> list:
    try:
        return _flat(read_input.iter_read_chunks(path))
    except InputError as error:
        return [str(error)]


def _many_reads(n: int, fastq: bool, wrap: int = 0, newline: str = "\n") -> str:
    rng = np.random.default_rng(n)
    records = []
    for q in range(n):
        seq = "".join(rng.choice(list("ACGTacgtN"), size=int(rng.integers(1, 30))))
        if fastq:
            records.append(f"@read{q} comment{newline}{seq}{newline}+{newline}{'I' * len(seq)}{newline}")
        else:
            body = newline.join(seq[i:i + wrap] for i in range(0, len(seq), wrap)) if wrap else seq
            records.append(f">read{q} comment{newline}{body}{newline}")
    return "".join(records)


READ_FILES = {
    "fasta": _many_reads(300, False), "fastq": _many_reads(300, True), "wrapped": _many_reads(300, False, wrap=7),
    "crlf": _many_reads(300, False, newline="\r\n"), "bom": "\ufeff" + _many_reads(50, True),
    "no final newline": _many_reads(40, False).rstrip("\n"),
    "late bad residue": _many_reads(200, False) + ">bad\nACGT!A\n" + _many_reads(5, False).replace(">read", ">more"),
    "late duplicate": _many_reads(200, True) + "@read7\nACGT\n+\nIIII\n",
    "late wrapped": _many_reads(200, False) + ">w1\nACGT\nACGT\n>w2\nAC\n",
    "late empty read": _many_reads(200, False) + ">empty\n>next\nACGT\n",
    "late blank line": _many_reads(100, True) + "\n\n" + _many_reads(3, True).replace("@read", "@x"),
    "quality with spaces": _many_reads(100, True) + "@q\nACGT\n+\n IIII\n",
    "late control name": _many_reads(100, False) + ">a\x01b\nACGT\n",
    "truncated fastq": _many_reads(100, True) + "@t\nACGT\n+\n",
    **{f"catalogue {case.id}": case.reads for case in CATALOGUE if case.culprit == "reads"},
}


@pytest.mark.parametrize("block", [5, 64, 1000, 1 << 20])
@pytest.mark.parametrize("name", list(READ_FILES))
def test_bulk_and_line_parsers_agree(tmp_path: Path, monkeypatch, name: str, block: int) -> None:
    """Reads, lengths, header lines and every error message are the line parser's, whatever
    the block size (records and lines cut anywhere), plain and gzipped."""
    content = READ_FILES[name]
    data = content if isinstance(content, bytes) else content.encode()
    monkeypatch.setattr(read_input, "READ_BLOCK_BYTES", block)
    for path in (_write(tmp_path, "reads", data), _write(tmp_path, "reads.gz", gzip.compress(data))):
        expected, found = _by_lines(path), _both_parsers(path)
        if expected == ["the gzip data is corrupt or truncated"]:  # where it breaks: line by line or by block
            assert len(found) == 1 and expected[0] in found[0], found
        else:
            assert found == expected, name
    if name in ("fasta", "fastq", "crlf"):  # well-formed: the bulk path takes every block
        monkeypatch.setattr(read_input, "_line_path", None)
        assert _both_parsers(path) == expected


# ---------------------------------------------------------------------------------------------
# Stockholm and Clustal references (Bio.AlignIO), compressed reads by their first bytes

PFAM_RRM = Path(__file__).resolve().parents[1] / "data" / "pfam_rrm"


@pytest.mark.parametrize("name", ["seed.sto", "ref.sto", "ref.aln"])
def test_stockholm_and_clustal_read_as_the_fasta(name: str) -> None:
    """The Pfam RRM_1 seed as HMMER's test suite holds it (seed.sto: Pfam's Stockholm, names with
    '/' and '-', '.' gaps, #=GR/#=GC lines), the same alignment laid out as hmmalign writes
    Stockholm (ref.sto: interleaved blocks, PP lines, lowercase insert columns) and as Clustal
    (ref.aln) read as ref.fasta does: same rows (the seed's names made Newick-safe as ref.fasta's
    were), detected from their content."""
    fasta = read_alignment(PFAM_RRM / "ref.fasta")
    other = read_alignment(PFAM_RRM / name)
    names = [n.replace("/", "_").replace("-", "_") for n in other.names]
    assert names == fasta.names and other.alphabet.name == "protein"
    assert np.array_equal(np.where(other.rows == ord("."), ord("-"), other.rows), fasta.rows)


@pytest.mark.parametrize("path, alphabet, warned", [
    ("data/example/ref.phy", "protein", "though at least 90% of its residues are A, C, G, T, U or N, which "
                                        "--alphabet auto reads as dna"),
    ("data/example/ref.phy", "dna", None), ("data/example/ref.phy", "auto", None),
    ("data/protein/ref.phy", "protein", None),
])
def test_an_alphabet_named_against_the_rows_is_warned_of(path: str, alphabet: str, warned: str | None,
                                                         caplog) -> None:
    """--alphabet protein on a nucleotide alignment aligns it as protein, as asked, with a warning
    that names the file and why it looks like the other alphabet; agreeing or auto: silent."""
    import logging

    caplog.set_level(logging.INFO, logger="papara_py")
    source = str(Path(__file__).resolve().parents[2] / path)
    assert read_alignment(source, alphabet=alphabet).alphabet.name == (alphabet if alphabet != "auto" else "dna")
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    if warned is None:
        assert messages == []
    else:
        assert messages == [("WARNING", f"{source}: aligned as protein, as --alphabet says, {warned}")]


def test_stockholm_errors_are_input_errors_with_lines(tmp_path: Path) -> None:
    text = (PFAM_RRM / "ref.sto").read_text()
    lines = text.splitlines()
    # a bad character in the second block: its file line and column, as for PHYLIP
    at = next(i for i, line in enumerate(lines) if line.startswith("ROC3_NICSY_99_170") and i > 200)
    name, _, sequence = lines[at].partition(" ")
    offset = len(lines[at]) - len(sequence.lstrip())
    lines[at] = lines[at][:offset + 3] + "!" + lines[at][offset + 4:]
    bad = _write(tmp_path, "bad.sto", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"bad\.sto, line {at + 1}: invalid character '!' in row 'ROC3_NICSY_99_170' "
                                         rf"at alignment column 54 \(column {offset + 4} of the line\)"):
        read_alignment(bad)
    twice = _write(tmp_path, "two.sto", text + text)
    with pytest.raises(InputError, match="two.sto: the Stockholm file holds 2 alignments; give a file of one"):
        read_alignment(twice)
    short = text.replace("ROC3_NICSY_99_170            LFVGNL..PYDIDSEG", "ROC3_NICSY_99_170            LFVGNL..PYD", 1)
    with pytest.raises(InputError, match=r"short.sto: malformed Stockholm alignment \(Biopython's reader: "):
        read_alignment(_write(tmp_path, "short.sto", short))
    clustal = (PFAM_RRM / "ref.aln").read_text().replace("GBP2_YEAST_221_291 ", "GBP2_YEAST_221_291X", 1)
    with pytest.raises(InputError, match=r"bad.aln: malformed Clustal alignment|bad.aln: .*row"):
        read_alignment(_write(tmp_path, "bad.aln", clustal))
    # a header alone (Biopython's Clustal reader would wait for a block forever; found by the fuzz test)
    for name, header in (("empty.aln", "CLUSTAL W\n\n\n"), ("empty.sto", "# STOCKHOLM 1.0\n")):
        with pytest.raises(InputError, match=rf"{name}: the (Clustal|Stockholm) file holds a header and no rows"):
            read_alignment(_write(tmp_path, name, header))


def test_stockholm_through_a_fifo_is_read_once_and_hashed(tmp_path: Path) -> None:
    import hashlib
    import os
    import threading

    from papara_py.io.checksums import Digest

    data = (PFAM_RRM / "ref.sto").read_bytes()
    fifo = tmp_path / "ref.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    digest = Digest()
    alignment = read_alignment(fifo, digest)
    writer.join(timeout=10)
    assert alignment.rows.shape == (79, 80) and digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_run_on_stockholm_and_clustal_equals_the_fasta_run(tmp_path: Path) -> None:
    """The same reads aligned to ref.fasta, ref.sto and ref.aln give the same alignments; the run
    record keeps the Stockholm file's own sha256."""
    import hashlib

    from papara_py.api import align

    fasta = read_alignment(PFAM_RRM / "ref.fasta")
    reads = {f"r{i}": fasta.rows[i][fasta.rows[i] != ord("-")].tobytes().decode()[5:45] for i in (3, 17, 40, 66)}
    runs = {name: align(str(PFAM_RRM / "tree.nwk"), str(PFAM_RRM / name), reads, output=tmp_path / f"{name}.h5",
                        device="cpu", threads=1)
            for name in ("ref.fasta", "ref.sto", "ref.aln")}
    results = {name: [(r.name, r.edge, r.start, r.cigar) for r in run] for name, run in runs.items()}
    assert results["ref.sto"] == results["ref.fasta"] == results["ref.aln"] and len(results["ref.sto"]) == 4
    recorded = runs["ref.sto"].record["checksums_sha256"]["alignment"]
    assert recorded == hashlib.sha256((PFAM_RRM / "ref.sto").read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz"])
def test_compressed_reads_are_detected_by_content(tmp_path: Path, kind: str) -> None:
    """gzip, bzip2 and xz reads are read whatever their names (Python's gzip, bz2, lzma), their
    digest the compressed bytes; concatenated streams are read whole."""
    import bz2
    import hashlib
    import lzma

    from papara_py.io.checksums import Digest

    compress = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind]
    text = _reads_fasta(30).encode()
    half = text.index(b">", len(text) // 2)
    data = compress(text[:half]) + compress(text[half:])  # two streams, as `cat a.gz b.gz` makes
    path = _write(tmp_path, "reads.fasta", data)
    digest = Digest()
    assert list(iter_reads(path, digest)) == list(iter_reads(_write(tmp_path, "plain.fa", text)))
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    broken = _write(tmp_path, "broken", data[: len(data) // 2])
    with pytest.raises(InputError, match=f"broken, after line \\d+: the {kind} data is corrupt or truncated"):
        list(iter_reads(broken))


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz"])
def test_corrupt_compressed_reads_name_the_line_they_break_after(tmp_path: Path, kind: str) -> None:
    """The error names the last whole line before the break (not line 0 where the break lies
    inside the first block of READ_BLOCK_BYTES)."""
    import bz2
    import lzma

    compress = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind]
    text = "".join(f">r{i}\n{'ACGT' * 10}\n" for i in range(200_000)).encode()  # 400,000 lines, 9 MB
    broken = _write(tmp_path, "broken", compress(text)[: len(compress(text)) // 2])
    with pytest.raises(InputError) as caught:
        list(iter_reads(broken))
    line = int(re.search(r"after line (\d+):", str(caught.value)).group(1))
    assert 100_000 < line < 300_000


def test_zstd_and_zip_reads_are_refused_by_name(tmp_path: Path) -> None:
    zstd = _write(tmp_path, "reads.fa.zst", b"(\xb5/\xfd\x04XA\x00\x00>a\nACGT\n\x05\x97\x86)")  # `zstd` of >a ACGT
    with pytest.raises(InputError, match="reads.fa.zst: zstd-compressed reads are not supported: decompress with "
                                         "zstd -d"):
        list(iter_reads(zstd))
    archive = _write(tmp_path, "reads.zip", b"PK\x03\x04" + bytes(40))
    with pytest.raises(InputError, match="reads.zip: a zip archive is not a reads file: unzip it"):
        list(iter_reads(archive))
