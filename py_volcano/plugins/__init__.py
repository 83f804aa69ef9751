"""Plugins, one module (or folder) each, and the table that names them with their argument parsers."""

from collections.abc import Mapping
from typing import Any

from py_volcano.framework import NoArgs, PluginEntry
from py_volcano.plugins import (
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
)

__all__ = ["PLUGINS"]

PLUGINS: Mapping[str, PluginEntry[Any]] = {
    priority.NAME: PluginEntry(NoArgs.parse, priority.new),
    gang.NAME: PluginEntry(NoArgs.parse, gang.new),
    conformance.NAME: PluginEntry(NoArgs.parse, conformance.new),
    overcommit.NAME: PluginEntry(overcommit.OvercommitArgs.parse, overcommit.new),
    capacity.NAME: PluginEntry(NoArgs.parse, capacity.new),
    drf.NAME: PluginEntry(NoArgs.parse, drf.new),
    proportion.NAME: PluginEntry(NoArgs.parse, proportion.new),
    predicates.NAME: PluginEntry(predicates.PredicatesArgs.parse, predicates.new),
    nodeorder.NAME: PluginEntry(nodeorder.NodeOrderArgs.parse, nodeorder.new),
    binpack.NAME: PluginEntry(binpack.BinpackArgs.parse, binpack.new),
}
