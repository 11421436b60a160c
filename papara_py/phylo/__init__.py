"""Phylogeny: the reference tree with numbered edges, the state encodings, and edge profiles.

- `encoding`: `Alphabet` (DNA, protein): read and reference characters as state sets, the
  profile element type and its CGAP bit (DESIGN 2).
- `tree`: `EdgeTree`, the unrooted tree with jplace edge numbers (DESIGN 3).
- `profiles`: `ProfileBuilder`, the Sankoff state sets and CGAP flag of every edge (DESIGN 3), and
  `EdgeProfiles`, what the engine and the traceback need of any source of edge profiles.
- `clusters`: `cluster_edges`, connected clusters of edges with central edges (DESIGN 6a).

Layer: imports `papara_py.errors` and `papara_py.host` only (and numpy, numba, dendropy).
"""
