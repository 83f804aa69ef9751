"""The status writer sends one write per object at a time: a newer status queued while the older is
in flight waits for it, so the API server cannot apply the older one last; other objects go alongside."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from py_volcano.api import Resource, TaskID, TaskInfo
from py_volcano.cache.client import ApiClient
from py_volcano.cache.status import StatusWriter, _StatusPatch

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


class HeldWrites:
    """Answers every PATCH 200 once its path's first write is released (`release(name)`); records the
    order bodies arrive in and the most writes of one path in flight at once."""

    def __init__(self, *held: str) -> None:
        self.gates = {f"{QUEUES}/{name}/status": asyncio.Event() for name in held}
        self.started = {path: asyncio.Event() for path in self.gates}
        self.arrived: list[tuple[str, str]] = []
        self.in_flight: dict[str, int] = {}
        self.most_at_once: dict[str, int] = {}

    def release(self, name: str) -> None:
        self.gates[f"{QUEUES}/{name}/status"].set()

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.in_flight[path] = self.in_flight.get(path, 0) + 1
        self.most_at_once[path] = max(self.most_at_once.get(path, 0), self.in_flight[path])
        try:
            if path in self.started and not self.started[path].is_set():
                self.started[path].set()
                await self.gates[path].wait()
            self.arrived.append((path.split("/")[-2], kwargs["body"]["status"]["allocated"]["cpu"]))
            return 200, {}
        finally:
            self.in_flight[path] -= 1


def _patch(name: str, allocated: str) -> _StatusPatch:
    return _StatusPatch("Queue", name, f"{QUEUES}/{name}", {"status": {"allocated": {"cpu": allocated}}}, None)


def test_a_newer_status_waits_for_the_older_write_of_the_same_object() -> None:
    async def play() -> HeldWrites:
        client = HeldWrites("q", "a")
        writer = StatusWriter(cast(ApiClient, client), scheduler_name="py-volcano", concurrency=4)
        writer._pending[("Queue", "q")] = _patch("q", "1")
        writer._pending[("Queue", "a")] = _patch("a", "1")
        flushing = asyncio.create_task(writer.flush())
        await asyncio.gather(*(started.wait() for started in client.started.values()))
        writer._pending[("Queue", "q")] = _patch("q", "2")  # the next cycle's status, while the first is sent
        writer._pending[("Queue", "r")] = _patch("r", "1")
        client.release("a")  # the worker that sent a is free again: it takes r, not q's second write
        await asyncio.sleep(0.05)
        assert client.arrived == [("a", "1"), ("r", "1")]
        client.release("q")
        await flushing
        return client

    client = asyncio.run(play())
    assert [allocated for name, allocated in client.arrived if name == "q"] == ["1", "2"]
    assert client.most_at_once[f"{QUEUES}/q/status"] == 1


class Answered:
    """Answers every write 200 at once, except event writes while `events_stuck` (they never return);
    records the kind of each write that arrived."""

    def __init__(self, *, events_stuck: bool = False) -> None:
        self.events_stuck = events_stuck
        self.arrived: list[str] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        event = "/events" in path
        if event and self.events_stuck:
            await asyncio.Event().wait()
        self.arrived.append("event" if event else "status")
        return 200, {}


def _bound(writer: StatusWriter, count: int) -> None:
    """Queue a Queue status and `count` Scheduled events, as binds record them."""
    writer._pending[("Queue", "q")] = _patch("q", "1")
    for i in range(count):
        task = TaskInfo(uid=TaskID(f"uid-{i}"), name=f"p{i}", namespace="ns", resreq=Resource())
        writer.record_bind(task, "n1")


def test_held_events_wait_while_the_status_writes_go() -> None:
    """With events held a flush sends the status writes and ends; the events wait for the next flush."""

    async def play() -> tuple[list[str], int, list[str], int]:
        client = Answered()
        writer = StatusWriter(cast(ApiClient, client), scheduler_name="py-volcano", concurrency=4)
        _bound(writer, 3)
        writer.hold_events()
        await writer.flush()
        first, waiting = list(client.arrived), writer.events_waiting
        writer.hold_events(False)
        await writer.flush()
        return first, waiting, client.arrived[len(first) :], writer.events_waiting

    assert asyncio.run(play()) == (["status"], 3, ["event"] * 3, 0)
