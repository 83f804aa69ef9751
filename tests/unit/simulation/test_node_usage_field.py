"""A scenario's `nodeUsage`: the measured load the usage plugin reads, fresh at the first cycle."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from py_volcano.errors import ScenarioError
from py_volcano.simulation import run_scenario_file
from tests.builders import node, pod

CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: usage\n"


def write(tmp_path: Path, usage: object) -> Path:
    body = {
        "name": "usage",
        "schedulerConfig": CONF,
        "objects": [node(name="a"), node(name="b"), pod(name="p", memory="")],
        "nodeUsage": usage,
        "expect": {},
    }
    path = tmp_path / "usage.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def test_usage_steers_the_pod_and_a_file_without_it_still_plays(tmp_path: Path) -> None:
    """With `a` measured over the CPU threshold the pod goes to `b`; without `nodeUsage` it takes `a` first."""
    assert run_scenario_file(write(tmp_path, {"a": {"cpu": 85}}))["binds"] == {"default/p": "b"}
    assert run_scenario_file(write(tmp_path, {}))["binds"] == {"default/p": "a"}


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        pytest.param({"c": {"cpu": 10}}, "key nodeUsage.c: no Node 'c' among the objects", id="unknown-node"),
        pytest.param({"a": {"cpu": 120}}, "nodeUsage.a.cpu", id="over-100"),
        pytest.param({"a": {"disk": 1}}, "nodeUsage.a.disk", id="unknown-key"),
    ],
)
def test_bad_node_usage_names_the_key(tmp_path: Path, usage: object, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        run_scenario_file(write(tmp_path, usage))
