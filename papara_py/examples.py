"""The bundled examples, shipped in the wheel as package data (`papara_py/data`, the repository's
`data/` folder): a small simulated DNA set and a protein set, each a reference tree, a
reference alignment (PHYLIP and FASTA) and reads, with the simulation's truth beside them.

    import papara_py.examples
    papara_py.examples.write("data")     # data/example/tree.nwk, ..., data/protein/reads.fa

`papara-py example DIR` does the same from the command line; DIR/example and DIR/protein then
hold what the repository's data/example and data/protein hold, so the README's commands run as
written from any directory after `papara-py example data`.
"""

from __future__ import annotations

import os
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from papara_py.errors import InputError
from papara_py.io.outputs import atomic_path

#: The examples by name: the folder under the package's data (and the repository's data/).
NAMES = ("example", "protein")


def source(name: str = "example") -> Traversable:
    """The bundled folder of example `name` ("example": DNA, "protein"), as package data."""
    if name not in NAMES:
        raise ValueError(f"no bundled example {name!r}; there are {', '.join(NAMES)}")
    return files("papara_py").joinpath("data", name)


def write(directory: str | os.PathLike, names: tuple[str, ...] = NAMES, *, overwrite: bool = False) -> list[Path]:
    """Copy the bundled examples into `directory` (made if missing): DIRECTORY/NAME/FILE for each
    example in `names`. Returns the files written, each written whole or not at all. A file already
    there with other content is refused (InputError, nothing written) unless `overwrite`; one with
    the same content is left as it is. A folder that is a file is refused (InputError) too."""
    wanted = [(name, entry) for name in names for entry in sorted(source(name).iterdir(), key=lambda e: e.name)
              if entry.is_file()]
    root = Path(directory)
    for folder in (root, *(root / name for name in names)):
        if folder.exists() and not folder.is_dir():
            raise InputError(str(folder), "is a file, not a folder: name a folder for the examples")
    if not overwrite:
        clash = [root / name / entry.name for name, entry in wanted
                 if (root / name / entry.name).exists() and (root / name / entry.name).read_bytes() != entry.read_bytes()]
        if clash:
            raise InputError(str(clash[0]), f"exists with other content ({len(clash)} file(s) would be replaced); "
                                            "remove them or write into another folder")
    written = []
    for name, entry in wanted:
        target = root / name / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = entry.read_bytes()
        if not (target.exists() and target.read_bytes() == data):
            with atomic_path(target) as temporary:
                temporary.write_bytes(data)
        written.append(target)
    return written
