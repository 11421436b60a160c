"""The package layout's rules (docs/ARCHITECTURE.md): lower layers never import higher ones, and
no module imports itself back through others. Every import statement counts, including those
inside functions, since a deferred import is still a dependency."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "papara_py"

#: A module may import from its own layer or a lower one. The subpackages' docstrings say the same.
LAYER = {
    "errors": 0, "kernels": 0, "host": 0,
    "phylo": 1,
    "io": 2, "examples": 2,
    "model": 3,
    "engine": 4, "cluster": 4, "report": 4,
    "run": 5, "warmup": 5,
    "cli": 6, "api": 6, "__main__": 6,  # both built on run/options, neither importing the other
    "__init__": 7,
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("papara_py",) + parts)] = path
    return found


def _imports(module: str, path: Path) -> set[str]:
    """The papara_py modules (and packages) that `module` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("papara_py")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("papara_py"):
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER["__init__"] if len(parts) == 1 else LAYER[parts[1]]


MODULES = _modules()


def test_every_subpackage_has_a_layer_and_a_docstring():
    for name, path in MODULES.items():
        _layer(name)  # KeyError: a new top-level module or subpackage needs a layer above
        if path.name == "__init__.py" and name.count(".") == 1 and name != "papara_py.kernels":
            assert ast.get_docstring(ast.parse(path.read_text())), f"{name} says what it holds"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_respect_the_layers(module):
    for imported in _imports(module, MODULES[module]):
        if imported == "papara_py" or imported.startswith("papara_py.__version__"):
            continue  # the version string, defined before anything is imported
        assert _layer(imported) <= _layer(module), f"{module} (layer {_layer(module)}) imports {imported}"


def test_the_api_and_the_cli_stand_apart():
    """Both are built on the options table (run/options.py): neither imports the other."""
    assert not any(name.startswith("papara_py.cli") for name in _imports("papara_py.api", MODULES["papara_py.api"]))
    assert not any(name.startswith("papara_py.api") for name in _imports("papara_py.cli", MODULES["papara_py.cli"]))


def test_no_import_cycle():
    # `from papara_py import __version__` is no edge: the string is bound before __init__ imports anything
    graph = {m: {i for i in _imports(m, p) if i in MODULES and i not in (m, "papara_py")}
             for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " -> ".join(trail[trail.index(nxt):] + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


def test_the_checker_sees_a_violation(tmp_path):
    """The rule is not vacuous: an import from a higher layer is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from papara_py.run.runner import run\n")
    imported = _imports("papara_py.phylo.bad", bad)
    assert "papara_py.run.runner" in imported
    assert _layer("papara_py.run.runner") > _layer("papara_py.phylo.bad")


def _architecture_layers() -> list[tuple[int, str]]:
    """(layer, package) of each row of docs/ARCHITECTURE.md's layer table, in its order."""
    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text()
    return [(int(layer), name) for layer, name in re.findall(r"^\| (\d+) \| `([\w.]+/?)` \|", text, re.M)]


def test_architecture_names_every_package_with_its_layer():
    """docs/ARCHITECTURE.md's layer table is this test's LAYER: every package and top-level module
    it names exists, with the layer enforced here, in ascending order; and it names every one."""
    rows = _architecture_layers()
    assert rows, "docs/ARCHITECTURE.md has a layer table"
    assert [layer for layer, _ in rows] == sorted(layer for layer, _ in rows)
    for layer, name in rows:
        path = PACKAGE / name.rstrip("/")
        assert path.is_dir() if name.endswith("/") else path.is_file(), f"{name} is not in papara_py/"
        assert LAYER[Path(name.rstrip("/")).stem] == layer, f"{name}: layer {layer} there, {LAYER[Path(name).stem]} here"
    named = {Path(name.rstrip("/")).stem for _, name in rows}
    present = {path.stem for path in PACKAGE.iterdir()
               if (path.is_dir() and (path / "__init__.py").is_file()) or path.suffix == ".py"} - {"__init__"}
    assert present <= named, f"not in docs/ARCHITECTURE.md's layer table: {sorted(present - named)}"


def test_no_test_imports_another_folders_test_module():
    """Shared test helpers live in tests/ (engine_cases.py, random_data.py ...): a test module
    imports another test module only from its own folder, so collection order never matters."""
    tests = PACKAGE.parent / "tests"
    test_modules = {path.stem: path.parent for path in tests.glob("*/test_*.py")}
    crossing = []
    for path in tests.glob("*/test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            crossing += [f"{path.relative_to(tests)} imports {name}" for name in names
                         if name in test_modules and test_modules[name] != path.parent]
    assert not crossing, crossing
    assert test_modules  # the glob saw the test folders
