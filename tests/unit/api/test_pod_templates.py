"""PodTemplates: the pods of one template share their spec parts, and each pod parses as it would alone."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.api import PodTemplates, Resource, parse_pod
from py_volcano.errors import InvalidPod


def pod(name: str, *, cpu: Any = "1", node: str = "", **spec: Any) -> dict[str, Any]:
    """A pod manifest."""
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "schedulerName": "py-volcano",
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
        "status": {"phase": "Running" if node else "Pending"},
    }


def parse(obj: dict[str, Any], templates: PodTemplates, key: bytes | None) -> Any:
    """Parse `obj` with its spec parts taken from `templates` under `key`."""
    return parse_pod(obj, priority_classes={}, spec_parts=lambda spec, name: templates.parts(key, spec, name))


def test_the_pods_of_one_template_share_their_spec_parts() -> None:
    """The second pod of a key reads its parts from the first: the same objects, nothing parsed again."""
    templates = PodTemplates()
    first = parse(pod("a", node="n1", tolerations=[{"key": "k", "operator": "Exists"}]), templates, b"t")
    second = parse(pod("b", node="n2", tolerations=[{"key": "k", "operator": "Exists"}]), templates, b"t")
    assert second.task.resreq is first.task.resreq
    assert second.task.tolerations is first.task.tolerations
    assert (first.task.name, first.task.node_name, second.task.name, second.task.node_name) == ("a", "n1", "b", "n2")
    assert len(templates) == 1


def test_a_spec_that_fails_is_never_kept_and_each_pod_names_itself() -> None:
    """A broken spec raises for every pod that carries it, each error naming that pod."""
    templates = PodTemplates()
    for name in ("a", "b"):
        with pytest.raises(InvalidPod) as failure:
            parse(pod(name, cpu="lots"), templates, b"broken")
        assert f"ns/{name}" in str(failure.value)
        assert "spec.containers[0].resources.requests" in str(failure.value)
    assert len(templates) == 0


def test_no_key_reads_the_spec_every_time_and_a_full_cache_starts_again() -> None:
    """None keeps nothing; at `limit` keys the cache empties before it takes the next one."""
    templates = PodTemplates(limit=2)
    one, two = parse(pod("a"), templates, None), parse(pod("b"), templates, None)
    assert one.task.resreq is not two.task.resreq and len(templates) == 0
    for index, key in enumerate((b"x", b"y", b"z")):
        parse(pod(f"p{index}"), templates, key)
    assert len(templates) == 1


_SPECS = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.sampled_from(["zone", "disk"]), st.sampled_from(["a", "b"]), max_size=2),
        "tolerations": st.lists(
            st.fixed_dictionaries({"key": st.sampled_from(["k", "gpu"]), "operator": st.just("Exists")}), max_size=2
        ),
        "priority": st.integers(-5, 5),
        "overhead": st.fixed_dictionaries({"cpu": st.sampled_from(["100m", "1"])}),
    },
)


@settings(max_examples=60, deadline=None)
@given(specs=st.lists(st.tuples(_SPECS, st.sampled_from(["1", "250m", "2"])), min_size=1, max_size=6))
def test_parsing_through_templates_gives_what_parsing_alone_gives(specs: list[tuple[dict[str, Any], str]]) -> None:
    """Keyed by the spec's own text (as the store keys them), every pod parses to what it parses alone."""
    templates = PodTemplates()
    for index, (spec, cpu) in enumerate(specs * 2):
        obj = pod(f"p{index}", cpu=cpu, node=f"n{index}", **copy.deepcopy(spec))
        key = repr(sorted((k, repr(v)) for k, v in obj["spec"].items() if k != "nodeName")).encode()
        alone = parse_pod(copy.deepcopy(obj), priority_classes={}).task
        shared = parse(obj, templates, key).task
        assert _amounts(shared.resreq) == _amounts(alone.resreq)
        for slot in ("node_selector", "tolerations", "priority", "node_name", "name", "host_ports"):
            assert getattr(shared, slot) == getattr(alone, slot), slot


def _amounts(resource: Resource) -> tuple[float, float, dict[str, float]]:
    return resource.milli_cpu, resource.memory, dict(resource.scalars)
