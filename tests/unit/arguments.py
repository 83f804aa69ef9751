"""Parse one plugin's or action's `arguments` the way the scheduler does: through a whole configuration."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from py_volcano.registry import load_conf


def plugin_args(name: str, arguments: Mapping[str, object]) -> object:
    """Return the parsed Args of plugin `name` given `arguments` (ConfigError as the loader raises it)."""
    plugin = {"name": name, "arguments": dict(arguments)}
    text = yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [plugin]}]})
    return load_conf(text).tiers[0][0].args


def action_args(name: str, arguments: Mapping[str, object]) -> object:
    """Return the parsed Args of action `name` given its `configurations` arguments."""
    text = yaml.safe_dump({"actions": name, "configurations": [{"name": name, "arguments": dict(arguments)}]})
    return load_conf(text).action_args[name]
