"""The PodGroup built for a pod, as Volcano's `buildPodGroupFromPod`: name, minMember, minResources, queue,
priority class, inherited annotations, owner reference; and the patch that brings an existing one back."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import ParsedPod, parse_pod
from py_volcano.controller.podgroups import desired_group, group_name, parse_min_member, update_patch
from tests import builders

JOB_UID = "0b1c2d3e-job"


def owned(pod: dict[str, Any], *, kind: str = "Job", api_version: str = "batch/v1", uid: str = JOB_UID) -> ParsedPod:
    """Parse `pod` with a controlling owner reference."""
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Secret", "name": "other", "uid": "not-the-controller"},
        {"apiVersion": api_version, "kind": kind, "name": "train", "uid": uid, "controller": True},
    ]
    return parse_pod(pod, priority_classes={})


def bare(pod: dict[str, Any]) -> ParsedPod:
    """Parse `pod` without owners."""
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    return parse_pod(pod, priority_classes={})


@pytest.mark.parametrize(
    ("annotation", "value", "error"),
    [
        pytest.param(None, 1, "", id="absent-is-1"),
        pytest.param("5", 5, "", id="five"),
        pytest.param("0", 0, "", id="zero-is-kept"),
        pytest.param("+3", 3, "", id="signed"),
        pytest.param("-1", 1, "-1 is negative", id="negative"),
        pytest.param("abc", 1, "'abc' is not a 32-bit integer", id="not-a-number"),
        pytest.param(" 5", 1, "' 5' is not a 32-bit integer", id="space"),
        pytest.param("2147483648", 1, "'2147483648' is not a 32-bit integer", id="beyond-int32"),
    ],
)
def test_min_member_is_read_as_volcano_reads_it(annotation: str | None, value: int, error: str) -> None:
    """A bad value leaves minMember 1 and says why (Volcano's getMinMemberFromUpperRes, with ParseInt's rules)."""
    annotations = {} if annotation is None else {"scheduling.volcano.sh/group-min-member": annotation}
    minimum = parse_min_member(annotations)
    assert minimum.value == value
    assert (error in minimum.error) if error else minimum.error == ""


def test_a_pod_is_grouped_by_its_controller_else_by_itself() -> None:
    """`podgroup-<controller uid>`; a pod without one: `podgroup-<pod uid>`, its one-pod job's name."""
    assert group_name(owned(builders.pod(name="a"))) == f"podgroup-{JOB_UID}"
    assert group_name(bare(builders.pod(name="a"))) == "podgroup-uid-a"


def test_min_resources_are_the_pod_request_times_min_member() -> None:
    """The larger of the containers' sum and any init container, plus overhead, times minMember."""
    pod = builders.pod(
        name="a",
        cpu="1",
        memory="1Gi",
        spec={
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "3"}}}],
            "overhead": {"memory": "1Gi"},
        },
    )
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    desired = desired_group(owned(pod), {}, 4)
    assert desired.spec["minMember"] == 4
    assert desired.spec["minResources"] == {"cpu": "12", "memory": "8Gi", "nvidia.com/gpu": "4"}


def test_spec_queue_priority_and_owner_of_an_owned_pod() -> None:
    """Queue from the pod's annotation first, priority class from the pod, the owner as controller."""
    pod = builders.pod(name="a", queue="research", spec={"priorityClassName": "high"})
    desired = desired_group(owned(pod), {"scheduling.volcano.sh/queue-name": "batch"}, 2)
    assert desired.key == f"default/podgroup-{JOB_UID}"
    assert desired.body() == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"podgroup-{JOB_UID}",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": JOB_UID, "controller": True}
            ],
            "annotations": {"scheduling.volcano.sh/queue-name": "batch"},
        },
        "spec": {
            "minMember": 2,
            "minResources": {"cpu": "2", "memory": "2Gi"},
            "queue": "research",
            "priorityClassName": "high",
        },
    }


def test_a_bare_pod_group_is_owned_by_the_pod_in_the_default_queue() -> None:
    """Without annotations: the default queue, no priority class."""
    desired = desired_group(bare(builders.pod(name="a")), {}, 1)
    body = desired.body()
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "uid-a", "controller": True}
    ]
    assert body["spec"] == {"minMember": 1, "minResources": {"cpu": "1", "memory": "1Gi"}, "queue": "default"}
    assert "annotations" not in body["metadata"] and "labels" not in body["metadata"]


def test_the_owner_queue_counts_when_the_pod_names_none() -> None:
    """A queue named on the Job itself is used when its pods name none."""
    desired = desired_group(owned(builders.pod(name="a")), {"scheduling.volcano.sh/queue-name": "batch"}, 1)
    assert desired.spec["queue"] == "batch"


def test_inherited_annotations_and_the_pods_own_keys() -> None:
    """The owner's volcano.sh/* and scheduling.volcano.sh/* pass on; the pod's preemptable, cooldown and
    first JDB key override them; its preemptable and cooldown labels are copied."""
    pod = builders.pod(
        name="a",
        labels={"volcano.sh/preemptable": "false", "app": "x"},
        annotations={
            "volcano.sh/preemptable": "false",
            "volcano.sh/jdb-max-unavailable": "1",
            "volcano.sh/jdb-min-available": "2",
            "example.com/other": "no",
        },
    )
    owner = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/sla-waiting-time": "1h",
        "scheduling.volcano.sh/group-min-member": "3",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    desired = desired_group(owned(pod), owner, 3)
    assert desired.annotations == {
        "volcano.sh/preemptable": "false",
        "volcano.sh/sla-waiting-time": "1h",
        "scheduling.volcano.sh/group-min-member": "3",
        "volcano.sh/jdb-min-available": "2",
    }
    assert desired.labels == {"volcano.sh/preemptable": "false"}


def current(desired_body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The object the API server would hold for `desired_body`, plus foreign metadata and status."""
    obj: dict[str, Any] = {**desired_body, "status": {"phase": "Running"}}
    obj["metadata"] = {
        **desired_body["metadata"],
        "annotations": {**desired_body["metadata"].get("annotations", {}), "example.com/keep": "yes"},
        "resourceVersion": "7",
    }
    obj["spec"] = {**desired_body["spec"], **changes}
    return obj


def test_an_up_to_date_group_needs_no_patch() -> None:
    desired = desired_group(owned(builders.pod(name="a")), {"scheduling.volcano.sh/group-min-member": "2"}, 2)
    assert update_patch(current(desired.body()), desired) is None


def test_a_new_min_member_patches_spec_and_inherited_annotations_only() -> None:
    """minResources is replaced whole; an inherited annotation the owner dropped goes; foreign ones stay."""
    before = desired_group(
        owned(builders.pod(name="a")),
        {"scheduling.volcano.sh/group-min-member": "2", "volcano.sh/sla-waiting-time": "1h"},
        2,
    )
    obj = current(before.body())
    obj["spec"]["minResources"] = {**obj["spec"]["minResources"], "requests.cpu": "2"}
    after = desired_group(owned(builders.pod(name="a")), {"scheduling.volcano.sh/group-min-member": "3"}, 3)
    assert update_patch(obj, after) == {
        "spec": {"minMember": 3, "minResources": {"cpu": "3", "memory": "3Gi", "requests.cpu": None}},
        "metadata": {
            "annotations": {"scheduling.volcano.sh/group-min-member": "3", "volcano.sh/sla-waiting-time": None}
        },
    }
