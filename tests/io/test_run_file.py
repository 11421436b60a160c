"""RunFile, the one reader of run files: what it gives, and what it refuses (in every command alike)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from papara_py.errors import InputError
from papara_py.io.run_file import RunFile
from papara_py.io.run_writer import FORMAT_VERSION
from papara_py.model.params import ScoringParams
from papara_py.phylo.encoding import DNA

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"


@pytest.fixture(scope="module")
def run_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run.h5"
    subprocess.run([sys.executable, "-m", "papara_py", "-t", str(EXAMPLE / "tree.nwk"), "-s",
                    str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"), "-o", str(out), "--device", "cpu",
                    "-j", "1", "--candidates", "2", "--quiet"], check=True)
    return out


def _damaged_copy(run_path: Path, tmp_path: Path, edit) -> Path:
    copy = tmp_path / "damaged.h5"
    shutil.copy(run_path, copy)
    with h5py.File(copy, "r+") as handle:
        edit(handle)
    return copy


def test_what_it_gives(run_path):
    with h5py.File(run_path, "r") as raw, RunFile(run_path) as run:
        assert run.n_reads == raw["reads/names"].shape[0] == 200
        assert run.n_columns == raw["reference/alignment"].shape[1]
        assert run.k == 2
        assert list(run.names()) == list(raw["reads/names"].asstr()[:])
        assert np.array_equal(run.column("score"), raw["reads/score"][:])
        assert run.column("cigar", 3) == raw["reads/cigar"].asstr()[3]
        ids = np.array([0, 5, 6, 199])
        assert np.array_equal(np.stack(list(run.aligned_rows(ids, chunk=2))), raw["reads/aligned"][ids])
        blocks = list(run.row_blocks("reads/aligned"))
        assert np.array_equal(np.concatenate(blocks), raw["reads/aligned"][:])
        assert run.newick_numbered == raw["tree/newick_numbered"].asstr()[()]
        # JSON attributes decoded: the penalties of the DNA default
        assert run.record["parameters"]["mismatch"] == ScoringParams.preset(DNA.default_preset).mismatch
        assert run.attrs["format_version"] == FORMAT_VERSION


def _version_99(handle):
    handle.attrs["format_version"] = 99


def _no_format(handle):
    del handle.attrs["format"]


def _no_cigar(handle):
    del handle["reads/cigar"]


def _short_scores(handle):
    del handle["reads/score"]
    handle["reads/score"] = np.zeros(3, np.int32)


def _float_edges(handle):
    del handle["reads/best_edge"]
    handle["reads/best_edge"] = np.zeros(200, np.float64)


def _narrow_aligned(handle):
    del handle["reads/aligned"]
    handle["reads/aligned"] = np.zeros((200, 5), np.uint8)


REFUSALS = [
    (_version_99, f"format version 99 .* reads format versions up to {FORMAT_VERSION}"),
    (_no_format, "not a papara-py run file"),
    (_no_cigar, "damaged or incomplete: /reads/cigar is missing"),
    (_short_scores, "/reads/score has 3 rows where the other reads datasets have 200"),
    (_float_edges, "/reads/best_edge has shape .* not the 1-dimensional integer dataset"),
    (_narrow_aligned, "/reads/aligned has 5 columns"),
]


@pytest.mark.parametrize("edit, message", REFUSALS, ids=[e.__name__.strip("_") for e, _ in REFUSALS])
def test_refusals(run_path, tmp_path, edit, message):
    copy = _damaged_copy(run_path, tmp_path, edit)
    with pytest.raises(InputError, match=message):
        RunFile(copy)


def test_not_hdf5_and_absent(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(InputError, match="not an HDF5 file"):
        RunFile(text)
    with pytest.raises(InputError, match="no such run file"):
        RunFile(tmp_path / "absent.h5")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["export", "report", "merge"])
def test_every_command_refuses_alike(run_path, tmp_path, command):
    copy = _damaged_copy(run_path, tmp_path, _version_99)
    args = {"export": ["export", str(copy), "--format", "fasta", "-o", str(tmp_path / "x.fasta")],
            "report": ["report", str(copy), "-o", str(tmp_path / "x.html")],
            "merge": ["merge", str(copy), "-o", str(tmp_path / "x.h5")]}[command]
    result = subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "format version 99" in " ".join(result.stderr.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.h5"]


def test_a_version_1_file_without_checksums_still_reads(run_path, tmp_path):
    def to_version_1(handle):
        del handle["checksums"]
        handle.attrs["format_version"] = 1
    old = _damaged_copy(run_path, tmp_path, to_version_1)
    with RunFile(old) as run, RunFile(run_path) as new:
        assert list(run.names()) == list(new.names())
        assert run.newick_numbered == new.newick_numbered
        assert np.array_equal(run.column("score"), new.column("score"))


def test_a_version_2_file_without_its_checksums_is_damaged(run_path, tmp_path):
    def drop(handle):
        del handle["checksums/reads/cigar"]
    with pytest.raises(InputError, match="checksums/reads/cigar, the checksums of /reads/cigar, is missing"):
        RunFile(_damaged_copy(run_path, tmp_path, drop))


@pytest.mark.parametrize("path, selection, where", [
    ("reads/cigar", 7, ""), ("reads/cigar", slice(None), " (row 7)"), ("reads/cigar", np.array([1, 7]), " (row 7)"),
    ("tree/newick_numbered", (), ""), ("reference/names", slice(None), " (row 7)")])
def test_a_string_changed_behind_its_checksum_is_refused_where_it_is_read(run_path, tmp_path, path, selection, where):
    def edit(handle):
        handle[path][() if path.startswith("tree") else 7] = "(a,b);" if path.startswith("tree") else "edited"
    with RunFile(_damaged_copy(run_path, tmp_path, edit)) as run:
        read = {"reads/cigar": lambda: run.column("cigar", selection), "tree/newick_numbered": lambda: run.newick_numbered,
                "reference/names": lambda: run.reference_names}[path]
        with pytest.raises(InputError, match=f"/{path} does not match its checksum{re.escape(where)}: its data were changed"):
            read()
        with RunFile(run_path) as intact:
            assert run.column("cigar", 6) == intact.column("cigar", 6)  # the rest still reads


def test_a_run_record_changed_behind_its_checksum_is_refused(run_path, tmp_path):
    def edit(handle):
        handle["run"].attrs["parameters"] = '{"mismatch": 30}'
    with pytest.raises(InputError, match=r"the run record \(/run attributes\) does not match its checksum"):
        RunFile(_damaged_copy(run_path, tmp_path, edit))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.lists(st.text(max_size=12), max_size=30),
                 st.lists(st.text(alphabet="ACGTN=MID0123456789", max_size=40), max_size=30),
                 st.lists(st.binary(max_size=12), max_size=30),
                 st.lists(st.one_of(st.text(max_size=5), st.binary(max_size=5)), max_size=10)))
def test_string_checksums_are_zlibs_crc32_of_each_strings_utf8(values):
    """The writer's CRC-32s (one numba pass over joined ASCII strings, zlib per string otherwise)
    equal zlib.crc32 of each value's UTF-8 bytes, whatever mix of text, bytes and non-ASCII."""
    import zlib

    import papara_py.io.jit  # noqa: F401  (numba imported: the one-pass kernel, not zlib's loop)
    from papara_py.io.checksums import string_crc32

    expected = [zlib.crc32(v.encode("utf-8") if isinstance(v, str) else v) for v in values]
    assert string_crc32(values).tolist() == expected
    assert string_crc32(np.array(values, dtype=object)).tolist() == expected
