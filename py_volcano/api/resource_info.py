"""The multi-dimensional Resource: milli-CPU, memory bytes and scalar resources.

The model and its comparisons: docs/semantics.md, "Resources". Scalar resources (`nvidia.com/gpu`,
hugepages, ...) are held in milli units, as Volcano does, so `nvidia.com/gpu: 1` is 1000. The pod count
of a node is not a dimension here: it is `max_task_num`, checked by node fit (see `NodeInfo`). Every
comparison but `less_equal_with_dimension_and_resources_name` tolerates `MIN_RESOURCE` (0.1).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import Enum

from py_volcano.api.quantity import format_cpu, format_memory, format_scalar, parse_quantity

__all__ = [
    "CPU",
    "INFINITY",
    "MEMORY",
    "MIN_RESOURCE",
    "PODS",
    "ZERO",
    "DimensionDefault",
    "Resource",
    "empty_resource",
]

MIN_RESOURCE = 0.1
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
_INF = float("inf")
_IGNORED = frozenset({"ephemeral-storage", "storage"})
#: Names without a domain that are still scalar resources (Kubernetes' IsScalarResourceName).
_SCALAR_PREFIXES = ("hugepages-", "attachable-volumes-")
#: Quota names, not resources (Volcano's IsCountQuota, and requests.<extended resource>).
_QUOTA_PREFIXES = ("count/", "requests.")


def _is_scalar(name: str) -> bool:
    """Return whether `name` is a scalar resource: an extended (`domain/name`), hugepages or attachable
    volume resource. Quota names (`requests.cpu`, `limits.memory`, `count/pods`), which the minResources of
    PodGroups made by Volcano's controller carry, are not: Volcano's NewResource skips them too."""
    if name.startswith(_SCALAR_PREFIXES):
        return True
    return "/" in name and not name.startswith(_QUOTA_PREFIXES)


class DimensionDefault(Enum):
    """How a scalar dimension missing on one side of a comparison counts."""

    ZERO = 0
    INFINITY = -1


ZERO = DimensionDefault.ZERO
INFINITY = DimensionDefault.INFINITY


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def _fill(value: float | None, default: DimensionDefault) -> float:
    if value is not None:
        return value
    return _INF if default is INFINITY else 0.0


class Resource:
    """A quantity of CPU, memory and scalar resources; arithmetic mutates in place and returns self."""

    __slots__ = ("max_task_num", "memory", "milli_cpu", "scalars")

    def __init__(
        self,
        milli_cpu: float = 0.0,
        memory: float = 0.0,
        scalars: Mapping[str, float] | None = None,
        max_task_num: int = 0,
    ) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}
        self.max_task_num = max_task_num

    @classmethod
    def from_list(cls, resources: Mapping[str, object] | None) -> Resource:
        """Build from a Kubernetes resource list (`{"cpu": "500m", "memory": "1Gi"}`); ValueError names the key."""
        result = cls()
        for name, quantity in (resources or {}).items():
            try:
                value = parse_quantity(quantity)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
            if value < 0:
                raise ValueError(f"{name}: negative quantity {quantity!r}")
            if name == CPU:
                result.milli_cpu += value * 1000
            elif name == MEMORY:
                result.memory += value
            elif name == PODS:
                result.max_task_num += int(value)
            elif name not in _IGNORED and _is_scalar(name):
                result.scalars[name] = result.scalars.get(name, 0.0) + value * 1000
        return result

    def clone(self) -> Resource:
        """Return a deep copy."""
        return Resource(self.milli_cpu, self.memory, self.scalars, self.max_task_num)

    def names(self) -> Iterator[str]:
        """Yield the dimensions this resource holds above the tolerance."""
        if self.milli_cpu >= MIN_RESOURCE:
            yield CPU
        if self.memory >= MIN_RESOURCE:
            yield MEMORY
        for name, value in self.scalars.items():
            if value >= MIN_RESOURCE:
                yield name

    def get(self, name: str) -> float:
        """Return one dimension (milli-CPU, bytes, or milli units for scalars)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0.0)

    def set(self, name: str, value: float) -> None:
        """Set one dimension."""
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        else:
            self.scalars[name] = value

    # Arithmetic -----------------------------------------------------------------------------

    def add(self, other: Resource) -> Resource:
        """Add every dimension of `other`."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        for name, value in other.scalars.items():
            self.scalars[name] = self.scalars.get(name, 0.0) + value
        return self

    def sub(self, other: Resource) -> Resource:
        """Subtract `other`; AssertionError when `other` is not <= self (Volcano's Sub)."""
        if not other.less_equal(self, ZERO):
            raise AssertionError(f"resource is not sufficient to do operation: <{self}> sub <{other}>")
        return self.sub_without_assert(other)

    def sub_without_assert(self, other: Resource) -> Resource:
        """Subtract `other`, allowing negative dimensions."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        for name, value in other.scalars.items():
            self.scalars[name] = self.scalars.get(name, 0.0) - value
        return self

    def multi(self, ratio: float) -> Resource:
        """Multiply every dimension by `ratio`."""
        self.milli_cpu *= ratio
        self.memory *= ratio
        for name in self.scalars:
            self.scalars[name] *= ratio
        return self

    def set_max_resource(self, other: Resource) -> Resource:
        """Raise every dimension to at least `other`'s."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        for name, value in other.scalars.items():
            self.scalars[name] = max(self.scalars.get(name, value), value)
        return self

    def fit_delta(self, request: Resource) -> Resource:
        """Subtract each requested dimension plus the tolerance; a negative result means it does not fit."""
        if request.milli_cpu > 0:
            self.milli_cpu -= request.milli_cpu + MIN_RESOURCE
        if request.memory > 0:
            self.memory -= request.memory + MIN_RESOURCE
        for name, value in request.scalars.items():
            if value > 0:
                self.scalars[name] = self.scalars.get(name, 0.0) - (value + MIN_RESOURCE)
        return self

    def min_dimension_resource(self, other: Resource, default: DimensionDefault) -> Resource:
        """Lower every dimension to `other`'s; a scalar `other` lacks stays (INFINITY) or becomes 0 (ZERO)."""
        self.milli_cpu = min(self.milli_cpu, other.milli_cpu)
        self.memory = min(self.memory, other.memory)
        for name, value in self.scalars.items():
            self.scalars[name] = min(value, _fill(other.scalars.get(name), default))
        return self

    def exceeded_part(self, other: Resource) -> Resource:
        """Return the part of self above `other`, per dimension (never negative)."""
        result = Resource(max(self.milli_cpu - other.milli_cpu, 0.0), max(self.memory - other.memory, 0.0))
        for name, value in self.scalars.items():
            excess = value - other.scalars.get(name, 0.0)
            if excess > 0:
                result.scalars[name] = excess
        return result

    def diff(self, other: Resource, default: DimensionDefault) -> tuple[Resource, Resource]:
        """Return (increased, decreased): the dimensions where self is above `other`, and below it."""
        increased, decreased = Resource(), Resource()
        if self.milli_cpu > other.milli_cpu:
            increased.milli_cpu = self.milli_cpu - other.milli_cpu
        else:
            decreased.milli_cpu = other.milli_cpu - self.milli_cpu
        if self.memory > other.memory:
            increased.memory = self.memory - other.memory
        else:
            decreased.memory = other.memory - self.memory
        for name in self.scalars.keys() | other.scalars.keys():
            left = _fill(self.scalars.get(name), default)
            right = _fill(other.scalars.get(name), default)
            if left == right:
                continue
            if left > right:
                increased.scalars[name] = left - right
            else:
                decreased.scalars[name] = right - left
        return increased, decreased

    # Comparisons ----------------------------------------------------------------------------

    def _pairs(self, other: Resource, default: DimensionDefault) -> Iterator[tuple[str, float, float]]:
        yield CPU, self.milli_cpu, other.milli_cpu
        yield MEMORY, self.memory, other.memory
        for name in self.scalars.keys() | other.scalars.keys():
            yield name, _fill(self.scalars.get(name), default), _fill(other.scalars.get(name), default)

    def less(self, other: Resource, default: DimensionDefault) -> bool:
        """True when every dimension is strictly below `other`'s."""
        return all(left < right for _, left, right in self._pairs(other, default))

    def less_equal(self, other: Resource, default: DimensionDefault) -> bool:
        """True when every dimension is <= `other`'s (within tolerance)."""
        if not (_le(self.milli_cpu, other.milli_cpu) and _le(self.memory, other.memory)):
            return False
        for name in self.scalars.keys() | other.scalars.keys():
            right = _fill(other.scalars.get(name), default)
            if right == _INF:
                continue
            if not _le(_fill(self.scalars.get(name), default), right):
                return False
        return True

    def less_equal_with_resources_name(self, other: Resource, default: DimensionDefault) -> tuple[bool, list[str]]:
        """Return (fits, the dimensions where self is above `other`)."""
        short = [name for name, left, right in self._pairs(other, default) if right != _INF and not _le(left, right)]
        return not short, short

    def less_partly(self, other: Resource, default: DimensionDefault) -> bool:
        """True when at least one dimension is strictly below `other`'s."""
        return any(left < right for _, left, right in self._pairs(other, default))

    def less_equal_partly(self, other: Resource, default: DimensionDefault) -> bool:
        """True when at least one dimension is <= `other`'s (within tolerance)."""
        return any(_le(left, right) for _, left, right in self._pairs(other, default))

    def greater_partly(self, other: Resource, default: DimensionDefault) -> bool:
        """True when at least one dimension is strictly above `other`'s."""
        return any(left > right for _, left, right in self._pairs(other, default))

    def equal(self, other: Resource, default: DimensionDefault) -> bool:
        """True when every dimension equals `other`'s within tolerance."""
        return all(abs(left - right) < MIN_RESOURCE or left == right for _, left, right in self._pairs(other, default))

    def _requested(self, req: Resource) -> Iterator[str]:
        if req.milli_cpu > 0:
            yield CPU
        if req.memory > 0:
            yield MEMORY
        for name, value in req.scalars.items():
            if value > 0:
                yield name

    def less_equal_with_dimension_and_resources_name(self, other: Resource, req: Resource) -> tuple[bool, list[str]]:
        """Compare only the dimensions `req` asks for (> 0); return (fits, dimensions above `other`).

        Strict, with no tolerance, as Volcano's LessEqualWithDimensionAndResourcesName: a queue's deserved
        share computed in floating point (4294967295.9999995 bytes for 4Gi) does not hold a request that
        would fill it to the byte."""
        short = [name for name in self._requested(req) if self.get(name) > other.get(name)]
        return not short, short

    def less_equal_with_dimension(self, other: Resource, req: Resource | None) -> bool:
        """Compare only the dimensions `req` asks for (> 0); all dimensions when `req` is None."""
        if req is None:
            return self.less_equal(other, ZERO)
        return self.less_equal_with_dimension_and_resources_name(other, req)[0]

    def less_equal_partly_with_dimension(self, other: Resource, req: Resource) -> bool:
        """True when at least one dimension `req` asks for is <= `other`'s."""
        return any(_le(self.get(name), other.get(name)) for name in self._requested(req))

    def greater_partly_with_dimension(self, other: Resource, req: Resource) -> bool:
        """True when at least one dimension `req` asks for is strictly above `other`'s."""
        return any(self.get(name) > other.get(name) for name in self._requested(req))

    def is_empty(self) -> bool:
        """True when every dimension is below the tolerance (the pod count is ignored)."""
        return (
            self.milli_cpu < MIN_RESOURCE
            and self.memory < MIN_RESOURCE
            and all(value < MIN_RESOURCE for value in self.scalars.values())
        )

    def is_zero(self, name: str) -> bool:
        """True when dimension `name` is below the tolerance."""
        return self.get(name) < MIN_RESOURCE

    # Presentation ---------------------------------------------------------------------------

    def to_quantities(self) -> dict[str, str]:
        """Return the resource as a Kubernetes resource list (cpu, memory, then scalars).

        An unlimited (infinite) dimension is left out, as a capability that does not name it.
        """
        result: dict[str, str] = {}
        if self.milli_cpu != _INF:
            result[CPU] = format_cpu(self.milli_cpu)
        if self.memory != _INF:
            result[MEMORY] = format_memory(self.memory)
        for name in sorted(self.scalars):
            if self.scalars[name] != _INF:
                result[name] = format_scalar(self.scalars[name])
        return result

    def __repr__(self) -> str:
        parts = [f"cpu {self.milli_cpu:.2f}", f"memory {self.memory:.2f}"]
        parts += [f"{name} {value:.2f}" for name, value in sorted(self.scalars.items())]
        return ", ".join(parts)


def empty_resource() -> Resource:
    """Return a new zero resource."""
    return Resource()
