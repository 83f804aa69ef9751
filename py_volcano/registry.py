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
    """Parse a `volcano-scheduler.conf` text (the packaged default when None); ConfigError when unusable."""
    known = registry or default_registry()
    return parse_conf(
        default_conf_text() if text is None else text,
        actions=known.actions.keys(),
        plugins=known.plugins.keys(),
        source=source,
    )
