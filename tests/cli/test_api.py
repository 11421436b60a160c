"""The Python API (papara_py.align, open_run, Run) against the CLI and the run file itself."""

from __future__ import annotations

import logging
import re
import signal
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import dendropy
import numpy as np
import pandas
import pytest
from Bio import SeqIO
from Bio.Seq import Seq

import papara_py
from papara_py.errors import InputError, OptionError
from papara_py.io.alignment_input import read_alignment
from papara_py.io.cigar import place_read
from papara_py.io.export import oriented_sequence
from papara_py.io.run_file import RunFile
from papara_py.model.params import DEFAULT_PRESET, PRESETS, ScoringParams

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
TREE, REF, READS = EXAMPLE / "tree.nwk", EXAMPLE / "ref.phy", EXAMPLE / "reads.fa"
#: A fixed setting so the API and CLI runs compare like for like on any machine.
OPTIONS = dict(device="cpu", threads=1, candidates=3)
PER_READ = ("names", "status", "best_edge", "score", "start", "cigar", "strand", "candidates/edge",
            "candidates/score")


def _columns(path) -> dict[str, np.ndarray]:
    with RunFile(path) as run:
        found = {name: run.column(name) for name in PER_READ if name != "names"}
        found["names"] = run.names()
        found["aligned"] = np.stack(list(run.aligned_rows(np.arange(run.n_reads))))
        return found


def _assert_same_results(a, b) -> None:
    left, right = _columns(a), _columns(b)
    for name in left:
        assert np.array_equal(left[name], right[name]), name


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "run.h5"
    subprocess.run([sys.executable, "-m", "papara_py", "-t", str(TREE), "-s", str(REF), "-r", str(READS),
                    "-o", str(out), "--device", "cpu", "-j", "1", "--candidates", "3", "--quiet"], check=True)
    return out


@pytest.fixture(scope="module")
def api_run(tmp_path_factory) -> papara_py.Run:
    return papara_py.align(str(TREE), REF, READS, output=tmp_path_factory.mktemp("api") / "run.h5", **OPTIONS)


@pytest.mark.slow
def test_align_from_paths_equals_the_cli(api_run, cli_run):
    _assert_same_results(api_run.path, cli_run)
    assert api_run.command_line.startswith(f"papara_py.align(tree={str(TREE)!r}, alignment={str(REF)!r}")
    assert "candidates=3" in api_run.command_line


@pytest.mark.slow
def test_align_from_memory_equals_the_files(tmp_path, cli_run):
    reference = read_alignment(str(REF))
    as_dict = {name: row.tobytes().decode() for name, row in zip(reference.names, reference.rows)}
    reads = [(record.id, str(record.seq)) for record in SeqIO.parse(READS, "fasta")]
    newick = TREE.read_text()
    for tree, alignment, read_input in [
            (newick, as_dict, reads),
            (dendropy.Tree.get(data=newick, schema="newick", preserve_underscores=True),
             list(SeqIO.parse(REF, "phylip-relaxed")), dict(reads))]:
        run = papara_py.align(tree, alignment, read_input, **OPTIONS)
        _assert_same_results(run.path, cli_run)
        assert "alignment=<in memory>, reads=<in memory>" in run.command_line
        run.close()


@pytest.mark.slow
def test_a_run_leaves_the_interpreters_switch_interval_and_interrupt_handler_as_they_were(tmp_path, monkeypatch):
    """The main job hands the GIL over more often while it runs (run/runner.GIL_SWITCH_SECONDS),
    and makes Python's own Ctrl-C handler wait out numba (run/stop_signals.py); the caller's
    interpreter gets its own settings back, also after a failed run, and a handler of the
    caller's own is left alone."""
    from papara_py.run import runner, stop_signals

    seen = []
    original = runner._run

    def spy(config, reporter, samples):
        seen.append((sys.getswitchinterval(), signal.getsignal(signal.SIGINT)))
        return original(config, reporter, samples)

    def callers_own(number, frame):
        pass

    before = sys.getswitchinterval(), signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(runner, "_run", spy)
    try:
        sys.setswitchinterval(0.004)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        papara_py.align(str(TREE), REF, READS, output=tmp_path / "run.h5", **OPTIONS)
        assert seen == [(pytest.approx(runner.GIL_SWITCH_SECONDS), stop_signals._interrupt)]
        assert sys.getswitchinterval() == pytest.approx(0.004)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, callers_own)
        with pytest.raises(InputError):
            papara_py.align(str(TREE), REF, tmp_path / "missing.fa", output=tmp_path / "bad.h5", **OPTIONS)
        assert seen[1:] == [(pytest.approx(runner.GIL_SWITCH_SECONDS), callers_own)]
        assert sys.getswitchinterval() == pytest.approx(0.004)
        assert signal.getsignal(signal.SIGINT) is callers_own
    finally:
        sys.setswitchinterval(before[0])
        signal.signal(signal.SIGINT, before[1])


@pytest.mark.parametrize("call", [lambda: papara_py.align(TREE, REF, READS),
                                  lambda: papara_py.align_samples(TREE, REF, [READS], ".")], ids=["align", "align_samples"])
def test_ctrl_c_waits_out_numba_over_the_whole_call(call, monkeypatch):
    """numba loads functions before the run starts too (the runner's import: an interrupt was
    dropped in llvmlite's callback there, and the run went on): from the first line of the call
    on, Python's own handler waits."""
    from papara_py import api
    from papara_py.run import stop_signals

    seen = []

    def first_step(options, caller):
        seen.append(signal.getsignal(signal.SIGINT))
        raise InputError(caller, "stop here")

    monkeypatch.setattr(api, "option_values", first_step)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(InputError, match="stop here"):
            call()
        assert seen == [stop_signals._interrupt]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_temporary_output_goes_with_the_run():
    run = papara_py.align(TREE, REF, READS, **OPTIONS)
    path = Path(run.path)
    assert path.is_file()
    run.close()
    assert not path.exists() and not path.parent.exists()


@pytest.mark.slow
def test_options_are_the_clis(tmp_path):
    run = papara_py.align(TREE, REF, READS, output=tmp_path / "r.h5", gap_open=2, mismatch=2, **OPTIONS)
    # the default preset's values (weighted: 5/10/4/4/12, near 2) where no single penalty is given,
    # as the CLI; near_mismatch stays at or below the mismatch given
    default = ScoringParams.preset(DEFAULT_PRESET)
    assert run.parameters == asdict(replace(default, mismatch=2, gap_open=2, near_mismatch=min(2, default.near_mismatch))) | {"preset": None}
    paper = papara_py.align(TREE, REF, READS, output=tmp_path / "p.h5", preset="paper", **OPTIONS)
    assert paper.parameters == PRESETS["paper"].values() | {"preset": "paper"}
    with pytest.raises(OptionError, match="lanes: must be an integer from 1 to 256"):
        papara_py.align(TREE, REF, READS, lanes=0)
    with pytest.raises(OptionError, match="'colour' is not an option"):
        papara_py.align(TREE, REF, READS, colour="red")
    with pytest.raises(OptionError, match="'candidate' is not an option; did you mean 'candidates'"):
        papara_py.align(TREE, REF, READS, candidate=3)
    with pytest.raises(InputError, match="'help' is not an option"):
        papara_py.align(TREE, REF, READS, help=True)
    with pytest.raises(OptionError, match="'quiet' is a command-line switch; the Python API prints nothing"):
        papara_py.align(TREE, REF, READS, quiet=True)
    with pytest.raises(InputError, match="white space"):
        papara_py.align(TREE, REF, {"bad name": "ACGT"})
    with pytest.raises(InputError, match="no such file|does not exist|cannot"):
        papara_py.align(TREE, REF, tmp_path / "absent.fa", **OPTIONS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.h5", "r.h5"]


def test_iteration_gives_each_reads_fields(api_run):
    results = list(api_run)
    columns = _columns(api_run.path)
    assert len(results) == len(api_run) == len(columns["names"])
    assert [r.name for r in results] == list(columns["names"])
    m = api_run.n_columns
    aligned = 0
    for q, read in enumerate(results):
        assert read.status == columns["status"][q]
        if read.status != "aligned":
            assert read.edge is None and read.aligned == ""
            continue
        aligned += 1
        assert (read.edge, read.score, read.start) == (columns["best_edge"][q], columns["score"][q],
                                                       columns["start"][q])
        assert read.candidates[0] == (read.edge, read.score)
        assert [e for e, _ in read.candidates] == [e for e in columns["candidates/edge"][q] if e >= 0]
        residues = oriented_sequence(read.sequence, read.strand).tobytes()
        assert read.aligned.encode() == place_read(residues, read.start, read.cigar, m).tobytes()
    assert aligned > 0


def test_iteration_crosses_chunks(api_run, monkeypatch):
    monkeypatch.setattr(papara_py.api, "ITERATION_CHUNK", 7)
    assert list(api_run) == list(papara_py.open_run(api_run.path))


def test_to_alignment_is_the_fasta_export(api_run, tmp_path):
    exported = tmp_path / "x.fasta"
    subprocess.run([sys.executable, "-m", "papara_py", "export", api_run.path, "--format", "fasta",
                    "-o", str(exported)], check=True, capture_output=True)
    expected = [(r.id, str(r.seq)) for r in SeqIO.parse(exported, "fasta")]
    msa = api_run.to_alignment()
    assert [(r.id, str(r.seq)) for r in msa] == expected
    reads_only = api_run.to_alignment(reference=False)
    assert [r.id for r in reads_only] == [name for name, _ in expected[len(api_run.reference_names):]]


def test_reference_alignment_is_the_input(api_run):
    reference = read_alignment(str(REF))
    msa = api_run.reference_alignment()
    assert [r.id for r in msa] == reference.names
    assert [str(r.seq).encode() for r in msa] == [row.tobytes() for row in reference.rows]


def test_to_pandas(api_run):
    frame = api_run.to_pandas()
    columns = _columns(api_run.path)
    assert list(frame["name"]) == list(columns["names"])
    aligned = columns["status"] == "aligned"
    assert list(frame["edge"][aligned]) == list(columns["best_edge"][aligned])
    assert frame["edge"][~aligned].isna().all()
    candidates = api_run.candidates_to_pandas()
    assert len(candidates) == int((columns["candidates/edge"] >= 0).sum())
    best = candidates[candidates["rank"] == 0].set_index("name")["edge"]
    assert best.to_dict() == dict(zip(frame["name"][aligned], frame["edge"][aligned]))
    assert isinstance(frame, pandas.DataFrame)


def test_open_run_refuses_other_files(tmp_path):
    other = tmp_path / "x.h5"
    other.write_bytes(b"not hdf5")
    with pytest.raises(InputError, match="not an HDF5 file"):
        papara_py.open_run(other)


def test_the_api_is_documented():
    for name in ("align", "open_run", "Run", "ReadResult"):
        assert getattr(papara_py, name).__doc__, name
    assert "gap_open" in papara_py.align.__doc__
    assert set(papara_py.__all__) >= {"align", "open_run", "Run"}
    with pytest.raises(AttributeError):
        papara_py.no_such_thing  # noqa: B018


@pytest.mark.slow
def test_inputs_as_biopython_users_hold_them(tmp_path, cli_run):
    """A Bio.Phylo tree, open file handles and SeqRecords are taken as the files they hold."""
    from Bio import Phylo

    phylo_tree = Phylo.read(TREE, "newick")
    with open(REF) as alignment, open(READS, "rb") as reads:
        run = papara_py.align(phylo_tree, alignment, reads, output=tmp_path / "handles.h5", **OPTIONS)
    _assert_same_results(run.path, cli_run)
    records = list(SeqIO.parse(READS, "fasta"))
    with open(TREE) as tree:
        one = papara_py.align(tree, REF, records[0], output=tmp_path / "one.h5", **OPTIONS)
    assert len(one) == 1 and one[0].name == records[0].id
    assert one[0].edge == api_result(cli_run, records[0].id)


def api_result(path, name):
    with papara_py.open_run(path) as run:
        return run[name].edge


@pytest.mark.parametrize("reads", [[Seq("ACGTACGTAC")], ["ACGTACGTAC"], Seq("ACGT"), 42],
                         ids=["seq-list", "str-list", "seq", "int"])
def test_reads_without_names_are_refused_with_a_type_error(reads, tmp_path):
    with pytest.raises(TypeError, match="SeqRecord|names no sequence"):
        papara_py.align(TREE, REF, reads, output=tmp_path / "x.h5", **OPTIONS)
    with pytest.raises(TypeError, match="tree must be"):
        papara_py.align(42, REF, READS, output=tmp_path / "x.h5", **OPTIONS)
    assert list(tmp_path.iterdir()) == []


def test_a_run_is_indexed_by_position_and_name(api_run):
    reads = list(api_run)
    assert api_run[0] == reads[0] and api_run[-1] == reads[-1] and api_run[len(reads) - 1] == reads[-1]
    assert api_run[reads[7].name] == reads[7] and reads[7].name in api_run and "no such read" not in api_run
    assert api_run[3:6] == reads[3:6] and api_run[::50] == reads[::50] and api_run[5:2] == []
    with pytest.raises(IndexError):
        api_run[len(reads)]
    with pytest.raises(KeyError):
        api_run["no such read"]
    with pytest.raises(TypeError, match="indexed by position"):
        api_run[1.5]


@pytest.mark.slow
def test_a_run_is_a_context_manager():
    with papara_py.align(TREE, REF, READS, **OPTIONS) as run:
        path = Path(run.path)
        assert path.is_file() and run[0].name
    assert not path.exists()


def test_one_exception_hierarchy_is_exported():
    assert issubclass(papara_py.InputError, (papara_py.PaparaError, ValueError))
    assert issubclass(papara_py.OptionError, papara_py.InputError)
    assert issubclass(papara_py.OutputError, (papara_py.PaparaError, OSError))
    assert papara_py.InputError is InputError and papara_py.OptionError is OptionError
    assert {"PaparaError", "InputError", "OptionError", "OutputError"} <= set(papara_py.__all__)


@pytest.mark.slow
def test_library_calls_print_nothing_and_log_instead(tmp_path, capfd, caplog):
    with caplog.at_level(logging.INFO, logger="papara_py"):
        run = papara_py.align(TREE, REF, READS, output=tmp_path / "run.h5", device="cpu", threads=1)
    assert capfd.readouterr() == ("", "")
    assert any("200 of 200 reads aligned" in record.getMessage() for record in caplog.records)
    assert len(run) == 200


def test_pandas_is_the_named_extra(api_run, monkeypatch):
    pyproject = (EXAMPLE.parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^pandas = \["pandas>=[0-9.]+"\]', pyproject, re.MULTILINE)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(ImportError, match=r"papara-py\[pandas\]"):
        api_run.to_pandas()
