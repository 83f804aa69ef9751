"""Numatopology (nodeinfo.volcano.sh/v1alpha1): a node's CPU-manager and topology-manager policies, its
reserved resources and its CPU topology, as Volcano's resource exporter reports them; and which of a pod's
containers the kubelet's static CPU manager pins to whole CPUs.

`parse_numatopology` reads one object at the edge (InvalidNumatopology names the object and the field);
the store hangs the result on the node of the same name (`NodeInfo.numa`). `pinned_cpus` reads a pod
spec: per container, the whole CPUs it asks for, or None when the pod is not of Guaranteed QoS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from py_volcano.api.quantity import parse_quantity
from py_volcano.errors import InvalidNumatopology, InvalidPod

__all__ = [
    "CPU_MANAGER_POLICY",
    "NUMA_POLICY_ANNOTATION",
    "TOPOLOGY_MANAGER_POLICY",
    "CpuInfo",
    "NumaResource",
    "NumaTopology",
    "PinnedContainer",
    "parse_cpuset",
    "parse_numatopology",
    "pinned_cpus",
]

CPU_MANAGER_POLICY = "CPUManagerPolicy"
"""Key of `spec.policies` holding the kubelet's `cpuManagerPolicy` (`none`, `static`)."""
TOPOLOGY_MANAGER_POLICY = "TopologyManagerPolicy"
"""Key of `spec.policies` holding the kubelet's `topologyManagerPolicy`."""
NUMA_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
"""Pod annotation naming the topology policy the pod asks for (Volcano's job controller writes it from
`spec.tasks[].topologyPolicy`)."""

_POLICY_NAMES = frozenset({CPU_MANAGER_POLICY, TOPOLOGY_MANAGER_POLICY})
_QOS_RESOURCES = ("cpu", "memory")


@dataclass(slots=True, frozen=True)
class CpuInfo:
    """Where one logical CPU sits: its NUMA node, socket and core (`spec.cpuDetail[id]`)."""

    numa: int = 0
    socket: int = 0
    core: int = 0


@dataclass(slots=True, frozen=True)
class NumaResource:
    """One `spec.numares[resource]`: the allocatable ids (a cpuset) and the capacity."""

    allocatable: frozenset[int]
    capacity: int = 0


@dataclass(slots=True, frozen=True)
class NumaTopology:
    """What the scheduler reads from a Numatopology, named after its node."""

    name: str
    policies: Mapping[str, str]
    reserved: Mapping[str, float]
    """`spec.resReserved`: resource name -> amount in base units (cores for `cpu`)."""
    resources: Mapping[str, NumaResource]
    cpus: Mapping[int, CpuInfo]
    """`spec.cpuDetail`: CPU id -> its place."""

    @property
    def cpu_manager_policy(self) -> str:
        """The kubelet's CPU manager policy; empty when not reported."""
        return self.policies.get(CPU_MANAGER_POLICY, "")

    @property
    def topology_manager_policy(self) -> str:
        """The kubelet's topology manager policy; empty when not reported."""
        return self.policies.get(TOPOLOGY_MANAGER_POLICY, "")

    @property
    def reserved_cpus(self) -> int:
        """Whole CPUs the kubelet keeps for the system: the reservation rounded up."""
        return math.ceil(round(self.reserved.get("cpu", 0.0) * 1000) / 1000)

    def numa_nodes(self) -> list[int]:
        """Return the NUMA node ids of the CPUs, ascending."""
        return sorted({cpu.numa for cpu in self.cpus.values()})

    def cpus_in_numa(self, numa_nodes: Iterable[int]) -> frozenset[int]:
        """Return the CPUs on any of `numa_nodes`."""
        wanted = set(numa_nodes)
        return frozenset(cpu for cpu, info in self.cpus.items() if info.numa in wanted)


@dataclass(slots=True, frozen=True)
class PinnedContainer:
    """A container of a Guaranteed pod: its name and the whole CPUs it asks for (0: none, or a fraction)."""

    name: str
    cpus: int


def parse_cpuset(text: str) -> frozenset[int]:
    """Read a Linux cpuset list (`0-3,8,10-11`; empty: none); ValueError when malformed."""
    cpus: set[int] = set()
    if not text:
        return frozenset()
    for part in text.split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"not a cpuset: {text!r:.60}")
        start, end = int(first), int(last) if dash else int(first)
        if start > end:
            raise ValueError(f"range {part!r} runs backwards")
        cpus.update(range(start, end + 1))
    return frozenset(cpus)


def _map(value: object, name: str, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidNumatopology(name, path, "expected a map")
    return value


def _count(value: object, name: str, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidNumatopology(name, path, f"expected an integer >= 0, got {value!r:.60}")
    return value


def _policies(spec: Mapping[str, Any], name: str) -> dict[str, str]:
    policies: dict[str, str] = {}
    for key, value in _map(spec.get("policies"), name, "spec.policies").items():
        if not isinstance(value, str):
            raise InvalidNumatopology(name, f"spec.policies.{key}", f"expected a string, got {value!r:.60}")
        if key in _POLICY_NAMES:  # any other key is kept by the API server and read by no one
            policies[key] = value
    return policies


def _reserved(spec: Mapping[str, Any], name: str) -> dict[str, float]:
    reserved: dict[str, float] = {}
    for resource, value in _map(spec.get("resReserved"), name, "spec.resReserved").items():
        try:
            reserved[str(resource)] = parse_quantity(value)
        except ValueError as exc:
            raise InvalidNumatopology(name, f"spec.resReserved.{resource}", str(exc)) from None
    return reserved


def _resources(spec: Mapping[str, Any], name: str) -> dict[str, NumaResource]:
    resources: dict[str, NumaResource] = {}
    for resource, raw in _map(spec.get("numares"), name, "spec.numares").items():
        path = f"spec.numares.{resource}"
        info = _map(raw, name, path)
        text = info.get("allocatable") or ""
        if not isinstance(text, str):
            raise InvalidNumatopology(name, f"{path}.allocatable", f"expected a cpuset string, got {text!r:.60}")
        try:
            allocatable = parse_cpuset(text)
        except ValueError as exc:
            raise InvalidNumatopology(name, f"{path}.allocatable", str(exc)) from None
        resources[str(resource)] = NumaResource(allocatable, _count(info.get("capacity"), name, f"{path}.capacity"))
    return resources


def _cpus(spec: Mapping[str, Any], name: str) -> dict[int, CpuInfo]:
    cpus: dict[int, CpuInfo] = {}
    for key, raw in _map(spec.get("cpuDetail"), name, "spec.cpuDetail").items():
        path = f"spec.cpuDetail.{key}"
        if not isinstance(key, str) or not key.isdigit():
            raise InvalidNumatopology(name, path, "a CPU id must be a non-negative integer")
        info = _map(raw, name, path)
        cpus[int(key)] = CpuInfo(
            numa=_count(info.get("numa"), name, f"{path}.numa"),
            socket=_count(info.get("socket"), name, f"{path}.socket"),
            core=_count(info.get("core"), name, f"{path}.core"),
        )
    return cpus


def parse_numatopology(obj: Mapping[str, Any]) -> NumaTopology:
    """Parse a Numatopology; InvalidNumatopology names the object and the field. `spec.podAllocations`
    is not read (see docs/plugins.md, "numa-aware")."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise InvalidNumatopology("<unnamed>", "metadata.name", "missing")
    spec = _map(obj.get("spec"), name, "spec")
    return NumaTopology(
        name=name,
        policies=_policies(spec, name),
        reserved=_reserved(spec, name),
        resources=_resources(spec, name),
        cpus=_cpus(spec, name),
    )


# Pods ----------------------------------------------------------------------------------------------


def _container_resources(
    container: Mapping[str, Any], name: str, path: str
) -> tuple[dict[str, float], dict[str, float]]:
    """The container's CPU and memory requests (defaulted from its limits, as the API server does) and limits."""
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InvalidPod(name, f"{path}.resources", "expected a map")
    found: list[dict[str, float]] = []
    for key in ("limits", "requests"):
        raw = resources.get(key) or {}
        if not isinstance(raw, Mapping):
            raise InvalidPod(name, f"{path}.resources.{key}", "expected a map")
        amounts: dict[str, float] = {}
        for resource in _QOS_RESOURCES:
            if resource in raw:
                try:
                    amounts[resource] = parse_quantity(raw[resource])
                except ValueError as exc:
                    raise InvalidPod(name, f"{path}.resources.{key}.{resource}", str(exc)) from None
        found.append(amounts)
    limits, requests = found
    return {**limits, **requests}, limits


def pinned_cpus(spec: Mapping[str, Any], name: str) -> tuple[PinnedContainer, ...] | None:
    """Return, per container of `spec.containers`, the whole CPUs the static CPU manager would pin; None
    unless the pod is of Guaranteed QoS (every container, init containers too, limits CPU and memory, and
    the pod's summed requests equal its summed limits), as the kubelet classifies pods. `name` (`ns/name`)
    is for errors."""
    requested: dict[str, float] = {}
    limited: dict[str, float] = {}
    guaranteed = True
    pinned: list[PinnedContainer] = []
    for key in ("containers", "initContainers"):
        containers = spec.get(key) or []
        if not isinstance(containers, list):
            raise InvalidPod(name, f"spec.{key}", "expected a list of containers")
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                raise InvalidPod(name, f"spec.{key}[{i}]", "expected a map")
            requests, limits = _container_resources(container, name, f"spec.{key}[{i}]")
            for resource, amount in requests.items():
                if amount:
                    requested[resource] = requested.get(resource, 0.0) + amount
            for resource, amount in limits.items():
                if amount:
                    limited[resource] = limited.get(resource, 0.0) + amount
            if not all(limits.get(resource) for resource in _QOS_RESOURCES):
                guaranteed = False
            if key == "containers":
                milli = round(requests.get("cpu", 0.0) * 1000)
                pinned.append(
                    PinnedContainer(str(container.get("name") or ""), milli // 1000 if milli % 1000 == 0 else 0)
                )
    if not guaranteed or any(abs(limited.get(r, 0.0) - amount) > 1e-9 for r, amount in requested.items()):
        return None
    if len(requested) != len(limited):
        return None
    return tuple(pinned)
