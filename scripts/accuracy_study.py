"""The penalty study of notebook/ACCURACY.md: build the data sets, run the peers once, then papara-py
over a grid of (mismatch, cgap, gap_open, gap_extend, insertion) in one process.

    python3 scripts/accuracy_study.py build   --data DATA   # data sets -> DATA/sets/NAME
    python3 scripts/accuracy_study.py peers   --data DATA   # MAFFT, hmmalign, papara CLI (paper)
    python3 scripts/accuracy_study.py grid    --data DATA --stage coarse|fine|final
    python3 scripts/accuracy_study.py table   --data DATA   # summary + notebook/accuracy_study.png

The protein study (notebook/ACCURACY.md, "Protein defaults") is the same steps with `--suite protein`
(PROTEIN_SETS); `protein-refs` first turns the Pfam seed alignments (Stockholm) under DATA into
ref.fasta + tree.nwk (a neighbour-joining tree on Poisson-corrected distances: no tree is
published with them) + tree_ml.nwk (IQ-TREE's maximum-likelihood tree, LG+G4).

`--suite protein-dense` is real protein references of close sequences with a curated or
structure-based alignment (DENSE_REFS, notebook/ACCURACY.md "Dense real protein references"):
`protein-refs --suite protein-dense` turns them (Stockholm or MSF under DATA/dense) into ref.fasta
+ tree.nwk (neighbour joining only), then build, peers, grid and table as above.

`--suite protein-sim` is the simulated protein ladder (PROTEIN_SIM_SETS, notebook/ACCURACY.md
"Simulated protein families"): `simrefs` first simulates its references into DATA/simref/NAME
(scripts/simulate.py, both protein models), then build, peers, grid and table as above.

Results are appended to DATA/results.jsonl (one line per data set, tool and parameter point), so an
interrupted study resumes where it stopped. The references: see SETS (paths under --data) and the
provenance table in notebook/ACCURACY.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as ba

ILLUMINA = ba.ErrorModel(substitution=0.01)
INDEL = ba.ErrorModel(substitution=0.01, insertion=0.005, deletion=0.005, length_mean=150, length_sd=15)
HP454 = ba.ErrorModel(substitution=0.003, insertion=0.003, deletion=0.003, homopolymer=0.3,
                      length_mean=150, length_sd=15)
NANOPORE_LIKE = ba.ErrorModel(substitution=0.01, insertion=0.01, deletion=0.015, homopolymer=0.2,
                              length_mean=150, length_sd=15)

#: name: (tree, alignment relative to --data, or the pyrg default; prune K; reads; model; seed)
PYRG = str(Path(__file__).resolve().parents[1] / "tests" / "data" / "pyrg")  # the repository's copy
SETS = {
    "pyrg": (f"{PYRG}/tree.nwk", f"{PYRG}/ref.phy", 8, 80, ILLUMINA, 1),
    "pyrg-indel": (f"{PYRG}/tree.nwk", f"{PYRG}/ref.phy", 8, 100, INDEL, 2),
    "rpsS": ("rpsS/tree.nwk", "rpsS/ref.fasta", 20, 200, ILLUMINA, 1),
    "16S-gg": ("16S_gg/tree.nwk", "16S_gg/ref.fasta", 20, 200, ILLUMINA, 1),
    "16S-gg-454": ("16S_gg/tree.nwk", "16S_gg/ref.fasta", 20, 200, HP454, 3),
    "sim-low": ("simref/lowdiv/tree.nwk", "simref/lowdiv/ref.fasta", 15, 200, ILLUMINA, 1),
    "sim-high-np": ("simref/highdiv/tree.nwk", "simref/highdiv/ref.fasta", 15, 200, NANOPORE_LIKE, 1),
}

#: The protein study: 40-60 residue reads (mean 50), substitution-only or 1% subst + 1% indels.
PROT_SUB = ba.ErrorModel(substitution=0.01, length_mean=50, length_sd=5, min_length=40, max_length=60)
PROT_INDEL = ba.ErrorModel(substitution=0.01, insertion=0.005, deletion=0.005, length_mean=50, length_sd=5,
                           min_length=40, max_length=60)
PROTEIN_SETS = {
    "fn3": ("fn3/tree.nwk", "fn3/ref.fasta", 12, 500, PROT_SUB, 1),
    "fn3-indel": ("fn3/tree.nwk", "fn3/ref.fasta", 12, 500, PROT_INDEL, 2),
    "RRM": ("RRM_1/tree.nwk", "RRM_1/ref.fasta", 10, 500, PROT_SUB, 1),
    "RRM-indel": ("RRM_1/tree.nwk", "RRM_1/ref.fasta", 10, 500, PROT_INDEL, 2),
    "Pkinase": ("Pkinase/tree.nwk", "Pkinase/ref.fasta", 6, 500, PROT_SUB, 1),
    "Pkinase-indel": ("Pkinase/tree.nwk", "Pkinase/ref.fasta", 6, 500, PROT_INDEL, 2),
    "psim-low": ("simref/plow/tree.nwk", "simref/plow/ref.fasta", 15, 500, PROT_SUB, 1),
    "psim-high-indel": ("simref/phigh/tree.nwk", "simref/phigh/ref.fasta", 15, 500, PROT_INDEL, 1),
    # the same families with a maximum-likelihood tree (IQ-TREE, LG+G4), as users of EPA-ng hold
    "fn3-ml": ("fn3/tree_ml.nwk", "fn3/ref.fasta", 12, 500, PROT_SUB, 1),
    "fn3-ml-indel": ("fn3/tree_ml.nwk", "fn3/ref.fasta", 12, 500, PROT_INDEL, 2),
    "RRM-ml": ("RRM_1/tree_ml.nwk", "RRM_1/ref.fasta", 10, 500, PROT_SUB, 1),
    "RRM-ml-indel": ("RRM_1/tree_ml.nwk", "RRM_1/ref.fasta", 10, 500, PROT_INDEL, 2),
    "Pkinase-ml": ("Pkinase/tree_ml.nwk", "Pkinase/ref.fasta", 6, 500, PROT_SUB, 1),
    "Pkinase-ml-indel": ("Pkinase/tree_ml.nwk", "Pkinase/ref.fasta", 6, 500, PROT_INDEL, 2),
}
#: The Pfam seeds of the protein study (HMMER's tutorial and test suite; notebook/ACCURACY.md).
PFAM_SEEDS = {"fn3": "fn3/seed.sto", "RRM_1": "RRM_1/seed.sto", "Pkinase": "Pkinase/seed.sto"}


#: The simulated protein ladder: scripts/simulate.py references over divergence, indel rate and
#: taxon sampling, under both protein models; name -> simulate.py options (every other option at
#: its default, --held-out 3, --reads 10: the reads are cut by leave_taxa_out, not by simulate.py).
PROTEIN_SIM_REFS = {}
for _model, _first_seed in (("poisson", 200), ("lg", 300)):
    _shapes = ([(120, d, i) for d in (0.4, 1.0) for i in (0.01, 0.03, 0.05, 0.08)]
               + [(120, d, i) for d in (2.0, 3.0) for i in (0.03, 0.05)]
               + [(t, d, i) for t in (40, 80) for d in (3.0, 6.0) for i in (0.01, 0.02)])
    for _k, (_taxa, _div, _rate) in enumerate(_shapes):
        PROTEIN_SIM_REFS[f"{_model}-t{_taxa}-d{_div}-i{_rate}"] = {
            "seed": _first_seed + _k, "taxa": _taxa, "held_out": 3, "columns": 250, "divergence": _div,
            "indel_rate": _rate, "indel_mean_length": 2.0, "reads": 10, "alphabet": "protein", "protein_model": _model}
#: Each ladder reference with an eighth of its taxa (at least 4) left out, 500 reads with indels.
PROTEIN_SIM_SETS = {name: (f"simref/{name}/tree.nwk", f"simref/{name}/ref.fasta", max(4, o["taxa"] // 8), 500,
                           PROT_INDEL, 1) for name, o in PROTEIN_SIM_REFS.items()}

#: Real protein references of close sequences (median nearest-taxon identity 0.62-0.90) with a
#: hand-curated or structure-based alignment (notebook/ACCURACY.md, "Dense real protein references"):
#: name -> (the alignment under DATA, Stockholm or MSF; taxa left out). A Pfam seed (Biopython's
#: test copy) and BAliBASE 3.0 reference sets (RV20: a family with orphans; RV30: subfamilies).
DENSE_REFS = {
    "Cyclin_N": ("dense/Cyclin_N/seed.sto", 12),
    "BBS30004": ("dense/BBS30004/ref.msf", 6),
    "BBS30005": ("dense/BBS30005/ref.msf", 14),
    "BBS30013": ("dense/BBS30013/ref.msf", 10),
    "BBS30001": ("dense/BBS30001/ref.msf", 14),
    "BBS20040": ("dense/BBS20040/ref.msf", 10),
    "BBS30021": ("dense/BBS30021/ref.msf", 17),
    "BBS20025": ("dense/BBS20025/ref.msf", 10),
}
#: Each dense reference with its taxa left out, 500 reads with indels (the study's PROT_INDEL).
PROTEIN_DENSE_SETS = {name: (f"dense/{name}/tree.nwk", f"dense/{name}/ref.fasta", prune, 500, PROT_INDEL, 1)
                      for name, (_, prune) in DENSE_REFS.items()}
SUITES = {"dna": SETS, "protein": PROTEIN_SETS, "protein-sim": PROTEIN_SIM_SETS, "protein-dense": PROTEIN_DENSE_SETS}


def simulate_refs(data_dir: Path, names: list[str]) -> None:
    """Write the ladder's references (scripts/simulate.py output) into DATA/simref/NAME."""
    import simulate

    for name in names:
        sim = simulate.simulate(simulate.SimParams(**PROTEIN_SIM_REFS[name]))
        simulate.write_outputs(sim, data_dir / "simref" / name)
        print(name, "x".join(map(str, sim.ref_alignment.shape)), flush=True)


def nearest_identity(rows: dict[str, str]) -> float:
    """The median over the taxa of the identity to the closest other taxon (over the columns both
    fill): how close a reference's sequences are to one another (Pfam seeds 0.33-0.39, the
    simulated families of the ladder 0.44-0.97)."""
    import numpy as np

    a = np.array([np.frombuffer(r.upper().encode(), np.uint8) for r in rows.values()])
    filled = (a != ord("-")) & (a != ord("."))
    best = []
    for i in range(len(a)):
        both = filled[i] & filled
        identity = ((a[i] == a) & both).sum(axis=1) / np.maximum(both.sum(axis=1), 1)
        identity[i] = -1.0
        best.append(identity.max())
    return float(np.median(best))

def stockholm_rows(path: Path) -> dict[str, str]:
    """A Stockholm alignment's rows (all blocks joined), every column kept, '.' as '-', upper case;
    names made Newick-safe (characters other than letters, digits, '_' and '.' become '_')."""
    rows: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith(("#", "//")):
            continue
        name, seq = line.split()
        rows.setdefault(_newick_safe(name), []).append(seq)
    return {n: "".join(parts).upper().replace(".", "-") for n, parts in rows.items()}


def alignment_rows(path: Path) -> dict[str, str]:
    """Like `stockholm_rows`, for Stockholm (`.sto`) or GCG MSF (`.msf`, BAliBASE's format, read
    by Biopython; its '.' and '~' gaps become '-')."""
    if path.suffix != ".msf":
        return stockholm_rows(path)
    from Bio import AlignIO
    return {_newick_safe(r.id): str(r.seq).upper().replace(".", "-").replace("~", "-")
            for r in AlignIO.read(path, "msf")}


def _newick_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def nj_newick(rows: dict[str, str]) -> str:
    """Neighbour joining (Bio.Phylo) on Poisson-corrected amino-acid p-distances over the sites
    both rows fill; deterministic. Negative branch lengths are set to 0."""
    from io import StringIO

    import numpy as np
    from Bio import Phylo
    from Bio.Phylo.TreeConstruction import DistanceMatrix, DistanceTreeConstructor
    names = sorted(rows)
    arr = np.array([np.frombuffer(rows[n].encode(), dtype=np.uint8) for n in names])
    filled = arr != ord("-")
    matrix = []
    for i in range(len(names)):
        both = filled[i] & filled[:i + 1]
        same = (arr[:i + 1] == arr[i]) & both
        n_both = np.maximum(both.sum(axis=1), 1)
        p = np.minimum(1 - same.sum(axis=1) / n_both, 0.9)  # 0.9: keeps the correction finite
        d = -0.95 * np.log(1 - p / 0.95)
        matrix.append([float(x) for x in d[:i]] + [0.0])
    tree = DistanceTreeConstructor().nj(DistanceMatrix(names, matrix))
    for clade in tree.find_clades():
        if not clade.is_terminal():
            clade.name = None
        if clade.branch_length is not None and clade.branch_length < 0:
            clade.branch_length = 0.0
    out = StringIO()
    Phylo.write(tree, out, "newick")
    return out.getvalue()


def ml_newick(alignment: Path) -> str:
    """A maximum-likelihood tree of a protein alignment: IQ-TREE 2 (Debian's `iqtree2`), LG+G4,
    one thread and a fixed seed. Even so, one run on a loaded machine gave a tree one split apart
    from the tree two later runs gave (notebook/ACCURACY.md, "Maximum-likelihood reference trees")."""
    import shutil
    import subprocess
    import tempfile
    if shutil.which("iqtree2") is None:
        raise SystemExit("protein-refs needs iqtree2 for the ML trees (apt-get install iqtree)")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["iqtree2", "-s", str(alignment), "-m", "LG+G4", "-T", "1", "--seed", "1", "-quiet",
                        "-pre", f"{tmp}/ml"], check=True, stdout=subprocess.DEVNULL)
        return Path(f"{tmp}/ml.treefile").read_text()


def protein_refs(data_dir: Path, sources: dict[str, str], ml: bool) -> None:
    """Each source alignment (`sources`: name -> its path under DATA) as ref.fasta beside it, with
    a neighbour-joining tree.nwk and, if `ml`, an ML tree_ml.nwk."""
    for name, source in sources.items():
        rows = alignment_rows(data_dir / source)
        folder = (data_dir / source).parent
        ba.write_fasta(folder / "ref.fasta", rows.items())
        (folder / "tree.nwk").write_text(nj_newick(rows))
        if ml:
            (folder / "tree_ml.nwk").write_text(ml_newick(folder / "ref.fasta"))
        print(name, len(rows), "x", len(next(iter(rows.values()))), f"nearest-taxon identity {nearest_identity(rows):.3f}")


def parse_point(text: str) -> tuple:
    """A point m,c,o,e,i[,near[,weight[,temperature[,placement temperature]]]]: integer penalties,
    the column weight and the temperatures (numbers; 0 where not given, the placement temperature
    the temperature): `ScoringParams`' fields in order. ValueError for more values."""
    from papara_py.model.params import PARAMETER_NAMES

    values, fields = text.split(","), len(PARAMETER_NAMES)
    if len(values) > fields:
        raise ValueError(f"a point has at most {fields} values, got {text!r}")
    return (*(int(x) for x in values[:6]), *(float(x) for x in values[6:]))


def grid(stage: str) -> list[tuple[int, int, int, int, int]]:
    if stage == "coarse":
        return [p for p in itertools.product([2, 3, 4], [1, 3, 5], [1, 2, 3, 5], [1], [3, 5, 8])]
    if stage == "fine":  # around the coarse optimum (2,3,1..3,1,5), at x2 resolution (gap_extend 2)
        pts = list(itertools.product([3, 4, 5], [6], [0, 1, 2, 3, 4, 5], [2], [8, 10, 12]))
        pts += list(itertools.product([4], [6], [1, 2, 3, 4], [1], [8, 10, 12]))  # extend 0.5
        pts += [(4, 5, 2, 2, 10), (4, 8, 2, 2, 10), (4, 5, 3, 2, 10), (4, 8, 3, 2, 10)]  # cgap
        return pts
    if stage == "final":
        pts = [ba.PAPER, (2, 3, 2, 1, 5)]
        return pts
    if stage == "pcoarse":  # protein: around the provisional preset and robust, gap_extend 1 and 2
        pts = list(itertools.product([1, 2, 3], [2, 3, 5], [1, 2, 4], [1], [3, 5, 8]))
        pts += list(itertools.product([2, 3, 4, 5], [6], [2, 4], [2], [7, 10]))
        return pts
    if stage == "pwide":  # protein: the coarse grid's best moved to large gap_open and insertion
        pts = list(itertools.product([1, 2, 3], [2, 3, 4], [4, 6, 8, 12], [1], [5, 8, 12, 20]))
        pts += list(itertools.product([3, 4], [4, 6], [8, 12, 16], [2], [10, 16, 24]))
        return pts
    if stage == "pfine":  # protein: around the wide grid's best worst margin over MAFFT, 2/2/4/1/8, in half steps
        return list(itertools.product([3, 4, 5], [3, 4, 5, 6], [6, 8, 10], [2], [12, 16, 20]))
    # protein with column family residues (notebook/ACCURACY.md "Column family residues for protein"),
    # points m,c,o,e,i,near around the `protein` preset of the model before them (5,6,8,2,12,3;
    # the choice, 6,4,8,3,12,3, is family1-2's)
    if stage == "family1":
        return [(m, 6, o, 2, i, n) for m, n, o, i in itertools.product([4, 5, 6], [2, 3, 4], [6, 8, 10], [10, 12, 16])
                if n <= m]
    if stage == "family2":
        return list(itertools.product([5, 6], [4, 6, 8], [5, 6, 7, 8], [1, 2, 3], [10, 12, 14], [2, 3]))
    if stage == "family3":  # past family2's edges (cgap 4, gap_open 8, gap_extend 3) around its leaders
        return list(itertools.product([6, 7], [2, 3, 4, 5], [8, 9, 10, 12], [3, 4], [12, 14], [3, 4]))
    if stage == "family4":  # past family3's edge (gap_extend 4) around its pooled leader 7,5,8,4,14,4
        return list(itertools.product([7, 8], [4, 5, 6], [6, 7, 8, 9], [4, 5], [14, 16], [3, 4]))
    if stage.startswith("around:"):  # around:m,c,o,e,i,near: one penalty at a time 1 or 2 away from it
        lead = tuple(int(x) for x in stage.split(":")[1].split(","))
        points = {lead[:k] + (lead[k] + d,) + lead[k + 1:] for k in range(len(lead)) for d in (-2, -1, 1, 2)}
        return sorted(p for p in points if min(p) >= 0 and (len(p) < 6 or p[5] <= p[0]))
    raise ValueError(stage)


def _papara_task(task: tuple) -> dict:
    """One papara-py run of the grid: (data set folder, name, alphabet, point, threads) -> record."""
    folder, name, alphabet, point, threads = task
    r = ba.bench(ba.Data.from_dir(Path(folder), name, alphabet), ["papara-inproc"], point, threads)["papara-inproc"]
    return {"data": name, "tool": "papara-inproc"} | r | {"params": list(point)}


def run_papara_points(tasks: list[tuple], results: Path, procs: int) -> None:
    """Run papara-py tasks (`_papara_task`), `procs` processes at once (each numba-compiled once,
    one thread per task when procs > 1), appending each record to `results` as it finishes."""
    import multiprocessing

    t0 = time.time()
    if procs <= 1:
        records = map(_papara_task, tasks)
    else:
        pool = multiprocessing.get_context("fork").Pool(procs)
        records = pool.imap_unordered(_papara_task, [t[:4] + (1,) for t in tasks])
    for k, record in enumerate(records, 1):
        append(results, record)
        if k % 50 == 0 or k == len(tasks):
            print(f"{k}/{len(tasks)} runs, {time.time() - t0:.0f}s", flush=True)
    if procs > 1:
        pool.close()
        pool.join()


def load(data_dir: Path, name: str, alphabet: str = "dna") -> ba.Data:
    return ba.Data.from_dir(data_dir / "sets" / name, name, alphabet)


def done(results: Path) -> set[tuple[str, str, tuple]]:
    if not results.exists():
        return set()
    out = set()
    for line in results.read_text().splitlines():
        r = json.loads(line)
        out.add((r["data"], r["tool"], tuple(r.get("params") or ())))
    return out


def append(results: Path, record: dict) -> None:
    with open(results, "a") as handle:
        handle.write(json.dumps(record) + "\n")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["build", "peers", "grid", "table", "plot", "validate", "protein-refs", "simrefs"])
    p.add_argument("--suite", choices=list(SUITES), default="dna",
                   help="SETS (DNA), PROTEIN_SETS or PROTEIN_SIM_SETS (both --alphabet protein everywhere)")
    p.add_argument("--chosen", default="", help="plot: the chosen point m,c,o,e,i[,near]")
    p.add_argument("--png", default=str(Path(__file__).resolve().parent.parent / "notebook" / "accuracy_study.png"))
    p.add_argument("--data", required=True, help="folder of the study's data (notebook/ACCURACY.md, Reproduce)")
    p.add_argument("--stage", default="coarse")
    p.add_argument("--seeds", default="101,102,103",
                   help="validate --suite protein: the seeds (the dense replicates of --suite protein-dense: 2,3,4,5,6,7); "
                        "table --suite protein: the seeds pooled")
    p.add_argument("--sets", help="data set names (default: all of the suite)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--procs", type=int, default=1,
                   help="grid, validate --suite protein: papara-py runs at once, each in its own process "
                        "with one thread (numba compiles once per process)")
    p.add_argument("--results", help="results file (default DATA/results.jsonl; a model change needs a new "
                                     "one: copy the peers' lines into it)")
    p.add_argument("--val-results", help="validation results file (default DATA/val_results.jsonl; the dense "
                                         "replicates' DATA/dval_results.jsonl)")
    p.add_argument("--rank", choices=["worst", "sets", "reachable"], default="worst",
                   help="table --suite protein, pooled: rank by the worst margin then the mean; first by how many "
                        "margins are >= 0 (sets at or above the peer); or by the worst over the margins some point "
                        "brings to >= 0 (see `pooled`)")
    p.add_argument("--points", help="explicit points m,c,o,e,i[,near[,weight[,T]]];... (near: near_mismatch, "
                                    "default m; weight: the column profile cost's, default 0; T: the posterior "
                                    "step's temperature, default 0, the Viterbi traceback; instead of --stage)")
    p.add_argument("--peer", choices=["mafft", "better"], default="mafft",
                   help="table --suite protein: the pooled ranking's margin over MAFFT, or over the better of MAFFT "
                        "and hmmalign on each set and validation row")
    args = p.parse_args()
    data_dir = Path(args.data)
    results = Path(args.results) if args.results else data_dir / "results.jsonl"
    val_results = Path(args.val_results) if args.val_results else data_dir / (
        "dval_results.jsonl" if args.suite == "protein-dense" else "val_results.jsonl")
    alphabet = "dna" if args.suite == "dna" else "protein"
    suite = SUITES[args.suite]
    names = args.sets.split(",") if args.sets else list(suite)
    start = ba.PAPER if alphabet == "dna" else (2, 3, 2, 1, 5)  # the CLI run: the old default
    if args.what == "protein-refs":
        if args.suite == "protein-dense":
            protein_refs(data_dir, {name: source for name, (source, _) in DENSE_REFS.items() if name in names}, ml=False)
        else:
            protein_refs(data_dir, PFAM_SEEDS, ml=True)
        return 0
    if args.what == "simrefs":
        simulate_refs(data_dir, [name for name in names if name in PROTEIN_SIM_REFS])
        return 0
    if args.what == "build":
        for name in names:
            tree, aln, prune, reads, model, seed = suite[name]
            out = ba.leave_taxa_out(data_dir / tree, data_dir / aln, data_dir / "sets" / name, prune, reads, model, seed,
                                    alphabet)
            data = ba.Data.from_dir(out, name, alphabet)
            rows = ba.read_alignment(data.alignment)
            print(name, len(rows), "taxa x", len(next(iter(rows.values()))), "columns,", len(data.truth), "reads,",
                  f"nearest-taxon identity {nearest_identity(rows):.3f}")
        return 0
    if args.what == "peers":
        have = done(results)
        for name in names:
            data = load(data_dir, name, alphabet)
            for tool in ["papara", "mafft", "hmmalign"]:
                params = tuple(start) if tool == "papara" else ()
                if (name, tool, params) in have:
                    continue
                r = ba.bench(data, [tool], start, args.threads)[tool]
                append(results, {"data": name, "tool": tool, "params": list(params)} | r)
                print(name, tool, json.dumps(r), flush=True)
        return 0
    if args.what == "grid":
        points = [parse_point(s) for s in args.points.split(";")] if args.points else grid(args.stage)
        have = done(results)
        run_papara_points([(str(data_dir / "sets" / name), name, alphabet, point, args.threads)
                           for point in points for name in names if (name, "papara-inproc", point) not in have],
                          results, args.procs)
        return 0
    if args.what == "table":
        table(results, names, start)
        if alphabet == "protein" and val_results.exists():
            pooled(results, val_results, names, tuple(int(x) for x in args.seeds.split(",")),
                   better_peer=args.peer == "better", rank=args.rank)
        return 0
    if args.what == "validate":
        if alphabet == "protein":
            points = [parse_point(q) for q in args.points.split(";")] if args.points else [start]
            return validate_protein(data_dir, val_results, points, args.threads, [int(x) for x in args.seeds.split(",")],
                                    args.procs, dense=args.suite == "protein-dense")
        return validate(args.threads)
    if args.what == "plot":
        return plot(results, names, tuple(int(x) for x in args.chosen.split(",")), Path(args.png))
    return 1


#: The dense replicates (notebook/ACCURACY.md, "The dense sets out of sample"): each dense reference and both
#: simulated families of the protein study, rebuilt with other seeds (other taxa left out, other reads).
DENSE_REPLICATES = {**PROTEIN_DENSE_SETS, "psim-low": PROTEIN_SETS["psim-low"],
                    "psim-high-indel": PROTEIN_SETS["psim-high-indel"]}


def replicate_specs(data_dir: Path, seeds, dense: bool) -> dict[str, tuple[str, Path, tuple]]:
    """The out-of-sample sets of `validate --suite protein` (dense False: the three Pfam families x
    two read models, 200 reads, DATA/val/FAMILY-MODEL-SEED) or `--suite protein-dense` (the study's
    DENSE_REPLICATES, as the study builds them, DATA/dval/NAME-sSEED): set name -> (its row in the
    table, its folder, `leave_taxa_out`'s tree, alignment, prune, reads, model and seed)."""
    specs = {}
    if dense:
        for name, (tree, alignment, prune, reads, model, _) in DENSE_REPLICATES.items():
            for seed in seeds:
                specs[f"{name}-s{seed}"] = (name, data_dir / "dval" / f"{name}-s{seed}",
                                            (data_dir / tree, data_dir / alignment, prune, reads, model, seed))
        return specs
    refs = {"fn3": ("fn3", 12), "RRM": ("RRM_1", 10), "Pkinase": ("Pkinase", 6)}
    for label, (folder, k) in refs.items():
        for model_name, model in [("subst", PROT_SUB), ("indel", PROT_INDEL)]:
            for seed in seeds:
                specs[f"{label}-{model_name}-{seed}"] = (
                    f"{label} | {model_name}", data_dir / "val" / f"{label}-{model_name}-{seed}",
                    (data_dir / folder / "tree.nwk", data_dir / folder / "ref.fasta", k, 200, model, seed))
    return specs


def validate_protein(data_dir: Path, results: Path, points: list[tuple], threads: int, seeds=range(101, 104),
                     procs: int = 1, dense: bool = False) -> int:
    """Out-of-sample check of the protein study: more seeds (other pruned taxa, other reads) per
    family (`replicate_specs`; results cached in `results`); papara-py at `points`,
    MAFFT and hmmalign once. Prints one row per family (and read model): the mean over the seeds
    (lowest seed in brackets); then per point the sets at or above the better peer, the worst
    set's margin over it and the worst row's (row means)."""
    import numpy as np
    specs = replicate_specs(data_dir, seeds, dense)
    have = done(results)
    tasks = []
    for name, (_, d, (tree, alignment, prune, reads, model, seed)) in specs.items():
        if not (d / "truth.tsv").exists():
            ba.leave_taxa_out(tree, alignment, d, prune=prune, n_reads=reads, model=model, seed=seed, alphabet="protein")
        data = ba.Data.from_dir(d, name, "protein")
        for tool in ("mafft", "hmmalign"):
            if (name, tool, ()) not in have:
                r = ba.bench(data, [tool], None, threads)[tool]
                append(results, {"data": name, "tool": tool} | r | {"params": []})
        tasks += [(str(d), name, "protein", p, threads) for p in points if (name, "papara-inproc", tuple(p)) not in have]
    run_papara_points(tasks, results, procs)
    acc: dict[tuple[str, str], float] = {}
    for line in results.read_text().splitlines():
        r = json.loads(line)
        if r["data"] in specs:
            key = r["tool"] if r["tool"] in ("mafft", "hmmalign") else ",".join(map(str, r["params"]))
            acc[r["data"], key] = r["column_accuracy"]
    rows: dict[str, list[str]] = {}
    for name, (row, _, _) in specs.items():
        rows.setdefault(row, []).append(name)
    columns = [",".join(map(str, p)) for p in points] + ["mafft", "hmmalign"]
    print("| family | " + " | ".join(columns) + " |")
    for row, names in rows.items():
        print(f"| {row} | " + " | ".join(f"{np.mean([acc[n, c] for n in names]):.4f} "
                                        f"({min(acc[n, c] for n in names):.4f})" for c in columns) + " |", flush=True)
    for c in columns[:-2]:
        margins = {n: acc[n, c] - max(acc[n, "mafft"], acc[n, "hmmalign"]) for n in specs}
        row_margins = {row: np.mean([acc[n, c] for n in names]) - max(np.mean([acc[n, t] for n in names])
                                                                      for t in ("mafft", "hmmalign"))
                       for row, names in rows.items()}
        worst_set, worst_row = min(margins, key=margins.get), min(row_margins, key=row_margins.get)
        print(f"{c}: {sum(m >= 0 for m in margins.values())} of {len(margins)} sets at or above the better peer; "
              f"worst set {worst_set} {margins[worst_set]:+.4f}; worst row {worst_row} {row_margins[worst_row]:+.4f}")
    return 0


def validate(threads: int) -> int:
    """Out-of-sample check: 6 more seeds x 3 read models on pyrG and the bundled simulated example
    (80 reads each), the paper preset against the chosen point and its two runners-up."""
    import tempfile

    import numpy as np
    root = Path(__file__).resolve().parent.parent
    refs = {"pyrg": (Path(PYRG) / "tree.nwk", Path(PYRG) / "ref.phy", 8),
            "example": (root / "data/example/tree.nwk", root / "data/example/ref.phy", 5)}
    points = [tuple(ba.PAPER), (3, 6, 2, 2, 7), (3, 6, 2, 2, 8), (2, 3, 2, 1, 5)]
    with tempfile.TemporaryDirectory() as tmp:
        for label, (tree, aln, k) in refs.items():
            for model_name, model in [("Illumina", ILLUMINA), ("454", HP454), ("nanopore-like", NANOPORE_LIKE)]:
                acc: dict[tuple, list[float]] = {p: [] for p in points}
                for seed in range(101, 107):
                    d = ba.leave_taxa_out(tree, aln, Path(tmp) / f"{label}{model_name}{seed}", prune=k, n_reads=80,
                                          model=model, seed=seed)
                    data = ba.Data.from_dir(d)
                    for p in points:
                        acc[p].append(ba.bench(data, ["papara-inproc"], p, threads)["papara-inproc"]["column_accuracy"])
                print(f"| {label} | {model_name} | " + " | ".join(
                    f"{np.mean(v):.4f} ({min(v):.4f}, {sum(a >= b for a, b in zip(v, acc[points[0]]))}/6)"
                    for v in acc.values()) + " |", flush=True)
    return 0


def collect(results: Path):
    """The results file as (params -> data set -> papara-py column accuracy, data set -> peer -> row)."""
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    papara: dict[tuple, dict[str, float]] = {}
    peers: dict[str, dict[str, dict]] = {}
    for r in rows:
        if r["tool"] == "papara-inproc":
            papara.setdefault(tuple(r["params"]), {})[r["data"]] = r["column_accuracy"]
        else:
            peers.setdefault(r["data"], {})[r["tool"]] = r
    for name in PROTEIN_SETS:  # the -ml sets have their NJ set's reads and truth, so its peers
        if "-ml" in name and name not in peers and name.replace("-ml", "") in peers:
            peers[name] = peers[name.replace("-ml", "")]
    return papara, peers


def plot(results: Path, names: list[str], chosen: tuple, png: Path) -> int:
    """Left: column accuracy per data set (paper, chosen, MAFFT, hmmalign). Right: the worst data
    set's accuracy against each parameter's value in gap_extend units (best over the others)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    papara, peers = collect(results)
    complete = {p: v for p, v in papara.items() if all(n in v for n in names)}
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    series = [("papara-py paper 3/3/3/1/3", [complete[tuple(ba.PAPER)][n] for n in names]),
              (f"papara-py {'/'.join(map(str, chosen))}", [complete[chosen][n] for n in names]),
              ("MAFFT --addfragments", [peers[n]["mafft"]["column_accuracy"] for n in names]),
              ("hmmalign", [peers[n]["hmmalign"]["column_accuracy"] for n in names])]
    width = 0.2
    for k, (label, values) in enumerate(series):
        left.bar([i + (k - 1.5) * width for i in range(len(names))], values, width, label=label)
    left.set_xticks(range(len(names)), names, rotation=20)
    left.set_ylim(0.9, 1.0)
    left.set_ylabel("column accuracy")
    left.legend(fontsize=8, loc="lower left")
    left.set_title("leave-taxa-out column accuracy")
    labels = ["mismatch", "cgap", "gap_open", "insertion"]
    for label, index in zip(labels, [0, 1, 2, 4]):
        best: dict[float, float] = {}
        for p, v in complete.items():
            x = p[index] / p[3]  # in units of gap_extend: the score is scale-free
            best[x] = max(best.get(x, 0.0), min(v.values()))
        xs = sorted(best)
        right.plot(xs, [best[x] for x in xs], marker="o", label=label)
    right.set_xlabel("parameter value / gap_extend")
    right.set_ylabel("worst data set's column accuracy")
    right.set_title("best worst-case accuracy per parameter value")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("wrote", png)
    return 0


def pooled(results: Path, val_results: Path, names: list[str], seeds=(101, 102, 103), better_peer: bool = False,
           rank: str = "worst") -> None:
    """The protein study's choice: for each point run on the study's sets and on every validation
    seed, its margin over MAFFT (or, `better_peer`, over the better of MAFFT and hmmalign) on each
    study set and on each (family, read model) row of the validation (mean over the seeds).

    rank: "worst" orders by the worst of these margins, then the mean; "sets" first by how many
    are >= 0 (the issue's bar is per set); "reachable" by the worst and the mean over the margins
    that some point ranked brings to >= 0 (a set every point loses decides nothing: the
    Poisson-simulated sets, notebook/ACCURACY.md "Column family residues for protein")."""
    import numpy as np
    papara, peers = collect(results)
    val: dict[tuple, dict[str, list[float]]] = {}
    for line in val_results.read_text().splitlines():
        r = json.loads(line)
        family, model, seed = r["data"].rsplit("-", 2)
        if int(seed) in seeds:
            key = "mafft" if r["tool"] == "mafft" else "hmmalign" if r["tool"] == "hmmalign" else tuple(r["params"])
            val.setdefault(key, {}).setdefault(f"val-{family}-{model}", []).append(r["column_accuracy"])
    rows = set(val.get("mafft", {}))
    ranked = []
    for p, v in val.items():
        if p in ("mafft", "hmmalign") or not all(n in papara.get(p, {}) for n in names) or set(v) != rows \
                or any(len(x) != len(seeds) for x in v.values()):
            continue
        tools = ("mafft", "hmmalign") if better_peer else ("mafft",)
        margins = {n: papara[p][n] - max(peers[n][t]["column_accuracy"] for t in tools) for n in names}
        margins |= {row: float(np.mean(x) - max(np.mean(val[t][row]) for t in tools)) for row, x in v.items()}
        ranked.append((p, margins))
    deciding = [k for k in (ranked[0][1] if ranked else {})
                if rank != "reachable" or any(m[k] >= 0 for _, m in ranked)]

    def worst(m: dict) -> float:
        return min(m[k] for k in deciding)

    def mean(m: dict) -> float:
        return float(np.mean([m[k] for k in deciding]))

    ranked.sort(key=lambda pm: (-sum(x >= 0 for x in pm[1].values()) if rank == "sets" else 0, -worst(pm[1]),
                                -mean(pm[1])))
    print(f"pooled: margin over {'the better of MAFFT and hmmalign' if better_peer else 'MAFFT'} on the study "
          f"sets and the validation rows (seeds {seeds}); {len(ranked)} points; rank {rank}"
          + (f" (deciding: all but {', '.join(k for k in ranked[0][1] if k not in deciding) or 'none'})"
             if rank == "reachable" and ranked else ""))
    if ranked:
        print("params | " + " | ".join(ranked[0][1]) + " | worst | mean | at or above")
    for p, m in ranked[:12]:
        print(",".join(map(str, p)), "|", " | ".join(f"{x:+.4f}" for x in m.values()),
              f"| {worst(m):+.4f} | {mean(m):+.4f} | {sum(x >= 0 for x in m.values())}")


def table(results: Path, names: list[str], start=ba.PAPER) -> int:
    papara, peers = collect(results)
    complete = {p: v for p, v in papara.items() if all(n in v for n in names)}
    ranked = sorted(complete.items(), key=lambda kv: (-min(kv[1].values()), -sum(kv[1].values())))
    print("params | " + " | ".join(names) + " | worst | mean")
    for p, v in ranked[:25]:
        print(",".join(map(str, p)), "|", " | ".join(f"{v[n]:.4f}" for n in names),
              f"| {min(v.values()):.4f} | {sum(v.values()) / len(v):.4f}")
    paper = complete.get(tuple(start))
    if paper:
        print(",".join(map(str, start)), " | ".join(f"{paper[n]:.4f}" for n in names), f"worst {min(paper.values()):.4f}")
        dominating = [p for p, v in complete.items() if all(v[n] >= paper[n] for n in names)]
        print(f"points >= {start} on every set:", len(dominating))
    for tool in ["mafft", "hmmalign", "papara"]:
        print(tool, " | ".join(f"{peers.get(n, {}).get(tool, {}).get('column_accuracy', float('nan')):.4f}"
                              for n in names))
    if all("mafft" in peers.get(n, {}) and "hmmalign" in peers.get(n, {}) for n in names):
        # the margin over MAFFT, and over the better of MAFFT and hmmalign, on each set; ranked by
        # the worst set's margin (then the mean)
        for label, peer in [("MAFFT", lambda n: peers[n]["mafft"]["column_accuracy"]),
                            ("the better of MAFFT and hmmalign",
                             lambda n: max(peers[n]["mafft"]["column_accuracy"], peers[n]["hmmalign"]["column_accuracy"]))]:
            margins = {p: {n: v[n] - peer(n) for n in names} for p, v in complete.items()}
            ranked = sorted(margins.items(), key=lambda kv: (-min(kv[1].values()), -sum(kv[1].values())))
            print(f"margin over {label} | " + " | ".join(names) + " | worst | mean")
            for p, v in ranked[:12]:
                print(",".join(map(str, p)), "|", " | ".join(f"{v[n]:+.4f}" for n in names),
                      f"| {min(v.values()):+.4f} | {sum(v.values()) / len(v):+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
