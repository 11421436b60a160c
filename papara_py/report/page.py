"""`papara-py report`: a run file as one self-contained HTML page (and/or PNG figures).

Biologists check a run by looking at it: where on the tree the sample landed, which region of
the gene the reads cover, which reads do not fit the reference at all, how sure the best branch
is, and what was run on what. This module reads the run file (DESIGN 7) into the few arrays
those questions need (report/run_view.load_run; per-read data in bounded chunks), derives the
statistics (`find_outliers`, the one outlier rule, from model/outliers.py, which the exports apply
too; report/placement.py), has `report_figures` draw them and writes a single HTML file with the
PNGs embedded as base64 and the CSS inline, so it can be mailed or archived as one file. Outputs are written atomically, like every papara-py output.
"""

from __future__ import annotations

import base64
import html
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from papara_py.errors import InputError
from papara_py.io.outputs import atomic_path
from papara_py.model.outliers import Outliers
from papara_py.report.placement import (
    PlacementConfidence,
    best_branch_counts,
    placement_confidence,
)
from papara_py.report.run_view import PP_CODES, RunView, load_run

if TYPE_CHECKING:  # matplotlib and Bio.Phylo are imported when a report is built, not with this module
    from papara_py.report.tree_drawing import NumberedTree

#: Rows of the tree drawing; larger trees are collapsed to this many (see NumberedTree.display).
DEFAULT_MAX_TIPS = 150
#: Rows of the outlier and branch tables in the HTML (all counts are still given).
TABLE_ROWS = 200
TOP_BRANCHES = 20


#: The figures a report may draw (`--png DIR` writes DIR/NAME.png; confidence where the run has candidates).
FIGURES = ("tree", "coverage", "scores", "confidence")


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
    outliers = run.outliers
    group = np.where(aligned, 0, -1)
    group[outliers.indices] = 1
    placed = group == 0
    shown = aligned & (run.length > 0)  # a read of N / X alone has no penalty per residue to draw
    edge_reads = best_branch_counts(run.candidate_edge[placed], run.candidate_score[placed], tree.n_edges)
    confidence = placement_confidence(run.candidate_edge[placed], run.candidate_score[placed],
                                      tree.edge_ends, mismatch)
    display = tree.display(edge_reads, max(max_tips, 3))
    drawn = {
        "tree": figures.tree_figure(display, edge_reads, len(outliers.indices)),
        "coverage": figures.coverage_figure(*run.read_depth(group, 2), run.occupancy),
        "scores": figures.score_figure(outliers.per_residue[shown], run.length[shown], group[shown] == 1,
                                       outliers.null),
    }
    if confidence is not None:
        drawn["confidence"] = figures.confidence_figure(confidence.gap, confidence.n_close, confidence.connected,
                                                        confidence.margin, confidence.k)
    assert set(drawn) <= set(FIGURES), "a figure missing from FIGURES escapes the output checks (cli)"
    report = Report({name: figures.png_bytes(figure, tight=name == "tree") for name, figure in drawn.items()})
    outlier_reads = best_branch_counts(run.candidate_edge[group == 1], run.candidate_score[group == 1], tree.n_edges)
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


def _percent(part: float, whole: float) -> str:
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
             + (f"<span class=\"{'warn' if n_outliers else 'ok'}\">{n_outliers} of them are outliers</span> "
                f"({_percent(n_outliers, n_aligned)}), {n_aligned - n_outliers} fit the reference.</p>"
                if n_aligned else "<span class=\"warn\">none fits it</span>.</p>"),
             f"<p class=\"muted\">{_e(run.path)} · report made "
             f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}</p>"]
    parts += _tree_section(tree, edge_reads, outlier_reads, hidden, figures["tree"])
    parts += _coverage_section(figures["coverage"])
    parts += _score_section(run, outliers, figures["scores"])
    parts += _posterior_section(run.pp_counts, run.parameters.get("temperature"))
    parts += _confidence_section(confidence, figures.get("confidence"))
    parts += _record_section(run)
    parts.append("</body></html>")
    return "\n".join(parts)


def _tree_section(tree: NumberedTree, edge_reads: np.ndarray, outlier_reads: np.ndarray, hidden: dict,
                  figure: bytes) -> list[str]:
    from papara_py.report.figures import count_text

    placed = float(edge_reads.sum())
    top = np.argsort(-edge_reads, kind="stable")[:TOP_BRANCHES]
    top = top[edge_reads[top] > 0]
    rows = [[int(e), count_text(edge_reads[e]), _percent(edge_reads[e], placed), count_text(outlier_reads[e]),
             tree.beyond(int(e))] for e in top]
    collapsed = (f" The tree has {tree.n_tips} taxa, too many for one row each: {len(hidden)} subtrees are "
                 f"collapsed into one row each (triangles), those holding the most reads opened first; a "
                 f"triangle's colour and label give the best-branch counts of the branches inside it."
                 if hidden else "")
    return ["<h2>On which branches do the reads score best?</h2>",
            "<p>The reference tree, each branch coloured and labelled with its <b>best-branch count</b>: the "
            "reads whose best alignment score is on that branch. A read whose best score is shared by several "
            "of its candidate branches (a tie) counts an equal share on each (1/2, 1/3, ...), so counts may "
            "be fractions; grey branches are no read's best. These are counts of where papara-py's scores "
            "are best, <b>not placements</b>: a placement program (EPA-ng, pplacer) weighs every branch by "
            "likelihood and may put a read elsewhere. Where a tip's branch is too short to hold its count, "
            "the count follows the tip's name. Outliers (next sections) are not counted: a read that fits "
            "no branch well has no meaningful best branch. The tree is unrooted and drawn from the node "
            "written outermost in the Newick." + collapsed + "</p>",
            _image(figure, "reference tree coloured by best-branch counts"),
            "<h3>Branches with the highest best-branch counts</h3>"
            "<p class=\"muted\">Branch numbers are the <code>{n}</code> edge numbers of "
            "<code>/tree/newick_numbered</code> (jplace convention); a branch leads to the taxa listed, "
            "as seen from the top of the Newick.</p>",
            _table(["branch", "best-branch count", "of the reads counted", "outliers' count there", "leads to"],
                   rows, {0, 1, 2, 3})
            if rows else "<p>No read was aligned.</p>"]


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
    rows = [[name, int(run.length[q]), int(run.score[q]), _per_residue(outliers.per_residue[q]), int(run.best_edge[q]),
             run.strand[q]] for q, name in zip(listed, run.names(listed))]
    more = len(outliers.indices) - len(listed)
    statuses, counts = np.unique(run.status[run.status != "aligned"].astype(str), return_counts=True)
    not_aligned = dict(zip(statuses.tolist(), counts.tolist()))
    parts = ["<h2>How well do the reads fit?</h2>",
             "<p>Each aligned read's best score (a penalty: 0 is a perfect fit) divided by its length (its "
             "residues but N or X, which fit any column at no cost), so reads of different lengths compare. "
             "Reads that fit as badly as random sequence are usually from another gene or organism, "
             "chimeras, or reverse complements of the reference strand.</p>",
             _image(figure, "distribution of best score per residue"),
             f"<p><b>Outlier rule.</b> {_e(outliers.rule())}</p>"]
    if not_aligned:
        parts.append("<p>Not aligned (in no figure): "
                     + ", ".join(f"{n} {_e(s)}" for s, n in not_aligned.items()) + ".</p>")
    if rows:
        parts.append(f"<h3>Outliers: {len(outliers.indices)} reads, worst first</h3>")
        parts.append(_table(["read", "length (N, X left out)", "score", "per residue", "best branch", "strand"], rows,
                            {1, 2, 3, 4}))
        if more:
            parts.append(f"<p class=\"muted\">… and {more} more (in the run file: aligned reads whose "
                         f"score / length exceeds the threshold at their length).</p>")
    else:
        parts.append("<h3>Outliers: none</h3>")
    return parts


def _per_residue(value: float) -> str:
    """A penalty per residue for the outlier table; "-" for a read of N / X alone (it has none)."""
    return "-" if np.isnan(value) else f"{value:.3f}"


def _posterior_section(pp_counts: np.ndarray, temperature: object) -> list[str]:
    """How sure the residues' columns are: the PP codes' distribution (hmmalign's convention)."""
    head = "<h2>How sure is each residue's column?</h2>"
    total = int(pp_counts.sum())
    if not total and temperature in (0, None):
        return [head, f"<p>This run has no posterior probabilities (temperature {_e(temperature)}: the "
                      "Viterbi traceback of the best branch, as the paper's Eq. 1 preset runs it).</p>"]
    if not total:
        return [head, "<p>No read of this run fits the reference (none was aligned, or all are outliers), so "
                      "there are no posterior probabilities to show.</p>"]
    labels = ["below 0.05"] + [f"{d / 10:.1f} ± 0.05" for d in range(1, 10)] + ["0.95 and above"]
    rows = [[code, label, f"{int(n):,}", _percent(n, total)] for code, label, n in zip(PP_CODES, labels, pp_counts)]
    expected = float(np.dot(pp_counts, [0.0, *(d / 10 for d in range(1, 10)), 0.975]) / total)
    return [head,
            "<p>Each residue's posterior probability (PP), in the reads that fit the reference: the share of the "
            "model's alignments, pooled over the read's candidate branches by their weights, that put the residue"
            " where papara-py put it (DESIGN.md section 5; <code>/reads/pp</code>, and <code>#=GR name PP</code> "
            "in the Stockholm export, coded as hmmalign codes it). Low values mark residues whose column is "
            f"uncertain: near indels, in variable regions, or in reads that fit the reference badly. {total:,} "
            f"residues; their PP codes average about {expected:.2f}.</p>",
            _table(["PP code", "posterior probability", "residues", "share"], rows, {2, 3})]


def _confidence_section(confidence: PlacementConfidence | None, figure: bytes | None) -> list[str]:
    head = "<h2>How sure is the best branch?</h2>"
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


def _plain(value: object) -> str:
    """A run-record value in words for a table cell: floats to 3 places, integers grouped,
    mappings as "key value; key value" and lists comma-separated (never JSON)."""
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "-"}[value]
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return "; ".join(f"{key} {_plain(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(item) for item in value)
    return str(value)


#: The run's stages in the order a run goes through them (DESIGN 8; README "/run attrs"):
#: timings_seconds' keys, each with what it measured. Keys not listed follow, then the total.
_TIMINGS = (("input", "reading the tree and the alignment"),
            ("reads", "parsing the reads (on a thread of its own, beside the rest)"),
            ("reads_wait", "waiting for the reads"),
            ("jit_wait", "waiting for numba's kernels (compiled on the first run, else loaded)"),
            ("profiles", "edge profiles"),
            ("devices_wait", "waiting for the GPUs to start"),
            ("build_blocks", "building the blocks of edge profiles"),
            ("strand", "deciding each read's strand"),
            ("scoring", "scoring every read against the edges"),
            ("run_scoring", "scoring, the run's engine until this sample's last batch"),
            ("traceback", "decoding the alignments (the posterior step)"),
            ("output", "writing the run file"),
            ("merge", "merging the shards"))

#: The scoring parameters in the order DESIGN 4 introduces them: (key, label, option).
_PARAMETERS = (("preset", "preset the penalties equal", "--preset"),
               ("mismatch", "mismatch", "--mismatch"),
               ("near_mismatch", "near mismatch (a near state)", "--near-mismatch"),
               ("cgap", "residue in a column the tree says is a gap", "--cgap"),
               ("gap_open", "gap opening in the read", "--gap-open"),
               ("gap_extend", "gap extension in the read", "--gap-extend"),
               ("insertion", "residue between reference columns", "--insertion"),
               ("column_weight", "column profile cost weight", "--column-weight"),
               ("temperature", "posterior decoding's temperature (0: Viterbi traceback)", "--temperature"),
               ("placement_temperature", "edge weights' temperature", "--placement-temperature"))


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else _plain(value)


def _seconds(value: object) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return _plain(value)
    return f"{float(value):.3f} s" if value < 10 else f"{float(value):,.1f} s"


def _strand_counts(counts: dict) -> str:
    return (f"{counts.get('+', 0):,} as given (+), {counts.get('-', 0):,} reverse-complemented (−); "
            f"{counts.get('scored_both', 0):,} scored both ways")


def _threads(threads: object) -> str:
    if isinstance(threads, dict):
        return f"{threads.get('count', '?')} ({threads.get('source', 'source not recorded')})"
    return _plain(threads)


def _traceback(traced: object) -> str:
    if not isinstance(traced, dict):
        return _plain(traced)
    batches = traced.get("batches") or {}
    parts = [f"on {traced.get('device', '?')}",
             "batches: " + ", ".join(f"{n:,} on {where}" for where, n in batches.items() if n) if batches else ""]
    return "; ".join(p for p in parts if p)


def gcups_text(gcups: float) -> str:
    """A scoring speed for people, as the report and the run's summary line both print it: one
    decimal from 1 GCUPS up, two significant digits below (a small or first run's 0.06 GCUPS would
    read as 0.0)."""
    return f"{gcups:.1f}" if gcups >= 1 else f"{gcups:.2g}"


def _gpcu(value: object) -> str:
    return f"{gcups_text(float(value))} GCUPS (10⁹ DP cells a second, while scoring)" \
        if isinstance(value, (int, float)) else _plain(value)


#: The run record's other attributes, in the order a reader asks about them: (key, label, format).
_RUN_ROWS = (("alphabet", "alphabet", _plain),
             ("n_columns", "reference alignment columns", _count),
             ("n_edges", "tree branches (edges)", _count),
             ("candidates_k", "candidate branches kept per read (K)", _count),
             ("near_states", "near states", _plain),
             ("strand", "strand mode (--strand)", _plain),
             ("strand_counts", "reads by strand", lambda v: _strand_counts(v) if isinstance(v, dict) else _plain(v)),
             ("device", "device asked for (--device)", _plain),
             ("device_choice", "why --device auto ran on the CPU", _plain),
             ("unusable_gpus", "GPUs that could not be used", _plain),
             ("threads", "threads (and why that many)", _threads),
             ("lanes", "CPU lanes: edges per block", _count),
             ("cells", "DP cells computed", lambda v: f"{_count(v)} cells"),
             ("gcups", "scoring speed", _gpcu),
             ("gpu_device_seconds", "GPU device time (--gpu-profile)", _plain),
             ("traceback", "posterior step", _traceback),
             ("sample", "sample of a run of several", _plain),
             ("shard", "shard of an array job", _plain),
             ("n_shards", "shards merged", _count),
             ("merged_shards", "merged shards", _plain),
             ("profiles", "edge profiles from", _plain))
_RECORD_SHOWN = {"parameters", "checksums_sha256", "inputs", "timings_seconds", "consumers", "status_counts",
                 "search", "edges_scored_fraction"}
#: The consumers' statistics, as columns: (key, heading).
_CONSUMER_COLUMNS = (("blocks", "blocks"), ("edges", "edges"), ("cells", "DP cells"), ("calls", "calls"),
                     ("busy_seconds", "busy (s)"))


def _record_section(run: RunView) -> list[str]:
    """The run record (/run attributes) as labelled rows with their units, in the order a reader
    asks about them: what ran on what inputs, with which parameters, on which engine, how long
    each stage took, which device did what, and the reads by status."""
    attrs, record = run.file_attrs, run.run_attrs
    parts = ["<h2>Run record</h2>",
             f"<p>papara-py {_e(attrs.get('version', '?'))} (file format {_e(attrs.get('format_version', '?'))})"
             f"</p><p><code>{_e(attrs.get('command_line', ''))}</code></p>"]
    inputs, sums = record.get("inputs") or {}, record.get("checksums_sha256") or {}
    if inputs or sums:
        order = [k for k in ("tree", "alignment", "reads") if k in inputs or k in sums]
        order += sorted((set(inputs) | set(sums)) - set(order))
        parts.append("<h3>Inputs</h3>" + _table(["input", "path", "sha256"],
                                                [[k, inputs.get(k, ""), sums.get(k, "")] for k in order]))
    parameters = record.get("parameters") or {}
    if parameters:
        def value(v: object) -> str:
            return "(none: another set)" if v is None else f"{v:g}" if isinstance(v, float) else _plain(v)

        known = [(label, value(parameters[key]), option) for key, label, option in _PARAMETERS if key in parameters]
        known += [(key, value(v), "") for key, v in sorted(parameters.items())
                  if key not in {k for k, _, _ in _PARAMETERS}]
        parts.append("<h3>Scoring parameters</h3><p class=\"muted\">Penalties in score units (a read's score is "
                     "their sum along its alignment; lower is better); 0 turns a setting off.</p>"
                     + _table(["parameter", "value", "option"], [list(row) for row in known], {1}))
    shown_elsewhere = {"cells"} if record.get("search") else set()  # the search's table has them
    rows = [[label, fmt(record[key])] for key, label, fmt in _RUN_ROWS if key in record and key not in shown_elsewhere]
    listed = {key for key, _, _ in _RUN_ROWS} | _RECORD_SHOWN
    rows += [[key, _plain(value)] for key, value in sorted(record.items()) if key not in listed]
    if rows:
        parts.append("<h3>Engine and run</h3>" + _table(["what", "value"], rows))
    parts += _search_section(record)
    timings = record.get("timings_seconds") or {}
    if timings:
        known = dict(_TIMINGS)
        ordered = [(known[key], timings[key]) for key, _ in _TIMINGS if key in timings]
        ordered += [(key, value) for key, value in timings.items() if key not in known and key != "total"]
        if "total" in timings:
            ordered.append(("total: the run from start to its file complete (wall time)", timings["total"]))
        parts.append("<h3>Timings</h3><p class=\"muted\">In the order of the run's stages. Stages overlap "
                     "(the reads are parsed while the rest runs; one batch is traced back while the next is "
                     "scored), so they do not add up to the total.</p>"
                     + _table(["stage", "time"], [[what, _seconds(value)] for what, value in ordered], {1}))
    consumers = record.get("consumers") or {}
    if consumers:
        present = {key for stats in consumers.values() for key in stats}
        columns = [(key, head) for key, head in _CONSUMER_COLUMNS if key in present]
        columns += [(key, key) for key in sorted(present - {k for k, _ in _CONSUMER_COLUMNS})]
        parts.append("<h3>Devices: the work each consumer took</h3><p class=\"muted\">A CPU worker thread "
                     "(cpu-N) or a GPU's feeder thread (gpu-N:NAME/feeder-F); calls are kernel launches or CPU "
                     "work items.</p>" + _table(
                         ["consumer", *[head for _, head in columns]],
                         [[name, *[(f"{float(stats[key]):.2f}" if key == "busy_seconds" else _count(stats[key]))
                                   if key in stats else "" for key, _ in columns]]
                          for name, stats in sorted(consumers.items())],
                         set(range(1, len(columns) + 1))))
    counts = record.get("status_counts") or {}
    if counts:
        parts.append("<h3>Reads by status</h3>" + _table(
            ["status", "reads"], [[status, _count(n)] for status, n in sorted(counts.items(),
                                                                              key=lambda item: item[0] != "aligned")],
            {1}))
    return parts


def _search_section(record: dict) -> list[str]:
    """How the candidate edges were searched (--search): the mode, its settings, the cells
    computed and the share of the edges each read was scored against (DESIGN.md 6a)."""
    search = record.get("search")
    if not search:  # run files written before --search existed: every edge
        return []
    fraction = record.get("edges_scored_fraction") or {}
    settings = ", ".join(f"{key} {_plain(value)}" for key, value in sorted(search.items()) if key != "mode")
    rows = [["mode", search.get("mode", "?") + (f" ({settings})" if settings else "")],
            ["DP cells computed", _plain(record.get("cells", ""))]]
    rows += [[f"edges scored per read, {key}", f"{float(fraction[key]):.1%}"]
             for key in ("mean", "min", "max") if key in fraction]
    return ["<h3>Search</h3><p class=\"muted\">exhaustive scores every read against every edge; guided scores "
            "each read against the central edges of clusters of the tree, then inside the best clusters, "
            "widening until its best edges are surrounded by scored edges (exact DP for every edge "
            "scored).</p>" + _table(["search", "value"], rows)]
