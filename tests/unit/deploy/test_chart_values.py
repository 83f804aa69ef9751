"""charts/py-volcano: every value is described, typed by values.schema.json, and listed in README.md.

The schema itself is exercised by the real helm in e2e/test_chart.py (invalid values refused).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "py-volcano"
GENERATOR = REPO / "hack" / "chart-readme.py"


def test_readme_lists_every_value_and_is_current() -> None:
    """`hack/chart-readme.py --check`: every value has a description and the README's table is fresh."""
    result = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def _leaves(tree: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(tree, dict) and tree:
        return [leaf for key, value in tree.items() for leaf in _leaves(value, (*path, key))]
    return [path]


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        properties = schema.get("properties")
        if properties is None:
            return schema if schema.get("type") == "object" else None
        if key not in properties:
            return None
        schema = properties[key]
    return schema


def test_schema_knows_every_default_value_and_refuses_unknown_keys() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert schema["additionalProperties"] is False, "a typo in a value name must fail at helm install"
    unknown = [".".join(leaf) for leaf in _leaves(values) if _schema_at(schema, leaf) is None]
    assert unknown == []
    assert set(schema["properties"]) - set(values) == {"global"}, "the schema describes nothing values.yaml lacks"


def test_readme_table_rows_name_real_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    text = (CHART / "README.md").read_text()
    table = text.split("<!-- values:start -->")[1].split("<!-- values:end -->")[0]
    names = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert len(names) >= 40
    for name in names:
        node = values
        for key in name.split("."):
            node = node[key]
