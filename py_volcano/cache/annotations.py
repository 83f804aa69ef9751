"""The annotations the status writer keeps on PodGroups and Queues, for `py-volcano explain` and `queues`.

Volcano's status schemas have no room for why a job waits or for a queue's deserved share, so they
go in annotations (`EXPLAIN_ANNOTATION` on a waiting job's PodGroup, removed once it stops waiting;
`QUEUE_FIGURES_ANNOTATION` on every Queue), written with merge patches on the objects themselves.
`AnnotationRecords` remembers what was written and returns only the writes a cycle changes (a job the
cycle left out, backed off, keeps what the last cycle that tried it wrote); a job's
place in line is written in bands (`status_diff.position_band`), so a long line moving up by one job
costs a few writes, not one per job. After a restart a PodGroup's annotation is compared with the one
the snapshot saw, so only what differs is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from py_volcano.api import (
    EXPLAIN_ANNOTATION,
    QUEUE_FIGURES_ANNOTATION,
    CycleResult,
    JobID,
    JobWait,
    SettledFollower,
)
from py_volcano.cache import status_diff

__all__ = ["AnnotationPatch", "AnnotationRecords"]

_GROUPS = "/apis/scheduling.volcano.sh/v1beta1"


@dataclass(slots=True, frozen=True)
class AnnotationPatch:
    """One annotation to set (or remove, `value` None) on a PodGroup (`name` its `ns/name`) or a Queue."""

    kind: str
    name: str
    path: str
    key: str
    value: str | None
    uid: str = ""

    def body(self) -> dict[str, object]:
        """Return the merge patch."""
        return status_diff.annotation_patch(self.key, self.value)


@dataclass(slots=True, frozen=True)
class _Written:
    """An annotation as last written on one object: the object's uid, the value (None: absent), and the
    wait it was made from (an equal wait next cycle is not encoded again)."""

    uid: str
    value: str | None
    wait: JobWait | None = None


class AnnotationRecords:
    """What was last written in each annotation, by (kind, object)."""

    def __init__(self) -> None:
        self._groups: dict[JobID, _Written] = {}
        self._settled = SettledFollower()
        self._queues: dict[str, _Written] = {}

    def diff(self, result: CycleResult) -> list[AnnotationPatch]:
        """Return the annotation writes the cycle's result calls for, and remember them as written; a
        settled job (`CycleResult.settled`) keeps what was written on it."""
        patches: list[AnnotationPatch] = []
        groups = self._groups
        for job_id, status in result.pod_groups.items():
            if status.shadow or job_id in result.backed_off:
                continue  # no object to annotate; or left out of the cycle, so what was written stays
            wait = result.job_waits.get(job_id)
            written = groups.get(job_id)
            if written is not None and written.uid == status.uid and written.wait == wait:
                continue  # the same wait (or none) as last written: the same value
            desired = status_diff.explain_annotation(wait) if wait is not None else None
            mine = written is not None and written.uid == status.uid
            previous = written.value if written is not None and mine else status.observed_explanation or None
            if desired != previous:
                path = f"{_GROUPS}/namespaces/{status.namespace}/podgroups/{status.name}"
                patches.append(AnnotationPatch("PodGroup", job_id, path, EXPLAIN_ANNOTATION, desired, status.uid))
            groups[job_id] = _Written(status.uid, desired, wait)
        for gone in self._settled.gone(groups, result.pod_groups, result.settled_update, result.settled):
            del groups[gone]
        queues = self._queues
        for name, figures in result.queues.items():
            desired = status_diff.queue_figures_annotation(figures)
            written = queues.get(name)
            if written is None or written.value != desired:
                path = f"{_GROUPS}/queues/{name}"
                patches.append(AnnotationPatch("Queue", name, path, QUEUE_FIGURES_ANNOTATION, desired))
            queues[name] = _Written("", desired)
        for name in queues.keys() - result.queues.keys():
            del queues[name]
        return patches

    def forget(self, patch: AnnotationPatch) -> None:
        """Forget a write that failed (unless a later one replaced it), so the next diff writes it again."""
        records: dict[Any, _Written] = self._groups if patch.kind == "PodGroup" else self._queues
        written = records.get(patch.name)
        if written is not None and (written.uid, written.value) == (patch.uid, patch.value):
            del records[patch.name]
