"""PlacedPods: the pods on each node as the predicates see them, with the indexes the dynamic filters use.

It starts from every task on a node in the snapshot and follows the session's statements through
event handlers: an allocated or pipelined task is added, an evicted or discarded one removed, as
Volcano's predicates plugin keeps its node map. `generation` changes with every update so that
per-task results computed from it can be cached until the next placement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from scheduler.api import PodAffinityTerm, TaskID, TaskInfo, pod_affinity_terms

__all__ = ["DEFAULT_BIND_ALL", "AffinityTerms", "PlacedPods"]

DEFAULT_BIND_ALL = "0.0.0.0"

PortKey = tuple[str, int]


class AffinityTerms:
    """Each task's required pod affinity and anti-affinity terms, parsed once per task."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[TaskID, tuple[tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]] = {}

    def required(self, task: TaskInfo) -> tuple[tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]:
        """Return (required affinity terms, required anti-affinity terms)."""
        terms = self._cache.get(task.uid)
        if terms is None:
            affinity, namespace = task.affinity, task.namespace
            terms = self._cache[task.uid] = (
                pod_affinity_terms(affinity, namespace, anti=False, preferred=False) if affinity else (),
                pod_affinity_terms(affinity, namespace, anti=True, preferred=False) if affinity else (),
            )
        return terms


class PlacedPods:
    """Pods by uid and namespace with their node rows; host ports and required anti-affinity indexed."""

    __slots__ = ("anti_affinity", "by_namespace", "by_uid", "generation", "ports", "terms")

    def __init__(self, terms: AffinityTerms) -> None:
        self.terms = terms
        self.by_uid: dict[TaskID, tuple[int, TaskInfo]] = {}
        self.by_namespace: dict[str, dict[TaskID, tuple[int, TaskInfo]]] = {}
        self.ports: dict[PortKey, dict[int, Counter[str]]] = {}
        self.anti_affinity: dict[TaskID, tuple[int, tuple[PodAffinityTerm, ...]]] = {}
        self.generation = 0

    def add(self, task: TaskInfo, row: int) -> None:
        """Record `task` on node row `row` (replacing an earlier record of it)."""
        self.remove(task)
        entry = (row, task)
        self.by_uid[task.uid] = entry
        self.by_namespace.setdefault(task.namespace, {})[task.uid] = entry
        for ip, protocol, port in task.host_ports:
            if port > 0:
                self.ports.setdefault((protocol, port), {}).setdefault(row, Counter())[ip] += 1
        anti = self.terms.required(task)[1]
        if anti:
            self.anti_affinity[task.uid] = (row, anti)
        self.generation += 1

    def remove(self, task: TaskInfo) -> None:
        """Forget `task`; a task not recorded is ignored."""
        entry = self.by_uid.pop(task.uid, None)
        if entry is None:
            return
        row, held = entry
        del self.by_namespace[held.namespace][held.uid]
        for ip, protocol, port in held.host_ports:
            users = self.ports.get((protocol, port))
            if port <= 0 or users is None:
                continue
            ips = users[row]
            ips[ip] -= 1
            if ips[ip] <= 0:
                del ips[ip]
            if not ips:
                del users[row]
            if not users:
                del self.ports[(protocol, port)]
        self.anti_affinity.pop(held.uid, None)
        self.generation += 1

    def port_conflict_rows(self, wanted: Sequence[tuple[str, str, int]]) -> set[int]:
        """Return the node rows where some wanted (hostIP, protocol, hostPort) is taken (NodePorts)."""
        rows: set[int] = set()
        for ip, protocol, port in wanted:
            if port <= 0:
                continue
            for row, ips in self.ports.get((protocol, port), {}).items():
                if _conflicts(ip, ips):
                    rows.add(row)
        return rows

    def has_port_conflict(self, wanted: Sequence[tuple[str, str, int]], row: int) -> bool:
        """True when some wanted host port is taken on node row `row`."""
        for ip, protocol, port in wanted:
            ips = self.ports.get((protocol, port), {}).get(row) if port > 0 else None
            if ips and _conflicts(ip, ips):
                return True
        return False


def _conflicts(ip: str, used: Mapping[str, int]) -> bool:
    """0.0.0.0 conflicts with every IP of the same protocol and port; another IP with itself and 0.0.0.0."""
    return ip == DEFAULT_BIND_ALL or DEFAULT_BIND_ALL in used or ip in used
