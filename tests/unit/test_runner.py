"""The runner's configuration file: loaded once, re-read on change, a broken new file keeps the old one."""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any, cast

import pytest
import structlog
from structlog.testing import capture_logs

from py_volcano.errors import ConfigError
from py_volcano.registry import default_registry
from py_volcano.runner import ConfFile


@pytest.fixture(autouse=True)
def unfiltered_logging() -> Iterator[None]:
    """structlog's defaults (no level filter) for these tests, whatever an earlier test configured."""
    saved = structlog.get_config()
    structlog.reset_defaults()
    yield
    structlog.configure(**saved)


ALLOCATE = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"
ENQUEUE = "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n"
BROKEN = "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: perhaps\n"
UNSUPPORTED = "actions: enqueue, dance, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: magic\n"
EXPECTED_ERRORS = [("scheduler_conf_unsupported", "action", "dance"), ("scheduler_conf_unsupported", "plugin", "magic")]
BAD_ARGUMENT = (
    "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n      binpack.weight: abc\n"
)


def publish(directory: Path, text: str, version: str) -> Path:
    """Write `text` the way a ConfigMap volume does: a new directory, then an atomic ..data swap."""
    target = directory / f"..{version}"
    target.mkdir()
    (target / "volcano-scheduler.conf").write_text(text)
    staging = directory / "..data_tmp"
    staging.symlink_to(target.name)
    os.replace(staging, directory / "..data")
    path = directory / "volcano-scheduler.conf"
    if not path.is_symlink():
        path.symlink_to("..data/volcano-scheduler.conf")
    return path


def test_without_a_file_the_packaged_default_runs() -> None:
    """No --scheduler-conf: the packaged default configuration, never reloaded."""
    conf = ConfFile(None, default_registry())
    assert list(conf.current().actions) == ["enqueue", "allocate", "backfill"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(None, "cannot read", id="missing"),
        pytest.param(BROKEN, "key enableJobOrder: expected true or false", id="bad-switch"),
        pytest.param(
            BAD_ARGUMENT, "plugin binpack: argument binpack.weight: 'abc' is not an integer", id="bad-plugin-argument"
        ),
    ],
)
def test_an_unusable_first_file_is_a_config_error(tmp_path: Path, text: str | None, message: str) -> None:
    """The process must not start on a file it cannot use."""
    path = tmp_path / "volcano-scheduler.conf"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ConfFile(path, default_registry())


def test_a_swapped_file_is_reloaded_and_a_broken_one_keeps_the_last_good(tmp_path: Path) -> None:
    """A ConfigMap-style swap takes effect at the next `current()`; a broken one is ignored; a later good
    one takes effect again."""
    path = publish(tmp_path, ALLOCATE, "v1")
    conf = ConfFile(path, default_registry())
    assert list(conf.current().actions) == ["enqueue", "allocate"]

    with capture_logs() as logs:
        publish(tmp_path, BROKEN, "v2")
        assert list(conf.current().actions) == ["enqueue", "allocate"]
    assert [entry["event"] for entry in logs] == ["scheduler_conf_invalid"]
    assert "enableJobOrder" in logs[0]["reason"]

    with capture_logs() as logs:
        publish(tmp_path, ENQUEUE, "v3")
        assert list(conf.current().actions) == ["enqueue"]
    assert [entry["event"] for entry in logs] == ["scheduler_conf_reloaded"]


def test_a_reloaded_file_with_a_bad_plugin_argument_keeps_the_last_good(tmp_path: Path) -> None:
    """A bad argument value fails the reload as a whole: the running configuration stays, the error is logged
    naming the plugin, the key and the value."""
    path = publish(tmp_path, ALLOCATE, "v1")
    conf = ConfFile(path, default_registry())
    good = conf.current()
    with capture_logs() as logs:
        publish(tmp_path, BAD_ARGUMENT, "v2")
        assert conf.current() is good
        assert conf.current() is good
    assert [entry["event"] for entry in logs] == ["scheduler_conf_invalid"], "logged once, not every cycle"
    assert logs[0]["reason"] == f"{path}: plugin binpack: argument binpack.weight: 'abc' is not an integer"


def test_a_rewrite_with_the_same_content_keeps_the_loaded_configuration(tmp_path: Path) -> None:
    """Touching the file without changing it does not re-parse it (the same object is returned)."""
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(ALLOCATE)
    conf = ConfFile(path, default_registry())
    first = conf.current()
    path.write_text(ALLOCATE)
    os.utime(path, ns=(1, 1))
    assert conf.current() is first


def test_a_vanished_file_keeps_the_last_good_configuration(tmp_path: Path) -> None:
    """A file that disappears (a volume being remounted) keeps the configuration running."""
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(ENQUEUE)
    conf = ConfFile(path, default_registry())
    path.unlink()
    with capture_logs() as logs:
        assert list(conf.current().actions) == ["enqueue"]
        assert list(conf.current().actions) == ["enqueue"]
    assert [entry["event"] for entry in logs] == ["scheduler_conf_unreadable"], "logged once, not every cycle"


def test_a_cycle_that_raises_is_logged_and_the_loop_goes_on() -> None:
    """A failing cycle (a plugin bug) yields no outcome and a cycle_failed event; nothing propagates."""
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.runner import Runner
    from py_volcano.settings import Settings

    async def scenario() -> tuple[object, list[MutableMapping[str, Any]]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())

            async def broken(number: int) -> None:
                raise RuntimeError(f"plugin bug in cycle {number}")

            runner.cycle = broken  # type: ignore[method-assign,assignment]
            with capture_logs() as logs:
                outcome = await runner.guarded_cycle(7)
            return outcome, logs
        finally:
            await client.close()

    outcome, logs = asyncio.run(scenario())
    assert outcome is None
    assert [(entry["event"], entry["cycle"]) for entry in logs] == [("cycle_failed", 7)]
    assert "plugin bug in cycle 7" in str(logs[0]["reason"])


def test_a_fast_path_that_raises_is_logged_and_leaves_its_arrivals_to_the_next_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failing fast path (a plugin bug) ends the kept session, logs fast_path_failed and leaves the new
    work set for a cycle; nothing propagates into the loop."""
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.framework import run_cycle
    from py_volcano.runner import Runner
    from py_volcano.settings import LeaderSettings, Settings
    from tests.unit.cache.test_store import node, pod

    def broken(*_: object, **__: object) -> list[object]:
        raise RuntimeError("plugin bug in the fast path")

    monkeypatch.setattr("py_volcano.runner.place_arrivals", broken)

    async def scenario() -> tuple[Runner, list[MutableMapping[str, Any]]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            alone = Settings(leader=LeaderSettings(enabled=False))
            runner = Runner(alone, client, ConfFile(None, default_registry()), registry=default_registry())
            runner.store.apply_event(NODES, "ADDED", node("n1", rv=1))
            snapshot = runner.store.snapshot()
            keep = functools.partial(runner._keep, outside=runner.store.outside_changes)
            run_cycle(snapshot, runner.conf.current(), default_registry(), keep=keep)
            assert runner.kept is not None
            runner.store.apply_event(PODS, "ADDED", pod("arrival", rv=2))
            runner.store.work_arrived.clear()
            with capture_logs() as logs:
                await runner._place_arrivals()
            return runner, logs
        finally:
            await client.close()

    runner, logs = asyncio.run(scenario())
    assert runner.kept is None
    assert runner.store.work_arrived.is_set()
    assert [entry["event"] for entry in logs] == ["fast_path_failed", "fast_path"]
    assert "plugin bug in the fast path" in str(logs[0]["reason"])


def test_unsupported_names_are_logged_as_errors_at_load_and_at_every_reload(tmp_path: Path) -> None:
    """An action or plugin py-volcano lacks is skipped and the rest runs; each is an error log line when the
    file loads and again when a changed file is reloaded, and the listener (the metrics) sees every load."""
    path = publish(tmp_path, UNSUPPORTED, "v1")
    with capture_logs() as logs:
        conf = ConfFile(path, default_registry())
    assert list(conf.current().actions) == ["enqueue", "allocate"]
    errors = [(e["event"], e["kind"], e["name"]) for e in logs if e["log_level"] == "error"]
    assert errors == EXPECTED_ERRORS
    seen: list[tuple[tuple[str, str], ...]] = []
    conf.listener = lambda loaded: seen.append(loaded.unsupported)
    with capture_logs() as logs:
        publish(tmp_path, UNSUPPORTED.replace("enqueue, ", ""), "v2")
        assert list(conf.current().actions) == ["allocate"]
    errors = [(e["event"], e["kind"], e["name"]) for e in logs if e["log_level"] == "error"]
    assert errors == EXPECTED_ERRORS
    assert seen == [(("action", "dance"), ("plugin", "magic"))]


def test_the_binds_committed_before_a_cycle_fails_are_seen_through(tmp_path: Path) -> None:
    """Binds leave as statements commit; when a later action raises, the ones already handed over are
    still sent (here to an address where nothing listens) and tracked until answered."""
    from py_volcano.actions import ACTIONS
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.framework import ActionEntry, NoArgs, Registry, Session
    from py_volcano.runner import Runner
    from py_volcano.settings import Settings
    from tests.builders import node, pod

    class Broken:
        name = "broken"

        def execute(self, ssn: Session) -> None:
            raise RuntimeError("an action's bug")

    registry = default_registry()
    registry = Registry(
        plugins=registry.plugins, actions={**ACTIONS, "broken": ActionEntry(NoArgs.parse, lambda _: Broken())}
    )

    async def scenario(directory: Path) -> tuple[object, set[str]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"), timeout=0.3)
        try:
            path = directory / "volcano-scheduler.conf"
            path.write_text("actions: enqueue, allocate, broken\ntiers:\n- plugins:\n  - name: gang\n")
            runner = Runner(Settings(), client, ConfFile(path, registry), registry=registry)
            runner.store.apply_event(NODES, "ADDED", node(name="n1", cpu="4"))
            runner.store.apply_event(PODS, "ADDED", pod(name="p", cpu="1"))
            with capture_logs():
                outcome = await runner.guarded_cycle(3)
                [sending] = runner.in_flight
                report = await sending
            return outcome, {*report.unreachable, *report.not_sent, *report.bound}
        finally:
            await client.close()

    outcome, tried = asyncio.run(scenario(tmp_path))
    assert outcome is None and tried == {"default/p"}


def test_a_cycle_takes_its_snapshot_off_the_event_loop_with_the_store_held() -> None:
    """While the snapshot is taken (in a worker thread) the loop goes on: a watch event that comes then
    waits in the store's hold, out of that snapshot, and is in the store once the snapshot is taken."""
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.runner import Runner
    from py_volcano.settings import Settings
    from tests.unit.cache.test_store import node, pod

    async def scenario() -> tuple[list[bool], set[str], set[str]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())
            store, loop = runner.store, asyncio.get_running_loop()
            store.apply_event(NODES, "ADDED", node("n1", rv=1))
            store.apply_event(PODS, "ADDED", pod("before", rv=2, node="n1", phase="Running"))
            taken, seen = store.snapshot, []

            def slow_snapshot(**kwargs: Any) -> Any:
                seen.append(store.held_changes is not None)
                time.sleep(0.3)  # the event below comes meanwhile
                return taken(**kwargs)

            def event() -> None:
                seen.append(True)  # the loop ran while the snapshot was being taken
                store.apply_event(PODS, "ADDED", pod("during", rv=3, node="n1", phase="Running"))

            store.snapshot = slow_snapshot  # type: ignore[method-assign]
            loop.call_later(0.1, event)
            with capture_logs():
                result, _ = await runner.cycle(0)
            return seen, set(result.pod_groups), set(store.records[PODS.name])
        finally:
            await client.close()

    seen, decided, stored = asyncio.run(scenario())
    assert seen == [True, True]
    assert decided == {"ns/podgroup-uid-before"}  # the event that came during the snapshot is not in it
    assert stored == {"ns/before", "ns/during"}


def test_under_hard_sharding_the_fast_path_places_its_own_arrivals_and_counts_the_rest() -> None:
    """With two shard instances the kept session places the arrivals this instance owns, on its own nodes;
    another instance's arrival joins it counted and is left alone (no cycle asked for it), and once that
    instance binds it, the session holds it on that node and goes on placing."""
    from py_volcano.api import JobID, TaskStatus
    from py_volcano.cache import ApiClient, Credentials, PendingShares
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.framework import run_cycle
    from py_volcano.runner import Runner
    from py_volcano.settings import LeaderSettings, Settings, ShardSettings
    from tests.unit.cache.test_store import node, pod

    peers = ("shard-a", "shard-b")

    def named(owner: str, count: int) -> list[str]:
        names = (f"{owner}-{i}" for i in range(100))
        return [name for name in names if PendingShares.owner(JobID(f"ns/podgroup-uid-{name}"), peers) == owner][
            :count
        ]

    mine, theirs = named("shard-a", 2), named("shard-b", 1)

    async def scenario() -> tuple[list[tuple[str, str]], list[MutableMapping[str, Any]]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"), timeout=0.3)
        try:
            settings = Settings(leader=LeaderSettings(enabled=False), shard=ShardSettings(mode="hard", name="shard-a"))
            runner = Runner(settings, client, ConfFile(None, default_registry()), registry=default_registry())
            store = runner.store
            store.apply_event(NODES, "ADDED", node("n1", rv=1))
            store.apply_event(NODES, "ADDED", node("n2", rv=2))
            store.set_shard_nodes(frozenset({"n1"}))
            store.set_shard_peers(peers)
            assert runner._fast_path()
            keep = functools.partial(runner._keep, outside=store.outside_changes)
            run_cycle(store.snapshot(), runner.conf.current(), default_registry(), keep=keep)
            store.apply_event(PODS, "ADDED", pod(mine[0], rv=3))
            store.apply_event(PODS, "ADDED", pod(theirs[0], rv=4))
            store.work_arrived.clear()
            with capture_logs() as logs:
                await runner._place_arrivals()
                assert not store.work_arrived.is_set()  # the other instance's arrival asks no cycle
                assert runner.pending_shares is not None  # and its takeover runs from its arrival
                assert set(runner.pending_shares._first_seen) == {JobID(f"ns/podgroup-uid-{theirs[0]}")}
                store.apply_event(PODS, "MODIFIED", pod(theirs[0], rv=5, node="n2"))
                store.apply_event(PODS, "ADDED", pod(mine[1], rv=6))
                await runner._place_arrivals()
                await asyncio.gather(*runner.in_flight)
            assert runner.kept is not None
            ssn = runner.kept.session
            bound = [(task.name, node_name) for task, node_name in ssn.binds]
            held = ssn.nodes["n2"].tasks.values()
            assert [(task.name, task.status) for task in held] == [(theirs[0], TaskStatus.BOUND)]
            return bound, logs
        finally:
            await client.close()

    bound, logs = asyncio.run(scenario())
    assert bound == [(mine[0], "n1"), (mine[1], "n1")]
    assert "fast_path_ended" not in [entry["event"] for entry in logs]


@pytest.mark.parametrize(("arrivals", "on_the_loop"), [(1, True), (16, True), (17, False)])
def test_a_few_arrivals_are_placed_on_the_event_loop_more_in_a_thread(
    monkeypatch: pytest.MonkeyPatch, arrivals: int, on_the_loop: bool
) -> None:
    """Up to `_INLINE_ARRIVALS` arrivals are placed on the event loop's own thread, more in a worker
    thread; either way every one is placed and bound."""
    import threading

    from py_volcano import runner as runner_module
    from py_volcano.actions.arrivals import place_arrivals as place
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.framework import run_cycle
    from py_volcano.runner import Runner
    from py_volcano.settings import LeaderSettings, Settings
    from tests.unit.cache.test_store import node, pod

    threads: list[int] = []

    def noted(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return place(*args, **kwargs)

    monkeypatch.setattr("py_volcano.runner.place_arrivals", noted)

    async def scenario() -> tuple[list[str], int]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"), timeout=0.3)
        try:
            alone = Settings(leader=LeaderSettings(enabled=False))
            runner = Runner(alone, client, ConfFile(None, default_registry()), registry=default_registry())
            runner.store.apply_event(NODES, "ADDED", node("n1", rv=1, cpu="64"))
            keep = functools.partial(runner._keep, outside=runner.store.outside_changes)
            run_cycle(runner.store.snapshot(), runner.conf.current(), default_registry(), keep=keep)
            for i in range(arrivals):
                runner.store.apply_event(PODS, "ADDED", pod(f"arrival-{i}", rv=2 + i))
            await runner._place_arrivals()
            await asyncio.gather(*runner.in_flight)
            assert runner.kept is not None
            return sorted(task.name for task, _ in runner.kept.session.binds), threading.get_ident()
        finally:
            await client.close()

    bound, loop_thread = asyncio.run(scenario())
    assert bound == sorted(f"arrival-{i}" for i in range(arrivals))
    assert (threads == [loop_thread]) is on_the_loop
    assert runner_module._INLINE_ARRIVALS == 16


def test_without_a_kept_session_arrivals_are_not_kept() -> None:
    """A standby (no cycle, no kept session) forgets the arrivals and the binds elsewhere it notes, instead
    of keeping one key for every pod the leader sees created and binds."""
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.cache.store import NODES, PODS
    from py_volcano.runner import Runner
    from py_volcano.settings import Settings
    from tests.unit.cache.test_store import node, pod, reconcile

    async def scenario() -> tuple[dict[str, None], dict[str, None]]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())
            store = runner.store
            reconcile(store, PODS, [], version=0, started=0.0)  # pods listed: each change is noted on its own
            store.apply_event(NODES, "ADDED", node("n1", rv=1))
            store.apply_event(PODS, "ADDED", pod("waits", rv=2))
            store.apply_event(PODS, "ADDED", pod("bound", rv=3, node="n1"))
            assert store.arrivals and store.bound_elsewhere
            await runner._place_arrivals()
            return store.arrivals, store.bound_elsewhere
        finally:
            await client.close()

    assert asyncio.run(scenario()) == ({}, {})


def test_shutdown_sends_the_statuses_then_gives_up_on_events_after_their_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Status writes go first and all of them; events waiting behind a burst's binds get
    `_SHUTDOWN_EVENTS_GRACE` seconds, then are dropped with a warning, not a 10 s timeout and an error."""
    from py_volcano import runner as runner_module
    from py_volcano.cache import ApiClient, Credentials, StatusWriter
    from py_volcano.runner import Runner
    from py_volcano.settings import Settings
    from tests.unit.cache.test_status_writes import Answered, _bound

    monkeypatch.setattr(runner_module, "_SHUTDOWN_EVENTS_GRACE", 0.2)

    async def scenario() -> tuple[list[str], list[MutableMapping[str, Any]], float]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())
            answered = Answered(events_stuck=True)
            runner.status = StatusWriter(cast(ApiClient, answered), scheduler_name="py-volcano")
            _bound(runner.status, 40)
            began = time.monotonic()
            with capture_logs() as logs:
                await runner._flush_status()
            return answered.arrived, logs, time.monotonic() - began
        finally:
            await client.close()

    arrived, logs, took = asyncio.run(scenario())
    assert arrived == ["status"]
    told = [entry for entry in logs if entry["log_level"] != "debug"]
    assert [(entry["event"], entry["log_level"]) for entry in told] == [("events_dropped", "warning")]
    assert told[0]["count"] == 40 - 16  # the writer's 16 workers each took one that never returned
    assert took < 2.0
