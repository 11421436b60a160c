"""Leave-taxa-out accuracy benchmark: papara-py against MAFFT --addfragments and hmmalign.

Given any reference (tree + alignment), prune K taxa (seeded), drop the columns left all-gap, cut
reads from the pruned taxa with a configurable sequencing-error model and record each read
residue's TRUE reference column (an inserted error base, or a residue in a column that only pruned
taxa have, has none). Then run papara-py and, where installed, the peers, and score:

- column accuracy: of all read residues that have a true column, the fraction placed in it;
- state accuracy: of all read residues, the fraction in their true state (the true column, or
  inserted where the truth has none): the residues the truth inserts, which column accuracy does
  not see, count too;
- mean per-read accuracy: the same fraction per read, averaged over reads;
- edge accuracy (papara-py only): best edge == the pruned taxon's attachment edge, compared as
  splits (the reference tips on the side that does not hold the alphabetically first tip);
- wall time of the tool (subprocess wall clock, or the in-process `run` call).

It also scores `scripts/simulate.py` output (`--simulated DIR`: its truth.tsv holds the true
columns, known with indels). A leave-taxa-out data set is written in the same layout (tree.nwk,
ref.fasta, reads.fa, truth.tsv), so both are scored by the same code.

    python3 scripts/bench_accuracy.py -t TREE -s REF --prune 8 --reads 80 --json out.json
    python3 scripts/bench_accuracy.py --simulated data/example --tools papara,mafft
    python3 scripts/bench_accuracy.py --simulated data/protein --alphabet protein

`--alphabet protein` benchmarks amino-acid data: papara-py gets `--alphabet protein`, MAFFT
`--amino`, hmmbuild and hmmalign `--amino`, and cut reads get amino-acid substitution errors
(no reverse strand).

Every import of papara_py lives in `_papara_adapter` (module paths may move); the default
papara-py runner calls the `papara-py` CLI in a subprocess and reads the run file with h5py.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

GAPS = frozenset("-.")
sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))  # Newick of deep (ladder) trees
COMPLEMENT = str.maketrans("ACGTRYKMBVDHNacgtrykmbvdhn", "TGCAYRMKVBHDNtgcayrmkvbhdn")
#: Residues a substitution or inserted error draws from, per alphabet.
RESIDUES = {"dna": "ACGT", "protein": "ARNDCQEGHILKMFPSTWYV"}
#: The 2012 paper's penalties (mismatch, cgap, gap_open, gap_extend, insertion).
PAPER = (3, 3, 3, 1, 3)


# ---------------------------------------------------------------------------------------------
# papara_py: the one place that imports it
# ---------------------------------------------------------------------------------------------

def _papara_adapter():
    """(RunConfig, run, ScoringParams) from papara_py, for in-process runs (no numba start-up)."""
    from papara_py.model.params import ScoringParams
    from papara_py.run.config import RunConfig
    from papara_py.run.runner import run
    return RunConfig, run, ScoringParams


# ---------------------------------------------------------------------------------------------
# input: alignments and trees
# ---------------------------------------------------------------------------------------------

def read_alignment(path: str | Path) -> dict[str, str]:
    """FASTA or (relaxed, sequential or one-line) PHYLIP, as name -> upper-case row."""
    text = Path(path).read_text()
    rows: dict[str, list[str]] = {}
    if text.lstrip().startswith(">"):
        name = None
        for line in text.splitlines():
            line = line.strip()
            if line.startswith(">"):
                name = line[1:].split()[0]
                rows[name] = []
            elif name is not None and line:
                rows[name].append(line)
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        n, m = (int(x) for x in lines[0].split()[:2])
        for line in lines[1:n + 1]:
            name, seq = line.split(None, 1)
            rows[name] = [seq.replace(" ", "")]
        for name in rows:
            if len("".join(rows[name])) != m:
                raise ValueError(f"{path}: row {name} is not {m} columns (interleaved PHYLIP is not read)")
    out = {name: "".join(parts).upper() for name, parts in rows.items()}
    if len({len(row) for row in out.values()}) != 1:
        raise ValueError(f"{path}: rows differ in length")
    return out


def write_fasta(path: Path, records) -> None:
    with open(path, "w") as handle:
        for name, seq in records:
            handle.write(f">{name}\n{seq}\n")


@dataclass
class Tree:
    """An unrooted tree as an adjacency list; `label[v]` is the tip name ('' for inner nodes)."""

    adj: list[dict[int, float | None]] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    edge_number: dict[tuple[int, int], int] = field(default_factory=dict)  # (child, parent) -> {n}

    def add(self, name: str = "") -> int:
        self.adj.append({})
        self.label.append(name)
        return len(self.adj) - 1

    def link(self, a: int, b: int, length: float | None) -> None:
        self.adj[a][b] = length
        self.adj[b][a] = length

    def tips(self) -> dict[str, int]:
        return {name: v for v, name in enumerate(self.label) if name and len(self.adj[v]) <= 1}


def parse_newick(text: str) -> Tree:
    """Newick with quoted labels, [comments], branch lengths and jplace `{n}` edge numbers."""
    tree = Tree()
    stack: list[int] = []
    current = tree.add()
    i, n = 0, len(text)
    last_closed: int | None = None  # node whose label / length / {n} comes next

    def read_label(i: int) -> tuple[str, int]:
        if text[i] == "'":
            j = i + 1
            out = []
            while j < n:
                if text[j] == "'" and j + 1 < n and text[j + 1] == "'":
                    out.append("'")
                    j += 2
                elif text[j] == "'":
                    return "".join(out), j + 1
                else:
                    out.append(text[j])
                    j += 1
            raise ValueError("unterminated quote in Newick")
        j = i
        while j < n and text[j] not in "(),:;[{":
            j += 1
        return text[i:j].strip(), j

    lengths: dict[int, float] = {}
    numbers: dict[int, int] = {}
    parent: dict[int, int] = {}
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "[":
            i = text.index("]", i) + 1
        elif ch == "(":
            child = tree.add()
            parent[child] = current
            stack.append(current)
            current = child
            last_closed = None
            i += 1
        elif ch == ",":
            sibling = tree.add()
            parent[sibling] = stack[-1]
            current = sibling
            last_closed = None
            i += 1
        elif ch == ")":
            last_closed = stack.pop()
            current = last_closed
            i += 1
        elif ch == ":":
            j = i + 1
            while j < n and text[j] not in "(),;[{":
                j += 1
            lengths[current] = float(text[i + 1:j])
            i = j
        elif ch == "{":
            j = text.index("}", i)
            numbers[current] = int(text[i + 1:j])
            i = j + 1
        elif ch == ";":
            break
        else:
            name, i = read_label(i)
            if last_closed is None:  # a tip's name; inner-node labels (support values) are dropped
                tree.label[current] = name
    for child, par in parent.items():
        tree.link(child, par, lengths.get(child))
        if child in numbers:
            tree.edge_number[(child, par)] = numbers[child]
    for v in set(parent.values()):  # inner nodes never keep a label
        tree.label[v] = ""
    return tree


def tips_beyond(tree: Tree, a: int, b: int, keep: frozenset[str] | None = None) -> set[str]:
    """Tip names reached from a through b (the side of edge a-b that holds b)."""
    out, stack, seen = set(), [(b, a)], {a}
    while stack:
        v, came = stack.pop()
        seen.add(v)
        if tree.label[v] and (keep is None or tree.label[v] in keep):
            out.add(tree.label[v])
        stack.extend((u, v) for u in tree.adj[v] if u not in seen)
    return out


def normalise_split(side: set[str] | frozenset[str], all_tips: frozenset[str]) -> frozenset[str]:
    """The side of a split that does not hold the alphabetically first tip (simulate.py's rule)."""
    side = frozenset(side)
    return frozenset(all_tips - side) if min(all_tips) in side else side


def attachment_split(tree: Tree, taxon: str, keep: frozenset[str]) -> frozenset[str] | None:
    """The split of the reference edge that the pruned taxon hangs on after pruning.

    From the taxon walk inwards; at each node, branches that hold no kept tip vanish with the
    pruning; where two or more branches with kept tips remain, the node is suppressed and the
    taxon sat on the edge it leaves. At a polytomy (3+ branches) there is no single edge: None.
    """
    came = tree.tips()[taxon]
    v = next(iter(tree.adj[came]))
    while True:
        with_kept = [u for u in tree.adj[v] if u != came and tips_beyond(tree, v, u, keep)]
        if len(with_kept) == 2:
            return normalise_split(tips_beyond(tree, v, with_kept[0], keep), keep)
        if len(with_kept) != 1 or tree.label[with_kept[0]]:
            return None  # a polytomy, or a single kept tip
        came, v = v, with_kept[0]


def write_pruned_newick(tree: Tree, keep: frozenset[str]) -> str:
    """The tree restricted to `keep` (unrooted, a trifurcation at the top), lengths summed."""
    adj = [dict(d) for d in tree.adj]
    alive = set(range(len(adj)))

    def drop(v: int) -> None:
        for u in adj[v]:
            del adj[u][v]
        adj[v] = {}
        alive.discard(v)

    changed = True
    while changed:
        changed = False
        for v in list(alive):
            if v not in alive:
                continue
            is_kept_tip = tree.label[v] in keep and len(tree.adj[v]) <= 1
            if not is_kept_tip and len(adj[v]) <= 1:
                drop(v)
                changed = True
            elif not is_kept_tip and len(adj[v]) == 2:
                (a, la), (b, lb) = adj[v].items()
                length = None if la is None and lb is None else (la or 0.0) + (lb or 0.0)
                drop(v)
                adj[a][b] = length
                adj[b][a] = length
                changed = True
    top = next(v for v in alive if len(adj[v]) >= 3) if len(alive) > 2 else next(iter(alive))

    def quote(name: str) -> str:
        return name if all(c not in name for c in "()[]',;: \t") else "'" + name.replace("'", "''") + "'"

    def render(v: int, came: int | None) -> str:
        children = [u for u in adj[v] if u != came]
        text = quote(tree.label[v]) if not children else "(" + ",".join(render(u, v) for u in children) + ")"
        if came is not None and adj[v][came] is not None:
            text += f":{adj[v][came]:.12g}"
        return text

    return render(top, None) + ";\n"


# ---------------------------------------------------------------------------------------------
# reads with a known truth
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorModel:
    """Sequencing errors per base (substitution, 1-bp insertion, 1-bp deletion), homopolymer
    indels (per run of >= hp_min equal bases, one base added or removed), a normal length
    distribution clipped to [min_length, max_length], a reverse-complemented fraction."""

    substitution: float = 0.01
    insertion: float = 0.0
    deletion: float = 0.0
    homopolymer: float = 0.0
    hp_min: int = 3
    length_mean: float = 100.0
    length_sd: float = 10.0
    min_length: int = 50
    max_length: int = 10_000
    reverse_fraction: float = 0.0


@dataclass
class Read:
    name: str
    source: str
    strand: str
    sequence: str
    true_columns: list[int]  # per residue as written; -1: no true column
    true_split: frozenset[str] | None


def cut_read(rng: np.random.Generator, row: str, columns: np.ndarray, model: ErrorModel,
             residues: str = RESIDUES["dna"]) -> tuple[str, list[int]] | None:
    """One read from an aligned row: residues with their (new) column, then errors applied
    (substitutions and insertions drawn from `residues`)."""
    positions = [i for i, c in enumerate(row) if c not in GAPS]
    if len(positions) < model.min_length:
        return None
    length = int(round(rng.normal(model.length_mean, model.length_sd)))
    length = max(model.min_length, min(length, model.max_length, len(positions)))
    start = int(rng.integers(0, len(positions) - length + 1))
    bases = [row[i] for i in positions[start:start + length]]
    cols = [int(columns[i]) for i in positions[start:start + length]]
    if model.homopolymer > 0:
        out_b, out_c, k = [], [], 0
        while k < len(bases):
            r = k
            while r < len(bases) and bases[r] == bases[k]:
                r += 1
            run_b, run_c = bases[k:r], cols[k:r]
            if r - k >= model.hp_min and rng.random() < model.homopolymer:
                if rng.random() < 0.5:
                    run_b, run_c = run_b + [run_b[0]], run_c + [-1]
                else:
                    drop = int(rng.integers(0, len(run_b)))
                    run_b, run_c = run_b[:drop] + run_b[drop + 1:], run_c[:drop] + run_c[drop + 1:]
            out_b += run_b
            out_c += run_c
            k = r
        bases, cols = out_b, out_c
    out_b, out_c = [], []
    for b, c in zip(bases, cols):
        u = rng.random()
        if u < model.deletion:
            continue
        if u < model.deletion + model.substitution:
            k = len(residues)
            b = residues[((residues.find(b) if b in residues else 0) + int(rng.integers(1, k))) % k]
        out_b.append(b)
        out_c.append(c)
        if rng.random() < model.insertion:
            out_b.append(residues[int(rng.integers(0, len(residues)))])
            out_c.append(-1)
    return "".join(out_b), out_c


def leave_taxa_out(tree_path: str | Path, alignment_path: str | Path, out: str | Path, prune: int,
                   n_reads: int, model: ErrorModel, seed: int = 1, alphabet: str = "dna") -> Path:
    """Write a leave-taxa-out data set (tree.nwk, ref.fasta, reads.fa, truth.tsv) into `out`."""
    if alphabet != "dna" and model.reverse_fraction > 0:
        raise ValueError(f"{alphabet} reads have no reverse strand: use --reverse-fraction 0")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tree = parse_newick(Path(tree_path).read_text())
    rows = read_alignment(alignment_path)
    tips = sorted(set(tree.tips()) & set(rows))
    if prune >= len(tips) - 3:
        raise ValueError(f"cannot prune {prune} of {len(tips)} taxa")
    pruned = sorted(rng.choice(tips, size=prune, replace=False).tolist())
    keep = frozenset(tips) - frozenset(pruned)
    m = len(next(iter(rows.values())))
    kept_rows = {name: rows[name] for name in sorted(keep)}
    occupied = np.zeros(m, dtype=bool)
    for row in kept_rows.values():
        arr = np.frombuffer(row.encode(), dtype=np.uint8)
        occupied |= (arr != ord("-")) & (arr != ord("."))
    columns = np.where(occupied, np.cumsum(occupied) - 1, -1)
    index = np.flatnonzero(occupied)
    write_fasta(out / "ref.fasta", ((n, "".join(np.array(list(r))[index]).replace(".", "-"))
                                    for n, r in kept_rows.items()))
    (out / "tree.nwk").write_text(write_pruned_newick(tree, keep))
    splits = {t: attachment_split(tree, t, keep) for t in pruned}
    reads: list[Read] = []
    tries = 0
    while len(reads) < n_reads:
        tries += 1
        if tries > 100 * n_reads:
            raise ValueError("the pruned taxa are too short for reads of this length")
        taxon = pruned[int(rng.integers(0, len(pruned)))]
        cut = cut_read(rng, rows[taxon], columns, model, RESIDUES[alphabet])
        if cut is None:
            continue
        seq, cols = cut
        strand = "+"
        if rng.random() < model.reverse_fraction:
            seq, cols, strand = seq.translate(COMPLEMENT)[::-1], cols[::-1], "-"
        reads.append(Read(f"read_{len(reads) + 1:06d}", taxon, strand, seq, cols, splits[taxon]))
    write_fasta(out / "reads.fa", ((r.name, r.sequence) for r in reads))
    with open(out / "truth.tsv", "w") as handle:
        handle.write("# " + " ".join([f"leave_taxa_out(prune={prune}, seed={seed}, reads={n_reads})",
                                      json.dumps(asdict(model))]) + "\n")
        handle.write("name\tsource\tstrand\ttrue_split\ttrue_columns\n")
        for r in reads:
            split = ",".join(sorted(r.true_split)) if r.true_split is not None else ""
            handle.write(f"{r.name}\t{r.source}\t{r.strand}\t{split}\t{','.join(map(str, r.true_columns))}\n")
    return out


def read_truth(path: str | Path) -> dict[str, tuple[list[int], frozenset[str] | None]]:
    """truth.tsv (simulate.py's or leave_taxa_out's) as name -> (true columns, true split)."""
    with open(path) as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        return {row["name"]: ([int(c) for c in row["true_columns"].split(",")],
                              frozenset(row["true_split"].split(",")) if row["true_split"] else None)
                for row in rows}


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------

@dataclass
class Placement:
    columns: list[int]  # per read residue as written in reads.fa; -1: not in a reference column
    split: frozenset[str] | None = None  # the best edge as a normalised split (None: no placement)


def read_right(placements: dict[str, Placement], name: str, true_cols: list[int]) -> tuple[int, int]:
    """(residues right, residues with a true column) of read `name`: `score`'s count for one read
    (a read missing from `placements` is all wrong)."""
    got = placements.get(name)
    got_cols = got.columns if got is not None else [-1] * len(true_cols)
    if len(got_cols) != len(true_cols):
        raise ValueError(f"{name}: {len(got_cols)} placed residues, truth has {len(true_cols)}")
    scored = [(g, t) for g, t in zip(got_cols, true_cols) if t >= 0]
    return sum(g == t for g, t in scored), len(scored)


def score(placements: dict[str, Placement], truth: dict[str, tuple[list[int], frozenset[str] | None]],
          ref_tips: frozenset[str] | None = None) -> dict[str, float]:
    """Column accuracy, mean per-read accuracy and edge accuracy of `placements` against `truth`,
    and the state accuracy.

    Only residues with a true column (>= 0) count; a read missing from `placements` counts as all
    wrong. Edge accuracy counts reads whose truth has a split; None when no placement has one.
    Column accuracy cannot see a residue the truth inserts (true column -1: an inserted error
    base, a residue of a column only pruned taxa had) being put in a column; the state accuracy
    counts every residue, one the truth inserts right only when it is left inserted (a missing
    read's residues all wrong); `inserted_placed` is how many of the `inserted` residues went into
    a column.
    """
    right = total = inserted = inserted_placed = inserted_kept = 0
    per_read: list[float] = []
    edges_right = edges_total = 0
    has_edges = any(p.split is not None for p in placements.values())
    for name, (true_cols, true_split) in truth.items():
        got = placements.get(name)
        r, scored = read_right(placements, name, true_cols)
        right += r
        total += scored
        inserted += len(true_cols) - scored
        if got is not None:
            placed = sum(g >= 0 for g, t in zip(got.columns, true_cols) if t < 0)
            inserted_placed += placed
            inserted_kept += len(true_cols) - scored - placed
        if scored:
            per_read.append(r / scored)
        if has_edges and true_split is not None:
            edges_total += 1
            if got is not None and got.split is not None:
                split = got.split if ref_tips is None else normalise_split(got.split, ref_tips)
                edges_right += split == true_split
    everything = total + inserted
    return {"column_accuracy": right / total if total else float("nan"),
            "state_accuracy": (right + inserted_kept) / everything if everything else float("nan"),
            "inserted": inserted, "inserted_placed": inserted_placed,
            "read_accuracy": float(np.mean(per_read)) if per_read else float("nan"),
            "edge_accuracy": edges_right / edges_total if edges_total else None,
            "residues": total, "reads": len(truth)}


def read_columns(start: int, cigar: str, strand: str) -> list[int]:
    """Reference column of each residue of the read as written in reads.fa (-1 for insertions):
    the run file's start and CIGAR follow the oriented read, so a reverse-strand read's turn round."""
    columns = cigar_columns(start, cigar)
    return columns[::-1] if strand == "-" else columns


def cigar_columns(start: int, cigar: str) -> list[int]:
    """Reference column of each aligned residue (-1 for insertions), from start + CIGAR."""
    cols, column, number = [], start, ""
    for ch in cigar:
        if ch.isdigit():
            number += ch
            continue
        length, number = int(number), ""
        if ch == "M":
            cols.extend(range(column, column + length))
            column += length
        elif ch == "D":
            column += length
        elif ch == "I":
            cols.extend([-1] * length)
        else:
            raise ValueError(f"unknown CIGAR op {ch!r}")
    return cols


def edge_splits_from_numbered(newick: str, wanted: set[int] | None = None
                              ) -> tuple[dict[int, frozenset[str]], frozenset[str]]:
    """Edge number -> split (tips below the edge, away from the top) of a jplace-numbered tree,
    for the `wanted` edges only where given (every edge's split is quadratic in the taxa: hours
    at 10^5)."""
    tree = parse_newick(newick)
    tips = frozenset(tree.tips())
    return ({n: normalise_split(tips_beyond(tree, par, child), tips)
             for (child, par), n in tree.edge_number.items() if wanted is None or n in wanted}, tips)


# ---------------------------------------------------------------------------------------------
# tools
# ---------------------------------------------------------------------------------------------

@dataclass
class Data:
    """A data set on disk: reference tree + alignment, reads and their truth."""

    name: str
    tree: Path
    alignment: Path
    reads: Path
    truth: dict[str, tuple[list[int], frozenset[str] | None]]
    alphabet: str = "dna"  # or "protein": what every tool is told the data are

    @classmethod
    def from_dir(cls, directory: str | Path, name: str | None = None, alphabet: str = "dna") -> "Data":
        d = Path(directory)
        alignment = d / "ref.fasta" if (d / "ref.fasta").exists() else d / "ref.phy"
        reads = d / "reads.fa" if (d / "reads.fa").exists() else d / "reads.fasta"
        return cls(name or d.name, d / "tree.nwk", alignment, reads, read_truth(d / "truth.tsv"), alphabet)


def read_run_file(path: Path, data: Data) -> dict[str, Placement]:
    """Placements from a papara-py run file (docs/reference/run-file.md), read with h5py only."""
    import h5py
    with h5py.File(path) as run_file:
        return read_placements(run_file, data)


def read_placements(run_file, data: Data) -> dict[str, Placement]:
    """`read_run_file` from a run file already open (an h5py.File): a caller that reads more of it
    opens it once."""
    reads = run_file["reads"]
    names = reads["names"].asstr()[:]
    starts = reads["start"][:]
    cigars = reads["cigar"].asstr()[:]
    strands = reads["strand"].asstr()[:]
    best = reads["best_edge"][:]
    newick = run_file["tree/newick_numbered"][()]
    newick = newick.decode() if isinstance(newick, bytes) else str(newick)
    splits, _ = edge_splits_from_numbered(newick, {int(edge) for edge in best if edge >= 0})
    out = {}
    for name, start, cigar, strand, edge in zip(names, starts, cigars, strands, best):
        if name not in data.truth or start < 0:
            continue
        out[name] = Placement(read_columns(int(start), cigar, strand), splits.get(int(edge)))
    return out


def run_papara_cli(data: Data, work: Path, params=PAPER, threads: int = 2) -> tuple[dict[str, Placement], float]:
    """papara-py through its CLI (the installed `papara-py`, else `python -m papara_py`)."""
    exe = shutil.which("papara-py")
    cmd = [exe] if exe else [sys.executable, "-m", "papara_py"]
    out = work / "papara.h5"
    out.unlink(missing_ok=True)
    cmd += ["-t", str(data.tree), "-s", str(data.alignment), "-r", str(data.reads), "-o", str(out),
            "--device", "cpu", "--threads", str(threads), "--quiet", "--alphabet", data.alphabet]
    if params is not None:  # None: papara-py's own defaults; 5 values: Eq. 1 (near = mismatch)
        flags = ("--mismatch", "--cgap", "--gap-open", "--gap-extend", "--insertion", "--near-mismatch")
        cmd += [item for flag, value in zip(flags, params) for item in (flag, str(value))]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    return read_run_file(out, data), wall


def run_papara_inprocess(data: Data, work: Path, params=PAPER, threads: int = 2) -> tuple[dict[str, Placement], float]:
    """papara-py in this process (numba compiles once per process; for parameter studies)."""
    RunConfig, run, ScoringParams = _papara_adapter()
    out = work / "papara.h5"
    out.unlink(missing_ok=True)
    penalties = {} if params is None else {"params": ScoringParams(*params)}  # none: the alphabet's preset
    config = RunConfig(tree=str(data.tree), alignment=str(data.alignment), reads=str(data.reads),
                       output=str(out), threads=threads, device="cpu", alphabet=data.alphabet,
                       **penalties)
    t0 = time.perf_counter()
    run(config)
    wall = time.perf_counter() - t0
    return read_run_file(out, data), wall


def _reads_forward(data: Data) -> list[tuple[str, str]]:
    out, name = [], None
    for line in data.reads.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            out.append([name, ""])
        elif line.strip():
            out[-1][1] += line.strip()
    return [(n, s) for n, s in out]


def run_mafft(data: Data, work: Path, threads: int = 2, adjust_direction: bool = False) -> tuple[dict[str, Placement], float]:
    """`mafft --addfragments reads --keeplength --mapout ref`; columns from the .map file."""
    ref = work / "mafft_ref.fasta"
    write_fasta(ref, ((n, r.replace(".", "-")) for n, r in read_alignment(data.alignment).items()))
    reads = work / "mafft_reads.fa"
    write_fasta(reads, _reads_forward(data))
    cmd = ["mafft", "--addfragments", str(reads), "--keeplength", "--mapout", "--thread", str(threads),
           "--quiet"] + (["--adjustdirection"] if adjust_direction else []) + \
        (["--amino"] if data.alphabet == "protein" else []) + [str(ref)]
    t0 = time.perf_counter()
    with open(work / "mafft_out.fasta", "w") as handle:
        subprocess.run(cmd, check=True, stdout=handle, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    out: dict[str, Placement] = {}
    name, cols = None, []
    for line in Path(str(reads) + ".map").read_text().splitlines():
        if line.startswith(">"):
            if name is not None:
                out[name] = Placement(cols)
            name, cols = line[1:].split()[0], []
        elif line.startswith("#") or not line.strip():
            continue
        else:
            pos = line.split(",")[2].strip()
            cols.append(int(pos) - 1 if pos != "-" else -1)
    if name is not None:
        out[name] = Placement(cols)
    for key in [k for k in out if k.startswith("_R_")]:
        out[key[3:]] = Placement(out.pop(key).columns[::-1])
    return out, wall


def run_hmmalign(data: Data, work: Path, threads: int = 2) -> tuple[dict[str, Placement], float]:
    """`hmmbuild --hand --dna` (every reference column a match state) + `hmmalign --outformat A2M`;
    `--amino` for both for protein data."""
    kind = "--amino" if data.alphabet == "protein" else "--dna"
    rows = read_alignment(data.alignment)
    m = len(next(iter(rows.values())))
    sto = work / "ref.sto"
    with open(sto, "w") as handle:
        handle.write("# STOCKHOLM 1.0\n")
        for n, r in rows.items():
            handle.write(f"{n} {r.replace('.', '-')}\n")
        handle.write(f"#=GC RF {'x' * m}\n//\n")
    t0 = time.perf_counter()
    subprocess.run(["hmmbuild", "--hand", kind, "--cpu", str(threads), str(work / "ref.hmm"), str(sto)],
                   check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run(["hmmalign", *([kind] if kind == "--amino" else []), "--outformat", "A2M",
                             str(work / "ref.hmm"), str(data.reads)],
                            check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    out: dict[str, Placement] = {}
    aligned: dict[str, list[str]] = {}
    name = None
    for line in result.stdout.splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            aligned[name] = []
        elif name is not None:
            aligned[name].append(line.strip())
    for name, parts in aligned.items():
        cols, k = [], 0
        for ch in "".join(parts):
            if ch == "-":
                k += 1
            elif ch == ".":
                continue
            elif ch.isupper():
                cols.append(k)
                k += 1
            else:
                cols.append(-1)
        out[name] = Placement(cols)
    return out, wall


TOOLS = {"papara": run_papara_cli, "papara-inproc": run_papara_inprocess, "mafft": run_mafft,
         "hmmalign": run_hmmalign}
PEER_BINARIES = {"mafft": "mafft", "hmmalign": "hmmalign"}


def bench(data: Data, tools: list[str], params=PAPER, threads: int = 2, work: Path | None = None) -> dict:
    """Run `tools` on `data` and score each; peers missing from PATH are reported as skipped."""
    ref_tips = frozenset(read_alignment(data.alignment))
    results = {}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        for tool in tools:
            binary = PEER_BINARIES.get(tool)
            if binary and shutil.which(binary) is None:
                results[tool] = {"skipped": f"{binary} not on PATH"}
                continue
            kwargs = {"params": params} if tool.startswith("papara") else {}
            placements, wall = TOOLS[tool](data, Path(tmp), threads=threads, **kwargs)
            results[tool] = score(placements, data.truth, ref_tips) | {"wall_s": wall}
            if tool.startswith("papara"):
                results[tool]["params"] = list(params) if params is not None else "defaults"
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    src = p.add_argument_group("data: a reference to leave taxa out of, or simulate.py output")
    src.add_argument("-t", "--tree", help="reference tree (Newick)")
    src.add_argument("-s", "--alignment", help="reference alignment (FASTA or PHYLIP)")
    src.add_argument("--simulated", metavar="DIR", help="scripts/simulate.py output (truth.tsv) instead")
    src.add_argument("--name", help="data set name in the output")
    src.add_argument("--alphabet", choices=list(RESIDUES), default="dna",
                     help="dna, or protein (papara-py --alphabet protein, mafft --amino, hmmbuild/hmmalign --amino)")
    lto = p.add_argument_group("leave-taxa-out and the read error model")
    lto.add_argument("--prune", type=int, default=8, help="taxa to prune (K)")
    lto.add_argument("--reads", type=int, default=100)
    lto.add_argument("--seed", type=int, default=1)
    defaults = ErrorModel()
    lto.add_argument("--substitution", type=float, default=defaults.substitution, help="per base")
    lto.add_argument("--insertion-rate", type=float, default=defaults.insertion, help="1-bp insertions per base")
    lto.add_argument("--deletion-rate", type=float, default=defaults.deletion, help="1-bp deletions per base")
    lto.add_argument("--homopolymer", type=float, default=defaults.homopolymer,
                     help="per homopolymer run of >= --hp-min bases: one base added or removed")
    lto.add_argument("--hp-min", type=int, default=defaults.hp_min)
    lto.add_argument("--length-mean", type=float, default=defaults.length_mean)
    lto.add_argument("--length-sd", type=float, default=defaults.length_sd)
    lto.add_argument("--min-length", type=int, default=defaults.min_length)
    lto.add_argument("--reverse-fraction", type=float, default=defaults.reverse_fraction)
    lto.add_argument("--keep", metavar="DIR", help="write the data set here (default: a temporary directory)")
    run = p.add_argument_group("tools")
    run.add_argument("--tools", default="papara,mafft,hmmalign",
                     help="comma-separated: papara (CLI), papara-inproc, mafft, hmmalign")
    run.add_argument("--params", default="defaults",
                     help="papara-py mismatch,cgap,gap_open,gap_extend,insertion, or 'defaults' (its own)")
    run.add_argument("--threads", type=int, default=2)
    run.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = p.parse_args(argv)
    params = None if args.params == "defaults" else tuple(int(x) for x in args.params.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        if args.simulated:
            data = Data.from_dir(args.simulated, args.name, args.alphabet)
            setup = {"simulated": args.simulated, "alphabet": args.alphabet}
        else:
            if not (args.tree and args.alignment):
                p.error("give -t and -s, or --simulated")
            model = ErrorModel(args.substitution, args.insertion_rate, args.deletion_rate, args.homopolymer,
                               args.hp_min, args.length_mean, args.length_sd, args.min_length,
                               reverse_fraction=args.reverse_fraction)
            directory = Path(args.keep or Path(tmp) / "data")
            leave_taxa_out(args.tree, args.alignment, directory, args.prune, args.reads, model, args.seed,
                           args.alphabet)
            data = Data.from_dir(directory, args.name or Path(args.alignment).parent.name, args.alphabet)
            setup = {"tree": args.tree, "alignment": args.alignment, "prune": args.prune,
                     "reads": args.reads, "seed": args.seed, "error_model": asdict(model), "alphabet": args.alphabet}
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
        results = bench(data, tools, params, args.threads)
    print(f"data set {data.name}: {len(data.truth)} reads, "
          f"{sum(sum(c >= 0 for c in cols) for cols, _ in data.truth.values())} residues with a true column")
    print(f"{'tool':14s} {'columns':>8s} {'states':>8s} {'per read':>9s} {'edge':>6s} {'wall s':>7s}")
    for tool, r in results.items():
        if "skipped" in r:
            print(f"{tool:14s} skipped: {r['skipped']}")
            continue
        edge = f"{r['edge_accuracy']:.3f}" if r["edge_accuracy"] is not None else "-"
        print(f"{tool:14s} {r['column_accuracy']:8.4f} {r['state_accuracy']:8.4f} {r['read_accuracy']:9.4f} "
              f"{edge:>6s} {r['wall_s']:7.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.name, "setup": setup, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
