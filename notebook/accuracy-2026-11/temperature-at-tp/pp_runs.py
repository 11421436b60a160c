"""Where DNA's wrong residues with PP codes 0 to 3 lie (temperature-at-tp.md, "PP"): for each, the
run of identical bases around it in the read; "run, same columns" when that run fills the same
reference columns as in the truth (another of its bases left inserted), "run" otherwise, "single"
outside runs. Prints the running tally after each set.

    PYTHONPATH=CHECKOUT python3 notebook/accuracy-2026-11/temperature-at-tp/pp_runs.py

Reads the sets of /work/data/acc/DATA/dval167 and dval169 (fresh/fresh_dna.py's folders).
"""
import glob
import sys
import tempfile

sys.path.insert(0, "/work/main/scripts")
from collections import Counter
from pathlib import Path

import bench_accuracy as ba

import papara_py

tot = Counter()
for d in sorted(glob.glob("/work/data/acc/DATA/dval16[79]/fresh-*/")):
    data = ba.Data.from_dir(Path(d))
    seqs, name = {}, None
    for line in open(data.reads):
        if line.startswith(">"): name = line[1:].split()[0]; seqs[name] = []
        else: seqs[name].append(line.strip())
    seqs = {k: "".join(v).upper() for k, v in seqs.items()}
    with tempfile.TemporaryDirectory() as s, papara_py.align(str(data.tree), str(data.alignment), str(data.reads), output=s + "/r.h5", threads=2, device="cpu") as run:
        for read in run:
            if read.name not in data.truth or not read.pp or read.start is None: continue
            true = data.truth[read.name][0]
            cols = ba.read_columns(read.start, read.cigar, read.strand)
            codes = read.pp[::-1] if read.strand == "-" else read.pp
            sq = seqs[read.name]
            for i, (c, col, t) in enumerate(zip(codes, cols, true)):
                if t < 0 or c not in "0123" or col == t: continue
                # run of identical bases around i
                lo = i
                while lo > 0 and sq[lo - 1] == sq[i]: lo -= 1
                hi = i
                while hi + 1 < len(sq) and sq[hi + 1] == sq[i]: hi += 1
                run_true = set(x for x in true[lo:hi + 1] if x >= 0)
                run_got = set(x for x in cols[lo:hi + 1] if x >= 0)
                kind = "run, same columns" if hi > lo and run_true == run_got else ("run" if hi > lo else "single")
                tot[kind] += 1
    print(Path(d).name, dict(tot), flush=True)
