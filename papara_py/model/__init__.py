"""The model: what a read's alignment to an edge profile costs (Eq. 1 of DESIGN 4) and how its
columns are decoded (DESIGN 5).

- `params`: `ScoringParams` (the penalties, the column weight, the temperature), the presets as
  named records, and what integer width they fit.
- `column_costs`: `column_costs`, what each read residue costs in each reference column, the
  column's profile emission from BLOSUM62 (protein's column profile cost, DESIGN 3-4).
- `edge_emission`: `edge_column_costs`, the same for each edge with the rows near it weighing
  more (the posterior step's residue posteriors, DESIGN 3 and 5).
- `reference_scorer`: the plain, slow scorer every fast path is checked against bit for bit.
- `fixed_point`: the posterior step's integer arithmetic (energy scale, softmin and probability
  tables, the int32 bound).
- `posterior`: Forward and Backward on each candidate edge, the edges' weights and the pooled
  posteriors (DESIGN 5), numba.
- `mea`: the pooled posteriors' optimal-accuracy (MEA) alignment and its tie rule, numba.
- `pp_code`: hmmalign's posterior probability characters, as the exports write them.
- `traceback`: the Viterbi path at temperature 0 (the paper's Eq. 1).
- `decode`: `decode_batch`, the one call the runner makes per scored batch.
- `outliers`: the outlier rule (`find_outliers`, `run_outliers` on a run file) and its null
  (`null_reads`, which the runner scores with the reads; `OutlierNull`): the reads that fit the
  reference no better than random sequence, which the report lists and the exports leave out
  unless asked.

Layer: imports `papara_py.errors`, `papara_py.phylo` and `papara_py.io`; never the engine (the
posterior step's GPUs are handed in by the runner as an object).
"""
