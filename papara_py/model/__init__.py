"""The model: what a read's alignment to an edge profile costs (Eq. 1 of DESIGN 4) and how its
alignment is decoded (DESIGN 5).

- `params`: `ScoringParams`, the penalties (and the traceback's settings: vote window, nearest bonus, band margin,
  location check, second model), the presets, and what integer width they fit.
- `family`: `column_family`, the residues common in each reference column (protein's near
  states take them in, DESIGN 3).
- `column_costs`: `column_costs`, what each read residue costs in each reference column from its
  BLOSUM62 scores against the column's residues (protein's column profile cost, DESIGN 3-4).
- `column_terms`: `ColumnTerms`, a run's family residues, cost table and reference residues as
  one value, carried by the engine and the traceback.
- `reference_scorer`: the plain, slow scorer every fast path is checked against bit for bit.
- `traceback`: the alignment path of a read on an edge (DESIGN 5's walk back).
- `paths`: paths as op arrays, CIGARs, rows in reference columns (`place_read`) and per-residue columns.
- `votes`: a read's columns by vote over its candidate edges' alignments (DESIGN 5's vote window).
- `nearest`: a read's nearest reference sequence, whose residues the traceback's nearest bonus
  favours (DESIGN 5).
- `location`: the location check: a read placed in the wrong region altogether takes its mapping onto the
  best-scoring reference sequence (DESIGN 5).
- `choice`: the choice between a read's alignments under the run's model and the second model, by the
  reference alignment's column composition (DESIGN 5).
- `profile_alignment`: the choice's third candidate, the read aligned to that column composition
  itself, taken where the run's model nearly agrees (DESIGN 5).

Layer: imports `papara_py.errors`, `papara_py.phylo` and `papara_py.io`; never the engine (a
GPU traceback is handed in by the runner as an object).
"""
