"""The input side's fast paths against the paths they stand in for (issue 57, 10^5 taxa):

- the alignment's bulk path (io/alignment_input._bulk_alignment, numba passes over the file's bytes)
  gives the line parsers' Alignment wherever it takes a file, and leaves the rest (malformed
  files, errors) to them;
- a plain Newick text read without dendropy (io/tree_input._plain_newick -> EdgeTree.from_nodes)
  gives dendropy's EdgeTree, and anything else goes to dendropy;
- the profile passes and a block's lanes in numba (phylo/jit.py) equal the numpy passes and
  `make_block` of `profiles` (the brute-force Sankoff of tests/test_profiles.py checks both).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import papara_py.io.alignment_input as alignment_input
import papara_py.io.tree_input as tree_input
from papara_py.engine.layout import make_block
from papara_py.errors import InputError
from papara_py.io.checksums import Digest
from papara_py.phylo.encoding import DNA, PROTEIN
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

NAME_CHARS = "abcXYZ019_.-|&!"


def _both(data: bytes, alphabet: str = "auto"):
    """(the bulk path's Alignment or None, the line parsers' Alignment or their InputError)."""
    bulk = alignment_input._bulk_alignment(data, "aln", alphabet)
    old = alignment_input.BULK_ALIGNMENT_BYTES
    alignment_input.BULK_ALIGNMENT_BYTES = 1 << 62
    try:
        try:
            lines = alignment_input._parse_alignment(data, "aln", alphabet)
        except InputError as error:
            lines = error
    finally:
        alignment_input.BULK_ALIGNMENT_BYTES = old
    return bulk, lines


def _same(a, b) -> None:
    assert a.names == b.names
    assert a.alphabet is b.alphabet
    assert a.rows.dtype == b.rows.dtype and np.array_equal(a.rows, b.rows)


@st.composite
def alignments(draw):
    """A small alignment written in one of the layouts, with the quirks the parsers meet."""
    n = draw(st.integers(1, 6))
    m = draw(st.integers(1, 30))
    names = draw(st.lists(st.text(NAME_CHARS, min_size=1, max_size=8), min_size=n, max_size=n, unique=True))
    letters = draw(st.sampled_from(["ACGT-", "acgtN-.?", "ACDEFGHIKLMNPQRSTVWY-", "ACGTRY*"]))
    rows = [draw(st.text(letters, min_size=m, max_size=m)) for _ in range(n)]
    if draw(st.booleans()) and n > 1 and m > 1:  # a row of another length
        rows[draw(st.integers(0, n - 1))] = rows[0][:-1]
    if draw(st.booleans()) and n > 1:  # a name twice
        names[-1] = names[0]
    newline = draw(st.sampled_from(["\n", "\r\n", "\n", "\r"]))
    fmt = draw(st.sampled_from(["fasta", "fasta-wrapped", "phylip", "phylip-padded"]))
    lines = []
    if fmt.startswith("fasta"):
        for name, row in zip(names, rows):
            lines.append(f">{name}" + draw(st.sampled_from(["", " description", "\t"])))
            width = draw(st.integers(1, max(1, m))) if fmt == "fasta-wrapped" else max(1, m)
            lines.extend(row[i:i + width] for i in range(0, len(row), width))
            if draw(st.booleans()):
                lines.append(draw(st.sampled_from(["", "  "])))
    else:
        lines.append(f"{n} {m}")
        pad = max(len(name) for name in names) + 1
        for name, row in zip(names, rows):
            sep = " " * (pad - len(name)) if fmt == "phylip-padded" else draw(st.sampled_from([" ", "  ", "\t"]))
            body = row if not draw(st.booleans()) or len(row) < 2 else row[:1] + " " + row[1:]
            lines.append(draw(st.sampled_from(["", " "])) + name + sep + body + draw(st.sampled_from(["", " "])))
    text = newline.join(lines) + draw(st.sampled_from(["", newline, newline * 2]))
    return text.encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=alignments(), alphabet=st.sampled_from(["auto", "auto", "dna", "protein"]))
def test_bulk_alignment_is_the_line_parsers(data, alphabet):
    bulk, lines = _both(data, alphabet)
    if bulk is not None:
        assert not isinstance(lines, InputError), lines
        _same(bulk, lines)


def test_bulk_alignment_takes_the_plain_layouts():
    rows = ["ACGT-ACGTA", "acgtnacgta", "ACGTTACGTA"]
    fasta = "".join(f">s{i} x\n{r[:4]}\n{r[4:]}\n\n" for i, r in enumerate(rows)).encode()
    phylip = ("3 10\n" + "".join(f"s{i}   {r}\r\n" for i, r in enumerate(rows))).encode()
    for data in (fasta, phylip):
        bulk, lines = _both(data)
        assert bulk is not None
        _same(bulk, lines)
        assert bulk.rows[1].tobytes() == b"ACGTNACGTA"


def test_a_large_file_takes_the_bulk_path_and_is_hashed_once(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    rows = ["".join(rng.choice(list("ACGT-"), 2000)) for _ in range(600)]
    path = tmp_path / "big.phy"
    path.write_text("600 2000\n" + "".join(f"taxon{i} {r}\n" for i, r in enumerate(rows)))
    assert path.stat().st_size >= alignment_input.BULK_ALIGNMENT_BYTES
    digest = Digest()
    found = alignment_input.read_alignment(path, digest)
    import hashlib
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(alignment_input, "BULK_ALIGNMENT_BYTES", 1 << 62)
    _same(found, alignment_input.read_alignment(path))
    assert found.rows.shape == (600, 2000) and found.alphabet is DNA


# ---- Newick -----------------------------------------------------------------------------------


@st.composite
def plain_newicks(draw) -> str:
    """A random tree in plain Newick: unquoted names, lengths in several spellings (or none),
    inner labels, polytomies, a bifurcating root or not."""
    n_tips = draw(st.integers(3, 14))
    names = draw(st.lists(st.text(NAME_CHARS, min_size=1, max_size=6), min_size=n_tips, max_size=n_tips,
                          unique=True))
    lengths = st.one_of(st.just(""), st.sampled_from([":0.5", ":1", ":.25", ":1e-05", ":2.5E+1", ":-0.1", ":0"]))
    nodes = [name + draw(lengths) for name in names]
    while len(nodes) > 1:
        top = len(nodes) <= 3 and draw(st.booleans())
        take = len(nodes) if top else draw(st.integers(2, min(3, len(nodes))))
        start = draw(st.integers(0, len(nodes) - take))
        label = draw(st.sampled_from(["", "", "x1", "0.95"]))
        group = "(" + ",".join(nodes[start:start + take]) + ")" + label
        nodes[start:start + take] = [group + ("" if top else draw(lengths))]
    return nodes[0] + ";" + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=plain_newicks())
def test_plain_newick_is_dendropys_tree(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("t") / "tree.nwk"
    path.write_text(text)
    assert tree_input._plain_newick(text) is not None
    fast = tree_input.read_edge_tree(path)
    slow = EdgeTree.from_dendropy(tree_input.read_tree(path))
    for field in ("parent", "child_ptr", "child_ids", "first_below", "tip_node"):
        assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
    assert fast.tip_names == slow.tip_names
    assert np.array_equal(fast.lengths, slow.lengths, equal_nan=True)
    assert fast.numbered_newick == slow.numbered_newick


@pytest.mark.parametrize("text", [
    "('a b',c,d);", "(a,b,c)[&R];", "[&U](a,b,c);", "(a,b,c)", "(a,b,c);(a,b,c);", "(a,b);", "(a,a,b);",
    "(a,,b,c);", "(a,b,c,);", "((a,b),c,d:x);", "(a=1,b,c);", "(a,b,{c});", "(a,b,c):0.1:0.2;", "a;",
    "(a\tb,c,d);", "((a,b)c:1:2,d,e);", "(a,b,c)d e;",
])
def test_anything_else_is_left_to_dendropy(text):
    assert tree_input._plain_newick(text) is None


def test_a_tree_dendropy_refuses_is_refused_the_same(tmp_path):
    path = tmp_path / "t.nwk"
    path.write_text("(a,b,a);")
    with pytest.raises(InputError, match="duplicate"):
        tree_input.read_edge_tree(path)


# ---- profiles ---------------------------------------------------------------------------------


@st.composite
def trees_and_rows(draw):
    text = draw(plain_newicks())
    tree = EdgeTree.from_nodes(*tree_input._plain_newick(text))
    protein = draw(st.booleans())
    m = draw(st.sampled_from([1, 7, 70, 200]))
    letters = np.frombuffer((b"ACDEFGHIKLMNPQRSTVWYBXZ-." if protein else b"ACGTRYKMSWN-.?acgt"), np.uint8)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = rng.choice(letters, size=(tree.n_tips, m))
    # columns that agree more often, so the sets meet
    rows[:, ::3] = rng.choice(letters[:4], size=(tree.n_tips, 1))
    return tree, rows, PROTEIN if protein else DNA, draw(st.integers(1, 4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=trees_and_rows())
def test_numba_passes_and_lanes_equal_the_numpy_ones(case):
    tree, rows, alphabet, threads = case
    fast = ProfileBuilder(tree, rows, alphabet, threads=threads)
    slow = ProfileBuilder(tree, rows, alphabet, jit=False)
    assert np.array_equal(fast._down, slow._down) and np.array_equal(fast._up, slow._up)
    ids = np.arange(tree.n_edges)
    assert np.array_equal(fast.profiles(ids), slow.profiles(ids))
    for width in (1, 4, 8):
        for first in range(0, tree.n_edges, width):
            edges = ids[first:first + width][::-1].copy()  # any edges, in any order
            want = make_block(0, first, slow.profiles(edges), width).lanes
            assert np.array_equal(fast.lanes(edges, width), want)


def test_a_bad_character_is_named_as_before():
    tree = EdgeTree.from_nodes(*tree_input._plain_newick("((a,b),c,(d,e));"))
    rows = np.frombuffer(b"ACGT" * 5, np.uint8).reshape(5, 4).copy()
    rows[3, 2] = ord("!")
    messages = []
    for jit in (True, False):
        with pytest.raises(ValueError) as error:
            ProfileBuilder(tree, rows, DNA, jit=jit)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "'d', column 3" in messages[0]
