"""Does the outlier rule (model/outliers.py: at first the penalty per residue against the sample
and, for DNA, a random-like ceiling; since, against the run's null) or the posterior (a read's mean
PP, its expected accuracy) tell reads that fit the reference from reads that fit nowhere? Builds a mixed sample per alphabet, aligns it with the
default preset and prints, per group of reads, how many the rule flags and the quantiles of the
mean PP and of the penalty per residue (README.md beside this file has the results).

    python3 notebook/outliers-2026-11/study.py WORK_DIR     (from the repository root, ~1 min on 2 cores)

DNA, against data/example: its 200 reads (F), 100 reads cut from its reference rows with 10% and
20% of bases substituted (D10, D20; scripts/sample_reads.py), 100 reads of another gene (X: rpsS
rows, the rpsS reference in .devdata/rpsS or given by RPSS=folder) and 100 uniform random reads
(R). Protein, against data/protein: its 120 reads (F), 60 of them shuffled (S) and 60 uniform
random reads of their lengths (R).
"""

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

import papara_py

ROOT = Path(__file__).resolve().parents[2]


def records(path: Path, tag: str) -> list[tuple[str, str]]:
    out, name = [], None
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].strip()
        elif line.strip():
            out.append((f"{tag}_{name}", line.strip()))
    return out


def sample(reference: Path, work: Path, seed: int, substitution: float) -> Path:
    out = work / f"sample-{seed}"
    subprocess.run([sys.executable, str(ROOT / "scripts/sample_reads.py"), "-t", str(reference / "tree.nwk"), "-s",
                    str(reference / "ref.fasta"), "--reads", "100", "--length", "100", "--substitution",
                    str(substitution), "--seed", str(seed), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out / "reads.fa"


def table(run_path: Path) -> None:
    run = papara_py.open_run(run_path)
    flags = run.outliers
    groups: dict[str, list] = {}
    for q, read in enumerate(run):
        pp = np.array([1.0 if c == "*" else (int(c) + 0.5) / 10 for c in read.pp])
        groups.setdefault(read.name.split("_")[0], []).append((pp.mean(), flags[q], read.score / len(read.sequence)))
    print(f"{'group':6} {'reads':>5} {'flagged':>7}   mean PP (min, 5%, 50%, 95%, max)    penalty/residue (same)")
    for name, rows in groups.items():
        values = np.array(rows)
        quantiles = [0, 0.05, 0.5, 0.95, 1]
        print(f"{name:6} {len(rows):5d} {int(values[:, 1].sum()):7d}   {np.round(np.quantile(values[:, 0], quantiles), 3)}"
              f"   {np.round(np.quantile(values[:, 2], quantiles), 2)}")


def main(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(4)
    example, protein = ROOT / "data/example", ROOT / "data/protein"
    rpss = Path(os.environ.get("RPSS", ROOT / ".devdata/rpsS"))
    dna = (records(example / "reads.fa", "F") + records(sample(example, work, 1, 0.10), "D10")
           + records(sample(example, work, 2, 0.20), "D20") + records(sample(rpss, work, 3, 0.0), "X")
           + [(f"R_{i}", "".join(rng.choice("ACGT") for _ in range(100))) for i in range(100)])
    fitting = records(protein / "reads.fa", "F")
    shuffled = [(f"S_{i}", "".join(rng.sample(s, len(s)))) for i, (_, s) in enumerate(fitting[:60])]
    randoms = [(f"R_{i}", "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in s)) for i, (_, s) in enumerate(fitting[:60])]
    for name, reference, reads, extra in (("dna", example, dna, []),
                                          ("protein", protein, fitting + shuffled + randoms, ["--alphabet", "protein"])):
        fasta = work / f"{name}.fa"
        fasta.write_text("".join(f">{n}\n{s}\n" for n, s in reads))
        subprocess.run(["papara-py", *extra, "-t", str(reference / "tree.nwk"), "-s", str(reference / "ref.phy"), "-r",
                        str(fasta), "-o", str(work / f"{name}.h5")], check=True)
        print(f"\n{name}:")
        table(work / f"{name}.h5")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
