"""Shared fixtures: the shared scenarios folder and the project root."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_SCENARIOS = ROOT.parent / "shared" / "scenarios"
OWN_SCENARIOS = ROOT / "tests" / "scenarios"


@pytest.fixture
def root() -> Path:
    """Return the project root."""
    return ROOT
