"""The repository stands alone: its specification, its test data and its documents are inside it,
and nothing refers to files beside the checkout."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "DESIGN.md"

#: Text files of the project (the sdist holds the same, see MANIFEST.in).
_TEXT_SUFFIXES = {".py", ".md", ".cl", ".cfg", ".toml", ".in", ".cff", ".sbatch", ".txt", ""}
_SKIP_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}


def _project_text_files() -> list[Path]:
    """Every text file of the project but this one (which spells out what it looks for)."""
    files = []
    for path in ROOT.rglob("*"):
        if path == Path(__file__).resolve():
            continue
        parts = set(path.relative_to(ROOT).parts)
        if (parts & _SKIP_DIRS or any(p.endswith(".egg-info") for p in parts) or not path.is_file()
                or path.suffix not in _TEXT_SUFFIXES or "data" in path.relative_to(ROOT).parts[:-1]
                and path.suffix != ".md"):
            continue
        files.append(path)
    return files


def _design_sections() -> set[int]:
    return {int(n) for n in re.findall(r"^## (\d+)\. ", DESIGN.read_text(), flags=re.M)}


#: How the code and documents cite the specification: "DESIGN.md section 4", "DESIGN.md 3",
#: "DESIGN 7", "docs/DESIGN.md section 9".
_CITATION = re.compile(r"DESIGN(?:\.md)?(?: sections?)? (\d+)")


def test_the_specification_is_in_the_repository():
    assert DESIGN.is_file()
    assert _design_sections() >= set(range(1, 10)), "sections 1-9 (what, encodings, ... bad input)"
    assert [p.relative_to(ROOT) for p in ROOT.rglob("DESIGN.md")
            if not set(p.relative_to(ROOT).parts) & _SKIP_DIRS] == [Path("docs/DESIGN.md")]


def test_every_citation_of_the_specification_names_a_section_it_has():
    sections = _design_sections()
    citations = 0
    for path in _project_text_files():
        for match in _CITATION.finditer(path.read_text(errors="replace")):
            citations += 1
            assert int(match.group(1)) in sections, f"{path.relative_to(ROOT)} cites {match.group(0)}"
    assert citations > 20, "the docstrings cite the specification"


def _refers_outside(line: str) -> bool:
    """A path to ../shared, or code that climbs out of the repository (the repository root's
    parent) or names a "shared" folder."""
    return "../shared" in line or bool(re.search(r"""parents\[[12]\]\.parent|["']shared["']""", line))


def test_nothing_refers_to_files_beside_the_checkout():
    """The project once kept its specification and real data in a folder beside the repository,
    which a user's clone does not have."""
    offenders = [f"{path.relative_to(ROOT)}:{number}"
                 for path in _project_text_files()
                 for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                 if _refers_outside(line)]
    assert offenders == []


def test_the_checkers_see_an_outside_reference_and_a_bad_citation():
    """The checks above are not vacuous."""
    assert _refers_outside("specified in DESIGN.md (beside this repository in `../shared/`)")
    assert _refers_outside('DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"')
    assert not _refers_outside('TEST_DATA = Path(__file__).resolve().parent / "data"')
    assert [int(m.group(1)) for m in _CITATION.finditer("DESIGN.md section 42, DESIGN 4")] == [42, 4]
    assert 42 not in _design_sections()
    assert Path(__file__).resolve() not in _project_text_files()
    assert ROOT / "papara_py" / "run" / "runner.py" in _project_text_files()


@pytest.mark.parametrize("name", ["reads.fasta", "ref.fasta", "ref.phy", "tree.nwk"])
def test_the_real_test_data_is_intact(pyrg_dir, name):
    """The files equal those listed in tests/data/pyrg/SHA256SUMS (no line-ending or packaging
    damage on the way into a clone or an sdist)."""
    sums = dict(reversed(line.split()) for line in (pyrg_dir / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == {"reads.fasta", "ref.fasta", "ref.phy", "tree.nwk"}
    assert hashlib.sha256((pyrg_dir / name).read_bytes()).hexdigest() == sums[name]


def test_the_data_has_its_provenance():
    text = (ROOT / "tests" / "data" / "README.md").read_text()
    assert "pyrg/" in text and "SEPP" in text
