"""When the next cycle starts: new pending work starts it `min_cycle_gap` after the last one began, otherwise
the period; the store says which changes are new pending work."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from py_volcano.cache.store import POD_GROUPS, PODS, Store
from py_volcano.registry import default_registry
from py_volcano.runner import ConfFile, Runner
from py_volcano.settings import Settings
from tests.unit.cache.test_store import pod, pod_group, reconcile


def test_a_new_unbound_pod_of_ours_or_a_changed_pod_group_is_new_work() -> None:
    """Only what a cycle could place raises `work_arrived`: not a bound pod, another scheduler's pod, or a
    status-only update of a known pod."""

    async def scenario() -> list[bool]:
        store = Store(scheduler_name="py-volcano")
        reconcile(store, PODS, [], version=0, started=0.0)  # pods listed: each change is noted on its own
        seen = []

        def arrived(kind: Any, obj: dict[str, Any]) -> bool:
            store.work_arrived.clear()
            store.apply_event(kind, "ADDED", obj)
            return store.work_arrived.is_set()

        seen.append(arrived(PODS, pod("bound", rv=1, node="n1")))
        theirs = pod("theirs", rv=2)
        theirs["spec"]["schedulerName"] = "default-scheduler"
        seen.append(arrived(PODS, theirs))
        seen.append(arrived(PODS, pod("new", rv=3)))
        seen.append(arrived(PODS, pod("new", rv=4, phase="Pending", labels={"x": "y"})))
        seen.append(arrived(POD_GROUPS, pod_group("pg", rv=5)))
        return seen

    assert asyncio.run(scenario()) == [False, False, True, False, True]


@pytest.mark.parametrize("work", [True, False])
def test_new_work_starts_the_next_cycle_after_the_gap_otherwise_the_period(work: bool) -> None:
    """`_wait_next` returns at the gap when work arrived before it, as soon as work arrives after it, and at
    the period when none does."""
    from py_volcano.cache import ApiClient, Credentials

    async def scenario() -> float:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())
            began = time.monotonic()
            if work:
                asyncio.get_running_loop().call_later(0.3, runner.store.work_arrived.set)
            stopped = await runner._wait_next(began + 0.1, began + 1.5)
            assert not stopped
            return time.monotonic() - began
        finally:
            await client.close()

    waited = asyncio.run(scenario())
    if work:
        assert 0.3 <= waited < 1.0
    else:
        assert waited >= 1.5


def test_work_that_arrived_during_the_cycle_waits_only_for_the_gap() -> None:
    """Work already arrived when the cycle ends: the next one starts at the gap, not earlier."""
    from py_volcano.cache import ApiClient, Credentials

    async def scenario() -> float:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            runner = Runner(Settings(), client, ConfFile(None, default_registry()), registry=default_registry())
            runner.store.work_arrived.set()
            began = time.monotonic()
            await runner._wait_next(began + 0.2, began + 1.5)
            return time.monotonic() - began
        finally:
            await client.close()

    assert 0.2 <= asyncio.run(scenario()) < 1.0


def test_the_gap_flag_is_capped_by_the_period_and_refuses_a_negative() -> None:
    """`--min-cycle-gap` above `--schedule-period` is the period; a negative one is a usage error."""
    from py_volcano.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["run", "--schedule-period", "0.5", "--min-cycle-gap", "2"])
    assert Settings.from_args(args).cycle.min_cycle_gap == 0.5
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--min-cycle-gap", "-1"])


def test_a_bounded_run_shows_its_last_cycle_for_a_whole_period_after_it_ends() -> None:
    """With `--cycles`, the process stops a full period after its last cycle ended, not after it began:
    /metrics shows that cycle for a period however long the cycle took (the e2e harness scrapes it)."""
    from py_volcano.cache import ApiClient, Credentials
    from py_volcano.settings import CycleSettings

    async def scenario() -> tuple[float, float]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            settings = Settings(cycle=CycleSettings(schedule_period=0.4, cycles=1))
            runner = Runner(settings, client, ConfFile(None, default_registry()), registry=default_registry())
            ended: list[float] = []

            async def synced() -> bool:
                return True

            async def no_queue() -> None:
                return None

            async def slow_cycle(number: int) -> None:
                await asyncio.sleep(0.3)
                ended.append(time.monotonic())

            runner.leader = None  # leads at once, as with --no-leader-elect
            runner.wait_synced = synced  # type: ignore[method-assign]
            runner.ensure_default_queue = no_queue  # type: ignore[method-assign]
            runner.guarded_cycle = slow_cycle  # type: ignore[method-assign]
            await runner.loop()
            return ended[0], time.monotonic()
        finally:
            await client.close()

    cycle_end, stopped = asyncio.run(scenario())
    assert stopped - cycle_end >= 0.4
