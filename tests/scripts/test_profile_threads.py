"""scripts/profile_threads.py: the example run sampled, its threads named in the report."""

from __future__ import annotations

from pathlib import Path

from scripts_loader import load_script

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"


def test_the_report_names_the_runs_threads(tmp_path, capsys):
    profile_threads = load_script("profile_threads")
    status = profile_threads.main(["--interval", "0.001", "--", "--quiet", "-t", str(EXAMPLE / "tree.nwk"),
                                   "-s", str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"),
                                   "-o", str(tmp_path / "run.h5"), "--device", "cpu", "-j", "2"])
    report = capsys.readouterr().out
    assert status == 0 and (tmp_path / "run.h5").is_file()
    assert "sampling rounds in" in report
    # the writer thread (named papara-writer) and papara_py frames are seen
    assert "== papara-writer:" in report and "innermost papara_py frames:" in report
