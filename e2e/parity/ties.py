"""Whether a generated cluster's difference is Volcano's random choice among equal nodes, carried forward.

Volcano picks at random among the nodes that score best; py-volcano takes the first in name order. One
such choice early in a cycle changes what later pods find (a small pod's only node is taken, a gang no
longer fits), so two schedulers with the same rules can end in different places, which comparing binds
up to their nodes (`Decisions.loosened`) does not absorb. A difference is put down to such ties when
py-volcano, played in memory (`py-volcano simulate`'s engine) with the nodes renamed so that another
order breaks its ties, reaches Volcano's decisions up to a tie. Renaming changes nothing but the order
of equal candidates: nodes are told apart by their labels, and pods placed on a node follow it.

One renaming breaks every tie the same way; Volcano breaks each anew. `explained_by_guided_ties` plays
py-volcano once more with each choice among best-scored nodes guided to the node Volcano bound that pod
to, when that node is among them: a tie broken independently at each decision.

Proportion's water-filling walks the queues in Go map order, at random, and adds the round's deserved
increases in that order: floating-point sums in another order can differ in the last bit, and a queue's
deserved then lands a hair under a figure it reaches in another order (1999.9999999999998 milli-CPU
against 2000), which decides whether a task fits exactly at deserved. `explained_by_deserved_order`
plays py-volcano with the queues walked in each other order.

Volcano also offers a node's tasks to the victim plugins in Go map order; proportion takes victims
while their queue stays above deserved, so which job gives up a pod follows that order, and one
eviction changes what later preemptors find. `explained_by_victim_order` plays py-volcano with every
node's candidates offered in reverse order (one other order, not all of them).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from unittest import mock

import numpy as np

from e2e.parity.volcano import Decisions
from py_volcano.actions.preempt.preemptees import Scope
from py_volcano.api import NodeInfo, Resource, TaskInfo
from py_volcano.framework import Session
from py_volcano.plugins.proportion import plugin as proportion
from py_volcano.plugins.proportion.queue_attr import QueueAttr, split_deserved
from py_volcano.simulation.run import run_scenario
from py_volcano.simulation.scenario import Scenario

__all__ = [
    "explained_by_deserved_order",
    "explained_by_guided_ties",
    "explained_by_node_ties",
    "explained_by_victim_order",
    "random_tie",
]

#: At most this many node orders are tried (every order of up to four nodes).
MAX_ORDERS = 24


def node_orders(names: list[str]) -> Iterator[dict[str, str]]:
    """Yield renamings of `names` (old -> new) that put them in every other order, up to `MAX_ORDERS`."""
    ordered = sorted(names)
    for count, permutation in enumerate(itertools.permutations(ordered)):
        if count >= MAX_ORDERS:
            return
        if list(permutation) != ordered:
            # the node at position i of `permutation` takes the i-th name: it now sorts i-th
            yield {old: new for old, new in zip(permutation, ordered, strict=True)}


def renamed(objects: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """Return `objects` with each node renamed by `names`, and every pod placed on it following it."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj["kind"] == "Node":
            obj["metadata"]["name"] = names[obj["metadata"]["name"]]
        elif obj["kind"] == "Pod" and (obj.get("spec") or {}).get("nodeName"):
            obj["spec"]["nodeName"] = names[obj["spec"]["nodeName"]]
    return out


def in_memory(scenario: Scenario, names: dict[str, str]) -> Decisions:
    """Play `scenario` in memory with nodes renamed; return its decisions as the harness reads them: final
    binds (original node names), evictions of pods the scenario placed, declared PodGroups' phases."""
    back = {new: old for old, new in names.items()}
    played = scenario.model_copy(update={"objects": renamed(scenario.objects, names)})
    report = run_scenario(played, source=f"{scenario.name} (nodes renamed)")
    placed = {
        f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"
        for obj in scenario.objects
        if obj["kind"] == "Pod" and (obj.get("spec") or {}).get("nodeName")
    }
    evicted = set(report["evictions"])
    binds = {key: back[node] for key, node in report["binds"].items() if key not in evicted and key not in placed}
    phases = {key: status["phase"] for key, status in report["podGroups"].items()}
    return Decisions(binds, [key for key in report["evictions"] if key in placed], phases)


def explained_by_node_ties(scenario: Scenario, volcano: Decisions, jobs: dict[str, str]) -> bool:
    """Whether some other order of equal nodes leads py-volcano to `volcano`'s decisions up to a tie
    (`Decisions.loosened`); the phases compared are those both report."""
    names = sorted(node_names(scenario))
    return any(reaches(in_memory(scenario, order), volcano, jobs) for order in node_orders(names))


def node_names(scenario: Scenario) -> list[str]:
    """Return the names of the scenario's nodes."""
    return [obj["metadata"]["name"] for obj in scenario.objects if obj["kind"] == "Node"]


def reaches(mine: Decisions, volcano: Decisions, jobs: dict[str, str]) -> bool:
    """Whether `mine` are `volcano`'s decisions up to a tie (`Decisions.loosened`), on the phases both report."""
    loose, wanted = mine.loosened(jobs), volcano.loosened(jobs)
    same_phases = all(mine.phases.get(key, value) == value for key, value in volcano.phases.items())
    return same_phases and loose.binds == wanted.binds and loose.evictions == wanted.evictions


def guided_best_node(wanted: Mapping[str, str]) -> contextlib.AbstractContextManager[Any]:
    """Within the block, a session's choice among its best-scored nodes takes the one `wanted` names for
    the pod (pod key -> node) when it is among them, else the first as usual."""
    plain = Session.best_node

    def best_node(self: Session, task: TaskInfo, candidates: Any) -> NodeInfo | None:
        node = wanted.get(task.key)
        if node is None or len(candidates) < 2:
            return plain(self, task, candidates)
        scores = self.prioritize(task, candidates)
        tied = (self.node_list[int(i)] for i in candidates[np.flatnonzero(scores == scores.max())])
        return next((n for n in tied if n.name == node), None) or plain(self, task, candidates)

    return mock.patch.object(Session, "best_node", best_node)


def explained_by_guided_ties(scenario: Scenario, volcano: Decisions, jobs: dict[str, str]) -> bool:
    """Whether py-volcano reaches `volcano`'s decisions up to a tie when each of its choices among
    equal-best nodes is guided to the node Volcano bound that pod to (`guided_best_node`)."""
    with guided_best_node(volcano.binds):
        mine = in_memory(scenario, {name: name for name in node_names(scenario)})
    return reaches(mine, volcano, jobs)


def queues_walked_in(order: tuple[int, ...]) -> contextlib.AbstractContextManager[Any]:
    """Within the block, proportion's water-filling walks the queues in `order` (positions in its own
    order; queues beyond it keep their place)."""

    def walked(attrs: Iterable[QueueAttr], total: Resource) -> None:
        queues = list(attrs)
        moved = [queues[i] for i in order if i < len(queues)]
        split_deserved([*moved, *(q for i, q in enumerate(queues) if i not in order)], total)

    return mock.patch.object(proportion, "split_deserved", walked)


def explained_by_deserved_order(scenario: Scenario, volcano: Decisions, jobs: dict[str, str]) -> bool:
    """Whether py-volcano reaches `volcano`'s decisions up to a tie when proportion walks the queues (the
    scenario's and `default`, at most four) in another order."""
    count = 1 + sum(1 for obj in scenario.objects if obj["kind"] == "Queue")
    identity = {name: name for name in node_names(scenario)}
    for order in itertools.islice(itertools.permutations(range(min(count, 4))), 1, MAX_ORDERS):
        with queues_walked_in(order):
            if reaches(in_memory(scenario, identity), volcano, jobs):
                return True
    return False


def random_tie(scenario: Scenario, volcano: Decisions, jobs: dict[str, str]) -> str:
    """Name the random choice of Volcano's that explains its decisions (`node-tie`: equal nodes, in
    another order or guided decision by decision; `queue-order-tie`: proportion's walk;
    `victim-order-tie`: the order of a node's victim candidates), or ""."""
    if explained_by_node_ties(scenario, volcano, jobs) or explained_by_guided_ties(scenario, volcano, jobs):
        return "node-tie"
    if explained_by_deserved_order(scenario, volcano, jobs):
        return "queue-order-tie"
    if explained_by_victim_order(scenario, volcano, jobs):
        return "victim-order-tie"
    return ""


def explained_by_victim_order(scenario: Scenario, volcano: Decisions, jobs: dict[str, str]) -> bool:
    """Whether py-volcano reaches `volcano`'s decisions up to a tie when preempt and reclaim offer each
    node's candidates to the victim plugins in reverse order."""
    plain = Scope.preemptees

    def reversed_preemptees(self: Scope, node: NodeInfo) -> list[TaskInfo]:
        return plain(self, node)[::-1]

    with mock.patch.object(Scope, "preemptees", reversed_preemptees):
        mine = in_memory(scenario, {name: name for name in node_names(scenario)})
    return reaches(mine, volcano, jobs)
