"""Plugins, one module (or folder) each, and the table that names them with their argument parsers."""

from collections.abc import Mapping
from typing import Any

from py_volcano.framework import NoArgs, PluginEntry
from py_volcano.plugins import (
    binpack,
    capacity,
    cdp,
    conformance,
    deviceshare,
    drf,
    extender,
    gang,
    network_topology_aware,
    nodegroup,
    nodeorder,
    numaaware,
    overcommit,
    pdb,
    predicates,
    priority,
    proportion,
    rescheduling,
    resource_strategy_fit,
    resourcequota,
    sla,
    task_topology,
    tdm,
    usage,
)

__all__ = ["PLUGINS"]

PLUGINS: Mapping[str, PluginEntry[Any]] = {
    priority.NAME: PluginEntry(NoArgs.parse, priority.new),
    gang.NAME: PluginEntry(NoArgs.parse, gang.new),
    conformance.NAME: PluginEntry(NoArgs.parse, conformance.new),
    overcommit.NAME: PluginEntry(overcommit.OvercommitArgs.parse, overcommit.new),
    capacity.NAME: PluginEntry(capacity.CapacityArgs.parse, capacity.new),
    drf.NAME: PluginEntry(NoArgs.parse, drf.new),
    proportion.NAME: PluginEntry(NoArgs.parse, proportion.new),
    predicates.NAME: PluginEntry(predicates.PredicatesArgs.parse, predicates.new),
    nodeorder.NAME: PluginEntry(nodeorder.NodeOrderArgs.parse, nodeorder.new),
    numaaware.NAME: PluginEntry(numaaware.NumaAwareArgs.parse, numaaware.new),
    binpack.NAME: PluginEntry(binpack.BinpackArgs.parse, binpack.new),
    sla.NAME: PluginEntry(sla.SlaArgs.parse, sla.new),
    nodegroup.NAME: PluginEntry(nodegroup.NodeGroupArgs.parse, nodegroup.new),
    cdp.NAME: PluginEntry(NoArgs.parse, cdp.new),
    pdb.NAME: PluginEntry(NoArgs.parse, pdb.new),
    resourcequota.NAME: PluginEntry(NoArgs.parse, resourcequota.new),
    resource_strategy_fit.NAME: PluginEntry(
        resource_strategy_fit.ResourceStrategyFitArgs.parse, resource_strategy_fit.new
    ),
    task_topology.NAME: PluginEntry(task_topology.TaskTopologyArgs.parse, task_topology.new),
    tdm.NAME: PluginEntry(tdm.TdmArgs.parse, tdm.new),
    extender.NAME: PluginEntry(extender.ExtenderArgs.parse, extender.new),
    rescheduling.NAME: PluginEntry(rescheduling.ReschedulingArgs.parse, rescheduling.new),
    deviceshare.NAME: PluginEntry(deviceshare.DeviceShareArgs.parse, deviceshare.new),
    network_topology_aware.NAME: PluginEntry(
        network_topology_aware.NetworkTopologyArgs.parse, network_topology_aware.new
    ),
    usage.NAME: PluginEntry(usage.UsageArgs.parse, usage.new),
}
