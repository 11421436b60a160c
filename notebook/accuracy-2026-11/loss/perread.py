"""Where papara-py loses residues to MAFFT --addfragments, read by read (docs/accuracy.md, "Where
the remaining loss is").

    python3 notebook/accuracy-2026-11/loss/perread.py SET_DIR WORK_DIR dna|protein

SET_DIR holds tree.nwk, ref.fasta, reads.fa and truth.tsv (scripts/bench_accuracy.py's layout).
Runs papara-py (its preset, in this process) and MAFFT on it, writes WORK_DIR/perread.json (per
read: name, residues with a true column, papara-py's and MAFFT's wrong residues, whether the edge
its truth's split names is among papara-py's candidates) and prints the totals, the same split by
that (is a loss in the alignment on the right edges, or in the placement?), the reads at least
80% wrong, and the reads papara-py loses most on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import bench_accuracy as ba  # noqa: E402


def wrong_residues(placements: dict, name: str, true_columns: list[int]) -> int:
    """Residues of read `name` with a true column that `placements` puts elsewhere (all, if absent)."""
    right, scored = ba.read_right(placements, name, true_columns)
    return scored - right


def true_edge_is_candidate(data, run: Path) -> dict[str, bool | None]:
    """Per read: whether the edge whose split is its truth's is among its candidate edges in the
    run file `run` (None: no true split, or no edge of the tree has it)."""
    import h5py

    from papara_py.io.tree_input import read_tree
    from papara_py.phylo.tree import EdgeTree

    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tips = frozenset(tree.tip_names)
    edge_of = {ba.normalise_split(tree.edge_split(e), tips): e for e in range(tree.n_edges)}
    with h5py.File(run) as handle:
        names = list(handle["reads/names"].asstr()[:])
        candidates = handle["reads/candidates/edge"][:]
    row = {name: q for q, name in enumerate(names)}
    found = {}
    for name, (_, split) in data.truth.items():
        edge = edge_of.get(ba.normalise_split(split, tips)) if split else None
        found[name] = None if edge is None or name not in row else bool(edge in candidates[row[name]])
    return found


def main() -> int:
    set_dir, work, alphabet = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    work.mkdir(parents=True, exist_ok=True)
    data = ba.Data.from_dir(set_dir, alphabet=alphabet)
    papara, _ = ba.run_papara_inprocess(data, work, params=None, threads=2)
    mafft, _ = ba.run_mafft(data, work, threads=2)
    candidate = true_edge_is_candidate(data, work / "papara.h5")
    rows = [(name, sum(1 for t in columns if t >= 0), wrong_residues(papara, name, columns),
             wrong_residues(mafft, name, columns), candidate.get(name)) for name, (columns, _) in data.truth.items()]
    (work / "perread.json").write_text(json.dumps(rows))
    print(f"of {sum(r[1] for r in rows)} residues: papara-py wrong {sum(r[2] for r in rows)}, "
          f"MAFFT wrong {sum(r[3] for r in rows)}")
    for label, among in (("among", True), ("not among", False)):
        part = [r for r in rows if r[4] is among]
        print(f"reads whose true edge is {label} papara-py's candidates: {len(part)}; papara-py wrong "
              f"{sum(r[2] for r in part)}, MAFFT wrong {sum(r[3] for r in part)}")
    lost = [r for r in rows if r[2] >= 0.8 * r[1]]
    print(f"reads at least 80% wrong: {len(lost)}, {sum(r[2] for r in lost)} residues wrong "
          f"(MAFFT {sum(r[3] for r in lost)} on them)")
    for row in sorted(rows, key=lambda r: r[3] - r[2])[:20]:
        print(*row, sep="\t")
    return 0


if __name__ == "__main__":
    sys.exit(main())
