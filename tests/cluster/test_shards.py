"""Array jobs (DESIGN 8): slices from --shard or scheduler variables, prepared profiles, verified merge.

The central claim: merging the shards of any split gives a file whose every dataset equals a
single-machine run of the same inputs (tests/sharding_data.py: the bundled example with reads of
both strands, unalignable reads and an alignment taxon that is not in the tree).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from sharding_data import SCHEDULER_VARIABLES, assert_same_run, inputs_args, make_inputs

from papara_py.cli import main
from papara_py.cluster.prepared import open_prepared
from papara_py.cluster.shards import (
    Shard,
    parse_shard,
    resolve_shard,
    shard_from_environment,
)
from papara_py.errors import InputError
from papara_py.io.checksums import attributes_crc32
from papara_py.io.run_file import PER_EXECUTION, RUN_RECORD_FIELDS
from papara_py.phylo.profiles import ProfileBuilder

FAST = ["--device", "cpu", "-j", "1", "--quiet"]


@pytest.fixture(autouse=True)
def no_scheduler(monkeypatch):
    """Tests must not inherit an array job's variables (someone may run pytest inside one)."""
    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Inputs, prepared profiles and a single-machine run, shared by the tests of this module."""
    directory = tmp_path_factory.mktemp("shards")
    paths = make_inputs(directory / "inputs")
    with pytest.MonkeyPatch.context() as patch:
        for name in SCHEDULER_VARIABLES:
            patch.delenv(name, raising=False)
        assert main([*inputs_args(paths), "-o", str(directory / "single.h5"), *FAST]) == 0
        assert main(["prepare", "-t", str(paths["tree"]), "-s", str(paths["alignment"]),
                     "-o", str(directory / "profiles.h5")]) == 0
    return {"dir": directory, "inputs": paths, "single": directory / "single.h5",
            "profiles": directory / "profiles.h5"}


def run_shards(work, count: int, how: str, tmp_path: Path, monkeypatch, extra: list[str] = ()) -> list[Path]:
    """Shards 0..count-1 via --shard, SLURM variables (ids from 1) or Grid Engine variables."""
    paths = []
    for k in range(count):
        out = tmp_path / f"shard_{how}_{k}.h5"
        args = [*inputs_args(work["inputs"]), "-o", str(out), *FAST, *extra]
        if how == "flag":
            args += ["--shard", f"{k}/{count}"]
        elif how == "slurm":
            monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(k + 1))
            monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "1")
            monkeypatch.setenv("SLURM_ARRAY_TASK_MAX", str(count))
            monkeypatch.setenv("SLURM_ARRAY_TASK_STEP", "1")
            monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", str(count))
        elif how == "sge":
            monkeypatch.setenv("SGE_TASK_ID", str(1 + 10 * k))
            monkeypatch.setenv("SGE_TASK_FIRST", "1")
            monkeypatch.setenv("SGE_TASK_LAST", str(1 + 10 * (count - 1)))
            monkeypatch.setenv("SGE_TASK_STEPSIZE", "10")
        assert main(args) == 0
        paths.append(out)
    return paths


# --- slices -------------------------------------------------------------------------------------

def test_slices_are_disjoint_and_cover_every_read():
    for total in (0, 1, 5, 200, 201):
        for count in (1, 3, 4, 7):
            parts = [Shard(k, count).read_indices(total) for k in range(count)]
            assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(total))
            assert [len(p) for p in parts] == [Shard(k, count).size(total) for k in range(count)]
            assert all(Shard(k, count).owns(int(q)) for k, p in enumerate(parts) for q in p)


def test_parse_shard_and_none():
    assert parse_shard("2/5") == Shard(2, 5)
    assert resolve_shard("none", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}) is None
    for bad in ("5/5", "-1/4", "1/0", "a/b", "3", "1/2/3"):
        with pytest.raises(InputError, match="--shard"):
            parse_shard(bad)


@pytest.mark.parametrize("env, expected", [
    ({}, None),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4",
      "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, (2, 4)),
    ({"SLURM_ARRAY_TASK_ID": "20", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "30",
      "SLURM_ARRAY_TASK_STEP": "10", "SLURM_ARRAY_TASK_COUNT": "4"}, (2, 4)),
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7",
      "SLURM_ARRAY_TASK_COUNT": "4"}, (2, 4)),  # no STEP: derived from the count
    ({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"}, (2, 3)),  # old SLURM: ids 0..COUNT-1
    ({"SGE_TASK_ID": "4", "SGE_TASK_FIRST": "1", "SGE_TASK_LAST": "4", "SGE_TASK_STEPSIZE": "1"}, (3, 4)),
    ({"SGE_TASK_ID": "undefined", "SGE_TASK_FIRST": "undefined", "SGE_TASK_LAST": "undefined",
      "SGE_TASK_STEPSIZE": "undefined"}, None),  # what Grid Engine sets outside an array job
])
def test_scheduler_variables_map_to_slices(env, expected):
    shard = shard_from_environment(env)
    if expected is None:
        assert shard is None
    else:
        assert (shard.index, shard.count) == expected


@pytest.mark.parametrize("env, message", [
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "5",
      "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, "irregular"),  # --array=1,2,5
    ({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "30",
      "SLURM_ARRAY_TASK_STEP": "10", "SLURM_ARRAY_TASK_COUNT": "4"}, "not a regular range"),
    ({"PBS_ARRAY_INDEX": "3"}, "PBS_ARRAY_INDEX/N"),
    ({"PBS_ARRAYID": "3"}, "neither the array's size"),
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "SGE_TASK_ID": "1", "SGE_TASK_FIRST": "1",
      "SGE_TASK_LAST": "2"}, "several schedulers"),
    ({"SLURM_ARRAY_TASK_ID": "x"}, "not an integer"),
])
def test_scheduler_variables_that_cannot_give_a_slice_are_refused(env, message):
    with pytest.raises(InputError, match=message):
        shard_from_environment(env)


# --- prepared profiles --------------------------------------------------------------------------

@pytest.mark.slow
def test_prepared_profiles_equal_the_builder_and_are_memory_mapped(work):
    from papara_py.cluster.prepared import input_checksums
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.io.tree_input import read_tree
    from papara_py.phylo.tree import EdgeTree

    paths = work["inputs"]
    edge_tree = EdgeTree.from_dendropy(read_tree(str(paths["tree"])))
    alignment = read_alignment(str(paths["alignment"]))
    builder = ProfileBuilder(edge_tree, match_tips(edge_tree.tip_names, alignment, str(paths["tree"])).tip_rows)
    prepared = open_prepared(str(work["profiles"]), edge_tree, alignment.rows.shape[1],
                             input_checksums(str(paths["tree"]), str(paths["alignment"])))
    edges = np.arange(edge_tree.n_edges)
    assert prepared.memory_mapped and prepared.n_edges == builder.n_edges
    assert np.array_equal(prepared.profiles(edges), builder.profiles(edges))
    assert np.array_equal(prepared.profiles(edges[::-3]), builder.profiles(edges[::-3]))


def test_profiles_of_other_inputs_are_refused_naming_the_file(work, tmp_path, capsys):
    other = tmp_path / "other_ref.fasta"
    text = work["inputs"]["alignment"].read_text().split("\n")
    text[1] = ("T" if text[1][0] != "T" else "A") + text[1][1:]  # one residue of a tree taxon differs
    other.write_text("\n".join(text))
    out = tmp_path / "run.h5"
    args = ["-t", str(work["inputs"]["tree"]), "-s", str(other), "-r", str(work["inputs"]["reads"]),
            "-o", str(out), "--profiles", str(work["profiles"]), *FAST]
    assert main(args) == 2
    message = " ".join(capsys.readouterr().err.split())
    assert str(work["profiles"]) in message and "different alignment" in message and "prepare" in message
    assert not out.exists()
    assert main([*args[:-len(FAST) - 2], "--profiles", str(work["single"]), *FAST]) == 2
    assert "not a profiles file" in " ".join(capsys.readouterr().err.split())
    assert not out.exists()


# --- merge equals a single run ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("count, how, use_profiles", [
    (1, "flag", False), (3, "sge", True), (4, "slurm", False), (7, "flag", True)])
def test_merged_shards_equal_a_single_run(work, tmp_path, monkeypatch, count, how, use_profiles):
    extra = ["--profiles", str(work["profiles"])] if use_profiles else []
    shards = run_shards(work, count, how, tmp_path, monkeypatch, extra)
    with h5py.File(work["single"]) as single:
        total = single["reads/names"].shape[0]
        assert set(single["reads/strand"].asstr()[:]) == {"+", "-"}  # the inputs exercise both strands
        assert {"empty", "too_long", "aligned"} <= set(single["reads/status"].asstr()[:])
        assert single["reads/names"].asstr()[-1] == "not_in_tree"
    for k, path in enumerate(shards):
        with h5py.File(path) as shard:
            record = json.loads(shard["run"].attrs["shard"])
            assert (record["index"], record["count"], record["n_reads_total"]) == (k, count, total)
            assert shard["reads/names"].shape[0] == record["n_reads"] == len(range(k, total, count))
            assert "reference/alignment" in shard and "tree/newick_numbered" in shard  # self-contained
            assert json.loads(shard["run"].attrs["checksums_sha256"]).keys() == {"tree", "alignment", "reads"}
    merged = tmp_path / "all.h5"
    # given in a scrambled order: merge orders by the recorded slice, not by file name or argument
    assert main(["merge", *map(str, shards[::-1]), "-o", str(merged)]) == 0
    assert_same_run(merged, work["single"])
    with h5py.File(merged) as run:
        record = {key: run["run"].attrs[key] for key in run["run"].attrs}
        assert [s["shard"]["index"] for s in json.loads(record["merged_shards"])] == list(range(count))
    # what docs/reference/run-file.md promises a merged file holds
    always = {name for name, (when, _) in RUN_RECORD_FIELDS.items() if when == "always"}
    per_execution = {name for name, (when, _) in RUN_RECORD_FIELDS.items() if when == PER_EXECUTION}
    assert always <= set(record), always - set(record)
    assert all(per_execution <= set(shard) for shard in json.loads(record["merged_shards"]))


@pytest.mark.slow
def test_merge_copies_every_per_read_dataset_generically(work, tmp_path, monkeypatch):
    """A dataset merge has never heard of (nested, 2-D) is interleaved like the known ones, and the
    strand and candidate datasets are merged row for row."""
    shards = run_shards(work, 3, "flag", tmp_path, monkeypatch)
    with h5py.File(work["single"]) as single:
        total = single["reads/names"].shape[0]
        want = {name: single[f"reads/{name}"][()] for name in ("strand", "candidates/edge", "candidates/score")}
    for k, path in enumerate(shards):
        with h5py.File(path, "a") as shard:
            rows = np.arange(k, total, 3)
            shard.create_dataset("reads/future/global_index", data=np.stack([rows, -rows], axis=1))
    merged = tmp_path / "all.h5"
    # blocks of 7 reads: block edges fall inside every shard's stride, none aligned to N = 3
    monkeypatch.setattr("papara_py.cluster.merge._block_rows", lambda dataset: 7)
    assert main(["merge", *map(str, shards), "-o", str(merged)]) == 0
    with h5py.File(merged) as run:
        assert np.array_equal(run["reads/future/global_index"][()],
                              np.stack([np.arange(total), -np.arange(total)], axis=1))
        for name, values in want.items():
            assert np.array_equal(run[f"reads/{name}"][()], values), name


# --- merge refuses ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def four(work, tmp_path_factory):
    """Shards 0..3 of 4, made once for the refusal tests (which only read them or copy them)."""
    directory = tmp_path_factory.mktemp("four")
    with pytest.MonkeyPatch.context() as patch:
        for name in SCHEDULER_VARIABLES:
            patch.delenv(name, raising=False)
        return run_shards(work, 4, "flag", directory, patch, ["--profiles", str(work["profiles"])])


def refuse(paths: list[Path], out: Path, capsys, *fragments: str) -> None:
    assert main(["merge", *map(str, paths), "-o", str(out)]) == 2
    message = " ".join(capsys.readouterr().err.split())
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]  # no partial file


@pytest.mark.slow
def test_merge_refuses_a_missing_slice(four, tmp_path, capsys):
    refuse([four[0], four[1], four[3]], tmp_path / "all.h5", capsys, "1 of 4 slices are missing: 2/4")


def test_merge_refuses_a_duplicated_slice(four, tmp_path, capsys):
    copy = tmp_path / "copy_of_1.h5"
    shutil.copy(four[1], copy)
    refuse([*four, copy], tmp_path / "all.h5", capsys, "slice 1/4 is given more than once", str(copy))


@pytest.mark.slow
def test_merge_refuses_shards_of_another_split(work, four, tmp_path, monkeypatch, capsys):
    other = run_shards(work, 3, "flag", tmp_path, monkeypatch)[:1]
    refuse([*four, *other], tmp_path / "all.h5", capsys, "number of slices", str(other[0]))


@pytest.mark.slow
def test_merge_refuses_other_parameters(work, four, tmp_path, monkeypatch, capsys):
    odd = run_shards(work, 4, "flag", tmp_path, monkeypatch, ["--gap-open", "5"])[2]
    refuse([four[0], four[1], odd, four[3]], tmp_path / "all.h5", capsys, "setting 'parameters'", str(odd))


@pytest.mark.slow
def test_merge_refuses_other_inputs(work, four, tmp_path, monkeypatch, capsys):
    reads = tmp_path / "reads.fa"
    reads.write_text(work["inputs"]["reads"].read_text().replace("read_000003", "read_00000x"))
    out = tmp_path / "odd.h5"
    assert main(["-t", str(work["inputs"]["tree"]), "-s", str(work["inputs"]["alignment"]), "-r", str(reads),
                 "-o", str(out), "--shard", "3/4", *FAST]) == 0
    refuse([*four[:3], out], tmp_path / "all.h5", capsys, "inputs (sha256", str(out))


def test_merge_refuses_another_version_and_non_shards(work, four, tmp_path, capsys):
    odd = tmp_path / "old_version.h5"
    shutil.copy(four[0], odd)
    with h5py.File(odd, "a") as shard:
        shard.attrs["version"] = "0.0.1"
    refuse([odd, *four[1:]], tmp_path / "all.h5", capsys, "papara-py version", str(odd), "0.0.1")
    refuse([*four, work["single"]], tmp_path / "all.h5", capsys, str(work["single"]), "not a shard")
    refuse([*four, work["profiles"]], tmp_path / "all.h5", capsys, str(work["profiles"]), "not a papara-py run")


def _claim_more_reads(path: Path, more: int) -> None:
    with h5py.File(path, "a") as shard:
        record = json.loads(shard["run"].attrs["shard"])
        record["n_reads_total"] += more
        shard["run"].attrs["shard"] = json.dumps(record)
        shard["checksums"].attrs["run"] = attributes_crc32(shard["run"].attrs)  # a consistent edit


def test_merge_refuses_shards_whose_rows_do_not_match_their_slice(four, tmp_path, capsys):
    copies = [tmp_path / f"edited_{k}.h5" for k in range(4)]
    for path, copy in zip(four, copies):
        shutil.copy(path, copy)
    _claim_more_reads(copies[2], 4)  # one shard disagrees on the total
    refuse([*four[:2], copies[2], four[3]], tmp_path / "all.h5", capsys, "total read count", str(copies[2]))
    for copy in copies[:2] + copies[3:]:  # all agree on a total their rows do not fit
        _claim_more_reads(copy, 4)
    refuse(copies, tmp_path / "all.h5", capsys, "must hold", "damaged")


@pytest.mark.slow
def test_more_slices_than_reads(work, tmp_path, monkeypatch):
    """Slices without reads are still written (a missing file always means a failed task) and merge."""
    reads = tmp_path / "few.fa"
    reads.write_text(">a\n" + "ACGTTGCA" * 5 + "\n>b\n" + "TTGACCGA" * 6 + "\n")
    paths = {**work["inputs"], "reads": reads}
    single = tmp_path / "single.h5"
    assert main([*inputs_args(paths), "-o", str(single), *FAST]) == 0  # 2 reads + the extra taxon
    shards = []
    for k in range(5):
        shards.append(tmp_path / f"s{k}.h5")
        assert main([*inputs_args(paths), "-o", str(shards[-1]), "--shard", f"{k}/5", *FAST]) == 0
    with h5py.File(shards[4]) as empty:
        assert empty["reads/names"].shape == (0,) and empty["reads/aligned"].shape[0] == 0
    merged = tmp_path / "all.h5"
    assert main(["merge", *map(str, shards), "-o", str(merged)]) == 0
    assert_same_run(merged, single)
