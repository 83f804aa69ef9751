"""`hot_record`: frozen to the type checker, a plain slotted dataclass at run time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mypy import api as mypy

import py_volcano.api.records
from py_volcano.api.records import hot_record

SNIPPET = """
from py_volcano.api.records import hot_record


@hot_record
class Point:
    x: int
    y: int = 0


point = Point(1)
reveal_type(point.x)
point.x = 2
"""


def test_the_type_checker_rejects_an_assignment_to_a_field(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    records = str(Path(py_volcano.api.records.__file__))
    flags = ["--no-incremental", "--follow-imports=skip", "--cache-dir=/dev/null"]
    out, _, status = mypy.run([*flags, str(snippet), records])
    assert status == 1
    assert 'Revealed type is "int"' in out
    assert 'Property "x" defined in "Point" is read-only' in out
    assert "Found 1 error" in out


def test_at_run_time_it_is_a_slotted_dataclass_compared_by_value() -> None:
    @hot_record
    class Point:
        x: int
        y: int = 0

    point = Point(1)
    assert [field.name for field in dataclasses.fields(point)] == ["x", "y"]
    assert not hasattr(point, "__dict__")
    assert point == Point(1, 0) and point != Point(1, 2)
    assert dataclasses.replace(point, y=3) == Point(1, 3)
