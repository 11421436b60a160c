"""scripts/simulate.py: the written truth must agree with the written inputs.

Most checks read the files back (as a user of the data set would) and re-derive the truth
independently: reference columns from truth_alignment.fasta, edges from Newick via dendropy.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import dendropy
import numpy as np
import pytest
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example"




sim_mod = load_script("simulate")
COMPLEMENT = str.maketrans("ACGT", "TGCA")


# ----------------------------------------------------------------------------------- readers


def read_fasta(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return {lines[i][1:]: lines[i + 1] for i in range(0, len(lines), 2)}


def read_phylip(path: Path) -> dict[str, str]:
    header, *rows = path.read_text().splitlines()
    n, m = map(int, header.split())
    table = dict(row.split() for row in rows)
    assert len(table) == n and all(len(seq) == m for seq in table.values())
    return table


def read_truth(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# ")
    assert lines[1].split("\t") == ["name", "source", "strand", "true_split", "true_columns"]
    rows = []
    for line in lines[2:]:
        name, source, strand, split, columns = line.split("\t")
        rows.append(dict(name=name, source=source, strand=strand, split=split,
                         columns=[int(c) for c in columns.split(",")]))
    return rows


def read_tree(path: Path) -> dendropy.Tree:
    return dendropy.Tree.get(path=str(path), schema="newick", preserve_underscores=True)


def splits_of(tree: dendropy.Tree, anchor: str) -> set[frozenset[str]]:
    """Every edge's bipartition, as the side without `anchor` (so both rootings agree)."""
    leaves = frozenset(leaf.taxon.label for leaf in tree.leaf_node_iter())
    result = set()
    for node in tree.preorder_node_iter():
        if node is tree.seed_node:
            continue
        below = frozenset(leaf.taxon.label for leaf in node.leaf_iter())
        result.add(leaves - below if anchor in below else below)
    return result


def reference_column_map(out: Path) -> tuple[dict[str, str], np.ndarray]:
    """(true MSA rows, reference column of every true-MSA column or -1), from the files."""
    truth = read_fasta(out / "truth_alignment.fasta")
    refs = read_phylip(out / "ref.phy")
    matrix = np.array([list(truth[name]) for name in refs])
    in_ref = (matrix != "-").any(axis=0)
    return truth, np.where(in_ref, np.cumsum(in_ref) - 1, -1)


# ---------------------------------------------------------------------------------- fixtures


def generate(tmp_path_factory, name: str, **params) -> Path:
    out = tmp_path_factory.mktemp(name)
    sim_mod.write_outputs(sim_mod.simulate(sim_mod.SimParams(**params)), out)
    return out


@pytest.fixture(scope="module")
def exact(tmp_path_factory) -> Path:
    """Error-free reads on both strands from a gappy alignment; many held-out taxa, so that some
    form clades and (with this seed) a held-out clade hangs above the reference taxa's root."""
    return generate(tmp_path_factory, "exact", seed=19, taxa=40, held_out=20, columns=300,
                    indel_rate=0.3, reads=300, read_length=60, error_rate=0.0,
                    reverse_fraction=0.5)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory) -> Path:
    return generate(tmp_path_factory, "noisy", seed=6, taxa=25, columns=400, reads=400,
                    read_length=100, error_rate=0.05)


# ------------------------------------------------------------------------------------- tests


def test_site_order_puts_newer_blocks_first_and_nests():
    # root sites 0 1 2; after 0: block (3, 4), then a newer block (5); after 3: (6); at start: (7)
    order = sim_mod.site_order(3, anchors=[0, 0, 3, -1], starts=[3, 5, 6, 7], lengths=[2, 1, 1, 1])
    assert order.tolist() == [7, 0, 5, 3, 6, 4, 1, 2]


def test_every_tip_reads_back_from_the_true_alignment_in_sequence_order():
    sim = sim_mod.simulate(sim_mod.SimParams(seed=3, taxa=40, columns=200, indel_rate=1.0,
                                             reads=10))
    assert sim.truth_alignment.shape[1] > 300  # many nested insertions
    assert (sim.truth_alignment != ord("-")).any(axis=0).all()
    for name, row in zip(sim.truth_names, sim.truth_alignment):
        assert row[row != ord("-")].tobytes() == sim.tip_sequences[name]


def test_same_seed_same_bytes_other_seed_other_data(tmp_path):
    params = ["--taxa", "12", "--columns", "150", "--reads", "20", "--read-length", "40"]
    for out, seed in (("a", "9"), ("b", "9"), ("c", "10")):
        assert sim_mod.main(["--out", str(tmp_path / out), "--seed", seed] + params) == 0
    for name in sorted(p.name for p in (tmp_path / "a").iterdir()):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "ref.phy").read_bytes() != (tmp_path / "c" / "ref.phy").read_bytes()


def test_reference_alignment_is_the_true_alignment_of_the_reference_taxa(exact):
    refs = read_phylip(exact / "ref.phy")
    truth, ref_column = reference_column_map(exact)
    assert read_fasta(exact / "ref.fasta") == refs
    assert sorted(refs) == sorted(n for n in truth if n.startswith("r"))
    kept = np.flatnonzero(ref_column >= 0)
    for name, row in refs.items():
        assert row == "".join(truth[name][i] for i in kept)
        assert row.replace("-", "") == truth[name].replace("-", "")
    assert any("-" in row for row in refs.values())


def test_error_free_reads_are_slices_with_their_true_columns(exact):
    truth, ref_column = reference_column_map(exact)
    reads = read_fasta(exact / "reads.fa")
    rows = read_truth(exact / "truth.tsv")
    m = len(next(iter(read_phylip(exact / "ref.phy").values())))
    assert [r["name"] for r in rows] == list(reads) and len(set(reads)) == len(reads) == 300
    assert {r["strand"] for r in rows} == {"+", "-"}
    assert any(-1 in r["columns"] for r in rows)  # residues in held-out-only columns
    for r in rows:
        read = reads[r["name"]]
        columns = r["columns"]
        if r["strand"] == "-":  # reverse complement, columns given for the residues as written
            read, columns = read.translate(COMPLEMENT)[::-1], columns[::-1]
        source = truth[r["source"]]
        assert r["source"].startswith("h") and 20 <= len(read) < m
        positions = [i for i, ch in enumerate(source) if ch != "-"]
        start = source.replace("-", "").find(read)
        assert start >= 0, r["name"]
        expected = [int(ref_column[i]) for i in positions[start:start + len(read)]]
        assert columns == expected, r["name"]
        true_column = {int(c): i for i, c in enumerate(ref_column) if c >= 0}
        assert all(source[true_column[c]] == ch for ch, c in zip(read, columns) if c >= 0)


def test_errors_are_mostly_substitutions_at_the_given_rate(noisy):
    truth, ref_column = reference_column_map(noisy)
    true_column = {int(c): i for i, c in enumerate(ref_column) if c >= 0}
    reads = read_fasta(noisy / "reads.fa")
    mismatches = residues = unplaced = 0
    for r in read_truth(noisy / "truth.tsv"):
        placed = [c for c in r["columns"] if c >= 0]
        assert placed == sorted(set(placed))  # forward reads walk the columns left to right
        source = truth[r["source"]]
        for ch, c in zip(reads[r["name"]], r["columns"]):
            residues += 1
            unplaced += c < 0
            mismatches += c >= 0 and source[true_column[c]] != ch
    assert 0.035 < mismatches / residues < 0.06  # 0.05 * 0.9 substitutions
    assert unplaced > 0


def test_true_split_is_where_the_held_out_taxon_hangs(exact):
    reference = read_tree(exact / "tree.nwk")
    full = read_tree(exact / "truth_tree.nwk")
    refs = sorted(leaf.taxon.label for leaf in reference.leaf_node_iter())
    first = refs[0]
    ref_splits = splits_of(reference, first)
    rows = read_truth(exact / "truth.tsv")
    splits = {r["source"]: frozenset(r["split"].split(",")) for r in rows}
    assert len(set(splits.values())) < len(splits)  # taxa sharing an edge: clades exercised
    assert any(all(leaf.taxon.label.startswith("h") for leaf in child.leaf_iter())
               for child in full.seed_node.child_nodes())  # a clade above the reference root
    for held, split in splits.items():
        assert split in ref_splits and first not in split
        alone = full.extract_tree_with_taxa_labels(refs + [held])
        with_held = splits_of(alone, first)
        # inserting `held` on edge S|S' splits it into S|S'+held and S+held|S'
        assert split in with_held and split | {held} in with_held, held


def test_a_held_out_clade_above_the_reference_root_hangs_on_the_root_edge():
    # root(h1-h2 clade, ((r1, r2), (r3, r4))): unrooted, the reference root edge joins
    # (r1, r2) and (r3, r4), so the clade splits r3,r4 from r1,r2
    tree = dendropy.Tree.get(data="((h1:1,h2:1):1,((r1:1,r2:1):1,(r3:1,r4:1):1):1);",
                             schema="newick")
    splits = sim_mod.attachment_splits(from_dendropy(tree), ["r1", "r2", "r3", "r4"])
    assert splits == {"h1": "r3,r4", "h2": "r3,r4"}


def test_a_held_out_clade_inside_the_tree_hangs_on_its_sister_edge():
    tree = dendropy.Tree.get(data="((r1:1,((h1:1,h2:1):1,r2:1):1):1,(r3:1,(h3:1,r4:1):1):1);",
                             schema="newick")
    splits = sim_mod.attachment_splits(from_dendropy(tree), ["r1", "r2", "r3", "r4"])
    assert splits == {"h1": "r2", "h2": "r2", "h3": "r4"}


def from_dendropy(tree: dendropy.Tree):
    """A binary dendropy tree as simulate.Tree (pre-order numbering: parents before children)."""
    nodes = list(tree.preorder_node_iter())
    index = {id(node): i for i, node in enumerate(nodes)}
    left, right = np.full(len(nodes), -1), np.full(len(nodes), -1)
    parent = np.array([index[id(n.parent_node)] if n.parent_node else -1 for n in nodes])
    for i, node in enumerate(nodes):
        if node.child_nodes():
            left[i], right[i] = (index[id(c)] for c in node.child_nodes())
    length = np.array([n.edge.length or 0.0 for n in nodes])
    names = [n.taxon.label if n.taxon else "" for n in nodes]
    return sim_mod.Tree(parent, left, right, length, names)


def test_reference_tree_is_the_unrooted_pruned_true_tree(exact):
    reference = read_tree(exact / "tree.nwk")
    full = read_tree(exact / "truth_tree.nwk")
    assert len(reference.seed_node.child_nodes()) == 3
    refs = sorted(leaf.taxon.label for leaf in reference.leaf_node_iter())
    assert refs == sorted(read_phylip(exact / "ref.phy"))
    d_ref, d_full = reference.phylogenetic_distance_matrix(), full.phylogenetic_distance_matrix()
    taxon_ref, taxon_full = reference.taxon_namespace, full.taxon_namespace
    for a, b in zip(refs, refs[5:] + refs[:5]):
        expected = d_full.patristic_distance(taxon_full.get_taxon(a), taxon_full.get_taxon(b))
        got = d_ref.patristic_distance(taxon_ref.get_taxon(a), taxon_ref.get_taxon(b))
        assert got == pytest.approx(expected, abs=1e-6)


def test_pairwise_differences_look_like_a_marker_gene(noisy):
    rows = np.array([list(s) for s in read_phylip(noisy / "ref.phy").values()])
    p = [np.mean(rows[i][both] != rows[j][both])
         for i in range(len(rows)) for j in range(i + 1, len(rows))
         for both in [(rows[i] != "-") & (rows[j] != "-")]]
    assert 0.05 < np.mean(p) < 0.3


def test_bad_arguments_exit_with_status_2(tmp_path):
    for bad in (["--taxa", "2"], ["--error-rate", "1.5"], ["--held-out", "0"]):
        with pytest.raises(SystemExit) as stop:
            sim_mod.main(["--out", str(tmp_path)] + bad)
        assert stop.value.code == 2


@pytest.mark.parametrize("example", [EXAMPLE, ROOT / "data" / "protein"], ids=["dna", "protein"])
def test_example_data_set_is_reproduced_byte_for_byte(tmp_path, example):
    command = (example / "truth.tsv").read_text().splitlines()[0][2:]
    readme = (ROOT / "scripts" / "README.md").read_text()
    assert command.replace("--out DIR", f"--out data/{example.name}") in readme
    argv = shlex.split(command)[2:]
    argv[argv.index("DIR")] = str(tmp_path)
    assert sim_mod.main(argv) == 0
    names = sorted(p.name for p in example.iterdir() if p.name != "README.md")  # provenance, written by hand
    assert names == sorted(p.name for p in tmp_path.iterdir())
    for name in names:
        assert (tmp_path / name).read_bytes() == (example / name).read_bytes(), name


def test_target_columns_keeps_the_width_whatever_the_taxa():
    """A fixed indel rate widens the alignment with the taxa; --target-columns does not."""
    for taxa in (200, 2000):
        sim = sim_mod.simulate(sim_mod.SimParams(seed=4, taxa=taxa, columns=400, target_columns=500, reads=1))
        assert 450 <= sim.ref_alignment.shape[1] <= 550, (taxa, sim.ref_alignment.shape)
    wide = sim_mod.simulate(sim_mod.SimParams(seed=4, taxa=2000, columns=400, reads=1))
    assert wide.ref_alignment.shape[1] > 1000


def test_outputs_are_whole_or_absent(tmp_path):
    """A file is renamed into place only once written whole: a writer that fails leaves none."""
    def failing():
        yield b"first line\n"
        raise MemoryError("killed while writing")

    with pytest.raises(MemoryError):
        sim_mod.write_atomically(tmp_path / "ref.phy", failing())
    assert list(tmp_path.iterdir()) == []
    sim_mod.write_atomically(tmp_path / "ref.phy", iter([b"2 3\n", b"a ACG\n", b"b AC-\n"]))
    assert (tmp_path / "ref.phy").read_bytes() == b"2 3\na ACG\nb AC-\n"


def test_lg_transition_matrices_are_stochastic_reversible_and_normalised():
    """P(0) = I, rows sum to 1, pi P(t) = pi, detailed balance, and one expected replacement per
    site per unit time at small t (the normalisation `--divergence` assumes)."""
    lg = sim_mod.LG
    every = np.arange(20)
    assert np.allclose(lg.transition_rows(every, np.zeros(20)), np.eye(20), atol=1e-12)
    for t in (0.01, 0.3, 2.0):
        p = lg.transition_rows(every, np.full(20, t))
        assert np.allclose(p.sum(axis=1), 1.0)
        assert np.allclose(lg.frequencies @ p, lg.frequencies, atol=1e-12)
        flux = lg.frequencies[:, None] * p
        assert np.allclose(flux, flux.T, atol=1e-12)
    small = lg.transition_rows(every, np.full(20, 1e-4))
    assert 1e-4 * 0.99 < 1.0 - lg.frequencies @ np.diag(small) < 1e-4 * 1.01
    # the published table's extremes: I<->V is LG's most exchangeable pair, D<->C among the least
    letters = "ARNDCQEGHILKMFPSTWYV"
    rates = lg.transition_rows(every, np.full(20, 1e-3)) - np.eye(20)
    i, v, d, c = (letters.index(x) for x in "IVDC")
    assert rates[i].argmax() == v and rates[d, c] < rates[d].max() / 20


def test_lg_protein_families_exchange_similar_residues_more_often_than_poisson(tmp_path):
    """`--protein-model lg` writes families whose columns mix residues the way real proteins do
    (I/V/L, D/E, K/R ...): the share of within-column different pairs that BLOSUM62 scores >= 0 is
    well above the Poisson model's, which is what random pairing gives."""
    from papara_py.phylo.encoding import BLOSUM62_SIMILAR

    similar = {frozenset(pair) for pair in BLOSUM62_SIMILAR}

    def similar_share(model: str) -> float:
        sim = sim_mod.simulate(sim_mod.SimParams(seed=3, taxa=40, columns=300, divergence=1.0, reads=1,
                                                 alphabet="protein", protein_model=model))
        hits = total = 0
        for column in sim.ref_alignment.T:
            residues = [chr(x) for x in column if x != sim_mod.GAP]
            for k, a in enumerate(residues):
                for b in residues[k + 1:]:
                    if a != b:
                        total += 1
                        hits += frozenset((a, b)) in similar
        return hits / total

    assert similar_share("lg") > similar_share("poisson") + 0.1
    command = sim_mod.SimParams(alphabet="protein", protein_model="lg").command()
    assert "--protein-model lg" in command
    assert "--protein-model" not in sim_mod.SimParams(alphabet="protein").command()
    with pytest.raises(SystemExit) as stop:
        sim_mod.main(["--out", str(tmp_path), "--protein-model", "lg"])  # DNA has no protein model
    assert stop.value.code == 2
