"""Volcano's `volcano-scheduler.conf`: actions, tiers of plugins with switches and arguments.

Parsed with pydantic at the edge, validated against a registry once, then turned into frozen
dataclasses (`SchedulerConf`) before any session opens. An unset `enabledXxx` switch means on;
both `enabledXxx` and `enableXxx` spellings are accepted (BEHAVIOUR.md, Configuration).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from py_volcano.errors import ConfigError

__all__ = ["SWITCHES", "Arguments", "PluginOption", "SchedulerConf", "default_conf_text", "parse_conf"]

SWITCHES = (
    "job_order",
    "namespace_order",
    "hierarchy",
    "job_ready",
    "job_pipelined",
    "task_order",
    "preemptable",
    "reclaimable",
    "preemptive",
    "queue_order",
    "cluster_order",
    "predicate",
    "best_node",
    "node_order",
    "target_job",
    "reserved_nodes",
    "job_enqueued",
    "victim",
    "job_starving",
    "overused",
    "allocatable",
)


def _camel(switch: str) -> str:
    head, *rest = switch.split("_")
    return head.capitalize() + "".join(part.capitalize() for part in rest)


_SWITCH_KEYS = {f"{prefix}{_camel(s)}": s for s in SWITCHES for prefix in ("enabled", "enable")}


class Arguments(Mapping[str, Any]):
    """A plugin's or action's `arguments` map with typed getters that warn and keep the default."""

    def __init__(self, values: Mapping[str, Any] | None = None, *, owner: str = "") -> None:
        self._values = dict(values or {})
        self._owner = owner

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def _typed(self, key: str, default: Any, kinds: tuple[type, ...], convert: Any) -> Any:
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, bool) and bool not in kinds:
            value = None
        try:
            if isinstance(value, kinds) or (isinstance(value, str) and value.strip()):
                return convert(value)
        except ValueError:
            pass
        warnings.warn(f"{self._owner}: argument {key}: cannot use {value!r}, keeping {default!r}", stacklevel=3)
        return default

    def get_int(self, key: str, default: int) -> int:
        """Return an integer argument."""
        result: int = self._typed(key, default, (int,), int)
        return result

    def get_float(self, key: str, default: float) -> float:
        """Return a number argument."""
        result: float = self._typed(key, default, (int, float), float)
        return result

    def get_bool(self, key: str, default: bool) -> bool:
        """Return a boolean argument (`true`/`false` strings accepted)."""

        def convert(value: Any) -> bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"

        result: bool = self._typed(key, default, (bool,), convert)
        return result


@dataclass(slots=True, frozen=True)
class PluginOption:
    """One plugin in a tier: its name, its switches (unset = on) and its arguments."""

    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def is_enabled(self, switch: str) -> bool:
        """Return the switch; a switch that is not written means on."""
        return self.switches.get(switch, True)


@dataclass(slots=True, frozen=True)
class SchedulerConf:
    """Actions in order, tiers of plugins, per-action arguments."""

    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def plugin_names(self) -> list[str]:
        """Return every plugin named in the tiers, in order."""
        return [option.name for tier in self.tiers for option in tier]


class _PluginModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class _TierModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plugins: list[_PluginModel] = Field(default_factory=list)


class _ConfigurationModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class _ConfModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    actions: str
    tiers: list[_TierModel] = Field(default_factory=list)
    configurations: list[_ConfigurationModel] = Field(default_factory=list)


def _plugin_option(model: _PluginModel, where: str) -> PluginOption:
    switches: dict[str, bool] = {}
    for key, value in (model.model_extra or {}).items():
        switch = _SWITCH_KEYS.get(key)
        if switch is None:
            warnings.warn(f"{where}: plugin {model.name}: unknown key {key!r} ignored", stacklevel=4)
            continue
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: plugin {model.name}: key {key}: expected true or false, got {value!r}")
        switches[switch] = value
    return PluginOption(name=model.name, switches=switches, arguments=dict(model.arguments))


def parse_conf(
    text: str, *, actions: Collection[str], plugins: Collection[str], source: str = "scheduler conf"
) -> SchedulerConf:
    """Parse and validate a configuration; ConfigError names the source, the action or plugin, and the key."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a map with 'actions' and 'tiers'")
    try:
        model = _ConfModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{source}: key {location}: {first['msg']}") from None
    for key in model.model_extra or {}:
        warnings.warn(f"{source}: unknown key {key!r} ignored", stacklevel=2)
    names = tuple(name.strip() for name in model.actions.split(",") if name.strip())
    if not names:
        raise ConfigError(f"{source}: key actions: no action named")
    for name in names:
        if name not in actions:
            raise ConfigError(f"{source}: action {name!r} is unknown (known: {', '.join(sorted(actions))})")
    tiers = tuple(tuple(_plugin_option(p, source) for p in tier.plugins) for tier in model.tiers)
    for tier in tiers:
        for option in tier:
            if option.name not in plugins:
                raise ConfigError(f"{source}: plugin {option.name!r} is unknown (known: {', '.join(sorted(plugins))})")
    configurations = {c.name: dict(c.arguments) for c in model.configurations}
    for name in configurations:
        if name not in actions:
            raise ConfigError(f"{source}: configurations: action {name!r} is unknown")
    return SchedulerConf(actions=names, tiers=tiers, configurations=configurations)


def default_conf_text() -> str:
    """Return the packaged default configuration (Volcano's shipped default)."""
    return resources.files("py_volcano.framework").joinpath("default.conf").read_text()
