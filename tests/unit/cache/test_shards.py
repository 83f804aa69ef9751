"""Node shards against a fake API server: the poller keeps the store's shard, the static sync fills NodeShards
from label selectors (once, or every few seconds until stopped), and an optimistic bind another instance won
(409) leaves the pod counted once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
import structlog
from structlog.testing import capture_logs

from py_volcano.api import NODE_SHARD_PATH, JobID, TaskStatus
from py_volcano.cache import ApiClient, Binder, NodeShardPoller, sync_node_shards
from py_volcano.cache.shards import PendingShares, assign_nodes, keep_node_shards
from py_volcano.cache.store import NODES, PODS, Store
from py_volcano.errors import ApiError
from tests.unit.cache.test_store import node, pod, reconcile


class FakeApi:
    """Answers `ApiClient.request` (and `post`) from a table of (method, path) -> [(status, body), ...]
    and records calls."""

    def __init__(self, answers: Mapping[tuple[str, str], list[tuple[int, Any]]]) -> None:
        self.answers = {key: list(value) for key, value in answers.items()}
        self.calls: list[tuple[str, str, Any, Mapping[str, str] | None]] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        self.calls.append((method, path, body, params))
        queue = self.answers[(method, path)]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    async def post(self, path: str, body: object) -> tuple[int, Any]:
        return await self.request("POST", path, body=body)


def client(answers: Mapping[tuple[str, str], list[tuple[int, Any]]]) -> tuple[FakeApi, ApiClient]:
    fake = FakeApi(answers)
    return fake, cast(ApiClient, fake)


def shard_body(nodes: Any) -> dict[str, Any]:
    return {"metadata": {"name": "shard-a"}, "spec": {"nodesDesired": nodes}}


@pytest.fixture
def store() -> Store:
    created = Store(scheduler_name="py-volcano", clock=lambda: 100.0)
    for kind in (PODS, NODES):
        reconcile(created, kind, [], version=1, started=100.0)
    created.apply_event(NODES, "ADDED", node("n1", rv=2))
    created.apply_event(NODES, "ADDED", node("n2", rv=3))
    return created


def shard_list(*shards: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"metadata": {}, "items": list(shards)}


def test_poller_owns_no_node_before_reading_and_follows_the_node_shard(store: Store) -> None:
    other = {"metadata": {"name": "shard-b"}, "spec": {"nodesDesired": ["n9"]}}
    answers = [
        shard_list(shard_body(["n1"]), other),
        shard_list(shard_body(["n1", 7]), other),
        shard_list(other),
        (404, {}),
        shard_list(shard_body(["n2"])),
    ]
    _, api = client({("GET", NODE_SHARD_PATH): answers})
    poller = NodeShardPoller(api, store, name="shard-a", period=1.0)
    assert store.shard_nodes == frozenset()
    seen = []
    for _ in answers:
        asyncio.run(poller.poll())
        seen.append((store.shard_nodes, store.shard_peers))
    # a malformed NodeShard keeps the nodes last read; a missing one (or no NodeShard kind) owns none
    assert seen == [
        (frozenset({"n1"}), ("shard-a", "shard-b")),
        (frozenset({"n1"}), ("shard-a", "shard-b")),
        (frozenset(), ("shard-b",)),
        (frozenset(), ()),
        (frozenset({"n2"}), ("shard-a",)),
    ]
    assert store.snapshot().shard_nodes == frozenset({"n2"})


def test_pending_jobs_are_shared_out_and_taken_over_after_a_while() -> None:
    """Each pending job is one instance's; another leaves it alone for `takeover` seconds, then may place
    it; with one shard, or none naming this instance, nothing is left out."""
    clock = [0.0]
    shards = ("shard-a", "shard-b")
    jobs = [JobID(f"ns/job-{i}") for i in range(40)]
    a = PendingShares("shard-a", takeover=5.0, clock=lambda: clock[0])
    b = PendingShares("shard-b", takeover=5.0, clock=lambda: clock[0])
    left_by_a, left_by_b = a.others(jobs, shards), b.others(jobs, shards)
    assert left_by_a and left_by_b  # the jobs are spread over both
    assert left_by_a | left_by_b == set(jobs) and not left_by_a & left_by_b  # each job is exactly one's
    assert all(PendingShares.owner(job, shards) == "shard-b" for job in left_by_a)
    clock[0] = 4.9
    assert not a.due() and a.others(jobs, shards) == left_by_a
    clock[0] = 5.0
    assert a.due()
    assert a.others(jobs, shards) == frozenset()  # waited long enough: a may place b's jobs
    newcomer = next(job for job in (JobID(f"ns/new-{i}") for i in range(20)) if a.owner(job, shards) == "shard-b")
    assert a.others([*jobs, newcomer], shards) == {newcomer}  # a new job waits its own takeover
    assert a.others(jobs, ("shard-a",)) == frozenset()
    assert a.others(jobs, ("shard-b", "shard-c")) == frozenset()


def test_a_job_left_on_arrival_is_taken_over_a_takeover_after_it_came() -> None:
    """The fast path notes the arrivals it leaves to their own instance: the takeover runs from then,
    a cycle is due when it ends, and a later note of the same job does not restart it."""
    clock = [0.0]
    shards = ("shard-a", "shard-b")
    a = PendingShares("shard-a", takeover=5.0, clock=lambda: clock[0])
    theirs = next(job for job in (JobID(f"ns/job-{i}") for i in range(40)) if not a.mine(job, shards))
    a.note(frozenset({theirs}))
    clock[0] = 3.0
    a.note(frozenset({theirs}))
    assert not a.due() and a.others([theirs], shards) == {theirs}
    clock[0] = 5.0
    assert a.due()
    assert a.others([theirs], shards) == frozenset()


def test_poller_keeps_the_shard_when_the_api_server_does_not_answer(store: Store) -> None:
    class Down(FakeApi):
        async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
            raise ApiError("no answer", status=None)

    store.shard_nodes = frozenset({"n1"})
    asyncio.run(NodeShardPoller(cast(ApiClient, Down({})), store, name="shard-a", period=1.0).poll())
    assert store.shard_nodes == frozenset({"n1"})


def test_without_sharding_the_snapshot_has_no_shard(store: Store) -> None:
    assert store.snapshot().shard_nodes is None


def test_a_node_matched_by_several_selectors_goes_to_the_first() -> None:
    assigned = assign_nodes(["a", "b"], [["n2", "n1"], ["n1", "n3"]])
    assert assigned == {"a": ["n1", "n2"], "b": ["n3"]}


def test_sync_creates_missing_shards_and_patches_changed_ones() -> None:
    def nodes(*names: str) -> tuple[int, Any]:
        return 200, {"metadata": {}, "items": [{"metadata": {"name": name}} for name in names]}

    fake, api = client(
        {
            ("GET", "/api/v1/nodes"): [nodes("n1", "n2"), nodes("n3")],
            ("GET", f"{NODE_SHARD_PATH}/a"): [(404, {})],
            ("POST", NODE_SHARD_PATH): [(201, {})],
            ("GET", f"{NODE_SHARD_PATH}/b"): [(200, shard_body(["n1"]))],
            ("PATCH", f"{NODE_SHARD_PATH}/b"): [(200, {})],
        }
    )
    assigned = asyncio.run(sync_node_shards(api, [("a", "pool=a"), ("b", "pool=b")]))
    assert assigned == {"a": ["n1", "n2"], "b": ["n3"]}
    selectors = [params["labelSelector"] for method, _, _, params in fake.calls if params]
    assert selectors == ["pool=a", "pool=b"]
    writes = [(method, path, body) for method, path, body, _ in fake.calls if method != "GET"]
    created = {"apiVersion": "shard.volcano.sh/v1alpha1", "kind": "NodeShard", "metadata": {"name": "a"}}
    assert writes == [
        ("POST", NODE_SHARD_PATH, {**created, "spec": {"nodesDesired": ["n1", "n2"]}}),
        ("PATCH", f"{NODE_SHARD_PATH}/b", {"spec": {"nodesDesired": ["n3"]}}),
    ]


def test_sync_leaves_an_unchanged_shard_alone_and_reports_a_refusal() -> None:
    listing = (200, {"metadata": {}, "items": [{"metadata": {"name": "n1"}}]})
    fake, api = client(
        {("GET", "/api/v1/nodes"): [listing], ("GET", f"{NODE_SHARD_PATH}/a"): [(200, shard_body(["n1"]))]}
    )
    asyncio.run(sync_node_shards(api, [("a", "pool=a")]))
    assert [method for method, *_ in fake.calls] == ["GET", "GET"]
    _, bad = client({("GET", "/api/v1/nodes"): [(400, {"message": "unable to parse requirement"})]})
    with pytest.raises(ApiError, match=r"list nodes matching 'pool=='.*HTTP 400.*unable to parse"):
        asyncio.run(sync_node_shards(bad, [("a", "pool==")]))


@pytest.fixture
def info_logs() -> Iterator[None]:
    """Let info lines through whatever level an earlier test in this process configured."""
    previous = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    yield
    structlog.configure(**previous)


@pytest.mark.usefixtures("info_logs")
def test_the_sync_loop_retries_a_failed_round_logs_each_change_and_stops_on_request() -> None:
    """Round 1: no answer; round 2: creates the shard; round 3: a node joined; round 4: nothing changed."""

    def nodes(*names: str) -> tuple[int, Any]:
        return 200, {"metadata": {}, "items": [{"metadata": {"name": name}} for name in names]}

    stop = asyncio.Event()

    class Cluster(FakeApi):
        rounds = 0

        async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
            if path == "/api/v1/nodes":
                self.rounds += 1
                if self.rounds == 1:
                    raise ApiError("GET /api/v1/nodes: no answer", status=None)
                if self.rounds == 4:
                    stop.set()
            return await super().request(method, path, **kwargs)

    written = shard_body(["n1"])
    cluster = Cluster(
        {
            ("GET", "/api/v1/nodes"): [nodes("n1"), nodes("n1", "n2")],
            ("GET", f"{NODE_SHARD_PATH}/a"): [(404, {}), (200, written), (200, shard_body(["n1", "n2"]))],
            ("POST", NODE_SHARD_PATH): [(201, {})],
            ("PATCH", f"{NODE_SHARD_PATH}/a"): [(200, {})],
        }
    )
    with capture_logs() as logs:
        asyncio.run(keep_node_shards(cast(ApiClient, cluster), [("a", "pool=a")], every=0.01, stop=stop))
    assert cluster.rounds == 4
    events = [(line["event"], line.get("added"), line.get("removed")) for line in logs]
    assert events == [
        ("node_shard_sync_failed", None, None),
        ("node_shard_created", None, None),
        ("node_shard_updated", ["n2"], []),
    ]
    writes = [(method, body) for method, _, body, _ in cluster.calls if method != "GET"]
    assert writes[-1] == ("PATCH", {"spec": {"nodesDesired": ["n1", "n2"]}})
    assert len(writes) == 2, "an unchanged shard is not written"


def placed(store: Store, key: str) -> list[tuple[str, TaskStatus]]:
    """Where the snapshot holds pod `key`: (node, status) on every node that accounts it."""
    snapshot = store.snapshot()
    return [
        (name, task.status) for name, info in snapshot.nodes.items() for task in info.tasks.values() if task.key == key
    ]


@pytest.mark.parametrize("echo_first", [True, False], ids=["echo-then-409", "409-then-echo"])
def test_a_bind_another_instance_won_is_held_until_the_watch_shows_it(store: Store, echo_first: bool) -> None:
    store.apply_event(PODS, "ADDED", pod("p", rv=4))
    (job,) = store.snapshot().jobs.values()
    (info,) = job.tasks.values()
    conflict = (409, {"message": 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned'})
    _, api = client({("POST", "/api/v1/namespaces/ns/pods/p/binding"): [conflict]})
    binder = Binder(api, store, concurrency=2, is_leader=lambda: True)

    async def bind_and_answer() -> list[str]:
        sending = binder.submit([(info, "n1")], [])
        assert placed(store, "ns/p") == [("n1", TaskStatus.BINDING)]
        if echo_first:  # the other instance's bind shows up in the watch before our answer
            store.apply_event(PODS, "MODIFIED", pod("p", rv=5, node="n2", phase="Running"))
        report = await sending
        return list(report.bind_errors)

    assert asyncio.run(bind_and_answer()) == ["ns/p"]
    if not echo_first:
        assert placed(store, "ns/p") == [("n1", TaskStatus.BINDING)]  # bound somewhere: held until the watch says where
        store.apply_event(PODS, "MODIFIED", pod("p", rv=5, node="n2", phase="Running"))
    assert store.assumed == {}
    assert placed(store, "ns/p") == [("n2", TaskStatus.RUNNING)]
