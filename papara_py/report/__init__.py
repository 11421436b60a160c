"""`papara-py report`: one HTML page and PNG figures that show a run at a glance.

- `page`: the report (`build_report`, `write_report`): the HTML page and which figures it draws;
  `gcups_text`, the scoring speed as people read it (the run's summary line prints it too).
- `run_view`: `RunView`, what a report reads from a run file (`load_run`), memory bounded.
- `placement`: where the reads' best scores put them and how clearly (`best_branch_counts`,
  `placement_confidence`), from the stored candidates.
- `figures`: the matplotlib figures.
- `tree_drawing`: the numbered tree as a drawable layout.

Layer: imports `papara_py.errors` and `papara_py.io` (it reads run files through `RunFile`).
"""
