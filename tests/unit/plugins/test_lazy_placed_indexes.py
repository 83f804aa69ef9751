"""predicates and nodeorder index the placed pods only when a check or score first needs them: an index
built late equals the one built at session open and kept through every placement, eviction and
discarded allocation since."""

from __future__ import annotations

import random

import pytest

from py_volcano.api import TaskStatus
from py_volcano.framework import EventHandler, Session, Statement
from py_volcano.plugins.nodeorder.pod_affinity import InterPodAffinity
from py_volcano.plugins.predicates import PredicatesArgs
from py_volcano.plugins.predicates.placed import PlacedPods
from py_volcano.plugins.predicates.plugin import PredicateState
from tests.unit.plugins.test_predicates import random_objects, session

ARGS = PredicatesArgs()


def _contents(placed: PlacedPods) -> tuple[object, ...]:
    by_uid = {uid: (row, terminating) for uid, (row, _, terminating) in placed.by_uid.items()}
    groups = {key: dict(group.rows) for groups in placed.groups.values() for key, group in groups.items()}
    anti = {key: (entry.pods, entry.counts.tolist()) for key, entry in placed.anti_affinity.items() if entry.pods}
    ports = {  # a host IP whose last pod left keeps an all-zero row: the same as none
        key: {ip: held.tolist() for ip, held in users.by_ip.items() if held.any()}
        for key, users in placed.ports.items()
    }
    return by_uid, groups, anti, ports


def _play(ssn: Session, rng: random.Random) -> None:
    """Evict a third of the running tasks and place a third of the pending ones (kept); pipeline and evict
    a few more in a statement then discarded; place one of those again."""
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values()]
    running = [t for t in tasks if t.status is TaskStatus.RUNNING]
    pending = [t for t in tasks if t.status is TaskStatus.PENDING]
    kept = Statement(ssn)
    for victim in rng.sample(running, len(running) // 3):
        kept.evict(victim, "test")
    for placed in rng.sample(pending, len(pending) // 3):
        kept.allocate(placed, rng.choice(ssn.node_list).name)
    dropped = Statement(ssn)
    rest = [t for t in pending if t.status is TaskStatus.PENDING]
    for placed in rest[:3]:
        dropped.pipeline(placed, rng.choice(ssn.node_list).name)
    for victim in [t for t in running if t.status is TaskStatus.RUNNING][:2]:
        dropped.evict(victim, "test")
    dropped.discard()
    if rest:  # placed again after its discarded placement
        kept.allocate(rest[0], rng.choice(ssn.node_list).name)


@pytest.mark.parametrize("seed", range(25))
def test_predicates_index_built_late_equals_one_followed_from_open(seed: int) -> None:
    """Random clusters with ports, affinity and anti-affinity; the late index sees the same pods."""
    ssn = session(*random_objects(seed))
    eager, lazy = PredicateState(ssn, ARGS), PredicateState(ssn, ARGS)
    _ = eager.placed  # indexed at open
    for state in (eager, lazy):
        ssn.add_event_handler(EventHandler(allocate=state.allocated, deallocate=state.deallocated))
    _play(ssn, random.Random(seed))
    assert _contents(lazy.placed) == _contents(eager.placed)


def _grouped(pods: InterPodAffinity) -> tuple[object, ...]:
    groups = {key: dict(group.rows) for groups in pods.groups.values() for key, group in groups.items()}
    weighted = {key: (entry.pods, entry.counts.tolist()) for key, entry in pods.weighted.items()}
    return groups, weighted


@pytest.mark.parametrize("seed", range(25))
def test_nodeorder_groups_built_late_equal_those_followed_from_open(seed: int) -> None:
    """The same for nodeorder's inter-pod affinity and spread groups."""
    ssn = session(*random_objects(seed))
    eager, lazy = InterPodAffinity(ssn.node_list), InterPodAffinity(ssn.node_list)
    _ = eager.groups  # grouped at open
    for pods in (eager, lazy):
        ssn.add_event_handler(EventHandler(allocate=pods.allocated, deallocate=pods.deallocated))
    _play(ssn, random.Random(seed))
    assert _grouped(lazy) == _grouped(eager)
