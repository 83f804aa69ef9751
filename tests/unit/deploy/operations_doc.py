"""The three tables of docs/operations.md (run flags, metrics, RBAC), read as the deployment's contract."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OPERATIONS_MD = REPO / "docs" / "operations.md"

_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: str  # gauge, counter or histogram
    labels: frozenset[str]


def table(heading: str, *, text: str | None = None) -> list[list[str]]:
    """Body rows (cells stripped) of the first Markdown table under the `## heading` section."""
    text = OPERATIONS_MD.read_text() if text is None else text
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise LookupError(f"docs/operations.md has no section '## {heading}'")
    rows = [line.strip() for line in match.group(1).splitlines() if line.strip().startswith("|")]
    if len(rows) < 3:
        raise LookupError(f"section '## {heading}' of docs/operations.md holds no table")
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def flags() -> set[str]:
    """Every flag `py-volcano run` accepts, e.g. {'--leader-elect', '--no-leader-elect', ...}."""
    return {flag for row in table("`py-volcano run` flags") for flag in re.findall(r"--[a-z][a-z-]*", row[0])}


def metrics() -> dict[str, Metric]:
    """The metric table. Labels come from the type cell (values in parentheses left out) and from the
    section's rule: queue metrics carry `queue_name`, scalar-resource metrics also `resource`."""
    found = {}
    for name_cell, type_cell, _meaning in table("Metrics"):
        (name,) = _CODE.findall(name_cell)
        kind = type_cell.split(",")[0].strip()
        labels = set(_CODE.findall(type_cell.split("(")[0]))
        if name.startswith("volcano_queue_"):
            labels.add("queue_name")
        if name.endswith("_scalar_resources"):
            labels.add("resource")
        found[name] = Metric(name=name, kind=kind, labels=frozenset(labels))
    return found


def rbac() -> set[tuple[str, str, str]]:
    """(API group, resource, verb) triples; the core group is ''."""
    triples = set()
    for group, resource, verbs in table("RBAC the scheduler uses"):
        api_group = "" if group == "core" else group
        triples |= {(api_group, resource, verb.strip()) for verb in verbs.split(",")}
    return triples
