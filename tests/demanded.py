"""Tests that need a program this machine may lack (slurm; mafft and hmmer): skip, saying why, or
fail when an environment variable demands them.

A skip is right on a developer's machine without the program, and wrong in CI, whose own step
installs the program and must see the test run: there the variable is set to 1 and every reason
to skip becomes a failure, so a broken install cannot pass as a skip.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NoReturn

import pytest


@dataclass(frozen=True)
class Demand:
    """An environment variable that turns a test's skips into failures when set to 1."""

    variable: str
    effect: str  # what setting the variable does, for the skip's message

    @property
    def demanded(self) -> bool:
        return os.environ.get(self.variable) == "1"

    def unavailable(self, reason: str) -> NoReturn:
        """Skip the test for `reason`, or fail it when demanded."""
        if self.demanded:
            pytest.fail(f"{self.variable}=1, but {reason}", pytrace=False)
        pytest.skip(f"{reason} ({self.variable}=1 {self.effect})")
