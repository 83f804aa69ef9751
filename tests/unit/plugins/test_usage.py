"""usage: Volcano's threshold filter and load score (its own test figures), stale and missing usage, the
shadow estimates of pods the metrics cannot show yet, and the arguments."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
import yaml

from py_volcano.actions import ACTIONS
from py_volcano.api import NodeUsage, TaskInfo
from py_volcano.errors import ConfigError
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.usage import CPU_OVER, MEMORY_OVER, UsageArgs, composite, estimate
from tests.builders import cluster, node, pod
from tests.unit.arguments import plugin_args

REGISTRY = Registry(plugins={"usage": PLUGINS["usage"]}, actions=ACTIONS)
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
GI = 2**30


def session(
    *objects: dict[str, Any],
    usage: Mapping[str, tuple[float, float, timedelta]],
    arguments: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
) -> Session:
    """A session with only usage on, each node's (cpu %, memory %, age) measured `age` before NOW."""
    plugin: dict[str, Any] = {"name": "usage", "arguments": dict(arguments or {})}
    conf: dict[str, Any] = {"actions": "allocate", "tiers": [{"plugins": [plugin]}]}
    if metrics is not None:
        conf["metrics"] = dict(metrics)
    snapshot = cluster(*objects)
    for name, (cpu, memory, age) in usage.items():
        snapshot.nodes[name].usage = NodeUsage(cpu=cpu, memory=memory, metrics_time=NOW - age)
    return open_session(snapshot, parse_conf(yaml.safe_dump(conf), REGISTRY), REGISTRY, now=NOW)


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str) -> dict[str, float]:
    rows = np.arange(len(ssn.node_list))
    return dict(zip([n.name for n in ssn.node_list], ssn.prioritize(task(ssn, name), rows).tolist(), strict=True))


FRESH = timedelta(seconds=10)
VOLCANO_NODES = [node(name=f"n{i}", cpu="4", memory="8Gi", pods="10") for i in range(1, 6)]
VOLCANO_USAGE = {
    "n1": (30.0, 50.0, FRESH),
    "n2": (60.0, 50.0, FRESH),
    "n3": (60.0, 80.0, FRESH),
    "n4": (10.0, 20.0, timedelta(minutes=6)),  # not updated for more than five minutes
}


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        pytest.param({"cpu.weight": 1, "memory.weight": 1}, {"n1": 300, "n2": 225, "n3": 150}, id="equal"),
        pytest.param({"cpu.weight": 2, "memory.weight": 8}, {"n1": 270, "n2": 240, "n3": 120}, id="memory-first"),
    ],
)
def test_score_is_volcanos(weights: dict[str, int], expected: dict[str, float]) -> None:
    """Volcano's figures: ((1-cpu) x cpu.weight + (1-mem) x memory.weight) / sum x 100 x usage.weight;
    stale (n4) and never measured (n5) usage scores 0."""
    ssn = session(
        *VOLCANO_NODES,
        pod(name="p1", cpu="1", memory="1Gi"),
        usage=VOLCANO_USAGE,
        arguments={"usage.weight": 5, **weights, "thresholds": {"cpu": 80, "mem": 80}},
    )
    assert scores(ssn, "p1") == pytest.approx({**expected, "n4": 0.0, "n5": 0.0})


def test_threshold_filters_only_fresh_usage() -> None:
    """Usage above a threshold refuses the node, unresolvably; stale or missing usage passes."""
    ssn = session(
        node(name="hot-cpu"), node(name="hot-mem"), node(name="at-limit"), node(name="stale"), node(name="none"),
        pod(name="p", cpu="1"),
        usage={
            "hot-cpu": (81.0, 10.0, FRESH),
            "hot-mem": (10.0, 95.0, FRESH),
            "at-limit": (80.0, 80.0, FRESH),
            "stale": (99.0, 99.0, timedelta(minutes=5, seconds=1)),
        },
    )
    pending = task(ssn, "p")
    verdicts = {n.name: ssn.predicate(pending, n) for n in ssn.node_list}
    assert {name: v.reason if v else None for name, v in verdicts.items()} == {
        "hot-cpu": CPU_OVER, "hot-mem": MEMORY_OVER, "at-limit": None, "stale": None, "none": None,
    }
    assert not any(v.resolvable for v in verdicts.values() if v)


def test_allocate_avoids_the_hot_node_and_prefers_the_idle_one() -> None:
    """The whole cycle: the node over the threshold gets nothing, the less loaded one gets the pod."""
    ssn = session(
        node(name="a-hot"), node(name="b-busy"), node(name="c-idle"), pod(name="p", cpu="1"),
        usage={"a-hot": (90.0, 10.0, FRESH), "b-busy": (60.0, 40.0, FRESH), "c-idle": (20.0, 30.0, FRESH)},
    )
    ACTIONS["allocate"].new(ssn.conf.action_args["allocate"]).execute(ssn)
    assert task(ssn, "p").node_name == "c-idle"


def test_shadow_estimates_count_pods_the_metrics_cannot_show() -> None:
    """A task Bound at session open, and one the session allocates, add request x 0.7 to the node's load;
    discarding the allocation takes it back exactly."""
    ssn = session(
        node(name="n", cpu="4", memory="8Gi"),
        pod(name="bound", cpu="2", memory="2Gi", node_name="n", phase="Pending"),
        pod(name="p", cpu="1", memory="2Gi"),
        usage={"n": (50.0, 25.0, FRESH)},
    )
    bound = ssn.nodes["n"].tasks
    assert {t.status.value for t in bound.values()} == {"Bound"}

    def expected(cpu_milli: float, memory: float) -> float:
        cpu_load = composite(50.0, cpu_milli, 4000)
        memory_load = composite(25.0, memory, 8 * GI)
        return ((1 - cpu_load) + (1 - memory_load)) / 2 * 100 * 5

    assert scores(ssn, "p")["n"] == pytest.approx(expected(1400, 0.7 * 2 * GI))
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "p"), "n")
    # composite load (2000+1400)/4000 and (2+1.4)/8 Gi: mean 0.64 >= risk_threshold 0.6, so risk 1.2
    assert scores(ssn, "p")["n"] == pytest.approx(expected(1400 + 700 * 1.2, 0.7 * 2 * GI + 0.7 * 2 * GI * 1.2))
    stmt.discard()
    assert scores(ssn, "p")["n"] == pytest.approx(expected(1400, 0.7 * 2 * GI))


def test_running_pods_count_until_the_metrics_interval_has_passed() -> None:
    """A Running pod scheduled less than `metrics.interval` ago is estimated; one scheduled earlier is not."""
    recent = pod(name="recent", cpu="2", memory="", node_name="n")
    old = pod(name="old", cpu="2", memory="", node_name="m")
    for manifest, seconds_ago in ((recent, 20), (old, 120)):
        stamp = (NOW - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")
        manifest["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}
        ]
    ssn = session(
        node(name="n"), node(name="m"), recent, old, pod(name="p"),
        usage={"n": (0.0, 0.0, FRESH), "m": (0.0, 0.0, FRESH)},
        metrics={"type": "prometheus", "address": "http://prometheus:9090", "interval": "1m"},
    )
    result = scores(ssn, "p")
    assert result["m"] == pytest.approx(500)
    assert result["n"] == pytest.approx((1 - 1400 / 4000 + 1) / 2 * 500)


def test_best_effort_pods_use_the_configured_estimate() -> None:
    """A best-effort pod counts `estimator.be_cpu` and `estimator.be_mem` (a bare int: milli-CPU and MiB)."""
    ssn = session(
        node(name="n", cpu="1", memory="1Gi"),
        pod(name="be", cpu="", memory="", node_name="n", phase="Pending"),
        pod(name="p"),
        usage={"n": (0.0, 0.0, FRESH)},
        arguments={"estimator": {"be_cpu": 500, "be_mem": 256}},
    )
    assert scores(ssn, "p")["n"] == pytest.approx(((1 - 0.5) + (1 - 0.25)) / 2 * 500)


def test_estimate_and_composite_are_volcanos() -> None:
    """Volcano's estimator figures: the request share, the burst share, the risk factor capped at the limit."""
    assert estimate(500, 2000, 0.5, 0.2, 1.0) == pytest.approx(550)
    assert estimate(500, 600, 1.0, 0.0, 1.2) == pytest.approx(600)
    assert estimate(500, 0, 1.0, 1.0, 1.2) == pytest.approx(500)
    assert composite(50, 2000, 8000) == pytest.approx(0.75)
    assert composite(80, 5000, 8000) == 1.0
    assert composite(50, 1000, 0) == 0.0


def test_arguments_read_as_volcano_reads_them() -> None:
    """Every key, and out-of-range values keeping the default as Volcano's getters do."""
    args = plugin_args("usage", {
        "usage.weight": 3, "cpu.weight": 2, "memory.weight": 0,
        "thresholds": {"cpu": 70, "mem": 101},
        "estimator": {"request_ratio": 0.5, "burst_ratio": 2, "risk_threshold": 0.8, "risk_factor": 0.5,
                      "be_cpu": "1", "be_mem": "64Mi"},
    })
    assert args == UsageArgs(
        usage_weight=3, cpu_weight=2, memory_weight=0, cpu_threshold=70, memory_threshold=80,
        request_ratio=0.5, burst_ratio=0.0, risk_threshold=0.8, risk_factor=1.2,
        be_cpu=1000, be_memory=64 * 2**20,
    )
    assert plugin_args("usage", {"usage.weight": -1}) == UsageArgs()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"usage.weight": "heavy"}, "argument usage.weight: 'heavy' is not an integer", id="weight"),
        pytest.param({"thresholds": 80}, "argument thresholds: 80 is not a map", id="thresholds"),
        pytest.param({"thresholds": {"cpu": "hot"}}, "argument thresholds: argument cpu", id="cpu"),
        pytest.param({"estimator": {"be_mem": "lots"}}, "argument be_mem: 'lots' is not a quantity", id="be_mem"),
    ],
)
def test_bad_argument_names_the_key(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plugin_args("usage", arguments)
