"""A Queue's state belongs to whoever opens and closes it: the cycle asks for it to be written only while the
Queue has none (docs/semantics.md, "Queue state")."""

from __future__ import annotations

import pytest

from py_volcano.api import QueueState, parse_queue
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, queue

REGISTRY = default_registry()


@pytest.mark.parametrize(
    ("status", "state", "state_set"),
    [
        pytest.param({}, QueueState.OPEN, False, id="new-queue"),
        pytest.param({"state": "Open"}, QueueState.OPEN, True, id="open"),
        pytest.param({"state": "Closed"}, QueueState.CLOSED, True, id="closed"),
    ],
)
def test_the_cycle_writes_the_state_only_of_a_queue_without_one(
    status: dict[str, str], state: QueueState, state_set: bool
) -> None:
    manifest = {**queue(name="q"), "status": status}
    assert (parse_queue(manifest).state, parse_queue(manifest).state_set) == (state, state_set)
    result = run_cycle(cluster(manifest), load_conf(None, registry=REGISTRY), REGISTRY)
    assert (result.queue_statuses["q"].state, result.queue_statuses["q"].state_set) == (state, state_set)
