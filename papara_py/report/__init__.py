"""`papara-py report`: one HTML page and PNG figures that show a run at a glance.

- `page`: what is computed from a run (outliers, placement confidence) and the HTML.
- `figures`: the matplotlib figures.
- `tree_drawing`: the numbered tree as a drawable layout.

Layer: imports `papara_py.errors` and `papara_py.io` (it reads run files through `RunFile`).
"""
