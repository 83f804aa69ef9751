"""The slice of Kubernetes CRD schema rules our two CRDs use: a structural check and a validator.

Both refuse any schema keyword they do not implement, so a rule added to a CRD cannot be
silently ignored by the tests. Unknown object fields are errors (what `kubectl apply` does with
strict field validation), except inside the root `metadata`, which the API server checks itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]

_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
_KEYWORDS = {
    "type",
    "description",
    "properties",
    "additionalProperties",
    "items",
    "required",
    "enum",
    "default",
    "minimum",
    "maximum",
    "pattern",
    "format",
    "anyOf",
    "x-kubernetes-int-or-string",
}
_FORMATS = {"int32": "integer", "int64": "integer", "date-time": "string"}
_INT32 = (-(2**31), 2**31 - 1)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def is_int_or_string(node: dict[str, Any]) -> bool:
    return node.get("x-kubernetes-int-or-string") is True


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its path (`.spec.weight`, `.spec.capability.*`, `.items[]`)."""
    yield path, node
    for name, child in (node.get("properties") or {}).items():
        yield from walk(child, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}.*")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")


def structural_errors(root: dict[str, Any]) -> list[str]:
    """Where `root` (an openAPIV3Schema) breaks structural-schema rules or uses a keyword we do not check."""
    errors: list[str] = []
    if root.get("type") != "object":
        errors.append("<root>: type must be object")
    if (root.get("properties") or {}).get("metadata") not in (None, {"type": "object"}):
        errors.append(".metadata: only `type: object` is allowed at the root metadata")
    for path, node in walk(root):
        errors.extend(_node_errors(path or "<root>", node))
    return errors


def _node_errors(path: str, node: dict[str, Any]) -> Iterator[str]:
    for key in node.keys() - _KEYWORDS:
        yield f"{path}: unsupported keyword {key!r}"
    kind = node.get("type")
    if is_int_or_string(node):
        if kind is not None:
            yield f"{path}: x-kubernetes-int-or-string must not set type"
        if node.get("anyOf", INT_OR_STRING_ANY_OF) != INT_OR_STRING_ANY_OF:
            yield f"{path}: anyOf of an int-or-string must be exactly integer, string"
    else:
        if kind not in _TYPES:
            yield f"{path}: every node needs a type, got {kind!r}"
        if "anyOf" in node:
            yield f"{path}: anyOf is only allowed for x-kubernetes-int-or-string"
    if kind != "object" and ("properties" in node or "additionalProperties" in node or "required" in node):
        yield f"{path}: properties/additionalProperties/required need type object"
    if kind == "object":
        if "properties" in node and "additionalProperties" in node:
            yield f"{path}: properties and additionalProperties are mutually exclusive"
        if "additionalProperties" in node and not isinstance(node["additionalProperties"], dict):
            yield f"{path}: additionalProperties must be a schema, not a boolean"
        for name in node.get("required", []):
            if name not in (node.get("properties") or {}):
                yield f"{path}: required field {name!r} is not a property"
    if (kind == "array") != ("items" in node):
        yield f"{path}: arrays, and only arrays, have items"
    if "items" in node and not isinstance(node["items"], dict):
        yield f"{path}: items must be a single schema"
    if "pattern" in node:
        if kind != "string" and not is_int_or_string(node):
            yield f"{path}: pattern on a non-string"
        else:
            re.compile(node["pattern"])
    if ("minimum" in node or "maximum" in node) and kind not in ("integer", "number"):
        yield f"{path}: minimum/maximum on a non-number"
    if "format" in node and _FORMATS.get(node["format"]) != kind:
        yield f"{path}: format {node['format']!r} does not fit type {kind!r}"
    for value in node.get("enum", []):
        for error in validate(value, node, path=path):
            yield f"enum value {value!r} is invalid: {error}"
    if "default" in node:
        for error in validate(node["default"], node, path=path):
            yield f"default {node['default']!r} is invalid: {error}"


def validate(value: Any, schema: dict[str, Any], *, path: str = "") -> list[str]:
    """Errors of `value` against `schema`; an empty list means valid."""
    errors: list[str] = []
    _validate(value, schema, path, errors)
    return errors


def validate_object(obj: dict[str, Any], root: dict[str, Any]) -> list[str]:
    """Errors of a whole custom object; `metadata` is left to the API server, as Kubernetes does."""
    body = {key: value for key, value in obj.items() if key != "metadata"}
    errors = validate(body, root)
    if not isinstance(obj.get("metadata"), dict):
        errors.append(".metadata: must be an object")
    return errors


def _validate(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    where = path or "<root>"
    if is_int_or_string(schema):
        if isinstance(value, bool) or not isinstance(value, int | str):
            errors.append(f"{where}: {value!r} is neither an integer nor a string")
        elif isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
        return
    if not _has_type(value, schema["type"]):
        errors.append(f"{where}: {value!r} is not of type {schema['type']}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: {value!r} is less than the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{where}: {value!r} is greater than the maximum {schema['maximum']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    fmt = schema.get("format")
    if fmt == "int32" and not _INT32[0] <= value <= _INT32[1]:
        errors.append(f"{where}: {value!r} does not fit in int32")
    if fmt == "date-time" and not _RFC3339.match(value):
        errors.append(f"{where}: {value!r} is not an RFC 3339 date-time")
    if schema["type"] == "object":
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{where}: missing required field {name!r}")
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                _validate(item, properties[key], f"{path}.{key}", errors)
            elif isinstance(extra, dict):
                _validate(item, extra, f"{path}.{key}", errors)
            else:
                errors.append(f"{where}: unknown field {key!r}")
    if schema["type"] == "array":
        for index, item in enumerate(value):
            _validate(item, schema["items"], f"{path}[{index}]", errors)


def _has_type(value: Any, kind: str) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "integer": isinstance(value, int),
        "number": isinstance(value, int | float),
        "boolean": False,
    }[kind]
