"""rescheduling (Volcano's rescheduling plugin): arguments, the interval, and lowNodeUtilization's victims."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.errors import ConfigError
from py_volcano.framework import Arguments, PluginMemory, Registry, Session, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.rescheduling import ReschedulingArgs
from py_volcano.plugins.rescheduling.low_node_utilization import LowNodeUtilization
from tests.builders import cluster, node, pod, priority_class

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LNU = {
    "name": "lowNodeUtilization",
    "params": {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 50, "memory": 50}},
}


def parse(values: dict[str, Any]) -> ReschedulingArgs:
    return ReschedulingArgs.parse(Arguments(values, owner="rescheduling"))


def test_defaults_are_volcanos() -> None:
    """interval 5m; lowNodeUtilization with thresholds and targets of 100% (which moves nothing)."""
    args = parse({})
    assert args.interval == 300.0
    assert args.strategies == (LowNodeUtilization(),)
    assert dict(args.strategies[0].thresholds) == {"cpu": 100.0, "memory": 100.0}


def test_strategies_are_read_in_order_and_unimplemented_names_are_reported() -> None:
    """Volcano's design names strategies it never implemented: accepted, reported, ignored."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = parse({"interval": "1m", "strategies": [{"name": "offlineOnly"}, LNU], "metricsPeriod": "5m"})
    assert args.interval == 60.0
    assert [dict(s.target_thresholds) for s in args.strategies] == [{"cpu": 50.0, "memory": 50.0}]
    messages = [str(w.message) for w in caught]
    assert any("'offlineOnly' ignored (Volcano does not implement it)" in m for m in messages)
    assert any("metricsPeriod has no effect" in m for m in messages)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"interval": "often"}, "argument interval: 'often' is not a duration"),
        pytest.param({"strategies": "lowNodeUtilization"}, "argument strategies: 'lowNodeUtilization' is not a list"),
        pytest.param({"strategies": [{"params": {}}]}, r"argument strategies\[0\]: .* is not a map with a name"),
        pytest.param(
            {"strategies": [{"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": "high"}}}]},
            r"argument strategies\[0\].thresholds.cpu: 'high' is not a number",
        ),
    ],
)
def test_bad_values_are_refused_at_load(values: dict[str, Any], message: str) -> None:
    """A value of the wrong shape is a ConfigError naming the argument (Volcano panics or ignores it)."""
    with pytest.raises(ConfigError, match=message):
        parse(values)


def open_at(now: datetime, memory: PluginMemory, *objects: dict[str, Any], interval: str = "5m") -> Session:
    registry = Registry(plugins=PLUGINS, actions=ACTIONS)
    text = f"""
actions: shuffle
tiers:
- plugins:
  - name: rescheduling
    arguments:
      interval: {interval}
      strategies:
      - name: lowNodeUtilization
        params: {{thresholds: {{cpu: 20, memory: 20}}, targetThresholds: {{cpu: 50, memory: 50}}}}
"""
    return open_session(cluster(*objects), parse_conf(text, registry), registry, now=now, memory=memory)


def running(ssn: Session) -> list[Any]:
    return [t for job in ssn.jobs.values() for t in job.tasks.values()]


def unbalanced() -> list[dict[str, Any]]:
    """node-a requests 75% of its CPU, node-b nothing."""
    return [
        node(name="node-a", cpu="4", memory="8Gi"),
        node(name="node-b", cpu="4", memory="8Gi"),
        *(pod(name=f"p{i}", node_name="node-a", cpu="1", memory="1Gi") for i in range(3)),
    ]


def test_strategies_run_once_the_interval_has_passed_since_start_or_last_run() -> None:
    """Volcano's timeToRun: not before `interval` after the start, then at most once per interval."""
    memory = PluginMemory(START)
    chosen = []
    for minutes in (0, 4, 5, 7, 10):
        ssn = open_at(START + timedelta(minutes=minutes), memory, *unbalanced())
        chosen.append(len(ssn.victim_tasks(running(ssn))))
    assert chosen == [0, 0, 2, 0, 2]


def victims(*objects: dict[str, Any]) -> list[str]:
    ssn = open_at(START, PluginMemory(START), *objects, interval="0s")
    return [t.name for t in ssn.victim_tasks(running(ssn))]


def test_lowest_priority_and_best_effort_pods_go_first_while_the_node_stays_over_target() -> None:
    """p-low (75% -> 50%: still at the target), then the best-effort pod of the same priority (which frees
    nothing), then p-mid (50% -> 25%); p-high stays."""
    assert victims(
        priority_class(name="p10", value=10),
        priority_class(name="p100", value=100),
        node(name="node-a", cpu="4", memory="8Gi"),
        node(name="node-b", cpu="4", memory="8Gi"),
        pod(name="p-high", node_name="node-a", spec={"priorityClassName": "p100"}),
        pod(name="p-low", node_name="node-a"),
        pod(name="p-mid", node_name="node-a", spec={"priorityClassName": "p10"}),
        pod(name="p-free", node_name="node-a", cpu="", memory=""),
    ) == ["p-free", "p-low", "p-mid"]


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [node(name="a", cpu="4"), pod(name="x", node_name="a", cpu="3")], [], id="every-node-high-none-low"
        ),
        pytest.param([node(name="a", cpu="4"), node(name="b", cpu="4")], [], id="every-node-low"),
        pytest.param(
            [
                node(name="a", cpu="4"),
                node(name="b", cpu="4"),
                pod(name="x", node_name="a", cpu="1600m", memory="1Gi"),
            ],
            [],
            id="none-above-target",
        ),
        pytest.param(
            [
                node(name="a", cpu="4"),
                node(name="b", cpu="4", unschedulable=True),
                pod(name="x", node_name="a", cpu="3"),
            ],
            [],
            id="an-unschedulable-node-is-never-low",
        ),
        pytest.param(
            [
                node(name="a", cpu="4"),
                node(name="b", cpu="2", memory="8Gi"),
                pod(name="x", node_name="a", cpu="1", memory="1Gi"),
                pod(name="y", node_name="a", cpu="1", memory="1Gi"),
                pod(name="z", node_name="a", cpu="1", memory="1Gi"),
            ],
            ["z"],
            id="stops-once-the-low-nodes-room-is-used-youngest-first",
        ),
    ],
)
def test_low_node_utilization_needs_low_and_high_nodes_and_room(
    objects: list[dict[str, Any]], expected: list[str]
) -> None:
    """Nothing moves unless some (not all) nodes are under-used and some over-used; the under-used nodes'
    room up to the targets bounds what moves (node b's 1 CPU: one pod, the youngest of equals)."""
    assert victims(*objects) == expected
