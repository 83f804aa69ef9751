"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules and timings.

The leader renews every `retry_period`; it counts as leader only while its last successful renewal
is younger than `renew_deadline`, so a leader cut off from the API server stops binding by itself,
before any standby may take over (`lease_duration` > `renew_deadline`). Writes carry the Lease's
resourceVersion: of two instances racing for it, one gets 409 Conflict and stays standby.

A standby decides a Lease has expired `lease_duration` after its last renewal. Like client-go it
measures from when it *observed* the renewal (no trust in other clocks), but it accepts the renewTime
written in the Lease when that is at most one `retry_period` earlier: with synchronised clocks a
standby then takes over within `lease_duration` of the leader's last renewal instead of up to one
polling interval later, and a clock skew can advance a takeover by at most `retry_period`, which the
gap between `renew_deadline` and `lease_duration` absorbs.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from py_volcano.aio import wait_or_stop
from py_volcano.cache.client import ApiClient, status_message
from py_volcano.errors import ApiError
from py_volcano.settings import LeaderSettings

__all__ = ["LeaderElector", "default_identity"]

log = structlog.get_logger(__name__)


def default_identity() -> str:
    """Return `<hostname>_<random>`, client-go's holderIdentity shape."""
    return f"{socket.gethostname()}_{secrets.token_hex(4)}"


def _micro_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class LeaderElector:
    """Acquire, renew and release one Lease; `is_leader()` answers at any moment."""

    def __init__(
        self,
        client: ApiClient,
        settings: LeaderSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self.monotonic = monotonic
        self.wall = wall
        self.holder = ""
        self._leading = False
        self._renewed_at = 0.0
        self._observed: tuple[Any, ...] = ()
        self._observed_at = 0.0
        self._expiry = 0.0
        self._attempt = asyncio.Lock()
        self.changed = asyncio.Event()

    @property
    def path(self) -> str:
        """Return the Lease's API path."""
        namespace, name = self.settings.namespace, self.settings.lease_name
        return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"

    def is_leader(self) -> bool:
        """Return whether this instance holds the Lease with a renewal younger than `renew_deadline`."""
        return self._leading and self.monotonic() - self._renewed_at < self.settings.renew_deadline

    async def run(self, stop: asyncio.Event) -> None:
        """Try to acquire, then keep renewing, until `stop` is set (then the caller calls `release`)."""
        log.info("leader_election_started", identity=self.identity, lease=self.path)
        while not stop.is_set():
            await self.try_acquire_or_renew()
            delay = self.settings.retry_period
            if not self._leading and self.holder:
                delay = min(delay, max(self._expiry - self.wall(), 0.05))
            await wait_or_stop(stop, delay)

    async def try_acquire_or_renew(self) -> bool:
        """Make one attempt; return whether this instance leads afterwards."""
        async with self._attempt:
            return await self._try_acquire_or_renew()

    async def _try_acquire_or_renew(self) -> bool:
        sent_at, now = self.monotonic(), self.wall()
        try:
            status, lease = await self.client.request("GET", self.path)
            if status == 404:
                status, lease = await self._create(now)
                return self._outcome(status, lease, sent_at)
            if status != 200 or not isinstance(lease, dict):
                return self._failed(f"get lease: HTTP {status}: {status_message(lease)}")
            spec = lease.get("spec") or {}
            self._observe(spec, now)
            holder = str(spec.get("holderIdentity") or "")
            if holder and holder != self.identity and now < self._expiry:
                self._set_holder(holder)
                return self._lose(f"lease held by {holder}") if self._leading else False
            status, answer = await self.client.request("PUT", self.path, body=self._claim(lease, now))
            return self._outcome(status, answer, sent_at)
        except ApiError as exc:
            return self._failed(str(exc))

    async def release(self) -> None:
        """Give the Lease up (empty holderIdentity) so that a standby takes over at once. A renewal in
        flight finishes first: its write would otherwise change the Lease's resourceVersion under the
        release's and the release would get 409 Conflict, leaving the Lease held until it expires."""
        async with self._attempt:
            await self._release()

    async def _release(self) -> None:
        if not self._leading:
            return
        self._leading = False
        self.changed.set()
        try:
            status, lease = await self.client.request("GET", self.path)
            if status != 200 or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            now = _micro_time(self.wall())
            lease["spec"] = dict(lease["spec"]) | {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": now,
                "acquireTime": now,
            }
            status, answer = await self.client.request("PUT", self.path, body=lease)
        except ApiError as exc:
            log.error("lease_release_failed", reason=str(exc))
            return
        if status == 200:
            log.info("lease_released", identity=self.identity)
        else:
            log.error("lease_release_failed", reason=f"HTTP {status}: {status_message(answer)}")

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        by_observation = self._observed_at + duration
        renewed = _parse_time(spec.get("renewTime"))
        if renewed is None:
            self._expiry = by_observation
        else:
            floor = by_observation - self.settings.retry_period
            self._expiry = min(by_observation, max(renewed + duration, floor))

    def _claim(self, lease: dict[str, Any], now: float) -> dict[str, Any]:
        spec = lease.get("spec") or {}
        mine = spec.get("holderIdentity") == self.identity
        transitions = int(spec.get("leaseTransitions") or 0)
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": lease.get("metadata") or {},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(self.settings.lease_duration),
                "acquireTime": spec.get("acquireTime") if mine else _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": transitions if mine else transitions + 1,
            },
        }

    async def _create(self, now: float) -> tuple[int, Any]:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.settings.lease_name, "namespace": self.settings.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(self.settings.lease_duration),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        collection = self.path.rsplit("/", 1)[0]
        return await self.client.request("POST", collection, body=body)

    def _outcome(self, status: int, answer: Any, sent_at: float) -> bool:
        if status in (200, 201):
            self._renewed_at = sent_at
            self._set_holder(self.identity)
            if not self._leading:
                self._leading = True
                self.changed.set()
                log.info("leader_elected", identity=self.identity)
            return True
        if status == 409:
            return self._lose("lost the race for the lease") if self._leading else False
        return self._failed(f"write lease: HTTP {status}: {status_message(answer)}")

    def _failed(self, reason: str) -> bool:
        log.error("lease_renew_failed" if self._leading else "lease_acquire_failed", reason=reason)
        if self._leading and not self.is_leader():
            return self._lose(f"no renewal for {self.settings.renew_deadline:g}s")
        return self.is_leader()

    def _lose(self, reason: str) -> bool:
        self._leading = False
        self.changed.set()
        log.error("leadership_lost", identity=self.identity, reason=reason)
        return False

    def _set_holder(self, holder: str) -> None:
        if holder != self.holder:
            self.holder = holder
            log.info("leader_observed", holder=holder)
