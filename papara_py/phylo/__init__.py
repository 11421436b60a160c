"""Phylogeny: the reference tree with numbered edges, the state encodings, and edge profiles.

- `encoding`: `Alphabet` (DNA, protein): read and reference characters as state sets, the
  profile element type and its CGAP bit (DESIGN 2).
- `tree`: `EdgeTree`, the unrooted tree with jplace edge numbers (DESIGN 3).
- `profiles`: `ProfileBuilder`, the Sankoff state sets and CGAP flag of every edge (DESIGN 3).
- `family`: `column_family`, the residues common in each reference column (protein's near
  states take them in, DESIGN 3).
- `column_costs`: `column_costs`, what each read residue costs in each reference column from its
  BLOSUM62 scores against the column's residues (protein's column profile cost, DESIGN 3-4).
- `residues`: single-residue indices of letters and of the reference rows (the traceback's
  nearest-sequence bonus counts identities with them).
- `column_terms`: `ColumnTerms`, those for a run, carried as one value by the engine and the
  traceback.
- `clusters`: `cluster_edges`, connected clusters of edges with central edges (DESIGN 6a).

Layer: imports `papara_py.errors` only (and numpy, numba, dendropy; Biopython for BLOSUM62).
"""
