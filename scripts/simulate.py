"""Simulate a reference tree, a reference alignment and short reads whose TRUE alignment is known.

papara-py places reads on edges and aligns them in reference columns; to measure how often it is
right we need data where the right answer is recorded. This script grows a random Yule tree,
evolves sequences down it (K2P substitutions with optional gamma rate heterogeneity, insertions
and deletions that create and remove alignment columns), hides some taxa from the reference, cuts
reads with sequencing errors from those hidden taxa, and writes the reference inputs together with
each read's true edge and true reference columns. `--alphabet protein` evolves amino acids instead
with the same gamma rates and indel machinery (reads are never reverse-complemented), under
`--protein-model poisson` (every change equally likely among the 20) or `lg` (Le & Gascuel's
empirical LG matrix and frequencies: residues that replace one another in real proteins do so
here too).

Column identity: every residue descends from one "site". The root has sites 0..L-1; an insertion
creates new sites. The true MSA has one column per site that survives in some tip, ordered so that
every tip's sites appear in sequence order (see `site_order`).

Run `python3 scripts/simulate.py --out DIR [options]`; import it to call `simulate` and
`write_outputs` directly. scripts/README.md describes the output files.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

#: Residue letters per alphabet: codes 0..K-1 used during simulation index the table.
LETTERS = {"dna": np.frombuffer(b"ACGT", dtype=np.uint8),
           "protein": np.frombuffer(b"ARNDCQEGHILKMFPSTWYV", dtype=np.uint8)}
GAP = ord("-")
#: Sequencing errors: shares of substitutions, 1-bp insertions and 1-bp deletions.
ERROR_SHARES = (0.9, 0.05, 0.05)
#: Shortest read drawn, unless the source sequence or the alignment is shorter.
MIN_READ_LENGTH = 20
SCRIPT = "python3 scripts/simulate.py"
#: Tip name prefixes: reference taxa r0001.., held-out taxa h0001..
REF_PREFIX, HELD_OUT_PREFIX = "r", "h"


@dataclass(frozen=True)
class SimParams:
    """Every input of a simulation; together with the seed it determines all outputs."""

    seed: int = 1
    taxa: int = 30
    held_out: int | None = None
    columns: int = 500
    divergence: float = 0.2
    kappa: float = 2.0
    gamma_alpha: float = 1.0
    indel_rate: float = 0.05
    indel_mean_length: float = 2.0
    reads: int = 200
    read_length: int = 100
    read_length_sd: float = 0.1
    error_rate: float = 0.01
    reverse_fraction: float = 0.0
    alphabet: str = "dna"
    protein_model: str = "poisson"  # protein only: "poisson" or "lg"
    target_columns: int | None = None  # instead of indel_rate: the rate that gives about this width

    @property
    def letters(self) -> np.ndarray:
        return LETTERS[self.alphabet]

    @property
    def n_states(self) -> int:
        return len(self.letters)

    def indel_rate_for(self, tree_length: float) -> float:
        """The indel rate used: `indel_rate`, or with `target_columns` the rate at which the
        insertions expected over the whole tree (each makes a new column) widen the root's
        `columns` to about `target_columns`. A fixed rate widens the alignment with the tree's
        total length, that is with the taxa: 0.05 gives 12,000 columns at 10^4 taxa and
        ~34,000 at 10^5 (a 3.4 GB alignment); 16S alignments of any size have ~1,500."""
        if self.target_columns is None:
            return self.indel_rate
        inserted = max(0, self.target_columns - self.columns)
        return inserted / (0.5 * tree_length * self.columns * self.indel_mean_length)

    @property
    def n_held_out(self) -> int:
        """The held-out count, defaulting to a fifth of the reference taxa (at least 3)."""
        return self.held_out if self.held_out is not None else max(3, self.taxa // 5)

    def command(self, out: str = "DIR") -> str:
        """The full command line (every option explicit, --alphabet only for protein: DNA data sets
        made before it existed keep their command) that reproduces this simulation."""
        options = [("--out", out)]
        for field in fields(self):
            if field.name == "alphabet" and self.alphabet == "dna":
                continue
            if field.name == "protein_model" and (self.alphabet == "dna" or self.protein_model == "poisson"):
                continue  # as alphabet: the commands of data sets made before the option keep working
            value = self.n_held_out if field.name == "held_out" else getattr(self, field.name)
            if value is None:  # target_columns unset: --indel-rate decides
                continue
            options.append(("--" + field.name.replace("_", "-"), value if isinstance(value, str) else repr(value)))
        return SCRIPT + "".join(f" {flag} {shlex.quote(value)}" for flag, value in options)


@dataclass(frozen=True)
class Tree:
    """A rooted binary tree as arrays; node 0 is the root and every parent index < its children's.

    The parent-before-child numbering makes descending index order a post-order, so bottom-up
    passes are plain loops. `left`/`right` are -1 at tips; `length[v]` is the branch above v.
    """

    parent: np.ndarray
    left: np.ndarray
    right: np.ndarray
    length: np.ndarray
    names: list[str]

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    def is_tip(self, v: int) -> bool:
        return self.left[v] < 0

    def tips(self) -> list[int]:
        return [v for v in range(self.n_nodes) if self.left[v] < 0]

    def children(self, v: int) -> tuple[int, ...]:
        return () if self.left[v] < 0 else (int(self.left[v]), int(self.right[v]))


@dataclass(frozen=True)
class Read:
    """One simulated read as written, with its truth."""

    name: str
    source: str
    strand: str
    sequence: bytes
    columns: np.ndarray  # int32 true reference column per residue, -1 where none


@dataclass(frozen=True)
class Simulation:
    """Everything `write_outputs` writes, plus the tips' sequences in lineage order (for checks)."""

    params: SimParams
    full_tree: Tree
    reference_tree: Tree
    ref_names: list[str]
    ref_alignment: np.ndarray  # uint8 ASCII [taxa, m]
    truth_names: list[str]  # reference taxa, then held-out taxa
    truth_alignment: np.ndarray  # uint8 ASCII [taxa + held_out, M]
    tip_sequences: dict[str, bytes]  # ungapped, in the order evolution produced them
    splits: dict[str, str]  # held-out taxon -> true_split
    reads: list[Read]


# ----------------------------------------------------------------------------------------- tree


def yule_tree(n_tips: int, rng: np.random.Generator) -> Tree:
    """A pure-birth (Yule) tree, birth rate 1: each step a uniformly chosen lineage splits.

    Written as an O(n) loop over arrays rather than with dendropy's simulator so that the
    paper-scale shape (~16,600 tips) takes well under a second.
    """
    parent, start, end = [-1], [0.0], [0.0]
    left, right = [-1], [-1]
    lineages, now = [0], 0.0
    while len(lineages) < n_tips:
        now += rng.exponential(1.0 / len(lineages))
        i = int(rng.integers(len(lineages)))
        v = lineages[i]
        end[v] = now
        a = len(parent)
        for _ in range(2):
            parent.append(v)
            start.append(now)
            end.append(0.0)
            left.append(-1)
            right.append(-1)
        left[v], right[v] = a, a + 1
        lineages[i] = a
        lineages.append(a + 1)
    now += rng.exponential(1.0 / len(lineages))
    for v in lineages:
        end[v] = now
    length = np.array(end) - np.array(start)
    length[0] = 0.0
    return Tree(np.array(parent), np.array(left), np.array(right), length, [""] * len(parent))


def tips_below_counts(tree: Tree, counted: np.ndarray) -> np.ndarray:
    """Per node, how many tips below it have `counted[tip]` set (one post-order pass)."""
    below = counted.astype(np.int64)
    for v in range(tree.n_nodes - 1, 0, -1):
        below[tree.parent[v]] += below[v]
    return below


def mean_pairwise_distance(tree: Tree) -> float:
    """Mean patristic distance over all tip pairs (a branch separates below * (n - below) pairs)."""
    is_tip = tree.left < 0
    below = tips_below_counts(tree, is_tip)
    n = int(is_tip.sum())
    return float(np.sum(tree.length * below * (n - below)) / (n * (n - 1) / 2))


def scale_tree(tree: Tree, divergence: float) -> Tree:
    """Rescale branch lengths so that tips differ by `divergence` substitutions/site on average."""
    factor = divergence / mean_pairwise_distance(tree)
    return Tree(tree.parent, tree.left, tree.right, tree.length * factor, tree.names)


def name_tips(tree: Tree, n_ref: int, rng: np.random.Generator) -> Tree:
    """Name tips r0001.. (reference) and h0001.. (held out), assigned to tips at random."""
    tips = tree.tips()
    width = max(4, len(str(len(tips))))
    labels = [f"{REF_PREFIX}{i + 1:0{width}d}" for i in range(n_ref)]
    labels += [f"{HELD_OUT_PREFIX}{i + 1:0{width}d}" for i in range(len(tips) - n_ref)]
    names = list(tree.names)
    for tip, label in zip(tips, rng.permutation(len(tips))):
        names[tip] = labels[label]
    return Tree(tree.parent, tree.left, tree.right, tree.length, names)


def prune(tree: Tree, keep: set[str]) -> Tree:
    """The subtree spanning the tips named in `keep`, nodes of degree 2 suppressed (lengths summed).

    Works bottom-up: `rep[v]` is the node that stands for v's subtree after pruning (-1: nothing
    kept), `above[v]` the length from rep[v] up to the top of v's branch.
    """
    n = tree.n_nodes
    rep = np.full(n, -1, dtype=np.int64)
    above = np.zeros(n)
    kept_children: dict[int, tuple[tuple[int, float], ...]] = {}
    for v in range(n - 1, -1, -1):
        if tree.is_tip(v):
            if tree.names[v] in keep:
                rep[v], above[v] = v, tree.length[v]
            continue
        live = [c for c in tree.children(v) if rep[c] >= 0]
        if len(live) == 2:
            kept_children[v] = tuple((int(rep[c]), float(above[c])) for c in live)
            rep[v], above[v] = v, tree.length[v]
        elif len(live) == 1:
            rep[v], above[v] = rep[live[0]], above[live[0]] + tree.length[v]
    old = sorted({int(rep[0])} | {c for kids in kept_children.values() for c, _ in kids})
    new = {o: i for i, o in enumerate(old)}
    parent = np.full(len(old), -1, dtype=np.int64)
    left = np.full(len(old), -1, dtype=np.int64)
    right = np.full(len(old), -1, dtype=np.int64)
    length = np.zeros(len(old))
    for v, ((a, la), (b, lb)) in kept_children.items():
        left[new[v]], right[new[v]] = new[a], new[b]
        parent[new[a]] = parent[new[b]] = new[v]
        length[new[a]], length[new[b]] = la, lb
    names = [tree.names[o] if tree.is_tip(o) else "" for o in old]
    return Tree(parent, left, right, length, names)


def newick(tree: Tree, unrooted: bool) -> str:
    """Newick text with 8-decimal branch lengths; `unrooted` writes the root as a trifurcation."""
    text = [""] * tree.n_nodes

    def branch(v: int, length: float) -> str:
        return f"{text[v]}:{length:.8f}"

    def group(branches: list[str]) -> str:
        return "(" + ",".join(branches) + ")"

    for v in range(tree.n_nodes - 1, -1, -1):
        kids = tree.children(v)
        text[v] = group([branch(c, tree.length[c]) for c in kids]) if kids else tree.names[v]
    a, b = tree.children(0)
    if not unrooted:
        return text[0] + ";\n"
    if tree.is_tip(a):
        a, b = b, a
    joined = tree.length[a] + tree.length[b]
    top = [branch(c, tree.length[c]) for c in tree.children(a)] + [branch(b, joined)]
    return group(top) + ";\n"


# ------------------------------------------------------------------------------------ splits


def tip_names_below(tree: Tree, v: int) -> list[str]:
    """Names of the tips in v's subtree."""
    names, stack = [], [v]
    while stack:
        u = stack.pop()
        if tree.is_tip(u):
            names.append(tree.names[u])
        stack.extend(tree.children(u))
    return names


def attachment_node(tree: Tree, ref_below: np.ndarray, tip: int) -> int:
    """A node X such that the held-out `tip` hangs on the reference edge {refs below X | rest}.

    Walk up to the first ancestor `a` with reference tips below it; `tip`'s side of `a` holds no
    reference tip, so after pruning `a` lies inside one reference edge. If reference tips also lie
    outside `a`, that edge separates the refs below `a` from the rest. Otherwise every reference
    tip is below `a` and the held-out clade hangs above the reference tips' common ancestor:
    descend to it; after unrooting its two child edges are one edge, split by either child.
    """
    a = int(tree.parent[tip])
    while ref_below[a] == 0:
        a = int(tree.parent[a])
    if ref_below[a] < ref_below[0]:
        return a
    while True:
        live = [c for c in tree.children(a) if ref_below[c] > 0]
        if len(live) == 2:
            return live[0]
        a = live[0]


def split_label(side: list[str], ref_names: list[str], first: str) -> str:
    """The split written as the side NOT holding `first`, the alphabetically first reference tip."""
    if first in side:
        inside = set(side)
        side = [name for name in ref_names if name not in inside]
    return ",".join(sorted(side))


def attachment_splits(tree: Tree, ref_names: list[str]) -> dict[str, str]:
    """true_split of every held-out tip of `tree` (tips not in `ref_names`)."""
    refs = set(ref_names)
    is_ref = np.array([name in refs for name in tree.names])
    ref_below = tips_below_counts(tree, is_ref)
    first = min(ref_names)
    splits, by_node = {}, {}
    for tip in tree.tips():
        if tree.names[tip] in refs:
            continue
        x = attachment_node(tree, ref_below, tip)
        if x not in by_node:
            side = [name for name in tip_names_below(tree, x) if name in refs]
            by_node[x] = split_label(side, ref_names, first)
        splits[tree.names[tip]] = by_node[x]
    return splits


# --------------------------------------------------------------------------------- evolution


class SiteLog:
    """Site identities: per-site rates and the insertion blocks that created non-root sites."""

    def __init__(self, n_root: int, gamma_alpha: float, rng: np.random.Generator):
        self.gamma_alpha = gamma_alpha
        self.rng = rng
        self.rates = self.draw_rates(n_root)
        self.n_root = n_root
        self.n_sites = n_root
        self.anchors: list[int] = []
        self.starts: list[int] = []
        self.lengths: list[int] = []

    def draw_rates(self, k: int) -> np.ndarray:
        """Gamma rates with mean 1 (shape alpha), or all 1 when alpha is 0 (no heterogeneity)."""
        if self.gamma_alpha <= 0:
            return np.ones(k)
        return self.rng.gamma(self.gamma_alpha, 1.0 / self.gamma_alpha, size=k)

    def insert(self, anchor: int, k: int) -> np.ndarray:
        """Create k new sites placed after site `anchor` (-1: sequence start); return their ids."""
        ids = np.arange(self.n_sites, self.n_sites + k, dtype=np.int32)
        self.anchors.append(anchor)
        self.starts.append(self.n_sites)
        self.lengths.append(k)
        self.n_sites += k
        if self.n_sites > len(self.rates):
            grown = np.empty(2 * self.n_sites)
            grown[: len(self.rates)] = self.rates
            self.rates = grown
        self.rates[ids] = self.draw_rates(k)
        return ids


def substitute(res: np.ndarray, rates: np.ndarray, t: float, kappa: float,
               rng: np.random.Generator) -> np.ndarray:
    """K2P change over time t for every site at once (kappa=1 is Jukes-Cantor).

    Codes A=0 C=1 G=2 T=3: a transition flips bit 1 (A<->G, C<->T), a transversion xors 1 or 3.
    Rates are normalised to one expected substitution per site per unit time.
    """
    beta = 1.0 / (kappa + 2.0)
    alpha = kappa * beta
    rt = rates * t
    e_tv = np.exp(-4.0 * beta * rt)
    p_ts = 0.25 + 0.25 * e_tv - 0.5 * np.exp(-2.0 * (alpha + beta) * rt)
    p_tv = 0.5 * (1.0 - e_tv)
    u = rng.random(len(res))
    out = res.copy()
    out[u < p_ts] ^= 2
    tv = (u >= p_ts) & (u < p_ts + p_tv)
    out[tv] ^= np.where(u[tv] < p_ts[tv] + 0.5 * p_tv[tv], 1, 3).astype(np.uint8)
    return out


def substitute_poisson(res: np.ndarray, rates: np.ndarray, t: float, n_states: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Poisson (Jukes-Cantor for n_states) change over time t for every site at once: a site
    changes with probability (K-1)/K (1 - exp(-K/(K-1) r t)), to any other state alike."""
    k = n_states
    changed = rng.random(len(res)) < (k - 1) / k * (1.0 - np.exp(-k / (k - 1) * rates * t))
    out = res.copy()
    out[changed] = (res[changed] + rng.integers(1, k, size=int(changed.sum()))) % k
    return out


#: The LG amino-acid replacement model (Le & Gascuel 2008, Mol. Biol. Evol. 25:1307-1320; the
#: published lg.dat, as PAML and RAxML ship it): exchangeabilities, lower triangle by rows in the
#: order ARNDCQEGHILKMFPSTWYV (row k holds the pairs of residue k with residues 0..k-1), then the
#: equilibrium frequencies.
LG_EXCHANGEABILITIES = """
0.425093
0.276818 0.751878
0.395144 0.123954 5.076149
2.489084 0.534551 0.528768 0.062556
0.969894 2.807908 1.695752 0.523386 0.084808
1.038545 0.363970 0.541712 5.243870 0.003499 4.128591
2.066040 0.390192 1.437645 0.844926 0.569265 0.267959 0.348847
0.358858 2.426601 4.509238 0.927114 0.640543 4.813505 0.423881 0.311484
0.149830 0.126991 0.191503 0.010690 0.320627 0.072854 0.044265 0.008705 0.108882
0.395337 0.301848 0.068427 0.015076 0.594007 0.582457 0.069673 0.044261 0.366317 4.145067
0.536518 6.326067 2.145078 0.282959 0.013266 3.234294 1.807177 0.296636 0.697264 0.159069 0.137500
1.124035 0.484133 0.371004 0.025548 0.893680 1.672569 0.173735 0.139538 0.442472 4.273607 6.312358 0.656604
0.253701 0.052722 0.089525 0.017416 1.105251 0.035855 0.018811 0.089586 0.682139 1.112727 2.592692 0.023918
 1.798853
1.177651 0.332533 0.161787 0.394456 0.075382 0.624294 0.419409 0.196961 0.508851 0.078281 0.249060 0.390322
 0.099849 0.094464
4.727182 0.858151 4.008358 1.240275 2.784478 1.223828 0.611973 1.739990 0.990012 0.064105 0.182287 0.748683
 0.346960 0.361819 1.338132
2.139501 0.578987 2.000679 0.425860 1.143480 1.080136 0.604545 0.129836 0.584262 1.033739 0.302936 1.136863
 2.020366 0.165001 0.571468 6.472279
0.180717 0.593607 0.045376 0.029890 0.670128 0.236199 0.077852 0.268491 0.597054 0.111660 0.619632 0.049906
 0.696175 2.457121 0.095131 0.248862 0.140825
0.218959 0.314440 0.612025 0.135107 1.165532 0.257336 0.120037 0.054679 5.306834 0.232523 0.299648 0.131932
 0.481306 7.803902 0.089613 0.400547 0.245841 3.151815
2.547870 0.170887 0.083688 0.037967 1.959291 0.210332 0.245034 0.076701 0.119013 10.649107 1.702745 0.185202
 1.898718 0.654683 0.296501 0.098369 2.188158 0.189510 0.249313
"""
LG_FREQUENCIES = """
0.079066 0.055941 0.041977 0.053052 0.012937 0.040767 0.071586 0.057337 0.022355 0.062157
0.099081 0.064600 0.022951 0.042302 0.044040 0.061197 0.053287 0.012066 0.034155 0.069147
"""


class ReplacementModel:
    """A reversible amino-acid model (LG): P(t) = V exp(t Lambda) V^-1 from one eigendecomposition,
    with Q normalised to one expected replacement per site per unit time."""

    def __init__(self, exchangeabilities: str, frequencies: str) -> None:
        values = np.array(exchangeabilities.split(), dtype=float)
        self.frequencies = np.array(frequencies.split(), dtype=float)
        self.frequencies /= self.frequencies.sum()
        k = len(self.frequencies)
        s = np.zeros((k, k))
        s[np.tril_indices(k, -1)] = values  # row-major lower triangle, as the file lists it
        s += s.T
        q = s * self.frequencies[None, :]
        np.fill_diagonal(q, -q.sum(axis=1))
        q /= -(self.frequencies * np.diag(q)).sum()
        # symmetrise (reversibility) for a real, stable decomposition
        root = np.sqrt(self.frequencies)
        lam, u = np.linalg.eigh(root[:, None] * q / root[None, :])
        self.eigenvalues = lam
        self.left = u / root[:, None]  # V
        self.right = u.T * root[None, :]  # V^-1

    def transition_rows(self, res: np.ndarray, rt: np.ndarray) -> np.ndarray:
        """[n, K]: P(rt_i)[res_i, :] for every site (its state and its rate x time)."""
        rows = (self.left[res] * np.exp(np.outer(rt, self.eigenvalues))) @ self.right
        rows = np.clip(rows, 0.0, None)
        return rows / rows.sum(axis=1, keepdims=True)


LG = ReplacementModel(LG_EXCHANGEABILITIES, LG_FREQUENCIES)


def substitute_lg(res: np.ndarray, rates: np.ndarray, t: float, rng: np.random.Generator) -> np.ndarray:
    """LG change over time t for every site at once: each site's next state drawn from its row of
    P(rate x t)."""
    cumulative = np.cumsum(LG.transition_rows(res, rates * t), axis=1)
    u = rng.random(len(res))[:, None]
    return np.minimum((cumulative < u).sum(axis=1), len(LG.frequencies) - 1).astype(np.uint8)


def draw_residues(params: SimParams, k: int, rng: np.random.Generator) -> np.ndarray:
    """k residue codes for a root or an insertion: uniform, or LG's frequencies under `lg`."""
    if params.alphabet == "protein" and params.protein_model == "lg":
        return rng.choice(len(LG.frequencies), size=k, p=LG.frequencies).astype(np.uint8)
    return rng.integers(params.n_states, size=k, dtype=np.uint8)


def apply_indels(ids: np.ndarray, res: np.ndarray, t: float, params: SimParams, indel_rate: float, sites: SiteLog,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Insertion and deletion events over a branch of length t, in random order.

    Each kind occurs at rate indel_rate/2 per site per unit time (`SimParams.indel_rate_for`);
    lengths are geometric with mean indel_mean_length. A deletion never removes a sequence's last residue.
    """
    n = len(ids)
    rate = 0.5 * indel_rate * t
    kinds = np.array([True] * rng.poisson(rate * (n + 1)) + [False] * rng.poisson(rate * n))
    p = 1.0 / params.indel_mean_length
    for is_insertion in rng.permutation(kinds):
        k = int(rng.geometric(p))
        if is_insertion:
            pos = int(rng.integers(len(ids) + 1))
            new = sites.insert(int(ids[pos - 1]) if pos else -1, k)
            ids = np.concatenate([ids[:pos], new, ids[pos:]])
            res = np.concatenate([res[:pos], draw_residues(params, k, rng), res[pos:]])
        else:
            pos = int(rng.integers(len(ids)))
            k = min(k, len(ids) - pos, len(ids) - 1)
            ids = np.concatenate([ids[:pos], ids[pos + k:]])
            res = np.concatenate([res[:pos], res[pos + k:]])
    return ids, res


def evolve(tree: Tree, params: SimParams, rng: np.random.Generator
           ) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], SiteLog]:
    """Evolve a random root sequence down the tree; return each tip's (site ids, residue codes).

    Depth-first, so only the sequences along the current path are held; a branch's events are
    always logged after those of every branch above it (which `site_order` relies on).
    """
    sites = SiteLog(params.columns, params.gamma_alpha, rng)
    indel_rate = params.indel_rate_for(float(tree.length.sum()))
    root = (np.arange(params.columns, dtype=np.int32),
            draw_residues(params, params.columns, rng))
    tips, stack = {}, [(0, *root)]
    while stack:
        v, ids, res = stack.pop()
        if tree.is_tip(v):
            tips[v] = (ids, res)
            continue
        for c in tree.children(v):
            t = float(tree.length[c])
            if params.alphabet == "dna":
                child_res = substitute(res, sites.rates[ids], t, params.kappa, rng)
            elif params.protein_model == "lg":
                child_res = substitute_lg(res, sites.rates[ids], t, rng)
            else:
                child_res = substitute_poisson(res, sites.rates[ids], t, params.n_states, rng)
            stack.append((c, *apply_indels(ids, child_res, t, params, indel_rate, sites, rng)))
    return tips, sites


def site_order(n_root: int, anchors: list[int], starts: list[int], lengths: list[int]
               ) -> np.ndarray:
    """All site ids in true-alignment column order.

    A block inserted after site x goes right after x, before every block inserted after x
    earlier: when two such blocks share a sequence, the later one was inserted in a descendant
    lineage and so lies between x and the earlier block there. Blocks from unrelated lineages
    never share a sequence, so their relative order is free; newest-first is used for all.
    Emission is a depth-first walk: a site, then its blocks (newest first), each expanded alike.
    """
    blocks_after: dict[int, list[int]] = {}
    for b in range(len(anchors) - 1, -1, -1):
        blocks_after.setdefault(anchors[b], []).append(b)
    order: list[int] = []
    stack = list(range(n_root - 1, -1, -1)) + [-1]
    while stack:
        site = stack.pop()
        if site >= 0:
            order.append(site)
        for b in reversed(blocks_after.get(site, ())):
            stack.extend(range(starts[b] + lengths[b] - 1, starts[b] - 1, -1))
    return np.array(order, dtype=np.int64)


def true_alignment(tip_seqs: list[tuple[np.ndarray, np.ndarray]], sites: SiteLog, letters: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The true MSA (ASCII rows in `tip_seqs` order) and the column of every site (-1: none).

    Only sites that survive in at least one tip get a column.
    """
    order = site_order(sites.n_root, sites.anchors, sites.starts, sites.lengths)
    present = np.zeros(sites.n_sites, dtype=bool)
    for ids, _ in tip_seqs:
        present[ids] = True
    columns = order[present[order]]
    column_of = np.full(sites.n_sites, -1, dtype=np.int64)
    column_of[columns] = np.arange(len(columns))
    msa = np.full((len(tip_seqs), len(columns)), GAP, dtype=np.uint8)
    for row, (ids, res) in enumerate(tip_seqs):
        msa[row, column_of[ids]] = letters[res]
    return msa, column_of


# -------------------------------------------------------------------------------------- reads


def add_errors(codes: np.ndarray, columns: np.ndarray, rate: float, rng: np.random.Generator,
               n_states: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Sequencing errors: a substitution keeps its column, an inserted residue gets -1, a deletion
    drops a residue and its column."""
    sub, ins, dele = (rate * share for share in ERROR_SHARES)
    kind = rng.choice(4, size=len(codes), p=[1.0 - rate, sub, ins, dele])
    codes = codes.copy()
    is_sub = kind == 1
    codes[is_sub] = (codes[is_sub] + rng.integers(1, n_states, size=int(is_sub.sum()))) % n_states
    repeats = np.where(kind == 3, 0, np.where(kind == 2, 2, 1))
    index = np.repeat(np.arange(len(codes)), repeats)
    codes, columns = codes[index], columns[index].copy()
    added = np.cumsum(repeats)[kind == 2] - 1
    codes[added] = rng.integers(n_states, size=len(added), dtype=np.uint8)
    columns[added] = -1
    return codes, columns


def cut_reads(sources: list[tuple[str, np.ndarray, np.ndarray]], n_ref_columns: int,
              params: SimParams, rng: np.random.Generator) -> list[Read]:
    """Reads from uniformly chosen held-out taxa at uniform positions, with errors and strand.

    `sources` holds (name, residue codes, reference column per residue). Lengths are normal around
    read_length, at least MIN_READ_LENGTH and always shorter than the reference alignment.
    """
    width = max(6, len(str(params.reads)))
    reads = []
    for i in range(params.reads):
        name, codes, columns = sources[int(rng.integers(len(sources)))]
        upper = min(len(codes), n_ref_columns - 1)
        drawn = round(rng.normal(params.read_length, params.read_length_sd * params.read_length))
        length = int(np.clip(drawn, min(MIN_READ_LENGTH, upper), upper))
        start = int(rng.integers(len(codes) - length + 1))
        read, truth = add_errors(codes[start:start + length], columns[start:start + length],
                                 params.error_rate, rng, params.n_states)
        read, truth = read[: n_ref_columns - 1], truth[: n_ref_columns - 1]
        strand = "-" if rng.random() < params.reverse_fraction else "+"
        if strand == "-":
            read, truth = 3 - read[::-1], truth[::-1]
        reads.append(Read(f"read_{i + 1:0{width}d}", name, strand, params.letters[read].tobytes(),
                          truth.astype(np.int32)))
    return reads


# ---------------------------------------------------------------------------------- pipeline


def simulate(params: SimParams) -> Simulation:
    """Run the whole simulation; every random draw comes from one Generator seeded by `seed`."""
    rng = np.random.default_rng(params.seed)
    n_total = params.taxa + params.n_held_out
    tree = name_tips(scale_tree(yule_tree(n_total, rng), params.divergence), params.taxa, rng)
    tip_seqs, sites = evolve(tree, params, rng)
    by_name = {tree.names[v]: seq for v, seq in tip_seqs.items()}
    ref_names = sorted(n for n in by_name if n.startswith(REF_PREFIX))
    held_names = sorted(n for n in by_name if n.startswith(HELD_OUT_PREFIX))
    truth_names = ref_names + held_names
    msa, column_of = true_alignment([by_name[n] for n in truth_names], sites, params.letters)
    in_ref = (msa[: len(ref_names)] != GAP).any(axis=0)
    ref_column = np.where(in_ref, np.cumsum(in_ref) - 1, -1)
    sources = [(n, by_name[n][1], ref_column[column_of[by_name[n][0]]]) for n in held_names]
    return Simulation(
        params=params,
        full_tree=tree,
        reference_tree=prune(tree, set(ref_names)),
        ref_names=ref_names,
        ref_alignment=msa[: len(ref_names)][:, in_ref],
        truth_names=truth_names,
        truth_alignment=msa,
        tip_sequences={n: params.letters[by_name[n][1]].tobytes() for n in truth_names},
        splits=attachment_splits(tree, ref_names),
        reads=cut_reads(sources, int(in_ref.sum()), params, rng),
    )


def fasta_lines(names: list[str], rows: Iterable[bytes]) -> Iterator[bytes]:
    """FASTA with one line per sequence, one record at a time."""
    for name, row in zip(names, rows):
        yield b">%s\n%s\n" % (name.encode(), row)


def phylip_lines(names: list[str], alignment: np.ndarray) -> Iterator[bytes]:
    """Sequential relaxed PHYLIP: names padded to a common width, one space, the row."""
    width = max(map(len, names))
    yield b"%d %d\n" % alignment.shape
    for name, row in zip(names, alignment):
        yield b"%s %s\n" % (name.ljust(width).encode(), row.tobytes())


def truth_lines(sim: Simulation) -> Iterator[bytes]:
    """truth.tsv: the reproducing command as a '#' line, a header, then one row per read."""
    yield ("# " + sim.params.command() + "\nname\tsource\tstrand\ttrue_split\ttrue_columns\n").encode()
    for r in sim.reads:
        columns = ",".join(map(str, r.columns.tolist()))
        yield f"{r.name}\t{r.source}\t{r.strand}\t{sim.splits[r.source]}\t{columns}\n".encode()


def write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Write `chunks` to a temporary name beside `path`, renamed to `path` once complete.

    A large reference (10^5 taxa) is gigabytes of text: rendered whole, a file took the text,
    its row copies and the alignment in memory at once, and a run killed while writing left a
    file without its last lines that looked complete. Streamed, memory holds one row; renamed
    at the end, a file that exists is whole.
    """
    partial = path.with_name(f".{path.name}.partial")
    try:
        with open(partial, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)


def write_outputs(sim: Simulation, out: Path) -> None:
    """Write every output file of scripts/README.md into `out` (created if missing), each
    streamed row by row and renamed into place when complete (`write_atomically`)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "tree.nwk": lambda: [newick(sim.reference_tree, unrooted=True).encode()],
        "truth_tree.nwk": lambda: [newick(sim.full_tree, unrooted=False).encode()],
        "ref.phy": lambda: phylip_lines(sim.ref_names, sim.ref_alignment),
        "ref.fasta": lambda: fasta_lines(sim.ref_names, (r.tobytes() for r in sim.ref_alignment)),
        "reads.fa": lambda: fasta_lines([r.name for r in sim.reads], (r.sequence for r in sim.reads)),
        "truth.tsv": lambda: truth_lines(sim),
        "truth_alignment.fasta": lambda: fasta_lines(sim.truth_names, (r.tobytes() for r in sim.truth_alignment)),
    }
    for name, render in files.items():
        write_atomically(out / name, render())


# --------------------------------------------------------------------------------------- CLI


def fraction(text: str) -> float:
    """argparse type: a float in [0, 1]."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


def positive(text: str) -> float:
    """argparse type: a float > 0."""
    value = float(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"{text} is not > 0")
    return value


def at_least(minimum: float, kind: type = int):
    """argparse type factory: a number of `kind` that is >= minimum."""
    def parse(text: str):
        value = kind(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below {minimum}")
        return value
    return parse


def parse_args(argv: list[str]) -> tuple[Path, SimParams]:
    """Command line -> (output directory, parameters)."""
    d = SimParams()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of every random draw")
    p.add_argument("--taxa", type=at_least(3), default=d.taxa, help="reference taxa")
    p.add_argument("--held-out", type=at_least(1), default=None,
                   help="taxa simulated but kept out of the reference (default max(3, taxa//5))")
    p.add_argument("--columns", type=at_least(2), default=d.columns, help="root sequence length")
    p.add_argument("--divergence", type=positive, default=d.divergence,
                   help="mean pairwise tip distance, expected substitutions per site")
    p.add_argument("--kappa", type=positive, default=d.kappa,
                   help="K2P transition/transversion rate ratio (1 = Jukes-Cantor)")
    p.add_argument("--gamma-alpha", type=at_least(0.0, float), default=d.gamma_alpha,
                   help="gamma shape of site rates (0 = equal rates)")
    p.add_argument("--indel-rate", type=at_least(0.0, float), default=d.indel_rate,
                   help="indel events per site per expected substitution (half insertions)")
    p.add_argument("--target-columns", type=at_least(2), default=None,
                   help="choose the indel rate (instead of --indel-rate) so that the alignment is about this "
                        "wide; a fixed rate widens it with the taxa")
    p.add_argument("--indel-mean-length", type=at_least(1.0, float), default=d.indel_mean_length,
                   help="mean of the geometric indel length")
    p.add_argument("--reads", type=at_least(1), default=d.reads, help="number of reads")
    p.add_argument("--read-length", type=at_least(1), default=d.read_length,
                   help="mean read length")
    p.add_argument("--read-length-sd", type=at_least(0.0, float), default=d.read_length_sd,
                   help="read length standard deviation, as a fraction of the mean")
    p.add_argument("--error-rate", type=fraction, default=d.error_rate,
                   help="sequencing errors per base (90%% substitutions, 5%% 1-bp insertions, "
                        "5%% 1-bp deletions)")
    p.add_argument("--reverse-fraction", type=fraction, default=d.reverse_fraction,
                   help="share of reads written reverse-complemented (DNA only)")
    p.add_argument("--alphabet", choices=list(LETTERS), default=d.alphabet,
                   help="dna (K2P, --kappa) or protein (--protein-model)")
    p.add_argument("--protein-model", choices=["poisson", "lg"], default=d.protein_model,
                   help="protein only: poisson (every replacement alike) or lg (Le & Gascuel 2008's empirical "
                        "matrix and frequencies)")
    args = vars(p.parse_args(argv))
    if args["alphabet"] != "dna" and args["reverse_fraction"] > 0:
        p.error("--reverse-fraction needs --alphabet dna: protein reads have no reverse strand")
    if args["alphabet"] == "dna" and args["protein_model"] != d.protein_model:
        p.error("--protein-model needs --alphabet protein")
    out = args.pop("out")
    return out, SimParams(**args)


def main(argv: list[str] | None = None) -> int:
    """Simulate and write the data set; a one-line summary goes to stderr."""
    out, params = parse_args(sys.argv[1:] if argv is None else argv)
    sim = simulate(params)
    write_outputs(sim, out)
    n, m = sim.ref_alignment.shape
    print(f"simulate.py: {n} reference taxa x {m} columns (root {params.columns}), "
          f"{params.n_held_out} held out, {len(sim.reads)} reads -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
