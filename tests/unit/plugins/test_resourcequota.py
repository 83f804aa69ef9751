"""resourcequota: enqueue admission against the namespace's ResourceQuotas (Volcano's resourcequota plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.actions import ACTIONS
from py_volcano.api import PodGroupPhase, Vote, parse_pod_group, parse_resource_quota
from py_volcano.errors import InvalidResourceQuota
from py_volcano.framework import NoArgs
from py_volcano.plugins.resourcequota import ResourceQuotaPlugin
from tests.builders import pod_group
from tests.unit.plugins.sessions import job, open_at, resource_quota

CONF = 'actions: "enqueue"\ntiers:\n- plugins:\n  - name: resourcequota\n'


def _group(name: str, min_resources: dict[str, str] | None, namespace: str = "team") -> dict[str, Any]:
    return pod_group(name=name, namespace=namespace, min_resources=min_resources)


def test_min_resources_are_read_as_written() -> None:
    """Quota names (`requests.cpu`, `count/pods`) stay in the PodGroup's resource list for this plugin, though
    they are no resources to place."""
    written = {"cpu": "1500m", "memory": "1Gi", "pods": "3", "requests.cpu": "2", "count/pods": "3"}
    spec = parse_pod_group(_group("j", written))
    assert spec.min_resource_list == {
        "cpu": 1.5, "memory": 2.0**30, "pods": 3.0, "requests.cpu": 2.0, "count/pods": 3.0
    }
    assert spec.min_resources is not None and "requests.cpu" not in spec.min_resources.scalars


def test_parse_reads_the_status() -> None:
    """Volcano reads `status.hard` and `status.used` (the quota controller's), not the spec."""
    quota = parse_resource_quota(resource_quota(name="q", hard={"cpu": "4"}, used={"cpu": "500m"}))
    assert (quota.hard, quota.used) == ({"cpu": 4.0}, {"cpu": 0.5})
    with pytest.raises(InvalidResourceQuota, match=r"field status\.used: not a quantity"):
        parse_resource_quota(resource_quota(name="q", hard={"cpu": "4"}, used={"cpu": "lots"}))


@pytest.mark.parametrize(
    ("min_resources", "vote"),
    [
        pytest.param({"cpu": "2"}, Vote.PERMIT, id="fits"),
        pytest.param({"cpu": "3"}, Vote.PERMIT, id="fits-exactly"),
        pytest.param({"cpu": "3500m"}, Vote.REJECT, id="over"),
        pytest.param({"memory": "64Gi"}, Vote.PERMIT, id="names-the-quota-does-not-limit"),
        pytest.param(None, Vote.PERMIT, id="no-min-resources"),
    ],
)
def test_used_plus_request_within_hard(min_resources: dict[str, str] | None, vote: Vote) -> None:
    """used (1) + request <= hard (4) on the names both write."""
    ssn = open_at(CONF, resource_quota(name="q", namespace="team", hard={"cpu": "4"}, used={"cpu": "1"}),
                  _group("j", min_resources))
    plugin = ssn.plugins["resourcequota"]
    assert isinstance(plugin, ResourceQuotaPlugin)
    assert plugin.enqueueable(job(ssn, "j")) == vote


def test_names_are_compared_as_written() -> None:
    """A quota on `requests.cpu` does not limit a minResources written as `cpu` (Volcano masks by name)."""
    ssn = open_at(CONF, resource_quota(name="q", namespace="team", hard={"requests.cpu": "1"}, used={}),
                  _group("plain", {"cpu": "8"}), _group("prefixed", {"requests.cpu": "8"}))
    assert ssn.job_enqueueable(job(ssn, "plain"))
    assert not ssn.job_enqueueable(job(ssn, "prefixed"))


def test_other_namespaces_are_not_limited() -> None:
    """A namespace without quotas admits everything."""
    ssn = open_at(CONF, resource_quota(name="q", namespace="team", hard={"cpu": "1"}, used={}),
                  _group("j", {"cpu": "8"}, namespace="other"))
    assert ssn.job_enqueueable(job(ssn, "j"))


def test_jobs_admitted_in_the_cycle_count_and_the_rejection_says_why() -> None:
    """Enqueue admits the first job (1 + 2 <= 4); the second would make 5: it stays Pending, told why."""
    ssn = open_at(
        CONF,
        resource_quota(name="q", namespace="team", hard={"cpu": "4", "pods": "10"}, used={"cpu": "1", "pods": "1"}),
        _group("first", {"cpu": "2"}),
        _group("second", {"cpu": "2"}),
    )
    ACTIONS["enqueue"].new(NoArgs()).execute(ssn)
    assert job(ssn, "first").phase is PodGroupPhase.INQUEUE
    second = job(ssn, "second")
    assert second.phase is PodGroupPhase.PENDING
    assert second.job_fit_error == "resource quota insufficient, requested: {cpu: 2}, used: {cpu: 1}, limited: {cpu: 4}"
