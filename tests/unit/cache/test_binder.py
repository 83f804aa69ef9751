"""The binder against a loopback HTTP server standing in for the API server's pods/binding endpoint:
which failed binds keep their room (the Binding may have been written) and which release it, and how a
batch stops sending once the API server is found unreachable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from py_volcano.api import TaskInfo
from py_volcano.cache.binder import ApplyReport, Binder, DecisionStream
from py_volcano.cache.client import ApiClient, Credentials
from py_volcano.cache.store import NODES, POD_GROUPS, PODS, Store
from tests.ports import free_port
from tests.unit.cache.test_store import idle_cpu, node, pod, reconcile

#: An answer of the fake API server: (status, body), or None for no answer within the client's timeout.
Answer = tuple[int, Any] | None

ETCD_AWAY = 'Operation cannot be fulfilled on pods/binding "p0": rpc error: code = Unavailable desc = closing'
ALREADY_BOUND = 'Operation cannot be fulfilled on pods/binding "p0": pod p0 is already assigned to node "n1"'
MODIFIED = 'Operation cannot be fulfilled on pods "p0": the object has been modified'


@pytest.fixture
def clock() -> list[float]:
    """An injected monotonic clock: tests move it by assigning `clock[0]`."""
    return [100.0]


@pytest.fixture
def store(clock: list[float]) -> Store:
    """A synced store with one 4-CPU node, n1."""
    created = Store(scheduler_name="py-volcano", clock=lambda: clock[0])
    for kind in (PODS, NODES, POD_GROUPS):
        reconcile(created, kind, [], version=1, started=clock[0])
    created.apply_event(NODES, "ADDED", node("n1", rv=2))
    return created


def status(code: int, message: str = "") -> Answer:
    return code, {"kind": "Status", "code": code, "message": message or f"HTTP {code} from the fake"}


#: How a test hands the binds to the binder; the default submits them in one batch.
Deliver = Callable[[Binder, list[tuple[TaskInfo, str]]], Awaitable[ApplyReport]]


async def send(
    store: Store,
    answers: Mapping[str, Answer] | None,
    pods: int,
    *,
    concurrency: int = 1,
    deliver: Deliver = lambda binder, binds: binder.submit(binds, []),
) -> tuple[ApplyReport, list[str]]:
    """Bind pods p0..p<pods-1> to n1 through a loopback server answering each pod's Binding from
    `answers` (201 when absent); `answers` None: nothing listens. Return the report and the pods whose
    Binding reached the server."""
    received: list[str] = []

    async def binding(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        received.append(name)
        answer = (answers or {}).get(name, (201, {}))
        if answer is None:
            await asyncio.sleep(5)
            return web.json_response({}, status=201)
        return web.json_response(answer[1], status=answer[0])

    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    port = free_port()
    if answers is not None:
        await web.TCPSite(runner, "127.0.0.1", port).start()
    client = ApiClient(Credentials(server=f"http://127.0.0.1:{port}"), timeout=0.3)
    try:
        binder = Binder(client, store, concurrency=concurrency, is_leader=lambda: True)
        tasks = [store.pod(f"ns/p{i}") for i in range(pods)]
        report = await deliver(binder, [(parsed.task, "n1") for parsed in tasks if parsed is not None])
    finally:
        await client.close()
        await runner.cleanup()
    return report, received


def add_pods(store: Store, count: int) -> None:
    for i in range(count):
        store.apply_event(PODS, "ADDED", pod(f"p{i}", rv=10 + i, cpu="1"))


@pytest.mark.parametrize(
    "answer",
    [status(500), status(504), status(409, ETCD_AWAY), status(409, ALREADY_BOUND), None],
    ids=["500", "504", "409-etcd-unavailable", "409-already-assigned", "no-answer"],
)
def test_a_bind_that_may_have_been_written_keeps_its_room_until_a_later_list(
    store: Store, clock: list[float], answer: Answer
) -> None:
    """The Binding may have been committed: the pod holds its cpu on n1 after the call, so no other pod
    is given that room; a LIST sent after the call ended showing it unbound releases it."""
    add_pods(store, 1)
    clock[0] = 110.0
    report, received = asyncio.run(send(store, {"p0": answer}, 1))
    assert received == ["p0"] and list(report.bind_errors) == ["ns/p0"]
    assert not store.bind_observed("ns/p0")
    assert idle_cpu(store) == 3000

    reconcile(store, PODS, [pod("p0", rv=10)], version=20, started=111.0)
    assert store.bind_observed("ns/p0")
    assert idle_cpu(store) == 4000


def test_an_already_bound_answer_is_settled_by_the_watch_showing_the_pod(store: Store) -> None:
    """409 "already assigned": the pod is bound (an earlier call of ours whose answer was lost); it stays
    on n1 until the watch shows it there, never back to pending in between."""
    add_pods(store, 1)
    asyncio.run(send(store, {"p0": status(409, ALREADY_BOUND)}, 1))
    assert idle_cpu(store) == 3000
    store.apply_event(PODS, "MODIFIED", pod("p0", rv=30, node="n1", phase="Running"))
    assert store.bind_observed("ns/p0")
    assert idle_cpu(store) == 3000


@pytest.mark.parametrize("code", [400, 403, 404, 422, 409], ids=str)
def test_a_definite_refusal_releases_the_room_at_once(store: Store, code: int) -> None:
    """An API server that answered and refused wrote nothing: the pod is pending again in the next snapshot."""
    add_pods(store, 1)
    report, _ = asyncio.run(send(store, {"p0": status(code, MODIFIED if code == 409 else "")}, 1))
    assert f"HTTP {code}" in report.bind_errors["ns/p0"]
    assert store.bind_observed("ns/p0")
    assert idle_cpu(store) == 4000
    assert report.unreachable == {}


@pytest.mark.parametrize("code", [503, 429])
def test_an_unavailable_api_server_stops_the_batch_with_one_log_line(store: Store, code: int) -> None:
    """The first 503/429 ends the batch: the other binds are not sent, every pod is rolled back (the
    answer says nothing was written), and one error line tells counts and the first reason."""
    add_pods(store, 4)
    with capture_logs() as logs:
        report, received = asyncio.run(send(store, {f"p{i}": status(code) for i in range(4)}, 4))
    assert received == ["p0"]
    assert list(report.unreachable) == ["ns/p0"] and sorted(report.not_sent) == ["ns/p1", "ns/p2", "ns/p3"]
    assert store.assumed == {}
    assert idle_cpu(store) == 4000
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [line["event"] for line in errors] == ["api_server_unreachable"]
    assert errors[0]["failed"] == 1 and errors[0]["not_sent"] == 3 and f"HTTP {code}" in errors[0]["reason"]


def test_a_refused_connection_rolls_the_batch_back_and_the_next_batch_binds_all(store: Store) -> None:
    """Nothing listens: the binds that were in flight fail to connect (certainly not written), the rest
    are not sent, all are pending again, one error line; once the server answers every pod is bound."""
    add_pods(store, 6)
    with capture_logs() as logs:
        report, _ = asyncio.run(send(store, None, 6, concurrency=2))
    assert len(report.unreachable) + len(report.not_sent) == 6 and len(report.unreachable) <= 2
    assert "no answer" in next(iter(report.unreachable.values()))
    assert store.assumed == {}
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [line["event"] for line in errors] == ["api_server_unreachable"]

    report, received = asyncio.run(send(store, {}, 6, concurrency=2))
    assert sorted(report.bound) == [f"ns/p{i}" for i in range(6)] and len(received) == 6


async def streamed(binder: Binder, binds: list[tuple[TaskInfo, str]]) -> ApplyReport:
    """Hand the binds to a `DecisionStream` one statement (one bind) at a time from a worker thread, as
    a cycle's commits do, then close it."""
    stream = DecisionStream(binder, asyncio.get_running_loop())

    def cycle() -> None:
        for bind in binds:
            stream.put([bind])

    await asyncio.to_thread(cycle)
    return await stream.close([])


def test_binds_streamed_as_statements_commit_are_all_sent_under_one_report(store: Store) -> None:
    add_pods(store, 5)
    report, received = asyncio.run(send(store, {}, 5, deliver=streamed))
    assert sorted(report.bound) == [f"ns/p{i}" for i in range(5)] and sorted(received) == [f"p{i}" for i in range(5)]
    assert all(store.bind_observed(f"ns/p{i}") is False for i in range(5))  # assumed until the watch shows them


def test_a_stream_stops_at_an_unavailable_api_server_with_one_log_line(store: Store) -> None:
    """The report is shared: once a bind of one statement finds the API server unavailable, the binds of
    the later statements are not sent, and the cycle logs it once."""
    add_pods(store, 4)
    with capture_logs() as logs:
        report, received = asyncio.run(send(store, {f"p{i}": status(503) for i in range(4)}, 4, deliver=streamed))
    assert received == ["p0"]
    assert list(report.unreachable) == ["ns/p0"] and sorted(report.not_sent) == ["ns/p1", "ns/p2", "ns/p3"]
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [line["event"] for line in errors] == ["api_server_unreachable"] and errors[0]["not_sent"] == 3
