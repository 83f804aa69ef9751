"""tdm (Volcano's tdm plugin): revocable zones by daily window, victims of closed zones, job budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import JobInfo, Vote
from py_volcano.errors import ConfigError
from py_volcano.framework import Arguments, PluginMemory, Registry, Session, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.tdm import RevocableWindow, TdmArgs, job_order, job_pipelined, job_starving, max_evictions
from tests.builders import cluster, node, pod, pod_group

ZONE = {"volcano.sh/revocable-zone": "rz1"}
REVOCABLE = {"volcano.sh/preemptable": "true"}
MIN, MAX = "volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"
AT_13 = datetime(2024, 5, 1, 13, 0, tzinfo=UTC)
CONF = """
actions: enqueue, allocate, backfill, shuffle
tiers:
- plugins:
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: {window}
"""


@pytest.mark.parametrize(
    ("text", "window"),
    [
        pytest.param("08:00-12:00", (8 * 3600, 12 * 3600), id="two-clocks"),
        pytest.param(" 8:05-23:59 ", (8 * 3600 + 300, 23 * 3600 + 59 * 60), id="one-digit-hour-and-outer-spaces"),
        pytest.param("08:0-12:00", None, id="one-digit-minute"),
        pytest.param("24:00-01:00", None, id="hour-24"),
        pytest.param("10:00 - 12:00", None, id="spaces-inside"),
        pytest.param("10:00", None, id="no-end"),
        pytest.param("10:00-11:00-12:00", None, id="three-clocks"),
    ],
)
def test_window_reads_go_clock_layout(text: str, window: tuple[int, int] | None) -> None:
    """`HH:MM-HH:MM` as Go's time.Parse("15:04") reads each side."""
    parsed = RevocableWindow.parse(text)
    assert (None if parsed is None else (parsed.start, parsed.end)) == window


@pytest.mark.parametrize(
    ("text", "clock", "is_open"),
    [
        pytest.param("08:00-12:00", (8, 0, 0), True, id="start-included"),
        pytest.param("08:00-12:00", (12, 0, 0), True, id="end-included"),
        pytest.param("08:00-12:00", (12, 0, 1), False, id="a-second-after-the-end"),
        pytest.param("08:00-12:00", (7, 59, 59), False, id="a-second-before-the-start"),
        pytest.param("22:00-06:00", (23, 0, 0), True, id="overnight-before-midnight"),
        pytest.param("22:00-06:00", (3, 0, 0), True, id="overnight-after-midnight"),
        pytest.param("22:00-06:00", (12, 0, 0), False, id="overnight-at-noon"),
        pytest.param("00:00-00:00", (17, 30, 0), True, id="same-start-and-end-is-all-day"),
    ],
)
def test_window_is_open_at_whole_seconds(text: str, clock: tuple[int, int, int], is_open: bool) -> None:
    """Open from start to end inclusive; an end not after the start is the next day."""
    window = RevocableWindow.parse(text)
    assert window is not None
    assert window.is_open(datetime(2024, 5, 1, *clock, 500_000, tzinfo=UTC)) is is_open


def test_window_reads_the_clock_in_its_own_time_zone() -> None:
    """13:00 UTC is 21:00 at UTC+8: inside 20:00-22:00 there, outside it in UTC."""
    window = RevocableWindow.parse("20:00-22:00")
    assert window is not None
    assert window.is_open(AT_13.astimezone(timezone(timedelta(hours=8))))
    assert not window.is_open(AT_13)


def test_args_read_every_zone_and_the_evict_period() -> None:
    """Each `tdm.revocable-zone.<zone>` key is a zone; `tdm.evict.period` a Go duration (default 1m)."""
    args = TdmArgs.parse(
        Arguments({"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.revocable-zone.rz2": "12:00-14:00"}, owner="tdm")
    )
    assert sorted(args.zones) == ["rz1", "rz2"] and args.evict_period == 60.0
    assert TdmArgs.parse(Arguments({"tdm.evict.period": "30s"})).evict_period == 30.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"tdm.revocable-zone.rz1": "10-21"}, "argument tdm.revocable-zone.rz1: '10-21' is not a window"),
        pytest.param({"tdm.evict.period": "soon"}, "argument tdm.evict.period: 'soon' is not a duration"),
    ],
)
def test_args_refuse_bad_values_at_load(values: dict[str, Any], message: str) -> None:
    """Volcano treats a malformed window as a closed zone at run time; py-volcano refuses the file."""
    with pytest.raises(ConfigError, match=message):
        TdmArgs.parse(Arguments(values, owner="tdm"))


def job_with(*, running: int, pending: int = 0, done: int = 0, notes: dict[str, str] | None = None) -> JobInfo:
    group = pod_group(name="j", namespace="ns", phase="Running")
    group["metadata"]["annotations"] = notes or {}
    pods = [pod(name=f"r{i}", namespace="ns", group="j", node_name="n") for i in range(running)]
    pods += [pod(name=f"p{i}", namespace="ns", group="j") for i in range(pending)]
    pods += [pod(name=f"d{i}", namespace="ns", group="j", node_name="n", phase="Succeeded") for i in range(done)]
    snapshot = cluster(node(name="n", cpu="64"), group, *pods)
    return next(iter(snapshot.jobs.values()))


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        pytest.param(job_with(running=3), 1, id="no-budget-one"),
        pytest.param(job_with(running=3, notes={MIN: "2"}), 1, id="min-available-surplus"),
        pytest.param(job_with(running=3, notes={MIN: "3"}), 0, id="min-available-met"),
        pytest.param(job_with(running=2, notes={MIN: "3"}), 1, id="min-available-unmet-one"),
        pytest.param(job_with(running=4, notes={MIN: "50%"}), 2, id="min-available-percent"),
        pytest.param(job_with(running=3, pending=1, notes={MAX: "2"}), 1, id="max-less-gone"),
        pytest.param(job_with(running=2, pending=2, notes={MAX: "2"}), 0, id="max-used-up"),
        pytest.param(job_with(running=3, done=1, notes={MAX: "50%"}), 2, id="finished-are-not-gone"),
    ],
)
def test_max_evictions_follows_the_job_budget(job: JobInfo, expected: int) -> None:
    """Volcano's getMaxPodEvictNum: min-available first, max-unavailable rounds a percentage up."""
    assert max_evictions(job) == expected


def open_at(window: str, now: datetime, *objects: dict[str, Any], memory: PluginMemory | None = None) -> Session:
    registry = Registry(plugins=PLUGINS, actions=ACTIONS)
    conf = parse_conf(CONF.format(window=window), registry)
    return open_session(cluster(*objects), conf, registry, now=now, memory=memory)


def revocable_cluster() -> list[dict[str, Any]]:
    return [
        node(name="ordinary"),
        node(name="revocable", labels=ZONE),
        pod(name="batch", annotations=REVOCABLE),
        pod(name="web"),
        pod(name="ran", node_name="revocable", annotations=REVOCABLE),
        pod(name="ran-2", node_name="revocable", annotations=REVOCABLE),
        pod(name="held", node_name="revocable", annotations={"volcano.sh/preemptable": "false"}),
    ]


def named(ssn: Session, name: str) -> Any:
    return next(t for job in ssn.jobs.values() for t in job.tasks.values() if t.name == name)


def test_open_zone_takes_only_revocable_tasks_and_scores_them_there() -> None:
    """While rz1 is open, a revocable pod may use the revocable node and scores 100 there; others may not."""
    ssn = open_at("08:00-18:00", AT_13, *revocable_cluster())
    batch, web = named(ssn, "batch"), named(ssn, "web")
    assert ssn.predicate_mask(batch).tolist() == [True, True]
    assert ssn.predicate_mask(web).tolist() == [True, False]
    assert ssn.predicate(web, ssn.nodes["revocable"]).reason == "not allow to dispatch to revocable node"
    rows = np.array([ssn.nodes["ordinary"].index, ssn.nodes["revocable"].index])
    assert ssn.prioritize(batch, rows).tolist() == [0.0, 100.0]


def test_closed_zone_takes_no_task() -> None:
    """Outside its window a revocable node suits no task, for a reason evicting cannot resolve."""
    ssn = open_at("08:00-12:00", AT_13, *revocable_cluster())
    batch = named(ssn, "batch")
    assert ssn.predicate_mask(batch, for_preempt=True).tolist() == [True, False]
    status = ssn.predicate(batch, ssn.nodes["revocable"])
    assert status is not None and not status.resolvable
    assert status.reason == "current time beyond revocable zone rz1:08:00-12:00"


def test_closed_zone_victims_come_once_per_evict_period() -> None:
    """Each running preemptable pod of a closed zone's nodes is a victim (one per job without a budget),
    and the next choice waits `tdm.evict.period` (1m) in the memory kept between sessions."""
    memory = PluginMemory(AT_13)
    names = []
    for seconds in (0, 30, 60):
        ssn = open_at("08:00-12:00", AT_13 + timedelta(seconds=seconds), *revocable_cluster(), memory=memory)
        names.append(sorted(t.name for t in ssn.victim_tasks([])))
    assert names == [["ran", "ran-2"], [], ["ran", "ran-2"]]


def test_open_zone_has_no_victims() -> None:
    """Nothing is evicted from a zone whose window is open."""
    assert open_at("08:00-18:00", AT_13, *revocable_cluster()).victim_tasks([]) == []


def test_preemptable_pods_on_ordinary_nodes_make_way_for_pods_that_are_not() -> None:
    """A preemptor that is marked not preemptable takes running preemptable pods of ordinary nodes, one per
    job; a preemptable preemptor (the default for a pod) takes nothing (Volcano's tdm preemptableFn)."""
    ssn = open_at(
        "08:00-18:00",
        AT_13,
        node(name="ordinary"),
        node(name="revocable", labels=ZONE),
        pod(name="firm", annotations={"volcano.sh/preemptable": "false"}),
        pod(name="plain"),
        pod(name="on-ordinary", node_name="ordinary", annotations=REVOCABLE),
        pod(name="on-revocable", node_name="revocable", annotations=REVOCABLE),
    )
    offered = [named(ssn, "on-ordinary"), named(ssn, "on-revocable")]
    assert [t.name for t in ssn.preemptable(named(ssn, "firm"), offered)] == ["on-ordinary"]
    assert ssn.preemptable(named(ssn, "plain"), offered) == []


def test_job_functions_put_preemptable_jobs_last() -> None:
    """Jobs that are not preemptable go first and starve while pending; preemptable ones never starve."""
    firm = job_with(running=0, pending=1)
    soft = job_with(running=0, pending=1, notes={"volcano.sh/preemptable": "true"})
    assert (job_order(firm, soft), job_order(soft, firm), job_order(firm, firm)) == (-1, 1, 0)
    assert (job_starving(firm), job_starving(soft)) == (True, False)
    assert job_pipelined(firm) is Vote.REJECT
    assert job_pipelined(job_with(running=1)) is Vote.PERMIT
