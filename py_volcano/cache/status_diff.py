"""Pure diffs behind the status writer: the patch that turns what was written into what a cycle wants.

Every function takes plain values and returns JSON-ready dicts (or None when nothing changes), so the
writer can run them over thousands of objects a cycle and tests can pin the exact patches. Condition
handling follows Kubernetes conventions: a condition's `lastTransitionTime` moves only when its status
does; a False condition only retracts a True one; conditions of types the scheduler does not own are
kept as they are. The annotations (a waiting job's explanation, a queue's figures) are compact JSON
with sorted keys, so an unchanged value is the same string and is not written again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from py_volcano.api import ConditionUpdate, JobWait, QueueFigures

__all__ = [
    "NOTE_LIMIT",
    "POD_GROUP_READY",
    "GroupDiff",
    "GroupState",
    "annotation_patch",
    "apply_conditions",
    "changed_conditions",
    "event_body",
    "explain_annotation",
    "map_patch",
    "micro_time",
    "pod_group_diff",
    "pod_scheduled_patch",
    "position_band",
    "queue_figures_annotation",
    "rfc3339",
    "status_patch",
]

#: Volcano's note on a group's Scheduled event.
POD_GROUP_READY = "pod group is ready"
#: The API server rejects an events.k8s.io/v1 note longer than this (bytes).
NOTE_LIMIT = 1024

Condition = Mapping[str, Any]


def rfc3339(seconds: float) -> str:
    """Return an epoch time as a Kubernetes `Time` (`2024-05-01T12:00:00Z`)."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(seconds: float) -> str:
    """Return an epoch time as a Kubernetes `MicroTime` (`2024-05-01T12:00:00.123456Z`)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _find(conditions: Sequence[Condition], kind: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def _same(condition: Condition, update: ConditionUpdate) -> bool:
    return (
        condition.get("status") == update.status
        and (condition.get("reason") or "") == update.reason
        and (condition.get("message") or "") == update.message
    )


def changed_conditions(
    current: Sequence[Condition], updates: Iterable[ConditionUpdate]
) -> list[ConditionUpdate]:
    """Return the updates that change a condition's status, reason or message (or add one).

    A False update retracts: it changes only a condition of its type that is True.
    """
    changed = []
    for update in updates:
        condition = _find(current, update.type)
        if update.status == "False":
            if condition is not None and condition.get("status") == "True":
                changed.append(update)
        elif condition is None or not _same(condition, update):
            changed.append(update)
    return changed


def apply_conditions(
    current: Sequence[Condition], updates: Iterable[ConditionUpdate], now: str
) -> list[dict[str, Any]]:
    """Return `current` with `updates` applied, in order, new types appended.

    A condition whose status stays keeps its lastTransitionTime; a new one or a status change gets `now`.
    """
    result = [dict(condition) for condition in current]
    for update in updates:
        index = next((i for i, c in enumerate(result) if c.get("type") == update.type), None)
        previous = result[index] if index is not None else {}
        since = previous.get("lastTransitionTime") if previous.get("status") == update.status else None
        condition = {
            "type": update.type,
            "status": update.status,
            "reason": update.reason,
            "message": update.message,
            "lastTransitionTime": since or now,
        }
        if index is None:
            result.append(condition)
        else:
            result[index] = condition
    return result


@dataclass(slots=True, frozen=True)
class GroupState:
    """What a cycle says about one PodGroup (its `PodGroupStatus`, as written); equal states need no diff."""

    phase: str
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions: tuple[ConditionUpdate, ...] = ()


@dataclass(slots=True, frozen=True)
class GroupDiff:
    """The status once written, the merge patch writing it (None: nothing to write), changed conditions."""

    status: dict[str, Any]
    patch: dict[str, Any] | None
    changed: list[ConditionUpdate]


def pod_group_diff(
    written: Mapping[str, Any], observed: Sequence[Condition], state: GroupState, now: str
) -> GroupDiff:
    """Diff a PodGroup's status against what was written (`{}` when unknown, then everything is written).

    Conditions start from those written, else from `observed` (the object's, as the snapshot saw them).
    """
    current: Sequence[Condition] = written.get("conditions") or observed
    changed = changed_conditions(current, state.conditions)
    desired: dict[str, Any] = {
        "phase": state.phase,
        "running": state.running,
        "succeeded": state.succeeded,
        "failed": state.failed,
    }
    if changed:
        desired["conditions"] = apply_conditions(current, changed, now)
    return GroupDiff({**written, **desired}, status_patch(written, desired), changed)


def map_patch(previous: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """Return the JSON merge patch of one map: changed and new keys, and null for removed ones."""
    patch: dict[str, Any] = {key: value for key, value in desired.items() if previous.get(key) != value}
    patch.update((key, None) for key in previous if key not in desired)
    return patch


def status_patch(previous: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the merge patch `{"status": {...}}` of the fields of `desired` that differ, or None.

    Lists (conditions) are replaced whole, as a merge patch does; maps (allocated) are patched per key.
    """
    changes: dict[str, Any] = {}
    for key, value in desired.items():
        old = previous.get(key)
        if old == value:
            continue
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            changes[key] = map_patch(old, value)
        else:
            changes[key] = value
    return {"status": changes} if changes else None


def pod_scheduled_patch(*, uid: str, reason: str, message: str, since: str) -> dict[str, Any]:
    """Return the strategic merge patch setting `PodScheduled=False` with `reason` and `message` on a pod.

    Conditions merge by type, so the pod's other conditions stay; the uid makes the API server refuse
    the patch when the pod was replaced by a namesake.
    """
    return {
        "metadata": {"uid": uid},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": since,
                }
            ]
        },
    }


def _truncate(note: str) -> str:
    encoded = note.encode()
    if len(encoded) <= NOTE_LIMIT:
        return note
    return encoded[: NOTE_LIMIT - 3].decode(errors="ignore") + "..."


def event_body(
    *,
    regarding: Mapping[str, str],
    type_: str,
    reason: str,
    action: str,
    note: str,
    name: str,
    event_time: str,
    controller: str,
    instance: str,
) -> dict[str, Any]:
    """Return an events.k8s.io/v1 Event about `regarding` (an ObjectReference), its note cut to the limit."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": regarding.get("namespace") or "default"},
        "eventTime": event_time,
        "reportingController": controller,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "regarding": dict(regarding),
        "note": _truncate(note),
        "type": type_,
    }


#: Places in line written exactly; beyond, the 1-2-5 band a place falls in.
_EXACT_POSITIONS = 10


def position_band(position: int) -> str:
    """Return a place in line as written: exact up to 10, then its band ("11-20", "21-50", "51-100",
    "101-200", ...); "" for 0 (no place).

    When the job at the head leaves, every place behind it moves up one: with bands only the first
    ten and the jobs at a band's edge change, so a long line costs a few writes, not one per job.
    """
    if position <= 0:
        return ""
    if position <= _EXACT_POSITIONS:
        return str(position)
    low, high, step = _EXACT_POSITIONS, _EXACT_POSITIONS * 2, 0
    while position > high:
        step += 1
        low, high = high, high * 5 // 2 if step % 3 == 1 else high * 2
    return f"{low + 1}-{high}"


def _dump(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def explain_annotation(wait: JobWait) -> str:
    """Return a waiting job's explanation as the PodGroup annotation holds it (places in bands)."""
    note: dict[str, Any] = {
        "reason": wait.reason.value,
        "message": wait.message,
        "action": wait.action,
        "plugin": wait.plugin,
        "queue": wait.queue,
        "queuePosition": position_band(wait.queue_position),
        "clusterPosition": position_band(wait.cluster_position),
        "nodes": dict(wait.nodes),
        "minMember": wait.min_member,
        "ready": wait.ready,
        "valid": wait.valid,
        "preemption": wait.preemption,
    }
    return _dump({key: value for key, value in note.items() if value or key in ("ready", "valid")})


def queue_figures_annotation(figures: QueueFigures) -> str:
    """Return what the queue plugin computed for a queue as the Queue annotation holds it (share to 3 places)."""
    note: dict[str, Any] = {"share": round(figures.share, 3), "overused": figures.overused}
    for key, value in (
        ("deserved", figures.deserved),
        ("capability", figures.capability),
        ("realCapability", figures.real_capability),
        ("guarantee", figures.guarantee),
    ):
        if value is not None:
            note[key] = value.to_quantities()
    return _dump(note)


def annotation_patch(key: str, value: str | None) -> dict[str, Any]:
    """Return the merge patch setting annotation `key` to `value` (None removes it)."""
    return {"metadata": {"annotations": {key: value}}}
