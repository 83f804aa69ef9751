"""The scenario file (docs/scenarios.md): a cluster as manifests, a configuration, expectations."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from py_volcano.errors import ScenarioError

__all__ = ["Expect", "MeasuredUsage", "Scenario", "load_scenario"]

KINDS = {
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Namespace"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("policy/v1", "PodDisruptionBudget"),
}


class Expect(BaseModel):
    """The checks of a scenario; every key given must hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    bound: dict[str, str] | None = None
    unbound: list[str] | None = None
    bound_count: int | None = Field(default=None, alias="boundCount")
    evicted: list[str] | None = None
    evicted_at_least: list[str] | None = Field(default=None, alias="evictedAtLeast")
    evicted_count: int | None = Field(default=None, alias="evictedCount")
    pod_group_phase: dict[str, str] | None = Field(default=None, alias="podGroupPhase")
    queues: dict[str, dict[str, Any]] | None = None


class MeasuredUsage(BaseModel):
    """One node's measured load in percent, as the metrics poller would read it from Prometheus."""

    model_config = ConfigDict(extra="forbid")

    cpu: float = Field(default=0.0, ge=0, le=100)
    memory: float = Field(default=0.0, ge=0, le=100)


class Scenario(BaseModel):
    """A whole scenario file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    scheduler_config: str | None = Field(default=None, alias="schedulerConfig")
    objects: list[dict[str, Any]]
    cycles: int = Field(default=1, ge=1)
    now: datetime | None = None
    node_usage: dict[str, MeasuredUsage] = Field(default_factory=dict, alias="nodeUsage")
    expect: Expect

    @field_validator("now")
    @classmethod
    def _now_has_offset(cls, now: datetime | None) -> datetime | None:
        if now is not None and now.tzinfo is None:
            raise ValueError("needs a UTC offset (add +00:00 or Z)")
        return now

    @field_validator("objects")
    @classmethod
    def _objects_have_identity(cls, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, obj in enumerate(objects):
            for key in ("apiVersion", "kind"):
                if not isinstance(obj.get(key), str):
                    raise ValueError(f"objects[{index}]: missing required field {key}")
            meta = obj.get("metadata")
            if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
                raise ValueError(f"objects[{index}] ({obj['kind']}): missing required field metadata.name")
        return objects


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario; ScenarioError names the file and what is wrong, on one line."""
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: expected a map with name, objects and expect")
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "scenario"
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "missing":
            message = "missing required field"
        raise ScenarioError(f"{path}: {location}: {message}") from None
