"""How many of each tool's wrong residues are equivalent placements: the exported row is the
truth's there (the same letter in the residue's true column, and the truth has the same letter in
the column the tool chose), only another residue of a run of equal letters sits in it, which
column accuracy counts wrong though no exported alignment differs (temperature-at-tp.md).

    python3 notebook/accuracy-2026-11/loss/equiv.py SET_DIR WORK_DIR dna|protein

Runs papara-py (its preset, in this process), MAFFT --addfragments and hmmalign on the set and
prints: set, residues with a true column, and per tool [wrong residues, of them equivalent].
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import bench_accuracy as ba  # noqa: E402


def letters(path):
    """The reads file's sequences, upper case (bench_accuracy.read_alignment wants equal lengths)."""
    seqs, name = {}, None
    for line in open(path):
        line = line.strip()
        if line.startswith(">"):
            name = line[1:].split()[0]
            seqs[name] = []
        elif name:
            seqs[name].append(line)
    return {k: "".join(v).upper() for k, v in seqs.items()}


def count(placements, data, reads):
    wrong = equiv = 0
    for name, (true_cols, _) in data.truth.items():
        got = placements.get(name)
        cols = got.columns if got else [-1] * len(true_cols)
        seq = reads[name]
        truth_row = {t: seq[i] for i, t in enumerate(true_cols) if t >= 0}
        got_row = {g: seq[i] for i, g in enumerate(cols) if g >= 0}
        for i, (g, t) in enumerate(zip(cols, true_cols)):
            if t < 0 or g == t:
                continue
            wrong += 1
            # equivalent: the predicted row has this letter at the true column, and the truth's
            # row has it at the predicted column (or the residue is inserted and the true column
            # holds the same letter from another residue)
            if got_row.get(t) == seq[i] and (g < 0 or truth_row.get(g) == seq[i]):
                equiv += 1
    return wrong, equiv


set_dir, work, alphabet = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
work.mkdir(parents=True, exist_ok=True)
data = ba.Data.from_dir(set_dir, alphabet=alphabet)
reads = letters(data.reads)
out = {}
for tool, run in (("papara", lambda: ba.run_papara_inprocess(data, work, params=None, threads=2)),
                  ("mafft", lambda: ba.run_mafft(data, work, threads=2)),
                  ("hmmalign", lambda: ba.run_hmmalign(data, work, threads=2))):
    placements, _ = run()
    out[tool] = count(placements, data, reads)
total = sum(sum(t >= 0 for t in c) for c, _ in data.truth.values())
print(set_dir.name, total, json.dumps(out))
