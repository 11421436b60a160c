"""scripts/bench_accuracy.py: its scoring, truth and tree handling on hand-made cases with known answers,
and its runs of the peers (MAFFT --addfragments, hmmalign) that docs/accuracy.md's margins rest on.

The peers are Debian's mafft and hmmer, never a README step: without them their tests skip, saying
why. With PAPARA_PEERS_TEST=1 (CI's own step, after it installs both) a missing peer fails the
test instead:

    apt-get install -y mafft hmmer && PAPARA_PEERS_TEST=1 python -m pytest -q tests/scripts/test_bench_accuracy.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from demanded import Demand
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
PEERS = Demand("PAPARA_PEERS_TEST", "makes a missing peer a failure")

ba = load_script("bench_accuracy")


def need_peer(binary: str) -> None:
    """Skip a test whose peer is not on PATH, or fail it when PAPARA_PEERS_TEST=1 demands the peers."""
    if shutil.which(binary) is None:
        PEERS.unavailable(f"{binary} not installed (Debian: mafft, hmmer)")


TIPS = frozenset("ABCDEF")


def test_score_counts_only_residues_with_a_true_column():
    truth = {
        "r1": ([0, 1, 2, -1, 3], frozenset({"B"})),  # -1: an inserted error base, not scored
        "r2": ([5, 6, 7, 8], frozenset({"C", "D"})),
        "r3": ([1, 2], None),  # no true edge (a polytomy): not in the edge count
    }
    placements = {
        "r1": ba.Placement([0, 1, 5, 4, 3], frozenset({"B"})),  # 3 of 4 right; the insert is ignored
        "r2": ba.Placement([5, 6, 7, 8], frozenset({"A", "B", "E", "F"})),  # complement of C,D: same edge
        # r3 missing: both residues wrong
    }
    got = ba.score(placements, truth, TIPS)
    assert got["residues"] == 10
    assert got["column_accuracy"] == pytest.approx(7 / 10)
    assert got["read_accuracy"] == pytest.approx((3 / 4 + 1 + 0) / 3)
    assert got["edge_accuracy"] == pytest.approx(2 / 2)
    # every residue in the state accuracy: r1's inserted base was put in column 4, so wrong
    assert (got["inserted"], got["inserted_placed"]) == (1, 1)
    assert got["state_accuracy"] == pytest.approx(7 / 11)


def test_state_accuracy_counts_a_truth_inserted_residue_right_when_left_inserted():
    """What column accuracy cannot see: the same columns, with the truth's inserted residue left
    inserted or put in a column, score the same column accuracy and different state accuracies;
    a missing read's inserted residues are wrong and were not placed."""
    truth = {"r1": ([0, -1, 2], None), "r2": ([-1, 4], None)}
    kept = ba.score({"r1": ba.Placement([0, -1, 2]), "r2": ba.Placement([-1, 4])}, truth)
    placed = ba.score({"r1": ba.Placement([0, 1, 2]), "r2": ba.Placement([3, 4])}, truth)
    assert kept["column_accuracy"] == placed["column_accuracy"] == 1.0
    assert (kept["state_accuracy"], kept["inserted"], kept["inserted_placed"]) == (1.0, 2, 0)
    assert (placed["state_accuracy"], placed["inserted_placed"]) == (pytest.approx(3 / 5), 2)
    missing = ba.score({"r1": ba.Placement([0, -1, 2])}, truth)
    assert (missing["state_accuracy"], missing["inserted_placed"]) == (pytest.approx(3 / 5), 0)


def test_score_wrong_edge_and_length_mismatch():
    truth = {"r": ([0, 1], frozenset({"A", "B"}))}
    assert ba.score({"r": ba.Placement([0, 1], frozenset({"C"}))}, truth, TIPS)["edge_accuracy"] == 0
    assert ba.score({"r": ba.Placement([0, 1])}, truth, TIPS)["edge_accuracy"] is None
    with pytest.raises(ValueError):
        ba.score({"r": ba.Placement([0, 1, 2])}, truth, TIPS)


def test_cigar_columns():
    assert ba.cigar_columns(3, "2M1I2D1M") == [3, 4, -1, 7]
    assert ba.cigar_columns(0, "1D3M") == [1, 2, 3]


def test_newick_splits_and_attachment():
    # ((A,B),(C,(D,E)),F); pruning D puts it on the edge above E; pruning D and E (a clade) puts
    # both on the edge above C; pruning A puts it on the edge above B
    tree = ba.parse_newick("((A:1,B:1):1,(C:1,(D:1,E:1):1):1,F:1);")
    assert set(tree.tips()) == set("ABCDEF")
    keep = frozenset("ABCEF")
    assert ba.attachment_split(tree, "D", keep) == frozenset({"E"})
    keep = frozenset("ABCF")
    assert ba.attachment_split(tree, "D", keep) == frozenset({"C"})
    assert ba.attachment_split(tree, "E", keep) == frozenset({"C"})
    keep = frozenset("BCDEF")
    # the edge above B; B's side is normalised to the side without the first tip (B itself)
    assert ba.attachment_split(tree, "A", keep) == frozenset({"C", "D", "E", "F"})
    pruned = ba.parse_newick(ba.write_pruned_newick(tree, frozenset("ABCF")))
    assert set(pruned.tips()) == set("ABCF")
    assert all(len(pruned.adj[v]) in (1, 3) for v in range(len(pruned.adj)))
    # the suppressed node's two edges add up: C hangs 1 + 1 below the top
    c = pruned.tips()["C"]
    assert list(pruned.adj[c].values()) == [2.0]


def test_numbered_newick_splits():
    splits, tips = ba.edge_splits_from_numbered("((A:1{0},B:1{1}):1{2},C:1{3},D:1{4});")
    assert tips == frozenset("ABCD")
    assert splits[0] == frozenset("BCD") and splits[1] == frozenset("B")
    assert splits[2] == frozenset("CD") and splits[3] == frozenset("C")


def test_quoted_labels_and_support_values():
    tree = ba.parse_newick("(('x y':1,B:1)0.95:1,'it''s':2,(C,D)'n1':1);")
    assert set(tree.tips()) == {"x y", "B", "it's", "C", "D"}


def test_leave_taxa_out_truth_points_at_the_source_residues(tmp_path):
    rng = np.random.default_rng(5)
    names = [f"t{i}" for i in range(8)]
    rows = {}
    for i, name in enumerate(names):
        row = rng.choice(list("ACGT"), size=300)
        row[10:14] = "-"  # a gap every taxon shares: the column is dropped
        if i < 2:
            row[100:110] = "-"
        rows[name] = "".join(row)
    ref = tmp_path / "ref.fasta"
    ba.write_fasta(ref, rows.items())
    (tmp_path / "tree.nwk").write_text("(((t0,t1),(t2,t3)),((t4,t5),(t6,t7)));")
    out = ba.leave_taxa_out(tmp_path / "tree.nwk", ref, tmp_path / "set", prune=2, n_reads=30,
                            model=ba.ErrorModel(substitution=0.0, length_mean=60, length_sd=5, min_length=40),
                            seed=3)
    data = ba.Data.from_dir(out)
    kept = ba.read_alignment(data.alignment)
    assert len(kept) == 6 and len(next(iter(kept.values()))) == 296  # 4 all-gap columns dropped
    # map new columns back to old ones: old = new + 4 past column 10
    reads = dict(ba._reads_forward(data))
    import csv
    with open(out / "truth.tsv") as handle:
        source = {r["name"]: r["source"] for r in csv.DictReader(
            (line for line in handle if not line.startswith("#")), delimiter="\t")}
    for name, (cols, split) in data.truth.items():
        assert split is not None and source[name] not in kept
        assert all(c >= 0 for c in cols) and cols == sorted(cols)
        for base, col in zip(reads[name], cols):
            old = col + 4 if col >= 10 else col
            assert rows[source[name]][old] == base
    # a perfect placement scores 1; one shifted by a column scores 0
    perfect = {n: ba.Placement(list(c)) for n, (c, _) in data.truth.items()}
    assert ba.score(perfect, data.truth)["column_accuracy"] == 1.0
    shifted = {n: ba.Placement([x + 1 for x in c]) for n, (c, _) in data.truth.items()}
    assert ba.score(shifted, data.truth)["column_accuracy"] == 0.0


def test_error_model_marks_inserted_bases_and_reverse_reads():
    rng = np.random.default_rng(1)
    row = "ACGTTTTACG" * 20
    columns = np.arange(len(row))
    model = ba.ErrorModel(substitution=0.0, insertion=0.2, deletion=0.1, homopolymer=1.0,
                          length_mean=150, length_sd=0, min_length=20)
    seq, cols = ba.cut_read(rng, row, columns, model)
    assert len(seq) == len(cols)
    real = [(b, c) for b, c in zip(seq, cols) if c >= 0]
    assert all(row[c] == b for b, c in real)  # every base with a column is its source base
    assert any(c < 0 for c in cols) and len(real) < 150  # insertions made, deletions made
    assert [c for _, c in real] == sorted(c for _, c in real)


@pytest.mark.slow
def test_mafft_map_on_the_example(tmp_path):
    need_peer("mafft")
    data = ba.Data.from_dir(ROOT / "data" / "example")
    placements, _ = ba.run_mafft(data, tmp_path, threads=1)
    assert ba.score(placements, data.truth)["column_accuracy"] > 0.98


def test_hmmalign_a2m_on_the_example(tmp_path):
    need_peer("hmmalign")
    data = ba.Data.from_dir(ROOT / "data" / "example")
    placements, _ = ba.run_hmmalign(data, tmp_path, threads=1)
    assert ba.score(placements, data.truth)["column_accuracy"] > 0.97


def test_protein_errors_draw_amino_acids():
    rng = np.random.default_rng(2)
    row = "MKVLAAGTWYHE" * 20
    model = ba.ErrorModel(substitution=0.3, insertion=0.2, deletion=0.0, homopolymer=0.0,
                          length_mean=200, length_sd=0, min_length=20)
    seq, _ = ba.cut_read(rng, row, np.arange(len(row)), model, ba.RESIDUES["protein"])
    assert set(seq) <= set(ba.RESIDUES["protein"]) and not set(seq) <= set("ACGT")
    assert set(seq) - set(row)  # substitutions and insertions reach letters the row lacks
    with pytest.raises(ValueError, match="no reverse strand"):
        ba.leave_taxa_out(ROOT / "data" / "protein" / "tree.nwk", ROOT / "data" / "protein" / "ref.phy", "unused",
                          2, 5, ba.ErrorModel(reverse_fraction=0.5), alphabet="protein")


@pytest.mark.slow
@pytest.mark.parametrize("tool, floor", [("papara-inproc", 0.98), ("mafft", 0.98), ("hmmalign", 0.97)])
def test_every_tool_on_the_protein_example(tool, floor):
    """--alphabet protein: papara-py --alphabet protein, mafft --amino, hmmbuild/hmmalign --amino."""
    if tool in ba.PEER_BINARIES:
        need_peer(ba.PEER_BINARIES[tool])
    data = ba.Data.from_dir(ROOT / "data" / "protein", alphabet="protein")
    result = ba.bench(data, [tool], params=None, threads=1)[tool]
    assert result["column_accuracy"] > floor


def test_the_simulated_protein_ladder_is_forty_simulations_of_both_models():
    """accuracy_study --suite protein-sim (notebook/ACCURACY.md, "Simulated protein families"): every
    reference a valid simulate.py run of its named model, each with its own seed, and a set each."""
    study = load_script("accuracy_study")
    simulate = load_script("simulate")
    refs = study.PROTEIN_SIM_REFS
    assert len(refs) == 40 and len({o["seed"] for o in refs.values()}) == 40
    for name, options in refs.items():
        params = simulate.SimParams(**options)
        assert params.alphabet == "protein" and name.startswith(params.protein_model + "-")
        assert f"-t{params.taxa}-d{params.divergence}-i{params.indel_rate}" in name
    assert sorted(o["protein_model"] for o in refs.values()) == ["lg"] * 20 + ["poisson"] * 20
    assert set(study.PROTEIN_SIM_SETS) == set(refs) and study.SUITES["protein-sim"] is study.PROTEIN_SIM_SETS


def test_dense_replicates_rebuild_the_study_sets_with_other_seeds(tmp_path):
    """validate --suite protein-dense (notebook/ACCURACY.md, "The dense sets out of sample"): each dense
    reference and both simulated families, built as the study builds them (tree, alignment, taxa
    left out, reads, read model) but with each given seed, one folder per set under DATA/dval."""
    study = load_script("accuracy_study")
    assert set(study.DENSE_REPLICATES) == set(study.PROTEIN_DENSE_SETS) | {"psim-low", "psim-high-indel"}
    specs = study.replicate_specs(tmp_path, [2, 7], dense=True)
    assert len(specs) == 2 * len(study.DENSE_REPLICATES)
    for name, (row, folder, (tree, alignment, prune, reads, model, seed)) in specs.items():
        source = study.DENSE_REPLICATES[row]
        assert name == f"{row}-s{seed}" and seed in (2, 7) and folder == tmp_path / "dval" / name
        assert (tree, alignment, prune, reads, model) == (tmp_path / source[0], tmp_path / source[1], *source[2:5])
    pfam = study.replicate_specs(tmp_path, [101], dense=False)
    assert sorted(pfam) == sorted(f"{f}-{m}-101" for f in ("fn3", "RRM", "Pkinase") for m in ("subst", "indel"))
    assert all(spec[2][3] == 200 for spec in pfam.values())


def test_a_study_point_names_every_scoring_field():
    """A point of --points gives ScoringParams' fields in order, the temperature included; more
    values than fields is an error."""
    from papara_py.model.params import PARAMETER_NAMES, ScoringParams

    study = load_script("accuracy_study")
    protein = ScoringParams.preset("protein")
    point = study.parse_point(",".join(f"{getattr(protein, name):g}" for name in PARAMETER_NAMES))
    assert ScoringParams(*point) == protein
    assert study.parse_point("3,6,5,3,16") == (3, 6, 5, 3, 16)
    assert ScoringParams(*study.parse_point("3,6,5,3,16,2,1.0")).temperature == 0
    with pytest.raises(ValueError, match=f"at most {len(PARAMETER_NAMES)}"):
        study.parse_point(",".join(["1"] * (len(PARAMETER_NAMES) + 1)))


def test_nearest_identity_is_the_median_closest_taxon_over_shared_columns():
    study = load_script("accuracy_study")
    rows = {"a": "ACDEFGHI", "b": "ACDEFGHK", "c": "WWWW----", "d": "wwwy..--"}
    # a: b 7/8; b: a 7/8; c: d 3/4 over the four columns both fill (lower case counts as its letter);
    # d: c 3/4
    assert study.nearest_identity(rows) == (7 / 8 + 3 / 4) / 2


def test_dense_references_read_from_msf_and_stockholm_alike(tmp_path):
    """accuracy_study --suite protein-dense (notebook/ACCURACY.md, "Dense real protein references"):
    BAliBASE's MSF ('.' and '~' gaps, lower case) and a Stockholm file of the same alignment give
    the same rows, names made Newick-safe; protein-refs writes ref.fasta and a tree of every row,
    and the suite has a set for each reference."""
    study = load_script("accuracy_study")
    bench = load_script("bench_accuracy")
    rows = {"1abc_A": "MKV.LLAG~~", "P12345/2-9": "MKVILLAG--", "Q9XYZ1": "mrvilaag--"}
    msf = tmp_path / "dense" / "X" / "ref.msf"
    msf.parent.mkdir(parents=True)
    header = "".join(f" Name: {name} oo  Len:  10  Check:  1  Weight:  1.0\n" for name in rows)
    body = "".join(f"{name:12s} {seq[:5]} {seq[5:]}\n" for name, seq in rows.items())
    msf.write_text(f"PileUp\n\n   MSF:  10  Type: P    Check:  1   ..\n\n{header}\n//\n\n{body}")
    sto = tmp_path / "dense" / "Y" / "seed.sto"
    sto.parent.mkdir(parents=True)
    sto.write_text("# STOCKHOLM 1.0\n" + "".join(f"{name} {seq.replace('~', '.')}\n" for name, seq in rows.items())
                   + "//\n")
    want = {"1abc_A": "MKV-LLAG--", "P12345_2_9": "MKVILLAG--", "Q9XYZ1": "MRVILAAG--"}
    assert study.alignment_rows(msf) == want == study.alignment_rows(sto)
    study.protein_refs(tmp_path, {"X": "dense/X/ref.msf"}, ml=False)
    assert bench.read_alignment(msf.parent / "ref.fasta") == want
    assert set(bench.parse_newick((msf.parent / "tree.nwk").read_text()).tips()) == set(want)
    assert set(study.PROTEIN_DENSE_SETS) == set(study.DENSE_REFS)
    assert study.SUITES["protein-dense"] is study.PROTEIN_DENSE_SETS


def random_protein_profiles(rng: np.random.Generator, n_edges: int, m: int) -> np.ndarray:
    """uint32 [n_edges, m] protein profile elements: one or two states each, CGAP on a fifth."""
    from papara_py.phylo.encoding import PROTEIN

    profiles = np.zeros((n_edges, m), np.uint32)
    for e in range(n_edges):
        for i in range(m):
            for state in rng.choice(20, size=int(rng.integers(1, 3)), replace=False):
                profiles[e, i] |= np.uint32(1 << int(state))
            if rng.random() < 0.2:
                profiles[e, i] |= np.uint32(PROTEIN.cgap_bit)
    return profiles
