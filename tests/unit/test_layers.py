"""The import-linter contracts hold, can break, and name every module; the simulator loads no IO."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import py_volcano

PACKAGE = Path(py_volcano.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
#: `lint-imports` run by this interpreter, wherever its script is.
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]
CYCLE_CONTRACT = "The cycle never reaches the API server, the runner or the metrics"


def _lint_copy(tmp_path: Path, *, append: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Copy the package and pyproject.toml to `tmp_path`, append lines to some modules, lint the copy."""
    shutil.copytree(PACKAGE, tmp_path / "py_volcano", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    for module, line in (append or {}).items():
        with (tmp_path / module).open("a") as file:
            file.write(f"\n{line}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run(
        [*LINT_IMPORTS, "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_contracts_hold_on_an_unmodified_copy(tmp_path: Path) -> None:
    """The copy lints clean: the check below breaks because of the added import, not the copying."""
    linted = _lint_copy(tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert f"{CYCLE_CONTRACT} KEPT" in linted.stdout


def test_a_plugin_importing_the_binder_breaks_the_contract(tmp_path: Path) -> None:
    """A plugin that reaches for the cache's Binder breaks the cycle's contract."""
    linted = _lint_copy(tmp_path, append={"py_volcano/plugins/priority.py": "from py_volcano.cache import Binder"})
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert f"{CYCLE_CONTRACT} BROKEN" in linted.stdout
    assert "py_volcano.plugins.priority -> py_volcano.cache" in linted.stdout


def _contract(name: str) -> dict[str, Any]:
    contracts: list[dict[str, Any]] = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    return next(contract for contract in contracts if contract["name"] == name)


def _top_level_modules() -> set[str]:
    names = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    names |= {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    return {f"py_volcano.{name}" for name in names}


def test_the_bottom_layers_forbid_every_other_module() -> None:
    """api may import only errors, the cache only api, errors, settings and aio: a new top-level module
    is forbidden to them until the contract says otherwise."""
    modules = _top_level_modules()
    api = _contract("api imports nothing of py_volcano but errors")
    cache = _contract("The cache sits on api only (and errors, settings, aio)")
    assert set(api["forbidden_modules"]) == modules - {"py_volcano.api", "py_volcano.errors"}
    allowed_to_cache = {f"py_volcano.{name}" for name in ("cache", "api", "errors", "settings", "aio")}
    assert set(cache["forbidden_modules"]) == modules - allowed_to_cache


def test_the_simulator_loads_no_io_module() -> None:
    """Importing the simulator (which feeds the cache's Store) loads neither the cache's IO modules nor
    the Kubernetes clients: only the store and its pure-memory backlog, pod order, pod text, JSON codec and
    shown copies."""
    probe = (
        "import sys, py_volcano.simulation; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('kopf', 'kubernetes', 'aiohttp') "
        "or (m.startswith('py_volcano.cache.') and m not in ('py_volcano.cache.store', "
        "'py_volcano.cache.backlog_jobs', 'py_volcano.cache.pod_order', 'py_volcano.cache.pod_text', "
        "'py_volcano.cache.json_codec', 'py_volcano.cache.shown')))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert loaded == []


def test_the_controller_reaching_for_the_store_breaks_its_contract(tmp_path: Path) -> None:
    """The PodGroup controller reads the store only through the view the runner hands it."""
    linted = _lint_copy(
        tmp_path, append={"py_volcano/controller/owners.py": "from py_volcano.cache.store import Store"}
    )
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert "The PodGroup controller sits on api and the cache's client only BROKEN" in linted.stdout
    assert "py_volcano.controller.owners -> py_volcano.cache.store" in linted.stdout
