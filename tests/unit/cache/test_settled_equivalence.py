"""Cycles over a store that settles running jobs and carries them unlooked at (`api.Settled`,
`Store._carried`) decide exactly as cycles over a store built afresh from the same events, while pods
are bound, touched, deleted, created and marked releasing between them (a fractional request among
them)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st

from py_volcano.api import ClusterInfo, JobID, PodGroupPhase
from py_volcano.cache.client import ApiClient
from py_volcano.cache.status import StatusWriter
from py_volcano.cache.store import Store
from py_volcano.framework import PluginMemory
from py_volcano.metrics import Metrics
from py_volcano.registry import load_conf
from tests.builders import node, pod, pod_group, queue
from tests.unit.cache.test_built_snapshot import (
    _all_jobs,
    _feed,
    _node_state,
    apply_changes,
    assume_binds,
    counting_store,
    cycles_decide_alike,
    echoes,
    in_flight,
    maybe_evict,
    record_phases,
)

CONF = load_conf(None)


@st.composite
def running_clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes, queues, gangs (most of them running: they settle; some Inqueue or Pending, waiting to be
    placed) and a few pending pods."""
    nodes = draw(st.integers(1, 3))
    objects = [node(name=f"n{i}", cpu=str(draw(st.integers(8, 16)))) for i in range(nodes)]
    queues = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    objects += [queue(name=name, weight=draw(st.integers(1, 3))) for name in queues]
    for g in range(draw(st.integers(1, 6))):
        members = draw(st.integers(1, 3))
        minimum = {"cpu": str(members)} if draw(st.booleans()) else None
        objects.append(
            pod_group(
                name=f"g{g}",
                queue=draw(st.sampled_from(queues)),
                min_member=draw(st.integers(1, members)),
                phase=draw(st.sampled_from(["Running", "Running", "Inqueue", "Pending"])),
                min_resources=minimum,
            )
        )
        for t in range(members):
            placed = f"n{draw(st.integers(0, nodes - 1))}" if draw(st.integers(0, 5)) else ""
            objects.append(pod(name=f"g{g}-{t}", group=f"g{g}", cpu=str(draw(st.integers(1, 3))), node_name=placed))
    for p in range(draw(st.integers(0, 3))):
        objects.append(pod(name=f"p{p}", cpu=str(draw(st.integers(1, 4))), queue=draw(st.sampled_from(queues))))
    return objects


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects=running_clusters(), data=st.data())
def test_carried_settled_jobs_decide_as_a_store_built_afresh(objects: list[dict[str, Any]], data: Any) -> None:
    kept, carried = counting_store(objects)
    memory = PluginMemory(datetime.now(UTC))
    others = [obj for obj in objects if obj["kind"] not in ("Pod", "PodGroup")]
    groups = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "PodGroup"}
    pods = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Pod"}
    queues = sorted(obj["metadata"]["name"] for obj in others if obj["kind"] == "Queue")
    releasing: set[str] = set()
    recorded: dict[JobID, tuple[PodGroupPhase, bool]] = {}
    assumed: dict[str, str] = {}
    metrics = Metrics()
    writer = StatusWriter(cast(ApiClient, object()), scheduler_name="py-volcano")
    for cycle in range(5):
        fresh = Store(scheduler_name="py-volcano")
        _feed(fresh, others + list(groups.values()) + list(pods.values()))
        fresh.record_phases(recorded)
        for key, node_name in assumed.items():
            fresh.assume(key, node_name)
        for key in releasing:
            fresh.mark_releasing(key)
        snapshots: list[ClusterInfo] = [kept.snapshot(token=CONF, settle=True), fresh.snapshot()]
        assert [_node_state(n) for n in snapshots[0].nodes.values()] == [
            _node_state(n) for n in snapshots[1].nodes.values()
        ]
        assert _all_jobs(snapshots[0]) == _all_jobs(snapshots[1])
        results = cycles_decide_alike(snapshots, CONF, memory)
        metrics.observe_cycle(results[0], 0.01, snapshots[0])
        afresh = Metrics()
        afresh.observe_cycle(results[1], 0.01, snapshots[1])
        assert _job_records(metrics) == _job_records(afresh)  # a settled job's record kept, a gone one dropped
        writer.submit(results[0])
        kept_jobs = results[0].pod_groups.keys() | results[0].settled.keys()
        ours = {key for key, status in results[0].pod_groups.items() if not status.shadow}
        assert ours <= writer._groups.keys() <= kept_jobs  # what was written on a gone job is forgotten
        assert writer._annotations._groups.keys() <= kept_jobs
        record_phases(kept, results[0], recorded)
        assume_binds(kept, results[0], assumed)
        changes = echoes(results[0], pods, data)
        names = sorted(pods)
        if names:
            for name in data.draw(st.lists(st.sampled_from(names), max_size=1), label="touched"):
                touched = copy.deepcopy(pods[name])
                touched["metadata"]["labels"] = {"cycle": str(cycle)}
                changes.append(("MODIFIED", touched))
            gone = data.draw(st.lists(st.sampled_from(names), max_size=1), label="gone")
            changes += [("DELETED", pods[name]) for name in gone]
        if data.draw(st.integers(0, 3), label="new pod") == 0:
            cpu = data.draw(st.sampled_from(["1", "2", "1500u"]), label="its cpu")
            changes.append(("ADDED", pod(name=f"new-{cycle}", cpu=cpu)))
        grouped = _group_changes(cycle, groups, queues, data)
        tables = {"Pod": pods, "PodGroup": groups}
        apply_changes(kept, [*grouped, *(("Pod", event, obj) for event, obj in changes)], tables, releasing)
        maybe_evict(kept, pods, releasing, data)
        in_flight(kept, assumed)
    note_event(f"carried: {bool(sum(carried))}")


def _group_changes(
    cycle: int, groups: dict[str, dict[str, Any]], queues: list[str], data: Any
) -> list[tuple[str, str, dict[str, Any]]]:
    """Sometimes a new PodGroup (no pod names it yet: it waits Pending) or one deleted."""
    changes: list[tuple[str, str, dict[str, Any]]] = []
    if data.draw(st.integers(0, 3), label="new group") == 0:
        queue_name = data.draw(st.sampled_from(queues), label="its queue")
        changes.append(("PodGroup", "ADDED", pod_group(name=f"new-{cycle}", queue=queue_name, min_member=1)))
    if groups and data.draw(st.integers(0, 4), label="group deleted") == 0:
        changes.append(("PodGroup", "DELETED", groups[data.draw(st.sampled_from(sorted(groups)), label="which")]))
    return changes


def _job_records(metrics: Metrics) -> dict[JobID, tuple[float, int]]:
    """Per job recorded, its share and unready tasks."""
    return {uid: (record.share, record.unready) for uid, record in metrics._jobs.items()}
