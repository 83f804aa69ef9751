"""PodGroup phases at the end of a cycle (docs/semantics.md, "PodGroup phases")."""

from __future__ import annotations

import pytest

from py_volcano.framework import parse_conf, run_cycle
from py_volcano.registry import default_registry
from tests.builders import cluster, node, pod, pod_group

REGISTRY = default_registry()


def terminating(manifest: dict) -> dict:  # type: ignore[type-arg]
    """The pod, being deleted (a Releasing task)."""
    manifest["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return manifest


def conf(actions: str):  # type: ignore[no-untyped-def]
    return parse_conf(
        f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang', REGISTRY
    )


def phase_after(actions: str, *objects: dict) -> str:  # type: ignore[type-arg]
    result = run_cycle(cluster(*objects), conf(actions), REGISTRY)
    return result.pod_groups["default/g"].phase.value  # type: ignore[index]


@pytest.mark.parametrize(
    ("actions", "objects", "expected"),
    [
        pytest.param("enqueue, allocate", [node(name="n"), pod_group(name="g"), pod(name="g-0", group="g")],
                     "Inqueue", id="bound-this-cycle-does-not-count-yet"),
        pytest.param("allocate", [node(name="n"), pod_group(name="g"), pod(name="g-0", group="g", cpu="64")],
                     "Inqueue", id="pending-promoted-without-enqueue"),
        pytest.param("enqueue, allocate", [node(name="n"), pod_group(name="g", phase="Inqueue"),
                                           pod(name="g-0", group="g", node_name="n")],
                     "Running", id="running-pods-reach-min-member"),
        pytest.param("enqueue, allocate", [node(name="n", cpu="2"), pod_group(name="g", min_member=2, phase="Running"),
                                           pod(name="g-0", group="g", node_name="n", cpu="2"),
                                           pod(name="g-1", group="g", cpu="2")],
                     "Unknown", id="running-but-gang-broken"),
        pytest.param("enqueue, allocate", [node(name="n", cpu="4"), pod_group(name="g", min_member=2, phase="Running"),
                                           pod(name="g-0", group="g", node_name="n", cpu="2"),
                                           pod(name="g-1", group="g", cpu="2")],
                     "Pending", id="gang-restored-this-cycle-is-pending-until-it-runs"),
        pytest.param("enqueue, allocate", [node(name="n", cpu="4"), pod_group(name="g", min_member=2, phase="Running"),
                                           pod(name="g-0", group="g", node_name="n", cpu="2"),
                                           terminating(pod(name="g-1", group="g", node_name="n", cpu="2"))],
                     "Running", id="only-terminating-placed-tasks-short-keeps-running"),
        pytest.param("enqueue, allocate", [node(name="n", cpu="4"), pod_group(name="g", min_member=2, phase="Running"),
                                           pod(name="g-0", group="g", node_name="n", cpu="2"),
                                           terminating(pod(name="g-1", group="g", node_name="n", cpu="2")),
                                           pod(name="g-2", group="g", cpu="4")],
                     "Unknown", id="terminating-and-a-waiting-task-is-unknown"),
        pytest.param("enqueue, allocate", [node(name="n"), pod_group(name="g", min_resources={"cpu": "100"}),
                                           pod(name="g-0", group="g")],
                     "Inqueue", id="min-resources-admitted-when-no-plugin-votes"),
    ],
)
def test_phase(actions: str, objects: list[dict], expected: str) -> None:  # type: ignore[type-arg]
    """The phase the scheduler writes after one cycle."""
    assert phase_after(actions, *objects) == expected
