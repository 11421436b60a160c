"""scripts/pathcost.py: what the model charges for a read's path.

docs/accuracy.md's diagnosis ("Where the remaining loss is") rests on it: it says whether the
model prefers a wrong path or the decoding misses a cheaper right one. Its path cost must be Eq. 1
along the path, or the diagnosis says nothing; so on a Viterbi run (T = 0, every read on its
cheapest path) papara-py's path must cost exactly the run's score on its best edge, with the
protein preset's near states and column costs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
from misuse import papara
from scripts_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
PROTEIN = ROOT / "data" / "protein"


def test_path_cost_is_eq_1_along_the_path_and_the_script_reports_it(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run.h5"
    result = papara("-t", str(PROTEIN / "tree.nwk"), "-s", str(PROTEIN / "ref.phy"), "-r", str(PROTEIN / "reads.fa"),
                    "--temperature", "0", "-j", "1", "-o", str(run))
    assert result.returncode == 0, result.stderr
    pathcost = load_script("pathcost")
    ba = pathcost.ba
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.io.tree_input import read_tree
    from papara_py.model.column_costs import column_costs, kernel_costs
    from papara_py.model.params import ScoringParams
    from papara_py.model.reference_scorer import profile_near
    from papara_py.phylo.encoding import PROTEIN as ALPHABET
    from papara_py.phylo.profiles import ProfileBuilder
    from papara_py.phylo.tree import EdgeTree

    data = ba.Data.from_dir(PROTEIN, alphabet="protein")
    tree = EdgeTree.from_dendropy(read_tree(data.tree))
    tip_rows = np.ascontiguousarray(match_tips(tree.tip_names, read_alignment(data.alignment), "ref").tip_rows)
    params = ScoringParams.preset("protein")
    p, costs = params.as_array(), kernel_costs(column_costs(tip_rows, ALPHABET, params.column_weight))
    builder = ProfileBuilder(tree, tip_rows, ALPHABET)
    sequences = dict(ba._reads_forward(data))
    with h5py.File(run) as handle:
        placed = ba.read_placements(handle, data)
        names = list(handle["reads/names"].asstr()[:])
        scores, best = handle["reads/score"][:], handle["reads/best_edge"][:]
    for q, name in enumerate(names):
        read = ALPHABET.read_code[np.frombuffer(sequences[name].encode(), np.uint8)]
        profile = builder.profiles(np.array([best[q]]))
        near = profile_near(profile)[0]
        found = sum(pathcost.path_cost(read, placed[name].columns, profile[0], near, p, costs).values())
        assert found == scores[q], name
    monkeypatch.setattr(sys, "argv", ["pathcost.py", str(PROTEIN), str(run), names[0]])
    assert pathcost.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(f"{names[0]} edge ") for line in lines)
    assert f"best {scores[0]}  papara-py {scores[0]} " in lines[0]
