"""How many reads of a suite have a true alignment outside DESIGN 4's band (residue j in columns
[j, j + m - n]; an inserted residue sits at the cell of the last placed column before it, or of
the column before the first placed one): band.md's count.

    cd /work/data/acc && python3 .../band/out_of_band.py ROLE     (ROLE: sets.tsv's role, e.g. fit)
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import bench_accuracy as ba  # noqa: E402


def columns_of(alignment: Path) -> int:
    """The alignment's length m (its first FASTA record's)."""
    sequence = []
    for line in alignment.open():
        if line.startswith(">"):
            if sequence:
                break
        else:
            sequence.append(line.strip())
    return len("".join(sequence))


def out_of_band(columns: list[int], m: int) -> bool:
    """Whether a read's true columns (-1: inserted) leave the band somewhere."""
    n = len(columns)
    placed = [c for c in columns if c >= 0]
    if not placed:
        return False
    previous = placed[0] - 1
    for j, c in enumerate(columns):
        i = c if c >= 0 else previous
        previous = c if c >= 0 else previous
        if not j <= i <= j + m - n:
            return True
    return False


def main() -> None:
    rows = [r for r in csv.DictReader(open("sets.tsv"), delimiter="\t") if r["role"] == sys.argv[1]]
    total_reads = total_residues = 0
    for row in rows:
        data = ba.Data.from_dir(Path(row["folder"]))
        if not str(data.alignment).endswith((".fasta", ".fa")):
            continue
        m = columns_of(data.alignment)
        reads = [columns for columns, _ in data.truth.values() if out_of_band(columns, m)]
        total_reads += len(reads)
        total_residues += sum(map(len, reads))
        print(f"{row['set']:20s} m {m:5d}: {len(reads)} reads out of the band, {sum(map(len, reads))} residues")
    print(f"all: {total_reads} reads, {total_residues} residues")


if __name__ == "__main__":
    main()
