"""What a fault must not break, read off the cluster after it: no pod bound twice, no node overcommitted,
no pod left pending that fits.

Why these sources: the API server itself refuses a second Binding of a bound pod (409 "already
assigned") and `spec.nodeName` cannot change once set, so a double bind never shows in the pods. It
shows in the schedulers: a replica that logs `task_bound` for a pod another replica (or itself) already
bound, or gets that 409. Each replica logs `task_bound` only after the API server answered 201, so the
union of every replica's log, killed ones included, is the list of binds that took effect (a replica
killed between the answer and the log line loses one line: an undercount, never a false double).
`Scheduled` events are not used: events are best effort, dropped while the API server is down and
aggregated into series. What the pods hold is checked against the logs: a pod whose node differs from
the one its bind logged was moved. Overcommitment is what two schedulers acting at once would cause
(each placing different pods on the same free room), which the API server does not check.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from py_volcano.api.quantity import parse_quantity

__all__ = ["Audit", "Bind", "audit", "binds_logged", "epoch", "log_lines", "refused_binds"]

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
RESOURCES = ("cpu", "memory", "pods")
Room = dict[str, float]


def log_lines(path: Path, event: str | None = None) -> list[dict[str, Any]]:
    """Return the JSON lines of one `py-volcano run --log-format=json` log (those of `event` only, when given)."""
    lines = []
    for text in path.read_text(errors="replace").splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and (event is None or line.get("event") == event):
            lines.append(line)
    return lines


def epoch(line: Mapping[str, Any]) -> float:
    """Return a log line's timestamp as seconds since the epoch."""
    return datetime.fromisoformat(str(line["timestamp"]).replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True, slots=True)
class Bind:
    """One bind a scheduler logged as accepted: `ns/pod`, node, when (epoch seconds), which log."""

    pod: str
    node: str
    at: float
    log: str


def binds_logged(logs: Iterable[Path]) -> list[Bind]:
    """Return every `task_bound` of these logs (needs --log-level=debug), in time order."""
    binds = [
        Bind(str(line["task"]), str(line["node"]), epoch(line), path.name)
        for path in logs
        for line in log_lines(path, "task_bound")
    ]
    return sorted(binds, key=lambda bind: bind.at)


def refused_binds(logs: Iterable[Path]) -> list[str]:
    """Return the pods whose bind the API server refused as already bound (409 "is already assigned").

    Other 409 answers are not second binds: while etcd is away the API server answers a Binding with
    409 "Operation cannot be fulfilled ...: rpc error: code = Unavailable", and nothing was written.
    """
    return [
        str(line["task"])
        for path in logs
        for line in log_lines(path, "bind_failed")
        if line.get("status") == 409 and "already assigned" in str(line.get("reason"))
    ]


@dataclass(slots=True)
class Audit:
    """The cluster after a fault: counts, then each kind of damage with what differed."""

    pods: int = 0
    bound: int = 0
    pending: int = 0
    double_binds: dict[str, list[str]] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)
    refused_binds: list[str] = field(default_factory=list)
    overcommitted: dict[str, str] = field(default_factory=dict)
    pending_that_fit: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Return one line per kind of damage found, naming the pods or nodes; empty when none."""
        found = []
        if self.double_binds:
            found.append(f"{len(self.double_binds)} pods bound more than once: {_some(self.double_binds)}")
        if self.moved:
            found.append(f"{len(self.moved)} pods not on the node their bind logged: {_some(self.moved)}")
        if self.refused_binds:
            found.append(f"{len(self.refused_binds)} binds of already bound pods refused: {self.refused_binds[:5]}")
        if self.overcommitted:
            found.append(f"{len(self.overcommitted)} nodes overcommitted: {_some(self.overcommitted)}")
        if self.pending_that_fit:
            found.append(f"{len(self.pending_that_fit)} pods pending that fit: {self.pending_that_fit[:5]}")
        return found

    def counts(self) -> dict[str, int]:
        """Return the figures: pods, bound, pending, and how many of each kind of damage."""
        return {key: len(value) if isinstance(value, list | dict) else value for key, value in asdict(self).items()}


def _some(items: Mapping[str, Any], count: int = 5) -> str:
    return ", ".join(f"{key}: {value}" for key, value in list(items.items())[:count])


def requests_of(pod: Mapping[str, Any]) -> Room:
    """Return what a pod asks of its node: the sum of its containers' cpu and memory requests, one pod."""
    asked: Room = {"cpu": 0.0, "memory": 0.0, "pods": 1.0}
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for name in ("cpu", "memory"):
            if name in requests:
                asked[name] += parse_quantity(requests[name])
    return asked


def _tolerates(pod: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists":
            if toleration.get("key") in (None, "", taint.get("key")):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _fits(asked: Room, room: Room) -> bool:
    return all(asked[name] <= room[name] + 1e-9 for name in RESOURCES)


def _can_host(node: Mapping[str, Any], pod: Mapping[str, Any], asked: Room, free: Room) -> bool:
    taints = (node.get("spec") or {}).get("taints") or []
    return _fits(asked, free) and all(_tolerates(pod, taint) for taint in taints)


def audit(
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    binds: Sequence[Bind],
    *,
    scheduler: str,
    namespace: str,
    refused: Sequence[str] = (),
) -> Audit:
    """Check the pods of `scheduler` in `namespace` against the binds logged, and `nodes` against every pod
    on them (`pods` is the whole cluster's list, so others' pods count towards a node's use).

    A pending pod fits when a first-fit placement of the pending pods, gang by gang (all of a PodGroup's
    pending pods or none), finds it room on a node it tolerates after everything bound is counted
    (requests and taints only: node selectors and affinities are not read, the probes' pods may go to
    any of `nodes`).
    """
    result = Audit(refused_binds=list(refused))
    logged: dict[str, list[str]] = defaultdict(list)
    for bind in binds:
        logged[bind.pod].append(bind.node)
    room: dict[str, Room] = {}
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        room[node["metadata"]["name"]] = {name: parse_quantity(allocatable.get(name, 0)) for name in RESOURCES}
    capacity = {name: dict(free) for name, free in room.items()}
    pending: dict[str, list[tuple[str, Mapping[str, Any]]]] = defaultdict(list)
    for pod in pods:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        key = f"{meta['namespace']}/{meta['name']}"
        on = str(spec.get("nodeName") or "")
        ours = meta["namespace"] == namespace and spec.get("schedulerName") == scheduler
        if on in room and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            for name, amount in requests_of(pod).items():
                room[on][name] -= amount
        if not ours:
            continue
        result.pods += 1
        if len(logged.get(key, ())) > 1:
            result.double_binds[key] = logged[key]
        if on:
            result.bound += 1
            if logged.get(key) and logged[key][-1] != on:
                result.moved[key] = f"logged {logged[key][-1]}, now {on}"
        elif not meta.get("deletionTimestamp"):
            result.pending += 1
            group = (meta.get("annotations") or {}).get(GROUP_ANNOTATION) or f"pod:{meta['name']}"
            pending[group].append((key, pod))
    for name, free in room.items():
        over = [f"{r} {capacity[name][r] - free[r]:g} > {capacity[name][r]:g}" for r in RESOURCES if free[r] < -1e-9]
        if over:
            result.overcommitted[name] = "; ".join(over)
    schedulable = {
        node["metadata"]["name"]: node for node in nodes if not (node.get("spec") or {}).get("unschedulable")
    }
    for members in pending.values():
        trial = {name: dict(free) for name, free in room.items()}
        placed = []
        for key, pod in members:
            asked = requests_of(pod)
            target = next(
                (name for name, node in schedulable.items() if _can_host(node, pod, asked, trial[name])), None
            )
            if target is None:
                break
            for r in RESOURCES:
                trial[target][r] -= asked[r]
            placed.append(key)
        else:
            room = trial
            result.pending_that_fit.extend(placed)
    return result
