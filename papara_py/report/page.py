"""`papara-py report`: a run file as one self-contained HTML page (and/or PNG figures).

Biologists check a run by looking at it: where on the tree the sample landed, which region of
the gene the reads cover, which reads do not fit the reference at all, how sure the best branch
is, and what was run on what. This module reads the run file (DESIGN 7) into the few arrays
those questions need (`load_run`; per-read data in bounded chunks), derives the statistics
(`find_outliers`, `placement_confidence`), has `report_figures` draw them and writes a single
HTML file with the PNGs embedded as base64 and the CSS inline, so it can be mailed or archived
as one file. Outputs are written atomically, like every papara-py output.
"""

from __future__ import annotations

import base64
import html
import json
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from papara_py.errors import InputError
from papara_py.io.outputs import atomic_path
from papara_py.io.run_file import RunFile
from papara_py.phylo.encoding import IS_GAP

if TYPE_CHECKING:  # matplotlib and Bio.Phylo are imported when a report is built, not with this module
    from papara_py.report.tree_drawing import NumberedTree

#: Rows of the tree drawing; larger trees are collapsed to this many (see NumberedTree.display).
DEFAULT_MAX_TIPS = 150
#: Outlier rule (see `find_outliers`): robust z above which a read is unusual for its sample ...
OUTLIER_ROBUST_Z = 5.0
#: ... but never flagged below this many mismatches per residue (sequencing errors, divergence)
OUTLIER_FLOOR = 0.1
#: ... and always flagged above this many (one residue in four mismatching: random-like).
OUTLIER_CEILING = 0.25
#: Rows of the outlier and branch tables in the HTML (all counts are still given).
TABLE_ROWS = 200
TOP_BRANCHES = 20
_GAP_BYTE = ord("-")


@dataclass
class RunView:
    """What the report needs from one run file; per-read arrays are over all Q reads."""

    path: str
    file_attrs: dict
    run_attrs: dict
    newick_numbered: str
    status: np.ndarray           # str [Q]
    best_edge: np.ndarray        # int32 [Q], -1 if not aligned
    score: np.ndarray            # int32 [Q]
    length: np.ndarray           # int64 [Q], residues of the read
    strand: np.ndarray           # str [Q]
    candidate_edge: np.ndarray   # int32 [Q, K]
    candidate_score: np.ndarray  # int32 [Q, K]
    occupancy: np.ndarray        # float64 [m], share of reference rows with a residue there

    @property
    def aligned(self) -> np.ndarray:
        """bool [Q]: reads that were aligned and placed (status "aligned", an edge)."""
        return (self.status == "aligned") & (self.best_edge >= 0)

    @property
    def parameters(self) -> dict:
        return self.run_attrs.get("parameters") or {}

    @property
    def n_columns(self) -> int:
        return len(self.occupancy)

    def names(self, indices: np.ndarray) -> list[str]:
        """Names of the reads at `indices`, in that order (read from the file on demand)."""
        if len(indices) == 0:
            return []
        order = np.argsort(indices)
        with RunFile(self.path) as run:
            found = run.names(np.asarray(indices)[order])
        names = [""] * len(indices)
        for slot, name in zip(order, found):
            names[slot] = name
        return names

    def read_depth(self, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """Per group of reads and reference column: (reads with a residue, reads spanning it).

        Both int64 [n_groups, m]; `group[q]` is read q's group (-1: not counted). A read spans
        the columns from its first to its last residue, so spans show the region a read covers
        even where it has deletions or crosses insertion columns of a few taxa (common in large
        alignments, where residue counts alone look like a barcode). /reads/aligned is scanned
        in row blocks of about 32 MB, so this works for any number of reads.
        """
        residues = np.zeros((n_groups, self.n_columns), dtype=np.int64)
        changes = np.zeros((n_groups, self.n_columns + 1), dtype=np.int64)
        with RunFile(self.path) as run:
            start = 0
            for block in run.row_blocks("reads/aligned"):
                labels = group[start:start + len(block)]
                start += len(block)
                for g in range(n_groups):
                    filled = block[labels == g] != _GAP_BYTE
                    filled = filled[filled.any(axis=1)]
                    residues[g] += np.count_nonzero(filled, axis=0)
                    np.add.at(changes[g], np.argmax(filled, axis=1), 1)
                    np.add.at(changes[g], self.n_columns - np.argmax(filled[:, ::-1], axis=1), -1)
        return residues, np.cumsum(changes, axis=1)[:, :-1]


def load_run(path: str | os.PathLike) -> RunView:
    """Read what the report needs; an unreadable, foreign or damaged file is an InputError.

    The reference is scanned in chunks of about 32 MB; read names and /reads/aligned are not
    loaded (see `RunView.names` and `read_depth`), so memory stays bounded for millions of reads.
    """
    with RunFile(path) as run:
        length = np.zeros(run.n_reads, dtype=np.int64)
        step = 1 << 16  # strings: a bounded number at a time
        for start in range(0, len(length), step):
            length[start:start + step] = [len(s) for s in run.column("sequence", slice(start, start + step))]
        filled = np.zeros(run.n_columns, dtype=np.int64)
        for block in run.row_blocks("reference/alignment"):
            filled += np.count_nonzero(~IS_GAP[block], axis=0)
        return RunView(
            path=run.path,
            file_attrs=run.attrs,
            run_attrs=run.record,
            newick_numbered=run.newick_numbered,
            status=run.column("status"),
            best_edge=run.column("best_edge"),
            score=run.column("score"),
            length=length,
            strand=run.column("strand"),
            candidate_edge=run.column("candidates/edge"),
            candidate_score=run.column("candidates/score"),
            occupancy=filled / max(1, run.n_reference),
        )


@dataclass
class Outliers:
    """Reads whose best score per residue says they probably do not belong to this reference.

    per_residue: float [Q], best score / read length (NaN where not aligned).
    threshold:   penalty per residue above which an aligned read is an outlier.
    indices:     the outliers, worst first.
    """

    per_residue: np.ndarray
    threshold: float
    median: float
    robust_sd: float
    floor: float
    ceiling: float
    indices: np.ndarray

    def rule(self) -> str:
        """The rule in words, with this run's numbers."""
        return (f"A read is an outlier when its penalty per residue (best score / read length) exceeds "
                f"{self.threshold:.3f}. That is the sample's median ({self.median:.3f}) plus "
                f"{OUTLIER_ROBUST_Z:g} robust standard deviations ({self.robust_sd:.3f}: 1.4826 × the median "
                f"absolute deviation), kept between {self.floor:.3f} (one mismatch penalty in ten residues, so "
                f"that a few sequencing errors in a sample of near-perfect reads are not flagged) and "
                f"{self.ceiling:.3f} (one mismatch penalty in four residues: random sequence scores about one "
                f"in three, so a read above this fits hardly better than random sequence).")


def find_outliers(score: np.ndarray, length: np.ndarray, aligned: np.ndarray, mismatch: int) -> Outliers:
    """Flag aligned reads whose penalty per residue is unusual for the sample or random-like.

    threshold = min(ceiling, max(floor, median + 5 * 1.4826 * MAD)), with floor = 0.1 and
    ceiling = 0.25 mismatch penalties per residue. The robust part (median and MAD, not mean and
    SD, so the outliers do not hide themselves) finds reads unusual for this sample; the
    ceiling still flags them when most of the sample is off (e.g. reads of the other strand, or a
    contaminated sample, where the median itself is random-like); the floor keeps a sample of
    near-perfect reads from flagging reads with a few sequencing errors.
    """
    per_residue = np.full(len(score), np.nan)
    usable = aligned & (length > 0)
    per_residue[usable] = score[usable] / length[usable]
    values = per_residue[usable]
    median = float(np.median(values)) if values.size else 0.0
    robust_sd = 1.4826 * float(np.median(np.abs(values - median))) if values.size else 0.0
    unit = max(int(mismatch), 1)
    floor, ceiling = OUTLIER_FLOOR * unit, OUTLIER_CEILING * unit
    threshold = min(ceiling, max(floor, median + OUTLIER_ROBUST_Z * robust_sd))
    flagged = np.flatnonzero(usable & (np.nan_to_num(per_residue, nan=-1.0) > threshold))
    flagged = flagged[np.argsort(-per_residue[flagged], kind="stable")]
    return Outliers(per_residue, threshold, median, robust_sd, floor, ceiling, flagged)


@dataclass
class PlacementConfidence:
    """How clearly the best branch wins, per placed read (only when K >= 2 candidates are kept).

    gap:       second-best minus best score (0 = tie), -1 where no second candidate exists.
    n_close:   candidates scoring within `margin` of the best, the best included (K: K or more).
    connected: the candidates within `margin` form one connected piece of the tree (neighbouring
               branches: the read's region is clear, only the exact branch is not), else they
               lie in different parts of the tree.
    margin:    one mismatch penalty: a single substitution in the read could swap the two.
    """

    gap: np.ndarray
    n_close: np.ndarray
    connected: np.ndarray
    margin: int
    k: int

    @property
    def tied(self) -> int:
        return int(np.count_nonzero(self.gap == 0))

    @property
    def close(self) -> int:
        return int(np.count_nonzero((self.gap > 0) & (self.gap <= self.margin)))

    @property
    def distant(self) -> int:
        """Reads whose near-equal branches lie in different parts of the tree."""
        return int(np.count_nonzero((self.n_close > 1) & ~self.connected))


def placement_confidence(candidate_edge: np.ndarray, candidate_score: np.ndarray, edge_ends: np.ndarray,
                         margin: int) -> PlacementConfidence | None:
    """Ties and near-ties among the stored candidates of the given reads (rows).

    `edge_ends[e]` are the two nodes edge e joins (NumberedTree.edge_ends). None when fewer than
    two candidates are kept per read.
    """
    k = candidate_score.shape[1] if candidate_score.ndim == 2 else 0
    if k < 2:
        return None
    scores = candidate_score.astype(np.int64)
    present = (scores >= 0) & (candidate_edge >= 0)
    gap = np.where(present[:, 1], scores[:, 1] - scores[:, 0], -1)
    close = present & (scores - scores[:, :1] <= margin)
    connected = np.ones(len(scores), dtype=bool)
    step = 1 << 16  # bounds the [rows, K, K, 2, 2] comparison below
    for start in range(0, len(scores), step):
        rows = slice(start, start + step)
        connected[rows] = _connected(candidate_edge[rows], close[rows], edge_ends)
    return PlacementConfidence(gap, np.count_nonzero(close, axis=1), connected, max(int(margin), 0), k)


def _connected(edges: np.ndarray, chosen: np.ndarray, edge_ends: np.ndarray) -> np.ndarray:
    """bool [rows]: the chosen edges of each row (column 0 always among them) touch as one piece."""
    ends = edge_ends[np.where(chosen, edges, 0)]  # [rows, K, 2]
    touch = (ends[:, :, None, :, None] == ends[:, None, :, None, :]).any(axis=(3, 4))  # [rows, K, K]
    reached = np.zeros_like(chosen)
    reached[:, 0] = chosen[:, 0]
    for _ in range(chosen.shape[1] - 1):
        reached = chosen & (reached | (touch & reached[:, None, :]).any(axis=2))
    return (reached == chosen).all(axis=1)


@dataclass
class Report:
    """The figures (name -> PNG bytes) and HTML of one run."""

    figures: dict[str, bytes] = field(default_factory=dict)
    html: str = ""


def build_report(path: str | os.PathLike, max_tips: int = DEFAULT_MAX_TIPS) -> Report:
    """Read the run at `path`, draw every figure and assemble the HTML page.

    Outliers are left out of the tree, the coverage's main series and the confidence figure:
    their best branch and alignment say little when the read fits no branch well.
    """
    from papara_py.report import figures
    from papara_py.report.tree_drawing import NumberedTree

    run = load_run(path)
    tree = NumberedTree(run.newick_numbered, run.path)
    aligned = run.aligned
    if np.any(run.best_edge[aligned] >= tree.n_edges) or np.any(run.candidate_edge >= tree.n_edges):
        raise InputError(run.path, "/reads/best_edge or /reads/candidates/edge names edges the tree does not have")
    mismatch = int(run.parameters.get("mismatch", 3))
    outliers = find_outliers(run.score, run.length, aligned, mismatch)
    group = np.where(aligned, 0, -1)
    group[outliers.indices] = 1
    placed = group == 0
    edge_reads = np.bincount(run.best_edge[placed], minlength=tree.n_edges)
    confidence = placement_confidence(run.candidate_edge[placed], run.candidate_score[placed],
                                      tree.edge_ends, mismatch)
    display = tree.display(edge_reads, max(max_tips, 3))
    drawn = {
        "tree": figures.tree_figure(display, edge_reads, len(outliers.indices)),
        "coverage": figures.coverage_figure(*run.read_depth(group, 2), run.occupancy),
        "scores": figures.score_figure(outliers.per_residue[aligned], run.length[aligned],
                                       group[aligned] == 1, outliers.threshold),
    }
    if confidence is not None:
        drawn["confidence"] = figures.confidence_figure(confidence.gap, confidence.n_close, confidence.connected,
                                                        confidence.margin, confidence.k)
    report = Report({name: figures.png_bytes(figure) for name, figure in drawn.items()})
    outlier_reads = np.bincount(run.best_edge[group == 1], minlength=tree.n_edges)
    report.html = _html(run, tree, edge_reads, outlier_reads, display.hidden, outliers, confidence, report.figures)
    return report


def write_report(path: str | os.PathLike, html_path: str | os.PathLike | None = None,
                 png_dir: str | os.PathLike | None = None, max_tips: int = DEFAULT_MAX_TIPS) -> Report:
    """Build the report of run `path`; write the HTML to `html_path` and/or PNGs into `png_dir`.

    `png_dir` is created if missing (its parent must exist; removed again if writing fails). The
    files are written atomically, as a set.
    """
    if png_dir is not None:
        directory = Path(png_dir)
        if directory.exists() and not directory.is_dir():
            raise InputError(str(png_dir), "the --png path exists and is not a directory")
        if not directory.exists() and not directory.parent.is_dir():
            raise InputError(str(png_dir), f"cannot create it: {directory.parent} does not exist")
        if not os.access(directory if directory.exists() else directory.parent, os.W_OK):
            raise InputError(str(png_dir), "the --png directory is not writable")
    report = build_report(path, max_tips)
    created = png_dir is not None and not Path(png_dir).exists()
    if png_dir is not None:
        Path(png_dir).mkdir(exist_ok=True)
    try:
        # every file is written under its temporary name first and all are renamed at the end:
        # a failure (a full disk) leaves the previous set or none, never half of a new one
        with ExitStack() as stack:
            if png_dir is not None:
                for name, data in report.figures.items():
                    stack.enter_context(atomic_path(Path(png_dir) / f"{name}.png")).write_bytes(data)
            if html_path is not None:
                stack.enter_context(atomic_path(html_path)).write_text(report.html, encoding="utf-8")
    except BaseException:
        if created:
            try:
                Path(png_dir).rmdir()  # empty again: the temporaries are gone
            except OSError:
                pass
        raise
    return report


# --------------------------------------------------------------------------------------------
# HTML

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1250px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 2em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; } h3 { font-size: 1em; }
.summary { font-size: 1.05em; } .muted { color: #666; } .warn { color: #b42318; font-weight: 600; }
img { max-width: 100%; height: auto; display: block; margin: 0.8em 0; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: Menlo, Consolas, monospace; font-size: 0.92em; word-break: break-all; }
details { margin: 0.5em 0 1em; } summary { cursor: pointer; color: #1f5fa8; }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _table(header: list[str], rows: list[list[object]], numeric: set[int] = frozenset()) -> str:
    """An HTML table; columns whose index is in `numeric` are right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td class=\"num\">{_e(c)}</td>" if i in numeric else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _image(data: bytes, alt: str) -> str:
    return f'<img src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}" alt="{_e(alt)}">'


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _html(run: RunView, tree: NumberedTree, edge_reads: np.ndarray, outlier_reads: np.ndarray, hidden: dict,
          outliers: Outliers, confidence: PlacementConfidence | None, figures: dict[str, bytes]) -> str:
    n_reads, n_aligned = len(run.status), int(run.aligned.sum())
    n_outliers = len(outliers.indices)
    name = os.path.basename(run.path)
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>papara-py report: {_e(name)}</title><style>{_CSS}</style></head><body>",
             f"<h1>papara-py run report: {_e(name)}</h1>",
             f"<p class=\"summary\">{n_aligned} of {n_reads} reads aligned to a reference of {tree.n_tips} taxa "
             f"({tree.n_edges} branches, {run.n_columns} alignment columns); "
             f"<span class=\"{'warn' if n_outliers else 'ok'}\">{n_outliers} of them are outliers</span> "
             f"({_percent(n_outliers, n_aligned)}), {n_aligned - n_outliers} fit the reference.</p>",
             f"<p class=\"muted\">{_e(run.path)} · report made "
             f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}</p>"]
    parts += _tree_section(tree, edge_reads, outlier_reads, hidden, figures["tree"])
    parts += _coverage_section(figures["coverage"])
    parts += _score_section(run, outliers, figures["scores"])
    parts += _confidence_section(confidence, figures.get("confidence"))
    parts += _record_section(run)
    parts.append("</body></html>")
    return "\n".join(parts)


def _tree_section(tree: NumberedTree, edge_reads: np.ndarray, outlier_reads: np.ndarray, hidden: dict,
                  figure: bytes) -> list[str]:
    placed = int(edge_reads.sum())
    top = np.argsort(-edge_reads, kind="stable")[:TOP_BRANCHES]
    top = top[edge_reads[top] > 0]
    rows = [[int(e), int(edge_reads[e]), _percent(int(edge_reads[e]), placed), int(outlier_reads[e]),
             tree.beyond(int(e))] for e in top]
    collapsed = (f" The tree has {tree.n_tips} taxa, too many for one row each: {len(hidden)} subtrees are "
                 f"collapsed into one row each (triangles), those holding the most reads opened first; a "
                 f"triangle's colour and label give the reads placed on branches inside it."
                 if hidden else "")
    return ["<h2>Where did the sample land?</h2>",
            "<p>The reference tree, each branch coloured and labelled with the number of reads whose best "
            "branch it is (lowest score; ties go to the lower branch number); grey branches received no "
            "read. Where a tip's branch is too short to hold its number, the number follows the tip's name. "
            "Outliers (next sections) are not counted: a read that fits no branch well has no meaningful "
            "best branch. The tree is unrooted and drawn from the node written outermost in the Newick." +
            collapsed + "</p>",
            _image(figure, "reference tree coloured by reads per branch"),
            "<h3>Branches with the most reads</h3>"
            "<p class=\"muted\">Branch numbers are the <code>{n}</code> edge numbers of "
            "<code>/tree/newick_numbered</code> (jplace convention); a branch leads to the taxa listed, "
            "as seen from the top of the Newick.</p>",
            _table(["branch", "reads", "of placed", "outliers also there", "leads to"], rows, {0, 1, 2, 3})
            if rows else "<p>No read was placed.</p>"]


def _coverage_section(figure: bytes) -> list[str]:
    return ["<h2>Which region of the gene do the reads cover?</h2>",
            "<p>Top: for each reference alignment column, the reads that fit the reference and span it "
            "(from their first to their last residue; light blue) and those with a residue in it (dark "
            "blue; fewer where a read has a deletion or the column is an insertion of a few reference taxa). "
            "Outliers spanning the column are stacked on top in red, since their alignment is doubtful. "
            "Bottom: the share of reference sequences with a residue in the column.</p>",
            _image(figure, "read coverage along the reference columns")]


def _score_section(run: RunView, outliers: Outliers, figure: bytes) -> list[str]:
    listed = outliers.indices[:TABLE_ROWS]
    rows = [[name, int(run.length[q]), int(run.score[q]), f"{outliers.per_residue[q]:.3f}", int(run.best_edge[q]),
             run.strand[q]] for q, name in zip(listed, run.names(listed))]
    more = len(outliers.indices) - len(listed)
    statuses, counts = np.unique(run.status[run.status != "aligned"].astype(str), return_counts=True)
    not_aligned = dict(zip(statuses.tolist(), counts.tolist()))
    parts = ["<h2>How well do the reads fit?</h2>",
             "<p>Each aligned read's best score (a penalty: 0 is a perfect fit) divided by its length, so "
             "reads of different lengths compare. Reads that fit as badly as random sequence are usually "
             "from another gene or organism, chimeras, or reverse complements of the reference strand.</p>",
             _image(figure, "distribution of best score per residue"),
             f"<p><b>Outlier rule.</b> {_e(outliers.rule())}</p>"]
    if not_aligned:
        parts.append("<p>Not aligned (in no figure): "
                     + ", ".join(f"{n} {_e(s)}" for s, n in not_aligned.items()) + ".</p>")
    if rows:
        parts.append(f"<h3>Outliers: {len(outliers.indices)} reads, worst first</h3>")
        parts.append(_table(["read", "length", "score", "per residue", "best branch", "strand"], rows,
                            {1, 2, 3, 4}))
        if more:
            parts.append(f"<p class=\"muted\">… and {more} more (in the run file: aligned reads whose "
                         f"score / length exceeds {outliers.threshold:.3f}).</p>")
    else:
        parts.append("<h3>Outliers: none</h3>")
    return parts


def _confidence_section(confidence: PlacementConfidence | None, figure: bytes | None) -> list[str]:
    head = "<h2>How sure is the placement?</h2>"
    if confidence is None or figure is None:
        return [head, "<p>Only the best branch was kept per read (<code>--candidates 1</code>), so ties and "
                      "near-ties cannot be shown.</p>"]
    n = len(confidence.gap)
    clear = n - confidence.tied - confidence.close
    return [head,
            f"<p>Left: for each placed read (outliers left out), how much worse its second-best branch scores "
            f"than its best, among the {confidence.k} candidates kept. 0 is a tie: the best branch is one of "
            f"several equally good ones; up to {confidence.margin} (one mismatch penalty), a single "
            f"sequencing error could swap them. Right: how many branches score within {confidence.margin} of "
            f"the best. When they are neighbours (one connected piece of the tree) the read's region is clear "
            f"and only the exact branch is not, which is common: neighbouring branches have nearly the same "
            f"ancestral profile. When they lie in different parts of the tree, the placement is "
            f"uncertain.</p>",
            f"<p>Tied: {confidence.tied} ({_percent(confidence.tied, n)}); second best within "
            f"{confidence.margin}: {confidence.close} ({_percent(confidence.close, n)}); clear: {clear} "
            f"({_percent(clear, n)}). Near-equal branches in different parts of the tree: "
            f"{confidence.distant} ({_percent(confidence.distant, n)}).</p>",
            _image(figure, "placement confidence: score gap to the second-best branch")]


_TIMING_ORDER = ("input", "strand", "profiles", "build_blocks", "scoring", "traceback", "output", "total")
_RECORD_SHOWN = {"parameters", "checksums_sha256", "inputs", "timings_seconds", "consumers", "status_counts",
                 "search", "edges_scored_fraction"}


def _record_section(run: RunView) -> list[str]:
    attrs, record = run.file_attrs, run.run_attrs
    parts = ["<h2>Run record</h2>",
             f"<p>papara-py {_e(attrs.get('version', '?'))} (file format {_e(attrs.get('format_version', '?'))})"
             f"</p><p><code>{_e(attrs.get('command_line', ''))}</code></p>"]
    inputs, sums = record.get("inputs") or {}, record.get("checksums_sha256") or {}
    if inputs or sums:
        parts.append("<h3>Inputs</h3>" + _table(["input", "path", "sha256"],
                                                [[k, inputs.get(k, ""), sums.get(k, "")]
                                                 for k in sorted(set(inputs) | set(sums))]))
    parameters = record.get("parameters") or {}
    if parameters:
        parts.append("<h3>Scoring parameters</h3>" + _table(list(parameters), [list(parameters.values())],
                                                            set(range(len(parameters)))))
    overview = {key: value for key, value in record.items() if key not in _RECORD_SHOWN}
    if overview:
        parts.append("<h3>Engine and run</h3>" + _table(
            ["what", "value", "attribute"],
            [[_RECORD_LABELS.get(k, k), _fmt(v), k] for k, v in sorted(overview.items())]))
    parts += _search_section(record)
    timings = record.get("timings_seconds") or {}
    if timings:
        ordered = [k for k in _TIMING_ORDER if k in timings] + sorted(set(timings) - set(_TIMING_ORDER))
        parts.append("<h3>Timings</h3><p class=\"muted\">Stages overlap (tracing back one batch of reads "
                     "runs while the next is scored); total is the wall time of the run.</p>"
                     + _table(["stage", "seconds"], [[k, f"{float(timings[k]):.3f}"] for k in ordered], {1}))
    consumers = record.get("consumers") or {}
    if consumers:
        columns = sorted({key for stats in consumers.values() for key in stats})
        parts.append("<h3>Devices (work each consumer took)</h3>" + _table(
            ["consumer", *columns], [[name, *[_fmt(stats.get(c, "")) for c in columns]]
                                     for name, stats in sorted(consumers.items())],
            set(range(1, len(columns) + 1))))
    counts = record.get("status_counts") or {}
    if counts:
        parts.append("<h3>Reads by status</h3>" + _table(["status", "reads"], sorted(counts.items()), {1}))
    return parts


def _search_section(record: dict) -> list[str]:
    """How the candidate edges were searched (--search): the mode, its settings, the cells
    computed and the share of the edges each read was scored against (DESIGN.md 6a)."""
    search = record.get("search")
    if not search:  # run files written before --search existed: every edge
        return []
    fraction = record.get("edges_scored_fraction") or {}
    settings = ", ".join(f"{key} {_fmt(value)}" for key, value in sorted(search.items()) if key != "mode")
    rows = [["mode", search.get("mode", "?") + (f" ({settings})" if settings else "")],
            ["DP cells computed", _fmt(record.get("cells", ""))]]
    rows += [[f"edges scored per read, {key}", f"{float(fraction[key]):.1%}"]
             for key in ("mean", "min", "max") if key in fraction]
    return ["<h3>Search</h3><p class=\"muted\">exhaustive scores every read against every edge; guided scores "
            "each read against the central edges of clusters of the tree, then inside the best clusters, "
            "widening until its best edges are surrounded by scored edges (exact DP for every edge "
            "scored).</p>" + _table(["what", "value"], rows)]


#: Plain words for the /run attributes of the "Engine and run" table (others appear by name).
_RECORD_LABELS = {"candidates_k": "candidate branches kept per read (K)", "cells": "DP cells scored",
                  "device": "device choice", "gcups": "GCUPS (scoring)", "lanes": "lanes (edges per block)",
                  "n_columns": "reference columns", "n_edges": "branches (edges)", "strand": "strand mode",
                  "strand_counts": "reads by strand"}


def _fmt(value: object) -> str:
    """A run-record value for a table cell: floats to 3 places, big integers grouped, JSON for the rest."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)
