"""`papara-py export --format jplace`: the document against the jplace v3 spec (Matsen et al. 2012)
and against the run file it comes from, and the weight rule on hand-made scores."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from Bio import Phylo

from papara_py.errors import InputError
from papara_py.io import jplace
from papara_py.io.checksums import string_crc32
from papara_py.io.export import export
from papara_py.io.jplace import (
    FIELDS,
    edge_lengths,
    placement,
)
from papara_py.report.tree_drawing import postorder, split_numbered_newick

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
K = 3


def papara(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The bundled example plus two reads that cannot be aligned, run with --candidates 3 and
    exported as jplace through the CLI: (run path, jplace path, the export's stderr)."""
    root = tmp_path_factory.mktemp("jplace")
    reads = root / "reads.fa"
    reads.write_text((EXAMPLE / "reads.fa").read_text() + ">no_residues\n>far_too_long\n" + "ACGT" * 200 + "\n")
    run = root / "run.h5"
    result = papara("-t", str(EXAMPLE / "tree.nwk"), "-s", str(EXAMPLE / "ref.phy"), "-r", str(reads),
                    "-o", str(run), "--device", "cpu", "-j", "2", "--candidates", str(K))
    assert result.returncode == 0, result.stderr
    target = root / "out.jplace"
    result = papara("export", str(run), "--format", "jplace", "-o", str(target))
    assert result.returncode == 0, result.stderr
    return run, target, result.stderr


@pytest.fixture(scope="module")
def document(example):
    return json.loads(example[1].read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def run_data(example):
    with h5py.File(example[0]) as run:
        return {
            "tree": run["tree/newick_numbered"].asstr()[()],
            "names": list(run["reads/names"].asstr()[:]),
            "status": list(run["reads/status"].asstr()[:]),
            "best_edge": run["reads/best_edge"][:],
            "edges": run["reads/candidates/edge"][:],
            "scores": run["reads/candidates/score"][:],
            "weights": run["reads/candidates/weight"][:],
            "command_line": run.attrs["command_line"],
            "parameters": json.loads(run["run"].attrs["parameters"]),
        }


# -- the document against the spec ---------------------------------------------------------------

def test_top_level_keys_version_and_metadata(document, run_data):
    assert set(document) == {"tree", "placements", "metadata", "version", "fields"}
    assert document["version"] == 3
    assert document["fields"] == list(FIELDS)
    assert document["fields"][:5] == ["edge_num", "likelihood", "like_weight_ratio", "distal_length",
                                      "pendant_length"]  # EPA-ng's fields, in EPA-ng's order
    assert len(set(document["fields"])) == len(document["fields"])
    metadata = document["metadata"]
    assert metadata["invocation"] == run_data["command_line"]
    assert "--candidates 3" in metadata["invocation"]
    from papara_py import __version__
    assert metadata["papara_py_version"] == __version__ and __version__ in metadata["exported_by"]
    # the weights' temperatures, as the run used them (the DNA preset sets T_p apart from T)
    assert all(isinstance(value, str) for value in metadata.values())  # gappa reads string values only
    assert float(metadata["temperature"]) == run_data["parameters"]["temperature"]
    assert float(metadata["placement_temperature"]) == run_data["parameters"]["placement_temperature"]
    assert metadata["placement_temperature"] != metadata["temperature"]


def test_tree_is_the_runs_numbered_newick_with_every_edge_once_in_post_order(document, run_data):
    tree = document["tree"]
    assert tree == run_data["tree"]
    plain, labels = split_numbered_newick(tree)
    n_edges = len(labels)
    # each {n} follows a branch: its length (`:0.01{3}`), or a label / `)` where there is none
    assert len(re.findall(r"(?::[0-9.eE+-]+|[)\w'])\{\d+\}", tree)) == n_edges
    assert not re.search(r"\{\d+\}\{|[(,]\{", tree)
    # edges 0..E-1, each once, written in post-order; E = 2N - 3 for the binary example tree
    assert labels == list(range(n_edges))
    parsed = Phylo.read(io.StringIO(plain), "newick")
    clades = postorder(parsed.root)[:-1]
    assert len(clades) == n_edges == 2 * len(parsed.get_terminals()) - 3
    # the distal lengths the export uses are half of these branch lengths, edge by edge
    assert np.allclose(edge_lengths(tree), [c.branch_length for c in clades], rtol=0, atol=1e-12)


def test_rows_follow_the_fields_and_the_readers_rules(document, run_data):
    tree_lengths = edge_lengths(document["tree"])
    fields = document["fields"]
    column = {name: i for i, name in enumerate(fields)}
    assert document["placements"]
    for pquery in document["placements"]:
        assert set(pquery) == {"p", "n"} and len(pquery["n"]) == 1 and isinstance(pquery["n"][0], str)
        assert pquery["p"], "a pquery needs at least one placement"
        for row in pquery["p"]:
            assert len(row) == len(fields)
            edge = row[column["edge_num"]]
            assert isinstance(edge, int) and 0 <= edge < len(tree_lengths)
            for name in ("likelihood", "like_weight_ratio", "distal_length", "pendant_length"):
                assert isinstance(row[column[name]], float) and math.isfinite(row[column[name]]), name
            assert 0.0 <= row[column["like_weight_ratio"]] <= 1.0
            assert row[column["pendant_length"]] == 0.0
            distal = row[column["distal_length"]]
            assert distal == tree_lengths[edge] / 2 and 0.0 <= distal <= tree_lengths[edge]
            assert isinstance(row[column["parsimony"]], int)


def test_placements_are_the_runs_weighted_candidates(document, run_data):
    """Each placement's rows are the run's candidates with a weight (DESIGN 5's posterior
    weights), with their scores; like_weight_ratio = the stored weight, likelihood its log;
    weight descending, then score, then edge; a read's weights sum to 1."""
    column = {name: i for i, name in enumerate(document["fields"])}
    index = {name: q for q, name in enumerate(run_data["names"])}
    shared = 0
    for pquery in document["placements"]:
        q = index[pquery["n"][0]]
        rows = pquery["p"]
        edges = [row[column["edge_num"]] for row in rows]
        weights = [row[column["like_weight_ratio"]] for row in rows]
        scores = [row[column["parsimony"]] for row in rows]
        likelihoods = [row[column["likelihood"]] for row in rows]
        stored = {int(e): (int(s), float(w)) for e, s, w in zip(run_data["edges"][q], run_data["scores"][q],
                                                                run_data["weights"][q]) if e >= 0 and w > 0}
        assert {e: (s, w) for e, s, w in zip(edges, scores, weights)} == stored
        assert math.fsum(weights) == pytest.approx(1.0, abs=K * 2.0 ** -15)
        assert [(-w, s, e) for w, s, e in zip(weights, scores, edges)] == sorted(zip([-w for w in weights], scores, edges))
        assert likelihoods == pytest.approx([math.log(w) for w in weights], rel=1e-12)
        shared += len(rows) > 1
    assert shared, "the example has reads whose weight is shared by several candidates"


def test_aligned_reads_only_in_input_order_with_a_notice(document, run_data, example):
    aligned = [n for n, s in zip(run_data["names"], run_data["status"]) if s == "aligned"]
    unaligned = [n for n, s in zip(run_data["names"], run_data["status"]) if s != "aligned"]
    assert sorted(unaligned) == ["far_too_long", "no_residues"]
    assert [p["n"][0] for p in document["placements"]] == aligned
    assert len(aligned) == 200
    assert '2 reads without an alignment (status other than "aligned") are not in' in example[2]


# -- streaming and atomic writing ------------------------------------------------------------------

def test_block_boundaries_do_not_change_the_document(example, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(jplace, "READ_BLOCK", 7)  # 202 reads: many blocks, the unaligned ones in the last
    small = tmp_path / "blocks.jplace"
    export(str(example[0]), "jplace", str(small))
    assert small.read_bytes() == example[1].read_bytes()


def test_a_damaged_tree_fails_with_no_output(example, tmp_path):
    broken = tmp_path / "broken.h5"
    shutil.copy(example[0], broken)
    with h5py.File(broken, "r+") as run:
        tree = run["tree/newick_numbered"].asstr()[()]
        del run["tree/newick_numbered"]
        run["tree/newick_numbered"] = tree.replace("{3}", "{4}", 1)  # edge 4 twice, edge 3 missing
        run["checksums/tree/newick_numbered"][()] = string_crc32(run["tree/newick_numbered"].asstr()[()])
    target = tmp_path / "out.jplace"
    with pytest.raises(InputError, match="edge number"):
        export(str(broken), "jplace", str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.h5"]  # no output, no partial file


# -- the pieces, on hand-made input -------------------------------------------------------------

def test_placement_orders_rows_and_fills_the_fields():
    distal = np.array([0.5, 0.25, 0.125, 0.0])
    weights = np.array([0.25, 0.25, 0.5, 0.0], np.float32)
    pquery = placement("q", np.array([3, 2, 0, 1]), np.array([9, 6, 9, 6]), weights, distal)
    assert pquery["n"] == ["q"]
    rows = pquery["p"]
    assert [r[0] for r in rows] == [0, 2, 3]  # weight descending, then score, then edge; weight 0 left out
    assert [r[5] for r in rows] == [9, 6, 9]
    assert [r[2] for r in rows] == [0.5, 0.25, 0.25]
    assert [r[3] for r in rows] == [0.5, 0.125, 0.0]
    assert [r[4] for r in rows] == [0.0] * 3
    assert [r[1] for r in rows] == pytest.approx([math.log(0.5), math.log(0.25), math.log(0.25)])
    assert placement("z", np.array([2]), np.array([0]), np.array([1.0]), distal)["p"][0][1] == 0.0
    json.dumps(pquery, allow_nan=False)  # plain JSON numbers only


def test_edge_lengths_of_numbered_newick():
    tree = "('a:{9}':0.5{0},'it''s':1e-05{1},(c{2},d:2{3}):0.25{4});"
    lengths = edge_lengths(tree)
    assert lengths[[0, 1, 3, 4]].tolist() == [0.5, 1e-05, 2.0, 0.25] and math.isnan(lengths[2])
    with pytest.raises(ValueError, match="more than once"):
        edge_lengths("(a:1{0},b:1{0},c:1{1});")
    with pytest.raises(ValueError, match="not 0..2"):
        edge_lengths("(a:1{0},b:1{1},c:1{3});")
