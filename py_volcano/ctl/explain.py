"""`explain`: why a pod or PodGroup waits, in words, from what the scheduler recorded on the cluster.

The scheduler writes, on each waiting job's PodGroup, the `EXPLAIN_ANNOTATION` (the action and plugin
that held it, its reason, the nodes' reasons, the gang's counts, its place in line, whether preemption
can help) next to Volcano's `Unschedulable` condition; pods carry `PodScheduled=False`. This module
only reads those (it never re-runs a cycle) and adds what would let the job run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from py_volcano.api import DEFAULT_QUEUE, EXPLAIN_ANNOTATION, GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from py_volcano.ctl.views import annotation_json

__all__ = ["explain", "explanation_text", "ordinal", "place", "queue_of"]

_WAITING_PHASES = ("Pending", "Inqueue")


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    conditions = _map(obj.get("status")).get("conditions")
    return next((c for c in conditions or () if isinstance(c, Mapping) and c.get("type") == kind), {})


def ordinal(number: int) -> str:
    """Return `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`..."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def place(band: str) -> str:
    """Return a written place in line in words: `3` as `3rd`, `11-20` as `11th to 20th`."""
    low, _, high = band.partition("-")
    if not low.isdigit():
        return band
    return f"{ordinal(int(low))} to {ordinal(int(high))}" if high.isdigit() else ordinal(int(low))


def _node_hint(reason: str) -> str:
    if reason.startswith("Insufficient "):
        resource = reason.removeprefix("Insufficient ")
        return f"free {resource} on a node, or add nodes with more {resource}"
    if "taint" in reason:
        return "give the pods a toleration for the nodes' taint, or remove the taint"
    if "affinity" in reason or "selector" in reason:
        return "change the pods' node selector or affinity, or label nodes to match"
    if "Too many pods" in reason:
        return "free pod slots on a node (its pods allocatable), or add nodes"
    if "unschedulable" in reason:
        return "uncordon a node"
    return f"make a node pass: {reason}"


def _hints(note: Mapping[str, Any], queue: str) -> list[str]:
    """What would let the job run, from its reason, plugin, nodes and gang counts."""
    reason, plugin = str(note.get("reason") or ""), str(note.get("plugin") or "")
    min_member, valid = int(note.get("minMember") or 0), int(note.get("valid") or 0)
    if reason == "QueueNotFound":
        return [f"create Queue {queue}, or point the PodGroup's spec.queue at an existing queue"]
    if reason == "QueueClosed":
        return [f"open the queue: py-volcano queue open {queue}"]
    if reason == "EnqueueRejected" and plugin == "overcommit":
        return ["wait for running jobs to finish or add nodes: the cluster's idle resources (times the "
                "overcommit factor) must hold the job's minResources on top of the admitted jobs'"]
    if reason == "EnqueueRejected":
        return [f"wait for jobs of queue {queue} to finish, raise the queue's capability, or lower the "
                "PodGroup's minResources: the queue must hold them on top of what it holds and has admitted"]
    if reason == "JobInvalid" and valid < min_member:
        return [f"create {min_member - valid} more pod(s) (the owner's replicas), or lower minMember to {valid}"]
    if reason == "QueueQuotaExceeded":
        return [f"wait for jobs of queue {queue} to finish, or raise its weight, deserved or capability "
                "(with reclaim configured it takes back what it lent to other queues)"]
    if reason == "QueueOverused":
        return [f"wait for jobs of queue {queue} to finish, or raise its weight or deserved"]
    if reason == "Pipelined":
        return ["nothing: it binds once the pods being evicted for it have left"]
    if reason == "NoNodeFits":
        return list(dict.fromkeys(_node_hint(str(r)) for r in _map(note.get("nodes")))) or [
            "make a node fit the pods: " + str(note.get("message") or "")
        ]
    if reason == "NotTakenUp":
        return ["wait for the next cycle; if it stays, read the scheduler's log for this job"]
    return [f"satisfy {plugin or 'the scheduler'}: {note.get('message') or reason}"]


def _counts(queue: Mapping[str, Any] | None) -> dict[str, int]:
    status = _map((queue or {}).get("status"))
    return {"pending": int(status.get("pending") or 0), "inqueue": int(status.get("inqueue") or 0)}


def _gang(note: Mapping[str, Any]) -> dict[str, int]:
    min_member, ready = int(note.get("minMember") or 0), int(note.get("ready") or 0)
    return {"minMember": min_member, "ready": ready, "valid": int(note.get("valid") or 0),
            "short": max(min_member - ready, 0)}


def _pod_summary(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta, spec, status = _map(pod.get("metadata")), _map(pod.get("spec")), _map(pod.get("status"))
    scheduled = _condition(pod, "PodScheduled")
    return {
        "name": f"{meta.get('namespace')}/{meta.get('name')}",
        "phase": str(status.get("phase") or ""),
        "node": str(spec.get("nodeName") or ""),
        "podScheduled": {key: scheduled.get(key) for key in ("status", "reason", "message") if key in scheduled},
    }


def queue_of(pod: Mapping[str, Any] | None, group: Mapping[str, Any] | None) -> str:
    """Return the queue of a PodGroup (its spec), else of a pod without one (its queue annotation)."""
    if group is not None:
        return str(_map(group.get("spec")).get("queue") or DEFAULT_QUEUE)
    annotations = _map(_map((pod or {}).get("metadata")).get("annotations"))
    return str(annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE)


def explain(
    *,
    target: str,
    pod: Mapping[str, Any] | None,
    group: Mapping[str, Any] | None,
    queue: Mapping[str, Any] | None,
    queues: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Return why `target` (a pod, with its PodGroup if it has one, or a PodGroup) waits, and what would
    let it run; `queues` are every Queue (for the cluster's counts)."""
    result: dict[str, Any] = {"object": target}
    pod_meta = _map((pod or {}).get("metadata"))
    if pod is not None:
        result["pod"] = _pod_summary(pod)
        result["podGroup"] = str(_map(pod_meta.get("annotations")).get(GROUP_NAME_ANNOTATION) or "")
    result["queue"] = queue_of(pod, group)
    if group is not None:
        result["podGroup"] = str(_map(group.get("metadata")).get("name") or "")
        result["phase"] = str(_map(group.get("status")).get("phase") or "Pending")
    if pod is not None and result["pod"]["node"]:
        result["waiting"] = False
        result["summary"] = f"the pod is on node {result['pod']['node']} (phase {result['pod']['phase']})"
        return result
    note = annotation_json(group, EXPLAIN_ANNOTATION) if group is not None else {}
    if group is None and result.get("podGroup"):
        result["waiting"] = True
        result["summary"] = f"its PodGroup {result['podGroup']} does not exist; the pod waits for it"
        result["toRun"] = ["create the PodGroup (the PodGroup controller of `py-volcano run` does for workloads)"]
        return result
    if group is not None and not note and result["phase"] not in _WAITING_PHASES:
        result["waiting"] = False
        result["summary"] = f"its gang is placed (PodGroup phase {result['phase']})"
        return result
    result["waiting"] = True
    if not note:
        unschedulable = _condition(group or {}, "Unschedulable") if group is not None else {}
        scheduled = _condition(pod or {}, "PodScheduled")
        message = unschedulable.get("message") or scheduled.get("message")
        result["summary"] = "the scheduler recorded no explanation" + (f"; it says: {message}" if message else "")
        result["toRun"] = ["check that py-volcano schedules this pod's spec.schedulerName and is running"]
        return result
    for key in ("reason", "action", "plugin", "message", "nodes", "preemption", "queuePosition", "clusterPosition"):
        if key in note:
            result[key] = note[key]
    result["gang"] = _gang(note)
    result["queueWaiting"] = _counts(queue)
    cluster = [_counts(q) for q in queues]
    result["clusterWaiting"] = {kind: sum(c[kind] for c in cluster) for kind in ("pending", "inqueue")}
    result["summary"] = str(note.get("message") or note.get("reason") or "")
    result["toRun"] = _hints(note, result["queue"])
    return result


def _held_by(result: Mapping[str, Any]) -> str:
    action, plugin, reason = result.get("action"), result.get("plugin"), result.get("reason")
    who = f"{action}, plugin {plugin}" if action and plugin else str(action or "no action took it up")
    return f"{who} ({reason})"


def _in_line(result: Mapping[str, Any]) -> str:
    queue, cluster = result["queueWaiting"], result["clusterWaiting"]
    queue_place, cluster_place = result.get("queuePosition"), result.get("clusterPosition")
    if not queue_place:
        return "not in line this cycle (no action took it up)"
    return (
        f"{place(str(queue_place))} in queue {result['queue']} ({queue['pending']} Pending, {queue['inqueue']} "
        f"Inqueue PodGroups); {place(str(cluster_place))} in the cluster ({cluster['pending']} Pending, "
        f"{cluster['inqueue']} Inqueue)"
    )


def _gang_line(gang: Mapping[str, int]) -> str:
    line = f"needs {gang['minMember']} (minMember); {gang['ready']} running or placed; {gang['valid']} pods can count"
    return line + (f"; short by {gang['short']}" if gang["short"] else "")


def explanation_text(result: Mapping[str, Any]) -> str:
    """Return the explanation as the table-format output prints it."""
    group = f"podgroup {result['podGroup']}" if result.get("podGroup") else "no PodGroup (a one-pod job)"
    verb = "waits" if result["waiting"] else "does not wait"
    lines = [f"{result['object']} {verb}: {result['summary']}", f"  {'job:':<12} {group}, queue {result['queue']}"]
    if "reason" in result:
        nodes = ", ".join(f"{count} {reason}" for reason, count in _map(result.get("nodes")).items())
        lines += [f"  {'held by:':<12} {_held_by(result)}", f"  {'why:':<12} {result.get('message') or '-'}"]
        lines += [f"  {'nodes:':<12} {nodes}"] if nodes else []
        lines += [f"  {'gang:':<12} {_gang_line(result['gang'])}", f"  {'in line:':<12} {_in_line(result)}"]
        lines += [f"  {'preemption:':<12} {result.get('preemption') or '-'}"]
    for i, hint in enumerate(result.get("toRun") or ()):
        lines.append(f"  {'to run:' if i == 0 else '':<12} {hint}")
    scheduled = _map(_map(result.get("pod")).get("podScheduled"))
    if scheduled.get("message"):
        lines.append(f"  {'pod:':<12} PodScheduled={scheduled.get('status')}: {scheduled['message']}")
    return "\n".join(lines)
