"""The parity suite's table of known differences (e2e/parity/known.py): names real scenarios, and a random
tie loosens the comparison only as far as the tie reaches. Needs no vc-scheduler and no control plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.parity.known import DELIBERATE, RANDOM_TIES, UNPLAYABLE, job_of
from e2e.parity.ties import (
    explained_by_deserved_order,
    explained_by_guided_ties,
    explained_by_node_ties,
    explained_by_victim_order,
    node_orders,
)
from e2e.parity.volcano import Comparison, Decisions
from py_volcano.simulation.scenario import Scenario, load_scenario
from tests.scenario_files import SCENARIO_DIR


def test_every_known_difference_names_a_scenario() -> None:
    """A renamed or removed scenario leaves no stale entry behind."""
    names = {path.stem for path in SCENARIO_DIR.glob("*.yaml")}
    assert set(DELIBERATE) <= names
    assert set(RANDOM_TIES) <= names
    assert set(UNPLAYABLE) <= names
    assert not set(DELIBERATE) & set(RANDOM_TIES)
    assert not set(UNPLAYABLE) & (set(DELIBERATE) | set(RANDOM_TIES))


def _comparison(volcano: Decisions, py_volcano: Decisions, *, tie: bool) -> Comparison:
    name = "drf-hierarchy-reclaims-from-the-richer-queue"
    return Comparison.for_scenario(load_scenario(SCENARIO_DIR / f"{name}.yaml"), volcano, py_volcano, tie=tie)


def test_a_random_tie_compares_bound_pods_and_evictions_per_job() -> None:
    """Another node or another pod of the same job agrees; another job, an unbound pod or a phase does not."""
    volcano = Decisions({"default/job-a2-0": "node-1"}, ["default/job-c-1"], {"default/job-a2": "Running"})
    same_job = Decisions({"default/job-a2-0": "node-2"}, ["default/job-c-0"], {"default/job-a2": "Running"})
    assert _comparison(volcano, same_job, tie=True).differences == {}
    assert set(_comparison(volcano, same_job, tie=False).differences) == {"bind", "eviction"}
    other = Decisions({}, ["default/job-b-0"], {"default/job-a2": "Inqueue"})
    assert set(_comparison(volcano, other, tie=True).differences) == {"bind", "eviction", "phase"}


def test_a_random_tie_compares_which_pod_of_a_job_stays_bound() -> None:
    """A pod bound then evicted is gone: either pod of the job may be the one left bound, not two for one."""
    volcano = Decisions({"default/job-a2-0": "node-1"}, [], {})
    other_pod = Decisions({"default/job-a2-1": "node-2"}, [], {})
    assert _comparison(volcano, other_pod, tie=True).differences == {}
    both = Decisions({"default/job-a2-0": "node-1", "default/job-a2-1": "node-2"}, [], {})
    assert _comparison(volcano, both, tie=True).differences == {"bind": ["default/job-a2 x1", "default/job-a2 x2"]}


def _tie_cascade() -> Scenario:
    """Two equal 2-CPU nodes, node-2 tainted: `big` tolerates the taint and goes first; `small` does not."""

    def job(name: str, cpu: str, tolerate: bool) -> list[dict[str, Any]]:
        spec: dict[str, Any] = {
            "schedulerName": "py-volcano",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        }
        if tolerate:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        created = "2026-01-01T00:00:00Z" if name == "big" else "2026-01-01T00:00:01Z"
        return [
            {
                "kind": "PodGroup",
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "metadata": {"name": name, "creationTimestamp": created},
                "spec": {"minMember": 1},
            },
            {
                "kind": "Pod",
                "apiVersion": "v1",
                "spec": spec,
                "metadata": {
                    "name": f"{name}-0",
                    "creationTimestamp": created,
                    "annotations": {"scheduling.k8s.io/group-name": name},
                },
            },
        ]

    def node(name: str, taints: list[dict[str, str]]) -> dict[str, Any]:
        resources = {"cpu": "2", "memory": "4Gi", "pods": "110"}
        return {
            "kind": "Node",
            "apiVersion": "v1",
            "metadata": {"name": name},
            "spec": {"taints": taints},
            "status": {"allocatable": resources, "capacity": resources},
        }

    taint = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    objects = [node("node-1", []), node("node-2", taint), *job("big", "2", True), *job("small", "1", False)]
    return Scenario.model_validate({"name": "tie-cascade", "objects": objects, "expect": {}})


def test_node_orders_cover_every_other_order() -> None:
    """Each renaming puts the nodes in another order; the given order is not among them."""
    assert list(node_orders(["a", "b"])) == [{"b": "a", "a": "b"}]
    assert len(list(node_orders(["a", "b", "c"]))) == 5


def test_a_difference_another_node_order_reaches_is_a_tie() -> None:
    """`big` takes node-1 (first of two equal nodes) and `small` waits; had Volcano picked node-2 for `big`,
    `small` runs on node-1: explained. `big` left unbound is no order's outcome: not explained."""
    scenario = _tie_cascade()
    jobs = job_of(scenario.objects)
    other_node = {"default/big-0": "node-2", "default/small-0": "node-1"}
    assert explained_by_node_ties(scenario, Decisions(other_node, [], {}), jobs)
    assert not explained_by_node_ties(scenario, Decisions({"default/small-0": "node-1"}, [], {}), jobs)


def test_a_difference_each_guided_tie_reaches_is_a_tie() -> None:
    """Guided to node-2 for `big` (tied with node-1), py-volcano leaves node-1 to `small`: explained. A pod
    guided where it does not tie (`small` on tainted node-2) or left unbound is no tie's outcome."""
    scenario = _tie_cascade()
    jobs = job_of(scenario.objects)
    other_node = {"default/big-0": "node-2", "default/small-0": "node-1"}
    assert explained_by_guided_ties(scenario, Decisions(other_node, [], {}), jobs)
    assert not explained_by_guided_ties(scenario, Decisions({"default/small-0": "node-1"}, [], {}), jobs)
    tainted = {"default/big-0": "node-1", "default/small-0": "node-2"}
    assert not explained_by_guided_ties(scenario, Decisions(tainted, [], {}), jobs)


def test_a_difference_another_walk_of_the_queues_reaches_is_a_tie() -> None:
    """Volcano bound two pods of job-1 where, in py-volcano's queue order, queue-2's deserved falls a
    hair short of its second pod: another order reaches it. Three pods of job-1 bound (over queue-2's
    capability) is no order's outcome."""
    scenario = load_scenario(Path(__file__).parent / "cases" / "proportion-walk-order.yaml")
    jobs = job_of(scenario.objects)
    others = {"gen/job-2-0": "node-1", "gen/job-2-1": "node-3", "gen/job-3-0": "node-2"}
    volcano = Decisions({"gen/job-1-0": "node-3", "gen/job-1-1": "node-1", **others}, [], {"gen/job-1": "Running"})
    assert not explained_by_node_ties(scenario, volcano, jobs)
    assert explained_by_deserved_order(scenario, volcano, jobs)
    three = Decisions({**volcano.binds, "gen/job-1-2": "node-2"}, [], {"gen/job-1": "Running"})
    assert not explained_by_deserved_order(scenario, three, jobs)


def test_a_difference_another_order_of_victim_candidates_reaches_is_a_tie() -> None:
    """Volcano evicted job-2-1 and job-3-0 for the gang; py-volcano, offering the node's candidates in
    reverse order, does the same. Evicting both pods of job-2 is no such order's outcome."""
    scenario = load_scenario(Path(__file__).parent / "cases" / "reclaim-victim-order.yaml")
    jobs = job_of(scenario.objects)
    phases = {"gen/job-2": "Running", "gen/job-3": "Running", "gen/job-4": "Inqueue"}
    volcano = Decisions({}, ["gen/job-2-1", "gen/job-3-0"], phases)
    assert not explained_by_guided_ties(scenario, volcano, jobs)
    assert explained_by_victim_order(scenario, volcano, jobs)
    assert not explained_by_victim_order(scenario, Decisions({}, ["gen/job-2-0", "gen/job-2-1"], phases), jobs)
