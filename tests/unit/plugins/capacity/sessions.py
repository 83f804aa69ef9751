"""Open sessions with the capacity plugin (flat, or hierarchical by switch) and read its state."""

from __future__ import annotations

from typing import Any

from py_volcano.actions import ACTIONS
from py_volcano.api import QueueID, Resource, TaskInfo
from py_volcano.framework import Registry, SchedulerConf, Session, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.capacity.attrs import QueueAttr, QueueTree
from py_volcano.plugins.capacity.plugin import CapacityPlugin
from tests.builders import cluster, pod

GI = 2.0**30
GPU = "nvidia.com/gpu"
REGISTRY = Registry(plugins={name: PLUGINS[name] for name in ("priority", "gang", "capacity")}, actions=ACTIONS)


def conf(switch: str = "") -> SchedulerConf:
    """Tier 1 priority and gang, tier 2 capacity with `switch` (e.g. `enableHierarchy: true`) written."""
    line = f"\n    {switch}" if switch else ""
    text = (
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
        f"- plugins:\n  - name: capacity{line}"
    )
    return parse_conf(text, REGISTRY)


def open_capacity(*objects: dict[str, Any], switch: str = "") -> Session:
    """Open a session over the manifests."""
    return open_session(cluster(*objects), conf(switch), REGISTRY)


def open_hierarchy(*objects: dict[str, Any]) -> Session:
    """Open a session with `enableHierarchy: true`."""
    return open_capacity(*objects, switch="enableHierarchy: true")


def plugin_of(ssn: Session) -> CapacityPlugin:
    """Return the session's capacity plugin."""
    found = ssn.plugins["capacity"]
    assert isinstance(found, CapacityPlugin)
    return found


def tree_of(ssn: Session) -> QueueTree:
    """Return the capacity state of the session."""
    return plugin_of(ssn).tree


def attr_of(ssn: Session, name: str) -> QueueAttr:
    """Return one queue's attributes."""
    return tree_of(ssn).attrs[QueueID(name)]


def task_of(ssn: Session, name: str) -> TaskInfo:
    """Return the session's task (pod) `name`."""
    return next(task for job in ssn.jobs.values() for task in job.tasks.values() if task.name == name)


def res(cpu: float = 0, memory_gi: float = 0, **scalars: float) -> Resource:
    """Cores, GiB and whole scalar units (`gpu=1` is nvidia.com/gpu) as a Resource."""
    names = {"gpu": GPU}
    return Resource(cpu * 1000, memory_gi * GI, {names.get(k, k): v * 1000 for k, v in scalars.items()})


def dims(resource: Resource | None) -> tuple[float, ...] | None:
    """(cores, GiB, gpus) of a resource, for exact comparisons."""
    if resource is None:
        return None
    return (resource.milli_cpu / 1000, resource.memory / GI, resource.scalars.get(GPU, 0.0) / 1000)


def gpu_pod(**fields: Any) -> dict[str, Any]:
    """A pod manifest whose container also requests `gpu` GPUs."""
    gpus = fields.pop("gpu")
    manifest = pod(**fields)
    requests = manifest["spec"]["containers"][0]["resources"]["requests"]
    requests[GPU] = str(gpus)
    return manifest
