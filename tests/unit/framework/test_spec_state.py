"""What plugins derive from the node specs alone (`SpecState`: predicates' static filters, nodeorder's
allocatable, affinity and taint counts, the metrics' cluster total) is kept from session to session
while every node has the very spec it had, and built again when a node changes, joins or goes, or the
plugin's arguments change; what a filter cached per pod is not kept (a pod may gain tolerations)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from py_volcano.api import NodeInfo
from py_volcano.cache.store import KINDS, Store
from py_volcano.framework import PluginMemory, SpecState, run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod
from tests.unit.framework.test_backlog_sharing import fed

_KINDS = {kind.name: kind for kind in KINDS}
CONF = load_conf(None)
NO_SCHEDULE = {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}


def _nodes(store: Store) -> list[NodeInfo]:
    return list(store.snapshot().nodes.values())


def test_the_state_is_kept_while_the_specs_and_key_are_the_same_and_built_again_otherwise() -> None:
    a, b = node(name="a"), node(name="b")
    store = fed([a, b])
    state, built = SpecState(), list[int]()

    def build() -> int:
        built.append(len(built))
        return len(built)

    first = state.take(_nodes(store), "args", build)
    assert state.take(_nodes(store), "args", build) == first  # another snapshot, the same specs
    assert state.take(_nodes(store), "other args", build) == first + 1
    assert state.take(list(reversed(_nodes(store))), "other args", build) == first + 2
    assert state.take(_nodes(store)[:1], "other args", build) == first + 3
    assert state.take(_nodes(store), "other args", build) == first + 4
    relabelled = copy.deepcopy(a)
    relabelled["metadata"]["labels"] = {"zone": "z1"}
    store.apply_event(_KINDS["Node"], "MODIFIED", relabelled)
    assert state.take(_nodes(store), "other args", build) == first + 5
    assert len(built) == 6


def _placed(store: Store, memory: PluginMemory) -> dict[str, str]:
    """Run a cycle with `memory`; hold its binds in the store as the binder does; return them."""
    result = run_cycle(store.snapshot(), CONF, default_registry(), memory=memory)
    for task, name in result.binds:
        store.assume(task.key, name)
    return {task.name: name for task, name in result.binds}


def test_a_node_tainted_between_cycles_is_filtered_and_scored_with_its_new_taints() -> None:
    big, small = node(name="big", cpu="64"), node(name="small", cpu="4")
    store = fed([big, small, pod(name="p0")])
    memory = PluginMemory(datetime.now(UTC))
    assert _placed(store, memory) == {"p0": "big"}  # least requested and balanced prefer the big node

    soft = copy.deepcopy(big)
    soft["spec"]["taints"] = [{"key": "drain", "value": "soon", "effect": "PreferNoSchedule"}]
    store.apply_event(_KINDS["Node"], "MODIFIED", soft)
    store.apply_event(_KINDS["Pod"], "ADDED", pod(name="p1"))
    assert _placed(store, memory) == {"p1": "small"}  # the untolerated PreferNoSchedule taint now counts

    for manifest in (soft, small):
        tainted = copy.deepcopy(manifest)
        tainted["spec"]["taints"] = [*tainted["spec"]["taints"], NO_SCHEDULE]
        store.apply_event(_KINDS["Node"], "MODIFIED", tainted)
    store.apply_event(_KINDS["Pod"], "ADDED", pod(name="p2"))
    assert _placed(store, memory) == {}  # every node is NoSchedule now


def test_a_pod_that_gains_a_toleration_is_filtered_again() -> None:
    tainted: list[dict[str, Any]] = [node(name="n0", taints=[NO_SCHEDULE])]
    waiting = pod(name="p")
    store = fed([*tainted, waiting])
    memory = PluginMemory(datetime.now(UTC))
    assert _placed(store, memory) == {}
    tolerating = copy.deepcopy(waiting)
    tolerating["spec"]["tolerations"] = [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]
    store.apply_event(_KINDS["Pod"], "MODIFIED", tolerating)
    assert _placed(store, memory) == {"p": "n0"}
