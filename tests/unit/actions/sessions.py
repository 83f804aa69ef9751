"""Sessions over manifests for action tests: the shipped actions and plugins, plus test-only plugins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from py_volcano.actions import ACTIONS
from py_volcano.api import TaskInfo, parse_pdb
from py_volcano.framework import PluginEntry, Registry, Session, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from tests.builders import cluster


def registry(extra: Mapping[str, PluginEntry[Any]] | None = None) -> Registry:
    """The shipped registry, with test plugins added."""
    return Registry(plugins={**PLUGINS, **(extra or {})}, actions=ACTIONS)


def session(
    conf: str, *objects: dict[str, Any], plugins: Mapping[str, PluginEntry[Any]] | None = None
) -> Session:
    """Open a session over the manifests (PodDisruptionBudgets included) with the configuration text."""
    reg = registry(plugins)
    snapshot = cluster(*(o for o in objects if o["kind"] != "PodDisruptionBudget"))
    snapshot.pdbs = [parse_pdb(o) for o in objects if o["kind"] == "PodDisruptionBudget"]
    parsed = parse_conf(conf, reg)
    return open_session(snapshot, parsed, reg)


def task(ssn: Session, name: str, namespace: str = "default") -> TaskInfo:
    """The job's own task named `name`."""
    return next(
        t
        for job in ssn.jobs.values()
        for t in job.tasks.values()
        if t.name == name and t.namespace == namespace
    )


def pdb(
    *,
    name: str,
    match: dict[str, str],
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    allowed: int | None = None,
) -> dict[str, Any]:
    """A PodDisruptionBudget manifest in `default`."""
    spec: dict[str, Any] = {"selector": {"matchLabels": match}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    if allowed is not None:
        body["status"] = {"disruptionsAllowed": allowed}
    return body
