"""The wheel carries numba's compiled kernels, so the first run after an install does not compile.

papara-py's CPU kernels are numba functions cached on disk (cache=True). Compiling them takes
about 25 s of one core per alphabet (docs/performance.md, "Start-up"); a package that left it to
the first run made a new user wait half a minute for a 200-read example. So building the wheel
compiles them, as a C extension's build does: after setuptools' build_py has laid the package out
in the build folder, `papara-py warm-up` runs on that copy (one process, both alphabets in turn),
and numba's cache files land in the build copy's __pycache__ folders, which the wheel packs beside
the sources. One process, not one per alphabet: numba names a function's cache files by a counter
read from its index, so two processes saving different signatures of one function at the same
time can write them to the same file, and the index then maps a signature to another's machine
code (a CI build failed so: "can't unbox array from PyObject").

They are found after an install because numba (0.68 and later) stamps its cache by the source
file's content and keys each entry by the CPU it was compiled for: the same sources at another path
hit; another CPU (a wheel built on one machine and installed on another), another numba or Python,
or an NUMBA_CACHE_DIR set at run time miss, and the first run compiles as before, saying so.
PAPARA_PY_COMPILE_KERNELS=0 builds without them (the conda recipe does: its build machine is not
the user's). Editable installs compile in the source tree on first use instead.

Everything else about the package is declared in pyproject.toml.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: The warm-up, run by the build copy's interpreter on the build copy of the package.
_WARM_UP = """\
import sys
import papara_py
from pathlib import Path
if not Path(papara_py.__file__).resolve().is_relative_to(sys.argv[1]):
    sys.exit(f"papara_py was imported from {papara_py.__file__}, not from the build folder {sys.argv[1]}")
from papara_py.run.warmup import warm_up
done = warm_up(gpus=False)  # a GPU's kernels are the user's driver's
print(f"papara-py kernels ready in {done.total:.1f} s, {done.compiled} compiled", flush=True)
"""


class BuildPyWithKernels(build_py):
    """setuptools' build_py, then numba's kernels compiled into the build copy (module docstring)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if os.environ.get("PAPARA_PY_COMPILE_KERNELS", "1") == "0":
            self.announce("PAPARA_PY_COMPILE_KERNELS=0: the wheel carries no compiled kernels", level=2)
            return
        _compile_kernels(Path(self.build_lib).resolve())


def _compile_kernels(build_lib: Path) -> None:
    """Run the warm-up on the package in `build_lib`, writing numba's cache beside its sources (in
    one process: the module docstring says why)."""
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(build_lib), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no .pyc in the wheel: pip compiles them at install

    # in the build folder: `python -c` imports from its working directory first
    if subprocess.run([sys.executable, "-c", _WARM_UP, str(build_lib)], env=env, cwd=build_lib).returncode:
        sys.exit("papara-py: compiling the kernels into the wheel failed (the output above says why). "
                 "PAPARA_PY_COMPILE_KERNELS=0 builds the wheel without them; the first run then "
                 "compiles them (about 25 s).")


setup(cmdclass={"build_py": BuildPyWithKernels})
