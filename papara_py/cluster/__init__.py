"""Work split over many machines: read shards of an array job, their merge, and edge profiles
prepared once and shared by every job (docs/guide.md: Clusters).

- `shards`: `Shard`, which reads a task aligns (`--shard K/N` or the scheduler's array variables).
- `merge`: shards into one run file, checked to come from the same inputs.
- `prepared`: `papara-py prepare` and the loading of its profiles.

Layer: imports `papara_py.errors`, `papara_py.phylo` and `papara_py.io`.
"""
