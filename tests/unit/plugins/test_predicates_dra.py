"""`predicate.DynamicResourceAllocationEnable`: py-volcano allocates no ResourceClaims, so with the argument
on a pod that names one waits with that reason (and the load logs an error); off, as in Volcano without
the feature gate, the claims are not looked at."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from py_volcano.api import parse_pod
from py_volcano.errors import InvalidPod
from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod

CONF = (
    'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'
    "    arguments:\n      predicate.DynamicResourceAllocationEnable: {enabled}\n"
)


def claimed(name: str) -> dict[str, object]:
    """A pending pod of py-volcano naming one ResourceClaim."""
    manifest = pod(name=name)
    manifest["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
    return manifest


@pytest.mark.parametrize("enabled", [True, False])
def test_a_pod_with_resource_claims_waits_with_the_reason_only_when_dra_is_on(enabled: bool) -> None:
    registry = default_registry()
    with capture_logs() as logs:
        conf = load_conf(CONF.format(enabled=str(enabled).lower()), registry=registry)
        result = run_cycle(cluster(node(name="n1"), claimed("c"), pod(name="plain")), conf, registry)
    bound = {task.name for task, _ in result.binds}
    errors = [entry["event"] for entry in logs if entry["log_level"] == "error"]
    if enabled:
        assert bound == {"plain"}
        (message,) = [wait.message for wait in result.pod_waits.values()]
        assert "ResourceClaims (gpu): py-volcano does not allocate Dynamic Resource Allocation claims" in message
        assert "dynamic_resource_allocation_unsupported" in errors
    else:
        assert bound == {"c", "plain"}
        assert "dynamic_resource_allocation_unsupported" not in errors


def test_a_malformed_resource_claim_names_the_field() -> None:
    manifest = pod(name="bad")
    manifest["spec"]["resourceClaims"] = [{"resourceClaimName": "x"}]
    with pytest.raises(InvalidPod, match=r"spec\.resourceClaims\[0\]\.name"):
        parse_pod(manifest, priority_classes={})
