"""Every scenario under tests/scenarios, played by vc-scheduler and by py-volcano: their decisions agree.

Opt-in, not part of CI: skipped unless `VOLCANO_SCHEDULER` names a vc-scheduler (docs/parity.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.parity.volcano import Parity, skip_without_volcano
from py_volcano.simulation.scenario import load_scenario
from tests.scenario_files import SCENARIO_DIR, scenario_files

pytest_plugins = ["e2e.fixtures"]
pytestmark = skip_without_volcano()


@pytest.mark.parametrize("path", scenario_files(SCENARIO_DIR), ids=lambda path: path.stem)
def test_scenario_decisions_match_volcano(path: Path, parity: Parity) -> None:
    """Binds, evictions and PodGroup phases of vc-scheduler and py-volcano are the same."""
    comparison = parity.compare(load_scenario(path))
    assert not comparison.differences, comparison.report()
