"""Every scenario under tests/scenarios, played by vc-scheduler and by py-volcano: their decisions agree,
up to the random tie e2e/parity/known.py names for the scenario, or one e2e/parity/ties.py finds (a
choice among equal nodes, proportion's walk of the queues) in a scenario that names none.

Opt-in, not part of CI: skipped unless `VOLCANO_SCHEDULER` names a vc-scheduler (docs/parity.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.parity.known import DELIBERATE, UNPLAYABLE
from e2e.parity.ties import random_tie
from e2e.parity.volcano import Parity, skip_without_volcano
from py_volcano.simulation.scenario import load_scenario
from tests.scenario_files import SCENARIO_DIR, scenario_files

pytest_plugins = ["e2e.fixtures"]
pytestmark = skip_without_volcano()


def _cases() -> list[object]:
    """Every scenario; those differing on purpose (e2e/parity/known.py) as strict expected failures, those
    the harness cannot play as expected failures that may pass (vc-scheduler sees their devices only when
    a node update happens to come after its first session)."""
    return [pytest.param(path, id=path.stem, marks=_marks(path.stem)) for path in scenario_files(SCENARIO_DIR)]


def _marks(name: str) -> list[pytest.MarkDecorator]:
    if name in DELIBERATE:
        return [pytest.mark.xfail(reason=DELIBERATE[name], strict=True)]
    if name in UNPLAYABLE:
        return [pytest.mark.xfail(reason=UNPLAYABLE[name], strict=False)]
    return []


@pytest.mark.parametrize("path", _cases())
def test_scenario_decisions_match_volcano(path: Path, parity: Parity) -> None:
    """Binds, evictions and PodGroup phases of vc-scheduler and py-volcano are the same, up to a random
    tie of Volcano's."""
    scenario = load_scenario(path)
    comparison = parity.compare(scenario)
    if comparison.differences and not comparison.tie:
        assert random_tie(scenario, comparison.volcano, comparison.jobs), comparison.report()
        return
    assert not comparison.differences, comparison.report()
