"""The jplace export (`papara-py export RUN.h5 --format jplace`): each read's candidate edges.

jplace version 3 is the placement format EPA-ng, pplacer, guppy and gappa share (Matsen, Hoffman,
Gallagher and Stamatakis 2012, "A format for phylogenetic placements", PLoS ONE 7:e31009): one
JSON object with

- "tree": the run's `/tree/newick_numbered`, unchanged: the reference tree with a jplace edge
  number `{n}` after every branch (after its length, or after the label where it has none),
  edges numbered 0..E-1 in post-order of that string (DESIGN 3);
- "placements": one object per aligned read, `{"p": [row, ...], "n": [read name]}`, one row per
  candidate edge of `/reads/candidates` with a weight (the K best by (score, edge); -1 slots
  skipped), best first (below);
- "fields": the meaning of each row's values, `FIELDS`;
- "metadata": `invocation` (the command line of the run), the papara-py version that wrote the
  run and the one that exported it, and these rules in words;
- "version": 3.

papara-py places by its alignment model, not by a substitution model's likelihood. Each read's
candidates carry the weights of the posterior decoding (DESIGN 5, `/reads/candidates/weight`):
w_e = exp(-(F_e - F_min) / T_p) normalised over the read's candidates, where F_e = -T ln Z_e is
the free energy of all of the read's alignments to edge e at the run's temperature T and T_p the
run's placement temperature (at T = 0, the Viterbi traceback: the candidates tied at the best
score share the weight). So:

- "like_weight_ratio": w_e. The weights of a read sum to 1 (to the fixed-point resolution,
  2^-15). They are normalised over the K candidates stored in the run, not over every edge of the
  tree: raise `--candidates` for a fuller spread. Candidates whose weight is below that resolution
  (0 in the run file) carry none and are left out of the placement.
- "likelihood": ln w_e, the log of the normalised weight (a number, as the format's readers
  require), so that w_i = exp(L_i) / sum_j exp(L_j) as ML placement tools relate theirs. It is not
  comparable with likelihoods of EPA-ng or pplacer.
- "parsimony": the integer alignment score s_e of DESIGN 4 (a field name the jplace readers know).
- "distal_length": half the branch's length in the tree (0 where the branch has none), i.e. the
  read sits at the middle of the branch; papara-py estimates no branch positions.
- "pendant_length": 0 (papara-py estimates no pendant branch).

Rows are ordered by weight descending, then score, then edge number, so the first row is the
read's best-weighted edge.

The document is written atomically (`atomic_path`) and streamed: reads are taken from the run
file in blocks and each placement is JSON-encoded and written on its own, so a run of millions
of reads never becomes one Python object. Reads without an alignment, and those outside `keep`
(the outliers, unless `export --keep-outliers`), are left out; the caller (`export`) counts them
in a notice on stderr.
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
WEIGHT_RULE = ("like_weight_ratio = the candidate's posterior weight (DESIGN 5: exp(-(F_e - F_min) / T_p) "
               "normalised over the read's candidate edges, the run's K best; F_e the free energy of the read's "
               "alignments to the edge at temperature T, T_p the placement temperature); likelihood = "
               "ln(like_weight_ratio); parsimony = the alignment score; candidates of weight 0 left out")


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


def placement(name: str, edges: np.ndarray, scores: np.ndarray, weights: np.ndarray, distal: np.ndarray) -> dict:
    """One read's jplace placement object: rows of FIELDS for its candidates with a weight, best
    first (weight descending, then score, then edge number).

    `edges`, `scores`, `weights`: its candidates (slots with edge -1 already removed); `distal`:
    the distal length of every edge of the tree.
    """
    kept = weights > 0
    edges, scores, weights = edges[kept], scores[kept], weights[kept].astype(np.float64)
    order = np.lexsort((edges, scores, -weights))
    rows = [[int(edges[i]), math.log(weights[i]), float(weights[i]), float(distal[edges[i]]), 0.0, int(scores[i])]
            for i in order]
    return {"p": rows, "n": [name]}


def _placements(run: RunFile, distal: np.ndarray, keep: np.ndarray | None = None) -> Iterator[dict]:
    """The placement object of every aligned read (in `keep`, bool [Q], if given), in read order,
    reading the run in blocks."""
    n_edges = len(distal)
    for lo in range(0, run.n_reads, READ_BLOCK):
        block = slice(lo, min(lo + READ_BLOCK, run.n_reads))
        aligned = run.column("status", block) == STATUS_ALIGNED
        aligned = np.flatnonzero(aligned if keep is None else aligned & keep[block])
        if not len(aligned):
            continue
        names = run.names(block)[aligned]
        all_edges = run.column("candidates/edge", block)[aligned]
        all_scores = run.column("candidates/score", block)[aligned]
        all_weights = run.column("candidates/weight", block)[aligned]
        for name, edges, scores, weights in zip(names, all_edges, all_scores, all_weights):
            used = edges >= 0
            edges, scores, weights = edges[used], scores[used], weights[used]
            if not len(edges) or not (weights > 0).any():
                raise run.damaged(f"read {name!r} is aligned but has no weighted candidate edge")
            if edges.max() >= n_edges:
                raise run.damaged(f"read {name!r} has candidate edge {int(edges.max())}; the tree has "
                                  f"edges 0..{n_edges - 1}")
            yield placement(str(name), edges, scores, weights, distal)


def write_jplace(run: RunFile, out: IO[str], keep: np.ndarray | None = None) -> int:
    """Write `run`'s placements as a jplace v3 document to the text stream `out`: every aligned
    read, or those of them in `keep` (bool [Q] over the run's reads; None: all).

    Returns the number of reads left out (status other than "aligned", or not in `keep`).
    """
    tree = run.newick_numbered
    try:
        lengths = edge_lengths(tree)
    except ValueError as error:
        raise run.damaged(f"/tree/newick_numbered is not a jplace-numbered tree: {error}") from None
    distal = np.where(np.isnan(lengths), 0.0, lengths / 2.0)
    parameters = run.record.get("parameters")
    temperature = parameters.get("temperature", 0.0) if isinstance(parameters, dict) else None
    placement = parameters.get("placement_temperature", temperature) if isinstance(parameters, dict) else None
    metadata = {  # strings, as jplace readers expect (gappa ignores other values, with a notice)
        "invocation": str(run.attrs.get("command_line", "")),
        "software": "papara-py",
        "papara_py_version": str(run.attrs.get("version", "")),
        "exported_by": f"papara-py {__version__} export --format jplace",
        "temperature": "" if temperature is None else str(temperature),
        "placement_temperature": "" if placement is None else str(placement),
        "placement_rule": WEIGHT_RULE,
    }
    out.write('{\n"tree": ' + json.dumps(tree, ensure_ascii=False) + ',\n"placements": [\n')
    written = 0
    for item in _placements(run, distal, keep):
        out.write((",\n" if written else "") + json.dumps(item, ensure_ascii=False, allow_nan=False))
        written += 1
    out.write('\n],\n"metadata": ' + json.dumps(metadata) + ',\n"version": ' + str(JPLACE_VERSION)
              + ',\n"fields": ' + json.dumps(list(FIELDS)) + "\n}\n")
    return run.n_reads - written
