"""The scheduler's own registry of actions and plugins, and loading a configuration against it."""

from __future__ import annotations

from py_volcano.actions import ACTIONS
from py_volcano.framework import Registry, SchedulerConf, default_conf_text, parse_conf
from py_volcano.plugins import PLUGINS

__all__ = ["default_registry", "load_conf"]


def default_registry() -> Registry:
    """Return every action and plugin py-volcano ships."""
    return Registry(plugins=PLUGINS, actions=ACTIONS)


def load_conf(text: str | None, *, source: str = "scheduler conf", registry: Registry | None = None) -> SchedulerConf:
    """Parse a `volcano-scheduler.conf` text (the packaged default when None), plugin and action arguments
    included, into a frozen SchedulerConf; ConfigError when unusable, naming the plugin or action, key and value."""
    return parse_conf(
        default_conf_text() if text is None else text, registry or default_registry(), source=source
    )
