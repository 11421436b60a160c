"""recipe/meta.yaml, the bioconda-style recipe, without conda (conda-build cannot be installed from
PyPI): rendered as conda-build renders it (Jinja, then YAML), its requirements held equal to
pyproject.toml's, and its test section (imports and commands) run in this environment from an
empty folder, as `conda build` runs them in its test environment."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from papara_py import __version__

jinja2 = pytest.importorskip("jinja2")
yaml = pytest.importorskip("yaml")
tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: PyPI name -> conda-forge name, where they differ (matplotlib-base: matplotlib without Qt).
CONDA_NAMES = {"matplotlib": "matplotlib-base"}


def render() -> dict:
    """The recipe as conda-build sees it: its Jinja with conda-build's names (PYTHON,
    pin_subpackage, environ), then YAML."""
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(
        (ROOT / "recipe" / "meta.yaml").read_text())
    text = template.render(PYTHON="python", environ={},
                           pin_subpackage=lambda name, max_pin=None, exact=False: f"{name} {max_pin or ''}".strip())
    return yaml.safe_load(text)


def _requirement(text: str) -> tuple[str, str]:
    """'numpy>=1.24' (pip) or 'numpy >=1.24' (conda) -> ('numpy', '>=1.24')."""
    name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", text.strip()).groups()
    return name.lower(), spec.replace(" ", "")


def test_recipe_renders_as_this_version_noarch():
    """A noarch package of this version, built without compiling numba's kernels into it (setup.py
    would, and fail: the recipe's host environment has no numba, and conda's build machine is not
    the user's)."""
    recipe = render()
    assert recipe["package"] == {"name": "papara-py", "version": __version__}
    assert recipe["build"]["noarch"] == "python"
    assert recipe["build"]["entry_points"] == [f"papara-py = {PROJECT['project']['scripts']['papara-py']}"]
    assert "--no-deps" in recipe["build"]["script"] and "--no-build-isolation" in recipe["build"]["script"]
    assert recipe["build"]["script"].startswith("PAPARA_PY_COMPILE_KERNELS=0 ")
    about = recipe["about"]
    assert about["license"] == PROJECT["project"]["license"]["text"]
    assert about["home"] == PROJECT["project"]["urls"]["Homepage"]
    assert about["doc_url"] == PROJECT["project"]["urls"]["Documentation"]
    assert (ROOT / about["license_file"]).is_file()
    assert about["summary"] == PROJECT["project"]["description"]
    assert (ROOT / "recipe" / recipe["source"]["path"] / "pyproject.toml").is_file()


def test_recipe_requirements_are_pyprojects():
    """Run requirements: pyproject's dependencies (conda's names) with the same lower bounds, and
    python's; the optional GPU engine (the `gpu` extra) as a constraint; the host's setuptools as
    pyproject's build-system pins it."""
    recipe = render()
    run = dict(_requirement(r) for r in recipe["requirements"]["run"])
    assert run.pop("python") == PROJECT["project"]["requires-python"]
    expected = {CONDA_NAMES.get(name, name): spec
                for name, spec in map(_requirement, PROJECT["project"]["dependencies"])}
    assert run == expected
    constrained = dict(_requirement(r) for r in recipe["requirements"]["run_constrained"])
    assert constrained == dict(map(_requirement, PROJECT["project"]["optional-dependencies"]["gpu"]))
    host = dict(_requirement(r) for r in recipe["requirements"]["host"])
    build_system = dict(map(_requirement, PROJECT["build-system"]["requires"]))
    assert host["setuptools"] == build_system["setuptools"] and "pip" in host and "wheel" in host


@pytest.mark.slow
def test_recipe_tests_run(tmp_path):
    """The recipe's test section as conda-build runs it: each import, then each command from an
    empty folder (`papara-py` is the installed console script when there is one beside this
    Python, else `python -m papara_py`)."""
    tests = render()["test"]
    for module in tests["imports"]:
        importlib.import_module(module)
    script = Path(sys.executable).with_name("papara-py")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "papara_py"]
    for command in tests["commands"]:
        words = shlex.split(command)
        assert words[0] == "papara-py", command
        done = subprocess.run(program + words[1:], cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{command}: {done.stderr}"
    taxa = int((ROOT / "data/example/ref.phy").read_text().split()[0])
    reads = sum(1 for line in (ROOT / "data/example/reads.fa").open() if line.startswith(">"))
    assert (tmp_path / "example.fasta").read_text().count(">") == taxa + reads
