"""Run a scenario in memory: the configured cycles over an `InMemoryCluster`, then the expectations."""

from __future__ import annotations

import time
import warnings
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from py_volcano.api import NodeUsage, QueueFigures
from py_volcano.errors import ConfigError, ScenarioError
from py_volcano.framework import PluginMemory, Registry, run_cycle
from py_volcano.registry import default_registry, load_conf
from py_volcano.simulation.cluster import InMemoryCluster
from py_volcano.simulation.expect import Outcome, check
from py_volcano.simulation.scenario import Scenario, load_scenario

__all__ = ["run_scenario", "run_scenario_file"]

SCHEDULER_NAME = "py-volcano"
#: Seconds between two cycles' wall-clock times (the default `--schedule-period`).
SCHEDULE_PERIOD = 1.0


def _figures_json(figures: QueueFigures) -> dict[str, Any]:
    result: dict[str, Any] = {
        "weight": figures.weight,
        "allocated": figures.allocated.to_quantities(),
        "request": figures.request.to_quantities(),
        "share": round(figures.share, 6),
        "overused": figures.overused,
    }
    for name, value in (
        ("deserved", figures.deserved),
        ("capability", figures.capability),
        ("realCapability", figures.real_capability),
        ("guarantee", figures.guarantee),
    ):
        if value is not None:
            result[name] = value.to_quantities()
    if figures.parent:
        result["parent"] = figures.parent
    return result


def run_scenario(
    scenario: Scenario, *, source: str, registry: Registry | None = None, cycles: int | None = None
) -> dict[str, Any]:
    """Run the scenario and return the JSON report of docs/scenarios.md; ScenarioError when it is not valid."""
    registry = registry or default_registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            conf = load_conf(scenario.scheduler_config, source=f"{source}: schedulerConfig", registry=registry)
        except ConfigError as exc:
            raise ScenarioError(str(exc)) from None
    cluster = InMemoryCluster(scenario.objects, source=source, scheduler_name=SCHEDULER_NAME)
    outcome = Outcome()
    written: dict[str, dict[str, str]] = {}  # the pod annotations each bind wrote first (deviceshare)
    warned: list[str] = conf.unsupported_messages(f"{source}: schedulerConfig") + [str(w.message) for w in caught]
    warned += cluster.warnings
    seconds: list[float] = []
    start = scenario.now or cluster.clock_start
    memory = PluginMemory(start)
    _measure(cluster, scenario, source=source, when=start)
    for cycle in range(cycles or scenario.cycles):
        snapshot = cluster.snapshot()
        started = time.perf_counter()
        now = start + timedelta(seconds=cycle * SCHEDULE_PERIOD)
        result = run_cycle(snapshot, conf, registry, cycle=cycle, now=now, memory=memory)
        seconds.append(round(time.perf_counter() - started, 6))
        warned += [w for w in result.warnings if w not in warned]
        outcome.binds.update((task.key, node) for task, node in result.binds)
        written.update((task.key, dict(task.bind_annotations)) for task, _ in result.binds if task.bind_annotations)
        outcome.evictions += [task.key for task, _ in result.evictions if task.key not in outcome.evictions]
        outcome.pod_groups.update(
            (str(job_id), status.phase.value) for job_id, status in result.pod_groups.items() if not status.shadow
        )
        outcome.queues = result.queues
        cluster.apply(result)
    failures = check(scenario.expect, outcome, cluster)
    return {
        "scenario": scenario.name,
        "ok": not failures,
        "failures": failures,
        "warnings": warned,
        "binds": outcome.binds,
        "bindAnnotations": written,
        "evictions": outcome.evictions,
        "podGroups": {key: {"phase": phase} for key, phase in outcome.pod_groups.items()},
        "queues": {name: _figures_json(figures) for name, figures in outcome.queues.items()},
        "cycleSeconds": seconds,
    }


def _measure(cluster: InMemoryCluster, scenario: Scenario, *, source: str, when: datetime) -> None:
    """Give the store each node's `nodeUsage`, measured at the first cycle's time (fresh for five minutes)."""
    nodes = {spec.name for spec in cluster.snapshot().nodes.values()}
    for name, usage in scenario.node_usage.items():
        if name not in nodes:
            raise ScenarioError(f"{source}: key nodeUsage.{name}: no Node {name!r} among the objects")
        cluster.store.node_usage[name] = NodeUsage(cpu=usage.cpu, memory=usage.memory, metrics_time=when)


def run_scenario_file(path: Path, *, registry: Registry | None = None, cycles: int | None = None) -> dict[str, Any]:
    """Load and run one scenario file."""
    return run_scenario(load_scenario(path), source=str(path), registry=registry, cycles=cycles)
