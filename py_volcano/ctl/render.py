"""Output of the operator's commands: kubectl-style tables by default, JSON or YAML for scripts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

__all__ = ["FORMATS", "dump", "jobs_table", "queues_table", "table"]

#: The `-o` choices.
FORMATS = ("table", "json", "yaml")


def dump(value: Any, output: str) -> str:
    """Return `value` as JSON (indented, keys in the order built) or YAML."""
    if output == "yaml":
        return str(yaml.safe_dump(value, sort_keys=False, default_flow_style=False)).rstrip("\n")
    return json.dumps(value, indent=2)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Return left-aligned columns, three spaces apart, as kubectl prints them."""
    widths = [max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(headers)]
    lines = ["   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
             for line in (headers, *rows)]
    return "\n".join(lines)


def _triple(figures: Mapping[str, Any]) -> str:
    """`allocated/deserved/capability`: 0 when nothing is allocated, `-` for an unknown or unlimited figure."""
    return "/".join(
        str(figures.get(kind) or default)
        for kind, default in (("allocated", "0"), ("deserved", "-"), ("capability", "-"))
    )


def queues_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The `queues` table: one column per resource any queue names (allocated/deserved/capability)."""
    names: list[str] = []
    for row in rows:
        names += [name for name in row["resources"] if name not in names]
    headers = ["NAME", "STATE", "WEIGHT", "PARENT", "SHARE", "PENDING", "INQUEUE", "RUNNING"]
    headers += [f"{name.upper()} ALLOC/DESERVED/CAP" for name in names]
    cells = []
    for row in rows:
        share = row["share"]
        groups = row["podGroups"]
        line = [row["name"], row["state"], str(row["weight"]), row["parent"] or "-"]
        line += [f"{share:.2f}" if share is not None else "-"]
        line += [str(groups["pending"]), str(groups["inqueue"]), str(groups["running"])]
        line += [_triple(row["resources"].get(name) or {}) for name in names]
        cells.append(line)
    return table(headers, cells)


def jobs_table(rows: Sequence[Mapping[str, Any]], *, namespaces: bool) -> str:
    """The `jobs` table; the NAMESPACE column only when rows come from every namespace."""
    headers = ["NAME", "QUEUE", "PHASE", "MIN", "RUNNING", "PENDING", "AGE", "WAITING"]
    keys = ["name", "queue", "phase", "minMember", "running", "pending", "age", "waiting"]
    if namespaces:
        headers, keys = ["NAMESPACE", *headers], ["namespace", *keys]
    return table(headers, [[str(row[key]) if row[key] != "" else "-" for key in keys] for row in rows])
