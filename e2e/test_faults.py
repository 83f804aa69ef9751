"""Control-plane faults during a burst of pods, against the real control plane: etcd SIGKILLed and
started again, the kube-apiserver stopped 20 s with every pod pending, the kube-apiserver restarted
while a burst with gangs is scheduled, and the leading replica of two SIGKILLed three times.

After each, on 8 nodes of 8 cpu holding 60 of the burst's 64 cpu (so that two placements of the same
room would overcommit a node): every pod is bound exactly once, no node is overcommitted (cpu, memory,
pods), and no pod that fits is left pending; two pods no node can hold stay pending without counting.

"Bound exactly once" is read from the schedulers' own logs: each replica logs `task_bound` only after the
API server accepted the Binding, so the union of every replica's log (killed ones included) holds each
accepted bind; a pod with two, a 409 "already assigned" answer (a second bind the API server refused), or
a pod on another node than its bind logged fails the test. The API server refuses a second Binding and
`spec.nodeName` never changes once set, so the pods alone cannot show a double bind; `Scheduled` events
are dropped while the API server is down and aggregated into series, so they cannot count binds either.
See `e2e/fault_audit.py` for the checks and `e2e/faults.py` for how each fault is played.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.faults import TAKEOVER_S, Load, Outcome, Probe, apiserver_restart, apiserver_stop, etcd_kill, leader_kill
from e2e.harness import Nodes, Rest, create_namespace, delete_namespace, token, wait_for

pytest_plugins = ["e2e.fixtures"]

#: The label of the module's nodes, which the probes' pods select (other modules' nodes may exist).
NODE_LABEL = ("py-volcano.e2e/fault-probe", "true")
#: 176 one-pod jobs and 8 gangs of 8, 250m cpu each: 60 cpu on 64.
LOAD = Load(singles=176, gangs=8, gang_size=8, node_selector=(NODE_LABEL,))


@pytest.fixture(scope="module")
def fault_nodes(control_plane: Any, rest: Rest) -> Iterator[list[str]]:
    """Eight nodes of 8 cpu, 16Gi, 110 pods, shared by the module's probes."""
    if getattr(control_plane, "external", False):
        pytest.skip("faults need the local control plane (E2E_KUBECONFIG is set)")
    created = Nodes(rest)
    for _ in range(8):
        created.add("fault", cpu="8", memory="16Gi", pods="110", **dict([NODE_LABEL]))
    yield list(created.names)
    created.delete_all()


@pytest.fixture(scope="module")
def fault_namespaces(rest: Rest) -> Iterator[list[str]]:
    """A namespace per probe, made before any fault: after an API server restart the controller
    manager takes seconds to create a new namespace's ServiceAccount, which pods wait for."""
    names = [create_namespace(rest, token("fault")) for _ in range(4)]
    yield names
    for name in names:  # those no probe took
        delete_namespace(rest, name, wait=False)


@pytest.fixture
def probe(
    control_plane: Any, rest: Rest, scheduler_name: str, fault_nodes: list[str], fault_namespaces: list[str]
) -> Iterator[Probe]:
    """A probe in a namespace of its own; its pods are gone before the next probe (the namespace itself
    is left to the namespace controller, which takes seconds the next probe need not wait)."""
    namespace = fault_namespaces.pop()
    yield Probe(control_plane, rest, namespace, scheduler_name, fault_nodes)
    rest.request("DELETE", Rest.path("Pod", namespace), {"gracePeriodSeconds": 0})
    wait_for(f"pods of {namespace} deleted", lambda: not rest.list("Pod", namespace), timeout=60)
    delete_namespace(rest, namespace, wait=False)


def _no_damage(outcome: Outcome) -> None:
    print(outcome.summary())
    assert outcome.audit.pods == LOAD.fitting + LOAD.unfit, outcome.summary()
    assert outcome.audit.bound == LOAD.fitting and not outcome.problems(), "\n".join(outcome.problems())
    assert outcome.first_bind_s is not None, "nothing was bound after the component came back"


def test_etcd_killed_during_a_burst(probe: Probe) -> None:
    _no_damage(etcd_kill(probe, LOAD))


def test_apiserver_stopped_20s_with_pods_pending(probe: Probe) -> None:
    outcome = apiserver_stop(probe, LOAD)
    _no_damage(outcome)
    assert outcome.back_at - outcome.down_at >= 20.0


def test_apiserver_restarted_while_a_burst_with_gangs_is_scheduled(probe: Probe) -> None:
    _no_damage(apiserver_restart(probe, LOAD))


def test_the_leader_killed_three_times_during_a_burst(probe: Probe) -> None:
    outcome = leader_kill(probe, LOAD, kills=3)
    _no_damage(outcome)
    assert len(outcome.details["kills"]) == 3
    assert all(k["takeover_s"] <= TAKEOVER_S for k in outcome.details["kills"]), outcome.details
