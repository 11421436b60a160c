"""The container definitions, read without an engine (tests/dockerfile.py; .ci/container carries
the Dockerfile's steps out in fresh virtual environments): the image is built from this
repository's wheel, warms numba's kernels up at build time and runs papara-py; its build context
leaves out what a build does not need; the Apptainer definition does the same."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from dockerfile import ROOT, dockerignore, ignored, instructions, parse

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_dockerfile_builds_the_wheel_and_warms_up():
    global_args, stages = parse()
    assert [stage.name for stage in stages] == ["wheel", None]
    assert all(re.fullmatch(r"python:\$\{PYTHON_VERSION\}-slim", stage.image) for stage in stages)
    assert re.fullmatch(r"3\.1\d", global_args["PYTHON_VERSION"])
    minimum = PROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, global_args["PYTHON_VERSION"].split("."))) >= tuple(map(int, minimum.split(".")))
    wheel, final = ([(i.keyword, i.text) for i in stage.instructions] for stage in stages)
    assert ("COPY", ". .") in wheel
    assert any(k == "RUN" and "pip wheel" in t and "--no-deps" in t for k, t in wheel)
    runs = [t for k, t in final if k == "RUN"]
    assert any("pip install" in t and "/dist/papara_py-" in t and "--no-cache-dir" in t for t in runs)
    assert any(re.search(r"\bpapara-py warm-up\b", t) for t in runs)
    install = next(i for i, t in enumerate(runs) if "pip install" in t)
    assert install < next(i for i, t in enumerate(runs) if "warm-up" in t)  # warm-up after the install
    assert json.loads(dict(final)["ENTRYPOINT"]) == ["papara-py"]
    assert json.loads(dict(final)["CMD"]) == ["--help"]
    assert dict(final)["WORKDIR"] == "/data"


def test_dockerfile_extras_are_the_projects():
    """`--build-arg EXTRAS=gpu` names an extra pyproject.toml defines (empty: CPU only)."""
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r'^ARG EXTRAS=""$', text, re.M)
    for extra in re.findall(r"EXTRAS=(\w+)", text):
        assert extra in PROJECT["project"]["optional-dependencies"]


def test_dockerfile_labels_and_instructions_are_known():
    """Every instruction is one tests/dockerfile.py carries out (or a LABEL), and the labels
    name the licence and the source as pyproject does."""
    known = {"ARG", "FROM", "WORKDIR", "COPY", "RUN", "LABEL", "ENTRYPOINT", "CMD", "ENV"}
    found = instructions()
    assert {i.keyword for i in found} <= known
    labels = " ".join(i.text for i in found if i.keyword == "LABEL")
    assert f'org.opencontainers.image.licenses="{PROJECT["project"]["license"]["text"]}"' in labels
    assert f'org.opencontainers.image.source="{PROJECT["project"]["urls"]["Source"]}"' in labels
    for instruction in found:  # shell-form RUNs are single commands a POSIX sh parses
        if instruction.keyword == "RUN":
            shlex.split(instruction.text.replace("$(", "(").replace("${", "{"))


def test_dockerignore_keeps_the_build_inputs_and_drops_the_rest():
    patterns = dockerignore(ROOT)
    for needed in ("pyproject.toml", "README.md", "LICENSE", "papara_py/cli.py", "kernels/band_score.cl",
                   "data/example/reads.fa", "papara_py/kernels", "papara_py/data"):
        assert not ignored(needed, patterns), needed
    for dropped in (".git", ".venv/bin/python", "papara_py/__pycache__/cli.cpython-311.pyc", "papara_py.egg-info",
                    "build/lib", "dist/x.whl", "example.h5", "tests/.hypothesis/examples"):
        assert ignored(dropped, patterns), dropped


def test_apptainer_definition_installs_and_warms_up():
    text = (ROOT / "recipe" / "papara-py.def").read_text()
    assert re.search(r"^Bootstrap: docker$", text, re.M) and re.search(r"^From: python:3\.1\d-slim$", text, re.M)
    sections = dict(re.findall(r"^%(\w+)\n((?:(?!^%).*\n?)*)", text, re.M))
    copied = [line.split()[0] for line in sections["files"].strip().splitlines()]
    # what a wheel build from the folder reads: the metadata's files, the package and its links' targets
    assert {"pyproject.toml", "README.md", "LICENSE", "papara_py", "kernels", "data"} <= set(copied)
    assert all((ROOT / name).exists() for name in copied)
    post = sections["post"]
    assert "pip install --no-cache-dir /opt/papara-py-src" in post
    assert post.index("pip install") < post.index("papara-py warm-up")
    assert 'exec papara-py "$@"' in sections["runscript"]
    assert "--writable-tmpfs" in text  # the kernels of a read-only image are found only that way
