"""Inputs and checks shared by the shard/merge tests and the SLURM test.

The inputs are the bundled example made harder: a third of the reads reverse-complemented (so
/reads/strand holds both values), an empty and a too-long read (statuses), and an alignment taxon
that is not in the tree (an extra read, last in input order).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np

from papara_py.cluster.merge import RUN_RECORD_EQUAL
from papara_py.io.run_file import datasets_below
from papara_py.phylo.encoding import reverse_complement

EXAMPLE = Path(__file__).resolve().parent.parent / "data" / "example"
SCHEDULER_VARIABLES = [
    "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP",
    "SLURM_ARRAY_TASK_COUNT", "SGE_TASK_ID", "SGE_TASK_FIRST", "SGE_TASK_LAST", "SGE_TASK_STEPSIZE",
    "PBS_ARRAY_INDEX", "PBS_ARRAYID",
]


def make_inputs(directory: Path) -> dict[str, Path]:
    """Example tree; example alignment plus one taxon not in the tree; reads with both strands."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "tree.nwk", directory / "tree.nwk")
    fasta = (EXAMPLE / "ref.fasta").read_text().split("\n")
    extra = bytearray(fasta[1].encode())
    extra[10:14] = b"ACGT" if extra[10:14] != b"ACGT" else b"TTTT"
    (directory / "ref.fasta").write_text("\n".join(fasta).rstrip("\n") + f"\n>not_in_tree\n{extra.decode()}\n")
    lines = (EXAMPLE / "reads.fa").read_text().split("\n")
    records = list(zip(lines[0::2], lines[1::2]))
    out = []
    for i, (header, sequence) in enumerate(records):
        if i % 3 == 1:
            sequence = reverse_complement(np.frombuffer(sequence.encode(), dtype=np.uint8)).tobytes().decode()
        out.append(f"{header}\n{sequence}\n")
    out.insert(17, ">empty_read\n")
    out.insert(60, ">too_long_read\n" + "ACGT" * 200 + "\n")
    (directory / "reads.fa").write_text("".join(out))
    return {"tree": directory / "tree.nwk", "alignment": directory / "ref.fasta", "reads": directory / "reads.fa"}


def inputs_args(paths: dict[str, Path]) -> list[str]:
    return ["-t", str(paths["tree"]), "-s", str(paths["alignment"]), "-r", str(paths["reads"])]


def assert_same_run(merged: Path, single: Path) -> None:
    """Every dataset equal (names, dtypes, values); root attrs and RUN_RECORD_EQUAL equal."""
    with h5py.File(merged) as a, h5py.File(single) as b:
        got, want = datasets_below(a), datasets_below(b)
        assert list(got) == list(want)
        for name in want:
            assert got[name].dtype == want[name].dtype, name
            assert got[name].shape == want[name].shape, name
            assert np.array_equal(got[name][()], want[name][()]), name
        for key in ("format", "format_version", "version"):
            assert a.attrs[key] == b.attrs[key], key
        for key in RUN_RECORD_EQUAL:
            assert a["run"].attrs[key] == b["run"].attrs[key], key
        assert "shard" not in a["run"].attrs
