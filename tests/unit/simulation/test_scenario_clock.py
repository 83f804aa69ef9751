"""A scenario's clock: `now` for the first cycle, one second per cycle after, plugin memory kept between cycles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from py_volcano.errors import ScenarioError
from py_volcano.simulation import run_scenario_file
from tests.builders import node, pod

CONF = """actions: shuffle
tiers:
- plugins:
  - name: rescheduling
    arguments:
      interval: 1s
      strategies:
      - name: lowNodeUtilization
        params: {thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 50, memory: 50}}
"""


def write(tmp_path: Path, **fields: object) -> Path:
    body = {
        "name": "clock",
        "schedulerConfig": CONF,
        "objects": [node(name="a"), node(name="b"), pod(name="p", node_name="a", cpu="3", memory="")],
        "expect": {},
        **fields,
    }
    path = tmp_path / "clock.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.mark.parametrize(("cycles", "evicted"), [(1, []), (2, ["default/p"])])
def test_the_clock_moves_one_second_per_cycle_and_plugins_remember(
    tmp_path: Path, cycles: int, evicted: list[str]
) -> None:
    """rescheduling's 1s interval counts from the scenario's start: the first cycle is too early, the second runs."""
    report = run_scenario_file(write(tmp_path, now="2024-05-01T12:00:00+00:00", cycles=cycles))
    assert report["evictions"] == evicted


def test_now_needs_a_utc_offset(tmp_path: Path) -> None:
    """A time without an offset would read differently on every machine: the file is invalid."""
    with pytest.raises(ScenarioError, match="now: needs a UTC offset"):
        run_scenario_file(write(tmp_path, now="2024-05-01T12:00:00"))
