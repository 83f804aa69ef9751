"""Sessions over manifests for plugin tests, at a given wall-clock time, with PDBs and any plugin config."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from py_volcano.api import JobInfo, parse_pdb, parse_resource_quota
from py_volcano.framework import Session, open_session, parse_conf
from tests.builders import cluster
from tests.unit.actions.sessions import registry


def at(seconds: float) -> datetime:
    """The wall-clock time `seconds` after the epoch (objects built by `tests.builders` are created at 0, 1, ...)."""
    return datetime.fromtimestamp(seconds, UTC)


def open_at(conf: str, *objects: dict[str, Any], now: float = 1000.0) -> Session:
    """Open a session over the manifests (PodDisruptionBudgets and ResourceQuotas included) at time `now`."""
    reg = registry()
    snapshot = cluster(*(o for o in objects if o["kind"] not in ("PodDisruptionBudget", "ResourceQuota")))
    snapshot.pdbs = [parse_pdb(o) for o in objects if o["kind"] == "PodDisruptionBudget"]
    snapshot.resource_quotas = [parse_resource_quota(o) for o in objects if o["kind"] == "ResourceQuota"]
    return open_session(snapshot, parse_conf(conf, reg), reg, now=at(now))


def job(ssn: Session, name: str) -> JobInfo:
    """The job of the PodGroup (or one-pod group) named `name`."""
    return next(j for j in ssn.jobs.values() if j.name == name)


def annotated(manifest: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    """The manifest with `annotations` added."""
    manifest["metadata"].setdefault("annotations", {}).update(annotations)
    return manifest


def resource_quota(
    *, name: str, namespace: str = "default", hard: dict[str, str], used: dict[str, str]
) -> dict[str, Any]:
    """A ResourceQuota manifest whose status the quota controller has written."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": dict(hard)},
        "status": {"hard": dict(hard), "used": dict(used)},
    }
