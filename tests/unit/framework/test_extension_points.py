"""The one switch table: each `enabledXxx` switch turns off exactly the extension points it names."""

from __future__ import annotations

import pytest

from py_volcano.framework import SWITCHES, PluginOption
from py_volcano.framework.extension_points import ExtensionPoints

GOVERNED = [(switch, point) for switch, points in SWITCHES.items() for point in points]
POINTS = sorted(
    name.removeprefix("add_").removesuffix("_fn")
    for name in dir(ExtensionPoints)
    if name.startswith("add_") and name.endswith("_fn")
)


def test_every_point_a_switch_names_is_a_registration_point_named_once() -> None:
    """The table cannot name a point plugins cannot register at, nor give a point two switches."""
    named = [point for _, point in GOVERNED]
    assert sorted(set(named) - set(POINTS)) == []
    assert len(named) == len(set(named))


def test_the_switch_table_holds_volcanos_switches() -> None:
    """Volcano's PluginOption switches (`enabledJobOrder` ... `enabledHyperNodeGradient`), in its order; the
    sub-job switches (`enabledSubJobReady`, `enabledSubJobPipelined`, `enabledSubJobOrder`) are not taken."""
    assert list(SWITCHES) == [
        "job_order",
        "namespace_order",
        "hierarchy",
        "job_ready",
        "job_pipelined",
        "task_order",
        "preemptable",
        "reclaimable",
        "preemptive",
        "queue_order",
        "cluster_order",
        "predicate",
        "best_node",
        "node_order",
        "target_job",
        "reserved_nodes",
        "job_enqueued",
        "victim",
        "job_starving",
        "overused",
        "allocatable",
        "hyper_node_order",
        "hyper_node_gradient",
    ]


@pytest.mark.parametrize(("switch", "point"), GOVERNED, ids=[f"{s}-{p}" for s, p in GOVERNED])
def test_a_switch_off_drops_the_plugins_functions_at_its_points(switch: str, point: str) -> None:
    """With the switch off the plugin's function is skipped at that point; other plugins keep theirs."""
    fn, other = object(), object()
    points = ExtensionPoints([[PluginOption(name="p", switches={switch: False}), PluginOption(name="q")]])
    points._add(point, "p", fn)  # type: ignore[arg-type]
    points._add(point, "q", other)  # type: ignore[arg-type]
    assert points._tier_fns(point) == [[other]]


@pytest.mark.parametrize("point", [p for p in POINTS if p not in {q for _, q in GOVERNED}])
def test_points_no_switch_names_are_always_on(point: str) -> None:
    """evictable, job_valid and the dry-run add/remove hooks have no switch."""
    fn = object()
    points = ExtensionPoints([[PluginOption(name="p", switches=dict.fromkeys(SWITCHES, False))]])
    points._add(point, "p", fn)  # type: ignore[arg-type]
    assert points._tier_fns(point) == [[fn]]
