"""papara-py: phylogeny-aware alignment of short reads to a reference alignment and tree.

The Python API (papara_py/api.py):

    import papara_py
    run = papara_py.align("tree.nwk", "ref.phy", "reads.fa")   # -> Run; options as keywords
    run = papara_py.open_run("run.h5")                          # a run file written before

`help(papara_py.align)` and `help(papara_py.Run)` document them. The algorithm, encodings,
tie-breaking and output contract are specified in docs/DESIGN.md (docstrings cite its sections as
"DESIGN.md N"); docs/ARCHITECTURE.md maps that specification onto the modules.
The API is loaded on first use, so `import papara_py` (and the CLI's start) stay light.
"""

__version__ = "0.1.0"

_API = ("align", "open_run", "Run", "ReadResult")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from papara_py import api

        return getattr(api, name)
    raise AttributeError(f"module 'papara_py' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
