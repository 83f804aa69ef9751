"""What a real API server does to a scenario's pods when they are created, played in memory.

The scheduler only ever sees pods as the API server stored them, so `simulate` first plays, for each pod
in listing order, the default admission plugins that change scheduling (kube-apiserver 1.36, in its
order; docs/scenarios.md, "What the API server does"):

1. defaulting: a container's missing requests are taken from its limits;
2. LimitRanger: the pod's namespace's LimitRanges give containers their default limits and requests
   (a Container item's `default`, and `defaultRequest`, itself defaulted from `default`, then `min`);
3. Priority: `spec.priority` (and `preemptionPolicy`) from `priorityClassName`, or from the global
   default class, or 0; the built-in `system-cluster-critical` and `system-node-critical` exist;
4. DefaultTolerationSeconds: tolerations of `node.kubernetes.io/not-ready` and `unreachable`
   (NoExecute, 300 s) unless the pod has them;
5. RuntimeClass: the class's `overhead.podFixed` becomes the pod's `spec.overhead`, its
   `scheduling.nodeSelector` and `tolerations` are merged into the pod's;
6. validation: LimitRange `min`, `max` and `maxLimitRequestRatio` (Container and Pod items), and the
   pod's overhead against its RuntimeClass;
7. ResourceQuota (`quota.py`): the namespace's quotas are charged, or refuse the pod.

A pod the API server would refuse is a `ScenarioError` naming the pod, the field and the reason; a
malformed RuntimeClass or LimitRange too (the API server would not have stored it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from py_volcano.api import parse_quantity
from py_volcano.errors import ScenarioError
from py_volcano.simulation.quota import QuotaLedger, pod_limits, pod_requests

__all__ = ["SYSTEM_PRIORITY_CLASSES", "Admission"]

SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = tuple(
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    for name, value in (("system-cluster-critical", 2_000_000_000), ("system-node-critical", 2_000_001_000))
)
"""The classes every API server creates itself."""

_TOLERATED_FOR_300S = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_CONTAINER_KINDS = ("containers", "initContainers")

Manifest = dict[str, Any]


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _quantities(value: object, where: str) -> dict[str, float]:
    """A resource list as {name: value in base units}; ScenarioError names `where` when malformed."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a map of resource quantities")
    try:
        return {str(name): parse_quantity(amount) for name, amount in value.items()}
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def _containers(pod: Manifest) -> Iterable[tuple[str, Manifest]]:
    spec = pod.setdefault("spec", {})
    for kind in _CONTAINER_KINDS:
        for index, container in enumerate(spec.get(kind) or []):
            if isinstance(container, dict):
                yield f"spec.{kind}[{index}]", container


class _LimitRange:
    """One LimitRange's items, with the API server's defaulting of Container items applied."""

    __slots__ = ("default_limits", "default_requests", "items", "name")

    def __init__(self, obj: Mapping[str, Any], where: str) -> None:
        self.name = _key(obj)
        spec = obj.get("spec") or {}
        raw_items = spec.get("limits") if isinstance(spec, Mapping) else None
        if not isinstance(raw_items, list):
            raise ScenarioError(f"{where}: field spec.limits: expected a list of limit items")
        self.items: list[tuple[str, dict[str, dict[str, float]]]] = []
        self.default_limits: dict[str, Any] = {}
        self.default_requests: dict[str, Any] = {}
        for index, item in enumerate(raw_items):
            if not isinstance(item, Mapping) or item.get("type") not in ("Container", "Pod", "PersistentVolumeClaim"):
                raise ScenarioError(
                    f"{where}: field spec.limits[{index}].type: expected Container, Pod or PersistentVolumeClaim"
                )
            bounds = {
                part: _quantities(item.get(part), f"{where}: field spec.limits[{index}].{part}")
                for part in ("min", "max", "maxLimitRequestRatio", "default", "defaultRequest")
            }
            self.items.append((str(item["type"]), bounds))
            if item["type"] == "Container":
                limits = {**dict(item.get("max") or {}), **dict(item.get("default") or {})}
                requests = {**dict(item.get("min") or {}), **limits, **dict(item.get("defaultRequest") or {})}
                self.default_limits.update(limits)
                self.default_requests.update(requests)


class Admission:
    """The classes, LimitRanges and quotas a scenario holds, and the admission of its pods."""

    def __init__(self, objects: Iterable[Manifest], *, source: str) -> None:
        self.source = source
        self.runtime_classes: dict[str, Manifest] = {}
        self.limit_ranges: dict[str, list[_LimitRange]] = {}
        self.priority_classes: dict[str, Manifest] = {str(pc["metadata"]["name"]): pc for pc in SYSTEM_PRIORITY_CLASSES}
        quotas: list[Manifest] = []
        for obj in objects:
            kind, where = obj.get("kind"), f"{source}: {obj.get('kind')} {_key(obj)}"
            if kind == "RuntimeClass":
                self.runtime_classes[str(obj["metadata"]["name"])] = obj
                _quantities((obj.get("overhead") or {}).get("podFixed"), f"{where}: field overhead.podFixed")
            elif kind == "LimitRange":
                namespace = str(obj["metadata"].get("namespace") or "default")
                self.limit_ranges.setdefault(namespace, []).append(_LimitRange(obj, where))
            elif kind == "PriorityClass":
                self.priority_classes[str(obj["metadata"]["name"])] = obj
            elif kind == "ResourceQuota":
                quotas.append(obj)
        self.quotas = QuotaLedger(quotas, source=source)

    def admit(self, pods: Iterable[Manifest]) -> None:
        """Admit `pods` in order, changing them as the API server stores them; ScenarioError for a refused one."""
        for pod in pods:
            where = f"{self.source}: Pod {_key(pod)}"
            _default_requests_from_limits(pod)
            for limit_range in self.limit_ranges.get(str(pod["metadata"].get("namespace") or "default"), ()):
                _apply_container_defaults(pod, limit_range)
            self._priority(pod, where)
            _default_toleration_seconds(pod)
            self._runtime_class(pod, where)
            for limit_range in self.limit_ranges.get(str(pod["metadata"].get("namespace") or "default"), ()):
                _validate_limits(pod, limit_range, where)
            self.quotas.charge(pod, where)
        self.quotas.write_status()

    def _priority(self, pod: Manifest, where: str) -> None:
        """The Priority plugin: the class's value and preemption policy; a mismatch is refused."""
        spec = pod["spec"]
        name = spec.get("priorityClassName") or ""
        if name:
            pc = self.priority_classes.get(name)
            if pc is None:
                raise ScenarioError(
                    f"{where}: field spec.priorityClassName: no PriorityClass with name {name} was found"
                )
        else:
            defaults = [pc for pc in self.priority_classes.values() if pc.get("globalDefault") is True]
            pc = min(defaults, key=lambda c: int(c.get("value") or 0)) if defaults else None
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = int(pc.get("value") or 0) if pc is not None else 0
        policy = str((pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")
        if spec.get("priority") is not None and spec["priority"] != value:
            raise ScenarioError(
                f"{where}: field spec.priority: the integer value of priority ({spec['priority']}) must not be "
                f"provided in pod spec; priority admission controller computed {value} from the given "
                "PriorityClass name"
            )
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise ScenarioError(
                f"{where}: field spec.preemptionPolicy: {spec['preemptionPolicy']} must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name"
            )
        spec["priority"], spec["preemptionPolicy"] = value, policy

    def _runtime_class(self, pod: Manifest, where: str) -> None:
        """The RuntimeClass plugin: overhead set from the class (a different one refused), scheduling merged."""
        spec = pod["spec"]
        name = spec.get("runtimeClassName")
        runtime_class = self.runtime_classes.get(name) if name else None
        if name and runtime_class is None:
            raise ScenarioError(f"{where}: field spec.runtimeClassName: pod rejected: RuntimeClass {name!r} not found")
        fixed = ((runtime_class or {}).get("overhead") or {}).get("podFixed")
        own = spec.get("overhead")
        if fixed is None:
            if own is not None:
                raise ScenarioError(
                    f"{where}: field spec.overhead: pod rejected: Pod Overhead set without corresponding RuntimeClass "
                    "defined Overhead"
                )
        elif own and _quantities(own, f"{where}: field spec.overhead") != _quantities(fixed, where):
            raise ScenarioError(
                f"{where}: field spec.overhead: pod rejected: Pod's Overhead doesn't match RuntimeClass's "
                "defined Overhead"
            )
        else:
            spec["overhead"] = dict(fixed)
        scheduling = (runtime_class or {}).get("scheduling") or {}
        for key, value in (scheduling.get("nodeSelector") or {}).items():
            current = (spec.get("nodeSelector") or {}).get(key)
            if current is not None and current != value:
                raise ScenarioError(
                    f"{where}: field spec.nodeSelector: conflict: runtimeClass.scheduling.nodeSelector[{key}] = "
                    f"{value}; pod.spec.nodeSelector[{key}] = {current}"
                )
            spec.setdefault("nodeSelector", {})[key] = value
        tolerations = spec.setdefault("tolerations", [])
        tolerations += [t for t in scheduling.get("tolerations") or [] if t not in tolerations]


def _default_requests_from_limits(pod: Manifest) -> None:
    """Pod defaulting: a container's limits stand for the requests it does not give."""
    for _, container in _containers(pod):
        resources = container.setdefault("resources", {})
        limits = resources.get("limits") or {}
        if limits:
            requests = resources.setdefault("requests", {})
            for name, value in limits.items():
                requests.setdefault(name, value)


def _apply_container_defaults(pod: Manifest, limit_range: _LimitRange) -> None:
    """LimitRanger's mutation: default limits and requests for what each container leaves unset."""
    for _, container in _containers(pod):
        resources = container.setdefault("resources", {})
        for part, defaults in (("limits", limit_range.default_limits), ("requests", limit_range.default_requests)):
            if defaults:
                given = resources.setdefault(part, {})
                for name, value in defaults.items():
                    given.setdefault(name, value)


def _default_toleration_seconds(pod: Manifest) -> None:
    """DefaultTolerationSeconds: tolerate not-ready and unreachable nodes for 300 s unless already tolerated."""
    tolerations = pod["spec"].setdefault("tolerations", [])
    for key in _TOLERATED_FOR_300S:
        if not any(
            isinstance(t, Mapping) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
            for t in tolerations
        ):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})


def _validate_limits(pod: Manifest, limit_range: _LimitRange, where: str) -> None:
    """LimitRanger's validation of Container and Pod items: min, max and maxLimitRequestRatio."""
    for kind, bounds in limit_range.items:
        if kind == "Container":
            for path, container in _containers(pod):
                resources = container.get("resources") or {}
                requests = _quantities(resources.get("requests"), f"{where}: field {path}.resources.requests")
                limits = _quantities(resources.get("limits"), f"{where}: field {path}.resources.limits")
                _check_bounds(bounds, requests, limits, kind, f"{where}: field {path}.resources ({limit_range.name})")
        elif kind == "Pod":
            requests, limits = pod_requests(pod, overhead=False), pod_limits(pod, overhead=False)
            _check_bounds(bounds, requests, limits, kind, f"{where}: field spec.containers ({limit_range.name})")


def _check_bounds(
    bounds: Mapping[str, Mapping[str, float]],
    requests: Mapping[str, float],
    limits: Mapping[str, float],
    kind: str,
    where: str,
) -> None:
    for name, least in bounds["min"].items():
        if name not in requests or requests[name] < least or (name in limits and limits[name] < least):
            raise ScenarioError(f"{where}: minimum {name} usage per {kind} is {least:g}, but request or limit is lower")
    for name, most in bounds["max"].items():
        if name not in limits or limits[name] > most or (name in requests and requests[name] > most):
            raise ScenarioError(f"{where}: maximum {name} usage per {kind} is {most:g}, but no limit or a higher one")
    for name, ratio in bounds["maxLimitRequestRatio"].items():
        request, limit = requests.get(name, 0.0), limits.get(name, 0.0)
        if request == 0 or limit == 0 or limit / request > ratio:
            raise ScenarioError(f"{where}: {name} max limit to request ratio per {kind} is {ratio:g}")
