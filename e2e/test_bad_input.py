"""Objects the API server accepts but no scheduler can use stop nothing (issue 17, defect 1).

On the real API server: a pod of ours and one of another scheduler, a node, a Queue and a PodGroup
with the quantity `1e1000000` (and a negative one, and an int32-sized gang) are created while
`py-volcano run` schedules. It keeps running and placing good pods, through a restart too (the first
LIST meets the same objects again), and our bad pod carries a true `PodScheduled=False` condition
(`SchedulerError`) naming the field, with a FailedScheduling event. Events that repeat are one Event
with a `series` (the status writer against the same API server).
"""

from __future__ import annotations

import asyncio
from typing import Any

from e2e.harness import Nodes, Rest, Scheduler, node, pod, pod_group, queue, token, wait_for
from py_volcano.api import Resource, TaskID, TaskInfo
from py_volcano.cache.client import ApiClient
from py_volcano.cache.status import StatusWriter

pytest_plugins = ["e2e.fixtures"]

HUGE = "1e1000000"


def _bound(rest: Rest, namespace: str, *names: str) -> bool:
    pods = rest.pods(namespace)
    return all(((pods.get(name) or {}).get("spec") or {}).get("nodeName") for name in names)


def _condition(rest: Rest, namespace: str, name: str) -> dict[str, Any] | None:
    obj = rest.get("Pod", name, namespace) or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


def _bad_objects(namespace: str, scheduler: str, suffix: str) -> list[dict[str, Any]]:
    """A pod of ours and one of another scheduler asking for 1e1000000 CPU, a Queue with such a capability
    and a negative deserved, a PodGroup with such minResources and one whose gang can never form."""
    ours = pod("bad-ours", namespace, scheduler=scheduler)
    ours["spec"]["containers"][0]["resources"]["requests"]["cpu"] = HUGE
    theirs = pod("bad-theirs", namespace, scheduler="someone-else")
    theirs["spec"]["containers"][0]["resources"]["requests"]["cpu"] = HUGE
    return [
        ours,
        theirs,
        queue(f"bad-{suffix}", capability={"cpu": HUGE}, deserved={"cpu": "-1"}),
        pod_group("bad-group", namespace, min_member=1, queue=f"bad-{suffix}", minResources={"cpu": HUGE}),
        pod_group("huge-gang", namespace, min_member=2**31 - 1),
    ]


def test_objects_no_one_can_use_stop_no_scheduling(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str
) -> None:
    """The scheduler keeps running and binding good pods while 1e1000000 quantities sit in pods, a node, a
    Queue and a PodGroup, and after a restart; our bad pod is told why it is left aside."""
    good_node = nodes.add(cpu="4")
    bad_node = node(token("huge"), cpu=HUGE)
    nodes.create(bad_node)
    suffix = token("q")
    objects = _bad_objects(namespace, scheduler_name, suffix)
    try:
        for obj in objects:
            rest.create(obj)
        with Scheduler(control_plane.kubeconfig, f"--scheduler-name={scheduler_name}", "--no-leader-elect") as first:
            first.wait_event("cache_synced")
            rest.create(pod("good-1", namespace, scheduler=scheduler_name))
            wait_for("good-1 bound", lambda: _bound(rest, namespace, "good-1"), timeout=60)
            condition = wait_for("bad-ours told why", lambda: _condition(rest, namespace, "bad-ours"), timeout=60)
            assert first.proc.poll() is None, first.tail()
            skipped = {line.get("object") for line in first.events("object_skipped")}
            assert {f"{namespace}/bad-ours", f"{namespace}/bad-theirs", bad_node["metadata"]["name"]} <= skipped
            assert f"bad-{suffix}" in skipped and f"{namespace}/bad-group" in skipped, skipped
            assert first.terminate() == 0, first.tail()
        assert condition["status"] == "False" and condition["reason"] == "SchedulerError", condition
        assert "field spec.containers[0].resources.requests.cpu: quantity out of range" in condition["message"]
        events = rest.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
        assert any(e["regarding"]["name"] == "bad-ours" and e["reason"] == "FailedScheduling" for e in events)
        assert rest.node_of(namespace, "good-1") == good_node

        with Scheduler(control_plane.kubeconfig, f"--scheduler-name={scheduler_name}", "--no-leader-elect") as second:
            second.wait_event("cache_synced")  # its first LIST met every bad object again
            rest.create(pod("good-2", namespace, scheduler=scheduler_name))
            wait_for("good-2 bound after a restart", lambda: _bound(rest, namespace, "good-2"), timeout=60)
            assert second.proc.poll() is None, second.tail()
            assert second.terminate() == 0, second.tail()
        assert not rest.node_of(namespace, "bad-ours")
    finally:
        rest.delete("Queue", f"bad-{suffix}")


def test_repeated_events_become_one_event_series(control_plane: Any, rest: Rest, namespace: str) -> None:
    """Events that repeat (same object, reason, action) fold into one events.k8s.io/v1 Event whose `series`
    counts them, created with the count it had when sent and patched as it grows; none is dropped."""
    created = rest.create(pod("evicted", namespace, scheduler="someone-else"))
    task = TaskInfo(
        uid=TaskID(created["metadata"]["uid"]),
        name="evicted",
        namespace=namespace,
        resreq=Resource(),
    )

    async def scenario() -> None:
        client = await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig))
        try:
            writer = StatusWriter(client, scheduler_name="py-volcano")
            for _ in range(3):
                writer.record_eviction(task, "node pressure")
            await writer.flush()
            writer.record_eviction(task, "node pressure")
            await writer.flush()
        finally:
            await client.close()

    asyncio.run(scenario())
    events = rest.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
    evicts = [e for e in events if e["regarding"]["name"] == "evicted" and e["reason"] == "Evict"]
    assert len(evicts) == 1, evicts
    assert evicts[0]["series"]["count"] == 4, evicts[0]
    assert evicts[0]["note"] == "node pressure"
