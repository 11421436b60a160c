"""The guided search (`--search guided`, DESIGN.md 6a): exact DP on the edges it chooses.

Where it is made to reach every cluster it must give exactly the exhaustive search's results
(best edge, score, alignment, candidates); wherever it stops, every score it reports must be the
reference scorer's score of that read on that edge, and its candidates the K best of the edges
it scored. The clusters must partition the tree into connected parts; the engine must score an
edge subset as the exhaustive engine scores those edges (ties by real edge number).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from scripts_loader import load_script

from papara_py.cli import build_parser
from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.guided import INITIAL_CLUSTERS, GuidedOptions, GuidedSearch
from papara_py.engine.read_batch import ReadBatch
from papara_py.engine.scheduler import Engine
from papara_py.io.run_file import RunFile
from papara_py.io.tree_input import read_tree
from papara_py.model.params import ScoringParams
from papara_py.model.reference_scorer import score_matrix_reference
from papara_py.phylo.clusters import cluster_edges
from papara_py.phylo.encoding import READ_CODE
from papara_py.phylo.tree import EdgeTree
from papara_py.report.page import build_report
from papara_py.run.config import RunConfig
from papara_py.run.runner import run

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example"
simulate = load_script("simulate")
#: Datasets compared between the searches: everything a read's result is made of.
RESULTS = ("best_edge", "score", "start", "cigar", "strand", "aligned", "candidates/edge", "candidates/score")
#: Reaches every cluster in its first round after the centres.
EVERYTHING = GuidedOptions(initial=10**6)


def simulated(tmp_path: Path, seed: int, taxa: int = 24, reads: int = 30) -> Path:
    """A small random tree, alignment and reads (scripts/simulate.py)."""
    params = simulate.SimParams(seed=seed, taxa=taxa, columns=120, reads=reads, read_length=40,
                                reverse_fraction=0.3, divergence=0.3)
    out = tmp_path / f"sim{seed}"
    simulate.write_outputs(simulate.simulate(params), out)
    return out


def align(data: Path, out: Path, search: str, guided: GuidedOptions = GuidedOptions(), **options) -> RunFile:
    config = RunConfig(tree=str(data / "tree.nwk"), alignment=str(data / "ref.phy"),
                       reads=str(data / "reads.fa"), output=str(out), device="cpu",
                       search=search, guided=guided, **({"threads": 2} | options))
    run(config)
    return RunFile(str(out))


def assert_same_results(a: RunFile, b: RunFile) -> None:
    for name in RESULTS:
        assert np.array_equal(a.column(name), b.column(name)), name


@pytest.mark.slow
def test_guided_equals_exhaustive_on_the_bundled_example(tmp_path):
    """... and scripts/bench_search.py says so from the two run files."""
    exhaustive = align(EXAMPLE, tmp_path / "e.h5", "exhaustive")
    guided = align(EXAMPLE, tmp_path / "g.h5", "guided")
    assert_same_results(exhaustive, guided)
    assert guided.record["cells"] < exhaustive.record["cells"]
    bench = load_script("bench_search")
    assert bench.main(["--simulated", str(EXAMPLE), "--exhaustive", str(tmp_path / "e.h5"),
                       "--guided", str(tmp_path / "g.h5"), "--json", str(tmp_path / "b.json")]) == 0
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["agreement"] == {"reads": 200, "best_edge_equal": 1.0, "score_equal": 1.0}
    assert result["cells_ratio"] == guided.record["cells"] / exhaustive.record["cells"] < 1
    assert result["guided"]["column_accuracy"] == result["exhaustive"]["column_accuracy"] > 0.99


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_guided_made_to_reach_every_cluster_is_exhaustive(tmp_path, seed):
    data = simulated(tmp_path, seed)
    exhaustive = align(data, tmp_path / "e.h5", "exhaustive", strand="both")
    guided = align(data, tmp_path / "g.h5", "guided", EVERYTHING, strand="both")
    assert_same_results(exhaustive, guided)
    assert guided.record["edges_scored_fraction"] == {"mean": 1.0, "min": 1.0, "max": 1.0}
    assert guided.record["cells"] == exhaustive.record["cells"]  # every pair scored once


@pytest.mark.slow
def test_guided_on_protein_made_to_reach_every_cluster_is_exhaustive(tmp_path):
    protein = EXAMPLE.parent / "protein"
    exhaustive = align(protein, tmp_path / "e.h5", "exhaustive")
    guided = align(protein, tmp_path / "g.h5", "guided", GuidedOptions(initial=10**6, cluster_size=3))
    assert_same_results(exhaustive, guided)
    assert guided.record["cells"] == exhaustive.record["cells"]


@pytest.mark.slow
@pytest.mark.parametrize("size", [1, 2, 7])
def test_any_cluster_size_reaching_every_cluster_is_exhaustive(tmp_path, size):
    data = simulated(tmp_path, 11, taxa=30)
    exhaustive = align(data, tmp_path / "e.h5", "exhaustive")
    guided = align(data, tmp_path / "g.h5", "guided", GuidedOptions(initial=10**6, cluster_size=size))
    assert_same_results(exhaustive, guided)


def test_reported_scores_are_the_reference_scorers_and_candidates_the_best_scored(tmp_path):
    """A guided run that stops early: each candidate's score is the reference scorer's for that
    edge, and no edge outside the candidates that the read was scored against beats them."""
    data = simulated(tmp_path, 5, taxa=60, reads=20)
    guided = align(data, tmp_path / "g.h5", "guided", GuidedOptions(initial=1, cluster_size=6),
                   strand="forward")
    fraction = guided.record["edges_scored_fraction"]
    assert fraction["mean"] < 0.9  # it did stop early
    tree = EdgeTree.from_dendropy(read_tree(str(data / "tree.nwk")))
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.phylo.profiles import ProfileBuilder

    alignment = read_alignment(str(data / "ref.phy"))
    profiles = ProfileBuilder(tree, match_tips(tree.tip_names, alignment, "tree").tip_rows)
    params = ScoringParams()
    reads = [READ_CODE[np.frombuffer(s.encode(), np.uint8)] for s in guided.column("sequence")]
    matrix = score_matrix_reference(reads, profiles.profiles(np.arange(tree.n_edges)), params)
    edges, scores = guided.column("candidates/edge"), guided.column("candidates/score")
    for q in range(len(reads)):
        kept = edges[q] >= 0
        assert np.array_equal(scores[q][kept], matrix[q, edges[q][kept]])
    assert np.array_equal(guided.column("score"), matrix[np.arange(len(reads)), guided.column("best_edge")])


def test_guided_does_not_depend_on_lanes_threads_batches_or_schedule(tmp_path):
    data = simulated(tmp_path, 3, taxa=40)
    options = GuidedOptions(initial=1, cluster_size=5)
    first = align(data, tmp_path / "a.h5", "guided", options, lanes=8)
    # a read's rounds depend on its own scores only: other batches (and shards) change nothing
    second = align(data, tmp_path / "b.h5", "guided", options, lanes=32, threads=1, batch_reads=7,
                   engine_options=EngineOptions(cpu_workers=3, jitter_seconds=0.002, jitter_seed=5))
    assert_same_results(first, second)
    assert first.record["cells"] == second.record["cells"]
    assert first.record["edges_scored_fraction"] == second.record["edges_scored_fraction"]


@pytest.mark.slow
def test_clusters_partition_the_tree_into_connected_parts(tmp_path):
    data = simulated(tmp_path, 2, taxa=200, reads=1)
    tree = EdgeTree.from_dendropy(read_tree(str(data / "tree.nwk")))
    for size in (1, 3, 10, 40, 10**6):
        clusters = cluster_edges(tree, size)
        members = [clusters.edges_of(c) for c in range(clusters.n_clusters)]
        assert sorted(np.concatenate(members).tolist()) == list(range(tree.n_edges))
        nodes_of = lambda e: {int(e), int(tree.parent[e])}  # noqa: E731
        for c, edges in enumerate(members):
            assert np.all(np.diff(edges) > 0) and np.all(clusters.cluster_of[edges] == c)
            assert clusters.centre[c] in edges
            reached, frontier = {int(edges[0])}, [int(edges[0])]  # connected: one walk reaches all
            while frontier:
                e = frontier.pop()
                for f in edges.tolist():
                    if f not in reached and nodes_of(e) & nodes_of(f):
                        reached.add(f)
                        frontier.append(f)
            assert reached == set(edges.tolist())
        assert np.count_nonzero(clusters.sizes < size) <= 1  # only the rest at the top may be smaller
        for e in range(tree.n_edges):  # border lists: the other clusters sharing a node with e
            touching = {int(clusters.cluster_of[f]) for f in range(tree.n_edges) if nodes_of(e) & nodes_of(f)}
            border = clusters.border[clusters.border_ptr[e]:clusters.border_ptr[e + 1]].tolist()
            assert border == sorted(touching - {int(clusters.cluster_of[e])})


def test_engine_scores_an_edge_subset_with_real_edge_numbers():
    """Ties broken by real edge numbers: many edges share one profile, a subset skips some."""
    rng = np.random.default_rng(4)
    m, n_edges, k = 50, 40, 6
    distinct = rng.choice(np.array([1, 2, 4, 8, 3, 15], np.uint8), size=(3, m))
    profiles = distinct[rng.integers(0, 3, n_edges)]
    reads = [rng.choice(np.array([1, 2, 4, 8], np.uint8), size=int(rng.integers(5, 30))) for _ in range(7)]
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    subset = np.array([1, 2, 5, 9, 10, 11, 17, 23, 30, 31, 38], np.int32)
    engine = Engine(lambda ids: profiles[ids], n_edges, m, 4, ScoringParams(), k, True, [],
                    EngineOptions(cpu_workers=2))
    [(_, found)] = list(engine.run([ReadBatch(np.concatenate(reads), offsets, subset)]))
    matrix = score_matrix_reference(reads, profiles, ScoringParams())
    for q in range(len(reads)):
        want = sorted(subset.tolist(), key=lambda e: (matrix[q, e], e))[:k]
        assert found.edge[q].tolist() == want
        assert found.score[q].tolist() == matrix[q, want].tolist()


def test_search_over_a_round_merges_into_one_candidate_list(tmp_path):
    """GuidedSearch on its own: every (read, edge) pair is scored at most once."""
    data = simulated(tmp_path, 8, taxa=30, reads=5)
    tree = EdgeTree.from_dendropy(read_tree(str(data / "tree.nwk")))
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.phylo.profiles import ProfileBuilder

    alignment = read_alignment(str(data / "ref.phy"))
    profiles = ProfileBuilder(tree, match_tips(tree.tip_names, alignment, "tree").tip_rows)
    m = alignment.rows.shape[1]
    reads = [READ_CODE[np.frombuffer(b"ACGTTGCAACGTAGCTAGCTAGGATC", np.uint8)]] * 3
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64)
    search = GuidedSearch(tree, lambda k: Engine(profiles.profiles, tree.n_edges, m, 8, ScoringParams(), k, True,
                                                 [], EngineOptions()), m, 3, EVERYTHING)
    found = search.search(ReadBatch(np.concatenate(reads), offsets))
    assert search.stats.cells == tree.n_edges * int(offsets[-1]) * m
    matrix = score_matrix_reference(reads, profiles.profiles(np.arange(tree.n_edges)), ScoringParams())
    want = sorted(range(tree.n_edges), key=lambda e: (matrix[0, e], e))[:3]
    assert found.edge.tolist() == [want] * 3
    # through `run`, as the pipeline calls it: each yielded batch's start is noted (a sample's span)
    before = time.perf_counter()
    for index, again in search.run([ReadBatch(np.concatenate(reads), offsets)] * 2):
        assert again.edge.tolist() == [want] * 3
        assert before < search.batch_started.pop(index) < time.perf_counter()
    assert not search.batch_started


def _config(args):
    """The RunConfig of parsed command-line options, as the CLI makes it."""
    from papara_py.run.options import keyword_options, run_config

    return run_config({name: getattr(args, name) for name in keyword_options()}, tree=args.tree,
                      alignment=args.alignment, reads=args.reads, output=args.output, outdir=args.outdir,
                      command_line="")


@pytest.mark.slow
def test_the_option_parses_and_reaches_the_run_record_and_the_report(tmp_path):
    parser = build_parser()
    args = parser.parse_args(["-t", "t", "-s", "s", "-r", "r", "-o", str(tmp_path / "x.h5")])
    assert args.search == "exhaustive"
    args = parser.parse_args(["-t", "t", "-s", "s", "-r", "r", "-o", str(tmp_path / "x.h5"), "--search", "guided"])
    assert _config(args).search == "guided"
    assert _config(args).guided == GuidedOptions(initial=INITIAL_CLUSTERS)
    assert f"default: {INITIAL_CLUSTERS})" in " ".join(parser.format_help().split())
    args = parser.parse_args(["-t", "t", "-s", "s", "-r", "r", "-o", str(tmp_path / "x.h5"), "--search", "guided",
                              "--guided-clusters", "3"])
    assert _config(args).guided == GuidedOptions(initial=3)
    with pytest.raises(SystemExit):
        parser.parse_args(["-t", "t", "-s", "s", "-r", "r", "--guided-clusters", "0"])
    bad = subprocess.run([sys.executable, "-m", "papara_py", "-t", "t", "-s", "s", "-r", "r", "-o",
                          str(tmp_path / "x.h5"), "--search", "greedy"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--search" in bad.stderr
    out = tmp_path / "run.h5"
    done = subprocess.run([sys.executable, "-m", "papara_py", "-t", str(EXAMPLE / "tree.nwk"), "-s",
                           str(EXAMPLE / "ref.phy"), "-r", str(EXAMPLE / "reads.fa"), "-o", str(out),
                           "--search", "guided", "--guided-clusters", "2", "--device", "cpu", "-j", "1", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    record = RunFile(str(out)).record
    assert record["search"]["mode"] == "guided" and record["search"]["clusters"] > 1
    assert record["search"]["initial"] == 2
    fraction = record["edges_scored_fraction"]
    assert 0 < fraction["min"] <= fraction["mean"] <= fraction["max"] <= 1
    assert 0 < record["cells"] < record["n_edges"] * record["n_columns"] * 200 * 100
    with h5py.File(out) as handle:
        assert json.loads(handle["run"].attrs["search"])["mode"] == "guided"
    html = build_report(str(out)).html
    assert "guided" in html and f"{fraction['mean']:.1%}" in html
    exhaustive = tmp_path / "e.h5"
    align(EXAMPLE, exhaustive, "exhaustive")
    assert RunFile(str(exhaustive)).record["search"] == {"mode": "exhaustive"}
    assert "exhaustive" in build_report(str(exhaustive)).html


def test_guided_on_a_gpu_and_cpu_workers_equals_guided_on_the_cpu(tmp_path, opencl_device):
    """The search takes the same path whoever scores: the OpenCL kernel (PoCL in CI) with CPU
    workers (hybrid) against CPU workers alone."""
    from papara_py.engine.consumers import GpuChunkScorer
    from papara_py.engine.gpu import GpuScorer
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.phylo.profiles import ProfileBuilder

    data = simulated(tmp_path, 9, taxa=50, reads=12)
    tree = EdgeTree.from_dendropy(read_tree(str(data / "tree.nwk")))
    alignment = read_alignment(str(data / "ref.phy"))
    profiles = ProfileBuilder(tree, match_tips(tree.tip_names, alignment, "tree").tip_rows)
    m = alignment.rows.shape[1]
    lines = (data / "reads.fa").read_text().split()[1::2]
    reads = [READ_CODE[np.frombuffer(line.encode(), np.uint8)] for line in lines]
    batch = ReadBatch(np.concatenate(reads), np.concatenate(([0], np.cumsum([len(r) for r in reads]))).astype(np.int64))
    options = GuidedOptions(initial=1, cluster_size=4)
    gpus = [GpuChunkScorer(GpuScorer(opencl_device), "gpu-0:test", 3)]

    def searched(use_gpu: bool):
        search = GuidedSearch(tree, lambda k: Engine(profiles.profiles, tree.n_edges, m, 8, ScoringParams(), k, True,
                                                     gpus if use_gpu else [], EngineOptions(cpu_workers=2)),
                              m, 3, options)
        return search.search(batch), search.stats

    (cpu, cpu_stats), (hybrid, hybrid_stats) = searched(False), searched(True)
    assert np.array_equal(cpu.edge, hybrid.edge) and np.array_equal(cpu.score, hybrid.score)
    assert cpu_stats.cells == hybrid_stats.cells and cpu_stats.rounds == hybrid_stats.rounds
    assert sum(c.cells for c in hybrid_stats.consumers[:2]) > 0  # the GPU feeders scored
