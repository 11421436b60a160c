"""Import a script of scripts/ as a module, for the tests of the benchmark and simulation scripts
(scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as the module NAME (registered in sys.modules, as a dataclass-using script needs);
    loaded once, so the tests of several folders that use one script share its module."""
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "")) == SCRIPTS / f"{name}.py":
        return loaded
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
