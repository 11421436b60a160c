"""docs/reference/ is generated from the code (scripts/reference_docs.py) and must match it: a
changed option or run-file dataset fails here until the reference is regenerated. And the run
file's documented layout is what a real run writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import pytest
from scripts_loader import load_script

from papara_py.io.run_file import LAYOUT, PER_EXECUTION, ROOT_ATTRIBUTES, RUN_RECORD_FIELDS
from papara_py.io.run_writer import CHECKSUMS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example"


def test_committed_reference_matches_the_code():
    generator = load_script("reference_docs")
    for path, text in generator.documents().items():
        assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run python3 scripts/reference_docs.py"
        assert path.read_text() == text, (f"{path.relative_to(ROOT)} differs from the code: "
                                          "run python3 scripts/reference_docs.py")


def test_check_mode_reports_drift(tmp_path, monkeypatch):
    generator = load_script("reference_docs")
    assert generator.main(["--check"]) == 0
    monkeypatch.setattr(generator, "REFERENCE", tmp_path)
    assert generator.main(["--check"]) == 1  # nothing written there yet
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
    (tmp_path / "cli.md").write_text("stale")
    assert generator.main(["--check"]) == 1


def test_every_option_and_command_is_documented():
    text = (ROOT / "docs" / "reference" / "cli.md").read_text()
    from papara_py.cli import COMMANDS
    from papara_py.run.options import main_options

    for option in main_options():
        assert f"`{option.flag}`" in text
    for name in COMMANDS:
        assert f"### `papara-py {name}`" in text


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run.h5"
    subprocess.run([sys.executable, "-m", "papara_py", "-t", str(EXAMPLE / "tree.nwk"), "-s",
                    str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"), "-o", str(out), "--device", "cpu",
                    "-j", "1", "--candidates", "2", "--quiet"], check=True, cwd=ROOT)
    return out


def test_a_real_run_file_has_exactly_the_documented_layout(run_path):
    with h5py.File(run_path, "r") as handle:
        datasets: dict[str, h5py.Dataset] = {}

        def visit(name: str, obj) -> None:  # returning anything but None would stop visititems
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj

        handle.visititems(visit)
        documented = {spec.path for spec in LAYOUT}
        twins = {f"{CHECKSUMS}/{spec.path}" for spec in LAYOUT if spec.kind == "s"}
        assert set(datasets) == documented | twins
        for spec in LAYOUT:
            assert datasets[spec.path].ndim == spec.rank, spec.path
            assert spec.dtype.split()[0] in ("string", str(datasets[spec.path].dtype)), spec.path
        assert set(handle.attrs) == set(ROOT_ATTRIBUTES)
        record = set(handle["run"].attrs)
        assert record <= set(RUN_RECORD_FIELDS), record - set(RUN_RECORD_FIELDS)
        always = {name for name, (when, _) in RUN_RECORD_FIELDS.items() if when in ("always", PER_EXECUTION)}
        assert always <= record, always - record


def test_the_generated_run_file_page_lists_every_dataset():
    text = (ROOT / "docs" / "reference" / "run-file.md").read_text()
    for spec in LAYOUT:
        assert f"`/{spec.path}`" in text
    for name in RUN_RECORD_FIELDS:
        assert f"`{name}`" in text
