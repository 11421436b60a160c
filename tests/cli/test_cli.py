"""The command line as a user meets it: bad input, the example run, exports, --version and --help,
the commands (a word that is none), and PaPaRa 2.x's own options answered with ours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from bad_inputs import CATALOGUE

from papara_py import __version__
from papara_py.cli import COMMANDS, build_parser, commands_parser
from papara_py.io.export import oriented_sequence
from papara_py.io.run_file import RunFile
from papara_py.io.run_writer import FORMAT_VERSION
from papara_py.run.options import main_options

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"


def papara(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("case", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_bad_input_exits_2_with_one_paragraph_and_no_output(case, tmp_path):
    paths = case.write(tmp_path)
    out = tmp_path / "run.h5"
    result = papara("-t", str(paths["tree"]), "-s", str(paths["alignment"]), "-r", str(paths["reads"]),
                    "-o", str(out), "--device", "cpu", "-j", "1")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split()).lower()  # the paragraph is wrapped
    for fragment in case.expect:
        assert fragment.lower() in message, (fragment, result.stderr)
    assert "\n\n" not in result.stderr.strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())


def test_version_and_help():
    assert papara("--version").stdout.strip() == f"papara-py {__version__}"
    short = papara("--help").stdout
    for option in ("--tree", "--alignment", "--reads", "--output", "--threads", "--quiet", "--verbose",
                   "--help-all", "export", "devices", "prepare", "merge", "report"):
        assert option in short, option
    assert "--gap-extend" not in short and len(short.splitlines()) < 80
    full = papara("--help-all").stdout
    for option in main_options():
        assert option.flag in full, option.flag
    for option in ("--mismatch", "--cgap", "--gap-open", "--gap-extend", "--insertion"):
        assert option in full


@pytest.mark.parametrize("command", ["exprot", "help", "reads.fa"])
def test_a_word_that_is_no_command_is_refused_naming_the_commands(command, tmp_path):
    result = papara(command, "run.h5", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"invalid choice: '{command}'" in result.stderr
    for name in ("export", "devices", "prepare", "merge", "report"):
        assert name in result.stderr
    assert "the main job takes no command word" in " ".join(result.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_a_commands_bad_option_value_gets_no_hint_about_command_words(tmp_path):
    result = papara("export", "run.h5", "--format", "xml", "-o", "a.fa", cwd=tmp_path)
    assert result.returncode == 2 and "argument --format: invalid choice: 'xml'" in result.stderr
    assert "command word" not in result.stderr


@pytest.mark.parametrize("argv, said", [
    (["-t", "t.nwk", "-s", "r.phy", "-r", "r.fa", "--mismtach", "3"], "--mismtach: did you mean --mismatch?"),
    (["export", "run.h5", "--formt", "fasta", "-o", "a.fa"], "--formt: did you mean --format?"),  # said: no --format
    (["export", "run.h5", "--format", "fasta", "-o", "a.fa", "--kep-outliers"], "did you mean --keep-outliers?"),
])
def test_a_misspelt_option_is_named_with_the_one_meant(argv, said, tmp_path):
    result = papara(*argv, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert said in " ".join(result.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_example_refuses_a_file_and_other_content_in_one_paragraph(tmp_path):
    (tmp_path / "afile").write_text("x\n")
    result = papara("example", "afile", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "afile: is a file, not a folder" in result.stderr
    assert papara("example", "demo", cwd=tmp_path).returncode == 0
    (tmp_path / "demo" / "example" / "tree.nwk").write_text("(a,b,c);\n")
    result = papara("example", "demo", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "tree.nwk: exists with other content" in " ".join(result.stderr.split())
    assert (tmp_path / "demo" / "example" / "tree.nwk").read_text() == "(a,b,c);\n"


@pytest.mark.slow
@pytest.mark.parametrize("option, value, answer", [
    ("-q", "reads.fa", "takes reads with -r"),
    ("-a", None, "--alphabet protein"),
    ("-n", "run1", "name it with -o"),
    ("-p", "-3:-1:2:-3", "--gap-open"),
    ("-c", None, "--cgap"),
    ("-f", None, "-o"),
    ("-g", None, "--format fasta"),
    ("-b", None, "--log"),
])
def test_paparas_own_options_are_answered_with_ours(option, value, answer, tmp_path):
    """A PaPaRa 2.x command line, one line back naming the option to use (-q is not --quiet)."""
    args = ["-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), option, *([value] if value else [])]
    result = papara(*args, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"papara-py: error: {option}: PaPaRa's"), result.stderr
    assert answer in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_every_command_explains_each_argument():
    for name in COMMANDS:
        _, subparsers = commands_parser(name)
        parser = subparsers[name]
        assert parser.description, name
        for action in parser._actions:
            assert action.help and action.help.strip(), (name, action.dest)
    for action in build_parser()._actions:
        assert action.help, action.dest
    help_text = " ".join(papara("export", "--help").stdout.split())
    assert "RUN.h5 the run file to export" in help_text
    for fmt in ("phylip or fasta:", "epa:", "jplace:"):
        assert fmt in help_text


@pytest.mark.slow
def test_example_run_and_exports(tmp_path):
    out = tmp_path / "run.h5"
    result = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r",
                    str(EXAMPLE / "reads.fa"), "-o", str(out), "--device", "cpu", "-j", "2")
    assert result.returncode == 0, result.stderr
    with h5py.File(out) as run:
        assert run.attrs["format"] == "papara-py" and run.attrs["format_version"] == FORMAT_VERSION
        q = run["reads/names"].shape[0]
        m = run["reference/alignment"].shape[1]
        assert q == 200 and run["reads/aligned"].shape == (q, m)
        assert set(run["reads/status"].asstr()[:]) == {"aligned"}
        assert np.all(run["reads/best_edge"][:] == run["reads/candidates/edge"][:, 0])
        newick = run["tree/newick_numbered"][()].decode()
        n_edges = int(np.max(run["reads/candidates/edge"][:])) + 1
        assert f"{{{n_edges - 1}}}" in newick
        aligned = run["reads/aligned"][:]
        sequences = run["reads/sequence"].asstr()[:]
        strands = run["reads/strand"].asstr()[:]
    for fmt in ("phylip", "fasta", "epa"):
        target = tmp_path / f"out.{fmt}"
        result = papara("export", str(out), "--format", fmt, "-o", str(target))
        assert result.returncode == 0, result.stderr
    epa = (tmp_path / "out.epa").read_text().split("\n")
    assert epa[1].encode() == aligned[0].tobytes()
    fasta = (tmp_path / "out.fasta").read_text().split("\n")[:-1]
    rows = dict(zip([h[1:] for h in fasta[0::2]], fasta[1::2]))
    widths = {len(r) for r in rows.values()}
    assert len(widths) == 1 and widths.pop() >= m
    # every read row holds exactly the read's residues as aligned (oriented), in order, and nothing else
    for name, sequence, strand in zip(run_names(out), sequences, strands):
        assert rows[name].replace("-", "") == oriented_sequence(sequence, strand).tobytes().decode()
    phylip = (tmp_path / "out.phylip").read_text().split("\n")
    assert phylip[0] == f"{len(rows)} {len(next(iter(rows.values())))}"


def run_names(path: Path) -> list[str]:
    with RunFile(path) as run:
        return list(run.names())


@pytest.mark.slow
def test_unaligned_reads_are_kept_with_a_status(tmp_path):
    # one read per batch, unaligned reads between them: each batch writes the identities of its
    # stretch of the input, so every row must be written exactly as given
    reads = tmp_path / "reads.fa"
    long_read = "A" * 600
    records = [("empty", ""), ("fine1", "ACGTACGTACGTAAAACCCGGT"), ("long", long_read),
               ("fine2", "TTGACCGTAGGCTAACGT"), ("fine3", "GGCATTACCGATACGATT")]
    reads.write_text("".join(f">{name}\n{sequence}\n" if sequence else f">{name}\n" for name, sequence in records))
    out = tmp_path / "run.h5"
    result = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(reads),
                    "-o", str(out), "--device", "cpu", "--batch-reads", "1")
    assert result.returncode == 0, result.stderr
    with RunFile(out) as run:
        assert list(run.column("status")) == ["empty", "aligned", "too_long", "aligned", "aligned"]
        assert list(run.names()) == [name for name, _ in records]
        assert list(run.column("sequence")) == [sequence for _, sequence in records]
        best = run.column("best_edge")
        assert list(best[[0, 2]]) == [-1, -1] and all(best[[1, 3, 4]] >= 0)
        assert [bool(c) for c in run.column("cigar")] == [False, True, False, True, True]
    assert "2 too_long" not in result.stderr and "1 empty" in result.stderr and "1 too_long" in result.stderr
