"""predicates: pod topology spread (DoNotSchedule) as Kubernetes' PodTopologySpread filter, hand-checked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import TaskInfo
from py_volcano.framework import PredicateStatus, Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.predicates.topology_spread import SPREAD_MISSING_LABEL, SPREAD_NOT_MATCHED
from tests.builders import cluster, node, pod, pod_group

REGISTRY = Registry(plugins={"predicates": PLUGINS["predicates"]}, actions=ACTIONS)
APP = {"app": "web"}


def session(*objects: dict[str, Any], enabled: bool = True) -> Session:
    arguments = "" if enabled else "\n    arguments:\n      predicate.PodTopologySpreadEnable: false"
    conf = parse_conf(f'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates{arguments}', REGISTRY)
    return open_session(cluster(*objects), conf, REGISTRY)


def spread(key: str = "zone", *, skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    """One constraint selecting app=web unless `labelSelector` is given."""
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": {"matchLabels": APP},
            **extra}


def incoming(*constraints: Mapping[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return pod(name="new", labels=APP if labels is None else labels,
               spec={"topologySpreadConstraints": list(constraints), **spec})


def zones(*pods_per_node: int, zone_of: tuple[str, ...] = ("a", "a", "b", "c")) -> list[dict[str, Any]]:
    """Nodes n0..n3 in zones a, a, b, c (by default), each running `pods_per_node[i]` app=web pods."""
    objects: list[dict[str, Any]] = []
    for i, zone in enumerate(zone_of):
        objects.append(node(name=f"n{i}", labels={"zone": zone, "kubernetes.io/hostname": f"n{i}"}))
        objects += [pod(name=f"w{i}-{k}", labels=APP, node_name=f"n{i}") for k in range(pods_per_node[i])]
    return objects


def task(ssn: Session, name: str = "new") -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def allowed(ssn: Session, *, for_preempt: bool = False) -> list[str]:
    mask = ssn.predicate_mask(task(ssn), for_preempt=for_preempt)
    return [n.name for n, ok in zip(ssn.node_list, mask, strict=True) if ok]


def reasons(ssn: Session) -> dict[str, PredicateStatus | None]:
    return {n.name: ssn.predicate(task(ssn), n) for n in ssn.node_list}


@pytest.mark.parametrize(
    ("counts", "skew", "expected"),
    [
        pytest.param((1, 1, 1, 0), 1, ["n3"], id="zone-a-2-b-1-c-0-only-c"),
        pytest.param((1, 0, 1, 0), 1, ["n3"], id="one-each-but-c-only-c"),
        pytest.param((1, 0, 1, 1), 1, ["n0", "n1", "n2", "n3"], id="a-1-b-1-c-1-every-node"),
        pytest.param((1, 1, 1, 0), 2, ["n2", "n3"], id="skew-2-lets-b-in"),
        pytest.param((0, 0, 0, 0), 1, ["n0", "n1", "n2", "n3"], id="empty-cluster-anywhere"),
    ],
)
def test_skew_is_domain_count_plus_self_minus_the_smallest_domain(
    counts: tuple[int, ...], skew: int, expected: list[str]
) -> None:
    """zone a = n0 + n1. A node passes when its zone's matching pods + 1 (the pod matches itself) - the
    fewest pods of any zone <= maxSkew."""
    assert allowed(session(*zones(*counts), incoming(spread(skew=skew)))) == expected


def test_reasons_and_preempt_a_skew_is_resolvable_a_missing_key_is_not() -> None:
    """A node without the topology key fails unresolvably; a skew failure is resolvable (evicting pods can
    fix it), so preempt keeps those nodes."""
    objects = [*zones(1, 1, 1, 0), node(name="n4", labels={"other": "x"})]
    ssn = session(*objects, incoming(spread()))
    assert reasons(ssn) == {
        "n0": PredicateStatus(SPREAD_NOT_MATCHED, resolvable=True),
        "n1": PredicateStatus(SPREAD_NOT_MATCHED, resolvable=True),
        "n2": PredicateStatus(SPREAD_NOT_MATCHED, resolvable=True),
        "n3": None,
        "n4": PredicateStatus(SPREAD_MISSING_LABEL, resolvable=False),
    }
    assert allowed(ssn, for_preempt=True) == ["n0", "n1", "n2", "n3"]


def test_min_domains_treats_the_global_minimum_as_zero_while_domains_are_fewer() -> None:
    """Zones a and b hold 1 pod each; with minDomains 3 the minimum counts as 0, so 1 + 1 - 0 > 1 fails
    everywhere; with minDomains 2 it is 1 and every node passes."""
    objects = zones(1, 0, 1, zone_of=("a", "a", "b"))
    assert allowed(session(*objects, incoming(spread(minDomains=3)))) == []
    assert allowed(session(*objects, incoming(spread(minDomains=2)))) == ["n0", "n1", "n2"]


def test_only_matching_pods_of_the_same_namespace_count_and_terminating_ones_do_not() -> None:
    """Pods of another namespace, with other labels, or being deleted are not counted."""
    objects = zones(0, 0, 0, 0)
    objects.append(pod(name="other-ns", namespace="team", labels=APP, node_name="n0"))
    objects.append(pod(name="other-app", labels={"app": "db"}, node_name="n0"))
    leaving = pod(name="leaving", labels=APP, node_name="n2")
    leaving["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    objects.append(leaving)
    assert allowed(session(*objects, incoming(spread()))) == ["n0", "n1", "n2", "n3"]


def test_a_pod_that_does_not_match_its_own_selector_adds_nothing() -> None:
    """zone a 1, b 0, c 0: a pod without app=web may go to a (1 + 0 - 0 = 1)."""
    objects = zones(1, 0, 0, 0)
    assert allowed(session(*objects, incoming(spread(), labels={"app": "other"}))) == ["n0", "n1", "n2", "n3"]
    assert allowed(session(*objects, incoming(spread()))) == ["n2", "n3"]


def test_match_label_keys_narrow_the_selector_to_the_pods_value() -> None:
    """matchLabelKeys [version]: only pods with the incoming pod's version count."""
    objects = [node(name=f"n{i}", labels={"zone": z}) for i, z in enumerate("ab")]
    objects.append(pod(name="old", labels={**APP, "version": "1"}, node_name="n0"))
    constraint = spread(matchLabelKeys=["version"])
    assert allowed(session(*objects, incoming(constraint, labels={**APP, "version": "2"}))) == ["n0", "n1"]
    assert allowed(session(*objects, incoming(constraint, labels={**APP, "version": "1"}))) == ["n1"]


def test_node_affinity_policy_honor_by_default_ignore_counts_every_node() -> None:
    """The pod requires zone a or b; zones a and b hold 1 pod each, zone c none. Under Honor (the default)
    zone c is no domain, the minimum is 1 and a and b pass; under Ignore c counts, the minimum is 0 and
    neither passes (c fails node affinity itself)."""
    objects = zones(1, 1, 0, zone_of=("a", "b", "c"))
    required: dict[str, Any] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}
    assert allowed(session(*objects, incoming(spread(), affinity=required))) == ["n0", "n1"]
    assert allowed(session(*objects, incoming(spread(nodeAffinityPolicy="Ignore"), affinity=required))) == []


def test_node_taints_policy_honor_drops_tainted_domains() -> None:
    """Zone c's only node is tainted and holds the fewest pods (0): by default (Ignore) it is a domain and
    the minimum is 0, so only empty zones pass; under Honor it is not, the minimum is 1 (a and b), and every
    untainted node passes."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    objects = [node(name="n0", labels={"zone": "a"}), node(name="n1", labels={"zone": "b"}),
               node(name="n2", labels={"zone": "c"}, taints=taint),
               pod(name="wa", labels=APP, node_name="n0"), pod(name="wb", labels=APP, node_name="n1")]
    assert allowed(session(*objects, incoming(spread()))) == []
    assert allowed(session(*objects, incoming(spread(nodeTaintsPolicy="Honor")))) == ["n0", "n1"]


def test_schedule_anyway_constraints_and_the_switch_do_not_filter() -> None:
    """ScheduleAnyway is a score, not a filter; predicate.PodTopologySpreadEnable false skips the filter."""
    objects = zones(1, 1, 1, 0)
    assert allowed(session(*objects, incoming(spread(when="ScheduleAnyway")))) == ["n0", "n1", "n2", "n3"]
    assert allowed(session(*objects, incoming(spread()), enabled=False)) == ["n0", "n1", "n2", "n3"]


def test_placements_of_the_cycle_count_and_a_discard_gives_them_back() -> None:
    """A gang of three spreads over zones as it is placed: each allocation changes the next verdict."""
    objects = [*zones(0, 0, 0, 0), pod_group(name="g", min_member=3)]
    objects += [pod(name=f"g-{i}", group="g", labels=APP, spec={"topologySpreadConstraints": [spread()]})
                for i in range(3)]
    ssn = session(*objects)
    first, second = task(ssn, "g-0"), task(ssn, "g-1")
    stmt = Statement(ssn)
    stmt.allocate(first, "n0")
    mask = ssn.predicate_mask(second)
    assert [n.name for n, ok in zip(ssn.node_list, mask, strict=True) if ok] == ["n2", "n3"]
    stmt.discard()
    mask = ssn.predicate_mask(second)
    assert [n.name for n, ok in zip(ssn.node_list, mask, strict=True) if ok] == ["n0", "n1", "n2", "n3"]


def _reference(ssn: Session, incoming_task: TaskInfo) -> dict[str, str]:
    """Kubernetes' PreFilter and Filter written out node by node, for comparison: node -> pass/resolvable/
    unresolvable."""
    from py_volcano.api import match_node_selector_term

    constraints = [c for c in incoming_task.topology_spread if c.hard]
    required = (incoming_task.affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")

    def matches_affinity(n: Any) -> bool:
        if any(n.labels.get(k) != v for k, v in incoming_task.node_selector.items()):
            return False
        terms = (required or {}).get("nodeSelectorTerms") or ()
        return required is None or any(match_node_selector_term(t, n.labels, {"metadata.name": n.name}) for t in terms)

    def tolerated(n: Any) -> bool:
        return all(any(t.tolerates(x.key, x.value, x.effect) for t in incoming_task.tolerations)
                   for x in n.taints if x.effect in ("NoSchedule", "NoExecute"))

    counts: list[dict[str, int]] = [{} for _ in constraints]
    for n in ssn.node_list:
        if not all(c.topology_key in n.labels for c in constraints):
            continue
        for i, c in enumerate(constraints):
            if (c.honor_node_affinity and not matches_affinity(n)) or (c.honor_node_taints and not tolerated(n)):
                continue
            pods = sum(1 for t in n.tasks.values() if t.namespace == incoming_task.namespace and c.counts_pods
                       and c.matches(t.labels) and t.status.value != "Releasing")
            value = n.labels[c.topology_key]
            counts[i][value] = counts[i].get(value, 0) + pods
    verdicts = {}
    for n in ssn.node_list:
        verdict = "pass"
        for i, c in enumerate(constraints):
            if c.topology_key not in n.labels:
                verdict = "unresolvable"
                break
            minimum = min(counts[i].values()) if len(counts[i]) >= c.min_domains and counts[i] else 0
            own = 1 if c.matches(incoming_task.labels) else 0
            if counts[i].get(n.labels[c.topology_key], 0) + own - minimum > c.max_skew:
                verdict = "resolvable"
                break
        verdicts[n.name] = verdict
    return verdicts


@pytest.mark.parametrize("seed", range(25))
def test_the_vectorised_filter_matches_a_node_by_node_reference(seed: int) -> None:
    """Random clusters (zones, racks, missing labels, taints, other namespaces and apps) and random
    constraints (skew, minDomains, policies, node selectors): the same verdict on every node."""
    import random

    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    for i in range(rng.randint(3, 9)):
        labels = {key: rng.choice(values) for key, values in (("zone", "abc"), ("rack", "xyz")) if rng.random() < 0.85}
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.3 else []
        objects.append(node(name=f"n{i}", labels=labels, taints=taints))
        for k in range(rng.randint(0, 3)):
            objects.append(pod(name=f"p{i}-{k}", namespace=rng.choice(("default", "other")),
                               labels={"app": rng.choice(("web", "db"))}, node_name=f"n{i}"))
    constraints = [
        spread(key, skew=rng.randint(1, 2), minDomains=rng.choice((None, 1, 2, 4)) or 1,
               nodeAffinityPolicy=rng.choice(("Honor", "Ignore")), nodeTaintsPolicy=rng.choice(("Honor", "Ignore")))
        for key in rng.sample(("zone", "rack"), rng.randint(1, 2))
    ]
    spec: dict[str, Any] = {}
    if rng.random() < 0.5:
        spec["nodeSelector"] = {"zone": rng.choice("abc")}
    if rng.random() < 0.5:
        spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    ssn = session(*objects, incoming(*constraints, labels={"app": rng.choice(("web", "db"))}, **spec))
    status = ssn.plugins["predicates"].state.spread_check(task(ssn))  # type: ignore[attr-defined]
    names = ("pass", "resolvable", "unresolvable")
    assert {n.name: names[int(status.status[n.index])] for n in ssn.node_list} == _reference(ssn, task(ssn))
