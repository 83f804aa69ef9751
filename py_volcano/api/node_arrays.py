"""NodeArrays: the nodes x dimensions float64 matrices that vectorise fit and scoring over all nodes.

Columns are `cpu` (milli), `memory` (bytes), `pods` (count) and every scalar resource seen in the
snapshot (milli units). Each `NodeInfo` writes its own row through `write` whenever it changes, so
the matrices always mirror the node objects: a node is their single owner.

Every write is logged by row, so the fit masks of a request shape are kept per shape and brought up
to date by re-testing only the rows written since (a gang's identical tasks, placed one after the
other, each change one row).

The arrays of one session can be handed to the next session's (`kept`): a row whose node is the
same object, unchanged since it was last written and through the whole session before (its
`NodeInfo.version`), is copied instead of written; only the other rows (`stale`) are written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from py_volcano.api.node_info import NodeInfo
from py_volcano.api.resource_info import CPU, MEMORY, MIN_RESOURCE, PODS, Resource

__all__ = ["ROW_BY_ROW", "FloatArray", "IntArray", "MaskArray", "NodeArrays", "request_shape"]

FloatArray = npt.NDArray[np.float64]
MaskArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]

_INCREMENTAL_ROWS = 512
#: Up to this many rows, work on rows goes row by row in plain floats, cheaper than numpy's fixed cost per
#: operation: a kept fit mask brought up to date (rows written since), a batch score of the few nodes a
#: gang's run placed on (`framework.NodeScores`' plugins).
ROW_BY_ROW = 8
_NO_ROWS: IntArray = np.zeros(0, dtype=np.intp)
_NO_ROWS.flags.writeable = False


def request_shape(resreq: Resource) -> tuple[object, ...]:
    """The key of a request's fit: requests of one key fit the same nodes."""
    return (resreq.milli_cpu, resreq.memory, *sorted(resreq.scalars.items()))


class NodeArrays:
    """Allocatable, idle, releasing and pipelined matrices, one row a node in `nodes` order."""

    __slots__ = (
        "_fit_future",
        "_fit_idle",
        "_log",
        "_opened",
        "_pipelined_rows",
        "_releasing_rows",
        "_requests",
        "_versions",
        "allocatable",
        "columns",
        "dims",
        "idle",
        "nodes",
        "pipelined",
        "releasing",
        "stale",
    )

    def __init__(self, nodes: Sequence[NodeInfo], scalar_names: Iterable[str], kept: NodeArrays | None = None) -> None:
        self.dims: tuple[str, ...] = (CPU, MEMORY, PODS, *sorted(set(scalar_names)))
        self.columns = {name: column for column, name in enumerate(self.dims)}
        shape = (len(nodes), len(self.dims))
        self.nodes = list(nodes)
        self._requests: dict[tuple[object, ...], FloatArray] = {}
        self._log: list[int] = []
        self._fit_idle: dict[tuple[object, ...], tuple[int, MaskArray]] = {}
        self._fit_future: dict[tuple[object, ...], tuple[int, MaskArray]] = {}
        self._versions: list[int] = [0] * len(self.nodes)
        self._releasing_rows: set[int] = set()
        self._pipelined_rows: set[int] = set()
        self.stale: list[int] | None = self._carry(kept) if kept is not None else None
        """The rows written afresh when rows were carried from `kept`; None when every row was."""
        if self.stale is None:
            self.allocatable: FloatArray = np.zeros(shape)
            self.idle: FloatArray = np.zeros(shape)
            self.releasing: FloatArray = np.zeros(shape)
            self.pipelined: FloatArray = np.zeros(shape)
            for index, node in enumerate(self.nodes):
                self.allocatable[index] = self._row(node.allocatable, node.allocatable.max_task_num)
                node.attach(self, index)
        else:
            for index, node in enumerate(self.nodes):
                node.attach(self, index, write=False)
            for index in self.stale:
                node = self.nodes[index]
                self.allocatable[index] = self._row(node.allocatable, node.allocatable.max_task_num)
                self.write(node)
        self._opened = list(self._versions)

    def _carry(self, kept: NodeArrays) -> list[int] | None:
        """Copy `kept`'s matrices when they have these dimensions and as many rows; return the rows
        whose node is another object or changed since `kept` was opened (None: nothing carried)."""
        if kept.dims != self.dims or len(kept.nodes) != len(self.nodes):
            return None
        stale = [
            index
            for index, (node, was, version, opened) in enumerate(
                zip(self.nodes, kept.nodes, kept._versions, kept._opened, strict=True)
            )
            if node is not was or node.version != version or version != opened
        ]
        self.allocatable = kept.allocatable.copy()
        self.idle = kept.idle.copy()
        self.releasing = kept.releasing.copy()
        self.pipelined = kept.pipelined.copy()
        self._releasing_rows = set(kept._releasing_rows)
        self._pipelined_rows = set(kept._pipelined_rows)
        self._versions = list(kept._versions)
        return stale

    def detach(self) -> None:
        """Stop every node writing through to these arrays; the arrays keep their rows' nodes, which a
        next session's `kept` compares."""
        for node in self.nodes:
            node.detach()

    def _row(self, resource: Resource, pods: float) -> list[float]:
        row = [resource.milli_cpu, resource.memory, pods]
        row.extend(resource.scalars.get(name, 0.0) for name in self.dims[3:])
        return row

    def write(self, node: NodeInfo, *, idle: bool = True, releasing: bool = True, pipelined: bool = True) -> None:
        """Copy `node`'s idle, releasing and pipelined state (those asked for) into its row."""
        index = node.index
        self._log.append(index)
        self._versions[index] = node.version
        if idle:
            self.idle[index] = self._row(node.idle, node.idle_pods)
        if releasing:
            row = self.releasing[index] = self._row(node.releasing, node.releasing_pods)
            _note(self._releasing_rows, index, any(row))
        if pipelined:
            row = self.pipelined[index] = self._row(node.pipelined, node.pipelined_pods)
            _note(self._pipelined_rows, index, any(row))

    def request(self, resreq: Resource) -> FloatArray:
        """Return a task request as a row vector (its resources plus one pod slot), minus the tolerance.

        Vectors are cached per distinct request, so the tasks of a job share one. A request for a
        scalar no node has gets an extra infinite column, which fits nowhere.
        """
        return self._request(request_shape(resreq), resreq)

    def _request(self, key: tuple[object, ...], resreq: Resource) -> FloatArray:
        vector = self._requests.get(key)
        if vector is None:
            vector = np.asarray(self._row(resreq, 1.0)) - MIN_RESOURCE
            if any(name not in self.columns for name, value in resreq.scalars.items() if value > 0):
                vector = np.append(vector, np.inf)
            self._requests[key] = vector
        return vector

    def used(self) -> FloatArray:
        """Return Allocatable - Idle."""
        return self.allocatable - self.idle

    def future_idle(self) -> FloatArray:
        """Return Idle + Releasing - Pipelined."""
        return self.idle + self.releasing - self.pipelined

    def fits_idle(self, resreq: Resource) -> MaskArray:
        """Per node: `resreq` (and one pod slot) fits the idle resources. Read-only; kept current per shape."""
        return self._cached_fit(resreq, self._fit_idle, future=False)

    def fits_future_idle(self, resreq: Resource) -> MaskArray:
        """Per node: `resreq` fits Idle + Releasing - Pipelined. Read-only; kept current per shape; the
        `fits_idle` mask itself while no node has anything releasing or pipelined."""
        if not self._releasing_rows and not self._pipelined_rows:
            return self.fits_idle(resreq)
        return self._cached_fit(resreq, self._fit_future, future=True)

    def _available(self, rows: IntArray | slice, *, future: bool) -> FloatArray:
        if future:
            result: FloatArray = self.idle[rows] + self.releasing[rows] - self.pipelined[rows]
            return result
        return self.idle[rows]

    @property
    def version(self) -> int:
        """How many row writes there have been: a mark for `written_since`."""
        return len(self._log)

    def written_since(self, version: int) -> IntArray | None:
        """The rows written since `version` (each once), or None when more than a few hundred writes
        came since: then recomputing everything is the cheaper way."""
        rows = self._written(version)
        if rows is None:
            return None
        return np.fromiter(rows, dtype=np.intp, count=len(rows)) if rows else _NO_ROWS

    def only_written(self, version: int, rows: set[int]) -> bool:
        """True when every row written since `version` is one of `rows`."""
        return all(row in rows for row in self._log[version:])

    def _written(self, version: int) -> set[int] | None:
        if len(self._log) - version > _INCREMENTAL_ROWS:
            return None
        return set(self._log[version:])

    def _cached_fit(
        self, resreq: Resource, cache: dict[tuple[object, ...], tuple[int, MaskArray]], *, future: bool
    ) -> MaskArray:
        key = request_shape(resreq)
        request = self._request(key, resreq)
        cached = cache.get(key)
        if cached is not None:
            seen, mask = cached
            written = self._written(seen)
            if written is not None:
                if written and request.shape[0] == self.idle.shape[1]:
                    self._refit(mask, written, request, future=future)
                    cache[key] = (self.version, mask)
                return mask
        mask = self.fits(request, self._available(slice(None), future=future))
        mask.flags.writeable = False
        cache[key] = (self.version, mask)
        return mask

    def _refit(self, mask: MaskArray, rows: set[int], request: FloatArray, *, future: bool) -> None:
        """Test `rows` of a kept fit mask again: one by one in plain floats when few, else vectorised."""
        mask.flags.writeable = True
        if len(rows) <= ROW_BY_ROW:
            limits = request.tolist()
            for row in rows:
                mask[row] = all(a > r for a, r in zip(self._available_at(row, future), limits, strict=True))
        else:
            indices = np.fromiter(rows, dtype=np.intp, count=len(rows))
            mask[indices] = (self._available(indices, future=future) > request).all(axis=1)
        mask.flags.writeable = False

    def _available_at(self, row: int, future: bool) -> list[float]:
        """`_available` of one row in plain floats, the same operations in the same order."""
        idle: list[float] = self.idle[row].tolist()
        if not future:
            return idle
        releasing, pipelined = self.releasing[row].tolist(), self.pipelined[row].tolist()
        return [i + r - p for i, r, p in zip(idle, releasing, pipelined, strict=True)]

    def fits(self, request: FloatArray, available: FloatArray) -> MaskArray:
        """Return, per node, whether a `request()` vector <= `available` in every dimension (tolerance 0.1)."""
        if request.shape[0] > available.shape[1]:
            return np.zeros(available.shape[0], dtype=bool)
        result: MaskArray = np.asarray((available > request).all(axis=1), dtype=bool)
        return result


def _note(rows: set[int], index: int, nonzero: bool) -> None:
    """Keep `rows` the set of rows that hold something."""
    if nonzero:
        rows.add(index)
    else:
        rows.discard(index)
