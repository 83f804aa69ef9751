"""The dependency locks (hack/lock.sh) agree with pyproject.toml: every dependency pinned at a version its
specifier admits, every pin with hashes, so that `pip install --require-hashes` (hack/test.sh, the
Dockerfile) installs what pyproject.toml asks for and nothing unverified."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)")


def pins(lock: str) -> dict[str, tuple[Version, int]]:
    """Return each pinned package of a lock with its version and the number of hashes that follow it."""
    found: dict[str, tuple[Version, int]] = {}
    current = ""
    for line in (ROOT / lock).read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match[1])
            found[current] = (Version(match[2]), 0)
        elif line.strip().startswith("--hash=sha256:") and current:
            version, hashes = found[current]
            found[current] = (version, hashes + 1)
    return found


def declared(*, dev: bool) -> list[Requirement]:
    """Return the requirements pyproject.toml declares (with the dev extra) and its build backend's."""
    project = PYPROJECT["project"]
    names = list(project["dependencies"]) + list(PYPROJECT["build-system"]["requires"])
    if dev:
        names += project["optional-dependencies"]["dev"]
    return [Requirement(name) for name in names]


@pytest.mark.parametrize(("lock", "dev"), [("requirements.lock", False), ("requirements-dev.lock", True)])
def test_the_lock_pins_every_declared_dependency_at_an_admitted_version_with_hashes(lock: str, dev: bool) -> None:
    """A dependency added or tightened in pyproject.toml without `hack/lock.sh` fails here."""
    locked = pins(lock)
    assert locked, f"{lock} pins nothing"
    for requirement in declared(dev=dev):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{lock}: {requirement.name} is not pinned: run hack/lock.sh"
        version, _ = locked[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock}: {requirement.name}=={version} is outside {requirement.specifier}: run hack/lock.sh"
        )
    unhashed = sorted(name for name, (_, hashes) in locked.items() if hashes == 0)
    assert not unhashed, f"{lock}: pinned without a hash: {unhashed}"


def test_the_runtime_lock_is_the_dev_lock_without_the_dev_tools() -> None:
    """The image runs exactly the versions CI tested."""
    runtime, dev = pins("requirements.lock"), pins("requirements-dev.lock")
    assert {name: version for name, (version, _) in runtime.items()} == {
        name: dev[name][0] for name in runtime
    }
