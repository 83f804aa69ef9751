"""The binder PATCHes a placement's pod annotations (deviceshare's devices) before it POSTs the Binding;
a refused PATCH sends no Binding and rolls the assumption back, so the pod is scheduled again."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from py_volcano.api import Resource, TaskID, TaskInfo
from py_volcano.cache.binder import Binder
from py_volcano.cache.client import ApiClient
from py_volcano.cache.store import NODES, PODS, Store


class RecordingClient:
    """Answers every request with the status given for its method, recording what was sent."""

    def __init__(self, statuses: dict[str, int]) -> None:
        self.statuses = statuses
        self.sent: list[tuple[str, str, Any, str]] = []

    async def request(
        self, method: str, path: str, *, body: object = None, params: object = None, content_type: str = ""
    ) -> tuple[int, Any]:
        self.sent.append((method, path, body, content_type))
        return self.statuses[method], {}

    async def post(self, path: str, body: object) -> tuple[int, Any]:
        return await self.request("POST", path, body=body, content_type="application/json")


def _bind(statuses: dict[str, int], annotations: dict[str, str]) -> tuple[RecordingClient, Store, Any]:
    client = RecordingClient(statuses)
    store = Store(scheduler_name="py-volcano")
    task = TaskInfo(uid=TaskID("u-1"), name="p", namespace="ns", resreq=Resource(1000))
    task.bind_annotations = annotations
    binder = Binder(cast(ApiClient, client), store, concurrency=1, is_leader=lambda: True)

    async def run() -> Any:
        return await binder.submit([(task, "n")], [])

    return client, store, asyncio.run(run())


def test_annotations_are_patched_onto_the_pod_then_it_is_bound() -> None:
    client, store, report = _bind({"PATCH": 200, "POST": 201}, {"volcano.sh/gpu-index": "1"})
    assert [(m, p) for m, p, _, _ in client.sent] == [
        ("PATCH", "/api/v1/namespaces/ns/pods/p"),
        ("POST", "/api/v1/namespaces/ns/pods/p/binding"),
    ]
    _, _, body, content_type = client.sent[0]
    assert body == {"metadata": {"uid": "u-1", "annotations": {"volcano.sh/gpu-index": "1"}}}
    assert content_type == "application/strategic-merge-patch+json"
    assert report.bound == ["ns/p"]
    assert store.assumed["ns/p"].annotations == {"volcano.sh/gpu-index": "1"}


def test_a_refused_patch_sends_no_binding_and_drops_the_assumption() -> None:
    client, store, report = _bind({"PATCH": 409, "POST": 201}, {"volcano.sh/gpu-index": "1"})
    assert [m for m, _, _, _ in client.sent] == ["PATCH"]
    assert "annotate ns/p before binding: HTTP 409" in report.bind_errors["ns/p"]
    assert "ns/p" not in store.assumed


def test_a_placement_without_annotations_is_bound_with_no_patch() -> None:
    client, _, report = _bind({"POST": 201}, {})
    assert [m for m, _, _, _ in client.sent] == ["POST"]
    assert report.bound == ["ns/p"]


def test_the_assumed_pod_carries_the_annotations_its_bind_writes_into_the_next_snapshot() -> None:
    """Until the bind is seen, the next cycle must count the devices the pod was given."""
    store = Store(scheduler_name="py-volcano")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"pods": "9"}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "annotations": {"keep": "me"}},
        "spec": {"schedulerName": "py-volcano", "containers": [{"name": "c"}]},
    }
    store.apply_event(NODES, "ADDED", node)
    store.apply_event(PODS, "ADDED", pod)
    store.assume("ns/p", "n", {"volcano.sh/gpu-index": "0"})
    task = next(t for job in store.snapshot().jobs.values() for t in job.tasks.values())
    assert task.node_name == "n"
    assert dict(task.annotations) == {"keep": "me", "volcano.sh/gpu-index": "0"}
