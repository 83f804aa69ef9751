"""Kubernetes label selectors and node selector terms, matched against a label map."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["match_expression", "match_label_selector", "match_node_selector_term"]


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
