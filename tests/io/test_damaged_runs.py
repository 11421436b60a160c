"""Damaged or foreign run files in every command (issue #28, cause 5): one paragraph, exit status 2,
never a traceback; a future format version is refused naming both versions. A property test
(hypothesis) damages a valid run file's structure and values and expects a clean refusal or an
export that reads back."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from misuse import Workspace, assert_refused, papara

from papara_py.cli import main
from papara_py.io.alignment_input import read_alignment
from papara_py.io.checksums import string_crc32
from papara_py.io.run_file import LAYOUT
from papara_py.io.run_writer import FORMAT_VERSION


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("valid")
    ws = Workspace(directory)
    result = papara(*ws.main_job("--quiet", "--batch-reads", "50", output=str(directory / "run.h5")))
    assert result.returncode == 0, result.stderr
    return directory / "run.h5"


def set_string(handle: h5py.File, path: str, row: int, text: str) -> None:
    """Edit one string and its checksum alike: damage only the format's own checks can see."""
    handle[path][row] = text
    handle[f"checksums/{path}"][row] = string_crc32(text)


def flip_chunk_byte(path: Path, dataset: str) -> None:
    """Flip one bit inside the stored bytes of `dataset`'s first chunk, as a failing disk would."""
    with h5py.File(path, "r") as handle:
        info = handle[dataset].id.get_chunk_info(0)
    with open(path, "r+b") as raw:
        raw.seek(info.byte_offset + info.size // 2)
        byte = raw.read(1)[0]
        raw.seek(-1, 1)
        raw.write(bytes([byte ^ 0x04]))


def damage(path: Path, how: str) -> None:
    if how.startswith("flipped "):
        flip_chunk_byte(path, how.split(" ", 1)[1])
        return
    with h5py.File(path, "r+") as handle:
        if how == "future version":
            handle.attrs["format_version"] = 99
        elif how == "missing dataset":
            del handle["reads/cigar"]
        elif how == "short dataset":
            del handle["reads/score"]
            handle["reads"].create_dataset("score", data=np.zeros(3, np.int32))
        elif how == "bad cigar":
            set_string(handle, "reads/cigar", 5, "12Q")
        elif how == "edited name":
            handle["reads/names"][3] = "someone_else"
        elif how == "start out of range":
            handle["reads/start"][7] = 10_000
        elif how == "bad residue":
            row = handle["reads/aligned"][2]
            row[np.flatnonzero(row != ord("-"))[0]] = 0
            handle["reads/aligned"][2] = row
        elif how == "foreign":
            for key in list(handle.attrs):
                del handle.attrs[key]


CASES = {"future version": ["format version 99", f"reads format versions up to {FORMAT_VERSION}"],
         "missing dataset": ["damaged or incomplete", "/reads/cigar is missing"],
         "short dataset": ["damaged or incomplete", "/reads/score has 3 rows"],
         "bad cigar": ["damaged or incomplete", "read 5", "12Q"],
         "start out of range": ["damaged or incomplete", "read 7", "10000"],
         "bad residue": ["damaged or incomplete", "byte 0x00"],
         "foreign": ["not a papara-py run file"],
         "edited name": ["damaged or incomplete", "/reads/names does not match its checksum (row 3)"],
         "flipped reads/score": ["damaged or incomplete", "/reads/score cannot be read"],
         "flipped reads/aligned": ["damaged or incomplete", "/reads/aligned cannot be read"],
         "flipped checksums/reads/names": ["damaged or incomplete", "/reads/names cannot be read"]}

#: Damage to values that look valid: refused by the checksums wherever the damaged data are read.
VALUE_DAMAGE = ("edited name", "flipped reads/score", "flipped reads/aligned", "flipped checksums/reads/names")


@pytest.mark.slow
@pytest.mark.parametrize("how", list(CASES))
@pytest.mark.parametrize("command", ["export-fasta", "export-phylip", "export-epa", "report", "merge"])
def test_every_command_refuses_a_damaged_run_file_in_one_paragraph(run_file, tmp_path, how, command):
    damaged = tmp_path / "run.h5"
    shutil.copy(run_file, damaged)
    damage(damaged, how)
    content = damaged.read_bytes()
    if command.startswith("export"):
        args = ["export", str(damaged), "--format", command.split("-")[1], "-o", str(tmp_path / "out")]
    elif command == "report":
        args = ["report", str(damaged), "-o", str(tmp_path / "out")]
    else:
        args = ["merge", str(damaged), "-o", str(tmp_path / "out")]
    result = papara(*args)
    if command == "merge" and how in ("bad cigar", "start out of range", "bad residue") + VALUE_DAMAGE:
        # merge copies values without reading them as alignments; it refuses the file as a non-shard
        assert_refused(result, 2, "not a shard")
    elif command == "report" and how in ("bad cigar", "start out of range", "bad residue"):
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, result.stderr
    elif how in VALUE_DAMAGE and result.returncode == 0:
        # the command did not read the damaged dataset: its output is the intact file's
        intact = tmp_path / "intact"
        intact.mkdir()
        assert papara(*[str(intact / "out") if a == str(tmp_path / "out") else
                        str(run_file) if a == str(damaged) else a for a in args]).returncode == 0
        def shown(out: Path) -> bytes:  # a report names the run file it shows and when it was made
            text = out.read_bytes().replace(str(damaged).encode(), b"RUN").replace(str(run_file).encode(), b"RUN")
            return re.sub(rb"report made [0-9: -]+ UTC", b"report made", text)
        assert shown(intact / "out") == shown(tmp_path / "out"), (command, how)
        assert command != "report" or how != "flipped reads/score", "report reads every score"
        return
    elif command == "export-epa" and how in ("bad cigar", "start out of range"):
        # the EPA queries hold the aligned rows only: the damage does not touch them
        assert result.returncode == 0, result.stderr
        assert papara("export", str(run_file), "--format", "epa", "-o", "-").stdout == (tmp_path / "out").read_bytes()
        return
    else:
        assert_refused(result, 2, *CASES[how])
    assert damaged.read_bytes() == content
    if result.returncode != 0:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]


# ---------------------------------------------------------------------------------------------
# Property: any damage ends in a clean refusal or an export that reads back

PER_READ = [entry[0] for entry in LAYOUT if entry[3] == "reads"]
texts = st.text(alphabet=st.sampled_from(list("0123456789MIDX+-ACGTNacgt \n\t\0é")), max_size=12)
values = st.one_of(st.integers(-2**31, 2**31 - 1), texts)
mutations = st.one_of(
    st.tuples(st.just("root attr"), st.sampled_from(["format", "format_version", "version"]),
              st.one_of(values, st.just(2))),
    st.tuples(st.just("run attr"), st.sampled_from(["candidates_k", "n_columns", "status_counts", "parameters"]),
              values),
    st.tuples(st.just("delete"), st.sampled_from([name for name, *_ in LAYOUT]), st.none()),
    st.tuples(st.just("value"), st.sampled_from(PER_READ + ["reference/names", "reference/alignment"]),
              st.tuples(st.integers(0, 199), values)),
)


def apply(path: Path, mutation) -> None:
    kind, name, value = mutation
    with h5py.File(path, "r+") as handle:
        if kind in ("delete", "value") and name not in handle:
            return  # deleted by an earlier mutation
        if kind in ("root attr", "run attr"):
            target = handle if kind == "root attr" else handle["run"]
            try:
                target.attrs[name] = value
            except ValueError:  # HDF5 strings cannot hold NUL: store the text before it
                target.attrs[name] = str(value).split("\0")[0]
        elif kind == "delete":
            del handle[name]
        else:
            row, new = value
            dataset = handle[name]
            row %= dataset.shape[0]
            try:
                if h5py.check_string_dtype(dataset.dtype) is not None:
                    dataset[row] = str(new).split("\0")[0]
                elif dataset.ndim == 2:
                    dataset[row] = np.full(dataset.shape[1], int(new) if isinstance(new, int) else 0) \
                        .astype(dataset.dtype)
                else:
                    dataset[row] = np.array(new if isinstance(new, int) else -1).astype(dataset.dtype)
            except (ValueError, TypeError, OverflowError):
                dataset[row] = dataset[row]


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation_list=st.lists(mutations, min_size=1, max_size=3),
       fmt=st.sampled_from(["phylip", "fasta", "epa"]))
def test_damage_is_refused_cleanly_or_the_export_reads_back(run_file, tmp_path_factory, capsys, mutation_list, fmt):
    directory = tmp_path_factory.mktemp("mutated")
    damaged = directory / "run.h5"
    shutil.copy(run_file, damaged)
    for mutation in mutation_list:
        apply(damaged, mutation)
    content = damaged.read_bytes()
    out = directory / f"out.{fmt}"
    status = main(["export", str(damaged), "--format", fmt, "-o", str(out)])  # any other exception fails
    stderr = capsys.readouterr().err
    assert damaged.read_bytes() == content
    if status == 0:
        back = read_alignment(out)
        assert len(set(back.names)) == len(back.names)
    else:
        assert status == 2, stderr
        assert stderr.startswith("papara-py: error: ") and "\n\n" not in stderr.strip(), stderr
        assert not out.exists() and not [p for p in directory.iterdir() if p.name.endswith(".partial")]


# ---------------------------------------------------------------------------------------------
# A failing disk: one bit flipped anywhere in the file

#: Seconds one export of a flipped file may take before it counts as HDF5 looping.
FLIP_TIMEOUT = 60


def _export_flips(run_file: Path, directory: Path, fmt: str, flips: list, intact: bytes, results) -> None:
    """In a forked child: export each flipped copy in-process, sending (index, outcome, detail)."""
    data = run_file.read_bytes()
    for index, position, bit in flips:
        flipped = bytearray(data)
        flipped[position] ^= 1 << bit
        damaged, out = directory / f"flipped{index}.h5", directory / f"out{index}.{fmt}"
        damaged.write_bytes(bytes(flipped))
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            status = main(["export", str(damaged), "--format", fmt, "-o", str(out)])
        text = stderr.getvalue()
        if status == 0:
            outcome = "identical" if out.read_bytes() == intact else "CHANGED"
        elif status == 2 and text.startswith("papara-py: error: ") and "\n\n" not in text.strip() \
                and not out.exists():
            outcome = "refused"
        else:
            outcome = f"status {status}"
        results.send((index, outcome, f"bit {bit} of byte {position}: {text[-300:]}"))


@pytest.mark.parametrize("fmt", [pytest.param("fasta", marks=pytest.mark.slow), "epa",
                                 pytest.param("jplace", marks=pytest.mark.slow)])
def test_a_flipped_bit_anywhere_is_refused_or_changes_nothing(run_file, tmp_path, fmt):
    """Seeded bit flips over the whole file (headers, B-trees, heaps, chunks): each export is
    refused in one paragraph or equals the intact file's export; never a changed result (the
    checksums, section 7 of RELIABILITY.md) and never a traceback. A flip that makes HDF5 loop
    in C (RELIABILITY.md section 8: not interruptible, not papara-py's code) is counted, and the
    flips after it go on in a fresh process; such flips must stay rare."""
    intact = tmp_path / f"intact.{fmt}"
    assert main(["export", str(run_file), "--format", fmt, "-o", str(intact)]) == 0
    rng = np.random.default_rng({"fasta": 1, "epa": 2, "jplace": 3}[fmt])
    size = run_file.stat().st_size
    flips = [(k, int(p), int(b)) for k, (p, b) in enumerate(zip(rng.integers(0, size, 40), rng.integers(0, 8, 40)))]
    outcomes: dict[str, int] = {}
    context = multiprocessing.get_context("fork")
    while flips:
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_export_flips, args=(run_file, tmp_path, fmt, flips, intact.read_bytes(), sender))
        child.start()
        sender.close()
        while flips:
            if not receiver.poll(FLIP_TIMEOUT):
                child.kill()
                outcomes["hang"] = outcomes.get("hang", 0) + 1
                flips = flips[1:]
                break
            try:
                index, outcome, detail = receiver.recv()
            except EOFError:
                pytest.fail(f"the export of flip {flips[0]} ended the process (a crash or an uncaught exception)")
            assert outcome in ("identical", "refused"), detail
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            flips = flips[1:]
        child.join()
    assert outcomes.get("refused", 0) > 0, outcomes  # some flips hit what the export reads
    assert outcomes.get("hang", 0) <= 2, outcomes
