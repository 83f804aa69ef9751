"""/metrics of a running `py-volcano run` against the real API server: queue metrics by label, with values.

Two queues of this test's own on two kwok nodes: `qa` (weight 3) holds a 3-pod gang that fits, `qb`
(weight 1, capability 6 CPUs) a 2-pod gang that fits and a one-pod GPU group no node can take, which
the queue admits (its minResources fit) and keeps Inqueue. Once the binds are seen and the gangs run,
every queue series is checked against what those pods request, and the job series against the gangs.

The secure endpoint (`--secure-listen-address`, self-signed) answers by what the real API server says of
each caller's ServiceAccount token: 401 without a valid token, 403 without a role granting `get` on
/metrics, the page with one; the probes stay plain HTTP.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from e2e.controlplane import free_port
from e2e.harness import Nodes, Rest, Scheduler, pod, pod_group, queue, token, wait_for

pytest_plugins = ["e2e.fixtures"]

MI = 2**20
GPU = "nvidia.com/gpu"


@pytest.fixture
def queues(rest: Rest) -> Iterator[dict[str, str]]:
    names = {"qa": token("qa"), "qb": token("qb")}
    rest.create(queue(names["qa"], weight=3))
    rest.create(queue(names["qb"], weight=1, capability={"cpu": "6"}))
    yield names
    for name in names.values():
        rest.delete("Queue", name)


def scrape(process: Scheduler) -> dict[str, dict[frozenset[tuple[str, str]], float]]:
    """{sample name: {labels: value}} of the process's /metrics."""
    found: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
    for family in text_string_to_metric_families(process.metrics()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return found


def of_queue(
    samples: dict[str, dict[frozenset[tuple[str, str]], float]], name: str, queue_name: str, **labels: str
) -> float | None:
    return samples.get(name, {}).get(frozenset({"queue_name": queue_name, **labels}.items()))


def test_queue_metrics_of_a_running_scheduler(
    control_plane: Any, rest: Rest, namespace: str, nodes: Nodes, scheduler_name: str, queues: dict[str, str]
) -> None:
    qa, qb = queues["qa"], queues["qb"]
    nodes.add(cpu="4", memory="8Gi")
    nodes.add(cpu="4", memory="8Gi")
    rest.create(pod_group("ga", namespace, min_member=3, queue=qa))
    rest.create(pod_group("gb", namespace, min_member=2, queue=qb))
    rest.create(pod_group("gpu", namespace, min_member=1, queue=qb, minResources={"cpu": "1", "memory": "100Mi"}))
    for i in range(3):
        rest.create(pod(f"ga-{i}", namespace, scheduler=scheduler_name, group="ga"))
    for i in range(2):
        rest.create(pod(f"gb-{i}", namespace, scheduler=scheduler_name, group="gb"))
    gpu_pod = pod("gpu-0", namespace, scheduler=scheduler_name, group="gpu")
    resources = gpu_pod["spec"]["containers"][0]["resources"]
    resources["requests"][GPU] = "1"
    resources["limits"] = {GPU: "1"}
    rest.create(gpu_pod)

    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        "--schedule-period=0.3",
        "--no-leader-elect",
    ) as process:
        bound = [f"ga-{i}" for i in range(3)] + [f"gb-{i}" for i in range(2)]
        wait_for("five pods bound", lambda: all(rest.node_of(namespace, name) for name in bound))

        def settled() -> dict[str, dict[frozenset[tuple[str, str]], float]] | None:
            samples = scrape(process)
            running = [of_queue(samples, "volcano_queue_pod_group_running_count", q) for q in (qa, qb)]
            # A scrape taken while a cycle is being recorded (off the event loop) can read the latency
            # histogram before that cycle's observation and the cycle counter after it: wait for one
            # taken between cycles, where each cycle counted must have its one latency observation.
            cycles = samples["volcano_scheduling_cycles_total"][frozenset()]
            observed = samples["volcano_e2e_scheduling_latency_milliseconds_count"][frozenset()]
            return samples if running == [1, 1] and observed == cycles else None

        samples = wait_for("both gangs Running in /metrics, one latency observation a cycle", settled, timeout=60)
        assert process.terminate() == 0, process.tail()
    queue_status = rest.get("Queue", qa) or {}  # read after SIGTERM, which flushes the status writer

    cpu, memory = "volcano_queue_{}_milli_cpu", "volcano_queue_{}_memory_bytes"
    expected = {
        (cpu.format("allocated"), qa): 3000,
        (memory.format("allocated"), qa): 300 * MI,
        (cpu.format("request"), qa): 3000,
        (memory.format("request"), qa): 300 * MI,
        (cpu.format("allocated"), qb): 2000,
        (memory.format("allocated"), qb): 200 * MI,
        (cpu.format("request"), qb): 3000,
        (memory.format("request"), qb): 300 * MI,
        (cpu.format("deserved"), qa): 3000,  # qa asks less than its weighted share: it deserves its request
        (cpu.format("capacity"), qb): 6000,
        (cpu.format("real_capacity"), qb): 6000,  # within the two nodes' 8 CPUs
        (cpu.format("inqueue"), qb): 1000,  # the GPU group's minResources, admitted and not running
        (memory.format("inqueue"), qb): 100 * MI,
        (cpu.format("inqueue"), qa): 0,
        ("volcano_queue_weight", qa): 3,
        ("volcano_queue_weight", qb): 1,
        ("volcano_queue_pod_group_running_count", qa): 1,
        ("volcano_queue_pod_group_inqueue_count", qa): 0,
        ("volcano_queue_pod_group_pending_count", qa): 0,
        ("volcano_queue_pod_group_unknown_count", qa): 0,
        ("volcano_queue_pod_group_running_count", qb): 1,
        ("volcano_queue_pod_group_inqueue_count", qb): 1,  # the GPU group: admitted, never placed
        ("volcano_queue_pod_group_pending_count", qb): 0,
    }
    actual = {(name, q): of_queue(samples, name, q) for name, q in expected}
    assert actual == expected
    scalar = "volcano_queue_request_scalar_resources"
    assert of_queue(samples, scalar, qb, resource=GPU) == 1000, (
        "scalar resources are in milli units, as Volcano"
    )
    assert of_queue(samples, scalar, qa, resource=GPU) is None, "qa requests no GPU"
    assert of_queue(samples, "volcano_queue_allocated_scalar_resources", qb, resource=GPU) is None
    for name in ("deserved", "real_capacity"):
        for q in (qa, qb):
            assert of_queue(samples, cpu.format(name), q) is not None, (name, q)
    assert of_queue(samples, cpu.format("capacity"), qa) is None, "qa has no capability"
    assert of_queue(samples, "volcano_queue_share", qa) == pytest.approx(1.0)
    assert of_queue(samples, "volcano_queue_overused", qa) == 1, "allocated reached deserved"

    assert samples["volcano_pod_binds_total"][frozenset({("result", "success")})] == 5
    assert samples["volcano_schedule_attempts_total"][frozenset({("result", "scheduled")})] == 5
    assert samples["volcano_scheduling_cycles_total"][frozenset()] >= 2
    latency = samples["volcano_task_scheduling_latency_milliseconds_count"]
    assert (latency[frozenset({("stage", "Assumed")})], latency[frozenset({("stage", "Bound")})]) == (5, 5)
    assert_job_series(samples, namespace, qa, qb)

    status = queue_status.get("status") or {}
    assert (status.get("running"), status.get("allocated", {}).get("cpu")) == (1, "3"), (
        "the runner drives the status writer"
    )


def assert_job_series(
    samples: dict[str, dict[frozenset[tuple[str, str]], float]], namespace: str, qa: str, qb: str
) -> None:
    """Shares are drf's (ga holds 3 CPUs, gb 2), the GPU group lacks its one task, the gangs have e2e times."""
    def job(name: str, **labels: str) -> float | None:
        return samples.get(name, {}).get(frozenset(labels.items()))

    ga, gb = (job("volcano_job_share", job_ns=namespace, job_id=g) for g in ("ga", "gb"))
    assert ga is not None and gb is not None and ga == pytest.approx(1.5 * gb), (ga, gb)
    assert job("volcano_job_share", job_ns=namespace, job_id="gpu") == 0
    assert job("volcano_unschedule_task_count", job_id="gpu") == 1
    assert job("volcano_unschedule_task_count", job_id="ga") is None, "a ready job has no series"
    assert (job("volcano_unschedule_job_count") or 0) >= 1
    # prometheus_client's parser reads the bare counter name with `_total` appended.
    assert (job("volcano_job_retry_counts_total", job_id="gpu") or 0) >= 1
    for group, queue_name in (("ga", qa), ("gb", qb)):
        labels = {"job_name": group, "queue": queue_name, "job_namespace": namespace}
        duration = job("volcano_e2e_job_scheduling_duration", **labels)
        assert duration is not None and duration > 0, group
        start, last = job("volcano_e2e_job_scheduling_start_time", **labels), job(
            "volcano_e2e_job_scheduling_last_time", **labels
        )
        assert start is not None and last is not None and start <= last, (start, last)
    assert job("volcano_e2e_job_scheduling_latency_milliseconds_count") == 5
    assert (job("volcano_namespace_share", namespace_name=namespace) or 0) == pytest.approx(ga + gb)


# --- the secure endpoint -------------------------------------------------------------------------------

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def service_account_token(rest: Rest, namespace: str, name: str) -> str:
    """Create ServiceAccount `namespace/name`; return a ten-minute token of it (TokenRequest)."""
    rest.ok("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}})
    answer = rest.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}},
    )
    return str(answer["status"]["token"])


@pytest.fixture
def metrics_reader(rest: Rest, namespace: str) -> Iterator[str]:
    """A token of a ServiceAccount bound to a ClusterRole that may get /metrics (the chart's metrics-reader)."""
    name = token("metrics-reader")
    rest.ok("POST", f"{RBAC}/clusterroles", {
        "metadata": {"name": name}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    })
    reader = service_account_token(rest, namespace, "reader")
    rest.ok("POST", f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    })
    yield reader
    rest.request("DELETE", f"{RBAC}/clusterrolebindings/{name}")
    rest.request("DELETE", f"{RBAC}/clusterroles/{name}")


def get(url: str, bearer: str | None = None) -> tuple[int, str]:
    """(status, body) of a GET; the scheduler's certificate is self-signed, so it is not verified."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {bearer}"} if bearer else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def test_secure_metrics_answer_only_tokens_the_api_server_allows(
    control_plane: Any, rest: Rest, namespace: str, scheduler_name: str, metrics_reader: str
) -> None:
    stranger = service_account_token(rest, namespace, "stranger")
    port = free_port()
    secure = f"https://127.0.0.1:{port}/metrics"
    with Scheduler(
        control_plane.kubeconfig,
        f"--scheduler-name={scheduler_name}",
        f"--secure-listen-address=127.0.0.1:{port}",
        "--no-leader-elect",
    ) as process:
        process.wait_event("secure_metrics_serving")
        plain = f"http://127.0.0.1:{process.port}"
        assert get(secure)[0] == 401, "no token"
        assert get(secure, "not-a-token")[0] == 401, "a token the TokenReview refuses"
        assert get(secure, stranger)[0] == 403, "a valid token whose account may not get /metrics"
        status, page = get(secure, metrics_reader)
        assert status == 200, page
        names = {family.name for family in text_string_to_metric_families(page)}
        assert {"volcano_e2e_scheduling_latency_milliseconds", "volcano_schedule_attempts"} <= names
        assert get(f"{plain}/healthz")[0] == 200, "probes stay plain, without a token"
        wait_for("ready", lambda: get(f"{plain}/readyz")[0] == 200)
        assert get(f"{plain}/metrics")[0] == 404, "no plain /metrics beside the secure one"
        assert process.proc.poll() is None
        assert process.terminate() == 0, process.tail()
    forbidden = process.events("metrics_forbidden")
    assert [line["user"] for line in forbidden] == [f"system:serviceaccount:{namespace}:stranger"]
