"""PlacedPods: the pods on each node as the predicates see them, indexed for the dynamic filters.

It starts from every task on a node in the snapshot and follows the session's statements through
event handlers: an allocated or pipelined task is added, an evicted or discarded one removed, as
Volcano's predicates plugin keeps its node map. Pods are grouped by (namespace, labels, terminating),
since a pod affinity term matches all pods of a group or none (topology spread skips terminating pods:
those with a deletionTimestamp in the snapshot); each group keeps, per topology key asked
for, how many of its pods sit in each topology domain (an array over the key's value codes). The
required anti-affinity terms of placed pods are kept the same way, one entry per distinct term.
`generation` changes with every update so that per-task results can be cached until the next one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from py_volcano.api import PodAffinityTerm, TaskID, TaskInfo, pod_affinity_terms
from py_volcano.plugins.predicates.labels import IntArray, NodeLabelIndex

__all__ = ["DEFAULT_BIND_ALL", "AffinityTerms", "AntiAffinityEntry", "LabelGroup", "PlacedPods", "PortUsers"]

DEFAULT_BIND_ALL = "0.0.0.0"

PortKey = tuple[str, int]
MaskArray = npt.NDArray[np.bool_]
GroupKey = tuple[str, frozenset[tuple[str, str]], bool]
Terms = tuple[PodAffinityTerm, ...]


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple | frozenset | set):
        return tuple(sorted((_freeze(v) for v in value), key=repr))
    return value


def term_key(term: PodAffinityTerm) -> object:
    """A hashable identity of a term: equal terms of different pods share it."""
    return _freeze((term.selector, term.namespaces, term.namespace_selector, term.topology_key))


class AffinityTerms:
    """Each task's required pod affinity and anti-affinity terms, parsed once per task."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[TaskID, tuple[Terms, Terms]] = {}

    def required(self, task: TaskInfo) -> tuple[Terms, Terms]:
        """Return (required affinity terms, required anti-affinity terms)."""
        terms = self._cache.get(task.uid)
        if terms is None:
            affinity, namespace = task.affinity, task.namespace
            terms = self._cache[task.uid] = (
                pod_affinity_terms(affinity, namespace, anti=False, preferred=False) if affinity else (),
                pod_affinity_terms(affinity, namespace, anti=True, preferred=False) if affinity else (),
            )
        return terms


def _counts(index: NodeLabelIndex, key: str, rows: Mapping[int, int]) -> IntArray:
    """Pods per value code of `key` (last slot: nodes without the key) for pods on `rows` (row -> pods)."""
    codes, values = index.codes(key)
    counts = np.zeros(len(values) + 1, dtype=np.int64)
    for row, pods in rows.items():
        counts[codes[row]] += pods
    return counts


class LabelGroup:
    """The placed pods of one namespace with one label set: pods per node row, and per topology domain."""

    __slots__ = ("_by_key", "index", "labels", "namespace", "rows", "terminating")

    def __init__(
        self, namespace: str, labels: Mapping[str, str], index: NodeLabelIndex, *, terminating: bool = False
    ) -> None:
        self.namespace = namespace
        self.labels = labels
        self.terminating = terminating
        self.index = index
        self.rows: Counter[int] = Counter()
        self._by_key: dict[str, IntArray] = {}

    def update(self, row: int, delta: int) -> None:
        """Add `delta` pods on node row `row`."""
        self.rows[row] += delta
        if self.rows[row] <= 0:
            del self.rows[row]
        for key, counts in self._by_key.items():
            counts[self.index.codes(key)[0][row]] += delta

    def by_key(self, key: str) -> IntArray:
        """Return pods per value code of topology key `key` (kept up to date from now on; do not modify)."""
        counts = self._by_key.get(key)
        if counts is None:
            counts = self._by_key[key] = _counts(self.index, key, self.rows)
        return counts


class AntiAffinityEntry:
    """One distinct required anti-affinity term of placed pods: how many hold it in each topology domain."""

    __slots__ = ("counts", "pods", "term")

    def __init__(self, term: PodAffinityTerm, index: NodeLabelIndex) -> None:
        self.term = term
        self.counts = _counts(index, term.topology_key, {})
        self.pods = 0


class PlacedPods:
    """Pods by uid, label group and namespace; host ports and required anti-affinity terms indexed."""

    __slots__ = ("anti_affinity", "by_uid", "generation", "groups", "index", "ports", "terms")

    def __init__(self, terms: AffinityTerms, index: NodeLabelIndex) -> None:
        self.terms = terms
        self.index = index
        self.by_uid: dict[TaskID, tuple[int, TaskInfo, bool]] = {}
        self.groups: dict[str, dict[GroupKey, LabelGroup]] = {}
        self.ports: dict[PortKey, PortUsers] = {}
        self.anti_affinity: dict[object, AntiAffinityEntry] = {}
        self.generation = 0

    def add(self, task: TaskInfo, row: int, *, terminating: bool = False) -> None:
        """Record `task` on node row `row` (replacing an earlier record of it); `terminating` for a pod
        being deleted."""
        self.remove(task)
        self.by_uid[task.uid] = (row, task, terminating)
        self._index(task, row, 1, terminating)

    def remove(self, task: TaskInfo) -> None:
        """Forget `task`; a task not recorded is ignored."""
        entry = self.by_uid.pop(task.uid, None)
        if entry is not None:
            self._index(entry[1], entry[0], -1, entry[2])

    def _index(self, task: TaskInfo, row: int, delta: int, terminating: bool) -> None:
        key: GroupKey = (task.namespace, frozenset(task.labels.items()), terminating)
        groups = self.groups.setdefault(task.namespace, {})
        group = groups.get(key)
        if group is None:
            group = groups[key] = LabelGroup(task.namespace, task.labels, self.index, terminating=terminating)
        group.update(row, delta)
        if not group.rows:
            del groups[key]
        for ip, protocol, port in task.host_ports:
            if port > 0:
                self._port(ip, (protocol, port), row, delta)
        for term in self.terms.required(task)[1]:
            self._anti_term(term, row, delta)
        self.generation += 1

    def _port(self, ip: str, port: PortKey, row: int, delta: int) -> None:
        users = self.ports.get(port)
        if users is None:
            users = self.ports[port] = PortUsers(self.index.size)
        users.update(ip, row, delta)
        if not users.total.any():
            del self.ports[port]

    def _anti_term(self, term: PodAffinityTerm, row: int, delta: int) -> None:
        identity = term_key(term)
        entry = self.anti_affinity.get(identity)
        if entry is None:
            entry = self.anti_affinity[identity] = AntiAffinityEntry(term, self.index)
        entry.counts[self.index.codes(term.topology_key)[0][row]] += delta
        entry.pods += delta
        if entry.pods <= 0:
            del self.anti_affinity[identity]

    def port_conflicts(self, wanted: Sequence[tuple[str, str, int]]) -> MaskArray | None:
        """Return, per node, whether a wanted (hostIP, protocol, hostPort) is taken; None when nowhere."""
        result: MaskArray | None = None
        for ip, protocol, port in wanted:
            users = self.ports.get((protocol, port)) if port > 0 else None
            if users is not None:
                taken = users.conflicts(ip)
                result = taken if result is None else result | taken
        return result

    def has_port_conflict(self, wanted: Sequence[tuple[str, str, int]], row: int) -> bool:
        """True when some wanted host port is taken on node row `row`."""
        for ip, protocol, port in wanted:
            users = self.ports.get((protocol, port)) if port > 0 else None
            if users is not None and users.conflicts_on(ip, row):
                return True
        return False


class PortUsers:
    """Who holds one (protocol, hostPort): pods per node row, in total and per host IP."""

    __slots__ = ("by_ip", "total")

    def __init__(self, size: int) -> None:
        self.total: IntArray = np.zeros(size, dtype=np.int64)
        self.by_ip: dict[str, IntArray] = {}

    def update(self, ip: str, row: int, delta: int) -> None:
        """Add `delta` pods holding the port on `ip` at node row `row`."""
        self.total[row] += delta
        if ip not in self.by_ip:
            self.by_ip[ip] = np.zeros(len(self.total), dtype=np.int64)
        self.by_ip[ip][row] += delta

    def conflicts(self, ip: str) -> MaskArray:
        """Per node: 0.0.0.0 conflicts with any IP on the port; another IP with itself and 0.0.0.0."""
        if ip == DEFAULT_BIND_ALL:
            result: MaskArray = self.total > 0
            return result
        taken = np.zeros(len(self.total), dtype=bool)
        for held in (ip, DEFAULT_BIND_ALL):
            if held in self.by_ip:
                taken |= self.by_ip[held] > 0
        return taken

    def conflicts_on(self, ip: str, row: int) -> bool:
        """The same check for one node row."""
        if ip == DEFAULT_BIND_ALL:
            return bool(self.total[row] > 0)
        return any(held in self.by_ip and self.by_ip[held][row] > 0 for held in (ip, DEFAULT_BIND_ALL))
