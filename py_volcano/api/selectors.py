"""Kubernetes label selectors, node selector terms and pod affinity terms, matched against a label map."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "PodAffinityTerm",
    "match_expression",
    "match_label_selector",
    "match_node_selector_term",
    "pod_affinity_terms",
]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def match_expression(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Match one `{key, operator, values}` requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    key = expression.get("key", "")
    operator = expression.get("operator", "In")
    values: Sequence[str] = expression.get("values") or ()
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            left, right = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def match_label_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Match a `{matchLabels, matchExpressions}` selector; an empty selector matches everything."""
    if not selector:
        return True
    match_labels: Mapping[str, str] = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    return all(match_expression(expr, labels) for expr in selector.get("matchExpressions") or ())


def match_node_selector_term(
    term: Mapping[str, Any], labels: Mapping[str, str], fields: Mapping[str, str] | None = None
) -> bool:
    """Match a node selector term (matchExpressions on labels, matchFields on `metadata.name`)."""
    expressions = term.get("matchExpressions") or ()
    match_fields = term.get("matchFields") or ()
    if not expressions and not match_fields:
        return False
    if not all(match_expression(expr, labels) for expr in expressions):
        return False
    return all(match_expression(expr, fields or {}) for expr in match_fields)


@dataclass(slots=True, frozen=True)
class PodAffinityTerm:
    """One pod (anti-)affinity term resolved against the pod declaring it (Kubernetes' AffinityTerm).

    A `None` selector matches nothing and `{}` everything, as LabelSelectorAsSelector. A namespace's
    labels are taken to be only `kubernetes.io/metadata.name`, which Kubernetes sets on every namespace.
    """

    selector: Mapping[str, Any] | None
    namespaces: frozenset[str]
    namespace_selector: Mapping[str, Any] | None
    topology_key: str
    weight: int = 1

    def matches_namespace(self, namespace: str) -> bool:
        """True when `namespace` is in the term's scope: listed, or chosen by its namespace selector."""
        return namespace in self.namespaces or (
            self.namespace_selector is not None
            and match_label_selector(self.namespace_selector, {NAMESPACE_NAME_LABEL: namespace})
        )

    def matches(self, labels: Mapping[str, str], namespace: str) -> bool:
        """True when a pod with `labels` in `namespace` is one this term selects."""
        return (
            self.matches_namespace(namespace)
            and self.selector is not None
            and match_label_selector(self.selector, labels)
        )


def _affinity_term(raw: Mapping[str, Any], namespace: str, weight: int) -> PodAffinityTerm:
    names = raw.get("namespaces") or ()
    namespace_selector = raw.get("namespaceSelector")
    if not names and namespace_selector is None:
        names = (namespace,)
    return PodAffinityTerm(
        selector=raw.get("labelSelector"),
        namespaces=frozenset(names),
        namespace_selector=namespace_selector,
        topology_key=str(raw.get("topologyKey") or ""),
        weight=weight,
    )


def pod_affinity_terms(
    affinity: Mapping[str, Any], namespace: str, *, anti: bool, preferred: bool
) -> tuple[PodAffinityTerm, ...]:
    """Return the required or preferred podAffinity (or podAntiAffinity) terms of a pod in `namespace`."""
    section = affinity.get("podAntiAffinity" if anti else "podAffinity") or {}
    if not preferred:
        raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        return tuple(_affinity_term(term, namespace, 1) for term in raw if isinstance(term, Mapping))
    weighted = section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(
        _affinity_term(term.get("podAffinityTerm") or {}, namespace, int(term.get("weight") or 0))
        for term in weighted
        if isinstance(term, Mapping)
    )
