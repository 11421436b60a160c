"""The repository's Dockerfile read without Docker (no engine runs on the development machines or in
CI): `parse` for the static checks of tests/packaging/test_container.py, and `python tests/dockerfile.py
run` for .ci/container, which carries out its stages in fresh virtual environments as a build
would, each stage under a folder of its own standing for the image's root:

- FROM python:...: a fresh venv (this machine's python3) whose bin/ comes first on PATH;
- ARG and ENV: variables of the RUN steps (ARG's default, or the environment's value);
- WORKDIR and COPY (the build context, less .dockerignore's patterns; or --from=STAGE): folders
  and files under the stage's root;
- RUN: the command under /bin/sh in the WORKDIR, its absolute paths to the stage's own folders
  (/src, /dist, ...) moved under the stage's root;
- ENTRYPOINT and CMD: run at the end, then the bundled example aligned in the WORKDIR, checked to
  have compiled nothing (the warm-up's kernels were found in numba's cache).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Instruction:
    keyword: str
    text: str      # the arguments as written (continuation lines joined)
    line: int


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)


def instructions(path: Path = ROOT / "Dockerfile") -> list[Instruction]:
    """The Dockerfile's instructions, comments and blank lines left out, `\\` continuations joined."""
    found: list[Instruction] = []
    pending, start = "", 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, text = whole.partition(" ")
        found.append(Instruction(keyword.upper(), text.strip(), start))
    return found


def parse(path: Path = ROOT / "Dockerfile") -> tuple[dict[str, str], list[Stage]]:
    """(the ARGs before the first FROM with their defaults, the stages in order)."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in instructions(path):
        if instruction.keyword == "FROM":
            words = instruction.text.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages:
            if instruction.keyword != "ARG":
                raise ValueError(f"line {instruction.line}: only ARG may come before FROM")
            key, _, default = instruction.text.partition("=")
            global_args[key] = default.strip('"')
        else:
            stages[-1].instructions.append(instruction)
    return global_args, stages


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether .dockerignore's `patterns` leave `relative` (a path in the context) out."""
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatch(part, pattern[3:]) for part in parts):
                return True
        elif fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(parts[0], pattern):
            return True
    return False


def dockerignore(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.exists():
        return []
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _copy_context(context: Path, target: Path) -> None:
    patterns = dockerignore(context)

    def skip(folder: str, names: list[str]) -> list[str]:
        base = Path(folder).relative_to(context)
        return [name for name in names if ignored(str(base / name) if str(base) != "." else name, patterns)]

    shutil.copytree(context, target, symlinks=True, ignore=skip, dirs_exist_ok=True)


def run(context: Path = ROOT, work: Path | None = None, overrides: dict[str, str] | None = None) -> dict[str, float]:
    """Carry out the Dockerfile's stages (see the module docstring); returns seconds per RUN step
    and for the final checks. Raises CalledProcessError on the first failing step."""
    global_args, stages = parse(context / "Dockerfile")
    overrides = overrides or {}
    work = Path(work or tempfile.mkdtemp(prefix="papara-py-container-"))
    roots: dict[str, Path] = {}
    seconds: dict[str, float] = {}
    final_env: dict[str, str] = {}
    workdir = Path("/")
    entry: list[str] = []
    command: list[str] = []
    for number, stage in enumerate(stages):
        root = work / f"stage-{number}-{stage.name or 'final'}"
        root.mkdir(parents=True)
        roots[stage.name or str(number)] = root
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        variables = {key: overrides.get(key, value) for key, value in global_args.items()}
        env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
        env.pop("PYTHONPATH", None)  # the image's python sees only what the image installed
        workdir = Path("/")
        print(f"+ [container] FROM {stage.image} (a fresh venv: {venv})", flush=True)
        for instruction in stage.instructions:
            keyword, text = instruction.keyword, instruction.text
            if keyword == "ARG":
                key, _, default = text.partition("=")
                variables[key] = overrides.get(key, default.strip('"') if default else variables.get(key, ""))
            elif keyword == "ENV":
                key, _, value = text.partition("=")
                env[key] = value.strip('"')
            elif keyword == "WORKDIR":
                workdir = Path(text)
                (root / text.lstrip("/")).mkdir(parents=True, exist_ok=True)
            elif keyword == "COPY":
                words = shlex.split(text)
                source_root = context
                if words[0].startswith("--from="):
                    source_root = roots[words.pop(0).split("=", 1)[1]]
                source, target = words
                destination = root / (workdir / target).relative_to("/")
                print(f"+ [container] COPY {text}", flush=True)
                if source_root is context and source == ".":
                    _copy_context(context, destination)
                else:
                    shutil.copytree(source_root / source.lstrip("/"), destination, symlinks=True, dirs_exist_ok=True)
            elif keyword == "RUN":
                line = _rooted(text, root)
                print(f"+ [container] RUN {text}", flush=True)
                started = time.perf_counter()
                subprocess.run(["/bin/sh", "-c", line], cwd=root / workdir.relative_to("/"), check=True,
                               env={**env, **variables})
                seconds[f"RUN {text}"] = time.perf_counter() - started
            elif keyword == "ENTRYPOINT":
                entry = json.loads(text)
            elif keyword == "CMD":
                command = json.loads(text)
            elif keyword not in ("LABEL", "EXPOSE", "USER", "SHELL", "HEALTHCHECK", "STOPSIGNAL", "VOLUME"):
                raise ValueError(f"line {instruction.line}: {keyword} is not emulated")
        final_env = env
    final_dir = roots[stages[-1].name or str(len(stages) - 1)] / workdir.relative_to("/")
    print(f"+ [container] {' '.join(entry + command)}", flush=True)
    subprocess.run(entry + command, cwd=final_dir, env=final_env, check=True, stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    subprocess.run(entry + ["example", "."], cwd=final_dir, env=final_env, check=True, stdout=subprocess.DEVNULL)
    example = entry + ["-t", "example/tree.nwk", "-s", "example/ref.phy", "-r", "example/reads.fa", "-o", "run.h5"]
    print(f"+ [container] {' '.join(example)}", flush=True)
    done = subprocess.run(example, cwd=final_dir, env=final_env, check=True, capture_output=True, text=True)
    seconds["first run after the build"] = time.perf_counter() - started
    if "compiling kernels" in done.stderr:
        raise AssertionError(f"the first run after the build compiled kernels:\n{done.stderr}")
    return seconds


#: Top-level folders of the image that are the system's, not the build's: left as they are.
_SYSTEM = {"bin", "boot", "dev", "etc", "home", "lib", "lib64", "proc", "root", "run", "sbin", "sys", "tmp", "usr",
           "var"}


def _rooted(command: str, root: Path) -> str:
    """`command` with absolute paths to the build's own top-level folders (/src, /dist, ...: any
    but the system's) moved under `root`."""
    pattern = re.compile(r"(?<![\w./$-])/([A-Za-z_][\w.-]*)")
    return pattern.sub(lambda match: match.group(0) if match.group(1) in _SYSTEM else f"{root}/{match.group(1)}",
                       command)


if __name__ == "__main__":
    if sys.argv[1:2] != ["run"]:
        raise SystemExit("usage: python tests/dockerfile.py run [KEY=VALUE ...]  (build arguments)")
    arguments = dict(arg.split("=", 1) for arg in sys.argv[2:])
    for step, took in run(overrides=arguments).items():
        print(f"[container] {took:7.1f} s  {step}")
