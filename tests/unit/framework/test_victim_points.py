"""The victim-tasks and unified-evictable points (Volcano's VictimTasks and UnifiedEvictable), the cycle's
clock and the memory plugins keep between sessions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from py_volcano.api import ClusterInfo, JobInfo, PodGroupSpec, Resource, TaskID, TaskInfo, Vote
from py_volcano.framework import (
    EvictionContext,
    EvictionKind,
    PluginMemory,
    PluginOption,
    SchedulerConf,
    Session,
    close_session,
    dispatch,
)
from py_volcano.framework.extension_points import ExtensionPoints


def task(name: str, namespace: str = "ns") -> TaskInfo:
    return TaskInfo(uid=TaskID(name), name=name, namespace=namespace, resreq=Resource())


A, B, C = task("a"), task("b"), task("c")
CRITICAL = task("dns", namespace="kube-system")


def choose(*tasks: TaskInfo) -> Callable[[list[TaskInfo]], list[TaskInfo]]:
    return lambda offered: list(tasks)


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param([[choose(A, B), choose(B, C)]], ["a", "b", "c"], id="union-inside-a-tier-each-once"),
        pytest.param([[choose(), choose()], [choose(C)]], ["c"], id="a-tier-choosing-none-defers"),
        pytest.param([[choose(A)], [choose(C)]], ["a"], id="first-tier-with-victims-wins"),
        pytest.param([], [], id="no-plugin-no-victims"),
    ],
)
def test_tiered_union(tiers: list[list[Callable[[list[TaskInfo]], list[TaskInfo]]]], expected: list[str]) -> None:
    """Volcano's VictimTasks: a set per tier, returned at the first tier that has one."""
    assert [t.name for t in dispatch.tiered_union(tiers, [A, B, C])] == expected


def points(*names: str, **switches: bool) -> ExtensionPoints:
    return ExtensionPoints([[PluginOption(name=name, switches=switches) for name in names]])


def test_victim_tasks_keeps_the_hard_filters() -> None:
    """A critical pod a plugin chooses is not evicted: conformance's hard filter holds at shuffle too."""
    ext = points("chooser", "conformance")
    ext.add_victim_tasks_fn("chooser", choose(A, CRITICAL))
    ext.add_evictable_fn("conformance", lambda t: t.namespace != "kube-system")
    assert ext.victim_tasks([A, CRITICAL]) == [A]


def test_enabled_victim_false_turns_a_plugins_victims_off() -> None:
    """`enabledVictim: false` is the switch of the victim-tasks point."""
    ext = points("chooser", victim=False)
    ext.add_victim_tasks_fn("chooser", choose(A))
    assert ext.victim_tasks([A]) == []


def test_unified_evictable_intersects_a_tier_after_the_hard_filters() -> None:
    """Gang-aware victims: the tier's plugins intersect; an abstainer is ignored; critical pods never pass."""
    ext = points("p", "q", "r", "conformance")
    seen: list[EvictionContext] = []

    def everyone(context: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        seen.append(context)
        return candidates, Vote.PERMIT

    ext.add_unified_evictable_fn("p", everyone)
    ext.add_unified_evictable_fn("q", lambda context, candidates: ([A, CRITICAL], Vote.PERMIT))
    ext.add_unified_evictable_fn("r", lambda context, candidates: ([], Vote.ABSTAIN))
    ext.add_evictable_fn("conformance", lambda t: t.namespace != "kube-system")
    job = JobInfo(PodGroupSpec(name="j", namespace="ns", queue="default"))
    context = EvictionContext(EvictionKind.GANG_PREEMPT, job)
    assert ext.unified_evictable(context, [A, B, CRITICAL]) == [A]
    assert seen == [context]


def session(now: datetime | None = None, memory: PluginMemory | None = None) -> Session:
    return Session(ClusterInfo(), SchedulerConf(actions=(), tiers=()), now=now, memory=memory)


def test_reading_the_clock_is_reported_in_the_result() -> None:
    """A cycle whose plugins read `now` says so, so the runner does not skip the next idle cycle."""
    at = datetime(2024, 5, 1, 13, 0, tzinfo=UTC)
    quiet, reading = session(at), session(at)
    assert reading.now == at
    assert close_session(quiet).reads_clock is False
    assert close_session(reading).reads_clock is True


def test_plugin_memory_outlives_sessions_and_keeps_one_kind_per_plugin() -> None:
    """What a plugin stores is there in the next session; another kind under its name is a TypeError."""

    class Last:
        def __init__(self) -> None:
            self.value = 0

    started = datetime(2024, 5, 1, tzinfo=UTC)
    memory = PluginMemory(started)
    session(memory=memory).memory.recall("p", Last).value = 7
    later = session(memory=memory)
    assert later.memory.recall("p", Last).value == 7
    assert later.memory.started == started
    with pytest.raises(TypeError, match="plugin memory 'p' holds a Last"):
        later.memory.recall("p", dict)
