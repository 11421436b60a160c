"""papara-py 0.11.0 (commit 151062c, `git archive`d to $V0110) on one protein set with one of its
post-hoc components off (its ScoringParams field set to 0) or none (`full`); writes the column
accuracy and every read's columns to OUT.json.

    V0110=/work/data/acc/papara-0.11.0 python3 old11.py SET_DIR OUT.json COMPONENT|full
"""
import json, sys, os
from dataclasses import replace, astuple
from pathlib import Path
R = os.environ.get("V0110", "/work/data/acc/papara-0.11.0")
sys.path.insert(0, R + "/scripts"); sys.path.insert(0, R)
import bench_accuracy as ba
from papara_py.pairwise.params import ScoringParams
set_dir, out, comp = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
data = ba.Data.from_dir(set_dir, alphabet="protein")
p = ScoringParams.preset("protein")
if comp != "full":
    p = replace(p, **{comp: 0})
work = Path("/tmp/old11") / f"{set_dir.name}-{comp}"
work.mkdir(parents=True, exist_ok=True)
placed, wall = ba.run_papara_inprocess(data, work, params=astuple(p), threads=1)
sc = ba.score(placed, data.truth)
cols = {k: list(map(int, v.columns)) for k, v in placed.items()}
out.write_text(json.dumps({"set": set_dir.name, "comp": comp, "score": sc if isinstance(sc, (int, float)) else sc, "columns": cols}, default=float))
