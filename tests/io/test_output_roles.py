"""Two outputs of one command never share a path, no output is an input, names the exports cannot
write apart are refused before scoring, and a log that cannot be written is named (issue 56;
papara_py/io/output_roles.py, papara_py/io/export_names.py, papara_py/run/log.py;
docs/RELIABILITY.md section 1).

The issue's four cases end as one paragraph with exit status 2 (3 for the full device), leaving
nothing behind and the inputs untouched. Then every pair of output roles of every command, and
every output role against every input role, generated from `output_roles.ROLES` (the table the
commands use: a role added there is tested here with every other), is made to clash through a
symbolic link and must be refused, naming both roles.
"""

from __future__ import annotations

import errno
import os
from itertools import combinations_with_replacement
from pathlib import Path

import pytest
from misuse import EXAMPLE, Workspace, assert_refused, papara, small_filesystem

from papara_py import cli
from papara_py.errors import InputError, OutputError
from papara_py.io import outputs
from papara_py.io.export_names import exported_name
from papara_py.io.output_roles import ROLES, check_roles
from papara_py.report.page import FIGURES
from papara_py.run.log import Reporter, RunLog

# ---------------------------------------------------------------------------------------------
# The four cases


def test_the_log_file_is_also_the_run_file(workspace):
    result = papara(*workspace.main_job("--log", "out.h5", output="out.h5"), cwd=workspace.dir)
    assert_refused(result, 2, "out.h5: the log file (--log) is also the run file (-o)", "give each output")
    workspace.assert_untouched()


def test_the_log_file_is_also_a_samples_run_file(workspace):
    for name in ("S1.fa", "S2.fa"):
        (workspace.dir / name).write_bytes((EXAMPLE / "reads.fa").read_bytes())
    (workspace.dir / "out").mkdir()
    workspace.snapshot()
    result = papara("-t", "tree.nwk", "-s", "ref.phy", "-r", "S1.fa", "S2.fa", "--outdir", "out",
                    "--log", "out/S2.h5", "--device", "cpu", "-j", "1", cwd=workspace.dir)
    assert_refused(result, 2, "out/S2.h5: the log file (--log) is also the run file of S2.fa (--outdir)")
    workspace.assert_untouched()
    assert list((workspace.dir / "out").iterdir()) == []


def _rename_taxa(directory: Path, renamed: dict[str, str]) -> None:
    """The example's alignment as strict PHYLIP with taxa renamed, and its tree with quoted labels."""
    lines = (EXAMPLE / "ref.phy").read_text().splitlines()
    rows = [line.split() for line in lines[1:] if line.strip()]
    text = [lines[0]] + [renamed.get(name, name).ljust(10) + sequence for name, sequence in rows]
    (directory / "ref.phy").write_text("\n".join(text) + "\n")
    tree = (EXAMPLE / "tree.nwk").read_text()
    for old, new in renamed.items():
        tree = tree.replace(old, f"'{new}'")
    (directory / "tree.nwk").write_text(tree)


def _rename_read(directory: Path, old: str, new: str) -> None:
    reads = (directory / "reads.fa").read_text(encoding="utf-8")
    assert f">{old}\n" in reads
    (directory / "reads.fa").write_text(reads.replace(f">{old}\n", f">{new}\n", 1), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["two taxa", "read and taxon", "read altered"])
def test_names_the_exports_would_merge_are_refused_before_scoring(workspace, case):
    if case == "two taxa":
        _rename_taxa(workspace.dir, {"r0001": "r 0001", "r0002": "r_0001"})
        expect = ["ref.phy: the taxa 'r 0001' and 'r_0001' would both be named 'r_0001' in the PHYLIP, FASTA "
                  "and EPA pair (reference.fasta) exports", "rename one of them"]
    elif case == "read and taxon":
        _rename_taxa(workspace.dir, {"r0001": "r 0001"})
        _rename_read(workspace.dir, "read_000002", "r_0001")
        expect = ["reads.fa, line 3: the read 'r_0001' would be named like the reference taxon 'r 0001' of",
                  "in the PHYLIP and FASTA exports", "rename the read"]
    else:
        _rename_read(workspace.dir, "read_000002", "read\u00a02")
        expect = ["reads.fa, line 3: the read name 'read\\xa02' holds the whitespace character U+00A0, which the "
                  "PHYLIP, FASTA and EPA exports cannot carry"]
    workspace.snapshot()
    result = papara(*workspace.main_job("--log", "run.log"), cwd=workspace.dir)
    assert_refused(result, 2, *expect)
    workspace.assert_untouched("run.log")  # no run file
    log = (workspace.dir / "run.log").read_text(encoding="utf-8")
    assert "batch 1:" not in log and " ERROR " in log  # refused before a batch was scored


def test_export_names_rule_is_the_exports():
    """The rule the main job applies is the one the exports write by (io/export.exported_names)."""
    assert exported_name("a \t b") == "a_b" and exported_name("a\u00a0b") == "a_b" and exported_name("a_b") == "a_b"


def test_a_log_on_the_full_device_is_named(workspace):
    result = papara(*workspace.main_job("--log", "/dev/full", output="out.h5"), cwd=workspace.dir)
    assert_refused(result, 3, "/dev/full: cannot write the log file: no space left on device")
    workspace.assert_untouched()


@pytest.mark.slow
def test_a_log_that_fills_its_disk_mid_run_stops_the_run(workspace):
    """The log's disk fills after its first lines: exit 3 naming the log, no run file committed,
    the log's earlier content kept."""
    with small_filesystem(size_kib=256, free_kib=4) as full:
        log = full / "run.log"
        before = ("x" * 99 + "\n") * 35  # 3,500 bytes: about 600 left in the page
        log.write_text(before)
        result = papara(*workspace.main_job("--log", str(log), "--batch-reads", "10", output="out.h5"),
                        cwd=workspace.dir)
        assert_refused(result, 3, f"{log}: cannot write the log file: no space left on device")
        text = log.read_text()
        assert text.startswith(before) and len(text) > len(before)  # it failed after its first lines
    workspace.assert_untouched()


def test_the_log_keeps_its_first_fault_and_never_raises_on_a_thread(tmp_path, monkeypatch):
    log = RunLog(str(tmp_path / "run.log"))

    class Full:
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    log._handler._file = Full()
    reporter = Reporter(log=log)
    reporter.record("a line")  # kept, not raised: any of the run's threads may write
    reporter.notice("another")
    with pytest.raises(OutputError, match=r"run.log: cannot write the log file: no space left on device"):
        log.check()
    log.close()

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(OutputError, match="locked.log: cannot write the log file: permission denied"):
        RunLog(str(tmp_path / "locked.log"))


# ---------------------------------------------------------------------------------------------
# Every pair of roles of every command, from the table


def _files(tmp: Path) -> dict[str, str]:
    """Dummy inputs: every command is refused before it reads one."""
    found = {}
    for name in ("tree.nwk", "ref.phy", "profiles.h5", "S1.fa", "S2.fa", "run.h5", "s0.h5", "s1.h5"):
        (tmp / name).write_text(f"{name}\n")
        found[name] = str(tmp / name)
    return found


def _variants(command: str, tmp: Path) -> list[tuple[list[str], dict, dict]]:
    """The invocations of `command` that together write every output role and read every input
    role: (argv, outputs, inputs), each role as {label: path} (label None for a single path), as
    the command hands them to check_roles."""
    f = _files(tmp)
    join = os.path.join
    if command == "papara-py":
        common = ["-t", f["tree.nwk"], "-s", f["ref.phy"], "--profiles", f["profiles.h5"], "--device", "cpu",
                  "-j", "1", "--quiet", "--log", join(tmp, "run.log")]
        inputs = {"tree": {None: f["tree.nwk"]}, "alignment": {None: f["ref.phy"]},
                  "profiles": {None: f["profiles.h5"]}}
        out = join(tmp, "out")
        return [(common + ["-r", f["S1.fa"], "-o", join(tmp, "run_out.h5")],
                 {"run": {None: join(tmp, "run_out.h5")}, "log": {None: join(tmp, "run.log")}},
                 inputs | {"reads": {f["S1.fa"]: f["S1.fa"]}}),
                (common + ["-r", f["S1.fa"], f["S2.fa"], "--outdir", out],
                 {"samples": {f["S1.fa"]: join(out, "S1.h5"), f["S2.fa"]: join(out, "S2.h5")},
                  "log": {None: join(tmp, "run.log")}},
                 inputs | {"reads": {f["S1.fa"]: f["S1.fa"], f["S2.fa"]: f["S2.fa"]}})]
    if command == "export":
        inputs = {"run": {None: f["run.h5"]}}
        pair = join(tmp, "pair")
        return [(["export", f["run.h5"], "--format", "fasta", "-o", join(tmp, "out.fasta")],
                 {"export": {None: join(tmp, "out.fasta")}, "names": {None: join(tmp, "out.fasta.names.tsv")}},
                 inputs),
                (["export", f["run.h5"], "--format", "epa", "--outdir", pair],
                 {"reference": {None: join(pair, "reference.fasta")}, "query": {None: join(pair, "query.fasta")},
                  "reference names": {None: join(pair, "reference.fasta.names.tsv")},
                  "query names": {None: join(pair, "query.fasta.names.tsv")}}, inputs)]
    if command == "prepare":
        return [(["prepare", "-t", f["tree.nwk"], "-s", f["ref.phy"], "-o", join(tmp, "p.h5")],
                 {"profiles": {None: join(tmp, "p.h5")}},
                 {"tree": {None: f["tree.nwk"]}, "alignment": {None: f["ref.phy"]}})]
    if command == "merge":
        return [(["merge", f["s0.h5"], f["s1.h5"], "-o", join(tmp, "merged.h5")],
                 {"run": {None: join(tmp, "merged.h5")}},
                 {"shards": {f["s0.h5"]: f["s0.h5"], f["s1.h5"]: f["s1.h5"]}})]
    if command == "report":
        figures = join(tmp, "figures")
        return [(["report", f["run.h5"], "-o", join(tmp, "report.html"), "--png", figures],
                 {"html": {None: join(tmp, "report.html")},
                  "figures": {name: join(figures, f"{name}.png") for name in FIGURES}},
                 {"run": {None: f["run.h5"]}})]
    raise AssertionError(f"no invocation of the command {command!r} in this test: add one to _variants")


def test_every_role_of_the_table_has_an_invocation(tmp_path):
    for command, roles in ROLES.items():
        variants = _variants(command, tmp_path)
        assert set().union(*(set(out) for _, out, _ in variants)) == set(roles.outputs), command
        assert set().union(*(set(inp) for _, _, inp in variants)) == set(roles.inputs), command
        for _, out, inp in variants:  # several paths only for the roles that take several
            assert all(len(paths) == 1 or roles.outputs[role].many for role, paths in out.items())
            assert all(len(paths) == 1 or roles.inputs[role].many for role, paths in inp.items())


def _output_pairs() -> list[tuple[str, str, str]]:
    """(command, role, role) for every pair of output roles, a role with itself where it has
    several paths (two samples' run files, two figures)."""
    return [(command, a, b) for command, roles in ROLES.items()
            for a, b in combinations_with_replacement(roles.outputs, 2) if a != b or roles.outputs[a].many]


def _output_input_pairs() -> list[tuple[str, str, str]]:
    return [(command, out, inp) for command, roles in ROLES.items() for out in roles.outputs for inp in roles.inputs]


def _snapshot(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        found[key] = ("link:" + os.readlink(path) if path.is_symlink() else
                      "dir" if path.is_dir() else path.read_bytes().hex())
    return found


def _refused(argv: list[str], capsys, *fragments: str) -> None:
    capsys.readouterr()
    status = cli.main(argv)
    message = " ".join(capsys.readouterr().err.split())
    assert status == 2, message
    assert message.count("papara-py: error:") == 1 and "Traceback" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def _link(link: str, target: str) -> None:
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(target, link)


@pytest.mark.parametrize("command, first, second", _output_pairs())
def test_every_pair_of_output_roles_is_refused(command, first, second, tmp_path, capsys):
    roles = ROLES[command].outputs
    variant = next((v for v in _variants(command, tmp_path) if first in v[1] and second in v[1]), None)
    if variant is None:  # never written by one invocation
        assert frozenset((first, second)) in ROLES[command].exclusive, (command, first, second)
        return
    argv, written, _ = variant
    (label_a, path_a), *rest = written[first].items()
    label_b, path_b = rest[0] if first == second else next(iter(written[second].items()))
    os.makedirs(os.path.dirname(path_a), exist_ok=True)
    _link(path_b, path_a)  # the second path leads to the first: one file
    before = _snapshot(tmp_path)
    _refused(argv, capsys, roles[first].describe(label_a), roles[second].describe(label_b), " is also ",
             "give each output a name of its own")
    assert _snapshot(tmp_path) == before  # nothing written, nothing removed


@pytest.mark.parametrize("command, output, source", _output_input_pairs())
def test_every_output_role_is_refused_on_every_input(command, output, source, tmp_path, capsys):
    roles = ROLES[command]
    argv, written, read = next(v for v in _variants(command, tmp_path) if output in v[1] and source in v[2])
    label, path = next(iter(written[output].items()))
    input_label, input_path = next(iter(read[source].items()))
    _link(path, input_path)  # the output leads to the input
    before = _snapshot(tmp_path)
    _refused(argv, capsys, roles.outputs[output].describe(label),
             f"is also {roles.inputs[source].describe(input_label)}, an input", "never writes over its inputs")
    assert _snapshot(tmp_path) == before


def test_exclusive_roles_cannot_be_asked_for_together(tmp_path, capsys):
    """The pairs the table calls exclusive are refused together by the options themselves."""
    _refused(["-t", "t.nwk", "-s", "s.phy", "-r", "r.fa", "-o", "x.h5", "--outdir", str(tmp_path)], capsys,
             "give either -o FILE (one reads file) or --outdir DIR")
    with pytest.raises(SystemExit) as raised:  # argparse: mutually exclusive
        cli.main(["export", "run.h5", "--format", "epa", "-o", "x", "--outdir", str(tmp_path)])
    assert raised.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# The rule itself


def test_what_makes_two_paths_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "a.h5").write_text("")
    os.link(tmp_path / "a.h5", tmp_path / "hard.h5")
    os.symlink("a.h5", tmp_path / "soft.h5")
    os.symlink("d", tmp_path / "dlink")
    one = [("a.h5", "./a.h5"), ("a.h5", "d/../a.h5"), ("a.h5", "hard.h5"), ("a.h5", "soft.h5"),
           ("a.h5", "A.H5"), ("new.h5", "NEW.h5"), ("d/x.h5", "dlink/x.h5"), ("d/x.h5", "dlink/../d/X.h5"),
           ("missing/x.h5", "missing/../missing/X.h5"), ("new.h5", str(tmp_path / "new.h5"))]
    for a, b in one:
        assert outputs.clash(a, b) is not None, (a, b)
    two = [("a.h5", "b.h5"), ("d/x.h5", "x.h5"), ("/dev/null", "/dev/null"), ("a.h5", "a.h5.names.tsv")]
    for a, b in two:
        assert outputs.clash(a, b) is None, (a, b)
    assert "differ only in case" in outputs.clash("new.h5", "NEW.h5")
    assert outputs.clash("a.h5", "./a.h5") == ""


def test_devices_may_be_shared_and_absent_roles_are_skipped(tmp_path):
    tree = tmp_path / "t.nwk"
    tree.write_text("")
    check_roles("papara-py", {"run": "/dev/null", "log": "/dev/null", "samples": None}, {"tree": str(tree)})
    check_roles("report", {"html": None, "figures": None}, {"run": str(tree)})


def test_a_role_missing_from_the_table_is_a_bug(tmp_path):
    with pytest.raises(ValueError, match="no role"):
        check_roles("prepare", {"profile": str(tmp_path / "p.h5")}, {})


def test_stale_temporaries_are_cleared_only_once_every_check_passed(tmp_path):
    dead = 4_194_000
    stale = tmp_path / f".run.h5.{dead}.0.{outputs._HOST}.partial"
    stale.write_text("half")
    notices = []
    with pytest.raises(InputError, match="is also the run file"):
        check_roles("papara-py", {"run": str(tmp_path / "run.h5"), "log": str(tmp_path / "run.h5")}, {},
                    notice=notices.append)
    assert stale.exists() and notices == []
    check_roles("papara-py", {"run": str(tmp_path / "run.h5"), "log": str(tmp_path / "run.log")}, {},
                notice=notices.append)
    assert not stale.exists() and len(notices) == 1


def test_a_made_directory_is_not_made_when_refused(tmp_path, capsys):
    """export --outdir NEW and report --png NEW make their directory only once every check passed."""
    run = tmp_path / "run.h5"
    run.write_text("")
    (tmp_path / "report.html").symlink_to("run.h5")
    _refused(["report", str(run), "-o", str(tmp_path / "report.html"), "--png", str(tmp_path / "figures")], capsys,
             "the HTML report (-o) is also the run file (RUN.h5)")
    assert not (tmp_path / "figures").exists()
    _refused(["export", str(run), "--format", "epa", "--outdir", str(tmp_path / "run.h5")], capsys,
             "is not a directory")
    _refused(["export", str(run), "--format", "epa", "--outdir", str(tmp_path / "missing" / "pair")], capsys,
             "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "run.h5"]


@pytest.mark.slow
def test_an_existing_workspace_job_still_runs(tmp_path):
    """A plain run with --log beside -o passes the checks (and the example's names pass the rule)."""
    ws = Workspace(tmp_path)
    result = papara(*ws.main_job("--quiet", "--log", "run.log"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ws.assert_untouched("run.h5", "run.log")
