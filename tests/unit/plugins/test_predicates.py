"""predicates: Kubernetes' node filters, hand-checked per filter, kept right through statements, and the
vectorised mask compared with the per-node predicate and a straightforward reference on random clusters."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import NodeInfo, TaskInfo, TaskStatus
from py_volcano.errors import ConfigError
from py_volcano.framework import (
    PredicateStatus,
    Registry,
    Session,
    Statement,
    open_session,
    parse_conf,
)
from py_volcano.plugins import PLUGINS, predicates
from py_volcano.plugins.predicates import PredicatesArgs
from py_volcano.plugins.predicates.node_filters import NODE_AFFINITY
from py_volcano.plugins.predicates.plugin import NODE_PORTS
from tests.builders import cluster, node, pod, pod_group
from tests.unit.arguments import plugin_args

REGISTRY = Registry(plugins={"predicates": PLUGINS["predicates"]}, actions=ACTIONS)


def conf(arguments: Mapping[str, Any] | None = None) -> Any:
    args = "".join(f"\n      {k}: {v}" for k, v in (arguments or {}).items())
    args = f"\n    arguments:{args}" if args else ""
    return parse_conf(
        f'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates{args}', REGISTRY
    )


def session(*objects: dict[str, Any], arguments: Mapping[str, Any] | None = None) -> Session:
    return open_session(cluster(*objects), conf(arguments), REGISTRY)


def task(ssn: Session, name: str, namespace: str = "default") -> TaskInfo:
    return next(
        t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name and t.namespace == namespace
    )


def allowed(ssn: Session, name: str, *, for_preempt: bool = False) -> list[str]:
    mask = ssn.predicate_mask(task(ssn, name), for_preempt=for_preempt)
    return [n.name for n, ok in zip(ssn.node_list, mask, strict=True) if ok]


def reasons(ssn: Session, name: str) -> dict[str, PredicateStatus | None]:
    t = task(ssn, name)
    return {n.name: ssn.predicate(t, n) for n in ssn.node_list}


def pending(
    name: str,
    *,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    return pod(name=name, namespace=namespace, cpu="100m", memory="", spec=spec, labels=labels)


def running(
    name: str,
    node_name: str,
    *,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    return pod(
        name=name, namespace=namespace, node_name=node_name, cpu="100m", memory="", spec=spec, labels=labels
    )


def ports(*entries: tuple[int, str, str]) -> dict[str, Any]:
    """A pod spec with one container exposing (hostPort, protocol, hostIP) entries."""
    return {
        "containers": [
            {
                "name": "main",
                "image": "pause",
                "resources": {"requests": {"cpu": "100m"}},
                "ports": [
                    {"containerPort": p, "hostPort": p, "protocol": proto, "hostIP": ip}
                    for p, proto, ip in entries
                ],
            }
        ]
    }


def term(
    selector: dict[str, Any] | None, key: str = "kubernetes.io/hostname", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"topologyKey": key, **extra}
    if selector is not None:
        body["labelSelector"] = selector
    return body


def pod_affinity(*, affinity: list[dict[str, Any]] = (), anti: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    result: dict[str, Any] = {}
    if affinity:
        result["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(affinity)}
    if anti:
        result["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return {"affinity": result}


def hostnames(*names: str, **labels: str) -> list[dict[str, Any]]:
    return [node(name=n, labels={"kubernetes.io/hostname": n, **labels}) for n in names]


# Static filters -----------------------------------------------------------------------------------

NODES = [
    node(name="n1", labels={"disk": "ssd", "zone": "a", "cores": "8"}),
    node(name="n2", labels={"disk": "hdd", "zone": "b", "cores": "32"}),
    node(name="n3", labels={"zone": "c"}),
]


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"nodeSelector": {"disk": "ssd"}}, ["n1"], id="node-selector"),
        pytest.param({"nodeSelector": {"disk": "ssd", "zone": "b"}}, [], id="node-selector-all-labels"),
        pytest.param({"nodeSelector": {"disk": "nvme"}}, [], id="node-selector-unknown-value"),
        pytest.param(
            required({"matchExpressions": [expr("disk", "In", "ssd", "hdd")]}), ["n1", "n2"], id="in"
        ),
        pytest.param(
            required({"matchExpressions": [expr("disk", "NotIn", "ssd")]}),
            ["n2", "n3"],
            id="not-in-includes-missing",
        ),
        pytest.param(required({"matchExpressions": [expr("disk", "Exists")]}), ["n1", "n2"], id="exists"),
        pytest.param(
            required({"matchExpressions": [expr("disk", "DoesNotExist")]}), ["n3"], id="does-not-exist"
        ),
        pytest.param(required({"matchExpressions": [expr("cores", "Gt", "8")]}), ["n2"], id="gt"),
        pytest.param(required({"matchExpressions": [expr("cores", "Lt", "32")]}), ["n1"], id="lt"),
        pytest.param(
            required({"matchExpressions": [expr("disk", "Exists"), expr("zone", "In", "b")]}),
            ["n2"],
            id="and-of-expressions",
        ),
        pytest.param(
            required(
                {"matchExpressions": [expr("zone", "In", "a")]},
                {"matchExpressions": [expr("zone", "In", "c")]},
            ),
            ["n1", "n3"],
            id="or-of-terms",
        ),
        pytest.param(
            required({"matchFields": [expr("metadata.name", "In", "n2")]}), ["n2"], id="match-fields"
        ),
        pytest.param(
            required(
                {
                    "matchFields": [expr("metadata.name", "NotIn", "n2")],
                    "matchExpressions": [expr("zone", "In", "b", "c")],
                }
            ),
            ["n3"],
            id="fields-and-labels",
        ),
        pytest.param(required({}), [], id="empty-term-matches-nothing"),
        pytest.param(required(), [], id="no-terms-match-nothing"),
        pytest.param(
            {"nodeSelector": {"zone": "a"}, **required({"matchExpressions": [expr("disk", "In", "ssd")]})},
            ["n1"],
            id="selector-and-affinity",
        ),
    ],
)
def test_node_selector_and_required_node_affinity(spec: dict[str, Any], expected: list[str]) -> None:
    """Node selector labels all match; required terms are ORed, their expressions ANDed."""
    ssn = session(*NODES, pending("p", spec=spec))
    assert allowed(ssn, "p") == expected
    refused = {name for name, status in reasons(ssn, "p").items() if status is not None}
    assert refused == {"n1", "n2", "n3"} - set(expected)
    assert all(reasons(ssn, "p")[name] == PredicateStatus(NODE_AFFINITY) for name in refused)


TAINTED = [
    node(name="plain"),
    node(name="no-schedule", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    node(name="no-execute", taints=[{"key": "maint", "value": "", "effect": "NoExecute"}]),
    node(name="prefer", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        pytest.param([], ["plain", "prefer"], id="none-tolerated"),
        pytest.param(
            [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            ["plain", "no-schedule", "prefer"],
            id="equal",
        ),
        pytest.param(
            [{"key": "gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}],
            ["plain", "prefer"],
            id="equal-wrong-value",
        ),
        pytest.param(
            [{"key": "gpu", "operator": "Exists"}], ["plain", "no-schedule", "prefer"], id="exists-any-effect"
        ),
        pytest.param(
            [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
            ["plain", "prefer"],
            id="exists-other-effect",
        ),
        pytest.param(
            [{"key": "maint", "operator": "Exists", "effect": "NoExecute"}],
            ["plain", "no-execute", "prefer"],
            id="no-execute",
        ),
        pytest.param(
            [{"operator": "Exists"}],
            ["plain", "no-schedule", "no-execute", "prefer"],
            id="empty-key-exists-tolerates-all",
        ),
    ],
)
def test_taints_and_tolerations(tolerations: list[dict[str, str]], expected: list[str]) -> None:
    """NoSchedule and NoExecute taints must be tolerated; PreferNoSchedule never filters."""
    ssn = session(*TAINTED, pending("p", spec={"tolerations": tolerations}))
    assert allowed(ssn, "p") == expected


def test_untolerated_taint_reason_names_the_first_taint() -> None:
    """The reason is Kubernetes' `node(s) had untolerated taint {key: value}`; unresolvable."""
    ssn = session(*TAINTED, pending("p"))
    result = reasons(ssn, "p")
    assert result["no-schedule"] == PredicateStatus("node(s) had untolerated taint {gpu: true}")
    assert result["no-execute"] == PredicateStatus("node(s) had untolerated taint {maint: }")
    assert result["plain"] is None and result["prefer"] is None


def test_unschedulable_and_not_ready_nodes() -> None:
    """A cordoned node takes only pods tolerating node.kubernetes.io/unschedulable; a not-ready one none."""
    not_ready = node(name="down")
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    toleration = {
        "tolerations": [
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ]
    }
    ssn = session(
        node(name="up"),
        node(name="cordoned", unschedulable=True),
        not_ready,
        pending("plain"),
        pending("tolerant", spec=toleration),
    )
    assert allowed(ssn, "plain") == ["up"]
    assert allowed(ssn, "tolerant") == ["up", "cordoned"]
    assert reasons(ssn, "plain") == {
        "up": None,
        "cordoned": PredicateStatus("node(s) were unschedulable"),
        "down": PredicateStatus("node(s) were not ready"),
    }


def test_static_masks_are_cached_per_shape_and_read_only() -> None:
    """Two pods of one shape share one mask; the cached mask cannot be written."""
    spec = {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "x", "operator": "Exists"}]}
    ssn = session(*NODES, pending("a", spec=spec), pending("b", spec=dict(spec)), pending("c"))
    plugin = ssn.plugins["predicates"]
    assert isinstance(plugin, predicates.PredicatesPlugin) and plugin.state is not None
    static = plugin.state.static
    assert static.mask(task(ssn, "a")) is static.mask(task(ssn, "b"))
    assert static.mask(task(ssn, "c")) is not static.mask(task(ssn, "a"))
    with pytest.raises(ValueError, match="read-only"):
        static.mask(task(ssn, "a"))[0] = True


def test_switches_turn_filters_off() -> None:
    """predicate.NodeAffinityEnable / TaintTolerationEnable false skip those filters (Volcano's arguments)."""
    objects = [*TAINTED, pending("p", spec={"nodeSelector": {"disk": "ssd"}})]
    assert allowed(session(*objects), "p") == []
    ssn = session(
        *objects,
        arguments={"predicate.NodeAffinityEnable": "false", "predicate.TaintTolerationEnable": "false"},
    )
    assert allowed(ssn, "p") == ["plain", "no-schedule", "no-execute", "prefer"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, PredicatesArgs(True, True, True, True), id="defaults-all-on"),
        pytest.param(
            {"predicate.NodeAffinityEnable": False, "predicate.PodAffinityEnable": "FALSE"},
            PredicatesArgs(node_affinity=False, node_ports=True, taint_toleration=True, pod_affinity=False),
            id="booleans-and-strings",
        ),
        pytest.param(
            {"predicate.NodePortsEnable": " false ", "predicate.TaintTolerationEnable": "True"},
            PredicatesArgs(node_affinity=True, node_ports=False, taint_toleration=True, pod_affinity=True),
            id="strings-any-case",
        ),
    ],
)
def test_switch_arguments_parse(arguments: dict[str, object], expected: PredicatesArgs) -> None:
    """Each `predicate.XxxEnable` argument is read once at load into the frozen PredicatesArgs."""
    assert plugin_args("predicates", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"predicate.NodeAffinityEnable": "no"},
            "predicate.NodeAffinityEnable: 'no' is not true or false",
            id="text",
        ),
        pytest.param(
            {"predicate.NodePortsEnable": 0},
            "predicate.NodePortsEnable: 0 is not true or false",
            id="number",
        ),
        pytest.param(
            {"predicate.PodAffinityEnable": None},
            "predicate.PodAffinityEnable: None is not true or false",
            id="empty",
        ),
    ],
)
def test_a_bad_switch_argument_is_a_config_error_naming_plugin_key_and_value(
    arguments: dict[str, object], message: str
) -> None:
    """The configuration does not load; the error names the plugin, the key and the value."""
    with pytest.raises(ConfigError) as info:
        plugin_args("predicates", arguments)
    assert str(info.value) == f"scheduler conf: plugin predicates: argument {message}"


# Host ports ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "wanted", "conflict"),
    [
        pytest.param((8080, "TCP", "0.0.0.0"), (8080, "TCP", "0.0.0.0"), True, id="same-port"),
        pytest.param((8080, "TCP", "0.0.0.0"), (8081, "TCP", "0.0.0.0"), False, id="other-port"),
        pytest.param((8080, "TCP", "0.0.0.0"), (8080, "UDP", "0.0.0.0"), False, id="other-protocol"),
        pytest.param((8080, "TCP", "10.0.0.1"), (8080, "TCP", "10.0.0.2"), False, id="other-ip"),
        pytest.param((8080, "TCP", "10.0.0.1"), (8080, "TCP", "10.0.0.1"), True, id="same-ip"),
        pytest.param((8080, "TCP", "10.0.0.1"), (8080, "TCP", "0.0.0.0"), True, id="wildcard-wants"),
        pytest.param((8080, "TCP", "0.0.0.0"), (8080, "TCP", "10.0.0.1"), True, id="wildcard-used"),
    ],
)
def test_host_port_conflicts(
    existing: tuple[int, str, str], wanted: tuple[int, str, str], conflict: bool
) -> None:
    """0.0.0.0 conflicts with every IP; protocol and port must both match (Kubernetes' NodePorts)."""
    ssn = session(
        node(name="n1"),
        node(name="n2"),
        running("web", "n1", spec=ports(existing)),
        pending("p", spec=ports(wanted)),
    )
    assert allowed(ssn, "p") == (["n2"] if conflict else ["n1", "n2"])
    expected = PredicateStatus(NODE_PORTS, resolvable=True) if conflict else None
    assert reasons(ssn, "p")["n1"] == expected
    assert allowed(ssn, "p", for_preempt=True) == ["n1", "n2"]


def test_host_ports_follow_statements() -> None:
    """An allocated pod's host port blocks the node at once; discarding the allocation frees it again."""
    ssn = session(
        node(name="n1"),
        node(name="n2"),
        pod_group(name="g", min_member=2, phase="Inqueue"),
        pod(name="g-0", group="g", cpu="100m", memory="", spec=ports((80, "TCP", "0.0.0.0"))),
        pod(name="g-1", group="g", cpu="100m", memory="", spec=ports((80, "TCP", "0.0.0.0"))),
    )
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "g-0"), "n1")
    assert allowed(ssn, "g-1") == ["n2"]
    assert ssn.predicate(task(ssn, "g-1"), ssn.nodes["n1"]) == PredicateStatus(NODE_PORTS, True)
    stmt.discard()
    assert allowed(ssn, "g-1") == ["n1", "n2"]
    stmt = Statement(ssn)
    stmt.pipeline(task(ssn, "g-0"), "n2")
    assert allowed(ssn, "g-1") == ["n1"]


# Inter-pod affinity -------------------------------------------------------------------------------

WEB = {"matchLabels": {"app": "web"}}


def test_anti_affinity_keeps_pods_apart_by_hostname_and_zone() -> None:
    """A node (or zone) holding a matching pod fails the pod's anti-affinity; resolvable by eviction."""
    nodes = [
        node(name=n, labels={"kubernetes.io/hostname": n, "zone": z})
        for n, z in (("n1", "a"), ("n2", "a"), ("n3", "b"))
    ]
    ssn = session(
        *nodes,
        running("web-0", "n1", labels={"app": "web"}),
        pending("host", spec=pod_affinity(anti=[term(WEB)]), labels={"app": "web"}),
        pending("zone", spec=pod_affinity(anti=[term(WEB, "zone")]), labels={"app": "web"}),
    )
    assert allowed(ssn, "host") == ["n2", "n3"]
    assert allowed(ssn, "zone") == ["n3"]
    assert reasons(ssn, "zone")["n2"] == PredicateStatus("node(s) didn't match pod anti-affinity rules", True)
    assert allowed(ssn, "zone", for_preempt=True) == ["n1", "n2", "n3"]


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    """A placed pod's required anti-affinity keeps matching pods out of its topology domain."""
    ssn = session(
        *hostnames("n1", "n2"),
        running("guard", "n1", spec=pod_affinity(anti=[term(WEB)])),
        pending("web", labels={"app": "web"}),
        pending("db", labels={"app": "db"}),
    )
    assert allowed(ssn, "web") == ["n2"]
    assert allowed(ssn, "db") == ["n1", "n2"]
    assert reasons(ssn, "web")["n1"] == PredicateStatus(
        "node(s) didn't satisfy existing pods anti-affinity rules", resolvable=True
    )


def test_affinity_co_locates_and_is_unresolvable() -> None:
    """Required affinity needs a matching pod in the node's domain; eviction cannot fix it."""
    ssn = session(
        *hostnames("n1", "n2", "n3"),
        running("cache", "n2", labels={"app": "cache"}),
        pending("p", spec=pod_affinity(affinity=[term({"matchLabels": {"app": "cache"}})])),
    )
    assert allowed(ssn, "p") == ["n2"]
    assert allowed(ssn, "p", for_preempt=True) == ["n2"]
    assert reasons(ssn, "p")["n1"] == PredicateStatus("node(s) didn't match pod affinity rules")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param({"app": "web"}, ["n1", "n2"], id="self-matching-first-pod-goes-anywhere"),
        pytest.param({"app": "other"}, [], id="not-self-matching-waits"),
    ],
)
def test_first_pod_of_a_self_affine_series(labels: dict[str, str], expected: list[str]) -> None:
    """With no matching pod anywhere, a pod matching its own terms may start the series."""
    nolabel = node(name="n3")
    ssn = session(
        *hostnames("n1", "n2"), nolabel, pending("p", spec=pod_affinity(affinity=[term(WEB)]), labels=labels)
    )
    assert allowed(ssn, "p") == expected


def test_affinity_terms_default_to_the_pods_namespace() -> None:
    """Terms look in the pod's own namespace unless namespaces or a namespaceSelector say otherwise."""
    objects = [*hostnames("n1", "n2"), running("web", "n1", labels={"app": "web"}, namespace="other")]
    own = session(*objects, pending("p", spec=pod_affinity(anti=[term(WEB)]), labels={"app": "x"}))
    assert allowed(own, "p") == ["n1", "n2"]
    listed = session(*objects, pending("p", spec=pod_affinity(anti=[term(WEB, namespaces=["other"])])))
    assert allowed(listed, "p") == ["n2"]
    everywhere = session(*objects, pending("p", spec=pod_affinity(anti=[term(WEB, namespaceSelector={})])))
    assert allowed(everywhere, "p") == ["n2"]
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "other"}}
    named = session(*objects, pending("p", spec=pod_affinity(anti=[term(WEB, namespaceSelector=by_name)])))
    assert allowed(named, "p") == ["n2"]


def test_term_without_label_selector_selects_nothing() -> None:
    """A nil labelSelector matches no pod (LabelSelectorAsSelector(nil) is Nothing)."""
    ssn = session(
        *hostnames("n1", "n2"),
        running("web", "n1", labels={"app": "web"}),
        pending("p", spec=pod_affinity(anti=[term(None)])),
    )
    assert allowed(ssn, "p") == ["n1", "n2"]


def test_anti_affinity_spreads_a_gang_through_a_statement() -> None:
    """Each allocation is seen by the next task's anti-affinity; discard restores the free nodes."""
    spec = pod_affinity(anti=[term(WEB)])
    ssn = session(
        *hostnames("n1", "n2", "n3"),
        pod_group(name="g", min_member=3, phase="Inqueue"),
        *[
            pod(name=f"g-{i}", group="g", cpu="100m", memory="", labels={"app": "web"}, spec=spec)
            for i in range(3)
        ],
    )
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "g-0"), "n1")
    stmt.allocate(task(ssn, "g-1"), "n2")
    assert allowed(ssn, "g-2") == ["n3"]
    stmt.discard()
    assert allowed(ssn, "g-2") == ["n1", "n2", "n3"]


def test_eviction_removes_a_pod_from_the_affinity_view() -> None:
    """An evicted pod no longer counts (Volcano's predicates deallocate handler); discard brings it back."""
    ssn = session(
        *hostnames("n1", "n2"),
        running("web", "n1", labels={"app": "web"}),
        pending("p", spec=pod_affinity(anti=[term(WEB)])),
    )
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "web"), "preempted")
    assert allowed(ssn, "p") == ["n1", "n2"]
    stmt.discard()
    assert allowed(ssn, "p") == ["n2"]


def test_explain_counts_reasons() -> None:
    """explain() uses the per-node predicate: one reason per node, summarised like Kubernetes."""
    ssn = session(
        node(name="tainted", labels={"disk": "ssd"}, taints=[{"key": "gpu", "value": "true"}]),
        node(name="hdd", labels={"disk": "hdd"}),
        node(name="hdd2", labels={"disk": "hdd"}),
        node(name="cordoned", labels={"disk": "ssd"}, unschedulable=True),
        pending("p", spec={"nodeSelector": {"disk": "ssd"}}),
    )
    assert ssn.explain(task(ssn, "p")).summary() == (
        "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {gpu: true}, 1 node(s) were unschedulable"
    )


# Random clusters: batch mask == per-node predicate == straightforward reference -----------------

KEYS = {
    "zone": ["a", "b", "c"],
    "rack": ["r1", "r2", "r3", "r4"],
    "disk": ["ssd", "hdd"],
    "cores": ["4", "8", "16"],
}
TAINT_CHOICES = [
    ("gpu", "true", "NoSchedule"),
    ("maint", "", "NoExecute"),
    ("spot", "y", "PreferNoSchedule"),
    ("gpu", "false", "NoSchedule"),
]
APPS = ["web", "db", "cache"]


def _random_labels(rng: random.Random, name: str) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": name}
    for key, values in KEYS.items():
        if rng.random() < 0.8:
            labels[key] = rng.choice(values)
    return labels


def _random_pod_terms(rng: random.Random) -> list[dict[str, Any]]:
    terms = []
    for _ in range(rng.randint(1, 2)):
        selector = rng.choice(
            [
                {"matchLabels": {"app": rng.choice(APPS)}},
                {"matchExpressions": [{"key": "app", "operator": "In", "values": rng.sample(APPS, 2)}]},
                {},
                None,
            ]
        )
        extra: dict[str, Any] = rng.choice([{}, {"namespaces": ["ns1", "ns2"]}, {"namespaceSelector": {}}])
        terms.append(term(selector, rng.choice(["kubernetes.io/hostname", "zone", "rack"]), **extra))
    return terms


def _random_spec(rng: random.Random, *, placed: bool) -> dict[str, Any]:
    spec: dict[str, Any] = ports(
        *[
            (rng.choice([80, 443]), rng.choice(["TCP", "UDP"]), rng.choice(["0.0.0.0", "10.0.0.1"]))
            for _ in range(rng.randint(0, 1))
        ]
    )
    if not placed and rng.random() < 0.3:
        key = rng.choice(list(KEYS))
        spec["nodeSelector"] = {key: rng.choice(KEYS[key])}
    if not placed and rng.random() < 0.4:
        exprs = [
            expr(
                k,
                rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
                *rng.sample(KEYS[k], 1 if k == "cores" else 2),
            )
            for k in rng.sample(list(KEYS), 2)
        ]
        spec.update(required({"matchExpressions": exprs[:1]}, {"matchExpressions": exprs[1:]}))
    spec["tolerations"] = [
        {"key": k, "operator": rng.choice(["Equal", "Exists"]), "value": v, "effect": e}
        for k, v, e in rng.sample(TAINT_CHOICES, rng.randint(0, 2))
    ]
    if rng.random() < 0.5:
        affinity = pod_affinity(
            affinity=_random_pod_terms(rng) if rng.random() < 0.5 else [],
            anti=_random_pod_terms(rng) if rng.random() < 0.5 else [],
        )["affinity"]
        spec["affinity"] = {**spec.get("affinity", {}), **affinity}
    return spec


def random_objects(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects = []
    for i in range(12):
        n = node(
            name=f"n{i}",
            labels=_random_labels(rng, f"n{i}"),
            unschedulable=rng.random() < 0.1,
            taints=[
                {"key": k, "value": v, "effect": e}
                for k, v, e in rng.sample(TAINT_CHOICES, rng.randint(0, 1))
            ],
        )
        if rng.random() < 0.1:
            n["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        objects.append(n)
    for i in range(20):
        objects.append(
            running(
                f"run-{i}",
                f"n{rng.randrange(12)}",
                spec=_random_spec(rng, placed=True),
                labels={"app": rng.choice(APPS)},
                namespace=rng.choice(["ns1", "ns2"]),
            )
        )
    for i in range(30):
        objects.append(
            pending(
                f"new-{i}",
                spec=_random_spec(rng, placed=False),
                labels={"app": rng.choice(APPS)},
                namespace=rng.choice(["ns1", "ns2"]),
            )
        )
    return objects


def _selects(t: Mapping[str, Any], pod_ns: str, owner_ns: str, labels: Mapping[str, str]) -> bool:
    names = t.get("namespaces") or ([] if "namespaceSelector" in t else [owner_ns])
    selector = t.get("namespaceSelector")
    in_scope = pod_ns in names or (
        selector is not None
        and all(
            {"kubernetes.io/metadata.name": pod_ns}.get(k) == v
            for k, v in (selector.get("matchLabels") or {}).items()
        )
    )
    if not in_scope or "labelSelector" not in t:
        return False
    sel = t["labelSelector"]
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in sel.get("matchExpressions") or [])


def _required_terms(p: TaskInfo, kind: str) -> list[Mapping[str, Any]]:
    return list((p.affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _node_term_ok(t: Mapping[str, Any], n: NodeInfo) -> bool:
    def one(e: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
        value, op, values = labels.get(e["key"]), e["operator"], e.get("values") or []
        if op in ("In", "NotIn"):
            return bool((value is not None and value in values) == (op == "In"))
        if op in ("Exists", "DoesNotExist"):
            return bool((value is not None) == (op == "Exists"))
        if value is None or not value.isdigit() or not values[0].isdigit():
            return False
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])

    exprs, fields = t.get("matchExpressions") or [], t.get("matchFields") or []
    return (
        bool(exprs or fields)
        and all(one(e, n.labels) for e in exprs)
        and all(one(e, {"metadata.name": n.name}) for e in fields)
    )


def reference(ssn: Session, p: TaskInfo, n: NodeInfo, *, for_preempt: bool) -> bool:
    """Kubernetes' filters written out per node, scanning every pod on every node each time."""

    def tolerated(key: str, value: str, effect: str) -> bool:
        return any(
            (not t.effect or t.effect == effect)
            and (not t.key or t.key == key)
            and (t.operator == "Exists" or t.value == value)
            for t in p.tolerations
        )

    if not n.ready or (
        n.unschedulable and not tolerated("node.kubernetes.io/unschedulable", "", "NoSchedule")
    ):
        return False
    if any(n.labels.get(k) != v for k, v in p.node_selector.items()):
        return False
    req = (p.affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None and not any(_node_term_ok(t, n) for t in req.get("nodeSelectorTerms") or []):
        return False
    if any(
        t.effect in ("NoSchedule", "NoExecute") and not tolerated(t.key, t.value, t.effect) for t in n.taints
    ):
        return False
    others = [(m, q) for m in ssn.node_list for q in m.tasks.values()]
    if not for_preempt:
        for ip, proto, port in p.host_ports:
            for q in n.tasks.values():
                if any(
                    ((pr, po) == (proto, port) and "0.0.0.0" in (ip, qi)) or (pr, po, qi) == (proto, port, ip)
                    for qi, pr, po in q.host_ports
                ):
                    return False
    aff = _required_terms(p, "podAffinity")
    if aff:
        if any(t["topologyKey"] not in n.labels for t in aff):
            return False
        matching = [
            (m, q) for m, q in others if all(_selects(t, q.namespace, p.namespace, q.labels) for t in aff)
        ]
        same_domain = all(
            any(m.labels.get(t["topologyKey"]) == n.labels[t["topologyKey"]] for m, _ in matching)
            for t in aff
        )
        first = not any(t["topologyKey"] in m.labels for m, _ in matching for t in aff) and all(
            _selects(t, p.namespace, p.namespace, p.labels) for t in aff
        )
        if not (same_domain or first):
            return False
    if for_preempt:
        return True
    for t in _required_terms(p, "podAntiAffinity"):
        key = t["topologyKey"]
        if key in n.labels and any(
            m.labels.get(key) == n.labels[key] and _selects(t, q.namespace, p.namespace, q.labels)
            for m, q in others
        ):
            return False
    for m, q in others:
        for t in _required_terms(q, "podAntiAffinity"):
            key = t["topologyKey"]
            if (
                key in m.labels
                and m.labels[key] == n.labels.get(key)
                and _selects(t, p.namespace, q.namespace, p.labels)
            ):
                return False
    return True


@pytest.mark.parametrize("seed", range(8))
def test_random_clusters_agree_with_per_node_and_reference(seed: int) -> None:
    """For every pending pod and node: batch mask == per-node predicate == the reference, also for preempt."""
    ssn = session(*random_objects(seed))
    checked = 0
    for job in ssn.jobs.values():
        for p in job.tasks.values():
            if p.status is not TaskStatus.PENDING:
                continue
            for for_preempt in (False, True):
                mask = ssn.predicate_mask(p, for_preempt=for_preempt)
                per_node = [
                    (s := ssn.predicate(p, n)) is None or (for_preempt and s.resolvable)
                    for n in ssn.node_list
                ]
                expected = [reference(ssn, p, n, for_preempt=for_preempt) for n in ssn.node_list]
                assert mask.tolist() == per_node == expected, (p.name, for_preempt)
                checked += int(mask.sum())
    assert checked > 0


def test_random_cluster_stays_consistent_through_statements() -> None:
    """Allocating pending pods one by one through a statement keeps mask, per-node and reference equal."""
    ssn = session(*random_objects(99))
    stmt = Statement(ssn)
    pending_tasks = sorted(
        (t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING),
        key=lambda t: t.name,
    )
    placed = 0
    for p in pending_tasks:
        mask = ssn.predicate_mask(p)
        assert mask.tolist() == [reference(ssn, p, n, for_preempt=False) for n in ssn.node_list], p.name
        rows = np.flatnonzero(mask)
        if len(rows):
            stmt.allocate(p, ssn.node_list[int(rows[0])].name)
            placed += 1
    assert placed >= 10
    stmt.discard()
    fresh = session(*random_objects(99))
    for p in pending_tasks:
        assert (
            ssn.predicate_mask(p).tolist() == fresh.predicate_mask(task(fresh, p.name, p.namespace)).tolist()
        )
