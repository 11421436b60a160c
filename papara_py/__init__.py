"""papara-py: phylogeny-aware alignment of short reads to a reference alignment and tree.

The algorithm, encodings, tie-breaking and output contract are specified in docs/DESIGN.md
(docstrings cite its sections as "DESIGN.md N"); docs/ARCHITECTURE.md maps that specification onto
the modules here.
"""

__version__ = "0.1.0"
