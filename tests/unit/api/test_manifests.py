"""Manifest parsing: what is read, defaults, and errors that name object and field."""

from __future__ import annotations

import pytest

from py_volcano.api import (
    JobID,
    NodeGroupAffinity,
    PodGroupPhase,
    QueueState,
    TaskStatus,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_queue,
)
from py_volcano.errors import InvalidNode, InvalidPod, InvalidPodGroup, InvalidQueue, ObjectError
from tests.builders import cluster, node, pod, pod_group, priority_class, queue


@pytest.mark.parametrize(
    ("parse", "obj", "error", "field"),
    [
        pytest.param(parse_queue, queue(name="q", weight=0), InvalidQueue, "spec.weight", id="queue-weight-zero"),
        pytest.param(
            parse_queue,
            queue(name="q", capability={"cpu": "lots"}),
            InvalidQueue,
            "spec.capability.cpu",
            id="queue-bad-quantity",
        ),
        pytest.param(
            parse_pod_group,
            {**pod_group(name="g"), "spec": {"minMember": -1}},
            InvalidPodGroup,
            "spec.minMember",
            id="pg-negative-min",
        ),
        pytest.param(parse_node, node(name="n", cpu="x"), InvalidNode, "status.allocatable.cpu", id="node-bad-cpu"),
        pytest.param(
            lambda o: parse_pod(o, priority_classes={}),
            {"kind": "Pod", "metadata": {}},
            InvalidPod,
            "metadata.name",
            id="pod-no-name",
        ),
        pytest.param(
            lambda o: parse_pod(o, priority_classes={}),
            pod(name="p", cpu="1e1000000"),
            InvalidPod,
            "spec.containers[0].resources.requests.cpu",
            id="pod-huge-cpu",
        ),
        pytest.param(
            lambda o: parse_pod(o, priority_classes={}),
            pod(name="p", spec={"tolerations": [{"key": "k"}, {"key": "k", "effect": 5}]}),
            InvalidPod,
            "spec.tolerations[1].effect",
            id="pod-toleration-effect-not-a-string",
        ),
        pytest.param(
            parse_node, node(name="n", cpu="1e1000000"), InvalidNode, "status.allocatable.cpu", id="node-huge-cpu"
        ),
        pytest.param(
            parse_queue,
            queue(name="q", capability={"memory": "1e400Ei"}),
            InvalidQueue,
            "spec.capability.memory",
            id="queue-huge-memory",
        ),
        pytest.param(
            parse_pod_group,
            {**pod_group(name="g"), "spec": {"minResources": {"cpu": "1e1000000"}}},
            InvalidPodGroup,
            "spec.minResources.cpu",
            id="pg-huge-min-resources",
        ),
    ],
)
def test_errors_name_the_object_and_the_field(parse, obj, error: type[ObjectError], field: str) -> None:  # type: ignore[no-untyped-def]
    """ObjectError subclasses carry kind, ns/name and field."""
    with pytest.raises(error) as info:
        parse(obj)
    assert info.value.field == field
    assert field in str(info.value)


def test_pod_fields_and_status_mapping() -> None:
    """Priority from the class, preemptable annotation, tolerations, host ports, Bound when Pending with a node."""
    classes = {"high": priority_class(name="high", value=1000)}
    from py_volcano.api import parse_priority_class

    parsed = parse_pod(
        pod(
            name="p",
            node_name="n",
            phase="Pending",
            annotations={"volcano.sh/preemptable": "false"},
            spec={
                "priorityClassName": "high",
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            },
        ),
        priority_classes={name: parse_priority_class(obj) for name, obj in classes.items()},
    )
    task = parsed.task
    assert (task.priority, task.preemptable, task.status) == (1000, False, TaskStatus.BOUND)
    assert task.tolerations[0].key == "k" and task.host_ports == (("0.0.0.0", "TCP", 8080),)
    assert parsed.scheduler_name == "py-volcano" and parsed.queue == "default"


def test_queue_and_pod_group_defaults() -> None:
    """Weight 1, reclaimable, Open; PodGroup minMember 1 in queue default, Pending."""
    q = parse_queue({"kind": "Queue", "metadata": {"name": "q"}})
    assert (q.weight, q.reclaimable, q.state, q.capability, q.deserved) == (1, True, QueueState.OPEN, None, None)
    g = parse_pod_group({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}})
    assert (g.min_member, g.queue, g.phase, g.key) == (1, "default", PodGroupPhase.PENDING, "ns/g")


def test_a_role_minimum_left_null_counts_as_zero() -> None:
    """minTaskMember {"worker": null} reads as 0 (Go's decoding of an int32 map value), never as None:
    gang sums the roles' minimums."""
    group = {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"},
             "spec": {"minMember": 0, "minTaskMember": {"worker": None, "ps": 2}}}
    assert parse_pod_group(group).min_task_member == {"worker": 0, "ps": 2}


def test_snapshot_links_pods_to_groups_and_warns_about_missing_ones() -> None:
    """Pods join their PodGroup; a pod without one is its own job; missing groups and queues are warnings."""
    snapshot = cluster(
        node(name="n"),
        pod_group(name="g", queue="nowhere"),
        pod(name="g-0", group="g"),
        pod(name="lost", group="missing"),
        pod(name="solo", queue="default"),
        pod(name="other", node_name="n", scheduler="default-scheduler"),
    )
    assert sorted(snapshot.jobs) == ["default/g", "default/podgroup-solo"]
    assert [t.name for t in snapshot.jobs[JobID("default/g")].tasks.values()] == ["g-0"]
    assert any("queue 'nowhere' not found" in w for w in snapshot.warnings)
    assert any("PodGroup 'missing' not found" in w for w in snapshot.warnings)
    assert snapshot.nodes["n"].used.milli_cpu == 1000


def test_a_pod_group_whose_pods_all_belong_to_another_scheduler_is_not_a_job() -> None:
    """Beside Volcano, its PodGroups are its jobs: left out, their pods still use their nodes."""
    snapshot = cluster(
        node(name="n"),
        pod_group(name="theirs"),
        pod_group(name="mixed"),
        pod_group(name="empty"),
        pod(name="theirs-0", group="theirs", node_name="n", scheduler="volcano"),
        pod(name="theirs-1", group="theirs", scheduler="volcano"),
        pod(name="mixed-0", group="mixed", scheduler="volcano"),
        pod(name="mixed-1", group="mixed"),
    )
    assert sorted(snapshot.jobs) == ["default/empty", "default/mixed"]
    assert [t.name for t in snapshot.jobs[JobID("default/mixed")].tasks.values()] == ["mixed-1"]
    assert snapshot.nodes["n"].used.milli_cpu == 1000


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        pytest.param({}, {}, True, id="unmarked-is-preemptable"),
        pytest.param({"volcano.sh/preemptable": "false"}, {}, False, id="label-false"),
        pytest.param({}, {"volcano.sh/preemptable": "false"}, False, id="annotation-false"),
        pytest.param({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}, False,
                     id="annotation-wins-over-label"),
        pytest.param({"volcano.sh/preemptable": "false"}, {"volcano.sh/preemptable": "true"}, True,
                     id="annotation-true-wins-over-label-false"),
        pytest.param({}, {"volcano.sh/preemptable": "0"}, False, id="go-parsebool-0"),
        pytest.param({}, {"volcano.sh/preemptable": "T"}, True, id="go-parsebool-T"),
        pytest.param({}, {"volcano.sh/preemptable": "no"}, False, id="unreadable-means-not-preemptable"),
    ],
)
def test_preemptable_mark_reads_as_volcano(labels: dict[str, str], annotations: dict[str, str], expected: bool) -> None:
    """Volcano's GetPodPreemptable: the annotation, else the label, parsed by Go's ParseBool; a value it refuses
    protects the pod."""
    parsed = parse_pod(pod(name="p", node_name="n", labels=labels, annotations=annotations), priority_classes={})
    assert parsed.task.preemptable is expected


def test_queue_node_group_affinity() -> None:
    """`spec.affinity` read into node groups (nodegroup); unset is None, `{}` an empty affinity."""
    affinity = {
        "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a", "b"]},
        "nodeGroupAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ["c"]},
    }
    parsed = parse_queue(queue(name="q", affinity=affinity)).affinity
    assert parsed == NodeGroupAffinity(required=("a", "b"), anti_preferred=("c",))
    assert parse_queue(queue(name="q")).affinity is None
    assert parse_queue(queue(name="q", affinity={})).affinity == NodeGroupAffinity()
    bad = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["a", 3]}}
    with pytest.raises(InvalidQueue, match=r"spec\.affinity\.nodeGroupAffinity\.requiredDuring.*\[1\]"):
        parse_queue(queue(name="q", affinity=bad))


def test_pod_group_annotations() -> None:
    """PodGroup annotations are kept (sla, task-topology read them)."""
    group = pod_group(name="g")
    group["metadata"]["annotations"] = {"sla-waiting-time": "1h"}
    assert parse_pod_group(group).annotations == {"sla-waiting-time": "1h"}


@pytest.mark.parametrize(
    ("conditions", "scheduled_at"),
    [
        pytest.param([{"type": "PodScheduled", "status": "True", "lastTransitionTime": "1970-01-01T00:01:40Z"}],
                     100.0, id="scheduled"),
        pytest.param([{"type": "PodScheduled", "status": "False", "lastTransitionTime": "1970-01-01T00:01:40Z"}],
                     None, id="not-scheduled"),
        pytest.param([{"type": "Ready", "status": "True"}], None, id="no-pod-scheduled"),
        pytest.param("garbage", None, id="not-a-list"),
    ],
)
def test_pod_scheduled_at(conditions: object, scheduled_at: float | None) -> None:
    """When the PodScheduled condition turned True (cdp's cooldown counts from it)."""
    manifest = pod(name="p", node_name="n")
    manifest["status"]["conditions"] = conditions
    assert parse_pod(manifest, priority_classes={}).task.scheduled_at == scheduled_at
