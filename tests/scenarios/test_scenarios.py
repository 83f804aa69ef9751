"""Every scenario file, shared and our own, runs through the same runner as `py-volcano simulate`."""

from __future__ import annotations

from pathlib import Path

import pytest

from py_volcano.simulation import run_scenario_file
from tests.conftest import OWN_SCENARIOS, SHARED_SCENARIOS

FILES = sorted(SHARED_SCENARIOS.glob("*.yaml")) + sorted(OWN_SCENARIOS.glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    """The scenario's expectations hold."""
    report = run_scenario_file(path)
    assert report["ok"], "\n".join(report["failures"])
