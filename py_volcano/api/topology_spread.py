"""A pod's `topologySpreadConstraints`, read as Kubernetes' PodTopologySpread plugin reads them.

Defaults are Kubernetes' (1.36): `minDomains` 1, `nodeAffinityPolicy: Honor`, `nodeTaintsPolicy:
Ignore`; `matchLabelKeys` are merged into the selector as `key In (pod's value)` for the keys the pod
carries. A constraint the API server would refuse (maxSkew below 1, no topologyKey, an unknown
whenUnsatisfiable or policy, minDomains below 1 or with ScheduleAnyway, a repeated (topologyKey,
whenUnsatisfiable) pair, matchLabelKeys without a labelSelector or naming one of its keys) is an
`InvalidPod` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from py_volcano.api.selectors import match_label_selector
from py_volcano.errors import InvalidPod

__all__ = ["HOSTNAME_LABEL", "TopologySpreadConstraint", "topology_spread_constraints"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The topology key Kubernetes counts per node rather than per domain when scoring."""

_WHEN = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")


@dataclass(slots=True, frozen=True)
class TopologySpreadConstraint:
    """One constraint of a pod; `selector` None matches nothing, `{}` everything (LabelSelectorAsSelector)."""

    max_skew: int
    topology_key: str
    hard: bool
    """`whenUnsatisfiable: DoNotSchedule` (a filter); ScheduleAnyway is a score."""
    selector: Mapping[str, Any] | None
    min_domains: int = 1
    honor_node_affinity: bool = True
    """`nodeAffinityPolicy: Honor`: only nodes matching the pod's node selector and required affinity count."""
    honor_node_taints: bool = False
    """`nodeTaintsPolicy: Honor`: only nodes whose NoSchedule/NoExecute taints the pod tolerates count."""

    @property
    def counts_pods(self) -> bool:
        """False for a selector that selects nothing or is empty: Kubernetes counts no placed pod then."""
        selector = self.selector
        return selector is not None and bool(selector.get("matchLabels") or selector.get("matchExpressions"))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when a pod with `labels` is one the constraint selects (for the incoming pod's self-match)."""
        return self.selector is not None and match_label_selector(self.selector, labels)


def _field(index: int, name: str) -> str:
    return f"spec.topologySpreadConstraints[{index}].{name}"


def _selector(raw: Mapping[str, Any], labels: Mapping[str, str], pod: str, index: int) -> Mapping[str, Any] | None:
    """The labelSelector with matchLabelKeys merged in, as the API server and the scheduler merge them."""
    selector = raw.get("labelSelector")
    keys = raw.get("matchLabelKeys") or []
    if selector is not None and not isinstance(selector, Mapping):
        raise InvalidPod(pod, _field(index, "labelSelector"), "expected a map")
    if not isinstance(keys, list) or not all(isinstance(key, str) and key for key in keys):
        raise InvalidPod(pod, _field(index, "matchLabelKeys"), "expected a list of label keys")
    if not keys:
        return selector
    if selector is None:
        raise InvalidPod(pod, _field(index, "matchLabelKeys"), "must not be specified when labelSelector is not set")
    named = set(selector.get("matchLabels") or {}) | {e.get("key") for e in selector.get("matchExpressions") or ()}
    for key in keys:
        if key in named:
            raise InvalidPod(
                pod, _field(index, "matchLabelKeys"), f"{key!r} exists in both matchLabelKeys and labelSelector"
            )
    merged = [{"key": key, "operator": "In", "values": [labels[key]]} for key in keys if key in labels]
    if not merged:
        return selector
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or ()), *merged]}


def _positive(raw: Mapping[str, Any], key: str, pod: str, index: int, default: int | None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidPod(pod, _field(index, key), f"must be an integer >= 1, got {value!r}")
    return value


def _policy(raw: Mapping[str, Any], key: str, default: str, pod: str, index: int) -> bool:
    value = raw.get(key) or default
    if value not in _POLICIES:
        raise InvalidPod(pod, _field(index, key), f"must be Honor or Ignore, got {value!r}")
    return value == "Honor"


def topology_spread_constraints(
    spec: Mapping[str, Any], labels: Mapping[str, str], pod: str
) -> tuple[TopologySpreadConstraint, ...]:
    """Read `spec.topologySpreadConstraints` of pod `pod` (`ns/name`) carrying `labels`."""
    raw_list = spec.get("topologySpreadConstraints") or []
    if not isinstance(raw_list, list) or not all(isinstance(raw, Mapping) for raw in raw_list):
        raise InvalidPod(pod, "spec.topologySpreadConstraints", "expected a list of constraints")
    constraints: list[TopologySpreadConstraint] = []
    for index, raw in enumerate(raw_list):
        key, when = raw.get("topologyKey"), raw.get("whenUnsatisfiable")
        if not isinstance(key, str) or not key:
            raise InvalidPod(pod, _field(index, "topologyKey"), "must be a non-empty label key")
        if when not in _WHEN:
            raise InvalidPod(
                pod, _field(index, "whenUnsatisfiable"), f"must be one of {', '.join(_WHEN)}, got {when!r}"
            )
        if any(c.topology_key == key and c.hard == (when == "DoNotSchedule") for c in constraints):
            raise InvalidPod(pod, _field(index, "{topologyKey, whenUnsatisfiable}"), f"({key}, {when}) is repeated")
        if raw.get("minDomains") is not None and when != "DoNotSchedule":
            raise InvalidPod(pod, _field(index, "minDomains"), "can only be set with whenUnsatisfiable DoNotSchedule")
        constraints.append(
            TopologySpreadConstraint(
                max_skew=_positive(raw, "maxSkew", pod, index, None),
                topology_key=key,
                hard=when == "DoNotSchedule",
                selector=_selector(raw, labels, pod, index),
                min_domains=_positive(raw, "minDomains", pod, index, 1),
                honor_node_affinity=_policy(raw, "nodeAffinityPolicy", "Honor", pod, index),
                honor_node_taints=_policy(raw, "nodeTaintsPolicy", "Ignore", pod, index),
            )
        )
    return tuple(constraints)
