"""Shared fixtures: the location of the real test data beside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Real reference data lives outside the repository, in <repo root>/../shared/data.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def pyrg_dir() -> Path:
    """The pyrG data set (tree, alignment, reads); skips the test when it is not there."""
    path = SHARED_DATA / "pyrg"
    if not path.is_dir():
        pytest.skip(f"real test data not found at {path}")
    return path


#: Variables by which a cluster scheduler marks an array task (papara_py/shards.py reads them).
ARRAY_TASK_VARIABLES = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                        "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SGE_TASK_ID", "SGE_TASK_FIRST",
                        "SGE_TASK_LAST", "SGE_TASK_STEPSIZE", "PBS_ARRAY_INDEX", "PBS_ARRAYID")


@pytest.fixture(autouse=True)
def outside_an_array_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as a whole run even when pytest itself runs inside a cluster array task (the
    runs they start would otherwise align only that task's slice); tests that need the
    variables set them themselves."""
    for name in ARRAY_TASK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
