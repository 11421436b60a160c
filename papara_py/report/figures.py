"""The figures of `papara-py report`, drawn with matplotlib (and Bio.Phylo for the tree).

Each function takes plain arrays (computed by `page.py`) and returns a matplotlib `Figure`
built without pyplot, so drawing is headless, backend-independent and leaves no global figure
state behind; `png_bytes` renders one with the Agg canvas. Captions and the meaning of colours
are put into the figures themselves as well as the HTML, because PNGs get copied into slides
and lab notebooks without the page around them.
"""

from __future__ import annotations

import io
import re

import matplotlib
import matplotlib.ticker
import numpy as np
from Bio import Phylo
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from papara_py.model.outliers import OutlierNull
from papara_py.report.tree_drawing import DisplayTree, postorder

#: Reads per branch: light orange (one read) to dark red (most); grey means none.
READS_CMAP = matplotlib.colormaps["YlOrRd"].resampled(256)
NO_READS = "#c4c4c4"
FIT_COLOUR = "#3b75af"
SPAN_COLOUR = "#b7d0ea"
OUTLIER_COLOUR = "#d62728"
TIE_COLOUR, CLOSE_COLOUR, CLEAR_COLOUR = "#d62728", "#ff9f1c", "#2ca02c"
DPI = 110


def png_bytes(figure: Figure, tight: bool = True) -> bytes:
    """The figure as PNG; `tight`: cropped to its content (the tree's labels may reach past the
    axes), which draws it twice; the other figures place their axes themselves (`_margins`) and
    are drawn once (a third faster)."""
    buffer = io.BytesIO()
    FigureCanvasAgg(figure)
    figure.savefig(buffer, format="png", dpi=DPI, **({"bbox_inches": "tight", "pad_inches": 0.15} if tight else {}))
    return buffer.getvalue()


def _margins(figure: Figure) -> None:
    """Fixed room around a figure's axes for its two-line title, axis labels and ticks, in
    inches (what a tight crop would leave), so it needs no crop."""
    width, height = figure.get_size_inches()
    figure.subplots_adjust(left=0.8 / width, right=1 - 0.2 / width, bottom=0.55 / height, top=1 - 0.6 / height)


def _reads_colour(norm: LogNorm, reads: float) -> str:
    """Branch colour for a best-branch count of `reads`; the low end of the map is skipped (too
    pale)."""
    if reads <= 0:
        return NO_READS
    return to_hex(READS_CMAP(0.3 + 0.7 * float(np.clip(norm(reads), 0.0, 1.0))))


def count_text(reads: float) -> str:
    """A best-branch count as the figure and the page write it: whole counts as integers, shares
    of tied reads to one decimal (0.3, 2.5)."""
    return f"{round(reads):d}" if abs(reads - round(reads)) < 0.05 else f"{reads:.1f}"


_COUNT_LABEL = re.compile(r"\d+(\.\d)?")


def _layout(display: DisplayTree) -> tuple[dict, dict, dict]:
    """Bio.Phylo.draw's geometry: x (depth) and drawn branch length of every clade, y (row,
    1 = top) of the tips.

    Recomputed here because Bio.Phylo does not return them; the rules are Bio.Phylo's: depth
    sums branch lengths from the top's own (unit lengths below the top if all are zero), tips
    take rows 1..n in written order.
    """
    root = display.tree.root
    order = postorder(root)
    lengths = {clade: clade.branch_length or 0.0 for clade in order}
    if not any(lengths.values()):
        lengths = dict.fromkeys(order, 1.0)
    x = {root: root.branch_length or 0.0}
    for clade in reversed(order):  # parents before children
        for child in clade.clades:
            x[child] = x[clade] + lengths[child]
    y = {clade: row + 1 for row, clade in enumerate(c for c in order if not c.clades)}
    return x, y, lengths


def _count_ticks(most: int) -> list[int]:
    """1-2-5 ticks up to `most`, and `most` itself: plain read counts on a log colour bar."""
    ticks = [t * 10 ** p for p in range(len(str(most))) for t in (1, 2, 5) if t * 10 ** p <= most]
    if most / ticks[-1] >= 1.5:
        ticks.append(most)
    return ticks


def tree_figure(display: DisplayTree, edge_reads: np.ndarray, n_outliers: int = 0) -> Figure:
    """The reference tree with each branch coloured and labelled by its best-branch count.

    `edge_reads[e]` is edge e's best-branch count (report/placement.best_branch_counts: the reads
    whose best score is on e, a read tied between n branches counting 1/n on each; outliers,
    `n_outliers` of them, left out by the caller). These are not placements (EPA-ng's likelihood
    weights): only where papara-py's best score lies. Collapsed subtrees (see `NumberedTree.display`) are one row each, marked
    with a triangle coloured by the reads on the branches inside them. A count goes on its branch
    unless the branch is too short to hold it; then, for a row's own branch, after the row label.
    Bio.Phylo gives the vertical connector of a node the colour of the branch into it, which
    reads as if that branch spread over its children, so connectors are redrawn thin and grey.
    Sets the colour and width of `display`'s clades (a copy made for drawing).
    """
    drawn = {clade: float(edge_reads[edge]) for clade, edge in display.edge_of.items()}
    inside = {clade: reads for clade, (_, reads) in display.hidden.items()}
    most = max([1.0, *drawn.values(), *inside.values()])
    norm = LogNorm(vmin=1, vmax=max(2, most))  # shares below 1 take the palest colour
    x, y, length = _layout(display)
    span = max(x.values()) or 1.0
    on_branch = {clade for clade, reads in drawn.items() if reads and (clade.clades or length[clade] >= 0.06 * span)}
    label_of: dict = {}
    label_colour: dict[str, str] = {}
    for clade in postorder(display.tree.root):
        reads = drawn.get(clade, 0)
        clade.color = _reads_colour(norm, reads)
        clade.width = 2.2 if reads else 1.0
        if clade.clades:
            continue
        taxa, hidden_reads = display.hidden.get(clade, (1, 0))
        notes = [_reads(reads) + (" on its branch" if taxa > 1 else "")] if reads and clade not in on_branch else []
        if hidden_reads:
            notes.append(f"{_reads(hidden_reads)} inside")
        text = ("   " if taxa > 1 else "") + clade.name + (f"  ({', '.join(notes)})" if notes else "")
        label_of[clade] = text
        label_colour[text] = "black" if reads or hidden_reads else "#8a8a8a"

    rows = len(y)
    figure = Figure(figsize=(11, max(3.8, 0.165 * rows + 1.9)))
    axes = figure.add_subplot()
    with matplotlib.rc_context({"font.size": 7.5, "lines.linewidth": 1.2}):
        Phylo.draw(display.tree, do_show=False, axes=axes, show_confidence=False,
                   label_func=label_of.get, label_colors=label_colour,
                   branch_labels=lambda clade: count_text(drawn[clade]) if clade in on_branch else None)
    for collection in axes.collections:
        (start, end), *_ = collection.get_segments()
        if start[0] == end[0]:  # a vertical connector
            collection.set_color(NO_READS)
            collection.set_linewidth(1.0)
            collection.set_zorder(1)
        else:
            collection.set_zorder(2)
    for text in axes.texts:  # read counts (Bio.Phylo puts a space before row labels, never digits)
        if _COUNT_LABEL.fullmatch(text.get_text()):
            text.set_verticalalignment("bottom")
            text.set_y(text.get_position()[1] - 0.12)  # y grows downwards: lift it off the line
            text.set_fontweight("bold")
            text.set_bbox({"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    short = [clade for clade, reads in drawn.items()
             if reads and clade not in on_branch and clade not in display.hidden]
    if short:  # a dot in the tip branch's colour where the branch is too short to see
        axes.scatter([x[c] for c in short], [y[c] for c in short], marker="o", s=22, zorder=3, clip_on=False,
                     c=[_reads_colour(norm, drawn[c]) for c in short], edgecolors="#555555", linewidths=0.5)
    if display.hidden:
        clades = list(display.hidden)
        axes.scatter([x[c] for c in clades], [y[c] for c in clades], marker="<", s=55, zorder=3, clip_on=False,
                     c=[_reads_colour(norm, inside[c]) for c in clades], edgecolors="#555555", linewidths=0.5)
    axes.set_yticks([])
    axes.set_ylabel("")
    axes.set_xlabel("branch length (drawn from the tree's top node; the tree is unrooted)")
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    n_reads, n_used = round(float(edge_reads.sum())), int(np.count_nonzero(edge_reads))
    lines = [f"best branches of {n_reads} reads, on {n_used} of {len(edge_reads)} branches"
             + (f" ({n_outliers} outliers not counted)" if n_outliers else ""),
             "number and colour: best-branch counts, not placements (a read tied between n branches "
             "counts 1/n on each); grey: none"]
    if display.hidden:
        lines.append(f"{display.n_tips} taxa in {rows} rows: triangles are collapsed subtrees, "
                     f"coloured by the reads on branches inside them")
    axes.set_title("On which branches do the reads score best?\n" + "\n".join(lines), loc="left", fontsize=9)
    height = figure.get_figheight()
    colour_bar = axes.inset_axes([0.7, 1.0 + 0.55 / height, 0.28, 0.1 / height])
    bar = figure.colorbar(ScalarMappable(norm=norm, cmap=_visible_cmap()), cax=colour_bar, orientation="horizontal")
    ticks = _count_ticks(max(2, int(np.ceil(most))))
    bar.set_ticks(ticks, labels=[str(t) for t in ticks])
    bar.ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    bar.ax.tick_params(labelsize=7)
    bar.set_label("best-branch count (log scale)", fontsize=7.5)
    return figure


def _reads(n: float) -> str:
    return f"{count_text(n)} read" if count_text(n) == "1" else f"{count_text(n)} reads"


def _visible_cmap() -> matplotlib.colors.Colormap:
    """The part of READS_CMAP that branches use (see `_reads_colour`), for the colour bar."""
    return matplotlib.colors.ListedColormap(READS_CMAP(np.linspace(0.3, 1.0, 256)))


def coverage_figure(residues: np.ndarray, spans: np.ndarray, occupancy: np.ndarray) -> Figure:
    """Read coverage along the reference columns, above how full each column is in the reference.

    Row 0 of `residues` / `spans` counts the reads that fit, row 1 the outliers, per column:
    reads with a residue there / reads spanning it (first to last residue; see
    `RunView.read_depth`). Spans are the light envelope, residues the dark fill inside; outlier
    spans are stacked on top in red (their alignment is doubtful). `occupancy[i]` is the fraction
    of reference sequences with a residue in column i: where the alignment is mostly gaps, few
    reads have a residue either.
    """
    columns = np.arange(1, residues.shape[1] + 1)
    fits, outliers = spans
    figure = Figure(figsize=(11, 4.2))
    _margins(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1], "hspace": 0.08})
    top.fill_between(columns, fits, step="mid", color=SPAN_COLOUR, linewidth=0, label="reads spanning the column")
    top.fill_between(columns, residues[0], step="mid", color=FIT_COLOUR, linewidth=0,
                     label="reads with a residue in it")
    if outliers.any():
        top.fill_between(columns, fits, fits + outliers, step="mid", color=OUTLIER_COLOUR, alpha=0.45,
                         linewidth=0, label="outliers spanning it")
    top.legend(frameon=False, fontsize=8, loc="upper right")
    top.set_ylabel("reads")
    top.set_ylim(0, max(1, int((fits + outliers).max(initial=0))) * 1.3)
    covered = np.flatnonzero(fits)
    if covered.size:
        span = (f"reads that fit span columns {covered[0] + 1}-{covered[-1] + 1}, "
                f"at most {int(fits.max())} deep")
    else:
        span = "no read that fits spans any column"
    top.set_title(f"Which region of the gene do the reads cover?\n{span} ({len(columns)} reference columns)",
                  loc="left", fontsize=9)
    bottom.fill_between(columns, 100 * occupancy, step="mid", color="#8a8a8a", linewidth=0)
    bottom.set_ylim(0, 100)
    bottom.set_ylabel("reference\nresidues %")
    bottom.set_xlabel("reference alignment column (1-based)")
    bottom.set_xlim(0.5, len(columns) + 0.5)
    for axes in (top, bottom):
        axes.spines["top"].set_visible(False)
        axes.spines["right"].set_visible(False)
    return figure


def score_figure(per_residue: np.ndarray, lengths: np.ndarray, outlier: np.ndarray,
                 null: OutlierNull | None) -> Figure:
    """Best score per residue of each aligned read: histogram, and against read length.

    `per_residue`, `lengths` and `outlier` describe the aligned reads only; the outliers (the rule
    of `model.outliers.find_outliers`, against the run's `null`, an OutlierNull or None) are drawn
    in red, the rule's threshold as a dashed line: at the median read length in the histogram,
    along the read lengths in the scatter.
    """
    figure = Figure(figsize=(11, 4.0))
    _margins(figure)
    histogram, scatter = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1], "wspace": 0.25})
    typical = float(np.median(lengths)) if len(lengths) else 0.0
    threshold = float(null.threshold_at(typical)) if null is not None and len(lengths) else None
    high = max(float(per_residue.max(initial=0.0)), threshold or 0.0) * 1.08 or 1.0
    bins = np.linspace(0.0, high, 50)
    histogram.hist([per_residue[~outlier], per_residue[outlier]], bins=bins, stacked=True,
                   color=[FIT_COLOUR, OUTLIER_COLOUR], label=["fits the reference", "outlier"])
    for axes in (histogram, scatter):
        axes.spines["top"].set_visible(False)
        axes.spines["right"].set_visible(False)
    if threshold is not None:
        histogram.axvline(threshold, color=OUTLIER_COLOUR, linestyle="--", linewidth=1)
        left = threshold > high / 2  # the label on the side of the line with more room
        histogram.text(threshold, 1.0, f"outlier above {threshold:.2f} \nat {typical:.0f} residues "
                       if left else f" outlier above {threshold:.2f}\n at {typical:.0f} residues",
                       color=OUTLIER_COLOUR, transform=histogram.get_xaxis_transform(), va="top",
                       ha="right" if left else "left", fontsize=8)
    histogram.set_xlabel("best score / read length (penalty per residue; 0 = perfect fit)")
    histogram.set_ylabel("reads")
    histogram.legend(frameon=False, fontsize=8, loc="center right")
    n_out = int(outlier.sum())
    histogram.set_title(f"How well do the reads fit?\n{n_out} of {len(per_residue)} aligned reads are "
                        f"outliers (probably not from this reference)", loc="left", fontsize=9)
    scatter.scatter(lengths[~outlier], per_residue[~outlier], s=9, color=FIT_COLOUR, alpha=0.6, linewidths=0)
    scatter.scatter(lengths[outlier], per_residue[outlier], s=12, color=OUTLIER_COLOUR, alpha=0.8, linewidths=0)
    if threshold is not None:
        along = np.linspace(float(lengths.min()), float(lengths.max()), 100)
        scatter.plot(along, null.threshold_at(along), color=OUTLIER_COLOUR, linestyle="--", linewidth=1)
    scatter.set_xlabel("read length (residues)")
    scatter.set_ylabel("penalty per residue")
    scatter.set_ylim(0, high)
    scatter.set_title("per read, against its length", loc="left", fontsize=9)
    histogram.set_ylim(bottom=0)
    if not len(per_residue):
        for axes in (histogram, scatter):
            axes.text(0.5, 0.5, "no aligned reads", transform=axes.transAxes, ha="center", color="#8a8a8a")
        scatter.set_xlim(0, 1)
    return figure


def confidence_figure(gap: np.ndarray, n_close: np.ndarray, connected: np.ndarray, margin: int,
                      k: int) -> Figure:
    """How clearly each read's best branch beats the others (see report/placement.PlacementConfidence).

    Left: second-best minus best score per read (`gap`, -1 where there is no second candidate),
    red for ties, orange up to `margin`, green beyond. Right: reads by the number of candidates
    within `margin` of the best (`n_close`; `k` means k or more, as only k are stored), split by
    whether those branches are neighbours (`connected`) or in different parts of the tree.
    """
    figure = Figure(figsize=(11, 3.9))
    _margins(figure)
    left, right = figure.subplots(1, 2, gridspec_kw={"wspace": 0.25})
    known = gap[gap >= 0]
    top = 3 * margin + 1
    heights = np.bincount(np.minimum(known, top), minlength=top + 1)
    colours = [TIE_COLOUR] + [CLOSE_COLOUR] * margin + [CLEAR_COLOUR] * (top - margin)
    left.bar(np.arange(top + 1), heights, color=colours, width=0.85)
    left.set_xticks(np.arange(top + 1), [str(v) for v in range(top)] + [f"≥{top}"])
    left.set_xlabel("second-best minus best score (penalty)")
    left.set_ylabel("reads")
    total = max(len(known), 1)
    tied = int(np.count_nonzero(known == 0))
    close = int(np.count_nonzero((known > 0) & (known <= margin)))
    clear = len(known) - tied - close
    left.legend(handles=[Patch(color=colour, label=f"{what}: {n} ({100 * n / total:.0f}%)") for colour, what, n in
                         ((TIE_COLOUR, "tie", tied), (CLOSE_COLOUR, f"within {margin} (one mismatch)", close),
                          (CLEAR_COLOUR, "clear", clear))],
                frameon=False, fontsize=8, loc="upper right")
    left.set_title(f"How sure is the best branch? ({len(known)} placed reads)\n"
                   f"within {margin} (one mismatch), one sequencing error could swap the two",
                   loc="left", fontsize=9)
    left.set_ylim(0, max(1, heights.max(initial=0)) * 1.35)  # room for the legend
    slots = np.arange(1, k + 1)
    capped = np.clip(n_close, 1, k)
    near = np.bincount(capped[connected], minlength=k + 1)[1:]
    far = np.bincount(capped[~connected], minlength=k + 1)[1:]
    right.bar(slots, near, color=[CLEAR_COLOUR] + [CLOSE_COLOUR] * (k - 1), width=0.85)
    right.bar(slots, far, bottom=near, color=TIE_COLOUR, width=0.85)
    right.set_xticks(slots, [str(v) for v in range(1, k)] + [f"{k}+" if k > 1 else "1"])
    right.set_xlabel(f"branches scoring within {margin} of the best (the best included)")
    right.set_ylabel("reads")
    right.legend(handles=[Patch(color=CLEAR_COLOUR, label="one branch"),
                          Patch(color=CLOSE_COLOUR, label="neighbouring branches"),
                          Patch(color=TIE_COLOUR, label="branches far apart")],
                 frameon=False, fontsize=8, loc="upper right")
    right.set_title("How many branches fit (almost) equally well?\n"
                    "neighbours: the region is clear; far apart: uncertain", loc="left", fontsize=9)
    right.set_ylim(0, max(1, (near + far).max(initial=0)) * 1.35)
    for axes in (left, right):
        axes.spines["top"].set_visible(False)
        axes.spines["right"].set_visible(False)
    return figure
