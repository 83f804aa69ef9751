"""The Volcano marks that say who may be evicted, and where: preemptable workloads, revocable zones of
nodes and pods, and a job's disruption budget (the `volcano.sh/*` keys tdm and the gang-aware actions read).

A job reads its PodGroup's annotations and labels. A pod without a PodGroup is a one-pod job whose
group carries the pod's own keys, as Volcano's podgroup controller copies them onto the PodGroup it
makes for such a pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from py_volcano.api.job_info import JobInfo, TaskInfo
from py_volcano.api.manifests import PREEMPTABLE_KEY
from py_volcano.api.node_info import NodeInfo

__all__ = [
    "JDB_MAX_UNAVAILABLE",
    "JDB_MIN_AVAILABLE",
    "REVOCABLE_ZONE_KEY",
    "JobBudget",
    "has_preemptable_mark",
    "job_budget",
    "job_preemptable",
    "node_revocable_zone",
    "parse_go_bool",
    "task_revocable_zone",
]

REVOCABLE_ZONE_KEY = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
#: The pod annotations Volcano's podgroup controller copies onto a pod's own PodGroup (and the labels).
_COPIED_ANNOTATIONS = (PREEMPTABLE_KEY, REVOCABLE_ZONE_KEY, JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)
_COPIED_LABELS = (PREEMPTABLE_KEY,)
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_go_bool(text: str) -> bool | None:
    """Read a boolean as Go's strconv.ParseBool does; None when it is not one."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


def node_revocable_zone(node: NodeInfo) -> str:
    """Return the revocable zone a node's `volcano.sh/revocable-zone` label names ("" for an ordinary node)."""
    return node.labels.get(REVOCABLE_ZONE_KEY, "")


def task_revocable_zone(task: TaskInfo) -> str:
    """Return "*" when the pod may run on revocable nodes, else "" (Volcano's GetPodRevocableZone).

    The annotation `volcano.sh/revocable-zone` decides when present ("*" is the only zone value
    Volcano supports; any other is ""); else `volcano.sh/preemptable: "true"` as an annotation means "*".
    """
    zone = task.annotations.get(REVOCABLE_ZONE_KEY)
    if zone is not None:
        return zone if zone == "*" else ""
    return "*" if parse_go_bool(task.annotations.get(PREEMPTABLE_KEY, "")) else ""


def _marks(job: JobInfo) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """Return the annotations and labels of the job's PodGroup (for a one-pod job, the pod's copied keys)."""
    spec = job.pod_group
    if not spec.shadow or not job.tasks:
        return spec.annotations, spec.labels
    pod = next(iter(job.tasks.values()))
    annotations = {key: pod.annotations[key] for key in _COPIED_ANNOTATIONS if key in pod.annotations}
    labels = {key: pod.labels[key] for key in _COPIED_LABELS if key in pod.labels}
    return annotations, labels


def has_preemptable_mark(job: JobInfo) -> bool:
    """True when the job's PodGroup says `volcano.sh/preemptable` at all (annotation or label)."""
    annotations, labels = _marks(job)
    return PREEMPTABLE_KEY in annotations or PREEMPTABLE_KEY in labels


def job_preemptable(job: JobInfo) -> bool:
    """Return the PodGroup's `volcano.sh/preemptable` (annotation first, then label; unreadable or absent
    means False, as Volcano's JobInfo.Preemptable)."""
    annotations, labels = _marks(job)
    for marks in (annotations, labels):
        if PREEMPTABLE_KEY in marks:
            return parse_go_bool(marks[PREEMPTABLE_KEY]) is True
    return False


@dataclass(slots=True, frozen=True)
class JobBudget:
    """A job's disruption budget: at most one of the two is set (an int or a percentage, as written)."""

    min_available: str = ""
    max_unavailable: str = ""


def job_budget(job: JobInfo) -> JobBudget:
    """Return the budget the PodGroup's `volcano.sh/jdb-min-available` (first) or `jdb-max-unavailable` sets."""
    annotations, _ = _marks(job)
    if JDB_MIN_AVAILABLE in annotations:
        return JobBudget(min_available=annotations[JDB_MIN_AVAILABLE])
    if JDB_MAX_UNAVAILABLE in annotations:
        return JobBudget(max_unavailable=annotations[JDB_MAX_UNAVAILABLE])
    return JobBudget()
