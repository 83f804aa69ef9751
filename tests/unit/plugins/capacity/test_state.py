"""The preempt dry run (docs/semantics.md, "Capacity dry run"): a per-preemptor copy that simulate functions change."""

from __future__ import annotations

from py_volcano.api import QueueID
from py_volcano.framework import CycleState, Session, Statement
from py_volcano.plugins.capacity.state import STATE_KEY, CapacityState
from tests.builders import pod, pod_group
from tests.unit.plugins.capacity.example_tree import example_tree
from tests.unit.plugins.capacity.sessions import attr_of, dims, open_hierarchy, plugin_of, task_of


def session() -> Session:
    """inference runs 30 of its real 30 CPU; a pending 10-CPU pod waits in it; a 5-CPU pod in batch."""
    return open_hierarchy(
        *example_tree(),
        pod_group(name="run", queue="inference", phase="Running", min_member=3),
        *[pod(name=f"run-{i}", group="run", node_name="n1", cpu="10") for i in range(3)],
        pod_group(name="new", queue="inference", phase="Inqueue"),
        pod(name="new-0", group="new", cpu="10"),
        pod_group(name="other", queue="batch", phase="Inqueue"),
        pod(name="other-0", group="other", cpu="5"),
    )


def allocated_cpu(state: CapacityState, name: str) -> float:
    return state.attrs[QueueID(name)].allocated.milli_cpu / 1000


def test_pre_predicate_stores_a_copy_that_simulations_change_alone() -> None:
    """Removing a 10-CPU victim in the copy lowers inference, team-a and root there; live queues keep 30."""
    ssn = session()
    plugin, cycle_state = plugin_of(ssn), CycleState()
    assert plugin.pre_predicate(task_of(ssn, "new-0"), cycle_state) is None
    state = cycle_state.read(STATE_KEY)
    assert isinstance(state, CapacityState)
    node = ssn.nodes["n1"]
    plugin.simulate_remove_task(cycle_state, task_of(ssn, "new-0"), task_of(ssn, "run-0"), node)
    assert [allocated_cpu(state, q) for q in ("inference", "team-a", "root")] == [20, 20, 20]
    assert state.attrs[QueueID("inference")].share == 1.0
    assert [dims(attr_of(ssn, q).allocated)[0] for q in ("inference", "team-a", "root")] == [30, 30, 30]  # type: ignore[index]
    plugin.simulate_add_task(cycle_state, task_of(ssn, "new-0"), task_of(ssn, "run-0"), node)
    assert allocated_cpu(state, "team-a") == 30


def test_simulate_allocatable_judges_the_copy() -> None:
    """inference is full: the real check refuses a 10-CPU pod; after a simulated eviction, the dry run not."""
    ssn = session()
    plugin, cycle_state = plugin_of(ssn), CycleState()
    inference, task = ssn.queues[QueueID("inference")], task_of(ssn, "new-0")
    plugin.pre_predicate(task, cycle_state)
    assert not plugin.simulate_allocatable(cycle_state, inference, task)
    plugin.simulate_remove_task(cycle_state, task, task_of(ssn, "run-1"), ssn.nodes["n1"])
    assert plugin.simulate_allocatable(cycle_state, inference, task)
    assert not plugin.allocatable(inference, task)


def test_copy_is_taken_as_of_pre_predicate_even_if_read_after_a_real_allocation() -> None:
    """A batch pod allocated after pre-predicate does not show in the copy; it does in the live queues."""
    ssn = session()
    plugin, cycle_state = plugin_of(ssn), CycleState()
    plugin.pre_predicate(task_of(ssn, "new-0"), cycle_state)
    Statement(ssn).allocate(task_of(ssn, "other-0"), "n1")
    state = cycle_state.read(STATE_KEY)
    assert isinstance(state, CapacityState)
    assert (allocated_cpu(state, "batch"), allocated_cpu(state, "root")) == (0, 30)
    assert dims(attr_of(ssn, "root").allocated)[0] == 35  # type: ignore[index]


def test_cycle_state_clones_are_independent() -> None:
    """A clone per candidate node: a removal in one clone leaves the other and the original alone."""
    ssn = session()
    plugin, original = plugin_of(ssn), CycleState()
    plugin.pre_predicate(task_of(ssn, "new-0"), original)
    first, second = original.clone(), original.clone()
    plugin.simulate_remove_task(first, task_of(ssn, "new-0"), task_of(ssn, "run-0"), ssn.nodes["n1"])
    read = [state.read(STATE_KEY) for state in (original, first, second)]
    assert [allocated_cpu(state, "inference") for state in read] == [30, 20, 30]
    cloned_again = first.clone().read(STATE_KEY)
    assert allocated_cpu(cloned_again, "inference") == 20


def test_without_pre_predicate_the_dry_run_refuses_and_changes_nothing() -> None:
    """No copy in the CycleState: simulate_allocatable is False, simulate_remove_task does nothing."""
    ssn = session()
    plugin, empty = plugin_of(ssn), CycleState()
    plugin.simulate_remove_task(empty, task_of(ssn, "new-0"), task_of(ssn, "run-0"), ssn.nodes["n1"])
    assert empty.read(STATE_KEY) is None
    assert not plugin.simulate_allocatable(empty, ssn.queues[QueueID("batch")], task_of(ssn, "other-0"))
    assert dims(attr_of(ssn, "inference").allocated)[0] == 30  # type: ignore[index]
