"""Exports never hold two rows of one name and always read back (issue #28, cause 6): every format
is exported and read back with papara-py's own alignment reader (phylip and fasta also as the
reference of a new run); an alignment taxon that is not in the tree appears once; a read named
like a reference taxon is refused up front; names with whitespace (strict PHYLIP) are written
with '_' and the renaming listed beside the export."""

from __future__ import annotations

from pathlib import Path

import pytest
from misuse import EXAMPLE, Workspace, assert_refused, papara

from papara_py.io.alignment_input import read_alignment


def strict_inputs(directory: Path) -> None:
    """The example with taxon r0001 renamed 'r 0001': strict PHYLIP names, a quoted tree label."""
    lines = (EXAMPLE / "ref.phy").read_text().splitlines()
    rows = [line.split() for line in lines[1:] if line.strip()]
    text = [lines[0]] + [("r 0001" if name == "r0001" else name).ljust(10) + sequence for name, sequence in rows]
    (directory / "ref.phy").write_text("\n".join(text) + "\n")
    (directory / "tree.nwk").write_text((EXAMPLE / "tree.nwk").read_text().replace("r0001", "'r 0001'"))


def with_extra_taxon(directory: Path) -> None:
    """The example alignment plus taxon 'xtra' (a copy of the first row), which the tree lacks."""
    lines = (EXAMPLE / "ref.phy").read_text().splitlines()
    n, m = lines[0].split()
    first = lines[1].split()[1]
    (directory / "ref.phy").write_text(f"{int(n) + 1} {m}\n" + "\n".join(lines[1:]).rstrip() + f"\nxtra {first}\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    found = {}
    for kind, prepare in (("plain", None), ("strict", strict_inputs), ("extra", with_extra_taxon)):
        directory = tmp_path_factory.mktemp(kind)
        ws = Workspace(directory)
        if prepare:
            prepare(directory)
        result = papara(*ws.main_job("--quiet", output=str(directory / "run.h5")))
        assert result.returncode == 0, result.stderr
        found[kind] = directory / "run.h5"
    return found


@pytest.mark.parametrize("kind", ["plain", "strict", "extra"])
@pytest.mark.parametrize("fmt", ["phylip", "fasta", "epa"])
def test_every_export_reads_back_with_unique_names(runs, kind, fmt, tmp_path):
    out = tmp_path / f"out.{fmt}"
    result = papara("export", str(runs[kind]), "--format", fmt, "-o", str(out))
    assert result.returncode == 0, result.stderr
    back = read_alignment(out)  # refuses duplicate names, wrong lengths, bad characters
    assert len(set(back.names)) == len(back.names)
    if fmt == "epa":
        assert len(back.names) == 200 + (kind == "extra")
        return
    assert len(back.names) == 230 + (kind == "extra")
    if kind == "extra":
        assert back.names.count("xtra") == 1 and back.names[-1] == "xtra"  # once, as the aligned read
    renamed = (tmp_path / f"out.{fmt}.names.tsv")
    if kind == "strict":
        assert "r_0001" in back.names and renamed.read_text() == "exported\toriginal\nr_0001\tr 0001\n"
        assert "renaming listed in" in result.stderr
    else:
        assert not renamed.exists()
    # the reference rows hold the reference's residues as given (insertion columns are gaps in them)
    reference = read_alignment(EXAMPLE / "ref.phy")
    exported = back.rows[:len(reference.names)]
    assert [bytes(row[row != ord("-")]) for row in exported] == [bytes(row[row != ord("-")]) for row in reference.rows]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["phylip", "fasta"])
def test_an_export_is_a_valid_reference_for_a_new_run(runs, fmt, tmp_path):
    out = tmp_path / f"ref.{fmt}"
    assert papara("export", str(runs["plain"]), "--format", fmt, "-o", str(out)).returncode == 0
    reads = tmp_path / "new_reads.fa"
    reads.write_text(">new1\nCCTATATGGGAGATTAGCTCCGGTCCGCCGTCCC\n>new2\nGTACTTCCTGCCCTAGATGGGGGATT\n")
    result = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(out), "-r", str(reads), "-o",
                    str(tmp_path / "again.h5"), "--device", "cpu", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert "200 alignment taxa are not in the tree" in result.stderr  # the exported reads, aligned again


@pytest.mark.slow
def test_a_read_named_like_a_reference_taxon_is_refused(tmp_path):
    ws = Workspace(tmp_path)
    reads = (tmp_path / "reads.fa").read_text().replace(">read_000002\n", ">r0003\n", 1)
    (tmp_path / "reads.fa").write_text(reads)
    ws.snapshot()
    result = papara(*ws.main_job(), cwd=tmp_path)
    assert_refused(result, 2, "reads.fa, line 3: the read 'r0003' has the name of a reference taxon")
    ws.assert_untouched()


def test_names_needing_a_renaming_cannot_go_to_a_stream(runs):
    result = papara("export", str(runs["strict"]), "--format", "fasta", "-o", "-")
    assert_refused(result, 2, "names hold whitespace", "export to a file")
    assert result.stdout == b""
