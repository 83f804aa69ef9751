"""nodeorder: Kubernetes' node scores with Volcano's weights, hand-checked per score, followed through
statements, and the vectorised sum compared with a straightforward per-node computation on random clusters."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import NodeInfo, TaskInfo, TaskStatus
from py_volcano.errors import ConfigError
from py_volcano.framework import Registry, Session, Statement, open_session, parse_conf
from py_volcano.plugins import PLUGINS
from py_volcano.plugins.nodeorder.plugin import NodeOrderArgs, normalize
from py_volcano.plugins.nodeorder.resources import (
    Allocatable,
    balanced_allocation,
    least_requested,
    most_requested,
)
from tests.builders import cluster, node, pod, pod_group
from tests.unit.arguments import plugin_args

GI = 1024**3
REGISTRY = Registry(plugins={"nodeorder": PLUGINS["nodeorder"]}, actions=ACTIONS)


def session(*objects: dict[str, Any], arguments: Mapping[str, Any] | None = None) -> Session:
    args = "".join(f"\n      {k}: {v}" for k, v in (arguments or {}).items())
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder' + (
        f"\n    arguments:{args}" if args else ""
    )
    return open_session(
        cluster(*objects), parse_conf(text, REGISTRY), REGISTRY
    )


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str) -> dict[str, float]:
    rows = np.arange(len(ssn.node_list))
    return dict(
        zip([n.name for n in ssn.node_list], ssn.prioritize(task(ssn, name), rows).tolist(), strict=True)
    )


ONLY = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
    "podaffinity.weight": 0,
}


def only(**weights: int) -> dict[str, int]:
    return {**ONLY, **{f"{k}.weight": v for k, v in weights.items()}}


def columns(allocatable: tuple[int, ...], requested: tuple[int, ...]) -> tuple[Allocatable, Any]:
    """One node's allocatable and requested values as resources x nodes matrices."""
    return Allocatable(np.array([[float(a)] for a in allocatable])), np.array([[float(r)] for r in requested])


def ints(*values: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array(values, dtype=np.int64)


# Resource scores, hand-checked --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("allocatable", "requested", "least", "most"),
    [
        pytest.param((4000, 8 * GI), (3000, 3 * GI), 43, 56, id="25-and-62"),  # (25+62)//2, (75+37)//2
        pytest.param((4000, 8 * GI), (4000, 8 * GI), 0, 100, id="full"),
        pytest.param((4000, 8 * GI), (5000, GI), 43, 56, id="over-capacity"),  # cpu 0/100, memory 87/12
        pytest.param((0, 8 * GI), (1000, 2 * GI), 75, 25, id="no-cpu-column-drops"),
        pytest.param((0, 0), (1000, 2 * GI), 0, 0, id="nothing-allocatable"),
    ],
)
def test_least_and_most_requested(
    allocatable: tuple[int, int], requested: tuple[int, int], least: int, most: int
) -> None:
    """Kubernetes' LeastAllocated/MostAllocated in integers; columns with allocatable 0 leave the mean."""
    assert least_requested(*columns(allocatable, requested)).tolist() == [least]
    assert most_requested(*columns(allocatable, requested)).tolist() == [most]


@pytest.mark.parametrize(
    ("allocatable", "allocated", "requested", "expected"),
    [
        # with the pod |0.75-0.375|/2 -> 81, without 100: 50 + (50 + 81 - 100) // 2
        pytest.param((4000, 8 * GI), (0, 0), (3000, 3 * GI), 65, id="empty-node-unbalanced-by-the-pod"),
        # with 0.5/0.5 -> 100, without 0.25/0.125 -> 93: 50 + 57 // 2
        pytest.param((4000, 8 * GI), (1000, GI), (2000, 4 * GI), 78, id="pod-improves-balance"),
        pytest.param((4000, 8 * GI), (4000, 0), (8000, 0), 75, id="fraction-capped-at-1"),  # 50 both
        pytest.param((4000, 8 * GI, 8000), (0, 0, 0), (2000, 2 * GI, 8000), 59, id="three-resources"),  # 68
        pytest.param((0, 8 * GI), (0, 0), (1000, 2 * GI), 75, id="one-resource"),
    ],
)
def test_balanced_allocation(
    allocatable: tuple[int, ...], allocated: tuple[int, ...], requested: tuple[int, ...], expected: int
) -> None:
    """Kubernetes 1.36: 50 + (50 + balance with the pod - balance without) // 2, a balance being
    100 * (1 - std of the requested fractions), truncated; two resources use |a-b|/2."""
    capacity, with_pod = columns(allocatable, requested)
    without_pod = columns(allocatable, allocated)[1]
    assert balanced_allocation(capacity, without_pod, with_pod).tolist() == [expected]


def test_default_scores_are_volcanos_on_a_filling_node() -> None:
    """vc-scheduler's log (Volcano ed72c7c81, capacity-hierarchy) scores a 1 CPU/1Gi pod 463 on an
    empty 8 CPU/16Gi node and 454 on one running such a pod: least 90/81, balanced 73/73, taint 300."""
    ssn = session(
        node(name="empty", cpu="8", memory="16Gi"),
        node(name="one", cpu="8", memory="16Gi"),
        pod(name="run", node_name="one", cpu="1", memory="1Gi"),
        pod(name="p", cpu="1", memory="1Gi"),
    )
    assert scores(ssn, "p") == {"empty": 463.0, "one": 454.0}


def test_best_effort_pod_has_no_balanced_score() -> None:
    """Kubernetes skips balanced allocation for a pod requesting none of its resources."""
    ssn = session(
        node(name="n1", cpu="4", memory="8Gi"),
        pod(name="empty", cpu="", memory=""),
        arguments=only(balancedresource=1),
    )
    assert scores(ssn, "empty") == {"n1": 0.0}


def test_normalize_like_kubernetes() -> None:
    """DefaultNormalizeScore: 100*s//max, reversed for taints; all-zero stays 0 (or 100 reversed)."""
    assert normalize(ints(0, 3, 10), reverse=False).tolist() == [0, 30, 100]
    assert normalize(ints(0, 1, 3), reverse=True).tolist() == [100, 67, 0]
    assert normalize(ints(0, 0), reverse=True).tolist() == [100, 100]
    assert normalize(ints(0, 0), reverse=False).tolist() == [0, 0]


def test_session_scores_use_pods_on_the_node_and_non_zero_requests() -> None:
    """Least requested counts pods on the node; a pod requesting nothing counts 100m CPU and 200Mi memory."""
    ssn = session(
        node(name="busy", cpu="4", memory="8Gi"),
        node(name="idle", cpu="4", memory="8Gi"),
        pod(name="run", node_name="busy", cpu="2", memory="2Gi"),
        pod(name="p", cpu="1", memory="1Gi"),
        pod(name="empty", cpu="", memory=""),
        arguments=only(leastrequested=1),
    )
    # busy: cpu (4000-3000)*100//4000=25, memory (8-3)/8 -> 62: 43; idle: 75, 87 -> 81
    assert scores(ssn, "p") == {"busy": 43.0, "idle": 81.0}
    # empty: busy cpu 2100/4000 -> 47, memory (8Gi-2Gi-200Mi) -> 72: 59; idle: 97, 97: 97
    assert scores(ssn, "empty") == {"busy": 59.0, "idle": 97.0}


def test_weights_multiply_each_score() -> None:
    """Defaults are Volcano's: least 1, balanced 1, taint 3; a weight of 2 doubles that score."""
    objects = [node(name="n1", cpu="4", memory="8Gi"), pod(name="p", cpu="1", memory="1Gi")]
    # least: cpu 75, memory 87 -> 81; balanced: 0.25 vs 0.125 -> 93, empty 100 -> 71; taint: no taints -> 100
    assert scores(session(*objects), "p") == {"n1": 81 + 71 + 3 * 100}
    assert scores(session(*objects, arguments=only(leastrequested=2)), "p") == {"n1": 162}
    assert scores(session(*objects, arguments=only(mostrequested=1)), "p") == {"n1": 18}  # (25+12)//2


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, NodeOrderArgs(1, 0, 1, 2, 3, 2), id="defaults"),
        pytest.param(
            {"nodeaffinity.weight": 5, "mostrequested.weight": 1}, NodeOrderArgs(1, 1, 1, 5, 3, 2), id="some-set"
        ),
        pytest.param(
            {
                "leastrequested.weight": 0,
                "mostrequested.weight": "2",
                "balancedresource.weight": 3,
                "nodeaffinity.weight": 4,
                "tainttoleration.weight": 5,
                "podaffinity.weight": -6,
            },
            NodeOrderArgs(0, 2, 3, 4, 5, -6),
            id="all-set",
        ),
    ],
)
def test_weights_from_arguments(arguments: dict[str, object], expected: NodeOrderArgs) -> None:
    """Each `<score>.weight` argument is read once at load; unset ones keep Volcano's defaults."""
    assert plugin_args("nodeorder", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"leastrequested.weight": "abc"},
            "argument leastrequested.weight: 'abc' is not an integer",
            id="text",
        ),
        pytest.param({"nodeaffinity.weight": 2.5}, "argument nodeaffinity.weight: 2.5 is not an integer", id="float"),
        pytest.param({"podaffinity.weight": None}, "argument podaffinity.weight: None is not an integer", id="empty"),
        pytest.param(
            {"tainttoleration.weight": [1]},
            "argument tainttoleration.weight: [1] is not an integer",
            id="list",
        ),
    ],
)
def test_a_bad_weight_is_a_config_error_naming_plugin_key_and_value(arguments: dict[str, object], message: str) -> None:
    """The configuration does not load; the error names the plugin, the key and the value."""
    with pytest.raises(ConfigError) as info:
        plugin_args("nodeorder", arguments)
    assert str(info.value) == f"scheduler conf: plugin nodeorder: {message}"


def test_balanced_counts_gpu_only_when_requested() -> None:
    """nvidia.com/gpu joins the balance only for a task that asks for it and on nodes that have it."""
    gpu = {
        "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"}}}
        ]
    }
    ssn = session(
        node(name="g", cpu="4", memory="8Gi", scalars={"nvidia.com/gpu": "8"}),
        node(name="c", cpu="4", memory="8Gi"),
        pod(name="p", spec=gpu),
        pod(name="q"),
        arguments=only(balancedresource=1),
    )
    # g: fractions 0.25, 0.125, 0.5 -> std 0.1559 -> 84 -> 67; c: 0.25, 0.125 -> 93 -> 71 (empty: 100)
    assert scores(ssn, "p") == {"g": 67.0, "c": 71.0}
    assert scores(ssn, "q") == {"g": 71.0, "c": 71.0}


# Affinity and taints ------------------------------------------------------------------------------


def test_preferred_node_affinity_normalised_over_candidates() -> None:
    """Matching preferred terms add their weights; the best candidate gets 100 (times the weight 2)."""
    prefer = {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 20,
                        "preference": {
                            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                        },
                    },
                    {
                        "weight": 60,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                        },
                    },
                    {
                        "weight": 0,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                    },
                ]
            }
        }
    }
    ssn = session(
        node(name="both", labels={"disk": "ssd", "zone": "a"}),
        node(name="ssd", labels={"disk": "ssd"}),
        node(name="none"),
        pod(name="p", spec=prefer),
        arguments=only(nodeaffinity=2),
    )
    assert scores(ssn, "p") == {"both": 200.0, "ssd": 2 * 25.0, "none": 0.0}
    rows = np.array([1, 2])
    assert ssn.prioritize(task(ssn, "p"), rows).tolist() == [200.0, 0.0]


def test_taint_toleration_prefers_fewer_untolerated_prefer_no_schedule_taints() -> None:
    """Only PreferNoSchedule taints count; tolerations with that effect or none remove them."""
    soft = [
        {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
        {"key": "b", "value": "1", "effect": "PreferNoSchedule"},
    ]
    ssn = session(
        node(name="two", taints=soft),
        node(name="one", taints=soft[:1]),
        node(name="hard", taints=[{"key": "c", "value": "1", "effect": "NoSchedule"}]),
        pod(name="p"),
        pod(name="q", spec={"tolerations": [{"key": "a", "operator": "Exists"}]}),
        arguments=only(tainttoleration=1),
    )
    assert scores(ssn, "p") == {"two": 0.0, "one": 50.0, "hard": 100.0}
    assert scores(ssn, "q") == {"two": 0.0, "one": 100.0, "hard": 100.0}


def _terms(kind: str, *entries: tuple[int, dict[str, str], str]) -> dict[str, Any]:
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": {"labelSelector": {"matchLabels": sel}, "topologyKey": key}}
                for w, sel, key in entries
            ]
        }
    }


def test_inter_pod_affinity_scores_incoming_and_existing_terms() -> None:
    """Incoming preferred (anti-)affinity, existing pods' required affinity (weight 1) and preferred terms."""
    nodes = [
        node(name=n, labels={"kubernetes.io/hostname": n, "zone": z})
        for n, z in (("n1", "a"), ("n2", "a"), ("n3", "b"), ("n4", "c"))
    ]
    incoming = {
        "affinity": {
            **_terms("podAffinity", (10, {"app": "db"}, "zone")),
            **_terms("podAntiAffinity", (5, {"app": "web"}, "kubernetes.io/hostname")),
        }
    }
    attract = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }
    repel = {"affinity": _terms("podAntiAffinity", (4, {"app": "web"}, "zone"))}
    ssn = session(
        *nodes,
        pod(name="db", node_name="n1", labels={"app": "db"}),
        pod(name="web", node_name="n2", labels={"app": "web"}),
        pod(name="sidecar", node_name="n3", labels={"app": "x"}, spec=attract),
        pod(name="guard", node_name="n4", labels={"app": "x"}, spec=repel),
        pod(name="p", labels={"app": "web"}, spec=incoming),
        arguments=only(podaffinity=1),
    )
    # raw: n1 +10 (zone a has db), n2 +10 -5 (web on n2), n3 +1 (sidecar's hard affinity), n4 -4 (guard)
    # min-max over (10, 5, 1, -4): 100, 64, 35, 0
    assert scores(ssn, "p") == {"n1": 100.0, "n2": 64.0, "n3": 35.0, "n4": 0.0}


def test_inter_pod_affinity_without_any_terms_scores_zero() -> None:
    """No term anywhere: every candidate scores 0."""
    ssn = session(
        *[node(name=n, labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2")],
        pod(name="a", node_name="n1"),
        pod(name="p"),
        arguments=only(podaffinity=1),
    )
    assert scores(ssn, "p") == {"n1": 0.0, "n2": 0.0}


# Statements ---------------------------------------------------------------------------------------


def test_scores_follow_allocations_and_discards() -> None:
    """An allocated task raises the node's requests at once; discard (and eviction) lower them again."""
    ssn = session(
        node(name="n1", cpu="4", memory="8Gi"),
        node(name="n2", cpu="4", memory="8Gi"),
        pod_group(name="g", min_member=2, phase="Inqueue"),
        pod(name="g-0", group="g", cpu="2", memory="4Gi"),
        pod(name="g-1", group="g", cpu="2", memory="4Gi"),
        pod(name="run", node_name="n2", cpu="1", memory="2Gi"),
        arguments=only(leastrequested=1),
    )
    before = scores(ssn, "g-1")
    assert before == {"n1": 50.0, "n2": 25.0}
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "g-0"), "n1")
    assert scores(ssn, "g-1") == {"n1": 0.0, "n2": 25.0}
    stmt.discard()
    assert scores(ssn, "g-1") == before
    stmt = Statement(ssn)
    stmt.evict(task(ssn, "run"), "test")
    assert scores(ssn, "g-1") == {"n1": 50.0, "n2": 50.0}
    stmt.discard()
    assert scores(ssn, "g-1") == before


# Random clusters: vectorised == per-node reference ------------------------------------------------

ZONES = ["a", "b", "c"]


def _nz(value: float, default: int) -> int:
    return math.ceil(value) or default


def _balance(requested: list[int], allocatable: list[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(requested, allocatable, strict=True) if a]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * 100)


def reference(ssn: Session, p: TaskInfo, candidates: list[NodeInfo]) -> list[int]:
    """Kubernetes' scores per node in Python integers; weights least 1, balanced 1, affinity 2, taint 3."""
    least, balanced, affinity, taints = [], [], [], []
    req = p.init_resreq
    gpu = math.ceil(req.scalars.get("nvidia.com/gpu", 0.0))
    for n in candidates:
        pods = list(n.tasks.values())
        alloc = (math.ceil(n.allocatable.milli_cpu), math.ceil(n.allocatable.memory))
        nz = (
            sum(_nz(q.init_resreq.milli_cpu, 100) for q in pods) + _nz(req.milli_cpu, 100),
            sum(_nz(q.init_resreq.memory, 200 * 1024**2) for q in pods) + _nz(req.memory, 200 * 1024**2),
        )
        parts = [0 if r > a else (a - r) * 100 // a for a, r in zip(alloc, nz, strict=True) if a]
        least.append(sum(parts) // len(parts) if parts else 0)
        names = ("cpu", "memory")
        used = [sum(math.ceil(q.init_resreq.get(name)) for q in pods) for name in names]
        wanted = [u + math.ceil(req.get(name)) for u, name in zip(used, names, strict=True)]
        sizes = list(alloc)
        node_gpu = math.ceil(n.allocatable.scalars.get("nvidia.com/gpu", 0.0))
        if gpu and node_gpu:
            used.append(sum(math.ceil(q.init_resreq.scalars.get("nvidia.com/gpu", 0.0)) for q in pods))
            wanted.append(used[-1] + gpu)
            sizes.append(node_gpu)
        if math.ceil(req.milli_cpu) or math.ceil(req.memory) or gpu:
            with_pod, without_pod = _balance(wanted, sizes), _balance(used, sizes)
            balanced.append(50 + (50 + with_pod - without_pod) // 2)
        else:
            balanced.append(0)
        terms = (p.affinity.get("nodeAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        ) or []
        affinity.append(
            sum(
                t["weight"]
                for t in terms
                if all(n.labels.get(e["key"]) in e["values"] for e in t["preference"]["matchExpressions"])
            )
        )
        taints.append(
            sum(
                1
                for t in n.taints
                if t.effect == "PreferNoSchedule"
                and not any(
                    tol.effect in ("", "PreferNoSchedule") and tol.tolerates(t.key, t.value, t.effect)
                    for tol in p.tolerations
                )
            )
        )
    top_a, top_t = max(affinity), max(taints)
    return [
        least[i]
        + balanced[i]
        + 2 * (100 * affinity[i] // top_a if top_a else 0)
        + 3 * (100 - 100 * taints[i] // top_t if top_t else 100)
        for i in range(len(candidates))
    ]


def random_objects(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects = []
    for i in range(15):
        scalars = {"nvidia.com/gpu": str(rng.choice([4, 8]))} if rng.random() < 0.3 else {}
        taints = [
            {"key": k, "value": "1", "effect": "PreferNoSchedule"}
            for k in rng.sample(["x", "y", "z"], rng.randint(0, 2))
        ]
        objects.append(
            node(
                name=f"n{i}",
                cpu=str(rng.choice([4, 8, 16])),
                memory=f"{rng.choice([8, 16, 32])}Gi",
                labels={"zone": rng.choice(ZONES)},
                taints=taints,
                scalars=scalars,
            )
        )
    for i in range(25):
        objects.append(
            pod(
                name=f"run-{i}",
                node_name=f"n{rng.randrange(15)}",
                cpu=rng.choice(["", "500m", "1"]),
                memory=rng.choice(["", "1Gi", "3Gi"]),
            )
        )
    for i in range(20):
        spec: dict[str, Any] = {
            "tolerations": [
                {"key": k, "operator": "Exists"} for k in rng.sample(["x", "y"], rng.randint(0, 1))
            ]
        }
        if rng.random() < 0.5:
            spec["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": rng.randint(1, 100),
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "zone",
                                        "operator": "In",
                                        "values": rng.sample(ZONES, rng.randint(1, 2)),
                                    }
                                ]
                            },
                        }
                        for _ in range(rng.randint(1, 2))
                    ]
                }
            }
        requests = {"cpu": rng.choice(["100m", "1", "2"]), "memory": rng.choice(["512Mi", "2Gi"])}
        if rng.random() < 0.3:
            requests["nvidia.com/gpu"] = str(rng.randint(1, 2))
        spec["containers"] = [{"name": "c", "resources": {"requests": requests}}]
        objects.append(pod(name=f"new-{i}", spec=spec))
    return objects


@pytest.mark.parametrize("seed", range(6))
def test_random_clusters_match_the_per_node_reference(seed: int) -> None:
    """For random candidate subsets, the vectorised sum equals the reference, score for score."""
    ssn = session(*random_objects(seed), arguments={"podaffinity.weight": 0})
    rng = random.Random(seed)
    pending = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]
    stmt = Statement(ssn)
    for p in pending:
        rows = np.array(sorted(rng.sample(range(len(ssn.node_list)), rng.randint(1, len(ssn.node_list)))))
        got = ssn.prioritize(p, rows).tolist()
        assert got == [float(v) for v in reference(ssn, p, [ssn.node_list[r] for r in rows])], p.name
        stmt.allocate(p, ssn.node_list[int(rows[int(np.argmax(got))])].name)
    assert len(pending) == 20


APPS = ["web", "db", "cache"]


def _weighted_terms(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "weight": rng.randint(1, 100),
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                "topologyKey": rng.choice(["kubernetes.io/hostname", "zone"]),
                **rng.choice([{}, {"namespaces": ["ns1", "ns2"]}]),
            },
        }
        for _ in range(rng.randint(1, 2))
    ]


def _random_affinity(rng: random.Random) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if rng.random() < 0.5:
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": _weighted_terms(rng)}
    if rng.random() < 0.5:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": _weighted_terms(rng)
        }
    if rng.random() < 0.3:
        required = [{"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": "zone"}]
        affinity.setdefault("podAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return {"affinity": affinity} if affinity else {}


def _selected(raw: Mapping[str, Any], owner: TaskInfo, pod: TaskInfo) -> bool:
    namespaces = raw.get("namespaces") or [owner.namespace]
    wanted = raw["labelSelector"]["matchLabels"]
    return pod.namespace in namespaces and all(pod.labels.get(k) == v for k, v in wanted.items())


def pod_affinity_reference(ssn: Session, p: TaskInfo, candidates: list[NodeInfo]) -> list[int]:
    """Kubernetes' InterPodAffinity score written out: every placed pod against every term, then min-max."""
    domains: dict[tuple[str, str], int] = {}

    def credit(raw: Mapping[str, Any], node: NodeInfo, weight: int) -> None:
        key = raw["topologyKey"]
        if key in node.labels:
            domains[(key, node.labels[key])] = domains.get((key, node.labels[key]), 0) + weight

    def section(q: TaskInfo, kind: str, when: str) -> list[Any]:
        return list((q.affinity.get(kind) or {}).get(when) or [])

    for m in ssn.node_list:
        for q in m.tasks.values():
            for sign, kind in ((1, "podAffinity"), (-1, "podAntiAffinity")):
                for t in section(p, kind, "preferredDuringSchedulingIgnoredDuringExecution"):
                    if _selected(t["podAffinityTerm"], p, q):
                        credit(t["podAffinityTerm"], m, sign * t["weight"])
                for t in section(q, kind, "preferredDuringSchedulingIgnoredDuringExecution"):
                    if _selected(t["podAffinityTerm"], q, p):
                        credit(t["podAffinityTerm"], m, sign * t["weight"])
            for t in section(q, "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
                if _selected(t, q, p):
                    credit(t, m, 1)
    raw = [sum(v for (k, value), v in domains.items() if n.labels.get(k) == value) for n in candidates]
    low, high = min(raw), max(raw)
    return [0 if high == low else int(100 * ((s - low) / (high - low))) for s in raw]


@pytest.mark.parametrize("seed", range(5))
def test_random_inter_pod_affinity_matches_the_reference(seed: int) -> None:
    """Grouped pods and terms give Kubernetes' score, also as placements change during the session."""
    rng = random.Random(seed)
    objects = [
        node(
            name=f"n{i}",
            labels={"kubernetes.io/hostname": f"n{i}", **({"zone": rng.choice(ZONES)} if i % 4 else {})},
        )
        for i in range(10)
    ]
    for i in range(25):
        objects.append(
            pod(
                name=f"run-{i}",
                namespace=rng.choice(["ns1", "ns2"]),
                node_name=f"n{rng.randrange(10)}",
                labels={"app": rng.choice(APPS)},
                spec=_random_affinity(rng),
                cpu="100m",
                memory="",
            )
        )
    for i in range(15):
        objects.append(
            pod(
                name=f"new-{i}",
                namespace=rng.choice(["ns1", "ns2"]),
                labels={"app": rng.choice(APPS)},
                spec=_random_affinity(rng),
                cpu="100m",
                memory="",
            )
        )
    ssn = session(*objects, arguments=only(podaffinity=1))
    stmt = Statement(ssn)
    pending = sorted(
        (t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING),
        key=lambda t: t.name,
    )
    nonzero = 0
    for p in pending:
        rows = np.array(sorted(rng.sample(range(10), rng.randint(2, 10))))
        got = ssn.prioritize(p, rows).tolist()
        assert got == [float(v) for v in pod_affinity_reference(ssn, p, [ssn.node_list[r] for r in rows])], (
            p.name
        )
        nonzero += any(got)
        stmt.allocate(p, ssn.node_list[int(rows[0])].name)
    assert nonzero > 5
    stmt.discard()
    for p in pending:
        rows = np.arange(10)
        assert ssn.prioritize(p, rows).tolist() == [
            float(v) for v in pod_affinity_reference(ssn, p, ssn.node_list)
        ]
