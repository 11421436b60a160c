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
