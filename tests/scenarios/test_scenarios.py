"""Every scenario file of tests/scenarios/ runs through the same runner as `py-volcano simulate`."""

from __future__ import annotations

from pathlib import Path

import pytest

from py_volcano.simulation import run_scenario_file
from tests.scenario_files import SCENARIO_DIR, scenario_files

FILES = scenario_files(SCENARIO_DIR)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    """The scenario's expectations hold."""
    report = run_scenario_file(path)
    assert report["ok"], "\n".join(report["failures"])
