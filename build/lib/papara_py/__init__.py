"""papara-py: phylogeny-aware alignment of short reads to a reference alignment and tree.

The algorithm, encodings and output contract are specified in DESIGN.md (shipped beside the
repository as ../shared/DESIGN.md); docs/ARCHITECTURE.md maps that spec onto the modules here.
"""

__version__ = "0.1.0"
