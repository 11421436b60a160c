"""papara-py: phylogeny-aware alignment of short reads to a reference alignment and tree.

The Python API (papara_py/api.py):

    import papara_py
    run = papara_py.align("tree.nwk", "ref.phy", "reads.fa")   # -> Run; options as keywords
    run = papara_py.open_run("run.h5")                          # a run file written before
    runs = papara_py.align_samples("tree.nwk", "ref.phy", ["S1.fa", "S2.fa"], "out/")  # one Run each

`help(papara_py.align)` and `help(papara_py.Run)` document them. Errors: `PaparaError`, and
below it `InputError` (a ValueError; `OptionError` for options) and `OutputError` (an OSError).
Nothing is printed: notices go to the logging logger "papara_py". The algorithm, encodings,
tie-breaking and output contract are specified in docs/DESIGN.md (docstrings cite its sections as
"DESIGN.md N"); docs/ARCHITECTURE.md maps that specification onto the modules.
The API is loaded on first use, so `import papara_py` (and the CLI's start) stay light.

Importing the package first finds a place for numba's kernel cache (`_place_kernel_cache`), so an
install in a read-only location with an unwritable home directory still imports and runs.
"""

import logging
import os
import stat
import sys
import tempfile

__version__ = "0.25.0"

#: Subpackages whose numba functions are cached (cache=True); numba writes beside their sources.
_CACHED_SUBPACKAGES = ("engine", "model", "phylo", "io")


def _writable(directory: str) -> bool:
    """True if a file can be made in `directory` (created if missing): tried, as numba does,
    since permissions alone do not tell (root, read-only mounts)."""
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


def _private_directory(path: str) -> str | None:
    """`path` as a directory only this user can write (made 0700 if missing); else a fresh private
    one: numba loads compiled code from its cache, which nobody else may plant there."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022 \
                and _writable(path):
            return path
        return tempfile.mkdtemp(prefix="papara-py-numba-cache-")
    except OSError:
        return None


def _place_kernel_cache() -> None:
    """Point NUMBA_CACHE_DIR at a writable directory when numba would find none.

    numba caches compiled kernels in __pycache__ beside the sources, else in the user's cache
    directory; with neither writable (a read-only install, an unwritable HOME) every cached
    function raised at import. Then the cache goes to the temporary directory, with a notice; an
    explicit NUMBA_CACHE_DIR is left as it is.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    if all(_writable(os.path.join(here, sub, "__pycache__")) for sub in _CACHED_SUBPACKAGES):
        return
    user_cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "numba")
    if _writable(user_cache):
        return
    fallback = _private_directory(os.path.join(tempfile.gettempdir(), f"papara-py-numba-cache-{os.getuid()}"))
    if fallback is not None:
        os.environ["NUMBA_CACHE_DIR"] = fallback
        # a warning: with no handler attached yet, logging's last resort writes it to stderr
        logging.getLogger("papara_py").warning(f"papara-py: neither the install ({here}) nor {user_cache} is "
                                               f"writable; numba's kernel cache goes to {fallback}")
    else:
        logging.getLogger("papara_py").warning(f"papara-py: no writable place for numba's kernel cache ({here}, "
                                               f"{user_cache}, the temporary directory); set NUMBA_CACHE_DIR to a "
                                               "writable directory")
        return
    if "numba" in sys.modules:  # imported before papara_py: make it read the variable again
        from numba.core import config

        config.reload_config()


_place_kernel_cache()

# The library prints nothing: its messages go to this logger, whose handlers the caller chooses
# (the command line attaches stderr's: papara_py/run/log.py); without any, they are dropped.
logging.getLogger(__name__).addHandler(logging.NullHandler())

from papara_py.errors import InputError, OptionError, OutputError, PaparaError  # noqa: E402 - after __version__

_API = ("align", "align_samples", "open_run", "Run", "ReadResult")
__all__ = ["__version__", *_API, "PaparaError", "InputError", "OptionError", "OutputError"]


def __getattr__(name: str):
    if name in _API:
        from papara_py import api

        return getattr(api, name)
    raise AttributeError(f"module 'papara_py' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
