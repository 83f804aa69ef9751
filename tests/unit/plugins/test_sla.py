"""sla: the `sla-waiting-time` argument and annotations, job order by deadline, and the permit votes that admit
and pipeline a job past its deadline (Volcano's sla plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import Vote
from py_volcano.errors import ConfigError
from py_volcano.framework import Session, parse_conf, run_cycle
from py_volcano.plugins.sla import SlaArgs, SlaPlugin
from tests.builders import cluster, node, pod, pod_group
from tests.unit.actions.sessions import registry
from tests.unit.arguments import plugin_args
from tests.unit.plugins.sessions import annotated, at, job, open_at

SLA = "volcano.sh/sla-waiting-time"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, SlaArgs(), id="unset-no-sla"),
        pytest.param({"sla-waiting-time": "1h2m3s"}, SlaArgs(waiting_time=3723.0), id="go-duration"),
        pytest.param({"sla-waiting-time": "1.5m"}, SlaArgs(waiting_time=90.0), id="fraction"),
        pytest.param({"sla-waiting-time": "500ms"}, SlaArgs(waiting_time=0.5), id="milliseconds"),
    ],
)
def test_waiting_time_argument(arguments: dict[str, object], expected: SlaArgs) -> None:
    """`sla-waiting-time` is a Go duration, read into seconds once at load."""
    assert plugin_args("sla", arguments) == expected


@pytest.mark.parametrize("value", [pytest.param("0s", id="zero"), pytest.param("-1h", id="negative")])
def test_a_waiting_time_not_positive_is_warned_about_and_ignored(value: str) -> None:
    """Volcano logs and ignores a non-positive global waiting time: jobs then have no SLA by default."""
    with pytest.warns(UserWarning, match="sla-waiting-time: not positive"):
        assert plugin_args("sla", {"sla-waiting-time": value}) == SlaArgs()


@pytest.mark.parametrize("value", [pytest.param("1 hour", id="text"), pytest.param(3600, id="number")])
def test_a_waiting_time_that_is_no_duration_is_a_config_error(value: object) -> None:
    """Not a duration string: the configuration does not load, and the error names plugin, key and value."""
    with pytest.raises(ConfigError, match=r"plugin sla: argument sla-waiting-time: .* is not a duration"):
        plugin_args("sla", {"sla-waiting-time": value})


def _conf(arguments: str = "") -> str:
    args = f"\n    arguments: {{{arguments}}}" if arguments else ""
    return f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: sla{args}\n'


def _group(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return annotated(pod_group(name=name, **spec), annotations or {})


def _plugin(ssn: Session) -> SlaPlugin:
    plugin = ssn.plugins["sla"]
    assert isinstance(plugin, SlaPlugin)
    return plugin


def test_deadline_is_creation_plus_the_annotation_else_the_argument() -> None:
    """`volcano.sh/sla-waiting-time` wins over `sla-waiting-time`, which wins over the plugin argument."""
    ssn = open_at(
        _conf("sla-waiting-time: 100s"),
        _group("both", {SLA: "10s", "sla-waiting-time": "20s"}),  # created at 0
        _group("plain", {"sla-waiting-time": "20s"}),  # created at 1
        _group("global"),  # created at 2
    )
    assert _plugin(ssn).deadlines == {"default/both": 10.0, "default/plain": 21.0, "default/global": 102.0}


def test_an_unreadable_annotation_falls_back_and_is_warned_about() -> None:
    """As Volcano: a bad `volcano.sh/sla-waiting-time` falls back to `sla-waiting-time`, then to the argument."""
    ssn = open_at(_conf(), _group("bad", {SLA: "soon", "sla-waiting-time": "5s"}), _group("none", {SLA: "0s"}))
    assert _plugin(ssn).deadlines == {"default/bad": 5.0}
    assert ssn.warnings == [
        "PodGroup default/bad: field metadata.annotations[volcano.sh/sla-waiting-time]: 'soon' is not a positive "
        "duration",
        "PodGroup default/none: field metadata.annotations[volcano.sh/sla-waiting-time]: '0s' is not a positive "
        "duration",
    ]


def test_job_order_puts_jobs_with_a_deadline_first_earliest_first() -> None:
    """Volcano's jobOrderFn: a deadline beats none; the earlier deadline first; equal deadlines tie."""
    ssn = open_at(
        _conf(),
        _group("none"),  # created at 0
        _group("late", {SLA: "100s"}),  # created at 1: deadline 101
        _group("early", {SLA: "10s"}),  # created at 2: deadline 12
        _group("same", {SLA: "9s"}),  # created at 3: deadline 12
    )
    plugin = _plugin(ssn)
    none, late, early, same = (job(ssn, n) for n in ("none", "late", "early", "same"))
    assert plugin.job_order(none, late) == 1
    assert plugin.job_order(late, none) == -1
    assert plugin.job_order(none, none) == 0
    assert plugin.job_order(early, late) == -1
    assert plugin.job_order(late, early) == 1
    assert plugin.job_order(early, same) == 0


@pytest.mark.parametrize(
    ("now", "vote"),
    [
        pytest.param(5.0, Vote.ABSTAIN, id="before-the-deadline"),
        pytest.param(10.0, Vote.PERMIT, id="at-the-deadline"),
        pytest.param(11.0, Vote.PERMIT, id="past-the-deadline"),
    ],
)
def test_permit_once_the_waiting_time_has_passed(now: float, vote: Vote) -> None:
    """`time.Since(creation) < waiting time` abstains; otherwise permit (enqueue and pipelined alike)."""
    ssn = open_at(_conf(), _group("j", {SLA: "10s"}), _group("free"), now=now)
    plugin = _plugin(ssn)
    assert plugin.permit_when_overdue(job(ssn, "j")) == vote
    assert plugin.permit_when_overdue(job(ssn, "free")) == Vote.ABSTAIN
    assert ssn.reads_clock


def _too_big(annotations: dict[str, str]) -> list[dict[str, Any]]:
    """A one-node cluster and a job whose minResources overcommit (1.2 x 4 CPUs) rejects."""
    return [
        node(name="n", cpu="4"),
        _group("big", annotations, min_member=1, min_resources={"cpu": "8"}),
        pod(name="big-0", group="big", cpu="8"),
    ]


@pytest.mark.parametrize(
    ("tiers", "admitted"),
    [
        pytest.param("- plugins:\n  - name: sla\n- plugins:\n  - name: overcommit\n", True,
                     id="sla-permits-in-an-earlier-tier"),
        pytest.param("- plugins:\n  - name: overcommit\n  - name: sla\n", False,
                     id="a-reject-in-the-same-tier-still-refuses"),
    ],
)
def test_an_overdue_job_is_admitted_when_its_tier_decides(tiers: str, admitted: bool) -> None:
    """Volcano's JobEnqueueable: a tier with a permit and no reject admits without asking later tiers."""
    ssn = open_at('actions: "enqueue"\ntiers:\n' + tiers, *_too_big({SLA: "1s"}))
    assert ssn.job_enqueueable(job(ssn, "big")) is admitted


def test_an_overdue_gang_keeps_its_partial_placement_reserved() -> None:
    """Past its deadline a gang that does not fit is pipelined (sla permits in tier 1, before gang rejects):
    allocate keeps its placements, so the later one-pod job finds no room; nothing binds."""
    objects = [
        node(name="n", cpu="2"),
        _group("gang", {SLA: "1s"}, min_member=3),
        *(pod(name=f"gang-{i}", group="gang", cpu="1") for i in range(3)),
        pod(name="solo", cpu="1"),
    ]
    tiers = "- plugins:\n  - name: sla\n- plugins:\n  - name: priority\n  - name: gang\n  - name: predicates\n"
    reg = registry()
    for overdue, binds in ((False, ["default/solo"]), (True, [])):
        conf = parse_conf('actions: "allocate"\ntiers:\n' + tiers, reg)
        result = run_cycle(cluster(*objects), conf, reg, now=at(100.0 if overdue else 0.5))
        assert sorted(task.key for task, _ in result.binds) == binds
