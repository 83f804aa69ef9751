"""ResourceQuotas as the API server keeps them, in memory: each pod created is charged to the quotas of its
namespace that match its scopes, or refused, and each quota's `status` (`hard`, `used`) is written as
the resourcequota controller writes it, so the scheduler's snapshot holds what it would on a cluster.

What a pod uses is Kubernetes' pod evaluator: `pods` (while not Succeeded or Failed) and `count/pods`;
`cpu`/`requests.cpu`, `memory`/`requests.memory`, `ephemeral-storage`/`requests.ephemeral-storage`,
`limits.*`, hugepages and `requests.<extended resource>`, from the pod's requests and limits (the sum
over containers, at least each init container's, plus overhead). A quota naming cpu, memory or
ephemeral-storage requests or limits requires every container to give them. Scopes: Terminating,
NotTerminating, BestEffort, NotBestEffort, and `scopeSelector` on PriorityClass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from py_volcano.api import match_expression, parse_quantity
from py_volcano.errors import ScenarioError

__all__ = ["QuotaLedger", "pod_limits", "pod_requests", "pod_usage"]

Manifest = dict[str, Any]

_VALIDATED = ("cpu", "memory", "ephemeral-storage")
_REQUESTS = "requests."
_LIMITS = "limits."
_TERMINAL = ("Succeeded", "Failed")


def _amounts(value: object) -> dict[str, float]:
    """A resource list in base units; unreadable entries are left out (the pod parser reports them)."""
    amounts: dict[str, float] = {}
    if isinstance(value, Mapping):
        for name, quantity in value.items():
            try:
                amounts[str(name)] = parse_quantity(quantity)
            except ValueError:
                continue
    return amounts


def _aggregate(pod: Manifest, part: str, *, overhead: bool) -> dict[str, float]:
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for name, value in _amounts(((container or {}).get("resources") or {}).get(part)).items():
            total[name] = total.get(name, 0.0) + value
    for container in spec.get("initContainers") or []:
        for name, value in _amounts(((container or {}).get("resources") or {}).get(part)).items():
            total[name] = max(total.get(name, 0.0), value)
    if overhead:
        for name, value in _amounts(spec.get("overhead")).items():
            total[name] = total.get(name, 0.0) + value
    return total


def pod_requests(pod: Manifest, *, overhead: bool = True) -> dict[str, float]:
    """Kubernetes' PodRequests: containers summed, raised to each init container's, plus overhead."""
    return _aggregate(pod, "requests", overhead=overhead)


def pod_limits(pod: Manifest, *, overhead: bool = True) -> dict[str, float]:
    """Kubernetes' PodLimits, the same way."""
    return _aggregate(pod, "limits", overhead=overhead)


def _compute_usage(requests: Mapping[str, float], limits: Mapping[str, float]) -> dict[str, float]:
    """podComputeUsageHelper: the quota names a set of requests and limits uses."""
    usage = {"pods": 1.0}
    for name in _VALIDATED:
        if name in requests:
            usage[name] = usage[_REQUESTS + name] = requests[name]
        if name in limits:
            usage[_LIMITS + name] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[_REQUESTS + name] = value
        elif name not in _VALIDATED and name != "pods":
            usage[_REQUESTS + name] = value
    return usage


def pod_usage(pod: Manifest) -> dict[str, float]:
    """What the pod counts against a quota (a terminal pod: its object count only)."""
    usage = {"count/pods": 1.0}
    if (pod.get("status") or {}).get("phase") in _TERMINAL:
        return usage
    return {**usage, **_compute_usage(pod_requests(pod), pod_limits(pod))}


def _best_effort(pod: Manifest) -> bool:
    for part in ("requests", "limits"):
        for kind in ("containers", "initContainers"):
            for container in (pod.get("spec") or {}).get(kind) or []:
                if set(_amounts(((container or {}).get("resources") or {}).get(part))) & {"cpu", "memory"}:
                    return False
    return True


def _in_scope(quota: Manifest, pod: Manifest) -> bool:
    spec = quota.get("spec") or {}
    terminating = isinstance((pod.get("spec") or {}).get("activeDeadlineSeconds"), int)
    checks = {
        "Terminating": terminating,
        "NotTerminating": not terminating,
        "BestEffort": _best_effort(pod),
        "NotBestEffort": not _best_effort(pod),
    }
    for scope in spec.get("scopes") or []:
        if not checks.get(scope, False):
            return False
    for requirement in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        scope = requirement.get("scopeName")
        if scope == "PriorityClass":
            expression = {"key": "class", "operator": requirement.get("operator"), "values": requirement.get("values")}
            class_name = (pod.get("spec") or {}).get("priorityClassName")
            if not match_expression(expression, {"class": class_name} if class_name else {}):
                return False
        elif not checks.get(str(scope), False):
            return False
    return True


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class QuotaLedger:
    """The scenario's ResourceQuotas with what their namespaces use, kept as pods come and go."""

    __slots__ = ("hard", "quotas", "source", "used")

    def __init__(self, quotas: Iterable[Manifest], *, source: str) -> None:
        self.source = source
        self.quotas = list(quotas)
        self.hard: dict[str, dict[str, float]] = {}
        self.used: dict[str, dict[str, float]] = {}
        for quota in self.quotas:
            hard = (quota.get("spec") or {}).get("hard") or {}
            try:
                self.hard[_key(quota)] = {str(name): parse_quantity(value) for name, value in hard.items()}
            except (ValueError, AttributeError) as exc:
                raise ScenarioError(f"{source}: ResourceQuota {_key(quota)}: field spec.hard: {exc}") from None
            self.used[_key(quota)] = dict.fromkeys(self.hard[_key(quota)], 0.0)

    def _matching(self, pod: Manifest) -> list[Manifest]:
        namespace = pod["metadata"].get("namespace") or "default"
        return [
            quota
            for quota in self.quotas
            if (quota["metadata"].get("namespace") or "default") == namespace and _in_scope(quota, pod)
        ]

    def charge(self, pod: Manifest, where: str) -> None:
        """Charge a pod being created to its quotas; ScenarioError when one refuses it."""
        usage = pod_usage(pod)
        matching = self._matching(pod)
        for quota in matching:
            key, hard = _key(quota), self.hard[_key(quota)]
            missing = [name for name in hard if _unspecified(pod, name)]
            if missing:
                raise ScenarioError(f"{where}: refused: failed quota: {key}: must specify {', '.join(sorted(missing))}")
            over = [name for name, limit in hard.items() if self.used[key][name] + usage.get(name, 0.0) > limit]
            if over:
                raise ScenarioError(f"{where}: refused: exceeded quota: {key}, limited: {', '.join(sorted(over))}")
        for quota in matching:
            used = self.used[_key(quota)]
            for name in used:
                used[name] += usage.get(name, 0.0)

    def recount(self, pods: Iterable[Manifest]) -> None:
        """The resourcequota controller: recompute every quota's use from the pods that exist now."""
        for used in self.used.values():
            for name in used:
                used[name] = 0.0
        for pod in pods:
            usage = pod_usage(pod)
            for quota in self._matching(pod):
                used = self.used[_key(quota)]
                for name in used:
                    used[name] += usage.get(name, 0.0)

    def write_status(self) -> list[Manifest]:
        """Write `status.hard` and `status.used` on every quota manifest; return those that changed."""
        changed = []
        for quota in self.quotas:
            key = _key(quota)
            status = {
                "hard": dict((quota.get("spec") or {}).get("hard") or {}),
                "used": {name: _format(value) for name, value in self.used[key].items()},
            }
            if quota.get("status") != status:
                quota["status"] = status
                changed.append(quota)
        return changed


def _unspecified(pod: Manifest, name: str) -> bool:
    """A quota on cpu, memory or ephemeral-storage requests or limits needs every container to give it."""
    part, _, resource = name.rpartition(".")
    if resource not in _VALIDATED or part not in ("", "requests", "limits"):
        return False
    part = part or "requests"
    for kind in ("containers", "initContainers"):
        for container in (pod.get("spec") or {}).get(kind) or []:
            if resource not in (((container or {}).get("resources") or {}).get(part) or {}):
                return True
    return False


def _format(value: float) -> str:
    """A base-unit amount as a quantity string (milli units when not whole)."""
    return str(int(value)) if float(value).is_integer() else f"{round(value * 1000)}m"
