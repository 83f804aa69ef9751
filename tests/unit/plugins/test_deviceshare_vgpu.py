"""deviceshare with `deviceshare.VGPUEnable`: cards from the node's register annotation, usage from the
pods' `volcano.sh/vgpu-ids-new`, device choice and node score by `deviceshare.SchedulePolicy`, and the
annotations written for Volcano's vGPU device plugin."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.framework import run_cycle
from py_volcano.plugins.deviceshare.vgpu import Assigned, decode_pod_devices, encode_pod_devices
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, pod_group
from tests.unit.plugins.sessions import annotated, open_at

VGPU = (
    'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: predicates\n  - name: deviceshare\n'
    "    arguments:\n      deviceshare.VGPUEnable: true\n      deviceshare.SchedulePolicy: {policy}\n"
    "      deviceshare.ScheduleWeight: 10\n"
)
T4 = "NVIDIA-Tesla T4"


def vgpu_node(name: str, *uuids: str, memory: int = 16000, card_type: str = T4) -> dict[str, Any]:
    """A node whose vGPU device plugin registered one card per uuid (10 splits, `memory` each)."""
    register = "".join(f"{uuid},10,{memory},{card_type},true,hami-core:" for uuid in uuids)
    scalars = {
        "volcano.sh/vgpu-number": str(10 * len(uuids)),
        "volcano.sh/vgpu-memory": str(memory * len(uuids)),
        "volcano.sh/vgpu-cores": str(100 * len(uuids)),
    }
    manifest = node(name=name, scalars=scalars)
    manifest["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": register}
    return manifest


def vgpu_pod(name: str, *, number: int = 1, memory: int = 0, cores: int = 0, **extra: Any) -> dict[str, Any]:
    """A pod whose one container limits vGPUs."""
    manifest = pod(name=name, **extra)
    limits = {"volcano.sh/vgpu-number": str(number)}
    if memory:
        limits["volcano.sh/vgpu-memory"] = str(memory)
    if cores:
        limits["volcano.sh/vgpu-cores"] = str(cores)
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["limits"] = limits
    resources["requests"].update(limits)
    return manifest


def on(node_name: str, name: str, ids: str, **extra: Any) -> dict[str, Any]:
    """A running pod holding the devices `ids` (its `volcano.sh/vgpu-ids-new`)."""
    return annotated(vgpu_pod(name, node_name=node_name, **extra), {"volcano.sh/vgpu-ids-new": ids})


def schedule(policy: str, *objects: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    registry = default_registry()
    result = run_cycle(cluster(*objects), load_conf(VGPU.format(policy=policy), registry=registry), registry)
    return {task.name: (where, dict(task.bind_annotations)) for task, where in result.binds}


@pytest.mark.parametrize(
    ("policy", "card"),
    [("binpack", "GPU-a"), ("spread", "GPU-b"), ("none", "GPU-c")],
)
def test_schedule_policy_picks_the_card(policy: str, card: str) -> None:
    """binpack takes the fullest card, spread the one with fewest pods, otherwise the highest index."""
    objects = (
        vgpu_node("n", "GPU-a", "GPU-b", "GPU-c"),
        on("n", "old-a", "GPU-a,NVIDIA,8000,0:", memory=8000),
        on("n", "old-c", "GPU-c,NVIDIA,2000,0:", memory=2000),
        vgpu_pod("new", memory=3000, cores=20),
    )
    where, annotations = schedule(policy, *objects)["new"]
    assert where == "n"
    assert annotations["volcano.sh/vgpu-ids-new"] == f"{card},NVIDIA,3000,20:"
    assert annotations["volcano.sh/devices-to-allocate"] == annotations["volcano.sh/vgpu-ids-new"]
    assert annotations["volcano.sh/vgpu-node"] == "n"
    assert annotations["volcano.sh/bind-phase"] == "allocating"
    assert annotations["volcano.sh/vgpu-time"] == annotations["volcano.sh/bind-time"]


def test_binpack_score_sends_the_pod_to_the_node_whose_card_it_fills_most() -> None:
    objects = (
        vgpu_node("empty", "GPU-e"),
        vgpu_node("used", "GPU-u"),
        on("used", "old", "GPU-u,NVIDIA,6000,0:", memory=6000),
        vgpu_pod("new", memory=4000),
    )
    assert schedule("binpack", *objects)["new"][0] == "used"


def test_no_card_with_memory_left_is_a_clear_reason_and_whole_card_requests_need_an_empty_card() -> None:
    objects = (
        vgpu_node("n", "GPU-a"),
        on("n", "old", "GPU-a,NVIDIA,10000,0:", memory=10000),
        vgpu_pod("big", memory=8000),
        vgpu_pod("whole"),
        vgpu_pod("exclusive", memory=1000, cores=100),
    )
    ssn = open_at(VGPU.format(policy="binpack"), *objects)
    plugin: Any = ssn.plugins["deviceshare"]
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    for name in ("big", "whole", "exclusive"):
        status = plugin.predicate(tasks[name], ssn.nodes["n"])
        assert status.reason == "hami-vgpuDeviceSharing error: not enough gpu fitted on this node", name


def test_cards_of_a_cycle_and_per_container_requests_are_accounted() -> None:
    """Two containers of one pod take a card each; the next pod finds both cards' memory used."""
    two = vgpu_pod("two", memory=9000)
    two["spec"]["containers"].append(dict(two["spec"]["containers"][0], name="second"))
    objects = (vgpu_node("n", "GPU-a", "GPU-b"), two, vgpu_pod("late", memory=9000))
    bound = schedule("binpack", *objects)
    assert set(bound) == {"two"}
    assert bound["two"][1]["volcano.sh/vgpu-ids-new"] == "GPU-a,NVIDIA,9000,0:;GPU-b,NVIDIA,9000,0:"


def test_card_type_and_uuid_annotations_and_the_podgroup_spread_policy() -> None:
    objects = (
        vgpu_node("n", "GPU-a", "GPU-b"),
        pod_group(name="g", min_member=1, phase="Running"),
        on("n", "mate", "GPU-b,NVIDIA,1000,0:", memory=1000, group="g"),
        annotated(vgpu_pod("typed", memory=1000), {"nvidia.com/use-gputype": "A100"}),
        annotated(vgpu_pod("pinned", memory=1000), {"volcano.sh/vgpu-use-gpuuuid": "GPU-z"}),
        annotated(vgpu_pod("spread", memory=1000, group="g"), {"volcano.sh/vgpu-podgroup-policy": "spread"}),
    )
    ssn = open_at(VGPU.format(policy="binpack"), *objects)
    plugin: Any = ssn.plugins["deviceshare"]
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    assert plugin.predicate(tasks["typed"], ssn.nodes["n"]) is not None
    assert "no GPU matches UUID constraints" in plugin.predicate(tasks["pinned"], ssn.nodes["n"]).reason
    devices, _ = plugin.nodes["n"].vgpus.fit(tasks["spread"], "binpack")  # binpack alone would take GPU-b
    assert devices == [[Assigned("GPU-a", "NVIDIA", 1000, 0)]]


def test_a_node_without_the_register_annotation_or_allocatable_offers_no_vgpu() -> None:
    bare = vgpu_node("bare", "GPU-a")
    del bare["metadata"]["annotations"]
    broken = vgpu_node("broken", "GPU-b")
    broken["metadata"]["annotations"]["volcano.sh/node-vgpu-register"] = "GPU-b,10,16000:"
    ssn = open_at(VGPU.format(policy="binpack"), bare, broken)
    assert ssn.plugins["deviceshare"].nodes == {}  # type: ignore[attr-defined]
    assert any("fewer than 6 fields" in w for w in ssn.warnings)


def test_pod_devices_round_trip_through_the_annotation_text() -> None:
    devices = [
        [Assigned("GPU-a", "NVIDIA", 1000, 10), Assigned("GPU-b", "NVIDIA", 2000, 0)],
        [Assigned("GPU-c", "NVIDIA", 5, 5)],
    ]
    text = encode_pod_devices(devices)
    assert text == "GPU-a,NVIDIA,1000,10:GPU-b,NVIDIA,2000,0:;GPU-c,NVIDIA,5,5:"
    assert decode_pod_devices(text) == devices
    assert decode_pod_devices("GPU-a,NVIDIA,x,0:GPU-b,NVIDIA:") == [[]]


def test_pods_asking_alike_see_the_cards_taken_by_the_ones_placed_before_them() -> None:
    """Three identical 9000 pods, two 16000 cards: a card each for the first two, nothing for the third."""
    objects = (vgpu_node("n", "GPU-a", "GPU-b"), *(vgpu_pod(f"p{i}", memory=9000) for i in range(3)))
    bound = schedule("binpack", *objects)
    assert sorted(a["volcano.sh/vgpu-ids-new"] for _, a in bound.values()) == [
        "GPU-a,NVIDIA,9000,0:",
        "GPU-b,NVIDIA,9000,0:",
    ]


def test_a_malformed_device_entry_is_reported_and_the_rest_of_the_annotation_counts() -> None:
    objects = (vgpu_node("n", "GPU-a"), on("n", "old", "GPU-a,NVIDIA,12000,0:GPU-a,NVIDIA,lots,0:", memory=12000))
    ssn = open_at(VGPU.format(policy="binpack"), *objects, vgpu_pod("new", memory=8000))
    new = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "new")
    assert ssn.plugins["deviceshare"].predicate(new, ssn.nodes["n"]) is not None  # type: ignore[attr-defined]
    assert any("field metadata.annotations[volcano.sh/vgpu-ids-new]" in w and "lots" in w for w in ssn.warnings)
