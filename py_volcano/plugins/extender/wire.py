"""The JSON an extender receives: tasks, jobs, nodes and queues under the field names of Volcano's Go
structs (`UID`, `Resreq.MilliCPU`, `Status` as Volcano's task-status bit, ...), so an extender written
for Volcano reads py-volcano's calls unchanged.

What py-volcano does not keep is left out: a task's `Pod` carries the pod's metadata and the spec
fields the scheduler reads (not its containers), a node's `Node` its metadata, spec and allocatable.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from py_volcano.api import (
    JobInfo,
    NodeInfo,
    QueueInfo,
    Resource,
    Taint,
    TaskInfo,
    TaskStatus,
    job_preemptable,
    node_revocable_zone,
    task_revocable_zone,
)

__all__ = ["encode_job", "encode_node", "encode_queue", "encode_resource", "encode_task"]

Json = dict[str, Any]

#: Volcano's TaskStatus values (1 << iota, in its declaration order).
_STATUS_BITS = {
    status: 1 << position
    for position, status in enumerate(
        (
            TaskStatus.PENDING,
            TaskStatus.ALLOCATED,
            TaskStatus.PIPELINED,
            TaskStatus.BINDING,
            TaskStatus.BOUND,
            TaskStatus.RUNNING,
            TaskStatus.RELEASING,
            TaskStatus.SUCCEEDED,
            TaskStatus.FAILED,
            TaskStatus.UNKNOWN,
        )
    )
}


def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_resource(resource: Resource | None) -> Json | None:
    """Volcano's Resource: milli-CPU, memory bytes, scalars in milli units, pod slots."""
    if resource is None:
        return None
    return {
        "MilliCPU": resource.milli_cpu,
        "Memory": resource.memory,
        "ScalarResources": dict(resource.scalars) or None,
        "MaxTaskNum": resource.max_task_num,
    }


def encode_task(task: TaskInfo) -> Json:
    """Volcano's TaskInfo."""
    return {
        "UID": task.uid,
        "Job": task.job or "",
        "Name": task.name,
        "Namespace": task.namespace,
        "TaskRole": task.role,
        "Resreq": encode_resource(task.resreq),
        "InitResreq": encode_resource(task.init_resreq),
        "NodeName": task.node_name,
        "Status": _STATUS_BITS[task.status],
        "Priority": task.priority,
        "Preemptable": task.preemptable,
        "BestEffort": task.best_effort,
        "RevocableZone": task_revocable_zone(task),
        "Pod": {
            "metadata": {
                "name": task.name,
                "namespace": task.namespace,
                "uid": task.uid,
                "labels": dict(task.labels),
                "annotations": dict(task.annotations),
                "creationTimestamp": _time(task.creation),
            },
            "spec": {
                "nodeName": task.node_name,
                "priority": task.priority,
                "priorityClassName": task.priority_class_name,
                "nodeSelector": dict(task.node_selector),
            },
        },
    }


def encode_node(node: NodeInfo) -> Json:
    """Volcano's NodeInfo, its tasks included."""
    spec = {"unschedulable": node.unschedulable, "taints": [_taint(taint) for taint in node.taints]}
    return {
        "Name": node.name,
        "Node": {
            "metadata": {"name": node.name, "labels": dict(node.labels)},
            "spec": spec,
            "status": {"allocatable": node.allocatable.to_quantities()},
        },
        "Releasing": encode_resource(node.releasing),
        "Pipelined": encode_resource(node.pipelined),
        "Idle": encode_resource(node.idle),
        "Used": encode_resource(node.used),
        "Allocatable": encode_resource(node.allocatable),
        "Capacity": encode_resource(node.capacity),
        "Tasks": {uid: encode_task(task) for uid, task in node.tasks.items()},
        "RevocableZone": node_revocable_zone(node),
    }


def _taint(taint: Taint) -> Json:
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def encode_job(job: JobInfo) -> Json:
    """Volcano's JobInfo, its tasks included."""
    spec = job.pod_group
    return {
        "UID": job.uid,
        "Name": job.name,
        "Namespace": job.namespace,
        "Queue": job.queue,
        "Priority": job.priority,
        "MinAvailable": job.min_available,
        "Tasks": {uid: encode_task(task) for uid, task in job.tasks.items()},
        "TaskMinAvailable": dict(job.task_min_available),
        "Allocated": encode_resource(job.allocated),
        "TotalRequest": encode_resource(job.total_request),
        "CreationTimestamp": _time(job.creation),
        "Preemptable": job_preemptable(job),
        "PodGroup": {
            "metadata": {
                "name": spec.name,
                "namespace": spec.namespace,
                "annotations": dict(spec.annotations),
                "labels": dict(spec.labels),
            },
            "spec": {
                "minMember": spec.min_member,
                "queue": spec.queue,
                "priorityClassName": spec.priority_class_name,
                "minTaskMember": dict(spec.min_task_member),
            },
            "status": {"phase": job.phase.value},
        },
    }


def encode_queue(queue: QueueInfo) -> Json:
    """Volcano's QueueInfo."""
    spec: Json = {"weight": queue.weight, "reclaimable": queue.reclaimable, "priority": queue.priority}
    for name, value in (("capability", queue.capability), ("deserved", queue.deserved)):
        if value is not None:
            spec[name] = value.to_quantities()
    if queue.guarantee is not None:
        spec["guarantee"] = {"resource": queue.guarantee.to_quantities()}
    if queue.parent:
        spec["parent"] = queue.parent
    return {
        "UID": queue.uid,
        "Name": queue.name,
        "Weight": queue.weight,
        "Queue": {"metadata": {"name": queue.name}, "spec": spec, "status": {"state": queue.state.value}},
    }
