#!/bin/bash
# Step 1: the references (docs/ACCURACY.md "Reproduce"); fetched files already extracted under DATA.
set -ex
cd /work/main
PY="nice -n 10 /work/venv/bin/python"
D=/work/data/acc/DATA
$PY scripts/simulate.py --out $D/simref/lowdiv --seed 11 --taxa 120 --held-out 3 --columns 900 --divergence 0.15 --indel-rate 0.03 --reads 10
$PY scripts/simulate.py --out $D/simref/highdiv --seed 12 --taxa 120 --held-out 3 --columns 900 --divergence 0.5 --indel-rate 0.08 --indel-mean-length 3 --reads 10
$PY scripts/simulate.py --out $D/simref/plow --alphabet protein --seed 21 --taxa 120 --held-out 3 --columns 250 --divergence 0.4 --indel-rate 0.03 --reads 10
$PY scripts/simulate.py --out $D/simref/phigh --alphabet protein --seed 22 --taxa 120 --held-out 3 --columns 250 --divergence 1.0 --indel-rate 0.08 --indel-mean-length 2 --reads 10
$PY scripts/accuracy_study.py protein-refs --data $D --suite protein-dense
$PY scripts/accuracy_study.py simrefs --suite protein-sim --data $D
$PY scripts/accuracy_study.py protein-refs --data $D --suite protein
