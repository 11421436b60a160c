"""OpenCL C sources of the GPU kernels, installed as the package data `papara_py.kernels`.

`source(name)` is how every build reads one: the kernels share their element types
(elements.cl) through `#include "elements.cl"` lines, which it replaces with that file's text,
so no OpenCL compiler needs an include path and every program cache sees the whole source.
"""

from importlib.resources import files


def source(name: str) -> str:
    """The text of kernel source `name`, its `#include "X"` lines replaced by X's text."""
    kernels = files(__name__)
    return "".join(kernels.joinpath(line.split('"')[1]).read_text() if line.startswith('#include "') else line
                   for line in kernels.joinpath(name).read_text().splitlines(keepends=True))
