"""The parity suite's table of known differences (e2e/parity/known.py): names real scenarios, and a random
tie loosens the comparison only as far as the tie reaches. Needs no vc-scheduler and no control plane."""

from __future__ import annotations

from e2e.parity.known import DELIBERATE, RANDOM_TIES, UNPLAYABLE
from e2e.parity.volcano import Comparison, Decisions
from py_volcano.simulation.scenario import load_scenario
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
