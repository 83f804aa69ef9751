"""The resource model (docs/semantics.md, "Resources") against worked examples of each operation."""

from __future__ import annotations

import pytest

from py_volcano.api import INFINITY, ZERO, Resource
from py_volcano.api.manifests import pod_requests
from py_volcano.api.quantity import parse_quantity

GI = 2.0**30
GPU = "nvidia.com/gpu"


def res(cpu: float = 0, mem: float = 0, **scalars: float) -> Resource:
    """cpu in milli, mem in Gi, scalars in whole units (stored milli)."""
    return Resource(
        cpu, mem * GI, {k.replace("_", "/").replace("nvidia/", "nvidia.com/"): v * 1000 for k, v in scalars.items()}
    )


def test_add_example() -> None:
    """Add: cpu=2000,mem=4Gi,gpu=1 + cpu=1000,mem=2Gi,gpu=1 = cpu=3000,mem=6Gi,gpu=2."""
    total = res(2000, 4, nvidia_gpu=1).add(res(1000, 2, nvidia_gpu=1))
    assert (total.milli_cpu, total.memory, total.scalars) == (3000, 6 * GI, {GPU: 2000})


def test_less_example() -> None:
    """Less: {1000, 2Gi, gpu 1} < {2000, 4Gi, gpu 2} in every dimension."""
    assert res(1000, 2, nvidia_gpu=1).less(res(2000, 4, nvidia_gpu=2), ZERO)
    assert not res(2000, 2, nvidia_gpu=1).less(res(2000, 4, nvidia_gpu=2), ZERO)


def test_less_equal_with_resources_name_example() -> None:
    """{3000, 8Gi, gpu 2} vs {2000, 4Gi, gpu 4}: (false, [cpu, memory])."""
    assert res(3000, 8, nvidia_gpu=2).less_equal_with_resources_name(res(2000, 4, nvidia_gpu=4), ZERO) == (
        False,
        ["cpu", "memory"],
    )


def test_less_equal_with_dimension_and_resources_name_example() -> None:
    """Only dimensions the request asks for count: a GPU-only request ignores CPU and memory."""
    assert res(3000, 8).less_equal_with_dimension_and_resources_name(res(2000, 4), res(nvidia_gpu=1)) == (True, [])
    assert res(3000, 8).less_equal_with_dimension_and_resources_name(res(2000, 4), res(cpu=1)) == (False, ["cpu"])


def test_diff_example() -> None:
    """{3000, 2Gi} vs {2000, 4Gi}: increased cpu 1000, decreased memory 2Gi."""
    increased, decreased = res(3000, 2).diff(res(2000, 4), ZERO)
    assert (increased.milli_cpu, increased.memory) == (1000, 0)
    assert (decreased.milli_cpu, decreased.memory) == (0, 2 * GI)


def test_future_idle_example() -> None:
    """Idle 100m + Releasing 500m - Pipelined 300m = 300m."""
    assert res(100).add(res(500)).sub_without_assert(res(300)).milli_cpu == 300


def _containers(*cpus: str, sidecar: tuple[int, ...] = ()) -> list[dict[str, object]]:
    """Containers requesting `cpus`; those at the positions in `sidecar` have `restartPolicy: Always`."""
    found: list[dict[str, object]] = []
    for i, cpu in enumerate(cpus):
        container: dict[str, object] = {"name": f"c{i}", "resources": {"requests": {"cpu": cpu}}}
        if i in sidecar:
            container["restartPolicy"] = "Always"
        found.append(container)
    return found


@pytest.mark.parametrize(
    ("spec", "cpu"),
    [
        pytest.param({"containers": _containers("1", "2")}, 3000, id="containers-summed"),
        pytest.param(
            {"containers": _containers("1", "2"), "initContainers": _containers("2", "2")}, 3000, id="init-below-sum"
        ),
        pytest.param({"containers": _containers("1"), "initContainers": _containers("3")}, 3000, id="init-above-sum"),
        pytest.param(
            {"containers": _containers("1"), "initContainers": _containers("1", sidecar=(0,))},
            2000,
            id="sidecar-added-to-containers",
        ),
        pytest.param(
            {"containers": _containers("1"), "initContainers": _containers("5", "1", "2", "3", sidecar=(1, 2, 3))},
            7000,
            id="sidecars-after-init-summed-with-containers",
        ),
        pytest.param(
            {"containers": _containers("1"), "initContainers": _containers("5", "1", "2", "5", "3", sidecar=(1, 2, 4))},
            8000,
            id="init-plus-sidecars-started-before-it",
        ),
        pytest.param(
            {"containers": _containers("100"), "initContainers": _containers("10", "200", sidecar=(0,))},
            210000,
            id="sidecar-then-init-above-containers",
        ),
        pytest.param(
            {"containers": _containers("1"), "initContainers": _containers("3"), "overhead": {"cpu": "250m"}},
            3250,
            id="overhead-added-after-the-max",
        ),
        pytest.param({"containers": [{"resources": {"limits": {"cpu": "1"}}}]}, 1000, id="limits-stand-in"),
    ],
)
def test_pod_request_follows_volcanos_get_pod_resource_request(spec: dict[str, object], cpu: float) -> None:
    """The CPU a pod requests; the cases of Volcano's TestGetPodResourceRequest (pod_info_test.go), in cores."""
    assert pod_requests(spec, "ns/pod").milli_cpu == cpu


def test_pod_request_takes_the_max_dimension_by_dimension() -> None:
    """Containers 500m/1Gi + 300m/512Mi, init 1000m/512Mi and 200m/2Gi: request 1000m/2Gi."""
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "300m", "memory": "512Mi"}}},
        ],
        "initContainers": [
            {"resources": {"requests": {"cpu": "1000m", "memory": "512Mi"}}},
            {"resources": {"requests": {"cpu": "200m", "memory": "2Gi"}}},
        ],
    }
    request = pod_requests(spec, "ns/pod")
    assert (request.milli_cpu, request.memory) == (1000, 2 * GI)


@pytest.mark.parametrize(
    ("left", "right", "default", "expected"),
    [
        pytest.param(res(1000), res(1000.05), ZERO, True, id="within-epsilon"),
        pytest.param(res(1000.2), res(1000), ZERO, False, id="beyond-epsilon"),
        pytest.param(res(nvidia_gpu=1), res(), ZERO, False, id="missing-scalar-is-zero"),
        pytest.param(res(nvidia_gpu=1), res(), INFINITY, True, id="missing-scalar-is-infinite"),
        pytest.param(res(), res(nvidia_gpu=1), INFINITY, False, id="missing-left-infinite-exceeds"),
        pytest.param(res(), res(nvidia_gpu=1), ZERO, True, id="missing-left-zero-fits"),
    ],
)
def test_less_equal_defaults(left: Resource, right: Resource, default: object, expected: bool) -> None:
    """Epsilon 0.1 and the Zero/Infinity rule for missing dimensions."""
    assert left.less_equal(right, default) is expected  # type: ignore[arg-type]


def test_less_equal_partly_and_greater_partly() -> None:
    """Partly: at least one dimension."""
    assert res(3000, 1).less_equal_partly(res(2000, 4), ZERO)
    assert not res(3000, 5).less_equal_partly(res(2000, 4), ZERO)
    assert res(3000, 1).greater_partly(res(2000, 4), ZERO)


def test_min_dimension_resource() -> None:
    """Per-dimension minimum; a scalar the other lacks stays under INFINITY and drops to 0 under ZERO."""
    assert res(3000, 1, nvidia_gpu=2).min_dimension_resource(res(2000, 4), INFINITY).scalars == {GPU: 2000}
    lowered = res(3000, 1, nvidia_gpu=2).min_dimension_resource(res(2000, 4), ZERO)
    assert (lowered.milli_cpu, lowered.memory, lowered.scalars) == (2000, GI, {GPU: 0})


def test_exceeded_part() -> None:
    """Only what is above the other side, never negative."""
    part = res(3000, 1, nvidia_gpu=2).exceeded_part(res(2000, 4, nvidia_gpu=1))
    assert (part.milli_cpu, part.memory, part.scalars) == (1000, 0, {GPU: 1000})


def test_fit_delta() -> None:
    """Idle.fit_delta(request): requested dimensions minus request and epsilon; negative means short."""
    delta = res(1000, 4).fit_delta(res(1500, 0))
    assert delta.milli_cpu == pytest.approx(-500.1)
    assert delta.memory == 4 * GI


def test_is_empty_and_multi() -> None:
    """Empty below epsilon in every dimension; multi scales every dimension."""
    assert Resource(0.05, 0.05).is_empty()
    assert not res(nvidia_gpu=1).is_empty()
    scaled = res(1000, 2, nvidia_gpu=1).multi(1.5)
    assert (scaled.milli_cpu, scaled.memory, scaled.scalars) == (1500, 3 * GI, {GPU: 1500})


def test_sub_asserts_and_sub_without_assert_goes_negative() -> None:
    """Sub refuses to go negative; SubWithoutAssert allows it."""
    with pytest.raises(AssertionError):
        res(1000).sub(res(2000))
    assert res(1000).sub_without_assert(res(2000)).milli_cpu == -1000


def test_from_list_parses_quantities_and_names_bad_keys() -> None:
    """Kubernetes quantities; pods go to max_task_num; a bad quantity names its key."""
    parsed = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "pods": "110", GPU: 2})
    assert (parsed.milli_cpu, parsed.memory, parsed.max_task_num, parsed.scalars) == (1500, GI, 110, {GPU: 2000})
    with pytest.raises(ValueError, match=r"^memory: "):
        Resource.from_list({"memory": "lots"})


@pytest.mark.parametrize("quantity", ["1e1000000", "1e19", "9Ei", "-1e1000000", 1e300, float("nan")])
def test_quantities_beyond_int64_are_refused_not_raised_as_other_errors(quantity: object) -> None:
    """Kubernetes stores quantities as int64: a larger one (which the API server accepts) is a ValueError."""
    with pytest.raises(ValueError, match="quantity out of range"):
        parse_quantity(quantity)


def test_quantities_up_to_int64_parse() -> None:
    """The largest amounts Kubernetes can hold still parse: 8Ei minus one byte, tiny fractions round to 0."""
    assert parse_quantity("9223372036854775807") == float(2**63 - 1)
    assert parse_quantity("7Ei") == float(7 * 2**60)
    assert parse_quantity("1e-1000000") == 0.0


def test_to_quantities_round_trip() -> None:
    """Formatting gives whole cores, binary suffixes and scalar units."""
    assert res(28000, 4, nvidia_gpu=1).to_quantities() == {"cpu": "28", "memory": "4Gi", GPU: "1"}
    assert Resource(500).to_quantities()["cpu"] == "500m"


def test_to_quantities_leaves_out_unlimited_dimensions() -> None:
    """An infinite dimension (an unlimited capability) is not listed, as a capability that does not name it."""
    inf = float("inf")
    assert Resource(inf, 4 * GI, {GPU: inf, "example.com/foo": 2000}).to_quantities() == {
        "memory": "4Gi",
        "example.com/foo": "2",
    }


def test_quota_names_are_not_resources() -> None:
    """The minResources of a PodGroup made by Volcano's controller: its quota names are skipped, as
    Volcano's NewResource skips them; extended, hugepages and attachable-volume names are resources."""
    resource = Resource.from_list(
        {
            "cpu": "2",
            "memory": "1Gi",
            "pods": "2",
            "requests.cpu": "2",
            "limits.memory": "1Gi",
            "count/pods": "2",
            "requests.nvidia.com/gpu": "1",
            "nvidia.com/gpu": "1",
            "hugepages-2Mi": "4Mi",
            "attachable-volumes-csi-x": "3",
        }
    )
    assert (resource.milli_cpu, resource.memory, resource.max_task_num) == (2000, 2**30, 2)
    assert resource.scalars == {
        "nvidia.com/gpu": 1000,
        "hugepages-2Mi": 4 * 2**20 * 1000,
        "attachable-volumes-csi-x": 3000,
    }


def test_less_equal_with_dimension_has_no_tolerance() -> None:
    """Volcano's LessEqualWithDimensionAndResourcesName is strict: a float deserved a fraction of a byte short
    of 4Gi does not hold 4Gi, where `less_equal` (with its 0.1 tolerance) does."""
    short_by_a_fraction = Resource(2000, 4294967295.9999995)
    wanted = Resource(2000, 4294967296.0)
    assert wanted.less_equal(short_by_a_fraction, ZERO)
    assert wanted.less_equal_with_dimension_and_resources_name(short_by_a_fraction, wanted) == (False, ["memory"])
    assert wanted.less_equal_with_dimension_and_resources_name(wanted, wanted) == (True, [])
