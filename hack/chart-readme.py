#!/usr/bin/env python3
"""Write the values table of charts/py-volcano/README.md from values.yaml and values.schema.json.

Every value carries a `# -- description` comment in values.yaml (continued on the following `#`
lines); a block whose children carry none (resources, schedulerConfig, ...) is one row with its whole
default. Type and constraints come from values.schema.json, the default from values.yaml. The table
goes between the README's `<!-- values:start -->` and `<!-- values:end -->` markers.

usage: hack/chart-readme.py [--check]
  --check  write nothing; exit 1 when the README is not current or a value has no description
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parent.parent / "charts" / "py-volcano"
START, END = "<!-- values:start -->", "<!-- values:end -->"

_KEY = re.compile(r"^(\s*)([A-Za-z0-9_]+):(.*)$")
_DESCRIPTION = re.compile(r"^\s*# -- (.*)$")
_CONTINUED = re.compile(r"^\s*#\s?(.*)$")


def described_keys(text: str) -> dict[tuple[str, ...], str]:
    """Return {key path: description} of every key of values.yaml preceded by a `# --` comment."""
    described: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if (match := _DESCRIPTION.match(line)) is not None:
            pending = [match.group(1).strip()]
            continue
        if pending is not None and (match := _CONTINUED.match(line)) is not None:
            pending.append(match.group(1).strip())
            continue
        match = _KEY.match(line)
        if match is None or line.lstrip().startswith("-"):
            pending = None if not line.strip() else pending
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2)))
        if pending is not None:
            described[tuple(key for _, key in stack)] = " ".join(pending)
        pending = None
    return described


def _at(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        schema = schema.get("properties", {}).get(key, {})
    return schema


def _kind(schema: dict[str, Any], default: Any) -> str:
    options = schema.get("anyOf", [schema])
    kinds = []
    for option in options:
        if "enum" in option:
            kinds.append(" \\| ".join(f"`{value}`" for value in option["enum"]))
        elif "const" in option:
            kinds.append(f"`{json.dumps(option['const'])}`")
        elif "type" in option:
            kinds.append(option["type"])
    if kinds:
        return " or ".join(dict.fromkeys(kinds))
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}.get(type(default), "object")


def _constraints(schema: dict[str, Any]) -> str:
    notes = []
    for option in schema.get("anyOf", [schema]):
        if "minimum" in option:
            notes.append(f">= {option['minimum']}")
        if "exclusiveMinimum" in option:
            notes.append(f"> {option['exclusiveMinimum']}")
        if "maximum" in option:
            notes.append(f"<= {option['maximum']}")
    return f" ({', '.join(dict.fromkeys(notes))})" if notes else ""


def _default(value: Any) -> str:
    text = json.dumps(value, separators=(", ", ": "))
    return f"`{text}`".replace("|", "\\|")


def rows(values_text: str, schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Return the table rows and the dotted paths of values no row describes."""
    values = yaml.safe_load(values_text)
    described = described_keys(values_text)
    table, undocumented = [], []

    def walk(path: tuple[str, ...], value: Any) -> None:
        has_described_child = isinstance(value, dict) and any(
            key[: len(path)] == path and len(key) > len(path) for key in described
        )
        if path and path in described and not has_described_child:
            node = _schema_at(schema, path)
            kind = _kind(node, value) + _constraints(node)
            table.append(f"| `{'.'.join(path)}` | {kind} | {_default(value)} | {described[path]} |")
            return
        if isinstance(value, dict) and value and (has_described_child or not path):
            for key, child in value.items():
                walk((*path, key), child)
            return
        undocumented.append(".".join(path))

    walk((), values)
    return table, undocumented


def render(readme: str, table: list[str]) -> str:
    """Return the README with the table between its markers."""
    head, start, rest = readme.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"README.md lacks the {START} / {END} markers")
    body = ["", "| value | type | default | description |", "|---|---|---|---|", *table, ""]
    return head + START + "\n".join(body) + END + tail


def main(argv: list[str]) -> int:
    check = "--check" in argv
    values_text = (CHART / "values.yaml").read_text()
    schema = json.loads((CHART / "values.schema.json").read_text())
    table, undocumented = rows(values_text, schema)
    if undocumented:
        print(f"chart-readme: values without a `# --` description: {', '.join(undocumented)}", file=sys.stderr)
        return 1
    missing = [row.split("`")[1] for row in table if not _schema_at(schema, tuple(row.split("`")[1].split(".")))]
    if missing:
        print(f"chart-readme: values missing from values.schema.json: {', '.join(missing)}", file=sys.stderr)
        return 1
    readme_path = CHART / "README.md"
    current = readme_path.read_text()
    fresh = render(current, table)
    if check:
        if fresh != current:
            print("chart-readme: charts/py-volcano/README.md is stale: run hack/chart-readme.py", file=sys.stderr)
            return 1
        return 0
    readme_path.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
