"""deviceshare: GPU sharing by memory and GPU number (Volcano's gpushare device) decide nodes and cards,
write `volcano.sh/gpu-index` for the device plugin, and account cards taken earlier in the cycle."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from py_volcano.errors import ConfigError
from py_volcano.framework import Statement, run_cycle
from py_volcano.plugins.deviceshare import DeviceShareArgs
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod
from tests.unit.plugins.sessions import annotated, open_at

SHARING = (
    'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    "- plugins:\n  - name: deviceshare\n    arguments:\n      deviceshare.GPUSharingEnable: true\n"
    "  - name: predicates\n  - name: proportion\n  - name: nodeorder\n"
)
NUMBER = SHARING.replace("GPUSharingEnable", "GPUNumberEnable")


def gpu_node(name: str, cards: int = 2, memory_per_card: int = 8000, **extra: Any) -> dict[str, Any]:
    """A node whose device plugin registered `cards` cards of `memory_per_card` memory."""
    scalars = {"volcano.sh/gpu-number": str(cards), "volcano.sh/gpu-memory": str(cards * memory_per_card)}
    return node(name=name, scalars=scalars, **extra)


def gpu_pod(name: str, *, memory: int = 0, number: int = 0, **extra: Any) -> dict[str, Any]:
    """A pod limiting GPU memory and/or GPU cards (requests default to limits, as the API server does)."""
    manifest = pod(name=name, **extra)
    limits = {}
    if memory:
        limits["volcano.sh/gpu-memory"] = str(memory)
    if number:
        limits["volcano.sh/gpu-number"] = str(number)
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["limits"] = limits
    resources["requests"].update(limits)
    return manifest


def schedule(conf: str, *objects: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """Run one cycle; per bound pod its node and the annotations its bind writes."""
    registry = default_registry()
    result = run_cycle(cluster(*objects), load_conf(conf, registry=registry), registry)
    return {task.name: (where, dict(task.bind_annotations)) for task, where in result.binds}


def test_gpu_memory_per_card_decides_the_node_not_the_node_total() -> None:
    """node-a has 4000 of 16000 left in all, but only 2000 on each card: a 4000 pod goes to node-b."""
    objects = (
        gpu_node("node-a"),
        gpu_node("node-b"),
        annotated(gpu_pod("old-0", memory=6000, node_name="node-a"), {"volcano.sh/gpu-index": "0"}),
        annotated(gpu_pod("old-1", memory=6000, node_name="node-a"), {"volcano.sh/gpu-index": "1"}),
        gpu_pod("new", memory=4000),
    )
    bound = schedule(SHARING, *objects)
    where, annotations = bound["new"]
    assert where == "node-b"
    assert annotations["volcano.sh/gpu-index"] == "0"
    assert int(annotations["volcano.sh/predicate-time"]) > 0


def test_pods_of_one_cycle_share_a_card_until_its_memory_is_gone() -> None:
    """Three 3000 pods on one node of two 8000 cards: two share card 0, the third takes card 1."""
    objects = (gpu_node("n"), *(gpu_pod(f"p{i}", memory=3000) for i in range(3)))
    bound = schedule(SHARING, *objects)
    assert sorted(a["volcano.sh/gpu-index"] for _, a in bound.values()) == ["0", "0", "1"]


def test_gpu_number_takes_idle_cards_and_a_card_taken_earlier_in_the_cycle_is_not_offered_again() -> None:
    objects = (
        gpu_node("n", cards=4),
        annotated(gpu_pod("old", number=1, node_name="n"), {"volcano.sh/gpu-index": "1"}),
        gpu_pod("two", number=2),
        gpu_pod("one", number=1),
    )
    bound = schedule(NUMBER, *objects)
    assert bound["two"][1]["volcano.sh/gpu-index"] == "0,2"
    assert bound["one"][1]["volcano.sh/gpu-index"] == "3"


def test_unhealthy_cards_are_not_offered_and_a_bad_id_is_reported() -> None:
    sick = gpu_node("n", cards=2)
    sick["metadata"]["annotations"] = {"volcano.sh/gpu-unhealthy-ids": "0,x"}
    ssn = open_at(NUMBER, sick, gpu_pod("p", number=2))
    task = next(iter(next(iter(ssn.jobs.values())).tasks.values()))
    status = ssn.plugins["deviceshare"].predicate(task, ssn.nodes["n"])  # type: ignore[attr-defined]
    assert status is not None and status.reason == "GpuNumber no enough gpu number on node n"
    assert any("volcano.sh/gpu-unhealthy-ids" in w and "'x'" in w for w in ssn.warnings)


def test_a_discarded_allocation_gives_its_card_and_annotations_back() -> None:
    ssn = open_at(NUMBER, gpu_node("n", cards=1), gpu_pod("a", number=1), gpu_pod("b", number=1))
    plugin: Any = ssn.plugins["deviceshare"]
    a, b = (next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == n) for n in ("a", "b"))
    stmt = Statement(ssn)
    stmt.allocate(a, "n")
    assert a.bind_annotations["volcano.sh/gpu-index"] == "0"
    assert plugin.predicate(b, ssn.nodes["n"]).reason == "GpuNumber no enough gpu number on node n"
    stmt.discard()
    assert not a.bind_annotations
    assert plugin.predicate(b, ssn.nodes["n"]) is None


def test_an_evicted_pod_frees_its_card_and_an_undone_eviction_takes_it_back() -> None:
    old = annotated(gpu_pod("old", number=1, node_name="n"), {"volcano.sh/gpu-index": "0"})
    ssn = open_at(NUMBER, gpu_node("n", cards=1), old, gpu_pod("new", number=1))
    plugin: Any = ssn.plugins["deviceshare"]
    victim, new = (next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == n) for n in ("old", "new"))
    assert plugin.predicate(new, ssn.nodes["n"]) is not None
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    assert plugin.predicate(new, ssn.nodes["n"]) is None
    stmt.discard()
    assert plugin.predicate(new, ssn.nodes["n"]) is not None


def test_arguments_volcano_reads_are_all_accepted() -> None:
    text = SHARING.replace(
        "      deviceshare.GPUSharingEnable: true\n",
        "      deviceshare.GPUSharingEnable: true\n      deviceshare.NodeLockEnable: true\n"
        "      deviceshare.SchedulePolicy: binpack\n      deviceshare.ScheduleWeight: 10\n"
        "      deviceshare.KnownGeometriesCMName: my-config\n      deviceshare.KnownGeometriesCMNamespace: gpu\n"
        "      deviceshare.AscendMindClusterVNPUEnable: false\n      deviceshare.AscendHAMiVNPUEnable: false\n"
        "      deviceshare.GPUNumberEnable: false\n      deviceshare.VGPUEnable: false\n",
    )
    conf = load_conf(text, registry=default_registry())  # an unknown argument would warn (an error here)
    args = next(p for tier in conf.tiers for p in tier if p.name == "deviceshare").args
    assert args == DeviceShareArgs(
        gpu_sharing=True,
        node_lock=True,
        schedule_policy="binpack",
        schedule_weight=10,
        known_geometries_cm="gpu/my-config",
    )


@pytest.mark.parametrize(
    ("switches", "message"),
    [
        ("GPUSharingEnable: true\n      deviceshare.GPUNumberEnable: true", "cannot be true with"),
        ("GPUNumberEnable: true\n      deviceshare.VGPUEnable: true", "cannot be used together"),
        ("ScheduleWeight: heavy", "is not an integer"),
    ],
)
def test_switches_volcano_refuses_together_are_a_config_error(switches: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_conf(SHARING.replace("GPUSharingEnable: true", switches), registry=default_registry())


def test_ascend_vnpu_is_reported_unsupported_and_the_rest_runs() -> None:
    text = SHARING.replace(
        "GPUSharingEnable: true", "GPUSharingEnable: true\n      deviceshare.AscendHAMiVNPUEnable: true"
    )
    with capture_logs() as logs:
        ssn = open_at(text, gpu_node("n"))
    assert any(e["event"] == "ascend_vnpu_unsupported" and e["log_level"] == "error" for e in logs)
    assert any("deviceshare.AscendHAMiVNPUEnable" in w and "not supported" in w for w in ssn.warnings)


def test_cards_filled_earlier_in_the_cycle_refuse_the_next_pod() -> None:
    """Two 8000 cards, three 5000 pods: the node total (16000) holds all three, the cards only two."""
    objects = (gpu_node("n"), *(gpu_pod(f"p{i}", memory=5000) for i in range(3)))
    assert sorted((name, a["volcano.sh/gpu-index"]) for name, (_, a) in schedule(SHARING, *objects).items()) == [
        ("p0", "0"),
        ("p1", "1"),
    ]


def test_a_malformed_gpu_index_is_reported_and_its_pod_holds_no_card() -> None:
    old = annotated(gpu_pod("old", number=1, node_name="n"), {"volcano.sh/gpu-index": "zero"})
    ssn = open_at(NUMBER, gpu_node("n", cards=1), old, gpu_pod("new", number=1))
    new = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "new")
    assert ssn.plugins["deviceshare"].predicate(new, ssn.nodes["n"]) is None  # type: ignore[attr-defined]
    assert "Pod default/old: field metadata.annotations[volcano.sh/gpu-index]: 'zero' is not a list" in "".join(
        ssn.warnings
    )
