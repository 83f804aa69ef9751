"""nodeorder: pod topology spread (ScheduleAnyway) as Kubernetes' PodTopologySpread score, hand-checked."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import TaskInfo
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from tests.builders import cluster, node, pod, pod_group

REGISTRY = Registry(plugins={"nodeorder": PLUGINS["nodeorder"]}, actions=ACTIONS)
APP = {"app": "foo"}
OTHER_SCORES_OFF = {
    "leastrequested.weight": 0,
    "balancedresource.weight": 0,
    "tainttoleration.weight": 0,
    "nodeaffinity.weight": 0,
    "podaffinity.weight": 0,
}


def session(*objects: dict[str, Any], weight: int = 1) -> Session:
    arguments = {**OTHER_SCORES_OFF, "podtopologyspread.weight": weight}
    lines = "".join(f"\n      {k}: {v}" for k, v in arguments.items())
    conf = parse_conf(f'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments:{lines}', REGISTRY)
    return open_session(cluster(*objects), conf, REGISTRY)


def soft(key: str = "zone", skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": APP}, **extra}


def task(ssn: Session, name: str = "new") -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str = "new", nodes: tuple[str, ...] | None = None) -> dict[str, float]:
    names = [n.name for n in ssn.node_list]
    rows = np.array([names.index(n) for n in nodes] if nodes else range(len(names)), dtype=np.intp)
    return dict(zip([names[r] for r in rows], ssn.prioritize(task(ssn, name), rows).tolist(), strict=True))


def three_zones(*constraints: dict[str, Any], labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Volcano's nodeorder test: zone1 runs 2 app=foo pods, zone2 1, zone3 none; one node per zone."""
    objects: list[dict[str, Any]] = [
        node(name=f"n{i}", labels={"zone": f"zone{i}", "kubernetes.io/hostname": f"n{i}"}) for i in (1, 2, 3)
    ]
    objects += [pod(name="p1", labels=APP, node_name="n1"), pod(name="p2", labels=APP, node_name="n1"),
                pod(name="p3", labels=APP, node_name="n2")]
    objects.append(pod(name="new", labels=APP if labels is None else labels,
                       spec={"topologySpreadConstraints": list(constraints)}))
    return objects


@pytest.mark.parametrize("key", ["zone", "kubernetes.io/hostname"])
def test_fewer_matching_pods_score_higher(key: str) -> None:
    """3 domains: weight ln(3 + 2); raw n1 2 x 1.609 = 3.2 -> 3, n2 1.6 -> 2, n3 0; normalised
    100 x (max + min - raw) // max: 0, 33, 100 (the same per node for the hostname key)."""
    assert scores(session(*three_zones(soft(key)))) == {"n1": 0, "n2": 33, "n3": 100}


def test_the_weight_multiplies_and_max_skew_waters_the_differences_down() -> None:
    """podtopologyspread.weight 10 scales the score; maxSkew 5 adds 4 to every raw score: 7, 6, 4 ->
    100 x (7 + 4 - raw) // 7 = 57, 71, 100."""
    assert scores(session(*three_zones(soft()), weight=10)) == {"n1": 0, "n2": 330, "n3": 1000}
    assert scores(session(*three_zones(soft(skew=5)))) == {"n1": 57, "n2": 71, "n3": 100}


def test_a_candidate_without_the_key_scores_zero_and_domains_come_from_candidates() -> None:
    """n4 lacks the zone key: ignored, 0. Scoring only n1 and n3: 2 domains, weight ln 4: raw 2.77 -> 3, 0."""
    objects = [*three_zones(soft()), node(name="n4", labels={"other": "x"})]
    ssn = session(*objects)
    assert scores(ssn) == {"n1": 0, "n2": 33, "n3": 100, "n4": 0}
    assert scores(ssn, nodes=("n1", "n3")) == {"n1": 0, "n3": 100}


def test_no_soft_constraint_no_score() -> None:
    """A DoNotSchedule constraint is the filter's business; without a soft one every node scores 0."""
    hard = {**soft(), "whenUnsatisfiable": "DoNotSchedule"}
    assert scores(session(*three_zones(hard))) == {"n1": 0, "n2": 0, "n3": 0}


def test_equal_domains_score_100_everywhere() -> None:
    """No matching pod anywhere: every raw score is 0 and Kubernetes gives every node 100."""
    nodes_only = three_zones(soft())[:3]
    incoming = pod(name="new", labels=APP, spec={"topologySpreadConstraints": [soft()]})
    assert scores(session(*nodes_only, incoming)) == {"n1": 100, "n2": 100, "n3": 100}


def test_placements_of_the_cycle_move_the_score() -> None:
    """A gang member allocated to n3 in this cycle counts for the next member; a discard undoes it."""
    objects = [*three_zones(soft())[:-1], pod_group(name="g", min_member=2)]
    objects += [pod(name=f"g-{i}", group="g", labels=APP, spec={"topologySpreadConstraints": [soft()]})
                for i in range(2)]
    ssn = session(*objects)
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "g-0"), "n3")
    # zone1 2, zone2 1, zone3 1 -> raw 3, 2, 2; 100 x (3 + 2 - raw) // 3 -> 66, 100, 100
    assert scores(ssn, "g-1") == {"n1": 66, "n2": 100, "n3": 100}
    stmt.discard()
    assert scores(ssn, "g-1") == {"n1": 0, "n2": 33, "n3": 100}


def _reference(ssn: Session, incoming: TaskInfo, candidates: list[str]) -> dict[str, int]:
    """Kubernetes' PreScore, Score and NormalizeScore written out node by node (weight 1)."""
    from py_volcano.api import match_node_selector_term

    constraints = [c for c in incoming.topology_spread if not c.hard]
    nodes = {n.name: n for n in ssn.node_list}
    required = (incoming.affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")

    def matches_affinity(n: Any) -> bool:
        if any(n.labels.get(k) != v for k, v in incoming.node_selector.items()):
            return False
        terms = (required or {}).get("nodeSelectorTerms") or ()
        return required is None or any(match_node_selector_term(t, n.labels, {"metadata.name": n.name}) for t in terms)

    def pods_on(n: Any, c: Any) -> int:
        return sum(1 for t in n.tasks.values() if t.namespace == incoming.namespace and c.counts_pods
                   and c.matches(t.labels))

    ignored = {name for name in candidates if not all(c.topology_key in nodes[name].labels for c in constraints)}
    kept = [name for name in candidates if name not in ignored]
    counts: list[dict[str, int]] = []
    weights = []
    for c in constraints:
        domains = {nodes[name].labels[c.topology_key] for name in kept}
        size = len(kept) if c.topology_key == "kubernetes.io/hostname" else len(domains)
        weights.append(math.log(size + 2))
        per_domain = dict.fromkeys(domains, 0)
        for n in ssn.node_list:
            if not all(k.topology_key in n.labels for k in constraints):
                continue
            if c.honor_node_affinity and not matches_affinity(n):
                continue
            value = n.labels[c.topology_key]
            if value in per_domain:
                per_domain[value] += pods_on(n, c)
        counts.append(per_domain)
    raw = {}
    for name in kept:
        n = nodes[name]
        total = 0.0
        for i, c in enumerate(constraints):
            count = pods_on(n, c) if c.topology_key == "kubernetes.io/hostname" else counts[i][n.labels[c.topology_key]]
            total += count * weights[i] + (c.max_skew - 1)
        raw[name] = math.floor(total + 0.5)
    if not raw:
        return dict.fromkeys(candidates, 0)
    low, high = min(raw.values()), max(raw.values())
    return {name: 0 if name in ignored else 100 if high == 0 else 100 * (high + low - raw[name]) // high
            for name in candidates}


@pytest.mark.parametrize("seed", range(25))
def test_the_vectorised_score_matches_a_node_by_node_reference(seed: int) -> None:
    """Random clusters and constraints over zone and hostname keys, with node selectors and subsets of
    candidates: the same score on every candidate."""
    import random

    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    for i in range(rng.randint(3, 9)):
        labels = {"kubernetes.io/hostname": f"n{i}"} if rng.random() < 0.9 else {}
        if rng.random() < 0.85:
            labels["zone"] = rng.choice("abc")
        objects.append(node(name=f"n{i}", labels=labels))
        for k in range(rng.randint(0, 3)):
            objects.append(pod(name=f"p{i}-{k}", labels={"app": rng.choice(("foo", "bar"))}, node_name=f"n{i}"))
    constraints = [soft(key, skew=rng.randint(1, 3), nodeAffinityPolicy=rng.choice(("Honor", "Ignore")))
                   for key in rng.sample(("zone", "kubernetes.io/hostname"), rng.randint(1, 2))]
    spec: dict[str, Any] = {"nodeSelector": {"zone": rng.choice("abc")}} if rng.random() < 0.4 else {}
    objects.append(pod(name="new", labels=APP, spec={"topologySpreadConstraints": constraints, **spec}))
    ssn = session(*objects)
    names = [n.name for n in ssn.node_list]
    candidates = tuple(sorted(rng.sample(names, rng.randint(1, len(names))), key=names.index))
    assert scores(ssn, nodes=candidates) == _reference(ssn, task(ssn), list(candidates))
