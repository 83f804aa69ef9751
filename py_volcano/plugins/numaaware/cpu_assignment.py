"""Which CPUs the static CPU manager would hand a container, as Volcano's numa-aware takes them
(`takeByTopology`, its copy of the kubelet's topology-aware best fit): whole sockets, then whole cores,
then single threads.

Volcano's copy differs from the kubelet's in ways kept here, because they decide which CPUs a task
takes within the cycle: a "free socket" is a socket id that is also a free CPU id, and the cores of a
socket are counted by the core ids that are also free CPU ids. Its orderings are not orderings (an `or`
of comparisons); Go's `sort.Slice` runs them through an insertion sort up to 12 elements, which
`_go_sort` does at any length (docs/plugins.md, "numa-aware").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from py_volcano.api import CpuInfo

__all__ = ["take_by_topology"]


def _go_sort(items: list[int], less: Callable[[int, int], bool]) -> list[int]:
    """Sort as Go's insertion sort does with `less` (the first argument is the later element)."""
    for i in range(1, len(items)):
        j = i
        while j > 0 and less(items[j], items[j - 1]):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1
    return items


class _Accumulator:
    """CPUs taken so far out of the free ones, and how many more are needed."""

    __slots__ = ("cpus", "details", "needed", "per_core", "per_socket", "result")

    def __init__(self, cpus: Mapping[int, CpuInfo], available: frozenset[int], count: int) -> None:
        self.cpus = cpus
        self.details = {cpu: info for cpu, info in cpus.items() if cpu in available}
        self.needed = count
        self.result: set[int] = set()
        n_cores = len({(info.socket, info.core) for info in cpus.values()})
        n_sockets = len({info.socket for info in cpus.values()})
        self.per_core = len(cpus) // n_cores if n_cores else 0
        self.per_socket = len(cpus) // n_sockets if n_sockets else 0

    def take(self, taken: set[int]) -> None:
        self.result |= taken
        for cpu in taken:
            self.details.pop(cpu, None)
        self.needed -= len(taken)

    def needs(self, n: int) -> bool:
        return self.needed >= n

    def in_sockets(self, socket: int) -> set[int]:
        return {cpu for cpu, info in self.details.items() if info.socket == socket}

    def free_sockets(self) -> list[int]:
        return sorted({info.socket for info in self.details.values()} & self.details.keys())

    def free_cores(self) -> list[int]:
        free = self.details.keys()
        cores = {
            socket: sorted({i.core for i in self.details.values() if i.socket == socket} & free)
            for socket in {info.socket for info in self.details.values()}
        }
        order = _go_sort(sorted(cores), lambda i, j: len(cores[i]) < len(cores[j]) or i < j)
        return [core for socket in order for core in cores[socket]]

    def free_cpus(self) -> list[int]:
        cpus = self.cpus
        keys: dict[int, tuple[int, int, int, int]] = {}
        for core in {info.core for info in self.details.values()}:
            socket = cpus[min(c for c, info in cpus.items() if info.core == core)].socket
            colocated = sum(1 for c in self.result if c in cpus and cpus[c].socket == socket)
            socket_free = sum(1 for info in self.details.values() if info.socket == socket)
            core_free = sum(1 for info in self.details.values() if info.core == core)
            keys[core] = (colocated, socket_free, core_free, socket)

        def less(i: int, j: int) -> bool:
            a, b = keys[i], keys[j]
            return a[0] > b[0] or a[1] < b[1] or a[2] < b[2] or a[3] < b[3] or i < j

        order = _go_sort(sorted(keys), less)
        return [cpu for core in order for cpu in sorted(c for c, i in self.details.items() if i.core == core)]


def take_by_topology(cpus: Mapping[int, CpuInfo], available: frozenset[int], count: int) -> frozenset[int] | None:
    """Return `count` CPUs of `available` chosen by topology (`cpus`: every CPU of the node and its
    place); None when they cannot be found."""
    acc = _Accumulator(cpus, available, count)
    if acc.needed < 1:
        return frozenset()
    if acc.needed > len(acc.details):
        return None
    if acc.needs(acc.per_socket):
        for socket in acc.free_sockets():
            acc.take(acc.in_sockets(socket))
            if acc.needed < 1:
                return frozenset(acc.result)
            if not acc.needs(acc.per_socket):
                break
    if acc.needs(acc.per_core):
        for core in acc.free_cores():
            acc.take({cpu for cpu, info in acc.details.items() if info.core == core})
            if acc.needed < 1:
                return frozenset(acc.result)
            if not acc.needs(acc.per_core):
                break
    for cpu in acc.free_cpus():
        if acc.needs(1):
            acc.take({cpu})
        if acc.needed < 1:
            return frozenset(acc.result)
    return None
