"""Plugins, one module (or folder) each, and the table that names them."""

from collections.abc import Mapping

from py_volcano.framework import PluginBuilder
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

PLUGINS: Mapping[str, PluginBuilder] = {
    priority.NAME: priority.new,
    gang.NAME: gang.new,
    conformance.NAME: conformance.new,
    overcommit.NAME: overcommit.new,
    capacity.NAME: capacity.new,
    drf.NAME: drf.new,
    proportion.NAME: proportion.new,
    predicates.NAME: predicates.new,
    nodeorder.NAME: nodeorder.new,
    binpack.NAME: binpack.new,
}
