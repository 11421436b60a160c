"""Allow `python -m papara_py ...` as an alias of the `papara-py` console script."""

from papara_py.cli import main

raise SystemExit(main())
