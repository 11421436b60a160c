"""The jplace export (`papara-py export RUN.h5 --format jplace`): each read's candidate edges.

jplace version 3 is the placement format EPA-ng, pplacer, guppy and gappa share (Matsen, Hoffman,
Gallagher and Stamatakis 2012, "A format for phylogenetic placements", PLoS ONE 7:e31009): one
JSON object with

- "tree": the run's `/tree/newick_numbered`, unchanged: the reference tree with a jplace edge
  number `{n}` after every branch (after its length, or after the label where it has none),
  edges numbered 0..E-1 in post-order of that string (DESIGN 3);
- "placements": one object per aligned read, `{"p": [row, ...], "n": [read name]}`, one row per
  candidate edge of `/reads/candidates` (the K best by (score, edge); -1 slots skipped), best
  first: rows are ordered by like_weight_ratio descending, ties by edge number, so the first row
  is the read's `best_edge`;
- "fields": the meaning of each row's values, `FIELDS`;
- "metadata": `invocation` (the command line of the run), the papara-py version that wrote the
  run and the one that exported it, and these rules in words;
- "version": 3.

papara-py places by parsimony, not by likelihood, so the likelihood fields hold values derived
from the alignment scores (PaPaRa's penalty of the read against the branch's ancestral profile,
DESIGN 4; lower is better). With `lam` = ln(10) / mismatch (the run's mismatch penalty from the
run record's "parameters"; ln(10) if that is missing or 0):

- "like_weight_ratio": w_i = exp(-lam * (s_i - s_min)) / sum_j exp(-lam * (s_j - s_min)) over the
  read's candidates i (scores s_i, best s_min). One mismatch more costs a factor 10 in weight;
  equal scores get exactly equal weights; the weights of a read sum to 1. They are normalised
  over the K candidates stored in the run, not over every edge of the tree: raise
  `--candidates` for a fuller spread.
- "likelihood": -lam * s_i, a pseudo log-likelihood (a number, as the format's readers require),
  chosen so that like_weight_ratio relates to it exactly as ML placement tools relate theirs:
  w_i = exp(L_i) / sum_j exp(L_j). It is not comparable with likelihoods of EPA-ng or pplacer.
- "parsimony": s_i itself (the integer score; a field name the jplace readers know).
- "distal_length": half the branch's length in the tree (0 where the branch has none), i.e. the
  read sits at the middle of the branch; papara-py estimates no branch positions.
- "pendant_length": 0 (papara-py estimates no pendant branch).

The document is written atomically (`atomic_path`) and streamed: reads are taken from the run
file in blocks and each placement is JSON-encoded and written on its own, so a run of millions
of reads never becomes one Python object. Reads without an alignment are left out; the caller
(`export`) counts them in a notice on stderr.
"""

from __future__ import annotations

import json
import math
import re
from typing import IO, Iterator

import numpy as np

from papara_py import __version__
from papara_py.io.reads import STATUS_ALIGNED
from papara_py.io.run_file import RunFile

#: jplace format version written.
JPLACE_VERSION = 3

#: The columns of each placement row, in order.
FIELDS = ("edge_num", "likelihood", "like_weight_ratio", "distal_length", "pendant_length", "parsimony")

#: Reads taken from the run file at once.
READ_BLOCK = 1 << 16

#: A quoted label ('' escapes a quote), a [comment], or a branch's `:length{n}` / `{n}` suffix.
_NEWICK_TOKEN = re.compile(r"'(?:[^']|'')*'|\[[^\]]*\]|(?::([^\s,;:()\[\]{}']+))?\{(\d+)\}")

#: The weight rule in words, for the document's metadata.
WEIGHT_RULE = ("like_weight_ratio = exp(-lam * (score - best score)) normalised over the read's candidate "
               "edges (the run's K best), lam = ln(10) / mismatch penalty (one mismatch more = ten times "
               "less weight); likelihood = -lam * score (a pseudo log-likelihood, not a model likelihood); "
               "parsimony = papara-py's alignment score (lower is better); distal_length = half the branch "
               "length; pendant_length = 0")


def weight_scale(mismatch: object) -> float:
    """lam of the module docstring: ln(10) / mismatch, or ln(10) if `mismatch` is not a positive number."""
    if isinstance(mismatch, bool) or not isinstance(mismatch, (int, float)) or not mismatch > 0:
        return math.log(10.0)
    return math.log(10.0) / float(mismatch)


def like_weight_ratios(scores: np.ndarray, lam: float) -> np.ndarray:
    """Weights of candidates with alignment scores `scores` (lower is better), summing to 1.

    w_i = exp(-lam * (s_i - min s)) / sum_j exp(-lam * (s_j - min s)); equal scores get equal
    weights. Shifting by the minimum keeps the best term at exp(0) = 1, so nothing underflows
    to an all-zero sum however large the scores.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    terms = np.exp(-lam * (scores - scores.min()))
    return terms / terms.sum()


def edge_lengths(newick_numbered: str) -> np.ndarray:
    """Branch length of every edge 0..E-1 of a jplace-numbered Newick (NaN where none is given).

    Raises ValueError unless the `{n}` labels are exactly 0..E-1, each once.
    """
    found: dict[int, float] = {}
    for match in _NEWICK_TOKEN.finditer(newick_numbered):
        if match.group(2) is None:
            continue  # a quoted label or a comment
        edge = int(match.group(2))
        if edge in found:
            raise ValueError(f"edge number {{{edge}}} occurs more than once in the tree")
        length = match.group(1)
        try:
            found[edge] = float(length) if length is not None else math.nan
        except ValueError:
            raise ValueError(f"branch length {length!r} of edge {{{edge}}} is not a number") from None
    if sorted(found) != list(range(len(found))):
        raise ValueError(f"the tree's {len(found)} edge numbers are not 0..{len(found) - 1}")
    return np.array([found[e] for e in range(len(found))], dtype=np.float64)


def placement(name: str, edges: np.ndarray, scores: np.ndarray, lam: float, distal: np.ndarray) -> dict:
    """One read's jplace placement object: rows of FIELDS for its candidates, best first.

    `edges`, `scores`: its candidates (slots with edge -1 already removed); `distal`: the distal
    length of every edge of the tree.
    """
    order = np.lexsort((edges, scores))  # score ascending = weight descending; ties by edge number
    edges, scores = edges[order], scores[order]
    weights = like_weight_ratios(scores, lam)
    rows = [[int(e), lam * -int(s), float(w), float(distal[e]), 0.0, int(s)]
            for e, s, w in zip(edges, scores, weights)]
    return {"p": rows, "n": [name]}


def _placements(run: RunFile, lam: float, distal: np.ndarray) -> Iterator[dict]:
    """The placement object of every aligned read, in read order, reading the run in blocks."""
    n_edges = len(distal)
    for lo in range(0, run.n_reads, READ_BLOCK):
        block = slice(lo, min(lo + READ_BLOCK, run.n_reads))
        aligned = np.flatnonzero(run.column("status", block) == STATUS_ALIGNED)
        if not len(aligned):
            continue
        names = run.names(block)[aligned]
        all_edges = run.column("candidates/edge", block)[aligned]
        all_scores = run.column("candidates/score", block)[aligned]
        for name, edges, scores in zip(names, all_edges, all_scores):
            used = edges >= 0
            edges, scores = edges[used], scores[used]
            if not len(edges):
                raise run.damaged(f"read {name!r} is aligned but has no candidate edge")
            if edges.max() >= n_edges:
                raise run.damaged(f"read {name!r} has candidate edge {int(edges.max())}; the tree has "
                                  f"edges 0..{n_edges - 1}")
            yield placement(str(name), edges, scores, lam, distal)


def write_jplace(run: RunFile, out: IO[str]) -> int:
    """Write `run`'s placements as a jplace v3 document to the text stream `out`.

    Returns the number of reads left out (status other than "aligned").
    """
    tree = run.newick_numbered
    try:
        lengths = edge_lengths(tree)
    except ValueError as error:
        raise run.damaged(f"/tree/newick_numbered is not a jplace-numbered tree: {error}") from None
    distal = np.where(np.isnan(lengths), 0.0, lengths / 2.0)
    parameters = run.record.get("parameters")
    mismatch = parameters.get("mismatch") if isinstance(parameters, dict) else None
    lam = weight_scale(mismatch)
    metadata = {
        "invocation": str(run.attrs.get("command_line", "")),
        "software": "papara-py",
        "papara_py_version": str(run.attrs.get("version", "")),
        "exported_by": f"papara-py {__version__} export --format jplace",
        "mismatch": mismatch,
        "weight_scale": lam,
        "placement_rule": WEIGHT_RULE,
    }
    out.write('{\n"tree": ' + json.dumps(tree, ensure_ascii=False) + ',\n"placements": [\n')
    written = 0
    for item in _placements(run, lam, distal):
        out.write((",\n" if written else "") + json.dumps(item, ensure_ascii=False, allow_nan=False))
        written += 1
    out.write('\n],\n"metadata": ' + json.dumps(metadata) + ',\n"version": ' + str(JPLACE_VERSION)
              + ',\n"fields": ' + json.dumps(list(FIELDS)) + "\n}\n")
    return run.n_reads - written
