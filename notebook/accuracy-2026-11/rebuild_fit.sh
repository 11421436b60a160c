#!/bin/bash
# The 23 fit sets of sets.tsv from nothing, in a few minutes on 2 cores (the validation suites need
# HOWTO.md's whole "Rebuild from nothing"). The references come from the pinned commits of four
# public repositories, fetched as bare git directories (the search tool's `fetch`); the sets are
# deterministic, so peers.tsv's MAFFT and hmmalign results and docs/accuracy.md's tables apply to
# them unchanged (checked 2026-11-29: the protein fit table and MAFFT on the fresh DNA sets equal the
# records).
#
#   notebook/accuracy-2026-11/rebuild_fit.sh DATA MIRRORS [PYTHON]
#
# DATA: the study's data folder (sets.tsv names /work/data/acc/DATA); MIRRORS: the folder holding
# smirarab+sepp/repo, EddyRivasLab+hmmer/repo, biopython+biopython/repo and
# uozcan12+BaliBaseMSACompare/repo; PYTHON: an interpreter with papara-py installed (python3).
# Then: cp notebook/accuracy-2026-11/{evaluate.py,sets.tsv,peers.tsv,baseline.tsv} DATA/.. and
# evaluate.py as HOWTO.md says.
set -euo pipefail
D=$1; M=$2; PY=${3:-python3}
cd "$(dirname "$0")/../.."
SEPP=$M/smirarab+sepp/repo; S=ae9a28d543bf88004a4f859479524e62e3460c67
HMMER=$M/EddyRivasLab+hmmer/repo; H=9acd8b6758a0ca5d21db6d167e0277484341929b
BIO=$M/biopython+biopython/repo; B=8b4d499f0e42567439e18a44986f342cc46e4faa
BB=$M/uozcan12+BaliBaseMSACompare/repo; BC=b5fd3186ce9d89efc7c4483d09162e8392c8f737
mkdir -p "$D"/rpsS "$D"/16S_gg "$D"/fn3 "$D"/RRM_1 "$D"/Pkinase "$D"/dense/Cyclin_N
git --git-dir="$SEPP" show $S:test/unittest/data/mock/rpsS/sate.fasta > "$D"/rpsS/ref.fasta
git --git-dir="$SEPP" show $S:test/unittest/data/mock/rpsS/sate.tre > "$D"/rpsS/tree.nwk
git --git-dir="$SEPP" show $S:test/unittest/data/q2-fragment-insertion/reference_alignment_tiny.fasta > "$D"/16S_gg/ref.fasta
git --git-dir="$SEPP" show $S:test/unittest/data/q2-fragment-insertion/reference_phylogeny_tiny.nwk > "$D"/16S_gg/tree.nwk
git --git-dir="$HMMER" show $H:tutorial/fn3.sto > "$D"/fn3/seed.sto
git --git-dir="$HMMER" show $H:testsuite/RRM_1.sto > "$D"/RRM_1/seed.sto
git --git-dir="$HMMER" show $H:tutorial/Pkinase.sto > "$D"/Pkinase/seed.sto
git --git-dir="$BIO" show $B:Tests/Stockholm/pfam8.seed.txt > "$D"/dense/Cyclin_N/seed.sto
for n in BBS30004 BBS30005 BBS30013 BBS30001 BBS20040 BBS30021 BBS20025; do
  mkdir -p "$D"/dense/$n
  git --git-dir="$BB" show $BC:Project3/bb3_release/RV${n:3:2}/$n.msf > "$D"/dense/$n/ref.msf
done
# the simulated references (build_refs.sh's first four lines)
$PY scripts/simulate.py --out "$D"/simref/lowdiv --seed 11 --taxa 120 --held-out 3 --columns 900 --divergence 0.15 --indel-rate 0.03 --reads 10
$PY scripts/simulate.py --out "$D"/simref/highdiv --seed 12 --taxa 120 --held-out 3 --columns 900 --divergence 0.5 --indel-rate 0.08 --indel-mean-length 3 --reads 10
$PY scripts/simulate.py --out "$D"/simref/plow --alphabet protein --seed 21 --taxa 120 --held-out 3 --columns 250 --divergence 0.4 --indel-rate 0.03 --reads 10
$PY scripts/simulate.py --out "$D"/simref/phigh --alphabet protein --seed 22 --taxa 120 --held-out 3 --columns 250 --divergence 1.0 --indel-rate 0.08 --indel-mean-length 2 --reads 10
# neighbour-joining trees for the Pfam seeds and the dense references (the fit sets use no ML tree)
$PY scripts/accuracy_study.py protein-refs --data "$D" --suite protein-dense
$PY -c "import sys; from pathlib import Path; sys.path.insert(0, 'scripts'); import accuracy_study as a
a.protein_refs(Path(sys.argv[1]), a.PFAM_SEEDS, ml=False)" "$D"
# the sets: DNA study, protein study (its fit sets; its -ml sets need IQ-TREE's trees), dense study
$PY scripts/accuracy_study.py build --data "$D" --suite dna
$PY scripts/accuracy_study.py build --data "$D" --suite protein \
  --sets fn3,fn3-indel,RRM,RRM-indel,Pkinase,Pkinase-indel,psim-low,psim-high-indel
$PY scripts/accuracy_study.py build --data "$D" --suite protein-dense
