"""Volcano's `volcano-scheduler.conf`: actions, tiers of plugins with switches and arguments.

Parsed with pydantic at the edge, validated against a registry once, then turned into frozen
dataclasses (`SchedulerConf`) before any session opens; each plugin's and action's `arguments` are
parsed there, once, into its frozen Args by the registry's parser. An unset `enabledXxx` switch means
on; both `enabledXxx` and `enableXxx` spellings are accepted (docs/semantics.md, "Switches").

An action or plugin the registry does not know is left out and named in `SchedulerConf.unsupported`,
and the rest runs, as Volcano skips a plugin it has no builder for; the runner logs each one as an
error and exports it as a gauge, `simulate` reports it as a warning
(docs/semantics.md, "Unknown names").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from py_volcano.api import MetricsConf
from py_volcano.errors import ConfigError
from py_volcano.framework.arguments import Arguments, NoArgs
from py_volcano.framework.extension_points import SWITCHES
from py_volcano.framework.plugin import Registry

__all__ = ["PluginOption", "SchedulerConf", "default_conf_text", "parse_conf"]


def _camel(switch: str) -> str:
    head, *rest = switch.split("_")
    return head.capitalize() + "".join(part.capitalize() for part in rest)


_SWITCH_KEYS = {f"{prefix}{_camel(s)}": s for s in SWITCHES for prefix in ("enabled", "enable")}


@dataclass(slots=True, frozen=True)
class PluginOption:
    """One plugin in a tier: its name, its switches (unset = on) and its parsed, frozen arguments."""

    name: str
    switches: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    args: object = NoArgs()

    def is_enabled(self, switch: str) -> bool:
        """Return the switch; a switch that is not written means on."""
        return self.switches.get(switch, True)


@dataclass(slots=True, frozen=True)
class SchedulerConf:
    """Actions in order, tiers of plugins, and the parsed Args of every action in `actions` or `configurations`.

    `unsupported` lists the (`action` or `plugin`, name) pairs the file names but the registry lacks,
    each once, in written order: they are left out of `actions` and `tiers`. `metrics` is the
    `metrics` section: where the cache polls node usage from (docs/plugins.md, "usage").
    """

    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    action_args: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    unsupported: tuple[tuple[str, str], ...] = ()
    metrics: MetricsConf = field(default_factory=MetricsConf)

    def unsupported_messages(self, source: str) -> list[str]:
        """Return one line per unsupported name: what is left out, and that the rest runs."""
        return [
            f"{source}: {kind} {name!r} is not supported by py-volcano; it is skipped and the rest runs"
            for kind, name in self.unsupported
        ]


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
    metrics: dict[str, Any] | None = None


def _plugin_option(model: _PluginModel, registry: Registry, source: str) -> PluginOption:
    switches: dict[str, bool] = {}
    for key, value in (model.model_extra or {}).items():
        switch = _SWITCH_KEYS.get(key)
        if switch is None:
            warnings.warn(f"{source}: plugin {model.name}: unknown key {key!r} ignored", stacklevel=4)
            continue
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: plugin {model.name}: key {key}: expected true or false, got {value!r}")
        switches[switch] = value
    if switches.get("namespace_order"):
        # Volcano v1.8 removed namespace fair share (drf's namespace order); the switch is read by nothing.
        warnings.warn(
            f"{source}: plugin {model.name}: enableNamespaceOrder has no effect "
            "(Volcano removed namespace fair share in v1.8)",
            stacklevel=4,
        )
    args = _args(registry.plugins[model.name].parse, model.arguments, owner=f"{source}: plugin {model.name}")
    return PluginOption(name=model.name, switches=MappingProxyType(switches), args=args)


def _args(parse: Callable[[Arguments], object], values: Mapping[str, Any], *, owner: str) -> object:
    """Parse one `arguments` map; a key the parser did not read warns (Volcano ignores it)."""
    arguments = Arguments(values, owner=owner)
    parsed = parse(arguments)
    for key in arguments.unread():
        warnings.warn(f"{owner}: unknown argument {key!r} ignored", stacklevel=5)
    return parsed


def parse_conf(text: str, registry: Registry, *, source: str = "scheduler conf") -> SchedulerConf:
    """Parse and validate a configuration, arguments included, against the registry's actions and plugins.

    Names the registry lacks are left out and listed in `unsupported`. ConfigError names the source,
    the action or plugin, the key and, for an argument, the value.
    """
    model = _model(text, source)
    written = tuple(name.strip() for name in model.actions.split(",") if name.strip())
    if not written:
        raise ConfigError(f"{source}: key actions: no action named")
    _check_hierarchical_drf(model, source)
    plugins = [p for tier in model.tiers for p in tier.plugins]
    unsupported = [("action", name) for name in written if name not in registry.actions]
    unsupported += [("plugin", p.name) for p in plugins if p.name not in registry.plugins]
    unsupported += [("action", c.name) for c in model.configurations if c.name not in registry.actions]
    names = tuple(name for name in written if name in registry.actions)
    tiers = tuple(
        tuple(_plugin_option(p, registry, source) for p in tier.plugins if p.name in registry.plugins)
        for tier in model.tiers
    )
    configured = {c.name: c.arguments for c in model.configurations if c.name in registry.actions}
    action_args = {
        name: _args(registry.actions[name].parse, configured.get(name, {}), owner=f"{source}: action {name}")
        for name in dict.fromkeys((*names, *configured))
    }
    return SchedulerConf(
        actions=names,
        tiers=tiers,
        action_args=MappingProxyType(action_args),
        unsupported=tuple(dict.fromkeys(unsupported)),
        metrics=_metrics(model, source),
    )


def _metrics(model: _ConfModel, source: str) -> MetricsConf:
    """Parse the `metrics` section; a source py-volcano does not read is named in a warning."""
    metrics = MetricsConf.parse(model.metrics, source=source)
    if metrics.type and not metrics.collects:
        warnings.warn(
            f"{source}: key metrics.type: {metrics.type!r} is not supported by py-volcano "
            "(only prometheus); node usage is not collected",
            stacklevel=4,
        )
    return metrics


def _check_hierarchical_drf(model: _ConfModel, source: str) -> None:
    """Refuse drf with `enableHierarchy: true` beside proportion in one tier, as Volcano refuses the file."""
    for position, tier in enumerate(model.tiers):
        names = {p.name for p in tier.plugins}
        hierarchical = any(
            p.name == "drf"
            and any((p.model_extra or {}).get(key) is True for key in ("enableHierarchy", "enabledHierarchy"))
            for p in tier.plugins
        )
        if hierarchical and "proportion" in names:
            raise ConfigError(
                f"{source}: tiers[{position}]: proportion and drf with hierarchy enabled conflict "
                "(hierarchical drf orders queues itself)"
            )


def _model(text: str, source: str) -> _ConfModel:
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
        warnings.warn(f"{source}: unknown key {key!r} ignored", stacklevel=4)
    return model


def default_conf_text() -> str:
    """Return the packaged default configuration (Volcano's shipped default)."""
    return resources.files("py_volcano.framework").joinpath("default.conf").read_text()
