"""Reading a pod's topologySpreadConstraints: Kubernetes' defaults, matchLabelKeys, what the API server refuses."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import TopologySpreadConstraint
from py_volcano.api.topology_spread import topology_spread_constraints
from py_volcano.errors import InvalidPod

SELECTOR = {"matchLabels": {"app": "web"}}


def read(*constraints: dict[str, Any], labels: dict[str, str] | None = None) -> tuple[TopologySpreadConstraint, ...]:
    return topology_spread_constraints({"topologySpreadConstraints": list(constraints)}, labels or {}, "ns/p")


def constraint(**extra: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SELECTOR,
            **extra}


def test_defaults_are_kubernetes() -> None:
    """minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore."""
    assert read(constraint()) == (
        TopologySpreadConstraint(max_skew=1, topology_key="zone", hard=True, selector=SELECTOR, min_domains=1,
                                 honor_node_affinity=True, honor_node_taints=False),
    )
    assert read() == ()


def test_match_label_keys_merge_the_pods_values_into_the_selector() -> None:
    """Keys the pod carries become `In (value)` requirements; keys it lacks are dropped."""
    (parsed,) = read(constraint(matchLabelKeys=["version", "missing"]), labels={"app": "web", "version": "2"})
    assert parsed.selector == {**SELECTOR, "matchExpressions": [{"key": "version", "operator": "In", "values": ["2"]}]}
    assert parsed.matches({"app": "web", "version": "2"}) and not parsed.matches({"app": "web", "version": "1"})


@pytest.mark.parametrize(
    ("selector", "counts", "self_match"),
    [
        pytest.param(None, False, False, id="no-selector-matches-nothing"),
        pytest.param({}, False, True, id="empty-selector-counts-nothing-but-matches-itself"),
        pytest.param(SELECTOR, True, True, id="a-selector"),
    ],
)
def test_selector_shapes(selector: dict[str, Any] | None, counts: bool, self_match: bool) -> None:
    """As LabelSelectorAsSelector and countPodsMatchSelector: nil selects nothing, {} counts no pod."""
    (parsed,) = read({**constraint(), "labelSelector": selector})
    assert (parsed.counts_pods, parsed.matches({"app": "web"})) == (counts, self_match)


@pytest.mark.parametrize(
    ("constraints", "field"),
    [
        pytest.param([constraint(maxSkew=0)], "[0].maxSkew", id="max-skew-0"),
        pytest.param([{**constraint(), "maxSkew": None}], "[0].maxSkew", id="max-skew-missing"),
        pytest.param([constraint(topologyKey="")], "[0].topologyKey", id="no-key"),
        pytest.param([constraint(whenUnsatisfiable="Maybe")], "[0].whenUnsatisfiable", id="bad-when"),
        pytest.param([constraint(minDomains=0)], "[0].minDomains", id="min-domains-0"),
        pytest.param([constraint(minDomains=2, whenUnsatisfiable="ScheduleAnyway")], "[0].minDomains",
                     id="min-domains-soft"),
        pytest.param([constraint(nodeTaintsPolicy="Always")], "[0].nodeTaintsPolicy", id="bad-policy"),
        pytest.param([constraint(), constraint(maxSkew=2)], "[1].{topologyKey, whenUnsatisfiable}", id="repeated"),
        pytest.param([{**constraint(), "labelSelector": None, "matchLabelKeys": ["v"]}], "[0].matchLabelKeys",
                     id="keys-without-selector"),
        pytest.param([constraint(matchLabelKeys=["app"])], "[0].matchLabelKeys", id="key-in-selector"),
    ],
)
def test_what_the_api_server_refuses_is_an_invalid_pod(constraints: list[dict[str, Any]], field: str) -> None:
    """The error names the pod and the field."""
    with pytest.raises(InvalidPod, match=r"Pod ns/p: field spec\.topologySpreadConstraints" + field.replace(
            "[", r"\[").replace("]", r"\]").replace("{", r"\{").replace("}", r"\}")):
        read(*constraints)
