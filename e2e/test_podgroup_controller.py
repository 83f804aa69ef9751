"""The PodGroup controller on a real API server, with the workload controllers making real pods: a Job
asking for a gang that cannot fit binds no pod, one that fits is bound whole, a Deployment's pods share one
PodGroup, an owner's annotation change reaches its PodGroup, a ReplicaSet scaled to 0 loses it; then the
same scheduling and status with CRDs shaped as Volcano's chart installs them: ours, whose fields are
Volcano's, without the PodGroup status subresource, which Volcano's PodGroup CRD lacks (its files are not
copied here: content of fetched repositories stays out of this one).

One `py-volcano run` (controller on, as by default) serves the tests that use our CRDs; the test with
Volcano's CRDs starts its own after swapping them in, and puts ours back afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.controlplane import KWOK_NODE_ANNOTATION
from e2e.harness import CRD_DIR, Nodes, Rest, Scheduler, create_namespace, delete_namespace, token, wait_for

pytest_plugins = ["e2e.fixtures"]

GROUP_NAME = "scheduling.k8s.io/group-name"
MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
DISCOVERY = "/apis/scheduling.volcano.sh/v1beta1"
MERGE_PATCH = "application/merge-patch+json"
#: kind -> collection path (namespaced)
WORKLOADS = {
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
}


# Builders -----------------------------------------------------------------------------------------


def template(scheduler: str, label: str, *, cpu: str, app: str) -> dict[str, Any]:
    """A pod template for `scheduler`, placed only on this test's nodes (labelled `label`)."""
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"pv-test": label},
            "tolerations": [{"key": KWOK_NODE_ANNOTATION, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "main", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}
            ],
        },
    }


def workload(
    kind: str, name: str, namespace: str, pods: dict[str, Any], *, replicas: int, min_member: str | None = None
) -> dict[str, Any]:
    """A Job (parallelism = completions = `replicas`), Deployment or ReplicaSet of `pods`."""
    annotations = {MIN_MEMBER: min_member} if min_member is not None else {}
    spec: dict[str, Any] = {"template": pods}
    if kind == "Job":
        pods["spec"]["restartPolicy"] = "Never"
        spec.update(parallelism=replicas, completions=replicas, backoffLimit=0)
    else:
        spec.update(replicas=replicas, selector={"matchLabels": pods["metadata"]["labels"]})
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    meta = {"name": name, "namespace": namespace, "annotations": annotations}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


# Fixtures and reads -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module_scheduler(control_plane: Any, rest: Rest) -> Iterator[tuple[Scheduler, str]]:
    """One `py-volcano run` with the controller on (the default), for the tests using our CRDs."""
    name = token("pv-pgc")
    with Scheduler(control_plane.kubeconfig, f"--scheduler-name={name}", "--no-leader-elect", name="pgc") as process:
        process.wait_event("cache_synced")
        yield process, name
        assert not process.events("task_failed"), process.tail()


@pytest.fixture
def label() -> str:
    """A node label value of this test's own: its pods run only on its nodes."""
    return token("n")


class Cluster:
    """What one test reads of its namespace."""

    def __init__(self, rest: Rest, namespace: str) -> None:
        self.rest = rest
        self.namespace = namespace

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = self.rest.ok("POST", WORKLOADS[obj["kind"]].format(ns=self.namespace), obj)
        return answer

    def patch(self, kind: str, name: str, body: dict[str, Any]) -> None:
        path = WORKLOADS[kind].format(ns=self.namespace) + f"/{name}"
        self.rest.ok("PATCH", path, body, content_type=MERGE_PATCH)

    def pods(self) -> list[dict[str, Any]]:
        return self.rest.list("Pod", self.namespace)

    def groups(self) -> list[dict[str, Any]]:
        return self.rest.list("PodGroup", self.namespace)

    def grouped(self, count: int) -> dict[str, Any] | None:
        """The one PodGroup once exactly `count` pods exist, all annotated with its name, else None."""
        pods, groups = self.pods(), self.groups()
        if len(pods) != count or len(groups) != 1:
            return None
        name = groups[0]["metadata"]["name"]
        if any((pod["metadata"].get("annotations") or {}).get(GROUP_NAME) != name for pod in pods):
            return None
        return groups[0]

    def bound(self) -> list[str]:
        return sorted(pod["metadata"]["name"] for pod in self.pods() if pod["spec"].get("nodeName"))


@pytest.fixture
def cluster(rest: Rest) -> Iterator[Cluster]:
    namespace = create_namespace(rest, token("pgc"))
    yield Cluster(rest, namespace)
    delete_namespace(rest, namespace)


def add_nodes(nodes: Nodes, label: str, count: int, *, cpu: str) -> None:
    for _ in range(count):
        nodes.add(cpu=cpu, **{"pv-test": label})


def owner_of(group: dict[str, Any]) -> tuple[str, str]:
    (reference,) = group["metadata"]["ownerReferences"]
    assert reference["controller"] is True
    return reference["kind"], reference["uid"]


# Tests with our CRDs ------------------------------------------------------------------------------


def test_a_job_gang_that_cannot_fit_binds_no_pod(
    module_scheduler: tuple[Scheduler, str], cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """Five 3-CPU pods, four 4-CPU nodes: one PodGroup with minMember 5 and no pod bound (as one-pod
    jobs four would be)."""
    process, scheduler = module_scheduler
    add_nodes(nodes, label, 4, cpu="4")
    pods = template(scheduler, label, cpu="3", app="big")
    job = cluster.create(workload("Job", "big", cluster.namespace, pods, replicas=5, min_member="5"))
    group = wait_for("5 pods in one PodGroup", lambda: cluster.grouped(5), timeout=60)
    assert group["metadata"]["name"] == f"podgroup-{job['metadata']['uid']}"
    assert owner_of(group) == ("Job", job["metadata"]["uid"])
    assert group["spec"]["minMember"] == 5
    assert group["spec"]["minResources"] == {"cpu": "15", "memory": "500Mi"}
    time.sleep(4)  # four cycles
    assert cluster.bound() == [], process.tail()


def test_a_job_gang_that_fits_is_bound_whole(
    module_scheduler: tuple[Scheduler, str], cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """Two pods, minMember 2, room for both: both bound, one PodGroup with minMember 2."""
    _, scheduler = module_scheduler
    add_nodes(nodes, label, 1, cpu="4")
    cluster.create(
        workload(
            "Job",
            "pair",
            cluster.namespace,
            template(scheduler, label, cpu="1", app="pair"),
            replicas=2,
            min_member="2",
        )
    )
    wait_for("both pods bound", lambda: len(cluster.bound()) == 2, timeout=60)
    group = wait_for("2 pods in one PodGroup", lambda: cluster.grouped(2))
    assert group["spec"]["minMember"] == 2


def test_a_deployments_pods_share_one_pod_group(
    module_scheduler: tuple[Scheduler, str], cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """A Deployment without annotations: its ReplicaSet's three pods in one PodGroup, minMember 1, bound."""
    _, scheduler = module_scheduler
    add_nodes(nodes, label, 1, cpu="4")
    cluster.create(
        workload("Deployment", "web", cluster.namespace, template(scheduler, label, cpu="1", app="web"), replicas=3)
    )
    group = wait_for("3 pods in one PodGroup", lambda: cluster.grouped(3), timeout=60)
    assert owner_of(group)[0] == "ReplicaSet"
    assert group["spec"]["minMember"] == 1
    wait_for("the 3 pods bound", lambda: len(cluster.bound()) == 3, timeout=60)


def test_a_replica_sets_pod_group_follows_its_annotation_and_goes_at_zero(
    module_scheduler: tuple[Scheduler, str], cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """minMember 2, then the annotation says 3: the PodGroup follows (minResources too); scaled to 0, it is
    deleted."""
    _, scheduler = module_scheduler
    add_nodes(nodes, label, 1, cpu="8")
    pods = template(scheduler, label, cpu="1", app="rs")
    cluster.create(workload("ReplicaSet", "rs", cluster.namespace, pods, replicas=3, min_member="2"))
    group = wait_for("3 pods in one PodGroup", lambda: cluster.grouped(3), timeout=60)
    assert group["spec"]["minMember"] == 2
    name = group["metadata"]["name"]
    cluster.patch("ReplicaSet", "rs", {"metadata": {"annotations": {MIN_MEMBER: "3"}}})

    def updated() -> dict[str, Any] | None:
        current = cluster.rest.get("PodGroup", name, cluster.namespace) or {}
        return current if (current.get("spec") or {}).get("minMember") == 3 else None

    spec = wait_for("minMember 3", updated, timeout=30)["spec"]
    assert spec["minResources"] == {"cpu": "3", "memory": "300Mi"}
    assert spec["queue"] == "default"
    cluster.patch("ReplicaSet", "rs", {"spec": {"replicas": 0}})
    wait_for("the PodGroup deleted", lambda: cluster.rest.get("PodGroup", name, cluster.namespace) is None, timeout=30)


def test_an_unreadable_min_member_is_1_with_an_event(
    module_scheduler: tuple[Scheduler, str], cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """`group-min-member: "two"`: minMember 1, a Warning event on the ReplicaSet, the pods scheduled."""
    _, scheduler = module_scheduler
    add_nodes(nodes, label, 1, cpu="4")
    pods = template(scheduler, label, cpu="1", app="bad")
    owner = cluster.create(workload("ReplicaSet", "bad", cluster.namespace, pods, replicas=2, min_member="two"))
    group = wait_for("2 pods in one PodGroup", lambda: cluster.grouped(2), timeout=60)
    assert group["spec"]["minMember"] == 1
    wait_for("both pods bound", lambda: len(cluster.bound()) == 2, timeout=60)

    def warned() -> list[dict[str, Any]]:
        events = cluster.rest.ok("GET", f"/apis/events.k8s.io/v1/namespaces/{cluster.namespace}/events")["items"]
        uid = owner["metadata"]["uid"]
        return [e for e in events if e.get("reason") == "InvalidGroupMinMember" and e["regarding"]["uid"] == uid]

    (event,) = wait_for("an InvalidGroupMinMember event", warned)
    assert event["type"] == "Warning" and "'two'" in event["note"]


# With Volcano's CRDs ------------------------------------------------------------------------------


def served(rest: Rest) -> set[str]:
    """The resources (and subresources) the API server serves in scheduling.volcano.sh/v1beta1."""
    return {item["name"] for item in rest.ok("GET", DISCOVERY)["resources"]}


def install_crd_specs(rest: Rest, directory: Path, *, podgroup_status: bool = True) -> None:
    """Give the Queue and PodGroup CRDs the specs of `directory`'s files (their metadata stays); without
    `podgroup_status`, the PodGroup CRD serves no status subresource, as Volcano's does not."""
    for path in sorted(directory.glob("*.yaml")):
        wanted = yaml.safe_load(path.read_text())
        name = wanted["metadata"]["name"]
        if not podgroup_status and wanted["spec"]["names"]["kind"] == "PodGroup":
            for version in wanted["spec"]["versions"]:
                version.get("subresources", {}).pop("status", None)
        crd = rest.get("CustomResourceDefinition", name)
        assert crd is not None, name
        crd["spec"] = wanted["spec"]
        rest.ok("PUT", Rest.path("CustomResourceDefinition", name=name), crd)


@pytest.fixture
def volcano_crds(rest: Rest) -> Iterator[None]:
    """The Queue and PodGroup CRDs as Volcano's chart installs them for one test; ours again afterwards."""
    install_crd_specs(rest, CRD_DIR, podgroup_status=False)
    wait_for("Volcano's PodGroup CRD served", lambda: "podgroups/status" not in served(rest))
    try:
        yield
    finally:
        install_crd_specs(rest, CRD_DIR)
        wait_for("our PodGroup CRD served again", lambda: "podgroups/status" in served(rest))


def test_scheduling_and_status_with_volcanos_crds(
    control_plane: Any, rest: Rest, volcano_crds: None, cluster: Cluster, nodes: Nodes, label: str
) -> None:
    """With Volcano's CRDs: a Job gang is grouped and bound, its PodGroup's status is written on the object
    (no status subresource), a gang that cannot be placed gets its Unschedulable condition, the Queue its
    status (through Volcano's Queue status subresource)."""
    scheduler, queue = token("pv-vc"), token("q")
    rest.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"weight": 1},
        }
    )
    add_nodes(nodes, label, 2, cpu="2")
    try:
        with Scheduler(
            control_plane.kubeconfig, f"--scheduler-name={scheduler}", "--no-leader-elect", name="volcano-crds"
        ) as process:
            process.wait_event("status_subresources", podgroups=False, queues=True)
            fits = template(scheduler, label, cpu="500m", app="fits")
            fits["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": queue}
            cluster.create(workload("Job", "fits", cluster.namespace, fits, replicas=2, min_member="2"))
            wait_for("both pods bound", lambda: len(cluster.bound()) == 2, timeout=60)

            def phase(name: str) -> str:
                group = next(g for g in cluster.groups() if g["metadata"]["name"] == name)
                return str((group.get("status") or {}).get("phase") or "")

            group = wait_for("the gang's PodGroup", lambda: cluster.grouped(2))["metadata"]["name"]
            wait_for("its phase written", lambda: phase(group) in ("Running", "Completed"), timeout=30)
            assert group.startswith("podgroup-")

            wide = template(scheduler, label, cpu="1200m", app="wide")
            wide["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": queue}
            job = cluster.create(workload("Job", "wide", cluster.namespace, wide, replicas=3, min_member="3"))
            wide_group = f"podgroup-{job['metadata']['uid']}"

            def unschedulable() -> dict[str, Any] | None:
                """The gang's Unschedulable condition once a cycle has seen all three pods (a cycle that ran
                while the Job controller had created fewer writes `1/1 tasks unschedulable: ... valid: 1`)."""
                current = rest.get("PodGroup", wide_group, cluster.namespace) or {}
                conditions = (current.get("status") or {}).get("conditions") or []
                return next(
                    (
                        c
                        for c in conditions
                        if c["type"] == "Unschedulable" and c["status"] == "True" and "/3 tasks" in c["message"]
                    ),
                    None,
                )

            condition = wait_for("the Unschedulable condition over the three pods", unschedulable, timeout=60)
            assert condition["reason"] == "NotEnoughResources", condition
            assert not [pod for pod in cluster.bound() if pod.startswith("wide")]
            status = wait_for("the queue's status", lambda: (rest.get("Queue", queue) or {}).get("status"))
            assert status.get("state") == "Open", status
            assert not process.events("status_write_failed"), process.tail()
    finally:
        rest.delete("Queue", queue)
