"""Catalogue of malformed or inconsistent inputs (data only; the tests that use it live elsewhere).

Each `BadInput` holds the full contents of all three input files: a small valid base case of five
taxa with exactly one thing broken, and lower-case fragments the error message must contain.
tests/io/test_inputs.py runs every case through the parsers; the CLI tests run the same cases through
the command line. `culprit` names the file the error must be reported against.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

BASE_TREE = "((alpha,beta),gamma,(delta,epsilon));\n"

# Line numbers used by the expectations below: header 1, alpha 2, beta 3, gamma 4, delta 5,
# epsilon 6.
BASE_ALIGNMENT = """5 12
alpha   ACGTACGTAC-A
beta    ACGTTCGTAC-A
gamma   ACGAACG-ACTA
delta   TCGTACGTACGA
epsilon TCGTACCTACGA
"""

# Headers on lines 1, 3, 5; sequences on lines 2, 4, 6.
BASE_READS = """>r1 first read
ACGTACGT
>r2
CGTACCTA
>r3
GTACGA
"""

BASE_FASTQ = """@r1
ACGTACGT
+
IIIIIIII
@r2
CGTACCTA
+
IIIIIIII
"""

BASE = {"tree": BASE_TREE, "alignment": BASE_ALIGNMENT, "reads": BASE_READS}

BINARY_GARBAGE = bytes(range(256)) * 4


def _gzip(text: str) -> bytes:
    """Deterministic gzip (fixed mtime) so the catalogue is the same on every run."""
    return gzip.compress(text.encode(), mtime=0)


@dataclass(frozen=True)
class BadInput:
    """Contents of the tree, alignment and reads files, and what the error message must say."""

    id: str
    tree: str | bytes
    alignment: str | bytes
    reads: str | bytes
    expect: list[str]

    @property
    def culprit(self) -> str:
        """Which file ("tree", "alignment" or "reads") differs from the valid base case."""
        changed = [
            kind
            for kind, base in BASE.items()
            if getattr(self, kind) != base
        ]
        assert len(changed) == 1, f"{self.id}: exactly one file must differ from the base case"
        return changed[0]

    def write(self, directory: Path) -> dict[str, Path]:
        """Write the three files into `directory`; returns {"tree"|"alignment"|"reads": path}.

        The names carry no format hint that matters: formats are detected from content.
        """
        paths = {}
        for kind, name in (("tree", "tree.nwk"), ("alignment", "ref.phy"), ("reads", "reads.fa")):
            content = getattr(self, kind)
            path = directory / name
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            paths[kind] = path
        return paths


def _case(
    case_id: str,
    expect: list[str],
    tree: str | bytes = BASE_TREE,
    alignment: str | bytes = BASE_ALIGNMENT,
    reads: str | bytes = BASE_READS,
) -> BadInput:
    return BadInput(case_id, tree, alignment, reads, expect)


def _alignment_with(line: int, replacement: str) -> str:
    """The base alignment with its 1-based `line` replaced."""
    lines = BASE_ALIGNMENT.splitlines(keepends=True)
    lines[line - 1] = replacement
    return "".join(lines)


CATALOGUE: list[BadInput] = [
    # ---------------------------------------------------------------- tree
    _case("tree_empty", ["empty"], tree=""),
    _case("tree_blank_lines_only", ["empty"], tree="\n  \n\t\n"),
    # The first byte that is not UTF-8 (0x80) comes after the first newline (0x0a).
    _case("tree_binary_garbage", ["not utf-8", "line 2"], tree=BINARY_GARBAGE),
    _case(
        "tree_unbalanced_open",
        ["malformed newick", "unbalanced", "line 1"],
        tree="((alpha,beta),gamma,(delta,epsilon);\n",
    ),
    _case(
        "tree_unbalanced_close",
        ["malformed newick", "line 1, column 15"],
        tree="((alpha,beta)),gamma,(delta,epsilon));\n",
    ),
    _case(
        "tree_missing_semicolon",
        ["malformed newick", "';' missing"],
        tree="((alpha,beta),gamma,(delta,epsilon))\n",
    ),
    _case(
        "tree_bad_branch_length",
        ["malformed newick", "edge length", "'x'", "line 1"],
        tree="((alpha:x,beta),gamma,(delta,epsilon));\n",
    ),
    _case(
        "tree_unterminated_quote",
        ["malformed newick", "quote"],
        tree="(('alpha,beta),gamma,(delta,epsilon));\n",
    ),
    _case(
        "tree_duplicate_tip",
        ["duplicate tip", "'alpha'", "line 1"],
        tree="((alpha,beta),alpha,(delta,epsilon));\n",
    ),
    _case("tree_two_trees", ["exactly one tree", "found 2"], tree=BASE_TREE * 2),
    _case("tree_no_tree", ["exactly one tree", "found 0"], tree="[no tree here];"),
    _case(
        "tree_unlabeled_tip",
        ["tip number 2", "after 'alpha'", "no label"],
        tree="((alpha,,beta),gamma,(delta,epsilon));\n",
    ),
    _case("tree_two_tips", ["2 tip", "at least 3"], tree="(alpha,beta);\n"),
    # ---------------------------------------------------------------- tree vs alignment
    _case(
        "tip_missing_from_alignment",
        ["1 tip", "missing from the alignment", "'epsilon'"],
        alignment=_alignment_with(1, "4 12\n").replace("epsilon TCGTACCTACGA\n", ""),
    ),
    _case(
        "tip_name_case_differs",
        ["1 tip", "missing", "'gamma'"],
        alignment=_alignment_with(4, "GAMMA   ACGAACG-ACTA\n"),
    ),
    _case(
        "alignment_one_column",
        ["1 column", "at least 2"],
        alignment="5 1\nalpha A\nbeta A\ngamma C\ndelta T\nepsilon -\n",
    ),
    # ---------------------------------------------------------------- alignment
    _case("alignment_empty", ["empty"], alignment=""),
    _case("alignment_binary_garbage", ["phylip header", "line 1"], alignment=BINARY_GARBAGE),
    _case("phylip_header_one_number", ["phylip header", "positive integers", "line 1"],
          alignment=_alignment_with(1, "5\n")),
    _case("phylip_header_three_numbers", ["phylip header", "'5 12 1'"],
          alignment=_alignment_with(1, "5 12 1\n")),
    _case("phylip_header_words", ["phylip header", "'five twelve'"],
          alignment=_alignment_with(1, "five twelve\n")),
    _case("phylip_header_zero_rows", ["positive integers", "'0 12'"],
          alignment=_alignment_with(1, "0 12\n")),
    _case("phylip_header_negative_length", ["positive integers", "'5 -12'"],
          alignment=_alignment_with(1, "5 -12\n")),
    _case("phylip_fewer_rows_than_header", ["announces 6 rows", "only 5"],
          alignment=_alignment_with(1, "6 12\n")),
    _case("phylip_more_rows_than_header", ["announces 4 rows", "more", "line 6"],
          alignment=_alignment_with(1, "4 12\n")),
    _case(
        "phylip_row_too_short",
        ["'gamma'", "line 4", "11 characters", "12"],
        alignment=_alignment_with(4, "gamma   ACGAACG-ACT\n"),
    ),
    _case(
        "phylip_row_too_long",
        ["'delta'", "line 5", "13 characters", "12"],
        alignment=_alignment_with(5, "delta   TCGTACGTACGAA\n"),
    ),
    _case(
        "phylip_interleaved_block_missing_line",
        ["interleaved", "1 line", "line 8"],
        alignment="5 12\nalpha   ACGTAC\nbeta    ACGTTC\ngamma   ACGAAC\ndelta   TCGTAC\n"
        "epsilon TCGTAC\n\nGTAC-A\n",
    ),
    _case(
        "alignment_duplicate_name",
        ["duplicate", "'beta'", "lines 3 and 4"],
        alignment=_alignment_with(4, "beta    ACGAACG-ACTA\n"),
    ),
    _case(
        "alignment_invalid_character",
        ["invalid character 'j'", "'gamma'", "line 4", "alignment column 5"],
        alignment=_alignment_with(4, "gamma   ACGAJCG-ACTA\n"),
    ),
    _case(
        "alignment_digit_in_sequence",
        ["invalid character '7'", "'delta'", "line 5", "alignment column 12"],
        alignment=_alignment_with(5, "delta   TCGTACGTACG7\n"),
    ),
    _case(
        "alignment_non_utf8_name",
        ["utf-8", "line 3"],
        alignment=_alignment_with(3, "be\xfft\xa0    ACGTTCGTAC-A\n").encode("latin-1"),
    ),
    _case(
        "fasta_unequal_lengths",
        ["'gamma'", "line 6", "11 characters", "'alpha'", "12"],
        alignment=">alpha\nACGTAC\nGTAC-A\n>beta\nACGTTCGTAC-A\n>gamma\nACGAACG-ACT\n"
        ">delta\nTCGTACGTACGA\n>epsilon\nTCGTACCTACGA\n",
    ),
    _case(
        "fasta_duplicate_name",
        ["duplicate", "'delta'", "lines 7 and 9"],
        alignment=">alpha\nACGTACGTAC-A\n>beta\nACGTTCGTAC-A\n>gamma\nACGAACG-ACTA\n"
        ">delta\nTCGTACGTACGA\n>delta\nTCGTACCTACGA\n",
    ),
    _case(
        "fasta_invalid_character_on_continuation_line",
        ["invalid character '*'", "'alpha'", "line 3", "alignment column 8"],
        alignment=">alpha\nACGTAC\nG*AC-A\n>beta\nACGTTCGTAC-A\n>gamma\nACGAACG-ACTA\n"
        ">delta\nTCGTACGTACGA\n>epsilon\nTCGTACCTACGA\n",
    ),
    _case(
        "fasta_header_without_name",
        ["without a name", "line 3"],
        alignment=">alpha\nACGTACGTAC-A\n>\nACGTTCGTAC-A\n",
    ),
    # ---------------------------------------------------------------- reads
    _case("reads_empty", ["empty"], reads=""),
    _case("reads_blank_lines_only", ["empty"], reads="\n \r\n\n"),
    _case("reads_binary_garbage", ["before the first header", "line 1"], reads=BINARY_GARBAGE),
    _case(
        "reads_sequence_before_header",
        ["before the first header", "line 1", "'acgt'"],
        reads="ACGT\n" + BASE_READS,
    ),
    _case(
        "reads_invalid_character",
        ["invalid character 'x'", "'r2'", "line 4", "position 5"],
        reads=BASE_READS.replace("CGTACCTA", "CGTAXCTA"),
    ),
    _case(
        "reads_invalid_character_second_line",
        ["invalid character 'j'", "'r3'", "line 7", "position 8"],
        reads=BASE_READS + "GJ\n",
    ),
    _case(
        "reads_gap",
        ["'-'", "gaps are not allowed", "'r1'", "position 3", "line 2"],
        reads=BASE_READS.replace("ACGTACGT", "AC-TACGT"),
    ),
    _case(
        "reads_duplicate_name",
        ["duplicate read name", "'r1'", "lines 1 and 5"],
        reads=BASE_READS.replace(">r3", ">r1 again"),
    ),
    _case(
        "reads_header_without_name",
        ["without a name", "line 3"],
        reads=BASE_READS.replace(">r2", ">  "),
    ),
    _case(
        "reads_non_utf8_name",
        ["utf-8", "line 3"],
        reads=BASE_READS.replace(">r2", ">r\xe92\xff").encode("latin-1"),
    ),
    _case(
        "fastq_truncated_record",
        ["truncated fastq", "'r2'", "quality", "line 5"],
        reads=BASE_FASTQ[: BASE_FASTQ.rindex("IIIIIIII")],
    ),
    _case(
        "fastq_header_only",
        ["truncated fastq", "'r3'", "sequence", "line 9"],
        reads=BASE_FASTQ + "@r3\n",
    ),
    _case(
        "fastq_quality_length_mismatch",
        ["'r2'", "quality", "7 characters", "8", "line 8"],
        reads=BASE_FASTQ[:-2] + "\n",
    ),
    _case(
        "fastq_missing_separator",
        ["'r1'", "'+'", "line 3"],
        reads=BASE_FASTQ.replace("+\n", "", 1),
    ),
    _case(
        "fastq_record_without_at",
        ["fastq header", "'@'", "line 5"],
        reads=BASE_FASTQ.replace("@r2", "r2"),
    ),
    _case(
        "fastq_invalid_character",
        ["invalid character '.'", "'r2'", "position 1", "line 6"],
        reads=BASE_FASTQ.replace("CGTACCTA", ".GTACCTA"),
    ),
    _case(
        "fastq_duplicate_name",
        ["duplicate read name", "'r1'", "lines 1 and 5"],
        reads=BASE_FASTQ.replace("@r2", "@r1"),
    ),
    _case(
        "gzip_truncated",
        ["gzip", "corrupt or truncated"],
        reads=_gzip("".join(f">r{i}\nACGTACGTAC\n" for i in range(200)))[:120],
    ),
    _case(
        "gzip_corrupt",
        ["gzip", "corrupt or truncated"],
        reads=_gzip(BASE_READS)[:-8] + b"\x00\x00\x00\x00\x00\x00\x00\x00",
    ),
    _case(
        "gzip_invalid_character",
        ["invalid character 'z'", "'r3'", "line 6", "position 2"],
        reads=_gzip(BASE_READS.replace("GTACGA", "GZACGA")),
    ),
    # ---------------------------------------------------------------- names no output can hold
    _case(
        "read_name_nul",
        ["the name", "holds the control character byte 0x00", "line 3"],
        reads=BASE_READS.replace(">r2", ">r\x002"),
    ),
    _case(
        "alignment_name_control",
        ["the name", "byte 0x07", "line 3"],
        alignment=_alignment_with(3, "be\x07ta   ACGTTCGTAC-A\n"),
    ),
]
