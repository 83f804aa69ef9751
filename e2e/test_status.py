"""StatusWriter against a real API server: PodGroup and Queue status, PodScheduled, events, writes on change.

Each test creates a Queue, PodGroups and pods in the API server, reads them back into a `ClusterInfo`,
runs a real scheduling cycle over it (nodes exist only in the snapshot: the writer never touches
nodes, and no kubelet should start the pods), submits the result and reads what the API server now
holds. `RecordingClient` is the real `ApiClient`, noting each request and the server's answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from py_volcano.api import (
    GANG_READY,
    ClusterInfo,
    CycleResult,
    JobID,
    QueueID,
    TaskInfo,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_queue,
)
from py_volcano.cache.client import ApiClient, Credentials
from py_volcano.cache.status import StatusWriter
from py_volcano.cache.status_diff import POD_GROUP_READY
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf

CRDS = Path(__file__).resolve().parent.parent / "crds"
GROUP, VERSION = "scheduling.volcano.sh", "v1beta1"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
T0_TEXT = "2026-01-01T00:00:00Z"
GANG_MESSAGE = "1/3 tasks unschedulable: 0/3 nodes are available: 3 Insufficient cpu"
TAINTED_MESSAGE = "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}"


class RecordingClient(ApiClient):
    """The real client, noting every request with the API server's answer, and the most in flight at once."""

    def __init__(self, credentials: Credentials, **kwargs: Any) -> None:
        super().__init__(credentials, **kwargs)
        self.calls: list[tuple[str, str, int | None, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            status, body = await super().request(method, path, **kwargs)
        except Exception:
            self.calls.append((method, path, None, kwargs.get("body")))
            raise
        finally:
            self.in_flight -= 1
        self.calls.append((method, path, status, kwargs.get("body")))
        return status, body

    def take(self) -> list[tuple[str, str, int | None, Any]]:
        calls, self.calls = self.calls, []
        return calls


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


# Fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crds(kube: Any) -> None:
    """The Queue and PodGroup CRDs of crds/, established."""
    api = client.ApiextensionsV1Api(kube)
    names = []
    for path in sorted(CRDS.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        names.append(body["metadata"]["name"])
        try:
            api.create_custom_resource_definition(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
    for name in names:
        wait_for(f"CRD {name} established", partial(_established, api, name))


def _established(api: client.ApiextensionsV1Api, name: str) -> bool:
    conditions = api.read_custom_resource_definition(name).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def wait_for(what: str, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def namespace(kube: Any) -> Iterator[str]:
    core: Any = client.CoreV1Api(kube)
    name = f"status-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": name}})
    wait_for(
        f"ServiceAccount {name}/default",
        lambda: _exists(lambda: core.read_namespaced_service_account("default", name)),
    )
    yield name
    core.delete_namespace(name)


def _exists(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.fixture
def queue(kube: Any, crds: None) -> Iterator[str]:
    custom = client.CustomObjectsApi(kube)
    name = f"q-{secrets.token_hex(3)}"
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "queues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1},
        },
    )
    yield name
    custom.delete_cluster_custom_object(GROUP, VERSION, "queues", name)


# Objects and cycles -----------------------------------------------------------------------------


class Cluster:
    """One test's objects in the API server, and cycles over them."""

    def __init__(self, kube: Any, namespace: str, queue: str) -> None:
        self.kube, self.namespace, self.queue = kube, namespace, queue
        # Plain dicts in and out, as the scheduler speaks to the API; the client's typed models stay out.
        self.core: Any = client.CoreV1Api(kube)
        self.custom: Any = client.CustomObjectsApi(kube)
        self.nodes: list[dict[str, Any]] = []

    def node(self, name: str, cpu: str, *, taint: dict[str, str] | None = None) -> None:
        spec = {"taints": [taint]} if taint else {}
        self.nodes = [n for n in self.nodes if n["metadata"]["name"] != name]
        self.nodes.append(
            {
                "metadata": {"name": name},
                "spec": spec,
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
            }
        )

    def pod_group(self, name: str, min_member: int) -> None:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": min_member, "queue": self.queue},
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "podgroups", body)

    def pod(
        self, name: str, *, group: str = "", cpu: str = "1", node_selector: dict[str, str] | None = None
    ) -> None:
        annotations = (
            {"scheduling.k8s.io/group-name": group}
            if group
            else {"scheduling.volcano.sh/queue-name": self.queue}
        )
        spec: dict[str, Any] = {
            "schedulerName": "py-volcano",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
        }
        if node_selector:
            spec["nodeSelector"] = node_selector
        self.core.create_namespaced_pod(
            self.namespace, {"metadata": {"name": name, "annotations": annotations}, "spec": spec}
        )

    def snapshot(self) -> ClusterInfo:
        pods = [
            self.kube.sanitize_for_serialization(p)
            for p in self.core.list_namespaced_pod(self.namespace).items
        ]
        groups = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "podgroups")[
            "items"
        ]
        queue = self.custom.get_cluster_custom_object(GROUP, VERSION, "queues", self.queue)
        cluster = ClusterInfo.build(
            nodes=[parse_node(n) for n in self.nodes],
            pods=[parse_pod(p, priority_classes={}) for p in pods],
            queues=[parse_queue(queue)],
            pod_groups=[parse_pod_group(g) for g in groups],
            priority_classes={},
        )
        # The snapshot adds a `default` queue; another test may own a real one: leave it alone.
        cluster.queues.pop(QueueID("default"), None)
        return cluster

    def cycle(self) -> CycleResult:
        return run_cycle(self.snapshot(), load_conf(None), default_registry())

    # Reading back ------------------------------------------------------------------------------

    def group_status(self, name: str) -> dict[str, Any]:
        group = self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "podgroups", name)
        return dict(group.get("status", {}))

    def queue_status(self) -> dict[str, Any]:
        return dict(self.custom.get_cluster_custom_object(GROUP, VERSION, "queues", self.queue).get("status", {}))

    def conditions(self, pod: str) -> dict[str, dict[str, Any]]:
        raw = json.loads(self.core.read_namespaced_pod(pod, self.namespace, _preload_content=False).data)
        return {c["type"]: c for c in raw.get("status", {}).get("conditions", [])}

    def events(self) -> list[dict[str, Any]]:
        events: Any = client.EventsV1Api(self.kube)
        answer = events.list_namespaced_event(self.namespace, _preload_content=False)
        return sorted(json.loads(answer.data)["items"], key=lambda e: e["metadata"]["name"])

    def versions(self) -> dict[str, str]:
        pods = {
            p.metadata.name: p.metadata.resource_version
            for p in self.core.list_namespaced_pod(self.namespace).items
        }
        groups = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "podgroups")[
            "items"
        ]
        queue = self.custom.get_cluster_custom_object(GROUP, VERSION, "queues", self.queue)
        pods.update({f"pg/{g['metadata']['name']}": g["metadata"]["resourceVersion"] for g in groups})
        pods["queue"] = queue["metadata"]["resourceVersion"]
        return pods

    def task(self, cluster: ClusterInfo, key: str) -> TaskInfo:
        return next(t for job in cluster.jobs.values() for t in job.tasks.values() if t.key == key)


def run_writer(
    control_plane: Any, scenario: Callable[[StatusWriter, RecordingClient], Awaitable[None]], **kwargs: Any
) -> None:
    async def main() -> None:
        api = await RecordingClient.connect(kubeconfig=str(control_plane.kubeconfig))
        try:
            await scenario(StatusWriter(api, scheduler_name="py-volcano", **kwargs), api)
        finally:
            await api.close()

    asyncio.run(main())


def summary(calls: list[tuple[str, str, int | None, Any]]) -> list[tuple[str, str, int | None]]:
    """(method, last path segments, status), sorted: what the writer sent and how it was answered; an
    Event's generated name is cut to the object it regards (`.../events/gang-task-0`)."""
    return sorted(
        (method, re.sub(r"(/events/[^/]+?)\.[0-9a-f]+$", r"\1", "/".join(path.split("/")[-3:])), status)
        for method, path, status, _ in calls
    )


@pytest.fixture
def cluster(kube: Any, namespace: str, queue: str) -> Cluster:
    return Cluster(kube, namespace, queue)


def gang_cluster(cluster: Cluster) -> None:
    """A gang of three 2-CPU pods that fits the queue but not the nodes, and a lone pod no node selects.

    The gang's pods are named as Volcano's job controller names them (`<job>-<task>-<index>`), so they are
    taken in index order (docs/semantics.md, "Ordering ties")."""
    cluster.node("n1", "3")
    cluster.node("n2", "3")
    cluster.node("n3", "1")
    cluster.pod_group("gang", 3)
    for i in range(3):
        cluster.pod(f"gang-task-{i}", group="gang", cpu="2")
    cluster.pod("solo", node_selector={"disk": "ssd"})


# Tests ------------------------------------------------------------------------------------------


def test_unschedulable_gang_writes_status_condition_and_events_once(
    control_plane: Any, cluster: Cluster
) -> None:
    gang_cluster(cluster)
    ns = cluster.namespace
    # A condition someone else owns: the PodScheduled patch must keep it.
    cluster.core.patch_namespaced_pod_status(
        "gang-task-0", ns, {"status": {"conditions": [{"type": "example.com/Gate", "status": "True"}]}}
    )
    result = cluster.cycle()
    assert result.pod_groups[JobID(f"{ns}/gang")].unschedulable == GANG_MESSAGE
    own = {key: message for key, message in result.unschedulable.items()}
    assert set(own) == {f"{ns}/gang-task-2", f"{ns}/solo"}

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(result)
        await writer.flush()
        sent = summary(api.take())
        assert sent == sorted(
            [("PATCH", "podgroups/gang/status", 200), ("PATCH", f"queues/{cluster.queue}/status", 200)]
            + [("PATCH", f"pods/{pod}/status", 200) for pod in ("gang-task-0", "gang-task-1", "gang-task-2", "solo")]
            + [("POST", f"namespaces/{ns}/events", 201)] * 5
            # the annotations `py-volcano explain` and `queues` read: why the gang waits, the queue's figures
            + [("PATCH", f"{ns}/podgroups/gang", 200), ("PATCH", f"v1beta1/queues/{cluster.queue}", 200)]
        )
        versions = cluster.versions()
        writer.submit(result)
        await writer.flush()
        assert api.take() == [], "an identical submit writes nothing"
        writer.submit(cluster.cycle())
        await writer.flush()
        assert api.take() == [], "the next cycle over the written objects writes nothing"
        assert cluster.versions() == versions

    run_writer(control_plane, scenario, clock=Clock())

    assert cluster.group_status("gang") == {
        "phase": "Inqueue",
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": GANG_MESSAGE,
                "lastTransitionTime": T0_TEXT,
            }
        ],
    }
    assert cluster.queue_status() == {
        "state": "Open",
        "pending": 0,
        "inqueue": 2,  # the lone pod's one-pod group counts, as Volcano's PodGroup for it would
        "running": 0,
        "unknown": 0,
        "completed": 0,
        "allocated": {"cpu": "0", "memory": "0"},
    }
    expected = {
        "gang-task-0": GANG_MESSAGE,
        "gang-task-1": GANG_MESSAGE,
        "gang-task-2": own[f"{ns}/gang-task-2"],
        "solo": own[f"{ns}/solo"],
    }
    for pod, message in expected.items():
        condition = cluster.conditions(pod)["PodScheduled"]
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "Unschedulable",
            message,
        )
        assert condition["lastTransitionTime"] == T0_TEXT
    assert cluster.conditions("gang-task-0")["example.com/Gate"]["status"] == "True"

    events = cluster.events()
    seen = sorted(
        (e["regarding"]["kind"], e["regarding"]["name"], e["type"], e["reason"], e["note"]) for e in events
    )
    assert seen == sorted(
        [("PodGroup", "gang", "Warning", "Unschedulable", GANG_MESSAGE)]
        + [("Pod", pod, "Warning", "FailedScheduling", message) for pod, message in expected.items()]
    )
    for event in events:
        assert event["reportingController"] == "py-volcano"
        assert event["regarding"]["uid"], "kubectl describe finds events by uid"
        assert event["eventTime"] == "2026-01-01T00:00:00.000000Z"


def test_a_new_message_rewrites_conditions_but_not_their_transition_time(
    control_plane: Any, cluster: Cluster
) -> None:
    """Tainted nodes: the first gang pod now fails, the lone pod still fails on its selector (unchanged)."""
    gang_cluster(cluster)
    ns = cluster.namespace
    clock = Clock()
    gang_message = f"1/3 tasks unschedulable: {TAINTED_MESSAGE}"

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(cluster.cycle())
        await writer.flush()
        api.take()
        clock.now += 60
        for name, cpu in (("n1", "3"), ("n2", "3"), ("n3", "1")):
            cluster.node(name, cpu, taint={"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
        result = cluster.cycle()
        assert set(result.unschedulable) == {f"{ns}/gang-task-0", f"{ns}/solo"}
        writer.submit(result)
        await writer.flush()
        # The new failures repeat each object's FailedScheduling/Unschedulable: events of the same object,
        # reason and action fold into one Event's series, as client-go's event recorder folds them.
        assert summary(api.take()) == sorted(
            [("PATCH", "podgroups/gang/status", 200), ("PATCH", f"{ns}/podgroups/gang", 200)]
            + [("PATCH", f"pods/{pod}/status", 200) for pod in ("gang-task-0", "gang-task-1", "gang-task-2")]
            + [("PATCH", f"{ns}/events/{name}", 200) for name in ("gang", "gang-task-0", "gang-task-1", "gang-task-2")]
        ), "neither the queue nor the lone pod changed, so they are not written (the gang's explanation did)"

    run_writer(control_plane, scenario, clock=clock)

    (condition,) = cluster.group_status("gang")["conditions"]
    assert (condition["message"], condition["lastTransitionTime"]) == (gang_message, T0_TEXT)
    expected = {"gang-task-0": TAINTED_MESSAGE, "gang-task-1": gang_message, "gang-task-2": gang_message}
    for pod, message in expected.items():
        pod_condition = cluster.conditions(pod)["PodScheduled"]
        assert (pod_condition["message"], pod_condition["lastTransitionTime"]) == (message, T0_TEXT)
    (event,) = [e for e in cluster.events() if e["regarding"]["name"] == "gang-task-2"]
    assert (event["note"], event["series"]["count"]) == ("0/3 nodes are available: 3 Insufficient cpu", 2)


def test_placed_gang_is_scheduled_then_running(control_plane: Any, cluster: Cluster) -> None:
    ns = cluster.namespace
    # Room for one pod, while the queue deserves both (a shortfall of the queue would hide the fit error).
    cluster.node("n1", "1500m")
    cluster.node("n2", "500m")
    cluster.pod_group("pair", 2)
    cluster.pod("pair-0", group="pair")
    cluster.pod("pair-1", group="pair")
    clock = Clock()

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(cluster.cycle())
        await writer.flush()
        assert cluster.group_status("pair")["conditions"][0]["status"] == "True"
        await writer.flush()
        clock.now += 30
        cluster.node("n1", "4")
        result = cluster.cycle()
        assert sorted((task.key, node) for task, node in result.binds) == [
            (f"{ns}/pair-0", "n1"),
            (f"{ns}/pair-1", "n1"),
        ]
        api.take()
        writer.submit(result)
        await writer.flush()
        patches = [body for method, path, _, body in api.take() if path.endswith("podgroups/pair/status")]
        assert patches == [
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Unschedulable",
                            "status": "False",
                            "reason": "Scheduled",
                            "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:30Z",
                        },
                        {
                            "type": "Scheduled",
                            "status": "True",
                            "reason": GANG_READY,
                            "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:30Z",
                        },
                    ]
                }
            }
        ], "the phase stays Inqueue: pods bound this cycle count from the next one"
        for task, node in result.binds:  # what the binder does, then tells the writer
            cluster.core.create_namespaced_binding(
                ns,
                {"metadata": {"name": task.name}, "target": {"kind": "Node", "name": node}},
                _preload_content=False,
            )
            writer.record_bind(task, node)
        await writer.flush()
        assert summary(api.take()) == [("POST", f"namespaces/{ns}/events", 201)] * 2
        writer.submit(cluster.cycle())
        await writer.flush()
        patches = sorted(
            (path.split("/")[-2], body) for method, path, _, body in api.take() if method == "PATCH"
        )
        assert patches == sorted(
            [
                ("pair", {"status": {"phase": "Running"}}),
                (cluster.queue, {"status": {"inqueue": 0, "running": 1}}),
            ]
        )

    run_writer(control_plane, scenario, clock=clock)

    status = cluster.group_status("pair")
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Unschedulable": "False",
        "Scheduled": "True",
    }
    for pod in ("pair-0", "pair-1"):
        assert cluster.conditions(pod)["PodScheduled"]["status"] == "True", (
            "the API server sets it on binding"
        )
    notes = {(e["regarding"]["name"], e["reason"], e["note"]) for e in cluster.events()}
    assert ("pair", "Scheduled", POD_GROUP_READY) in notes
    assert ("pair-0", "Scheduled", f"Successfully assigned {ns}/pair-0 to n1") in notes
    assert ("pair-1", "Scheduled", f"Successfully assigned {ns}/pair-1 to n1") in notes


def test_eviction_events(control_plane: Any, cluster: Cluster) -> None:
    ns = cluster.namespace
    cluster.node("n1", "4")
    cluster.pod("victim")
    cluster.pod("other")
    snapshot = cluster.snapshot()

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.record_eviction(cluster.task(snapshot, f"{ns}/victim"), "preempt", preemptor=f"{ns}/urgent")
        writer.record_eviction(cluster.task(snapshot, f"{ns}/other"), "reclaim")
        await writer.flush()

    run_writer(control_plane, scenario)
    seen = {(e["regarding"]["name"], e["type"], e["reason"], e["note"]) for e in cluster.events()}
    assert seen == {
        ("victim", "Normal", "Preempted", f"Preempted by {ns}/urgent: preempt"),
        ("other", "Warning", "Evict", "reclaim"),
    }


def test_gone_and_replaced_objects_are_not_errors(control_plane: Any, cluster: Cluster) -> None:
    """A 404 is the object gone; a replaced pod (new uid) answers 422 and is logged with its name."""
    gang_cluster(cluster)
    ns = cluster.namespace
    result = cluster.cycle()
    cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "gang")
    cluster.core.delete_namespaced_pod("solo", ns, grace_period_seconds=0)
    wait_for("pod solo gone", lambda: not _exists(lambda: cluster.core.read_namespaced_pod("solo", ns)))
    cluster.pod("solo", node_selector={"disk": "ssd"})

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        with structlog.testing.capture_logs() as logs:
            writer.submit(result)
            await writer.flush()
        answers = {path.split("/")[-2]: status for method, path, status, _ in api.take() if method == "PATCH"}
        assert answers["gang"] == 404
        assert answers["solo"] == 422
        rejected = [e for e in logs if e["event"] == "status_write_rejected"]
        assert [(e["kind"], e["object"], e["status"], e["log_level"]) for e in rejected] == [
            ("Pod", f"{ns}/solo", 422, "warning")
        ]
        assert "immutable" in rejected[0]["reason"]
        writer.submit(result)
        await writer.flush()
        assert api.take() == [], "neither is retried while nothing changes"

    run_writer(control_plane, scenario)
    assert "PodScheduled" not in cluster.conditions("solo"), "the namesake is not touched"


def test_failed_writes_are_written_again_by_the_next_submit(cluster: Cluster, control_plane: Any) -> None:
    """No answer at all (nothing listens on the port): logged, never raised, and queued again next cycle."""
    gang_cluster(cluster)
    result = cluster.cycle()
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def main() -> None:
        api = RecordingClient(Credentials(server=f"http://127.0.0.1:{port}"), timeout=5.0)
        try:
            writer = StatusWriter(api, scheduler_name="py-volcano")
            with structlog.testing.capture_logs() as logs:
                writer.submit(result)
                await writer.flush()
            first = summary(api.take())
            assert {status for _, _, status in first} == {None}
            # group, queue, four pods, and the gang's and queue's annotations
            assert sum(1 for e in logs if e["event"] == "status_write_failed") == 8
            assert sum(1 for e in logs if e["event"] == "event_failed") == 1, "pod events follow their patch"
            writer.submit(result)
            await writer.flush()
            again = summary(api.take())
            assert again == first, (
                "what failed is forgotten, so the next submit queues it (and its events) again"
            )
        finally:
            await api.close()

    asyncio.run(main())


def test_a_later_submit_supersedes_a_queued_write(control_plane: Any, cluster: Cluster) -> None:
    gang_cluster(cluster)
    first = cluster.cycle()
    for name, cpu in (("n1", "3"), ("n2", "3"), ("n3", "1")):
        cluster.node(name, cpu, taint={"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
    second = cluster.cycle()

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(first)
        writer.submit(second)
        await writer.flush()
        patched = sorted(path.split("/")[-2] for method, path, _, _ in api.take() if method == "PATCH")
        # "podgroups" and "queues": the gang's explanation and the queue's figures (annotations on the objects)
        expected = ["gang", cluster.queue, "gang-task-0", "gang-task-1", "gang-task-2", "solo", "podgroups", "queues"]
        assert patched == sorted(expected)

    run_writer(control_plane, scenario)
    assert (
        cluster.group_status("gang")["conditions"][0]["message"]
        == f"1/3 tasks unschedulable: {TAINTED_MESSAGE}"
    )
    assert cluster.conditions("gang-task-0")["PodScheduled"]["message"] == TAINTED_MESSAGE


def test_writes_in_flight_are_bounded(control_plane: Any, cluster: Cluster) -> None:
    cluster.node("n1", "4")
    for i in range(12):
        cluster.pod(f"lone-{i}", node_selector={"disk": "ssd"})
    result = cluster.cycle()
    assert len(result.unschedulable) == 12

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        running = asyncio.create_task(writer.run())
        writer.submit(result)
        await asyncio.sleep(0)
        await writer.flush()
        running.cancel()
        calls = api.take()
        # discovery (which status subresources exist), the queue's status and figures, twelve pods, twelve events
        assert len(calls) == 1 + 2 + 12 + 12
        assert api.max_in_flight == 2

    run_writer(control_plane, scenario, concurrency=2)
    assert all(cluster.conditions(f"lone-{i}")["PodScheduled"]["status"] == "False" for i in range(12))


def test_a_pod_placed_before_its_condition_is_sent_is_not_marked_unschedulable(
    control_plane: Any, cluster: Cluster
) -> None:
    """The unsent PodScheduled=False of a cycle is dropped when the next cycle places the pod."""
    ns = cluster.namespace
    cluster.node("n1", "1500m")
    cluster.node("n2", "500m")
    cluster.pod_group("pair", 2)
    cluster.pod("pair-0", group="pair")
    cluster.pod("pair-1", group="pair")
    unschedulable = cluster.cycle()
    assert unschedulable.unschedulable
    cluster.node("n1", "4")
    placed = cluster.cycle()
    assert len(placed.binds) == 2

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(unschedulable)
        writer.submit(placed)
        for task, node in placed.binds:
            cluster.core.create_namespaced_binding(
                ns,
                {"metadata": {"name": task.name}, "target": {"kind": "Node", "name": node}},
                _preload_content=False,
            )
            writer.record_bind(task, node)
        await writer.flush()
        assert [path for method, path, _, _ in api.take() if "/pods/" in path] == []

    run_writer(control_plane, scenario)
    for pod in ("pair-0", "pair-1"):
        assert cluster.conditions(pod)["PodScheduled"]["status"] == "True"


def test_a_pod_bound_while_its_condition_is_on_its_way_keeps_its_scheduled_condition(
    control_plane: Any, cluster: Cluster
) -> None:
    """A PodScheduled=False goes conditioned on the resourceVersion the scheduler last saw the pod waiting
    at (`waiting_version`, the store's in `py-volcano run`). One pod is still waiting: written. One was
    bound after the store last saw it (a gang the next cycle placed while the last cycle's conditions were
    being written): the API server refuses the write (409) and the pod keeps PodScheduled=True, where an
    unconditioned write left bound, running pods marked Unschedulable. One the store already shows bound
    or being bound: nothing is sent."""
    ns = cluster.namespace
    cluster.node("n1", "500m")
    for name in ("waiting", "bound-meanwhile", "seen-bound"):
        cluster.pod(name, cpu="1")
    result = cluster.cycle()
    assert sorted(wait.name for wait in result.pod_waits.values()) == ["bound-meanwhile", "seen-bound", "waiting"]
    seen = {pod.metadata.name: int(pod.metadata.resource_version) for pod in cluster.core.list_namespaced_pod(ns).items}
    versions = {f"{ns}/waiting": seen["waiting"], f"{ns}/bound-meanwhile": seen["bound-meanwhile"]}

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        writer.submit(result)
        cluster.core.create_namespaced_binding(
            ns,
            {"metadata": {"name": "bound-meanwhile"}, "target": {"kind": "Node", "name": "n1"}},
            _preload_content=False,
        )
        await writer.flush()
        answers = {path.split("/")[-2]: status for _, path, status, _ in api.take() if "/pods/" in path}
        assert answers == {"waiting": 200, "bound-meanwhile": 409}

    run_writer(control_plane, scenario, waiting_version=versions.get)
    assert cluster.conditions("waiting")["PodScheduled"]["status"] == "False"
    assert cluster.conditions("bound-meanwhile")["PodScheduled"]["status"] == "True"
    assert "PodScheduled" not in cluster.conditions("seen-bound")


def test_a_queue_closed_while_the_cycle_ran_stays_closed(control_plane: Any, cluster: Cluster) -> None:
    """The cycle read the Queue before it had a state, so it writes `Open`; `py-volcano queue close` lands
    first. The write is conditioned on the resourceVersion the cycle read: refused (409), not logged as a
    failure (`status_write_stale` is info, which another test's logging configuration may filter out), and
    forgotten, so the next cycle (which reads Closed) writes the counts without a state."""
    cluster.pod("solo")
    stale = cluster.cycle()
    assert not stale.queue_statuses[cluster.queue].state_set
    cluster.custom.patch_cluster_custom_object_status(
        GROUP, VERSION, "queues", cluster.queue, {"status": {"state": "Closed"}}
    )
    fresh = cluster.cycle()
    assert fresh.queue_statuses[cluster.queue].state_set

    async def scenario(writer: StatusWriter, api: RecordingClient) -> None:
        with structlog.testing.capture_logs() as logs:
            writer.submit(stale)
            await writer.flush()
        queue_calls = [
            (status, body) for _, path, status, body in api.take() if path.endswith(f"/{cluster.queue}/status")
        ]
        assert [status for status, _ in queue_calls] == [409]
        assert queue_calls[0][1]["status"]["state"] == "Open"
        assert not [e for e in logs if e["event"] in ("status_write_failed", "status_write_rejected")]
        assert writer.unwritten, "so the scheduler runs the next cycle even if nothing else changed"
        writer.submit(fresh)
        await writer.flush()
        queue_calls = [
            (status, body) for _, path, status, body in api.take() if path.endswith(f"/{cluster.queue}/status")
        ]
        assert [status for status, _ in queue_calls] == [200], "the refused counts are written again"
        assert "state" not in queue_calls[0][1]["status"] and "metadata" not in queue_calls[0][1]

    run_writer(control_plane, scenario)
    status = cluster.queue_status()
    assert status["state"] == "Closed", status
    assert status["pending"] == 1, status
