"""What a user installs: the package metadata, the licence, the citation, the kernels as package
data and the sdist's contents. (.ci/package builds the wheel and the sdist, installs each into a
fresh virtual environment, aligns the example with the wheel and runs these tests in the
unpacked sdist.)"""

from __future__ import annotations

import os
import re
from importlib.resources import files
from pathlib import Path

import pytest

from papara_py import __version__
from papara_py.errors import InputError

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_subpackage_is_packaged():
    """A subpackage missing from [tool.setuptools] packages is missing from the wheel; so is a
    folder of the bundled examples (papara_py/data, a link to data/, as kernels is to kernels/)."""
    on_disk = {".".join(Path(folder).relative_to(ROOT).parts)
               for folder, _, names in os.walk(ROOT / "papara_py", followlinks=True)  # kernels: a link
               if "__init__.py" in names}
    examples = {f"papara_py.data.{name}" for name in ("example", "protein")}
    assert set(PROJECT["tool"]["setuptools"]["packages"]) == on_disk | examples
    assert all(PROJECT["tool"]["setuptools"]["package-data"][name] == ["*"] for name in examples)
    # a checkout links papara_py/data to data/; an unpacked sdist holds a copy of it
    linked, top = ROOT / "papara_py" / "data", ROOT / "data"
    assert linked.resolve() == top.resolve() or all(
        (linked / name / f.name).read_bytes() == f.read_bytes()
        for name in ("example", "protein") for f in (top / name).iterdir() if f.is_file())


def test_the_examples_are_package_data(tmp_path):
    """`papara_py.examples.write` (`papara-py example DIR`) gives DIR/example and DIR/protein as the
    repository's data/ holds them, from the installed package (or this tree); it refuses to
    overwrite a file that differs, and leaves an equal one alone."""
    from papara_py import examples

    written = examples.write(tmp_path)
    for name in ("example", "protein"):
        expected = sorted(p.name for p in (ROOT / "data" / name).iterdir() if p.is_file())
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == expected
        assert all((tmp_path / name / f).read_bytes() == (ROOT / "data" / name / f).read_bytes() for f in expected)
    assert len(written) == sum(1 for _ in (ROOT / "data").glob("*/*"))
    assert examples.write(tmp_path) == written  # equal files: nothing to refuse
    (tmp_path / "example" / "tree.nwk").write_text("(a,b,c);\n")
    with pytest.raises(InputError, match="tree.nwk: exists with other content"):
        examples.write(tmp_path)
    with pytest.raises(InputError, match="is a file, not a folder"):
        examples.write(tmp_path / "example" / "tree.nwk")
    examples.write(tmp_path, ("example",), overwrite=True)
    assert (tmp_path / "example" / "tree.nwk").read_bytes() == (ROOT / "data" / "example" / "tree.nwk").read_bytes()
    with pytest.raises(ValueError, match="no bundled example 'rna'"):
        examples.source("rna")


def test_the_kernels_are_package_data():
    kernels = {p.name for p in (ROOT / "papara_py" / "kernels").glob("*.cl")}
    assert {"band_score.cl", "top_k.cl"} <= kernels
    assert PROJECT["tool"]["setuptools"]["package-data"]["papara_py.kernels"] == ["*.cl"]
    installed = files("papara_py.kernels")  # the installed package (or this tree) holds them too
    assert all(installed.joinpath(name).read_text().strip() for name in kernels)


def test_licence_gpl3_or_later():
    """The licence as the `License` field and the classifier, which `pip show` and PyPI show with
    every pip (setuptools below 77: pyproject.toml's build-system says why)."""
    project = PROJECT["project"]
    assert project["license"] == {"text": "GPL-3.0-or-later"}
    assert PROJECT["tool"]["setuptools"]["license-files"] == ["LICENSE"]
    assert "License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)" in project["classifiers"]
    assert any(re.fullmatch(r"setuptools>=\d+,<77", r) for r in PROJECT["build-system"]["requires"])
    text = (ROOT / "LICENSE").read_text()
    assert text.split("\n", 3)[:2] == ["                    GNU GENERAL PUBLIC LICENSE",
                                       "                       Version 3, 29 June 2007"]
    assert "How to Apply These Terms to Your New Programs" in text  # the whole text, not a stub


def test_metadata_users_expect():
    project = PROJECT["project"]
    assert project["requires-python"] == ">=3.10"
    versions = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert versions and min(versions, key=lambda v: tuple(map(int, v.split(".")))) == "3.10"
    assert "Topic :: Scientific/Engineering :: Bio-Informatics" in project["classifiers"]
    assert project["scripts"] == {"papara-py": "papara_py.cli:main"}
    assert set(project["optional-dependencies"]) == {"test", "gpu", "pocl", "workflow", "pandas"}  # pandas: Run.to_pandas
    assert any("10.1093/bioinformatics/btr320" in url for url in project["urls"].values())


def test_opencl_is_an_extra():
    """pyopencl only with the `gpu` (or `pocl`) extra: a CPU-only install needs no OpenCL."""
    project = PROJECT["project"]
    assert not any(d.startswith("pyopencl") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert extras["gpu"] == ["pyopencl>=2023.1"]
    assert set(extras["gpu"]) <= set(extras["pocl"]) and any(d.startswith("pocl-binary") for d in extras["pocl"])


def test_project_urls_agree():
    """The project's URLs (a placeholder GitHub organisation until it has a public home) are one
    home, in pyproject.toml, CITATION.cff and the recipe."""
    urls = PROJECT["project"]["urls"]
    home = urls["Homepage"]
    assert set(urls) >= {"Homepage", "Source", "Issues", "Documentation", "Changelog"}
    assert urls["Source"] == home and urls["Issues"] == f"{home}/issues"
    assert urls["Documentation"] == f"{home}/tree/main/docs" and urls["Changelog"] == f"{home}/blob/main/CHANGELOG.md"
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^repository-code: (\S+)$", cff, re.M).group(1) == home
    assert re.search(r"^url: (\S+)$", cff, re.M).group(1) == home
    assert f'{{% set home = "{home}" %}}' in (ROOT / "recipe" / "meta.yaml").read_text()


def test_citation_names_the_papers_and_this_version():
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", cff, re.M)
    assert re.search(r"^version: (\S+)$", cff, re.M).group(1) == __version__
    assert re.search(r"^license: (\S+)$", cff, re.M).group(1) == PROJECT["project"]["license"]["text"]
    for doi, title in (("10.1093/bioinformatics/btr320", "Aligning short reads to reference alignments and trees"),
                       ("10.1186/1471-2105-13-196", "Coupling SIMD and SIMT architectures")):
        assert f"doi: {doi}" in cff and title in cff
    assert "CITATION.cff" in (ROOT / "README.md").read_text()


def test_the_sdist_carries_what_the_tests_read():
    """MANIFEST.in takes every folder the tests read from (tests/ with helpers and data, the
    example, the scripts they run, the documents they check) and the licence and citation."""
    lines = [line.split() for line in (ROOT / "MANIFEST.in").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    grafted = {words[1] for words in lines if words[0] == "graft"}
    included = {name for words in lines if words[0] == "include" for name in words[1:]}
    assert {"tests", "data", "scripts", "docs", "workflow", "recipe"} <= grafted
    assert {"LICENSE", "CITATION.cff", "README.md", "Dockerfile", ".dockerignore"} <= included
