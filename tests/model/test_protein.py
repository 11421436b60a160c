"""Amino-acid data end to end (DESIGN 2, issue #22): the bundled example data/protein through the
command line and every export, the alphabet's detection and its messages, strand handling, run
files of either alphabet, and the hybrid engine (numba + OpenCL on PoCL) on real protein profiles
against the reference scorer."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import h5py
import numpy as np
import pytest
from misuse import Workspace, assert_refused, papara

from papara_py.errors import InputError
from papara_py.io.alignment_input import match_tips, read_alignment
from papara_py.io.checksums import attributes_crc32
from papara_py.io.read_input import iter_reads
from papara_py.io.reads import ReadSet
from papara_py.io.run_file import RunFile
from papara_py.io.tree_input import read_tree
from papara_py.model.column_costs import column_costs
from papara_py.model.params import PRESETS, ScoringParams
from papara_py.model.reference_scorer import profile_near, score_matrix_reference
from papara_py.model.traceback import align_many
from papara_py.phylo.encoding import DNA, PROTEIN, detect_alphabet, near_states
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

PROTEIN_DATA = Path(__file__).resolve().parents[2] / "data" / "protein"


@pytest.fixture(scope="module")
def protein_run(tmp_path_factory) -> Path:
    """data/protein aligned by the command line with every default (--alphabet auto)."""
    out = tmp_path_factory.mktemp("protein") / "run.h5"
    result = papara("-t", str(PROTEIN_DATA / "tree.nwk"), "-s", str(PROTEIN_DATA / "ref.phy"), "-r",
                    str(PROTEIN_DATA / "reads.fa"), "-o", str(out), "--device", "cpu", "-j", "2", "-v")
    assert result.returncode == 0, result.stderr
    assert "amino-acid data" in result.stderr
    return out


@pytest.mark.slow
def test_the_run_records_the_alphabet_the_protein_preset_and_forward_reads(protein_run):
    with RunFile(protein_run) as run:
        assert run.alphabet is PROTEIN and run.record["alphabet"] == "protein"
        assert run.record["near_states"] == "similarity: 46 substitution pairs"
        assert run.record["parameters"] == PRESETS["protein"].values() | {"preset": "protein"}
        assert run.record["strand"] == "forward" and set(run.column("strand")) == {"+"}
        assert (run.column("status") == "aligned").all() and run.n_reads == 120
        # the aligned rows hold the reads' own letters in reference columns
        reads = {r.name: r.sequence for r in iter_reads(PROTEIN_DATA / "reads.fa", alphabet=PROTEIN)}
        for name, row, cigar in zip(run.names(), run.aligned_rows(np.arange(run.n_reads)), run.column("cigar")):
            if "I" not in cigar:
                assert bytes(row[row != ord("-")]) == reads[name]


@pytest.mark.slow
def test_the_best_edges_score_as_the_reference_scorer_says(protein_run):
    """... with the near states and the column profile costs of the protein preset (DESIGN 3-4),
    each of which changes some of these reads' best scores."""
    tree = EdgeTree.from_dendropy(read_tree(PROTEIN_DATA / "tree.nwk"))
    alignment = read_alignment(PROTEIN_DATA / "ref.phy")
    tip_rows = match_tips(tree.tip_names, alignment, "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, PROTEIN).profiles(np.arange(tree.n_edges))
    reads = [PROTEIN.encode_read(np.frombuffer(r.sequence, np.uint8))
             for r in iter_reads(PROTEIN_DATA / "reads.fa", alphabet=PROTEIN)][:50]
    params = ScoringParams.preset("protein")
    costs = column_costs(tip_rows, PROTEIN, params.column_weight)
    matrix = score_matrix_reference(reads, profiles, params, costs)
    with RunFile(protein_run) as run:
        np.testing.assert_array_equal(run.column("score")[:50], matrix.min(axis=1))
        np.testing.assert_array_equal(run.column("best_edge")[:50], matrix.argmin(axis=1))
    assert (score_matrix_reference(reads, profiles, params).min(axis=1) != matrix.min(axis=1)).any()
    without_near = replace(params, near_mismatch=params.mismatch)
    assert (score_matrix_reference(reads, profiles, without_near, costs).min(axis=1) != matrix.min(axis=1)).any()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["phylip", "fasta"])
def test_an_export_reads_back_as_a_protein_reference_of_a_new_run(protein_run, fmt, tmp_path):
    out = tmp_path / f"ext.{fmt}"
    assert papara("export", str(protein_run), "--format", fmt, "-o", str(out)).returncode == 0
    back = read_alignment(out, alphabet="protein")
    reference = read_alignment(PROTEIN_DATA / "ref.phy")
    assert back.alphabet is PROTEIN and len(back.names) == 24 + 120
    assert [bytes(r[r != ord("-")]) for r in back.rows[:24]] == [bytes(r[r != ord("-")]) for r in reference.rows]
    reads = tmp_path / "new.fa"
    reads.write_text(">new1\nWLYDCFDWNSMATISDRTNPELGEGR\n>new2\nKEHPGCPKARDYFTTS\n")
    result = papara("-t", str(PROTEIN_DATA / "tree.nwk"), "-s", str(out), "-r", str(reads), "--alphabet",
                    "protein", "-o", str(tmp_path / "again.h5"), "--device", "cpu", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert "120 alignment taxa are not in the tree" in result.stderr  # the exported reads, aligned again
    with RunFile(tmp_path / "again.h5") as again:
        assert again.alphabet is PROTEIN and (again.column("status") == "aligned").all()


@pytest.mark.slow
def test_epa_and_jplace_exports_of_a_protein_run(protein_run, tmp_path):
    result = papara("export", str(protein_run), "--format", "epa", "--outdir", str(tmp_path / "epa"))
    assert result.returncode == 0, result.stderr
    query = read_alignment(tmp_path / "epa" / "query.fasta", alphabet="protein")
    reference = read_alignment(tmp_path / "epa" / "reference.fasta", alphabet="protein")
    assert len(query.names) == 120 and len(reference.names) == 24
    assert query.rows.shape[1] == reference.rows.shape[1] == 357
    assert papara("export", str(protein_run), "--format", "jplace", "-o", str(tmp_path / "p.jplace")).returncode == 0
    placements = json.loads((tmp_path / "p.jplace").read_text())["placements"]
    assert len(placements) == 120


def test_detection_follows_the_ninety_percent_rule():
    def rows(text: str) -> np.ndarray:
        return np.frombuffer(text.encode(), np.uint8).reshape(1, -1)

    assert detect_alphabet(rows("ACGTACGTAN" * 9 + "RYKMSWACGT")) is DNA  # 94% ACGTN
    assert detect_alphabet(rows("ACGTACGTAC" * 8 + "RYKMSWRYKM" * 2)) is PROTEIN  # 80%
    assert detect_alphabet(rows("acgu----acgu...?")) is DNA  # gaps left out, case ignored
    assert detect_alphabet(rows("MKVLAAGTWYHE")) is PROTEIN
    assert read_alignment(PROTEIN_DATA / "ref.phy").alphabet is PROTEIN


def protein_case(tmp_path: Path, alignment: str | None = None, reads: str | None = None) -> Workspace:
    """A workspace holding data/protein's tree, and its alignment and reads unless replaced."""
    ws = Workspace(tmp_path)
    (tmp_path / "tree.nwk").write_text((PROTEIN_DATA / "tree.nwk").read_text())
    (tmp_path / "ref.phy").write_text(alignment or (PROTEIN_DATA / "ref.phy").read_text())
    (tmp_path / "reads.fa").write_text(reads or (PROTEIN_DATA / "reads.fa").read_text())
    ws.snapshot()
    return ws


@pytest.mark.slow
def test_bad_protein_inputs_are_refused_naming_the_alphabet(tmp_path):
    ws = protein_case(tmp_path, reads=">p1\nMKV*LAAG\n")
    assert_refused(papara(*ws.main_job()), 2, "reads.fa, line 2", "invalid character '*'", "'p1'",
                   "position 4", "protein", "ARNDCQEGHILKMFPSTWYV")
    ws.assert_untouched()
    lines = (PROTEIN_DATA / "ref.phy").read_text().splitlines()
    lines[3] = lines[3][:10] + "*" + lines[3][11:]
    star = tmp_path / "star"
    star.mkdir()
    ws = protein_case(star, alignment="\n".join(lines) + "\n")
    assert_refused(papara(*ws.main_job()), 2, "ref.phy, line 4", "invalid character '*'", "protein",
                   "--alphabet auto")
    ws.assert_untouched()


@pytest.mark.slow
def test_a_protein_alignment_read_as_dna_is_refused(tmp_path):
    ws = protein_case(tmp_path)
    assert_refused(papara(*ws.main_job("--alphabet", "dna")), 2, "ref.phy", "invalid character", "as dna",
                   "(--alphabet dna)")
    ws.assert_untouched()


@pytest.mark.slow
def test_strand_both_is_refused_for_protein_and_auto_means_forward(tmp_path):
    ws = protein_case(tmp_path)
    assert_refused(papara(*ws.main_job("--strand", "both")), 2, "--strand", "protein", "no reverse strand")
    ws.assert_untouched()
    reads = ReadSet.from_sequences([("p", b"MKV")], PROTEIN)
    with pytest.raises(ValueError, match="no reverse complement"):
        reads.select(np.array([0]), np.array([True]))


def blosum62_near_states(element: int) -> int:
    """DESIGN 3 for protein, spelled out from BLOSUM62 itself (Biopython's copy): the amino acids
    outside the element's state set that score 0 or more against one of its states."""
    from Bio.Align import substitution_matrices

    blosum = substitution_matrices.load("BLOSUM62")
    letters = PROTEIN.letters
    states = [a for k, a in enumerate(letters) if element >> k & 1]
    return sum(1 << k for k, x in enumerate(letters)
               if x not in states and any(blosum[x][y] >= 0 for y in states))


def test_protein_near_states_are_the_blosum62_partners_a_set_lacks():
    """The near states every scorer takes (the kernels' and the traceback's) follow DESIGN 3's
    similarity rule on single residues, ambiguity codes, random sets, full sets, CGAP bits."""
    rng = np.random.default_rng(7)
    singles = [1 << k for k in range(20)]
    codes = [int(PROTEIN.read_code[ord(c)]) for c in "BZJX"]
    sets = [int(x) for x in rng.integers(1, 1 << 20, size=300)]
    elements = np.array(singles + codes + sets + [PROTEIN.state_mask], np.uint32)
    elements[::3] |= np.uint32(PROTEIN.cgap_bit)
    want = np.array([blosum62_near_states(int(e) & PROTEIN.state_mask) for e in elements], np.uint32)
    np.testing.assert_array_equal(near_states(elements, PROTEIN), want)
    np.testing.assert_array_equal(profile_near(elements), want)
    assert want[-1] == 0 and want[PROTEIN.letters.index("W")] == PROTEIN.read_code[ord("F")] | PROTEIN.read_code[ord("Y")]
    assert int(want[PROTEIN.letters.index("S")]).bit_count() == 8  # A N D Q E G K T


@pytest.mark.slow
def test_column_profile_costs_are_design_3_spelled_out():
    """X of DESIGN 3 (model/column_costs.py) against tests/literal_dp.py's letter-by-letter
    transcription, for every read code, on the bundled example and on hand-made columns: gaps,
    lower case, U and O (as C and K, as the encoder reads them), ambiguity codes (rows without a
    residue, like gaps), a column no row fills, weights 0.5-8."""
    from literal_dp import literal_column_cost

    from papara_py.model.column_costs import cost_codes

    hand = ["AW-KU", "AW-OC", "aW-kc", "CX-R-", "CB-R-", "UZ.R-"]
    example = [bytes(row).decode() for row in read_alignment(PROTEIN_DATA / "ref.phy").rows]
    for rows, weight in ((hand, 1.0), (hand, 0.5), (hand, 8.0), (example, 1.0)):
        ascii_rows = np.array([np.frombuffer(r.encode(), np.uint8) for r in rows])
        costs = column_costs(ascii_rows, PROTEIN, weight)
        assert costs.codes.tolist() == cost_codes(PROTEIN).tolist()
        want = [[literal_column_cost(rows, weight, i, int(code)) for i in range(len(rows[0]))] for code in costs.codes]
        assert costs.table.tolist() == want
    # U is C: a column of U and C costs C what a column of two C does
    as_c = column_costs(np.array([[ord("U")], [ord("c")]], np.uint8), PROTEIN, 1.0).table
    assert as_c.tolist() == column_costs(np.array([[ord("C")], [ord("C")]], np.uint8), PROTEIN, 1.0).table.tolist()
    # a column no row fills costs every residue 11, BLOSUM62's largest score: its rows' odds are
    # all 1, a P of 0
    empty = column_costs(np.array([[ord("-")], [ord("X")]], np.uint8), PROTEIN, 1.0).table[:20, 0]
    assert set(empty.tolist()) == {11}
    # the column's best residue costs 0: a column of W (W-W scores 11) costs W nothing
    w_column = column_costs(np.array([[ord("W")], [ord("W")]], np.uint8), PROTEIN, 1.0).table
    assert w_column[PROTEIN.letters.index("W"), 0] == 0 and w_column[:20, 0].min() == 0
    # a row without a residue counts in the mean with odds 1: one A (A-A scores 4, odds 4) beside
    # three gaps is 2 log2(7 / 4) = 1.6, a cost of 9; by the mean score it would be 1, a cost of 10
    sparse = column_costs(np.array([[ord("A")], [ord("-")], [ord("-")], [ord(".")]], np.uint8), PROTEIN, 1.0).table
    assert sparse[0, 0] == 9
    # the log of the mean odds, not the mean score: two rows A, W score W's read residue by
    # 2 log2((2^(-3/2) + 2^(11/2)) / 2) = 9.0 (cost 2), where the mean score, 4, would cost 7
    mixed = column_costs(np.array([[ord("A")], [ord("W")]], np.uint8), PROTEIN, 1.0).table
    assert mixed[PROTEIN.letters.index("W"), 0] == 2


@pytest.mark.slow
def test_cheaper_near_states_change_protein_scores_as_the_reference_scorer_says(tmp_path):
    """--near-mismatch below --mismatch on protein: the run's best scores are the reference
    scorer's with those penalties, and lower than Eq. 1's where a read meets a near state (the
    column profile cost off: single penalties keep the preset's weight unless it is given)."""
    ws = protein_case(tmp_path)
    penalties = ("--mismatch", "6", "--cgap", "6", "--gap-open", "6", "--gap-extend", "2", "--insertion", "12",
                 "--column-weight", "0")
    result = papara(*ws.main_job(*penalties, "--near-mismatch", "2", output=ws.path("run.h5")))
    assert result.returncode == 0, result.stderr
    tree = EdgeTree.from_dendropy(read_tree(ws.path("tree.nwk")))
    tip_rows = match_tips(tree.tip_names, read_alignment(ws.path("ref.phy")), "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, PROTEIN).profiles(np.arange(tree.n_edges))
    reads = [PROTEIN.encode_read(np.frombuffer(r.sequence, np.uint8))
             for r in iter_reads(ws.path("reads.fa"), alphabet=PROTEIN)]
    weighted = score_matrix_reference(reads, profiles, ScoringParams(6, 6, 6, 2, 12, 2))
    eq1 = score_matrix_reference(reads, profiles, ScoringParams(6, 6, 6, 2, 12, 6))
    with RunFile(ws.path("run.h5")) as run:
        assert run.record["parameters"]["near_mismatch"] == 2
        np.testing.assert_array_equal(run.column("score"), weighted.min(axis=1))
    assert (weighted.min(axis=1) < eq1.min(axis=1)).any()


@pytest.mark.slow
def test_a_run_file_without_an_alphabet_is_dna_and_an_unknown_one_is_damaged(protein_run, tmp_path):
    copy = tmp_path / "old.h5"
    copy.write_bytes(protein_run.read_bytes())
    with h5py.File(copy, "a") as f:  # consistent edits (the record's checksum follows)
        del f["run"].attrs["alphabet"]
        f["checksums"].attrs["run"] = attributes_crc32(f["run"].attrs)
    with RunFile(copy) as run:
        assert run.alphabet is DNA  # runs from before protein support
    # ... so a protein run without the attribute reads as a damaged DNA run, never silently
    result = papara("export", str(copy), "--format", "fasta", "-o", str(tmp_path / "x.fasta"))
    assert_refused(result, 2, "damaged", "no dna residue")
    with h5py.File(copy, "a") as f:
        f["run"].attrs["alphabet"] = "rna"
        f["checksums"].attrs["run"] = attributes_crc32(f["run"].attrs)
    assert_refused(papara("export", str(copy), "--format", "fasta", "-o", str(tmp_path / "y.fasta")), 2,
                   "damaged", "alphabet 'rna'")


@pytest.mark.slow
def test_prepared_profiles_carry_the_alphabet(tmp_path):
    profiles = tmp_path / "profiles.h5"
    result = papara("prepare", "-t", str(PROTEIN_DATA / "tree.nwk"), "-s", str(PROTEIN_DATA / "ref.phy"),
                    "-o", str(profiles))
    assert result.returncode == 0, result.stderr
    with h5py.File(profiles) as f:
        assert f.attrs["alphabet"] == "protein" and f["profiles"].dtype == np.uint32
    common = ["-t", str(PROTEIN_DATA / "tree.nwk"), "-s", str(PROTEIN_DATA / "ref.phy"), "-r",
              str(PROTEIN_DATA / "reads.fa"), "--profiles", str(profiles), "--device", "cpu", "-j", "1"]
    result = papara(*common, "-o", str(tmp_path / "run.h5"))
    assert result.returncode == 0, result.stderr
    assert_refused(papara(*common, "--alphabet", "dna", "-o", str(tmp_path / "dna.h5")), 2, "ref.phy",
                   "invalid character")


@pytest.mark.slow
def test_hybrid_engine_on_protein_profiles_matches_the_reference(opencl_device):
    """Real protein profiles and reads through CPU workers and the OpenCL kernel (PoCL in CI), with
    the protein preset's near states and column profile costs."""
    from engine_cases import expected, gpu, run

    from papara_py.engine.engine_options import EngineOptions
    from papara_py.engine.read_batch import ReadBatch

    tree = EdgeTree.from_dendropy(read_tree(PROTEIN_DATA / "tree.nwk"))
    alignment = read_alignment(PROTEIN_DATA / "ref.phy")
    tip_rows = match_tips(tree.tip_names, alignment, "tree").tip_rows
    profiles = ProfileBuilder(tree, tip_rows, PROTEIN).profiles(np.arange(tree.n_edges))
    raw = [r.sequence for r in iter_reads(PROTEIN_DATA / "reads.fa", alphabet=PROTEIN)][:12]
    params = ScoringParams.preset("protein")
    costs = column_costs(tip_rows, PROTEIN, params.column_weight)
    reads = ReadSet.from_sequences([(f"q{i}", s) for i, s in enumerate(raw)], PROTEIN)
    codes, offsets = reads.select(np.arange(len(raw)))
    assert codes.dtype == np.uint32 and profiles.dtype == np.uint32
    result = run(profiles, ReadBatch(codes, offsets), params, True, [gpu(opencl_device)],
                 EngineOptions(cpu_workers=1), costs=costs)
    want_score, want_edge = expected(profiles, [codes[a:b] for a, b in pairwise(offsets)], params, costs=costs)
    np.testing.assert_array_equal(result.candidates.score, want_score)
    np.testing.assert_array_equal(result.candidates.edge, want_edge)
    assert any(c.name.startswith("gpu") and c.blocks for c in result.consumers)
    scores, _ = align_many(codes, offsets, np.arange(len(raw)), profiles[want_edge[:, 0]], params,
                           costs=costs)
    np.testing.assert_array_equal(scores, want_score[:, 0])


def test_the_python_api_takes_protein_sequences_in_memory():
    import papara_py

    alignment = {name: bytes(row).decode() for name, row in zip(*_reference())}
    reads = {"p1": "WLYDCFDWNSMATISDRTNPELGEGR", "p2": "KEHPGCPKARDYFTTS"}
    run = papara_py.align(str(PROTEIN_DATA / "tree.nwk"), alignment, reads, device="cpu", threads=1)
    assert run.alphabet == "protein" and run.parameters == PRESETS["protein"].values() | {"preset": "protein"}
    assert [r.status for r in run] == ["aligned", "aligned"]
    assert len(run.to_alignment()) == 24 + 2
    run.close()
    # the column profile cost is an option like the penalties: off, the run is no longer the preset
    off = papara_py.align(str(PROTEIN_DATA / "tree.nwk"), alignment, reads, device="cpu", threads=1,
                          column_weight=0)
    assert off.parameters["column_weight"] == 0 and off.parameters["preset"] is None
    off.close()
    with pytest.raises(InputError, match="no reverse strand"):
        papara_py.align(str(PROTEIN_DATA / "tree.nwk"), alignment, reads, strand="both")


def _reference() -> tuple[list[str], np.ndarray]:
    alignment = read_alignment(PROTEIN_DATA / "ref.phy")
    return alignment.names, alignment.rows


@pytest.mark.slow
def test_protein_shards_merge_into_the_single_run(protein_run, tmp_path):
    common = ["-t", str(PROTEIN_DATA / "tree.nwk"), "-s", str(PROTEIN_DATA / "ref.phy"), "-r",
              str(PROTEIN_DATA / "reads.fa"), "--device", "cpu", "-j", "1", "--quiet"]
    shards = [str(tmp_path / f"shard_{k}.h5") for k in range(2)]
    for k, shard in enumerate(shards):
        assert papara(*common, "--shard", f"{k}/2", "-o", shard).returncode == 0
    merged = tmp_path / "merged.h5"
    result = papara("merge", *shards, "-o", str(merged))
    assert result.returncode == 0, result.stderr
    with RunFile(merged) as got, RunFile(protein_run) as want:
        assert got.alphabet is PROTEIN
        for name in ("best_edge", "score", "cigar", "sequence"):
            np.testing.assert_array_equal(got.column(name), want.column(name))
    report = tmp_path / "report.html"
    assert papara("report", str(merged), "-o", str(report)).returncode == 0 and report.stat().st_size > 0
