"""`papara-py report`: the numbered-Newick conversion, the statistics and the rendered report.

Rendering is headless (Agg). The report is checked the way a reader meets it: every figure is
embedded, decodes as a PNG of real size with more than one colour, and the outlier list and the
run record are there.
"""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from papara_py.io.run_writer import run_writer  # noqa: E402
from papara_py.io.tree_input import read_tree  # noqa: E402
from papara_py.model.outliers import (  # noqa: E402
    NULL_READS,
    OutlierNull,
    find_outliers,
    null_lengths,
    null_reads,
)
from papara_py.phylo.encoding import DNA, PROTEIN  # noqa: E402
from papara_py.phylo.tree import EdgeTree  # noqa: E402
from papara_py.report.page import build_report, gcups_text, write_report  # noqa: E402
from papara_py.report.placement import best_branch_counts, placement_confidence  # noqa: E402
from papara_py.report.run_view import load_run  # noqa: E402
from papara_py.report.tree_drawing import NumberedTree, split_numbered_newick  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
EMBEDDED_PNG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def papara(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "papara_py", *args], capture_output=True, text=True, timeout=600)


def align(tmp: Path, tree: Path, alignment: Path, reads: Path, *extra: str) -> Path:
    out = tmp / "run.h5"
    result = papara("-t", str(tree), "-s", str(alignment), "-r", str(reads), "-o", str(out),
                    "--device", "cpu", "-j", "1", "--quiet", *extra)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> Path:
    return align(tmp_path_factory.mktemp("example"), EXAMPLE / "tree.nwk", EXAMPLE / "ref.phy",
                 EXAMPLE / "reads.fa")


@pytest.fixture(scope="module")
def pyrg_run(tmp_path_factory, pyrg_dir) -> Path:
    return align(tmp_path_factory.mktemp("pyrg"), pyrg_dir / "tree.nwk", pyrg_dir / "ref.phy",
                 pyrg_dir / "reads.fasta")


def tree_from_text(tmp_path: Path, newick: str) -> EdgeTree:
    path = tmp_path / "tree.nwk"
    path.write_text(newick)
    return EdgeTree.from_dendropy(read_tree(path))


def embedded_pngs(html: str) -> list[Image.Image]:
    return [Image.open(io.BytesIO(base64.b64decode(data))) for data in EMBEDDED_PNG.findall(html)]


def assert_real_figure(image: Image.Image) -> None:
    assert image.format == "PNG"
    width, height = image.size
    assert width >= 500 and height >= 250, image.size
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) > 10  # not blank, not a single colour


# --- numbered Newick -> Bio.Phylo ---------------------------------------------------------------

def test_split_removes_edge_labels_but_not_braces_in_names_or_comments():
    plain, labels = split_numbered_newick("('a{7}':1.5{0},[c{9}]b{1},'it''s {x}'{2});")
    assert plain == "('a{7}':1.5,[c{9}]b,'it''s {x}');"
    assert labels == [0, 1, 2]


@pytest.mark.parametrize("newick", [
    "((A:0.1,B:0.2):0.3,(C:0.1,D:0.1):0.2,(E:1,(F:1,G:1):1):1);",
    "(('x{1}':1,'y''s':2):1,(z_1:1,w:1):1,(v:1,u:1,t:1):2);",  # quoting, apostrophe, polytomy
    "((A,B),(C,D),E);",  # no lengths
])
def test_edge_numbers_map_to_the_same_bipartitions_as_edgetree(tmp_path, newick):
    edge_tree = tree_from_text(tmp_path, newick)
    tree = NumberedTree(edge_tree.numbered_newick)
    assert tree.n_edges == edge_tree.n_edges
    assert sorted(tree.tip_names) == sorted(edge_tree.tip_names)
    for edge in range(edge_tree.n_edges):
        first, count = tree.first_tip[edge], tree.n_tips_beyond[edge]
        assert frozenset(tree.tip_names[first:first + count]) == edge_tree.edge_split(edge)


def test_edge_ends_say_which_edges_touch(tmp_path):
    edge_tree = tree_from_text(tmp_path, "((A:1,B:1):1,(C:1,D:1):1,E:1);")
    tree = NumberedTree(edge_tree.numbered_newick)
    by_tips = {frozenset(edge_tree.edge_split(e)): e for e in range(tree.n_edges)}
    a, b, ab = by_tips[frozenset("A")], by_tips[frozenset("B")], by_tips[frozenset("AB")]
    c = by_tips[frozenset("C")]
    assert set(tree.edge_ends[a]) & set(tree.edge_ends[b])  # cherry
    assert set(tree.edge_ends[a]) & set(tree.edge_ends[ab])
    assert not set(tree.edge_ends[a]) & set(tree.edge_ends[c])


def test_bad_edge_labels_are_an_input_error():
    from papara_py.errors import InputError
    with pytest.raises(InputError, match="edge labels"):
        NumberedTree("((A:1{0},B:1{1}):1{2},C:1{3},D:1{3});")
    with pytest.raises(InputError, match="Newick"):
        NumberedTree("((A:1{0},B:1{1}):1{2},C:1{3};")


def test_collapsing_keeps_placed_branches_and_accounts_for_every_read(tmp_path):
    rng = np.random.default_rng(3)
    clades = [f"t{i}:0.1" for i in range(400)]
    while len(clades) > 3:
        i, j = sorted(rng.choice(len(clades), 2, replace=False))
        joined = f"({clades[i]},{clades[j]}):0.05"
        clades = [c for k, c in enumerate(clades) if k not in (i, j)] + [joined]
    edge_tree = tree_from_text(tmp_path, "(" + ",".join(clades) + ");")
    tree = NumberedTree(edge_tree.numbered_newick)
    reads = np.zeros(tree.n_edges, dtype=np.int64)
    placed = rng.choice(tree.n_edges, 12, replace=False)
    reads[placed] = rng.integers(1, 50, size=12)
    for rows in (20, 60, 150):
        display = tree.display(reads, rows)
        assert display.n_rows <= rows
        assert display.hidden  # 400 tips cannot fit
        shown_edges = set(display.edge_of.values())
        hidden_reads = sum(r for _, r in display.hidden.values())
        assert sum(reads[e] for e in shown_edges) + hidden_reads == reads.sum()
        assert sum(t for t, _ in display.hidden.values()) + display.n_rows - len(display.hidden) == 400
    # Showing a branch takes opening its ancestors; subtrees holding reads are opened first, so
    # with rows for all of them every placed branch is drawn.
    parents = edge_tree.parent
    needed = set()
    for e in placed:
        v = int(parents[e])
        while v != edge_tree.top:
            needed.add(v)
            v = int(parents[v])
    assert 3 + len(needed) <= 150
    assert set(placed) <= set(tree.display(reads, 3 + len(needed)).edge_of.values())
    full = NumberedTree(edge_tree.numbered_newick).display(reads, 1000)
    assert not full.hidden and full.n_rows == 400


# --- statistics ---------------------------------------------------------------------------------

def test_outliers_are_reads_no_better_than_the_null_at_their_length():
    null = OutlierNull(np.array([16, 64]), np.array([2.0, 2.4]), np.array([0.2, 0.1]))
    assert null.thresholds.tolist() == pytest.approx([1.4, 2.1])
    assert null.threshold_at(np.array([8, 16, 32, 64, 500])).tolist() == pytest.approx([1.4, 1.4, 1.75, 2.1, 2.1])
    length = np.array([16, 16, 32, 32, 64, 64, 100])
    score = np.array([20, 24, 55, 57, 130, 20, 300])  # per residue 1.25, 1.5, 1.72, 1.78, 2.03, 0.31, 3.0
    aligned = np.ones(7, dtype=bool)
    result = find_outliers(score, length, aligned, null, "dna")
    assert result.indices.tolist() == [6, 1, 3]  # furthest above its threshold first
    aligned[6] = False
    assert find_outliers(score, length, aligned, null, "dna").indices.tolist() == [1, 3]
    assert "16 random reads" in result.rule() and "1.40 at 16, 2.10 at 64" in result.rule()
    assert "leaves out its N residues" in result.rule()
    nothing = find_outliers(score, length, aligned, None, "dna")
    assert not nothing.indices.size and "no read is flagged" in nothing.rule()
    assert "No read was aligned" in find_outliers(score, length, np.zeros(7, dtype=bool), None, "dna").rule()


def test_a_read_with_no_informative_residue_is_an_outlier_first():
    """A read of N alone scores 0, a perfect fit anywhere: it is flagged, before every other outlier,
    with no penalty per residue (an all-N read used to pass as the best fit of a run)."""
    null = OutlierNull(np.array([16, 64]), np.array([2.0, 2.4]), np.array([0.2, 0.1]))
    result = find_outliers(np.array([0, 40, 20]), np.array([0, 16, 16]), np.ones(3, dtype=bool), null, "protein")
    assert result.indices.tolist() == [0, 1]
    assert np.isnan(result.per_residue[0]) and "leaves out its X residues" in result.rule()


def test_informative_counts_leave_out_the_letters_that_stand_for_every_state():
    reads = np.frombuffer(b"NNNN" b"ACNGRY" b"" b"nnA", dtype=np.uint8)
    assert DNA.informative_counts(reads, np.array([0, 4, 10, 10, 13])).tolist() == [0, 5, 0, 1]
    assert PROTEIN.informative_counts(np.frombuffer(b"XXBZAN", np.uint8), np.array([0, 2, 6])).tolist() == [0, 4]


def test_null_lengths_bracket_each_read_length_below_the_width():
    assert null_lengths(np.array([3, 8, 100, 128, 129]), 1000).tolist() == [8, 64, 128, 256]
    assert null_lengths(np.array([100, 900]), 300).tolist() == [64, 128, 256]  # none at or above the width
    assert null_lengths(np.array([5]), 8).size == 0  # too narrow for any null read
    assert null_lengths(np.zeros(0), 1000).size == 0


def test_null_reads_depend_on_their_length_alone_and_the_reference_composition():
    rows = np.frombuffer(b"AC-A--CAAC" * 4, dtype=np.uint8).reshape(4, 10)
    codes, offsets = null_reads(rows, DNA, np.array([8, 32]))
    lengths = [8] * NULL_READS + [32] * NULL_READS
    assert offsets.tolist() == np.concatenate(([0], np.cumsum(lengths))).tolist()
    alone, _ = null_reads(rows, DNA, np.array([32]))
    assert np.array_equal(codes[8 * NULL_READS:], alone)  # a length's reads whatever else is asked for
    assert set(np.unique(codes).tolist()) == set(DNA.encode_read(np.frombuffer(b"AC", np.uint8)).tolist())
    share_a = np.mean(codes == DNA.encode_read(np.frombuffer(b"A", np.uint8))[0])
    assert 0.5 < share_a < 0.7  # the rows' composition: 6 A in 10 residues


def test_the_null_summarises_its_scores_and_survives_the_record_and_merging():
    scores = np.concatenate([np.full(NULL_READS, 16), np.arange(NULL_READS) * 2 + 40])
    null = OutlierNull.from_scores(np.array([8, 32]), scores)
    assert null.mean.tolist() == pytest.approx([2.0, np.mean(np.arange(NULL_READS) * 2 + 40) / 32])
    assert null.sd[0] == 0 and null.sd[1] == pytest.approx(np.std(np.arange(NULL_READS) * 2 / 32, ddof=1), abs=1e-6)
    again = OutlierNull.in_run_record(json.loads(json.dumps({"outlier_null": null.record()})))
    assert again.lengths.tolist() == [8, 32] and again.mean.tolist() == null.mean.tolist()
    other = OutlierNull(np.array([32, 64]), np.array([null.mean[1], 3.0]), np.array([null.sd[1], 0.1]))
    both = OutlierNull.union([other, null])
    assert both.lengths.tolist() == [8, 32, 64] and both.mean.tolist() == [2.0, null.mean[1], 3.0]
    assert both.subset(np.array([8, 32])).record() == null.record()
    assert OutlierNull.in_run_record({}) is None


def test_placement_confidence_ties_margins_and_distance(tmp_path):
    edge_tree = tree_from_text(tmp_path, "((A:1,B:1):1,(C:1,D:1):1,(E:1,F:1):1);")
    tree = NumberedTree(edge_tree.numbered_newick)
    e = {frozenset(edge_tree.edge_split(i)): i for i in range(tree.n_edges)}
    a, b, ab, f = e[frozenset("A")], e[frozenset("B")], e[frozenset("AB")], e[frozenset("F")]
    edges = np.array([[a, b, ab], [a, f, b], [a, b, f], [a, -1, -1]])
    scores = np.array([[5, 5, 7], [5, 6, 20], [5, 9, 9], [5, -1, -1]])
    result = placement_confidence(edges, scores, tree.edge_ends, margin=3)
    assert list(result.gap) == [0, 1, 4, -1]
    assert list(result.n_close) == [3, 2, 1, 1]
    assert list(result.connected) == [True, False, True, True]
    assert (result.tied, result.close, result.distant) == (1, 1, 1)
    assert placement_confidence(edges[:, :1], scores[:, :1], tree.edge_ends, 3) is None


def test_best_branch_counts_split_ties_among_the_tied_branches():
    """A read counts 1 on the branch of its best score, or 1/n on each of the n stored candidates
    tied for it; never everything on the lowest branch number (24% of the example's reads tie)."""
    edges = np.array([[4, 1, 2], [2, 0, -1], [3, 0, 1], [1, -1, -1]])
    scores = np.array([[7, 7, 9], [5, 5, -1], [2, 2, 2], [8, -1, -1]])
    counts = best_branch_counts(edges, scores, 6)
    assert counts == pytest.approx([0.5 + 1 / 3, 0.5 + 1 / 3 + 1, 0.5, 1 / 3, 0.5, 0])
    assert counts.sum() == pytest.approx(len(edges))
    assert best_branch_counts(edges[:, :1], scores[:, :1], 6) == pytest.approx([0, 1, 1, 1, 1, 0])  # K = 1
    assert best_branch_counts(edges[:0], scores[:0], 6).tolist() == [0] * 6


# --- rendered reports ---------------------------------------------------------------------------

def check_report(run: Path, tmp_path: Path) -> str:
    html_path, png_dir = tmp_path / "report.html", tmp_path / "figures"
    report = write_report(run, html_path, png_dir)
    html = html_path.read_text(encoding="utf-8")
    images = embedded_pngs(html)
    assert len(images) == 4 == len(report.figures)
    for image in images:
        assert_real_figure(image)
    assert sorted(p.name for p in png_dir.iterdir()) == ["confidence.png", "coverage.png", "scores.png", "tree.png"]
    for name, data in report.figures.items():
        assert (png_dir / f"{name}.png").read_bytes() == data
    for heading in ("On which branches do the reads score best?", "Which region of the gene",
                    "How well do the reads fit?", "How sure is the best branch?", "Run record", "Outlier rule"):
        assert heading in html
    with h5py.File(run) as handle:
        assert str(handle.attrs["command_line"]).split()[0] in html
        for checksum in json.loads(handle["run"].attrs["checksums_sha256"]).values():
            assert checksum in html
    assert "<link" not in html and "<script" not in html  # self-contained
    return html


@pytest.mark.slow
def test_example_report(example_run, tmp_path):
    html = check_report(example_run, tmp_path)
    assert "Outliers: none" in html  # simulated reads all come from the reference's relatives
    assert "Branches with the highest best-branch counts" in html and "GCUPS" in html
    assert "not placements" in html and "counts an equal share on each" in html


@pytest.mark.slow
def test_pyrg_report_lists_its_outliers(pyrg_run, tmp_path):
    html = check_report(pyrg_run, tmp_path)
    with h5py.File(pyrg_run) as handle:
        names = handle["reads/names"].asstr()[:]
        score = handle["reads/score"][:]
        length = np.array([len(s) for s in handle["reads/sequence"][:]])  # pyrG's reads have no N
        aligned = handle["reads/status"].asstr()[:] == "aligned"
        null = OutlierNull.in_run_record({"outlier_null": json.loads(handle["run"].attrs["outlier_null"])})
    outliers = find_outliers(score, length, aligned, null, "dna")
    match = re.search(r"Outliers: (\d+) reads", html)
    assert match and int(match.group(1)) == len(outliers.indices)
    assert len(outliers.indices) < aligned.sum()  # most pyrG reads belong to the pyrG reference
    for q in outliers.indices:
        assert f"<td>{names[q]}</td>" in html


@pytest.mark.slow
def test_single_candidate_runs_have_no_confidence_figure(tmp_path):
    run = align(tmp_path, EXAMPLE / "tree.nwk", EXAMPLE / "ref.phy", EXAMPLE / "reads.fa", "--candidates", "1")
    report = build_report(run)
    assert sorted(report.figures) == ["coverage", "scores", "tree"]
    assert len(embedded_pngs(report.html)) == 3 and "--candidates 1" in report.html


def synthetic_run(path: Path, n_tips: int, n_reads: int, columns: int, rng: np.random.Generator) -> None:
    """A run file of a random tree with `n_tips` tips, written by the real RunWriter (no aligning)."""
    clades = [f"tax{i}:{rng.uniform(0.001, 0.05):.4f}" for i in range(n_tips)]
    while len(clades) > 3:
        i, j = sorted(rng.choice(len(clades), 2, replace=False))
        joined = f"({clades[i]},{clades[j]}):{rng.uniform(0.001, 0.02):.4f}"
        clades[i] = joined
        clades[j] = clades[-1]
        clades.pop()
    newick_path = path.with_suffix(".nwk")
    newick_path.write_text("(" + ",".join(clades) + ");")
    edge_tree = EdgeTree.from_dendropy(read_tree(newick_path))
    rows = rng.choice(np.frombuffer(b"ACGT-", np.uint8), size=(n_tips, columns))
    k = 5
    best = rng.choice(edge_tree.n_edges, size=n_reads) % (edge_tree.n_edges // 3)  # a part of the tree
    start = rng.integers(0, columns - 120, size=n_reads)
    aligned = np.full((n_reads, columns), ord("-"), np.uint8)
    for q in range(n_reads):
        aligned[q, start[q]:start[q] + 100] = ord("A")
    candidates = np.sort(rng.choice(edge_tree.n_edges, size=(n_reads, k)), axis=1)
    candidates[:, 0] = best
    cand_score = np.sort(rng.integers(0, 40, size=(n_reads, k)), axis=1)
    with run_writer(path, columns, k, "papara-py synthetic") as writer:
        writer.write_reference(edge_tree.tip_names, rows, edge_tree.numbered_newick)
        writer.write_reads(0, {"names": [f"read{q}" for q in range(n_reads)], "status": ["aligned"] * n_reads,
                               "best_edge": best, "score": cand_score[:, 0], "start": start,
                               "cigar": ["100M"] * n_reads, "strand": ["+"] * n_reads,
                               "sequence": ["A" * 100] * n_reads, "aligned": aligned,
                               "pp": ["9" * 100] * n_reads, "candidates/edge": candidates,
                               "candidates/score": cand_score,
                               "candidates/weight": np.full((n_reads, k), 1 / k, np.float32)})
        writer.write_run_record({"parameters": {"mismatch": 3}, "device": "cpu", "gcups": 1.0})


def test_large_tree_is_collapsed_and_renders_in_reasonable_time(tmp_path):
    run = tmp_path / "large.h5"
    synthetic_run(run, 3000, 2000, 400, np.random.default_rng(11))
    started = time.perf_counter()
    report = build_report(run, max_tips=150)
    assert time.perf_counter() - started < 60
    tree = Image.open(io.BytesIO(report.figures["tree"]))
    assert_real_figure(tree)
    assert tree.size[1] < 0.17 * 150 * 110 + 600  # height follows the 150 rows, not the 3000 tips
    assert "3000 taxa, too many for one row each" in report.html


@pytest.mark.slow
def test_cli_report_and_bad_run_files(example_run, tmp_path):
    out = tmp_path / "r.html"
    result = papara("report", str(example_run), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert len(embedded_pngs(out.read_text(encoding="utf-8"))) == 4
    not_hdf5 = tmp_path / "reads.fa"
    not_hdf5.write_text(">r\nACGT\n")
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as handle:
        handle["x"] = 1
    for bad, expect in ((tmp_path / "missing.h5", "no such run file"), (not_hdf5, "not an HDF5 file"),
                        (foreign, "not a papara-py run file")):
        target = tmp_path / "bad.html"
        result = papara("report", str(bad), "-o", str(target), "--png", str(tmp_path / "pngs"))
        assert result.returncode == 2, result.stderr
        assert expect in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
        assert not target.exists() and not (tmp_path / "pngs").exists()
    assert papara("report", str(example_run)).returncode == 2  # neither -o nor --png


def _record_rows(html: str) -> list[tuple[str, ...]]:
    """The run record's table rows as text cells (the section after <h2>Run record)."""
    import html as html_module

    section = html[html.index("<h2>Run record</h2>"):]
    return [tuple(html_module.unescape(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row))
            for row in re.findall(r"<tr>(.*?)</tr>", section)]


@pytest.mark.slow
def test_run_record_is_labelled_rows_with_units_in_order(example_run):
    """The record reads as rows a person can read: labels with units, no JSON, one row per thing,
    the timings in the order of the run's stages (the total last)."""
    html = build_report(example_run).html
    rows = _record_rows(html)
    cells = [cell for row in rows for cell in row]
    assert not any(mark in cell for cell in cells for mark in ('{"', '":', "[{"))  # no JSON
    labels = [row[0] for row in rows if len(row) >= 2]
    what = {row[0]: row[1] for row in rows if len(row) == 2}
    assert what["threads (and why that many)"].startswith("1 (--threads")
    assert what["reads by strand"].startswith("200 as given (+), 0 reverse-complemented")
    assert what["device asked for (--device)"] == "cpu" and what["CPU lanes: edges per block"].isdigit()
    assert what["scoring speed"].endswith("GCUPS (10⁹ DP cells a second, while scoring)")
    speed = load_run(example_run).run_attrs["gcups"]  # the figure the run's summary line printed
    assert what["scoring speed"].split()[0] == gcups_text(speed) and gcups_text(0.0123) == "0.012"
    assert what["posterior step"].startswith("on cpu; batches: 1 on cpu")
    engine = labels[labels.index("what"):labels.index("stage")]
    assert len(engine) == len(set(engine))  # no two rows called alike ("device choice" twice, before)
    parameters = {row[0]: row[1:] for row in rows if len(row) == 3 and row[2].startswith("--")}
    assert parameters["mismatch"] == ("5", "--mismatch") and parameters["preset the penalties equal"][0] == "weighted"
    stages = [row[0] for row in rows[labels.index("stage") + 1:] if row[1].endswith(" s")]
    expected = ["reading the tree and the alignment", "parsing the reads", "waiting for the reads",
                "waiting for numba's kernels", "edge profiles", "waiting for the GPUs", "building the blocks",
                "deciding each read's strand", "scoring every read", "decoding the alignments", "writing the run file",
                "total"]
    assert [next(i for i, stage in enumerate(stages) if stage.startswith(e)) for e in expected] == \
        list(range(len(expected)))
    assert all(re.fullmatch(r"[\d,]+\.\d+ s", row[1]) for row in rows if row and row[0] in stages)
    consumers = next(row for row in rows if row and row[0] == "consumer")
    assert consumers == ("consumer", "blocks", "edges", "DP cells", "calls", "busy (s)")


@pytest.mark.slow
def test_a_small_run_reports_in_a_few_seconds(example_run):
    """The example's report (200 reads, 30 taxa) builds in under a few seconds of CPU (measured
    about 1.8 s on the 2-core machine; the figures are drawn once each, the tree twice to crop)."""
    build_report(example_run)  # matplotlib's and Bio.Phylo's first use, font cache
    started = time.process_time()
    build_report(example_run)
    assert time.process_time() - started < 5


def _pp_section(html: str) -> str:
    return html[html.index("<h2>How sure is each residue's column?</h2>"):].split("<h2>", 2)[1]


def test_the_posterior_probabilities_distribution_counts_every_aligned_residue(example_run):
    """The PP section counts each residue of /reads/pp once, by its code, and its shares add up."""
    with h5py.File(example_run) as handle:
        pp = "".join(x.decode() for x in handle["reads/pp"][()])
    section = _pp_section(build_report(example_run).html)
    rows = re.findall(r"<tr><td>([0-9*])</td><td>[^<]*</td><td class=\"num\">([\d,]+)</td>", section)
    assert [code for code, _ in rows] == list("0123456789*")
    assert {code: int(n.replace(",", "")) for code, n in rows} == {c: pp.count(c) for c in "0123456789*"}
    assert sum(int(n.replace(",", "")) for _, n in rows) == len(pp) > 0


def test_a_viterbi_run_says_it_has_no_posterior_probabilities(tmp_path):
    run = align(tmp_path, EXAMPLE / "tree.nwk", EXAMPLE / "ref.phy", EXAMPLE / "reads.fa", "--preset", "paper")
    section = _pp_section(build_report(run).html)
    assert "no posterior probabilities" in section and "<table>" not in section
