"""Settled jobs' sums kept as jobs join and leave equal the sums taken afresh, exactly: whole numbers add
in any order, and a scalar no job names any more is gone, as it would be from a fresh sum."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.api import BuiltJob, JobInfo, Resource, Settled, SettledSums
from py_volcano.api.settled import at_sight
from tests.builders import cluster, pod, pod_group

_SCALARS = ("nvidia.com/gpu", "example.com/fpga")


class _Job:
    """What the sums read of a job: its uid (the figures are looked up by it)."""

    def __init__(self, uid: str) -> None:
        self.uid = uid


resources = st.builds(
    Resource,
    st.integers(0, 10**12).map(float),
    st.integers(0, 2**40).map(float),
    st.dictionaries(st.sampled_from(_SCALARS), st.integers(0, 10**6).map(float), max_size=2),
)


def _fresh(jobs: dict[str, tuple[str, Resource]]) -> dict[str, tuple[float, float, dict[str, float]]]:
    totals: dict[str, Resource] = {}
    for key, resource in jobs.values():
        totals.setdefault(key, Resource()).add(resource)
    return {key: (total.milli_cpu, total.memory, total.scalars) for key, total in totals.items()}


@settings(max_examples=80, deadline=None)
@given(
    figures=st.dictionaries(st.sampled_from([f"j{i}" for i in range(12)]), st.tuples(st.sampled_from("ab"), resources)),
    steps=st.lists(st.sets(st.sampled_from([f"j{i}" for i in range(12)])), max_size=6),
)
def test_kept_sums_equal_fresh_sums_through_joins_and_leaves(
    figures: dict[str, tuple[str, Resource]], steps: list[set[str]]
) -> None:
    sums = SettledSums(lambda job: figures[job.uid][0], lambda job: (figures[job.uid][1],), [])
    members: set[str] = set()
    for step in steps:
        wanted = {uid for uid in step if uid in figures}
        for uid in members - wanted:
            sums.leave(cast(Any, uid))
        for uid in wanted - members:
            sums.join(cast(JobInfo, _Job(uid)))
        members = wanted
        kept = {
            key: (count, total.milli_cpu, total.memory, total.scalars)
            for key, (count, (total,)) in sums.totals().items()
        }
        fresh = _fresh({uid: figures[uid] for uid in members})
        counts = {key: sum(1 for uid in members if figures[uid][0] == key) for key in fresh}
        assert kept == {key: (counts[key], *fresh[key]) for key in fresh}


def _container(**requests: str) -> dict[str, Any]:
    names = {"cpu": "cpu", "gpu": "nvidia.com/gpu"}
    wanted = {names[name]: value for name, value in requests.items()}
    return {"name": "main", "image": "pause", "resources": {"requests": wanted}}


def test_settled_follows_its_entries_and_keeps_sums_and_scalar_names() -> None:
    snapshot = cluster(
        pod_group(name="a", phase="Running"),
        pod(name="a-0", group="a", node_name="n0", spec={"containers": [_container(cpu="2", gpu="1")]}),
        pod_group(name="b", phase="Running"),
        pod(name="b-0", group="b", cpu="3", node_name="n0"),
    )
    entries = {uid: BuiltJob(job, job.pod_group, None, [], 0, ()) for uid, job in snapshot.jobs.items()}
    [a, b] = entries
    settled = Settled()
    settled.update({}, dict(entries))
    cpu = settled.sums("cpu", lambda job: job.queue, lambda job: (job.allocated,))
    assert {key: (count, total.milli_cpu) for key, (count, (total,)) in cpu.items()} == {"default": (2, 5000.0)}
    assert set(settled.scalar_names()) == {"nvidia.com/gpu"}
    settled.update({b: entries[b]}, {})
    cpu = settled.sums("cpu", lambda job: job.queue, lambda job: (job.allocated,))
    assert {key: (count, total.milli_cpu) for key, (count, (total,)) in cpu.items()} == {"default": (1, 3000.0)}
    assert not set(settled.scalar_names())
    again = BuiltJob(entries[b].job, entries[b].source, None, [], 0, ())  # the same id built again: leaves, joins
    settled.update({}, {a: entries[a], b: again})
    assert settled.sums("cpu", lambda job: job.queue, lambda job: ())["default"][0] == 2
    assert set(settled.scalar_names()) == {"nvidia.com/gpu"}


def _group(**spec: Any) -> dict[str, Any]:
    group = pod_group(name="g", phase=spec.pop("phase", "Running"), min_member=spec.pop("min_member", 1))
    group["spec"].update(spec)
    return group


def _worker(name: str, **fields: Any) -> dict[str, Any]:
    return pod(name=name, group="g", annotations={"volcano.sh/task-spec": "worker"}, **fields)


_PLACED: dict[str, Any] = {"node_name": "n0"}


@pytest.mark.parametrize(
    ("objects", "sighted"),
    [
        ([_group(), _worker("a", **_PLACED), _worker("b", **_PLACED)], True),
        ([_group(), _worker("a", node_name="n0", phase="Pending")], True),  # bound, not yet running
        ([_group(phase="Inqueue"), _worker("a", **_PLACED)], False),  # a cycle decides its phase
        ([_group(), _worker("a", **_PLACED), _worker("b")], False),  # a task to place
        ([_group(), _worker("a", node_name="n0", phase="Succeeded")], False),
        ([_group(min_member=2), _worker("a", **_PLACED)], False),  # fewer tasks than minMember
        (  # a role short of its minimum
            [
                _group(min_member=2, minTaskMember={"worker": 2}),
                _worker("a", **_PLACED),
                pod(name="b", group="g", annotations={"volcano.sh/task-spec": "ps"}, **_PLACED),
            ],
            False,
        ),
        ([_group(minTaskMember={"worker": 1}), _worker("a", **_PLACED)], True),
        ([_group(queue="gone"), _worker("a", **_PLACED)], False),  # its queue is missing
        ([_group(networkTopology={"mode": "hard", "highestTierAllowed": 1}), _worker("a", **_PLACED)], False),
    ],
)
def test_a_job_settles_at_sight_when_no_cycle_can_change_it(objects: list[dict[str, Any]], sighted: bool) -> None:
    snapshot = cluster(*objects)
    [job] = snapshot.jobs.values()
    assert at_sight(job, snapshot.queues) is sighted


def test_a_job_with_a_fit_error_does_not_settle_at_sight() -> None:
    snapshot = cluster(_group(), _worker("a", **_PLACED))
    [job] = snapshot.jobs.values()
    job.job_fit_error = "refused"
    assert not at_sight(job, snapshot.queues)
