"""Valid input that was refused (issue #28, cause 7): sequential PHYLIP with rows wrapped over lines,
trees nested deeper than Python's recursion limit, and an install in a read-only location with an
unwritable home directory (numba's kernel cache)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from misuse import EXAMPLE, papara

from papara_py.errors import InputError
from papara_py.io.alignment_input import read_alignment
from papara_py.io.tree_input import read_tree
from papara_py.phylo.tree import EdgeTree

REPO = Path(__file__).resolve().parents[2]


def wrapped_phylip(source: Path, width: int, strict: bool) -> str:
    """`source` (sequential, one line per row) with every row wrapped after `width` characters."""
    lines = source.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            continue
        name, sequence = line.split()
        out.append((name.ljust(10) if strict else name + " ") + sequence[:width])
        out += [sequence[i:i + width] for i in range(width, len(sequence), width)]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("width, strict", [(60, False), (60, True), (100, False), (538, False)])
def test_wrapped_sequential_phylip_reads_like_the_one_line_form(tmp_path, width, strict):
    path = tmp_path / "wrapped.phy"
    path.write_text(wrapped_phylip(EXAMPLE / "ref.phy", width, strict))
    wrapped, plain = read_alignment(path), read_alignment(EXAMPLE / "ref.phy")
    assert wrapped.names == plain.names
    assert np.array_equal(wrapped.rows, plain.rows)


def test_wrapped_phylip_of_the_wrong_length_is_still_refused(tmp_path):
    text = wrapped_phylip(EXAMPLE / "ref.phy", 60, False).splitlines()
    text[3] = text[3][:-1]  # one character short in the first row's second line
    path = tmp_path / "short.phy"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError):
        read_alignment(path)


def ladder(n_tips: int) -> str:
    """((((t0,t1),t2),t3),...): nesting depth n_tips - 1."""
    return "(" * (n_tips - 1) + "t0" + "".join(f",t{i})" for i in range(1, n_tips)) + ";\n"


@pytest.mark.slow
@pytest.mark.parametrize("n_tips", [1_500, 30_000])
def test_trees_deeper_than_the_recursion_limit_are_read(tmp_path, n_tips):
    path = tmp_path / "ladder.nwk"
    path.write_text(ladder(n_tips))
    limit = sys.getrecursionlimit()
    tree = read_tree(path)
    assert sys.getrecursionlimit() == limit
    edges = EdgeTree.from_dendropy(tree)
    assert edges.n_tips == n_tips and edges.n_edges == 2 * n_tips - 3
    assert edges.numbered_newick.count("(") >= n_tips - 3


@pytest.mark.slow
def test_a_1500_tip_ladder_runs_end_to_end(tmp_path):
    rng = np.random.default_rng(1)
    n, m = 1_500, 80
    base = rng.choice(np.frombuffer(b"ACGT", np.uint8), m)
    rows = np.tile(base, (n, 1))
    rows[np.arange(n), rng.integers(0, m, n)] = rng.choice(np.frombuffer(b"ACGT", np.uint8), n)
    (tmp_path / "tree.nwk").write_text(ladder(n))
    (tmp_path / "ref.phy").write_text(f"{n} {m}\n" + "".join(f"t{i} {row.tobytes().decode()}\n"
                                                              for i, row in enumerate(rows)))
    (tmp_path / "reads.fa").write_text("".join(f">q{i}\n{rows[i * 7].tobytes().decode()[5:70]}\n" for i in range(10)))
    result = papara("-t", str(tmp_path / "tree.nwk"), "-s", str(tmp_path / "ref.phy"), "-r",
                    str(tmp_path / "reads.fa"), "-o", str(tmp_path / "run.h5"), "--device", "cpu", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert "10 of 10 reads aligned" in result.stderr


def test_a_read_only_install_with_an_unwritable_home_imports_and_caches_elsewhere(tmp_path):
    """The package on a read-only tmpfs, HOME not a directory: numba's cache goes to TMPDIR."""
    if os.geteuid() != 0:
        pytest.skip("a read-only install is simulated with a read-only tmpfs mount, which needs root")
    install = tmp_path / "install"
    install.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(install)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs for the read-only install")
    try:
        shutil.copytree(REPO / "papara_py", install / "papara_py",
                        ignore=shutil.ignore_patterns("__pycache__"))
        assert subprocess.run(["mount", "-o", "remount,ro", str(install)]).returncode == 0
        temporary = tmp_path / "tmp"
        temporary.mkdir()
        env = {key: value for key, value in os.environ.items() if not key.startswith(("NUMBA_", "XDG_"))}
        env.update(PYTHONPATH=str(install), HOME="/dev/null", TMPDIR=str(temporary))
        result = subprocess.run([sys.executable, "-c", "import papara_py.engine.cpu, papara_py.model.traceback"],
                                capture_output=True, text=True, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "numba's kernel cache goes to" in result.stderr
        cache = temporary / f"papara-py-numba-cache-{os.getuid()}"
        assert cache.is_dir() and cache.stat().st_mode & 0o777 == 0o700
    finally:
        subprocess.run(["umount", str(install)])
