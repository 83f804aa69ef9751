"""Node shards on the API server: the poller that tells the store which nodes this instance owns, and the
static sharding step that fills NodeShards from label selectors.

With `--scheduler-sharding-mode=hard`, `NodeShardPoller` lists the NodeShards every `period` seconds and
keeps NodeShard `--scheduler-sharding-name`'s `spec.nodesDesired` in `Store.shard_nodes` (the session then
masks every other node out of each placement, framework/session.py) and every NodeShard's name in
`Store.shard_peers` (`PendingShares` shares the pending jobs out among them, docs/operations.md "Shards").
Until the first answer, and while the NodeShard does not exist, the instance owns no node: it never binds
outside a shard it has not read.
A malformed NodeShard is logged with the field at fault and the nodes last read stay in force.

`sync_node_shards` is the simplest policy of Volcano's sharding controller made static: each NodeShard
gets the nodes that match its label selector, a node matching several selectors going to the first
one given, so shards never overlap (`py-volcano shard`). `keep_node_shards` repeats it every few
seconds, so that nodes that join, leave or are relabelled reach their shard (`py-volcano shard --every`).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Collection, Sequence
from typing import Any

import structlog

from py_volcano.aio import wait_or_stop
from py_volcano.api import NODE_SHARD_PATH, JobID, parse_node_shard
from py_volcano.cache.client import ApiClient, api_failure, status_message
from py_volcano.cache.store import Store
from py_volcano.errors import ApiError

__all__ = ["NodeShardPoller", "assign_nodes", "keep_node_shards", "sync_node_shards"]

log = structlog.get_logger(__name__)

_MERGE_PATCH = "application/merge-patch+json"
_PAGE = "500"


class NodeShardPoller:
    """Keep `store.shard_nodes` equal to NodeShard `name`'s desired nodes (empty while it is missing)."""

    def __init__(self, client: ApiClient, store: Store, *, name: str, period: float) -> None:
        self.client = client
        self.store = store
        self.name = name
        self.period = period
        """Seconds between two reads of the NodeShard."""
        if store.shard_nodes is None:
            store.set_shard_nodes(frozenset())

    async def run(self, stop: asyncio.Event) -> None:
        """Read the NodeShard every `period` seconds until `stop` is set; failures are logged, never raised."""
        while not stop.is_set():
            await self.poll()
            if await wait_or_stop(stop, self.period):
                return

    async def poll(self) -> None:
        """List the NodeShards once: hand a change of this instance's nodes, and of the names of every
        shard (the instances that share the pending jobs), to the store."""
        try:
            status, body = await self.client.request("GET", NODE_SHARD_PATH)
        except ApiError as exc:
            log.warning("node_shard_read_failed", node_shard=self.name, reason=str(exc))
            return
        if status == 404:  # the CRD is not served: no NodeShard exists
            body = {}
        elif status != 200 or not isinstance(body, dict):
            log.warning("node_shard_read_failed", node_shard=self.name, status=status, reason=status_message(body))
            return
        items = body.get("items") or []
        named = {
            item["metadata"]["name"]: item
            for item in items
            if isinstance(item, dict) and isinstance(item.get("metadata"), dict) and item["metadata"].get("name")
        }
        peers = tuple(sorted(named))
        if peers != self.store.shard_peers:
            log.info("node_shards_listed", node_shards=list(peers))
            self.store.set_shard_peers(peers)
        own = named.get(self.name)
        if own is None:
            if self.store.shard_nodes:
                log.error("node_shard_missing", node_shard=self.name, nodes_kept=0)
            self._set(frozenset())
            return
        try:
            spec = parse_node_shard(own)
        except ValueError as exc:
            log.error("node_shard_invalid", node_shard=self.name, error=str(exc))
            return
        self._set(spec.nodes_desired)

    def _set(self, nodes: frozenset[str]) -> None:
        if nodes != self.store.shard_nodes:
            log.info("node_shard_changed", node_shard=self.name, nodes=len(nodes))
            self.store.set_shard_nodes(nodes)


class PendingShares:
    """Share the pending jobs out among the shard instances, so each pod gets one Binding, not one per shard.

    Job `j` is instance `sorted(shards)[crc32(j) % len(shards)]`'s. Another instance leaves it out of its
    cycles (it still counts in every queue's request and share, as a backed-off job does) until it has been
    pending `takeover` seconds by this instance's clock; from then on any instance may place it, so a job
    its own shard cannot hold is placed wherever it fits (binds stay optimistic: a second Binding gets 409).
    """

    __slots__ = ("_first_seen", "_next_takeover", "clock", "name", "takeover")

    def __init__(self, name: str, *, takeover: float, clock: Callable[[], float]) -> None:
        self.name = name
        self.takeover = takeover
        self.clock = clock
        self._first_seen: dict[JobID, float] = {}
        self._next_takeover: float | None = None

    @staticmethod
    def owner(job: JobID, shards: Sequence[str]) -> str:
        """Return the shard instance job `job` belongs to (`shards` sorted)."""
        return shards[zlib.crc32(job.encode()) % len(shards)]

    def mine(self, job: JobID, shards: Sequence[str]) -> bool:
        """Return whether job `job` is this instance's (`shards` sorted; fewer than two, or without this
        instance's: every job is)."""
        return len(shards) < 2 or self.name not in shards or self.owner(job, shards) == self.name

    def others(self, pending: Collection[JobID], shards: Sequence[str]) -> frozenset[JobID]:
        """Return the pending jobs this instance leaves to their own instance now; `shards`: every
        NodeShard's name, sorted (fewer than two, or without this instance's: none are left out)."""
        if len(shards) < 2 or self.name not in shards:
            self._first_seen.clear()
            self._next_takeover = None
            return frozenset()
        now, first_seen = self.clock(), self._first_seen
        for gone in first_seen.keys() - pending:
            del first_seen[gone]
        left: list[JobID] = []
        soonest: float | None = None
        for job in pending:
            if self.mine(job, shards):
                continue
            due = first_seen.setdefault(job, now) + self.takeover
            if now < due:
                left.append(job)
                soonest = due if soonest is None else min(soonest, due)
        self._next_takeover = soonest
        return frozenset(left)

    def note(self, jobs: Collection[JobID]) -> None:
        """Start the takeover clock of pending jobs another instance owns as they arrive (the fast path
        leaves them to it), not at the next cycle that sees them; a cycle is due when it runs out."""
        if not jobs:
            return
        now, first_seen = self.clock(), self._first_seen
        for job in jobs:
            first_seen.setdefault(job, now)
        due = now + self.takeover
        self._next_takeover = due if self._next_takeover is None else min(self._next_takeover, due)

    def due(self) -> bool:
        """Return whether a job the last call left out may now be taken over (a cycle should run)."""
        return self._next_takeover is not None and self.clock() >= self._next_takeover


def assign_nodes(shards: Sequence[str], matches: Sequence[Sequence[str]]) -> dict[str, list[str]]:
    """Give each shard the nodes its selector matched (`matches[i]` for `shards[i]`), sorted; a node matched
    by several goes to the first of them only."""
    taken: set[str] = set()
    assigned: dict[str, list[str]] = {}
    for shard, nodes in zip(shards, matches, strict=True):
        own = sorted(set(nodes) - taken)
        taken.update(own)
        assigned[shard] = own
    return assigned


async def sync_node_shards(client: ApiClient, selectors: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """Write each NodeShard's `spec.nodesDesired` from its label selector (`(name, selector)` pairs, in
    priority order), creating missing NodeShards; return the nodes per shard. ApiError on a refused call."""
    matches = [await _matching_nodes(client, selector) for _, selector in selectors]
    assigned = assign_nodes([name for name, _ in selectors], matches)
    for name, nodes in assigned.items():
        before = await _write_shard(client, name, nodes)
        if before is None:
            log.info("node_shard_created", node_shard=name, nodes=len(nodes))
        elif before != nodes:
            added, removed = sorted(set(nodes) - set(before)), sorted(set(before) - set(nodes))
            log.info("node_shard_updated", node_shard=name, nodes=len(nodes), added=added, removed=removed)
    return assigned


async def keep_node_shards(
    client: ApiClient, selectors: Sequence[tuple[str, str]], *, every: float, stop: asyncio.Event
) -> None:
    """Run `sync_node_shards` now and every `every` seconds until `stop` is set. A round the API server
    refuses or does not answer is logged (`node_shard_sync_failed`) and the next round tries again."""
    while not stop.is_set():
        try:
            await sync_node_shards(client, selectors)
        except ApiError as exc:
            log.warning("node_shard_sync_failed", reason=str(exc), retry_in=every)
        if await wait_or_stop(stop, every):
            return


async def _matching_nodes(client: ApiClient, selector: str) -> list[str]:
    names: list[str] = []
    params = {"labelSelector": selector, "limit": _PAGE}
    while True:
        status, body = await client.request("GET", "/api/v1/nodes", params=params)
        if status != 200 or not isinstance(body, dict):
            raise api_failure(ApiError, f"list nodes matching {selector!r}", status=status, body=body)
        names.extend(item["metadata"]["name"] for item in body.get("items") or [])
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return names
        params = {**params, "continue": token}


async def _write_shard(client: ApiClient, name: str, nodes: list[str]) -> list[str] | None:
    """Make NodeShard `name` desire `nodes`; return the nodes it desired before, None when it was created."""
    path = f"{NODE_SHARD_PATH}/{name}"
    status, body = await client.request("GET", path)
    if status == 404:
        manifest: dict[str, Any] = {
            "apiVersion": "shard.volcano.sh/v1alpha1",
            "kind": "NodeShard",
            "metadata": {"name": name},
            "spec": {"nodesDesired": nodes},
        }
        status, body = await client.request("POST", NODE_SHARD_PATH, body=manifest)
        if status not in (200, 201):
            raise api_failure(ApiError, f"create NodeShard {name}", status=status, body=body)
        return None
    if status != 200 or not isinstance(body, dict):
        raise api_failure(ApiError, f"read NodeShard {name}", status=status, body=body)
    before = sorted((body.get("spec") or {}).get("nodesDesired") or [])
    if before == nodes:
        return before
    patch = {"spec": {"nodesDesired": nodes}}
    status, body = await client.request("PATCH", path, body=patch, content_type=_MERGE_PATCH)
    if status != 200:
        raise api_failure(ApiError, f"update NodeShard {name} spec.nodesDesired", status=status, body=body)
    return before
