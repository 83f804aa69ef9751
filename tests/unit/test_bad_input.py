"""No object stops the scheduler: arbitrary manifests (huge, tiny, negative, odd units, wrong types, deep
nesting) through every parser and through a whole cycle, Store -> snapshot -> run_cycle.

Every parser either reads an object or refuses it with an `ObjectError` that names the object and the
field; the guard every object goes through (`parse_object`) never has to name an unforeseen failure.
A cycle over any mix of such objects completes, with the default configuration and with preempt and
reclaim, names every object it skipped in its warnings, and still places a good pod.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from py_volcano.api import (
    parse_node,
    parse_object,
    parse_pdb,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_queue,
)
from py_volcano.cache.store import KINDS, NODES, PODS, Kind, Store
from py_volcano.errors import ObjectError
from py_volcano.framework import SchedulerConf, run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import node, pod

SETTINGS = settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
#: Whole cycles cost more: fewer examples, each a cluster of several objects.
CYCLE_SETTINGS = settings(SETTINGS, max_examples=75)

#: Quantities the API server accepts or a client might send: huge, tiny, negative, odd units and forms.
ODD_QUANTITIES = (
    "1e1000000",
    "-1e1000000",
    "1e-1000000",
    "9223372036854775808",
    "9223372036854775807",
    "-1",
    "0",
    "",
    "1Ki",
    "0.5m",
    "1.5",
    "100Ei",
    "1E308",
    "NaN",
    "Infinity",
    "+1",
    " 1",
    "1Zi",
    "1e18",
    "12345678901234567890Ki",
)
ODD_WORDS = ("Running", "Pending", "Succeeded", "Open", "Closed", "Never", "True", "Exists", "In", "Gt", "py-volcano")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ODD_QUANTITIES + ODD_WORDS),
    st.text(max_size=6),
)
#: Any JSON value, nested up to a few levels.
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=12,
)


def either(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A well-formed value most of the time (so that objects get deep into the parsers), else anything."""
    return st.sampled_from(range(12)).flatmap(lambda pick: junk if pick == 11 else good)


quantity = either(st.sampled_from(("1", "500m", "2Gi", "4", "64"))) | st.sampled_from(ODD_QUANTITIES)
resources = st.dictionaries(st.sampled_from(("cpu", "memory", "pods", "nvidia.com/gpu")), quantity, max_size=3)
labels = either(st.dictionaries(st.sampled_from(("zone", "app", "k")), st.sampled_from(("a", "b")), max_size=2))
requirement = st.fixed_dictionaries(
    {"key": either(st.sampled_from(("zone", "app"))), "operator": either(st.sampled_from(ODD_WORDS[6:10]))},
    optional={"values": either(st.lists(st.sampled_from(("a", "1")), max_size=2))},
)
selector = either(
    st.fixed_dictionaries({}, optional={"matchLabels": labels, "matchExpressions": st.lists(requirement, max_size=2)})
)
pod_term = st.fixed_dictionaries({"labelSelector": selector, "topologyKey": either(st.just("zone"))})
affinity = either(
    st.fixed_dictionaries(
        {},
        optional={
            "nodeAffinity": either(
                st.fixed_dictionaries(
                    {
                        "requiredDuringSchedulingIgnoredDuringExecution": either(
                            st.fixed_dictionaries(
                                {
                                    "nodeSelectorTerms": st.lists(
                                        either(
                                            st.fixed_dictionaries(
                                                {"matchExpressions": st.lists(requirement, max_size=2)}
                                            )
                                        ),
                                        max_size=2,
                                    )
                                }
                            )
                        )
                    }
                )
            ),
            "podAntiAffinity": either(
                st.fixed_dictionaries(
                    {"requiredDuringSchedulingIgnoredDuringExecution": st.lists(either(pod_term), max_size=2)}
                )
            ),
            "podAffinity": either(
                st.fixed_dictionaries(
                    {
                        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                            either(
                                st.fixed_dictionaries(
                                    {"weight": either(st.integers(0, 100)), "podAffinityTerm": pod_term}
                                )
                            ),
                            max_size=2,
                        )
                    }
                )
            ),
        },
    )
)


ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/queue-name", "volcano.sh/preemptable")
annotation_maps = either(
    st.dictionaries(st.sampled_from(ANNOTATIONS), st.sampled_from(("g1", "q1", "false")), max_size=2)
)


@st.composite
def metadata(draw: st.DrawFn, *, names: tuple[str, ...], namespaced: bool) -> Any:
    """A metadata map (name, namespace, uid, labels, annotations, timestamps), or anything."""
    meta: dict[str, Any] = {"name": draw(either(st.sampled_from(names))), "uid": draw(either(st.uuids().map(str)))}
    if namespaced:
        meta["namespace"] = draw(either(st.just("ns")))
    optional: dict[str, st.SearchStrategy[Any]] = {
        "labels": labels,
        "annotations": annotation_maps,
        "creationTimestamp": junk,
        "deletionTimestamp": junk,
    }
    for key in draw(st.sets(st.sampled_from(sorted(optional)))):
        meta[key] = draw(optional[key])
    return draw(either(st.just(meta)))


@st.composite
def pods(draw: st.DrawFn, *, schedulers: tuple[str, ...] = ("py-volcano", "other")) -> dict[str, Any]:
    container = st.fixed_dictionaries(
        {
            "name": st.just("c"),
            "resources": either(
                st.fixed_dictionaries({}, optional={"requests": either(resources), "limits": either(resources)})
            ),
        },
        optional={
            "ports": either(
                st.lists(either(st.fixed_dictionaries({"hostPort": either(st.integers(0, 70000))})), max_size=1)
            )
        },
    )
    spec = st.fixed_dictionaries(
        {
            "schedulerName": either(st.sampled_from(schedulers)),
            "containers": either(st.lists(either(container), min_size=1, max_size=2)),
        },
        optional={
            "nodeName": either(st.sampled_from(("", "n1", "n2"))),
            "priority": either(st.integers(-(2**31), 2**31 - 1)),
            "priorityClassName": either(st.sampled_from(("high", "none"))),
            "nodeSelector": labels,
            "affinity": affinity,
            "tolerations": either(
                st.lists(
                    either(st.fixed_dictionaries({"key": either(st.just("k")), "operator": either(st.just("Exists"))})),
                    max_size=2,
                )
            ),
            "initContainers": either(st.lists(either(container), max_size=1)),
            "overhead": either(resources),
        },
    )
    status = either(st.fixed_dictionaries({"phase": either(st.sampled_from(ODD_WORDS[:3]))}))
    names = tuple(f"p{i}" for i in range(6))
    return {
        "kind": "Pod",
        "metadata": draw(metadata(names=names, namespaced=True)),
        "spec": draw(either(spec)),
        "status": draw(status),
    }


@st.composite
def other_objects(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(("Node", "Queue", "PodGroup", "PriorityClass", "PodDisruptionBudget")))
    if kind == "Node":
        taint = either(st.fixed_dictionaries({"key": either(st.just("k")), "effect": either(st.just("NoSchedule"))}))
        spec = either(
            st.fixed_dictionaries({}, optional={"taints": either(st.lists(taint, max_size=2)), "unschedulable": junk})
        )
        status = either(
            st.fixed_dictionaries(
                {"allocatable": either(resources)}, optional={"capacity": either(resources), "conditions": junk}
            )
        )
        body = {"spec": draw(spec), "status": draw(status)}
        names: tuple[str, ...] = ("n1", "n2", "n3")
    elif kind == "Queue":
        spec = either(
            st.fixed_dictionaries(
                {"weight": either(st.integers(1, 100))},
                optional={
                    "capability": either(resources),
                    "deserved": either(resources),
                    "guarantee": either(st.fixed_dictionaries({"resource": either(resources)})),
                    "reclaimable": either(st.booleans()),
                    "parent": either(st.just("q1")),
                    "priority": junk,
                },
            )
        )
        body = {
            "spec": draw(spec),
            "status": draw(either(st.fixed_dictionaries({"state": either(st.sampled_from(("Open", "Closed")))}))),
        }
        names = ("q1", "q2")
    elif kind == "PodGroup":
        spec = either(
            st.fixed_dictionaries(
                {"minMember": either(st.integers(0, 3))},
                optional={
                    "queue": either(st.sampled_from(("q1", "default"))),
                    "minResources": either(resources),
                    "minTaskMember": either(st.dictionaries(st.just("r"), either(st.integers(0, 2)))),
                    "priorityClassName": junk,
                },
            )
        )
        body = {
            "spec": draw(spec),
            "status": draw(
                either(st.fixed_dictionaries({"phase": either(st.sampled_from(("Pending", "Inqueue", "Running")))}))
            ),
        }
        names = ("g1", "g2")
    elif kind == "PriorityClass":
        body = {"value": draw(either(st.integers(-(2**31), 2**31 - 1))), "globalDefault": draw(junk)}
        names = ("high", "low")
    else:
        spec = either(
            st.fixed_dictionaries(
                {"selector": selector},
                optional={"minAvailable": either(st.sampled_from((1, "50%"))), "maxUnavailable": junk},
            )
        )
        body = {"spec": draw(spec)}
        names = ("b1",)
    namespaced = kind in ("PodGroup", "PodDisruptionBudget")
    return {"kind": kind, "metadata": draw(metadata(names=names, namespaced=namespaced))} | body


PARSERS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "Pod": lambda obj: parse_pod(obj, priority_classes={}),
    "Node": parse_node,
    "Queue": parse_queue,
    "PodGroup": parse_pod_group,
    "PriorityClass": parse_priority_class,
    "PodDisruptionBudget": parse_pdb,
}
KIND_OF: dict[str, Kind] = {kind.name: kind for kind in KINDS}


@SETTINGS
@given(st.one_of(pods(), other_objects()))
def test_every_parser_reads_an_object_or_names_what_is_wrong(obj: dict[str, Any]) -> None:
    """Only `ObjectError`s leave a parser, each naming its kind and a field the parser itself found."""
    kind = obj["kind"]
    try:
        parse_object(kind, obj, PARSERS[kind])
    except ObjectError as exc:
        assert str(exc).startswith(f"{kind} ")
        assert exc.field != "<unknown>", f"an unforeseen failure reached the guard: {exc}"


@SETTINGS
@given(junk)
def test_anything_that_is_not_a_map_is_refused_by_the_guard(value: Any) -> None:
    """A watch event whose object is a list, a number or a string never reaches a parser."""
    if isinstance(value, dict):
        return
    with pytest.raises(ObjectError, match="expected a map"):
        parse_object("Pod", value, PARSERS["Pod"])


CONFS = {
    "default": load_conf(None),
    "preempt-reclaim": load_conf(
        'actions: "enqueue, allocate, preempt, reclaim, backfill"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    ),
}


def feed(objects: list[dict[str, Any]]) -> Store:
    """A store with a reserved 4-CPU node and a good pod bound for it, then every object as a watch event."""
    store = Store(scheduler_name="py-volcano")
    store.apply_event(NODES, "ADDED", node(name="reserved", labels={"reserved": "yes"}))
    good = pod(name="good", namespace="safe", cpu="1", spec={"nodeSelector": {"reserved": "yes"}})
    store.apply_event(PODS, "ADDED", good)
    for version, obj in enumerate(objects, start=2):
        body = copy.deepcopy(obj)
        if isinstance(body.get("metadata"), dict):
            body["metadata"]["resourceVersion"] = str(version)
        store.apply_event(KIND_OF[obj["kind"]], "ADDED", body)
    return store


def run(store: Store, conf: SchedulerConf) -> tuple[list[str], list[str]]:
    """One cycle over the store's snapshot; return (pods bound, warnings)."""
    result = run_cycle(store.snapshot(), conf, default_registry())
    return [task.key for task, _ in result.binds], result.warnings


@CYCLE_SETTINGS
@given(st.lists(st.one_of(pods(), other_objects()), max_size=8), st.sampled_from(sorted(CONFS)))
def test_a_cycle_over_any_objects_completes_and_names_what_it_skipped(objects: list[dict[str, Any]], conf: str) -> None:
    """No exception escapes the store or the cycle; every object the store could not use is in the warnings."""
    store = feed(objects)
    _, warnings = run(store, CONFS[conf])
    skipped = [record.error for records in store.records.values() for record in records.values() if record.error]
    assert all(error in warnings for error in skipped)


@CYCLE_SETTINGS
@given(
    st.lists(st.one_of(pods(schedulers=("other", "default-scheduler")), other_objects()), max_size=8),
    st.sampled_from(sorted(CONFS)),
)
def test_a_good_pod_is_placed_whatever_else_the_cluster_holds(objects: list[dict[str, Any]], conf: str) -> None:
    """Other schedulers' pods, nodes, Queues, PodGroups, classes and budgets of any shape: our pod, in the
    default queue with a node of its own, is bound to it. Other Queues carry no guarantee here: a valid
    guarantee as large as the cluster rightly reserves it all for its queue, as in Volcano."""
    kept = [without_guarantee(obj) for obj in objects if not (obj["kind"] == "Queue" and _name(obj) == "default")]
    bound, _ = run(feed(kept), CONFS[conf])
    assert bound == ["safe/good"]


def without_guarantee(obj: dict[str, Any]) -> dict[str, Any]:
    """Return a Queue without `spec.guarantee` (any other object as it is)."""
    spec = obj.get("spec")
    if obj["kind"] != "Queue" or not isinstance(spec, Mapping):
        return obj
    return {**obj, "spec": {key: value for key, value in spec.items() if key != "guarantee"}}


def _name(obj: Mapping[str, Any]) -> object:
    meta = obj.get("metadata")
    return meta.get("name") if isinstance(meta, Mapping) else None


def test_a_listed_item_or_a_watch_event_that_is_not_an_object_is_skipped() -> None:
    """A LIST page or a watch event holding a list, a number or a string costs that item only."""
    store = Store(scheduler_name="py-volcano")
    listing = store.listing(PODS, started=0.0)
    not_an_object: Any = ["not", "an", "object"]
    listing.add([not_an_object, pod(name="fine")])
    listing.finish(version=1)
    store.apply_event(PODS, "ADDED", not_an_object)
    store.apply_event(PODS, "MODIFIED", 42)  # type: ignore[arg-type]
    assert list(store.records[PODS.name]) == ["default/fine"]
    assert store.pod("default/fine") is not None
