"""Scenario collection: the repository's own folder, configured folders, and folders that hold nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.scenario_files import EXTRA_DIRS_VARIABLE, SCENARIO_DIR, configured_dirs, scenario_files


def _touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("name: x\n")


def test_files_come_sorted_per_folder_in_folder_order(tmp_path: Path) -> None:
    """Each folder's YAML files, sorted; folders keep the order they are given in."""
    _touch(tmp_path / "b", "z.yaml", "a.yaml", "notes.md")
    _touch(tmp_path / "a", "m.yaml")
    files = scenario_files(tmp_path / "b", tmp_path / "a")
    assert [(p.parent.name, p.name) for p in files] == [("b", "a.yaml"), ("b", "z.yaml"), ("a", "m.yaml")]


@pytest.mark.parametrize(
    "contents",
    [
        pytest.param(None, id="missing folder"),
        pytest.param((), id="empty folder"),
        pytest.param(("README.md", "scenario.yml"), id="folder without *.yaml"),
    ],
)
def test_a_folder_without_scenarios_is_a_usage_error_naming_it(
    tmp_path: Path, contents: tuple[str, ...] | None
) -> None:
    """A configured folder that holds no scenario stops collection instead of yielding zero tests."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    _touch(good, "one.yaml")
    if contents is not None:
        _touch(bad, *contents)
    with pytest.raises(pytest.UsageError, match=str(bad)):
        scenario_files(good, bad)


def test_configured_folders_split_on_the_path_separator() -> None:
    """$E2E_SCENARIO_DIR lists folders separated by os.pathsep; empty entries are ignored."""
    value = os.pathsep.join(["one", "", "two/three"])
    assert configured_dirs({EXTRA_DIRS_VARIABLE: value}) == [Path("one"), Path("two/three")]
    assert configured_dirs({}) == []


def test_the_public_scenarios_live_in_the_repository() -> None:
    """The suites read scenarios from inside the repository only, the public ones included."""
    names = {path.name for path in scenario_files(SCENARIO_DIR)}
    assert {"proportion-three-queues.yaml", "gang-minmember-not-met.yaml", "capacity-hierarchy.yaml"} <= names
    assert SCENARIO_DIR.is_relative_to(Path(__file__).resolve().parents[2])
