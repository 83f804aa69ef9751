"""NodeLabelIndex: node labels (or fields) as integer codes per key, so that selector requirements,
node selector terms and topology pairs evaluate over every node at once.

A requirement becomes a lookup table over the key's distinct values (the last entry standing for
"label missing"), indexed by the nodes' codes: O(distinct values + nodes), no per-node Python.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from py_volcano.api import MaskArray, match_expression

__all__ = ["IntArray", "NodeLabelIndex"]

IntArray = npt.NDArray[np.int64]


class NodeLabelIndex:
    """Per label key, each node's value code (-1: the node lacks the key); built lazily per key."""

    __slots__ = ("_codes", "labels", "size")

    def __init__(self, labels: Sequence[Mapping[str, str]]) -> None:
        self.labels = labels
        self.size = len(labels)
        self._codes: dict[str, tuple[IntArray, dict[str, int]]] = {}

    def codes(self, key: str) -> tuple[IntArray, dict[str, int]]:
        """Return (code per node, value -> code) for `key`."""
        cached = self._codes.get(key)
        if cached is None:
            values: dict[str, int] = {}
            codes = np.fromiter(
                (
                    -1 if (value := labels.get(key)) is None else values.setdefault(value, len(values))
                    for labels in self.labels
                ),
                dtype=np.int64,
                count=self.size,
            )
            cached = self._codes[key] = (codes, values)
        return cached

    def has_key(self, key: str) -> MaskArray:
        """Return, per node, whether it has `key`."""
        result: MaskArray = self.codes(key)[0] >= 0
        return result

    def equals(self, key: str, value: str) -> MaskArray:
        """Return, per node, whether label `key` is `value`."""
        codes, values = self.codes(key)
        code = values.get(value)
        if code is None:
            return np.zeros(self.size, dtype=bool)
        result: MaskArray = codes == code
        return result

    def among(self, key: str, wanted: Collection[str]) -> MaskArray:
        """Return, per node, whether label `key` is one of `wanted` (False when missing)."""
        codes, values = self.codes(key)
        table = np.zeros(len(values) + 1, dtype=bool)
        table[[values[value] for value in wanted if value in values]] = True
        result: MaskArray = table[codes]
        return result

    def expression(self, expression: Mapping[str, Any]) -> MaskArray:
        """Evaluate one `{key, operator, values}` requirement on every node, as `match_expression` does."""
        key = expression.get("key", "")
        operator = expression.get("operator", "In")
        wanted = expression.get("values") or ()
        codes, values = self.codes(key)
        if operator in ("In", "NotIn"):
            table = np.full(len(values) + 1, operator == "NotIn", dtype=bool)
            table[[values[value] for value in wanted if value in values]] = operator == "In"
        elif operator in ("Exists", "DoesNotExist"):
            table = np.full(len(values) + 1, operator == "Exists", dtype=bool)
            table[-1] = operator == "DoesNotExist"
        else:
            table = np.fromiter(
                (match_expression(expression, {key: value}) for value in values),
                dtype=bool,
                count=len(values),
            )
            table = np.append(table, match_expression(expression, {}))
        result: MaskArray = table[codes]
        return result

    def all_of(self, expressions: Sequence[Mapping[str, Any]]) -> MaskArray:
        """Return, per node, whether every requirement holds (True when there is none)."""
        mask = np.ones(self.size, dtype=bool)
        for expression in expressions:
            mask &= self.expression(expression)
        return mask
