"""Shape checks for the nested parts of manifests that a cycle reads later: string maps, label
selectors, node and pod affinity, PodDisruptionBudget amounts.

The API server validates a pod's spec, but not a PodGroup's or a Queue's beyond their CRD schema, and
a scheduler must not trust either: everything a plugin walks during a cycle is checked here once, when
the object is parsed, so a malformed object is skipped with a message naming the field instead of
failing every cycle it is in. Each check raises `ShapeError(field, reason)`, the field relative to
the value checked; the parser prefixes its own path and turns it into the kind's `ObjectError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ShapeError", "check_affinity", "check_amount", "check_selector", "check_string_map"]

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_PERCENT = re.compile(r"^\d{1,3}%$")
#: Deeper than any real selector or affinity; bounds the walk over a hostile object.
_MAX_ITEMS = 10_000


class ShapeError(ValueError):
    """A nested value of the wrong shape: `field` (relative, e.g. `matchExpressions[0].values`) and why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _join(prefix: str, field: str) -> str:
    return f"{prefix}.{field}" if field and not field.startswith("[") else f"{prefix}{field}"


def _map(value: object, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ShapeError(field, "expected a map")
    return value


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(field, "expected a list")
    if len(value) > _MAX_ITEMS:
        raise ShapeError(field, f"more than {_MAX_ITEMS} items")
    return value


def _strings(value: object, field: str) -> list[str]:
    items = _list(value, field)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise ShapeError(f"{field}[{i}]", f"expected a string, got {item!r:.60}")
    return items


def check_string_map(value: object, field: str = "") -> Mapping[str, str]:
    """Return `value` as a map of strings to strings ({} for None); ShapeError otherwise."""
    result = _map(value, field)
    for key, item in result.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ShapeError(_join(field, str(key)), f"expected a string, got {item!r:.60}")
    return result


def _check_requirement(raw: object, field: str) -> None:
    requirement = _map(raw, field)
    if not isinstance(requirement.get("key", ""), str):
        raise ShapeError(f"{field}.key", "expected a string")
    operator = requirement.get("operator", "In")
    if not isinstance(operator, str) or operator not in _OPERATORS:
        raise ShapeError(f"{field}.operator", f"unknown operator {operator!r:.60}")
    _strings(requirement.get("values"), f"{field}.values")


def check_selector(value: object, field: str = "") -> None:
    """Check a label selector `{matchLabels, matchExpressions}` (None passes)."""
    selector = _map(value, field)
    check_string_map(selector.get("matchLabels"), _join(field, "matchLabels"))
    for i, requirement in enumerate(_list(selector.get("matchExpressions"), _join(field, "matchExpressions"))):
        _check_requirement(requirement, _join(field, f"matchExpressions[{i}]"))


def _check_node_term(value: object, field: str) -> None:
    term = _map(value, field)
    for key in ("matchExpressions", "matchFields"):
        for i, requirement in enumerate(_list(term.get(key), f"{field}.{key}")):
            _check_requirement(requirement, f"{field}.{key}[{i}]")


def _check_pod_term(value: object, field: str) -> None:
    term = _map(value, field)
    check_selector(term.get("labelSelector"), f"{field}.labelSelector")
    check_selector(term.get("namespaceSelector"), f"{field}.namespaceSelector")
    _strings(term.get("namespaces"), f"{field}.namespaces")
    if not isinstance(term.get("topologyKey", ""), str):
        raise ShapeError(f"{field}.topologyKey", "expected a string")


def _check_weight(value: object, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | None) or (value is not None and not 0 <= value <= 100):
        raise ShapeError(field, f"expected an integer 0..100, got {value!r:.60}")


def _check_node_affinity(value: object, field: str) -> None:
    section = _map(value, field)
    required_field = f"{field}.requiredDuringSchedulingIgnoredDuringExecution"
    required = _map(section.get("requiredDuringSchedulingIgnoredDuringExecution"), required_field)
    terms_field = f"{required_field}.nodeSelectorTerms"
    for i, term in enumerate(_list(required.get("nodeSelectorTerms"), terms_field)):
        _check_node_term(term, f"{terms_field}[{i}]")
    preferred_field = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(_list(section.get("preferredDuringSchedulingIgnoredDuringExecution"), preferred_field)):
        preferred = _map(raw, f"{preferred_field}[{i}]")
        _check_weight(preferred.get("weight"), f"{preferred_field}[{i}].weight")
        _check_node_term(preferred.get("preference"), f"{preferred_field}[{i}].preference")


def _check_pod_affinity(value: object, field: str) -> None:
    section = _map(value, field)
    required_field = f"{field}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(_list(section.get("requiredDuringSchedulingIgnoredDuringExecution"), required_field)):
        _check_pod_term(term, f"{required_field}[{i}]")
    preferred_field = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(_list(section.get("preferredDuringSchedulingIgnoredDuringExecution"), preferred_field)):
        preferred = _map(raw, f"{preferred_field}[{i}]")
        _check_weight(preferred.get("weight"), f"{preferred_field}[{i}].weight")
        _check_pod_term(preferred.get("podAffinityTerm"), f"{preferred_field}[{i}].podAffinityTerm")


def check_affinity(value: object, field: str = "") -> Mapping[str, Any]:
    """Return a pod's `affinity` ({} for None) once its node affinity and pod (anti-)affinity are well formed."""
    affinity = _map(value, field)
    _check_node_affinity(affinity.get("nodeAffinity"), _join(field, "nodeAffinity"))
    _check_pod_affinity(affinity.get("podAffinity"), _join(field, "podAffinity"))
    _check_pod_affinity(affinity.get("podAntiAffinity"), _join(field, "podAntiAffinity"))
    return affinity


def check_amount(value: object, field: str = "") -> int | str | None:
    """Return a PodDisruptionBudget amount: None, a non-negative integer or a percentage `0%`..`100%`."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) <= 100:
        return value
    raise ShapeError(field, f"expected an integer or a percentage, got {value!r:.60}")
