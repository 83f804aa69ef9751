"""Where the scenario suites find their files: `tests/scenarios/` and any folders configured on top.

The in-memory suite (`tests/scenarios/test_scenarios.py`) and the real-API-server suite
(`e2e/test_scenarios.py`) both collect through `scenario_files`, so they play the same files; the
format is described in docs/scenarios.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

__all__ = ["EXTRA_DIRS_VARIABLE", "SCENARIO_DIR", "configured_dirs", "scenario_files"]

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
EXTRA_DIRS_VARIABLE = "E2E_SCENARIO_DIR"


def configured_dirs(environ: Mapping[str, str]) -> list[Path]:
    """Return the folders listed in `$E2E_SCENARIO_DIR`, separated by the OS path separator."""
    return [Path(folder) for folder in environ.get(EXTRA_DIRS_VARIABLE, "").split(os.pathsep) if folder]


def scenario_files(*folders: Path) -> list[Path]:
    """Return each folder's `*.yaml` files, sorted within a folder, folders in the order given.

    A folder that does not exist or holds no scenario raises `pytest.UsageError` naming it: a
    mistyped folder must stop the run, never collect zero tests.
    """
    files: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            raise pytest.UsageError(f"scenario folder {folder} does not exist or is not a folder")
        found = sorted(path for path in folder.glob("*.yaml") if path.is_file())
        if not found:
            raise pytest.UsageError(f"scenario folder {folder} holds no scenario (no *.yaml file)")
        files += found
    return files
