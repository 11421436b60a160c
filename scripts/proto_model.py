"""Prototype (measurement only, not the model): variants of Eq. 1's per-cell costs, scored on the
accuracy study's seven data sets (docs/ACCURACY.md, "Model variants beyond Eq. 1").

Eq. 1 (DESIGN.md section 4) is generalised to per-column cost tables, so one DP serves every variant:

    C_i(b)   cost of read state set b in column i, CGAP term included (Eq. 1: M_ij + CG_i)
    OE_i, E_i  deletion open+extend / extend of column i (Eq. 1: 0 in CGAP columns)
    I_ij   = min(S(i, j-1) + ins_open, I(i, j-1) + ins_ext)         (Eq. 1: ins_open = ins_ext)
    D_ij   = min(S(i-1, j) + OE_i, D(i-1, j) + E_i)
    S_ij   = min(S(i-1, j-1) + C_i(b_j), D_ij, I_ij)

band, boundaries and tie-breaking as DESIGN.md sections 4-5 (with Eq. 1's tables the scores and
traceback columns equal papara_py.pairwise's; `check` tests it). A variant is a function that
builds (C, OE, E) for an edge from the tree's directional state sets (papara_py.phylo.profiles).

Shortcut, stated in docs/ACCURACY.md: each read is scored only against the K candidate edges
(default 10) of an ordinary Eq. 1 run at `robust` (--candidates K), in the orientation that run
chose; the best of them under the variant is traced back. The robust run, the reads and MAFFT's
placements are cached per set under DATA/proto_cache (`prepare`).

    python3 scripts/proto_model.py prepare --data DATA [--sets ...] [--mafft] [--k 10]
    python3 scripts/proto_model.py check   --data DATA
    python3 scripts/proto_model.py diff    --data DATA --sets pyrg,rpsS [--variant V] [--names r1,r2]
    python3 scripts/proto_model.py eval    --data DATA --variant NAME[:k=v,...] [--variant ...] \
                                           [--sets ...] [--oracle] [--k 20] [--out R.jsonl]
    python3 scripts/proto_model.py build-val --data DATA --sets val-pyrg-101,...  # other seeds + MAFFT
    python3 scripts/proto_model.py table   --data DATA --out "R.jsonl;S.jsonl" [--sets ...]
    python3 scripts/proto_model.py variants                                 # the parameters

The recommendation of docs/ACCURACY.md is `--variant "model:cg=24,go=8,ge=8,ins=24,m1=5,m2=10,uninf=2"`.
DATA defaults to /work/accdata (the study's data folder: sets/NAME/, results.jsonl).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

ALL_SETS = ["pyrg", "pyrg-indel", "rpsS", "16S-gg", "16S-gg-454", "sim-low", "sim-high-np"]
ROBUST = (3, 6, 2, 2, 7)
INF = np.int64(1) << 40
CGAP_BIT, STATE_MASK = 0x10, 0x0F
GAP_STATE, RESIDUE_STATE = 0x10, 0x20
POP = np.array([s.bit_count() for s in range(256)], np.int64)


# ---------------------------------------------------------------------------------------------
# the cache: robust run (candidates, strands), reads, truth, directional sets, MAFFT
# ---------------------------------------------------------------------------------------------

class SetData:
    """One data set ready for prototypes: per read the encoded read (in the chosen orientation),
    its true columns in that orientation, the K candidate edges, and the tree's directional sets."""

    def __init__(self, data_dir: Path, set_name: str, k: int = 10, mafft: bool = False):
        from papara_py.io.inputs import match_tips, read_alignment, read_tree
        from papara_py.phylo import encoding
        from papara_py.phylo.profiles import ProfileBuilder
        from papara_py.phylo.tree import EdgeTree
        assert encoding.CGAP_BIT == CGAP_BIT and encoding.STATE_MASK == STATE_MASK
        self.name = set_name
        self.data = ba.Data.from_dir(data_dir / "sets" / set_name, set_name)
        cache = data_dir / "proto_cache" / f"{set_name}.k{k}.pkl"
        if cache.exists():
            run = pickle.loads(cache.read_bytes())
        else:
            run = self._robust_run(k)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_bytes(pickle.dumps(run))
        mcache = data_dir / "proto_cache" / f"{set_name}.mafft.pkl"
        if mafft and not mcache.exists():
            with tempfile.TemporaryDirectory() as tmp:
                placements, _ = ba.run_mafft(self.data, Path(tmp))
            mcache.write_bytes(pickle.dumps({n: p.columns for n, p in placements.items()}))
        self.mafft = pickle.loads(mcache.read_bytes()) if mcache.exists() else None
        self.tree = EdgeTree.from_dendropy(read_tree(str(self.data.tree)))
        tips = frozenset(self.tree.tip_names)
        split_edge = {ba.normalise_split(self.tree.edge_split(e), tips): e for e in range(self.tree.n_edges)}
        self.tip_rows = match_tips(self.tree.tip_names, read_alignment(str(self.data.alignment)),
                                   str(self.data.tree)).tip_rows
        self.builder = ProfileBuilder(self.tree, self.tip_rows)
        self.down, self.up = self.builder._down, self.builder._up  # packed directional sets [E, m]
        self.m = self.down.shape[1]
        self.reads = []  # (name, encoded read, reversed?, true cols in read orientation, true edge, cands)
        for name, seq, strand, cand, cscore in zip(run["names"], run["seqs"], run["strands"], run["cand"],
                                                   run["cand_score"]):
            if name not in self.data.truth:
                continue
            cols, split = self.data.truth[name]
            raw = np.frombuffer(seq.encode(), np.uint8)
            rev = strand == "-"
            if rev:
                raw, cols = encoding.reverse_complement(raw), cols[::-1]
            edges = [int(e) for e in cand if e >= 0]
            self.reads.append((name, encoding.encode_read(raw), rev, list(cols),
                               split_edge.get(split) if split is not None else None, edges,
                               [int(s) for s, e in zip(cscore, cand) if e >= 0]))

    def _robust_run(self, k: int) -> dict:
        import h5py
        RunConfig, run, ScoringParams = ba._papara_adapter()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run.h5"
            run(RunConfig(tree=str(self.data.tree), alignment=str(self.data.alignment), reads=str(self.data.reads),
                          output=str(out), threads=2, device="cpu", params=ScoringParams(*ROBUST),
                          candidates=k))
            with h5py.File(out) as f:
                return {"names": list(f["reads/names"].asstr()[:]), "seqs": list(f["reads/sequence"].asstr()[:]),
                        "strands": list(f["reads/strand"].asstr()[:]), "cand": f["reads/candidates/edge"][:],
                        "cand_score": f["reads/candidates/score"][:]}

    def profile(self, e: int) -> np.ndarray:
        return self.builder.profiles(np.array([e]))[0]


# ---------------------------------------------------------------------------------------------
# the generalised DP
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def fill(read, C, OE, E, io, ie):
    n = read.shape[0]
    m = C.shape[0]
    w = m - n + 1
    S = np.empty((n, w), np.int64)
    D = np.empty((n, w), np.int64)
    I = np.empty((n, w), np.int64)
    for j in range(n):
        b = read[j]
        for k in range(w):
            i = j + k
            diag = (S[j - 1, k] if j > 0 else 0) + C[i, b]
            if k > 0:
                d = min(S[j, k - 1] + OE[i], D[j, k - 1] + E[i])
            else:
                d = INF
            if k < w - 1:
                if j > 0:
                    ins = min(S[j - 1, k + 1] + io, I[j - 1, k + 1] + ie)
                else:
                    ins = io
            else:
                ins = INF
            D[j, k] = d
            I[j, k] = ins
            S[j, k] = min(diag, min(d, ins))
    return S, D, I


@njit(cache=True)
def score_only(read, C, OE, E, io, ie):
    n = read.shape[0]
    m = C.shape[0]
    w = m - n + 1
    prevS = np.zeros(w + 1, np.int64)
    prevI = np.full(w + 1, INF, np.int64)
    curS = np.empty(w + 1, np.int64)
    curI = np.empty(w + 1, np.int64)
    for j in range(n):
        b = read[j]
        d = INF
        for k in range(w):
            i = j + k
            diag = prevS[k] + C[i, b]
            if k > 0:
                d = min(curS[k - 1] + OE[i], d + E[i])
            ins = min(prevS[k + 1] + io, prevI[k + 1] + ie) if k < w - 1 else INF
            curI[k] = ins
            curS[k] = min(diag, min(d, ins))
        for k in range(w):
            prevS[k] = curS[k]
            prevI[k] = curI[k]
        prevS[w] = INF
        prevI[w] = INF
    best = prevS[0]
    for k in range(w):
        best = min(best, prevS[k])
    return best


@njit(cache=True)
def trace(read, C, OE, E, io, ie):
    """(score, column per residue, -1 = insertion); ties: diagonal, D (open first), I (open first)."""
    n = read.shape[0]
    S, D, I = fill(read, C, OE, E, io, ie)
    w = S.shape[1]
    k = 0
    for kk in range(w):
        if S[n - 1, kk] < S[n - 1, k]:
            k = kk
    score = S[n - 1, k]
    cols = np.full(n, -1, np.int64)
    j = n - 1
    state = 0
    while j >= 0:
        i = j + k
        if state == 1:
            state = 0 if D[j, k] == S[j, k - 1] + OE[i] else 1
            k -= 1
            continue
        if state == 2:
            opened = (j == 0) or I[j, k] == S[j - 1, k + 1] + io
            state = 0 if opened else 2
            j -= 1
            k += 1
            continue
        diag = (S[j - 1, k] if j > 0 else 0) + C[i, read[j]]
        if S[j, k] == diag:
            cols[j] = i
            j -= 1
        elif S[j, k] == D[j, k]:
            state = 1
        else:
            state = 2
    return score, cols


# ---------------------------------------------------------------------------------------------
# variants: each returns (C [m,16] int64, OE [m], E [m], io, ie) for an edge
# ---------------------------------------------------------------------------------------------

def _min_over_bits(cost4: np.ndarray) -> np.ndarray:
    """[m, 4] cost of A, C, G, T -> [m, 16] cost of a read state set (min over its states)."""
    m = cost4.shape[0]
    out = np.full((m, 16), INF, np.int64)
    for s in range(1, 16):
        for bit in range(4):
            if s >> bit & 1:
                out[:, s] = np.minimum(out[:, s], cost4[:, bit])
    out[:, 0] = 0
    return out


def _bits(packed: np.ndarray) -> np.ndarray:
    """packed nucleotide sets [m] -> bool [m, 4]."""
    return ((packed[:, None].astype(np.int64) >> np.arange(4)) & 1).astype(bool)


def _edge_sets(sd: SetData, e: int):
    """(down, up, combined) packed bytes of edge e."""
    from papara_py.phylo.profiles import combine_two
    a, b = sd.down[e], sd.up[e]
    return a, b, combine_two(a, b)


def _deletions(cgap: np.ndarray, go: int, ge: int):
    oe = np.where(cgap, 0, go + ge).astype(np.int64)
    ex = np.where(cgap, 0, ge).astype(np.int64)
    return oe, ex


def v_eq1(sd, e, mm=3, cg=6, go=2, ge=2, ins=7, ins_ext=None, cgm=None):
    """Eq. 1. cgm: cgap charged on a mismatch instead of cg (cg stays on matches)."""
    _, _, comb = _edge_sets(sd, e)
    cgap = (comb & 0x30) == GAP_STATE
    inset = _bits(comb)
    cgm = cg if cgm is None else cgm
    cost4 = np.where(inset, 0, mm) + np.where(cgap[:, None], np.where(inset, cg, cgm), 0)
    oe, ex = _deletions(cgap, go, ge)
    return _min_over_bits(cost4), oe, ex, ins, ins if ins_ext is None else ins_ext


def v_model(sd, e, mm=3, cg=6, go=2, ge=2, ins=7, ins_ext=None, m1=None, m2=None, cgg=None, cgb=None,
            cgm=None, delfree=0, uninf=0, m1u=None, mu=None, dgo=None, dge=None, deep=0, cap=4):
    """The general variant (all parameters optional; defaults give Eq. 1 at robust).

    Mismatch by extra parsimony steps at the edge's virtual root (Sankoff with unit costs: a root
    state s costs [s not in down set] + [s not in up set]; extra = that minus its minimum over
    states, 0..2): extra 1 costs m1, extra 2 costs m2. With m1 = m2 = mm this is Eq. 1 (a state
    outside the combined set has extra >= 1), except where one view is 'gap only' (see uninf).
    mm is used only where m1 or m2 is not given.
    CGAP by the two directional gap views: both 'gap only' costs cgg, one 'gap only' and the other
    'gap or residue' costs cgb (Eq. 1: both cg; the combined CGAP flag is exactly these two
    cases). cgm: replaces the cgap term when the residue is a mismatch (None: as on a match).
    delfree: 0 deletions free in every CGAP column (Eq. 1), 1 only in 'both gap' columns.
    uninf: a directional set that carries no signal does not halve the cost: 1 = a set of all four
    states, 2 = a view whose gap character is 'gap only' (its ACGT comes from gaps); with one
    informative side, a residue outside it has extra 2; with none, extra 0.
    m1u: the cost of extra 1 where the two sets do not meet (a state in neither; None: m1).
    mu: the cost of a residue outside the one informative side (uninf; None: m2).
    dgo, dge: deletion open+extend / extend in a column that is not CGAP but where one directional
    view is 'gap only' (the subtree on one side lacks the column); None: go + ge / ge.
    deep=1: one level deeper: each side's cost of s is the number of its node's other neighbours
    whose directional sets lack s (a tip: 0 or 2), minus its minimum, not clipped at 1; the
    mismatch costs m1 per extra step, at most `cap` steps (m2 unused)."""
    dn, up = sd.down[e], sd.up[e]
    in_dn, in_up = _bits(dn), _bits(up)
    c = (~in_dn).astype(np.int64) + (~in_up).astype(np.int64)
    extra = c - c.min(axis=1, keepdims=True)
    if uninf:
        if uninf == 1:
            u_dn, u_up = (dn & 15) == 15, (up & 15) == 15
        else:
            u_dn, u_up = (dn & 0x30) == GAP_STATE, (up & 0x30) == GAP_STATE
        extra = np.where(u_dn[:, None] & ~u_up[:, None], 2 * (~in_up), extra)
        extra = np.where(u_up[:, None] & ~u_dn[:, None], 2 * (~in_dn), extra)
        extra = np.where((u_up & u_dn)[:, None], 0, extra)
        one_side = (u_dn ^ u_up)[:, None]
    else:
        one_side = np.zeros((dn.shape[0], 1), bool)
    m1 = mm if m1 is None else m1
    m2 = mm if m2 is None else m2
    if deep:
        rx, ry = _side_counts(sd, e, "down"), _side_counts(sd, e, "up")
        if uninf:
            u_dn, u_up = (dn & 0x30) == GAP_STATE, (up & 0x30) == GAP_STATE
            rx = np.where(u_dn[:, None], 0, rx)
            ry = np.where(u_up[:, None], 0, ry)
            both = (~u_dn & ~u_up)[:, None]
            tot = np.where(both, rx + ry, 2 * (rx + ry))
        else:
            tot = rx + ry
        extra = tot - tot.min(axis=1, keepdims=True)
        mis = np.minimum(extra, cap) * m1
    else:
        mis = np.where(extra == 0, 0, np.where(extra == 1, m1, m2))
    if m1u is not None:
        disjoint = ((dn & up & 15) == 0)[:, None]
        mis = np.where(disjoint & (extra == 1) & ~one_side, m1u, mis)
    if mu is not None:
        mis = np.where(one_side & (extra == 2), mu, mis)
    g_dn, g_up = (dn & 0x30) == GAP_STATE, (up & 0x30) == GAP_STATE
    b_dn, b_up = (dn & 0x30) == 0x30, (up & 0x30) == 0x30
    gg = g_dn & g_up
    gb = (g_dn & b_up) | (b_dn & g_up)
    cgg = cg if cgg is None else cgg
    cgb = cg if cgb is None else cgb
    cgcol = np.where(gg, cgg, np.where(gb, cgb, 0))[:, None]
    if cgm is not None:
        cgcol_m = np.where(gg | gb, cgm, 0)[:, None]
        cgterm = np.where(extra == 0, cgcol, cgcol_m)
    else:
        cgterm = cgcol
    cost4 = mis + cgterm
    free = gg if delfree else (gg | gb)
    oe, ex = _deletions(free, go, ge)
    if dgo is not None or dge is not None:
        half = (g_dn | g_up) & ~free
        oe = np.where(half, go + ge if dgo is None else dgo, oe)
        ex = np.where(half, ge if dge is None else dge, ex)
    return _min_over_bits(cost4), oe, ex, ins, ins if ins_ext is None else ins_ext


def _side_counts(sd, e, side):
    """[m, 4] relative Sankoff cost of each state on one side of edge e, one level deep: how many of
    the side node's other neighbours' directional sets lack the state (a tip: 0 if the state is in
    its set, else 2), minus the minimum over states."""
    tree = sd.tree
    if side == "down":
        node, sets = e, [sd.down[c] for c in tree.children(e).tolist()]
    else:
        node = int(tree.parent[e])
        sets = [sd.down[c] for c in tree.children(node).tolist() if c != e]
        if tree.parent[node] >= 0:
            sets.append(sd.up[node])
    if not sets:  # a tip
        own = sd.down[e]
        cnt = 2 * (~_bits(own)).astype(np.int64)
    else:
        cnt = sum((~_bits(x)).astype(np.int64) for x in sets)
    return cnt - cnt.min(axis=1, keepdims=True)


VARIANTS = {"eq1": v_eq1, "model": v_model}


def parse_variant(text: str):
    name, _, rest = text.partition(":")
    kw = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        kw[key] = float(value) if "." in value else int(value)
    return name, kw


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

def neighbour_edges(tree, e: int) -> list[int]:
    """The edges that share a node with edge e (e joins node e to its parent)."""
    p = int(tree.parent[e])
    out = tree.children(e).tolist() + [c for c in tree.children(p).tolist() if c != e]
    if tree.parent[p] >= 0:
        out.append(p)
    return out


def evaluate(sd: SetData, variant: str, kw: dict, k: int | None = None, oracle: bool = False) -> dict:
    """Column accuracy, best-edge hit rate, placements of a variant on one set. oracle: trace every
    read on its true edge (where it has one; the others as usual), to separate placement from
    alignment errors."""
    fn = VARIANTS[variant]
    kw = dict(kw)
    nbr = kw.pop("nbr", 0)  # traceback only: 1 = min, 2 = mean of the cost tables of the best edge and its neighbours
    tables: dict[int, tuple] = {}
    right = total = edges_right = edges_total = 0
    placed = {}
    for name, read, rev, tcols, tedge, cands, _ in sd.reads:
        cands = cands[:k] if k else cands
        if oracle and tedge is not None:
            cands = [tedge]
        scores = []
        for e in cands:
            if e not in tables:
                tables[e] = fn(sd, e, **kw)
            C, OE, E, io, ie = tables[e]
            scores.append(score_only(read, C, OE, E, io, ie) if read.shape[0] < sd.m else INF)
        if not cands or min(scores) >= INF:
            cols = [-1] * len(tcols)
            best = None
        else:
            best = cands[int(np.argmin(scores))]
            C, OE, E, io, ie = tables[best]
            if nbr:
                near = [tables.setdefault(x, fn(sd, x, **kw))[0] for x in neighbour_edges(sd.tree, best)]
                stack = np.stack([C] + near)
                C = stack.min(axis=0) if nbr == 1 else np.rint(stack.mean(axis=0)).astype(np.int64)
            _, c = trace(read, C, OE, E, io, ie)
            cols = c.tolist()
        placed[name] = (best, cols)
        scored = [(g, t) for g, t in zip(cols, tcols) if t >= 0]
        right += sum(g == t for g, t in scored)
        total += len(scored)
        if tedge is not None:
            edges_total += 1
            edges_right += best == tedge
    return {"column_accuracy": right / total, "edge_accuracy": edges_right / max(edges_total, 1),
            "wrong": total - right,
            "placed": placed}


def cmd_eval(args) -> None:
    sets = args.sets.split(",")
    loaded = {s: SetData(Path(args.data), s, args.k) for s in sets}
    mafft = {}
    for line in (Path(args.data) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["tool"] == "mafft":
            mafft[r["data"]] = r["column_accuracy"]
    for text in args.variant:
        variant, kw = parse_variant(text)
        row = {"variant": text, "k": args.k, **({"oracle": True} if args.oracle else {})}
        t0 = time.perf_counter()
        margins = []
        for s in sets:
            r = evaluate(loaded[s], variant, kw, oracle=args.oracle)
            row[s] = round(r["column_accuracy"], 4)
            row[s + "/edge"] = round(r["edge_accuracy"], 3)
            row[s + "/wrong"] = r["wrong"]
            margins.append(r["column_accuracy"] - mafft.get(s, 0))
        row["worst_margin"] = round(min(margins), 4)
        row["s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")


#: out-of-sample sets (not used to choose anything before they were scored): name -> (study set, seed)
VALIDATION = {"val-pyrg-101": ("pyrg", 101), "val-pyrg-102": ("pyrg", 102), "val-rpsS-101": ("rpsS", 101),
              "val-rpsS-102": ("rpsS", 102), "val-16S-gg-101": ("16S-gg", 101), "val-sim-low-101": ("sim-low", 101),
              "val-pyrg-indel-101": ("pyrg-indel", 101), "val-16S-gg-454-101": ("16S-gg-454", 101),
              "val-sim-high-np-101": ("sim-high-np", 101)}


def cmd_build_val(args) -> None:
    """Build the validation sets (the study's reference, pruning and read model, another seed),
    cache the robust run and MAFFT's placements, and record MAFFT's accuracy in DATA/results.jsonl."""
    import accuracy_study as st
    data_dir = Path(args.data)
    for name in args.sets.split(","):
        base, seed = VALIDATION[name]
        tree, aln, prune, reads, model, _ = st.SETS[base]
        out = data_dir / "sets" / name
        if not (out / "truth.tsv").exists():
            ba.leave_taxa_out(data_dir / tree, data_dir / aln, out, prune, reads, model, seed)
        sd = SetData(data_dir, name, args.k, mafft=True)
        placements = {n: ba.Placement(c) for n, c in sd.mafft.items()}
        r = ba.score(placements, sd.data.truth)
        with open(data_dir / "results.jsonl", "a") as f:
            f.write(json.dumps({"data": name, "tool": "mafft", "params": [], **r}) + "\n")
        print(name, json.dumps(r), flush=True)


def cmd_table(args) -> None:
    """Markdown rows of eval results (JSON lines files given with --out, ';'-separated); a set a
    row lacks is left blank and the worst margin is then over the sets it has (marked *)."""
    sets = args.sets.split(",")
    mafft, residues = {}, {}
    for line in (Path(args.data) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["tool"] == "mafft":
            mafft[r["data"]] = r["column_accuracy"]
            residues[r["data"]] = r["residues"]
    print("| variant | " + " | ".join(sets) + " | worst margin |")
    print("|---" * (len(sets) + 2) + "|")
    print("| MAFFT | " + " | ".join(f"{mafft[s]:.4f}" for s in sets) + " | - |")
    seen = set()
    for path in args.out.split(";"):
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            have = [s for s in sets if s in r]
            key = (r["variant"], r.get("oracle"), r.get("k"), tuple(have))
            if not have or key in seen:
                continue
            seen.add(key)
            for s in have:  # exact accuracies from the wrong counts (the rows round to 4 digits)
                if s + "/wrong" in r:
                    r[s] = 1 - r[s + "/wrong"] / residues[s]
            worst = min(r[s] - mafft[s] for s in have)
            name = r["variant"].replace("model:", "")
            print(f"| `{name}`{' (oracle)' if r.get('oracle') else ''}{' K=20' if r.get('k') == 20 else ''} | "
                  + " | ".join(f"{r[s]:.4f}" if s in r else "" for s in sets)
                  + f" | {worst:+.4f}{'*' if len(have) < len(sets) else ''} |")


def cmd_prepare(args) -> None:
    for s in args.sets.split(","):
        t0 = time.perf_counter()
        sd = SetData(Path(args.data), s, args.k, mafft=args.mafft)
        print(s, len(sd.reads), "reads", sd.down.shape, f"{time.perf_counter() - t0:.1f}s", flush=True)


def cmd_check(args) -> None:
    """Eq. 1 tables reproduce papara_py's reference scorer and traceback (robust run's best edge)."""
    from papara_py.model.params import ScoringParams
    from papara_py.model.reference_scorer import score_reference
    from papara_py.model.traceback import align
    p = ScoringParams(*ROBUST)
    for s in args.sets.split(","):
        sd = SetData(Path(args.data), s, args.k)
        bad = 0
        for name, read, rev, tcols, tedge, cands, cscores in sd.reads[:60]:
            for e, sc in zip(cands[:3], cscores[:3]):
                C, OE, E, io, ie = v_eq1(sd, e)
                mine = score_only(read, C, OE, E, io, ie)
                ref = score_reference(read, sd.profile(e), p)
                bad += mine != ref or mine != sc
            C, OE, E, io, ie = v_eq1(sd, cands[0])
            score, cols = trace(read, C, OE, E, io, ie)
            a = align(read, sd.profile(cands[0]), p)
            bad += ba.cigar_columns(a.start, a.cigar) != cols.tolist() or a.score != score
        print(s, "mismatches:", bad)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["prepare", "build-val", "check", "diff", "eval", "table", "variants"])
    ap.add_argument("--data", default="/work/accdata")
    ap.add_argument("--sets", default=",".join(ALL_SETS))
    ap.add_argument("--k", type=int, default=10, help="candidate edges per read from the robust run")
    ap.add_argument("--mafft", action="store_true", help="prepare: also run and cache MAFFT's placements")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--oracle", action="store_true", help="eval: trace each read on its true edge")
    ap.add_argument("--out", help="eval: append result rows (JSON lines) here")
    ap.add_argument("--names", help="diff: show these reads (comma-separated) whatever their counts")
    ap.add_argument("--show", type=int, default=6, help="diff: reads shown column by column per set")
    args = ap.parse_args()
    if args.command == "variants":
        for name, fn in VARIANTS.items():
            print(f"{name}: {(fn.__doc__ or '').strip()}")
        return 0
    {"prepare": cmd_prepare, "build-val": cmd_build_val, "table": cmd_table, "check": cmd_check, "eval": cmd_eval,
     "diff": lambda a: cmd_diff(a)}[args.command](args)
    return 0


LETTER = "?ACMGRSVTWYHKDBN"


def _path_terms(read, comb, cols, mm, cg, go, ge, ins):
    """Eq. 1 terms of an explicit path (columns per residue, -1 = insertion) on one edge's sets."""
    cgap = (comb & 0x30) == GAP_STATE
    t = {"mismatch": 0, "cgap": 0, "deletion": 0, "insertion": 0}
    last = None
    for j, c in enumerate(cols):
        if c < 0:
            t["insertion"] += ins
            continue
        if last is not None and c > last + 1:
            opened = False
            for i in range(last + 1, c):
                if cgap[i]:
                    continue
                t["deletion"] += ge if opened else go + ge
                opened = True
        t["mismatch"] += 0 if comb[c] & read[j] & 15 else mm
        t["cgap"] += cg if cgap[c] else 0
        last = c
    return t


def path_cost(read, tables, cols) -> int:
    """Cost of an explicit path (columns per residue, -1 = insertion) under a variant's tables;
    free leading/trailing columns as in the DP."""
    C, OE, E, io, ie = tables
    total, last, prev_ins = 0, None, False
    for j, c in enumerate(cols):
        if c < 0:
            total += ie if prev_ins else io
            prev_ins = True
            continue
        prev_ins = False
        if last is not None and c > last + 1:
            total += OE[last + 1] + int(E[last + 2:c].sum())
        total += int(C[c, read[j]])
        last = c
    return total


def _describe(col, dn, up, comb, freq) -> str:
    """One column of the diff: combined set (down, up sets), CGAP flag (gap views), A/C/G/T/gap counts."""
    if col < 0:
        return "   ins".ljust(30)
    cgf = "G" if (comb[col] & 0x30) == GAP_STATE else "."
    cgd = "".join("g" if (x[col] & 0x30) == GAP_STATE else ("b" if (x[col] & 0x30) == 0x30 else "r")
                  for x in (dn, up))
    f = "/".join(str(x) for x in freq[col])
    return (f"{col:5d} {LETTER[comb[col] & 15]}({LETTER[dn[col] & 15]}{LETTER[up[col] & 15]}) "
            f"{cgf}({cgd}) {f}").ljust(30)


def cmd_diff(args) -> None:
    """Reads papara-py (robust) gets wrong and MAFFT right: the true path against the chosen and the
    true edge's profiles, column by column over the wrong stretch."""
    from collections import Counter
    for s in args.sets.split(","):
        sd = SetData(Path(args.data), s, args.k, mafft=True)
        vname, vkw = parse_variant(args.variant[0]) if args.variant else ("eq1", {})
        res = evaluate(sd, vname, vkw)
        freq = np.zeros((sd.m, 5), np.int64)  # A C G T gap counts per column among reference tips
        for code, col in ((65, 0), (67, 1), (71, 2), (84, 3)):
            freq[:, col] = ((sd.tip_rows | 32) == (code | 32)).sum(0)
        freq[:, 4] = sd.tip_rows.shape[0] - freq[:, :4].sum(1)
        agg = Counter()
        n_reads = 0
        for name, read, rev, tcols, tedge, cands, cscores in sd.reads:
            best, cols = res["placed"][name]
            mcols = sd.mafft.get(name)
            if mcols is None:
                continue
            mcols = mcols[::-1] if rev else mcols
            pw = sum(1 for g, t in zip(cols, tcols) if t >= 0 and g != t)
            mw = sum(1 for g, t in zip(mcols, tcols) if t >= 0 and g != t)
            agg["reads"] += 1
            agg["papara wrong residues"] += pw
            agg["mafft wrong residues"] += mw
            if args.names and name not in args.names.split(","):
                continue
            if not args.names and (pw < 3 or mw * 2 >= pw):
                continue
            n_reads += 1
            agg["diff reads"] += 1
            agg["diff reads: papara wrong"] += pw
            agg["diff reads: mafft wrong"] += mw
            agg["diff reads: chosen = true edge"] += best == tedge
            a_c, b_c, comb_c = _edge_sets(sd, best)
            te = tedge if tedge is not None else best
            a_t, b_t, comb_t = _edge_sets(sd, te)
            found = _path_terms(read, comb_c, cols, *ROBUST)
            true_c = _path_terms(read, comb_c, tcols, *ROBUST)
            true_t = _path_terms(read, comb_t, tcols, *ROBUST)
            for key, v in true_t.items():
                agg["true path on true edge: " + key] += v
            for key, v in found.items():
                agg["found path: " + key] += v
            # residue-level view of the wrong stretch on the true edge: why the true column is dear
            for j, (g, t) in enumerate(zip(cols, tcols)):
                if t < 0 or g == t:
                    continue
                r = int(read[j])
                for tag, (dn, up, comb), col in (("true", (a_t, b_t, comb_t), t), ("found", (a_c, b_c, comb_c), g)):
                    if col < 0:
                        agg[f"wrong res @{tag} col: insertion"] += 1
                        continue
                    inn = int(bool(dn[col] & r & 15)) + int(bool(up[col] & r & 15))
                    agg[f"wrong res @{tag} col: in {inn} of 2 directional sets"] += 1
                    agg[f"wrong res @{tag} col: in combined set"] += bool(comb[col] & r & 15)
                    agg[f"wrong res @{tag} col: CGAP"] += (comb[col] & 0x30) == GAP_STATE
                    gaps = int((dn[col] & 0x30) == GAP_STATE) + int((up[col] & 0x30) == GAP_STATE)
                    agg[f"wrong res @{tag} col: gap-only in {gaps} of 2 directional views"] += 1
                    agg[f"wrong res @{tag} col: set size {POP[comb[col] & 15]}"] += 1
                    base = {1: 0, 2: 1, 4: 2, 8: 3}.get(r)
                    if base is not None:
                        agg[f"wrong res @{tag} col: residue freq in column (sum)"] += freq[col, base]
                        agg[f"wrong res @{tag} col: gap freq in column (sum)"] += freq[col, 4]
            if n_reads > args.show:
                continue
            wrong = [j for j, (g, t) in enumerate(zip(cols, tcols)) if t >= 0 and g != t]
            lo, hi = max(0, wrong[0] - 3), min(len(cols), wrong[-1] + 4)
            tables_c, tables_t = VARIANTS[vname](sd, best, **vkw), VARIANTS[vname](sd, te, **vkw)
            print(f"== {s} {name} len {len(read)} papara wrong {pw} mafft wrong {mw}; chosen edge {best} "
                  f"true edge {tedge} (rank {cands.index(tedge) if tedge in cands else '-'}); Eq. 1 terms: found "
                  f"{sum(found.values())} {found}; true path on chosen {sum(true_c.values())}, on true edge "
                  f"{sum(true_t.values())} {true_t}")
            print(f"   variant {vname} {vkw}: found {path_cost(read, tables_c, cols)}; true path on chosen "
                  f"{path_cost(read, tables_c, tcols)}, on true edge {path_cost(read, tables_t, tcols)}")
            print("   j res | true col: set(dn/up) cg(dn/up) freq | papara col: set cg | mafft col")
            for j in range(lo, hi):
                r = LETTER[read[j]]
                mark = "*" if tcols[j] >= 0 and cols[j] != tcols[j] else " "
                print(f"{mark}{j:4d} {r}  | {_describe(tcols[j], a_t, b_t, comb_t, freq)} | "
                      f"{_describe(cols[j], a_c, b_c, comb_c, freq)} | "
                      f"{mcols[j]}")
        print(json.dumps({"data": s, **{k: int(v) for k, v in sorted(agg.items())}}, indent=0))


if __name__ == "__main__":
    sys.exit(main())
