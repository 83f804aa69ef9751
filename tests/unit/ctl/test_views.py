"""`queues` and `jobs`: rows from the objects as the scheduler writes them, as tables, JSON and YAML."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from py_volcano.api import EXPLAIN_ANNOTATION, QUEUE_FIGURES_ANNOTATION
from py_volcano.cli import KUBECTL_PLUGIN, build_parser
from py_volcano.ctl import render, views

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
FIGURES = {"deserved": {"cpu": "3", "memory": "6Gi"}, "capability": {"cpu": "8"}, "share": 0.667, "overused": False}


def queue(name: str, *, figures: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    annotations = {QUEUE_FIGURES_ANNOTATION: json.dumps(figures)} if figures is not None else {}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"weight": 2, "capability": {"cpu": "16"}},
        "status": status,
    }


def group(name: str, *, phase: str, queue: str = "default", note: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {EXPLAIN_ANNOTATION: json.dumps(note)} if note else {}
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T11:55:00Z",
                     "annotations": annotations},
        "spec": {"minMember": 3, "queue": queue},
        "status": {"phase": phase, "running": 1},
    }


def pending_pod(name: str, group: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}}}


QUEUES = [
    queue("team-b", state="Closed"),
    queue("team-a", figures=FIGURES, state="Open", pending=2, inqueue=1, running=4,
          allocated={"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}),
]


def test_a_queue_row_holds_the_figures_the_scheduler_wrote() -> None:
    """Allocated from status; deserved and capability from the scheduler's annotation (the spec's
    capability only when it wrote none); rows by name."""
    rows = views.queue_rows(QUEUES)
    assert [row["name"] for row in rows] == ["team-a", "team-b"]
    assert rows[0] == {
        "name": "team-a",
        "state": "Open",
        "weight": 2,
        "parent": "",
        "share": 0.667,
        "overused": False,
        "podGroups": {"pending": 2, "inqueue": 1, "running": 4, "unknown": 0, "completed": 0},
        "resources": {
            "cpu": {"allocated": "2", "deserved": "3", "capability": "8", "realCapability": None, "guarantee": None},
            "memory": {"allocated": "4Gi", "deserved": "6Gi", "capability": None, "realCapability": None,
                       "guarantee": None},
            "nvidia.com/gpu": {"allocated": "1", "deserved": None, "capability": None, "realCapability": None,
                               "guarantee": None},
        },
    }
    assert rows[1]["share"] is None and rows[1]["resources"]["cpu"]["capability"] == "16"


def test_the_queues_table_has_a_column_per_resource() -> None:
    """`-` for what is unknown or unlimited, 0 for nothing allocated."""
    assert render.queues_table(views.queue_rows(QUEUES)).splitlines() == [
        "NAME     STATE    WEIGHT   PARENT   SHARE   PENDING   INQUEUE   RUNNING   CPU ALLOC/DESERVED/CAP   "
        "MEMORY ALLOC/DESERVED/CAP   NVIDIA.COM/GPU ALLOC/DESERVED/CAP",
        "team-a   Open     2        -        0.67    2         1         4         2/3/8                    "
        "4Gi/6Gi/-                   1/-/-",
        "team-b   Closed   2        -        -       0         0         0         0/-/16                   "
        "0/-/-                       0/-/-",
    ]


GROUPS = [
    group("b", phase="Inqueue", note={"reason": "NoNodeFits"}),
    group("a", phase="Running"),
    group("c", phase="Pending", queue="other"),
]
PODS = [pending_pod("b-0", "b"), pending_pod("b-1", "b"), pending_pod("a-2", "a")]


def test_job_rows_count_pending_pods_and_say_why_a_job_waits() -> None:
    """Pending pods are counted per PodGroup; `waiting` is the reason the scheduler wrote."""
    rows = views.job_rows(GROUPS, PODS, now=NOW, queue="default")
    assert [(r["name"], r["phase"], r["minMember"], r["running"], r["pending"], r["age"], r["waiting"])
            for r in rows] == [("a", "Running", 3, 1, 1, "5m", ""), ("b", "Inqueue", 3, 1, 2, "5m", "NoNodeFits")]


def test_the_jobs_table_shows_namespaces_only_across_namespaces() -> None:
    """kubectl's habit: a NAMESPACE column when listing every namespace."""
    rows = views.job_rows(GROUPS, PODS, now=NOW, queue=None)
    assert render.jobs_table(rows, namespaces=False).splitlines()[0].split() == [
        "NAME", "QUEUE", "PHASE", "MIN", "RUNNING", "PENDING", "AGE", "WAITING"
    ]
    lines = render.jobs_table(rows, namespaces=True).splitlines()
    assert lines[0].startswith("NAMESPACE   NAME")
    assert lines[2].split() == ["ns", "b", "default", "Inqueue", "3", "1", "2", "5m", "NoNodeFits"]
    assert lines[3].split() == ["ns", "c", "other", "Pending", "3", "1", "0", "5m", "-"]


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_hold_the_rows_as_built(output: str) -> None:
    """Scripts read the same rows the table shows."""
    rows = views.queue_rows(QUEUES)
    text = render.dump(rows, output)
    assert (json.loads(text) if output == "json" else yaml.safe_load(text)) == rows


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        pytest.param("2026-01-01T11:59:15Z", "45s", id="seconds"),
        pytest.param("2026-01-01T07:00:00Z", "5h", id="hours"),
        pytest.param("2025-12-29T12:00:00Z", "3d", id="days"),
        pytest.param(None, "?", id="missing"),
    ],
)
def test_age_is_kubectls_short_form(stamp: str | None, expected: str) -> None:
    assert views.age(stamp, NOW) == expected


def test_an_unreadable_annotation_counts_as_none() -> None:
    """A hand-edited annotation that is not a JSON object is ignored, not fatal."""
    obj = {"metadata": {"annotations": {QUEUE_FIGURES_ANNOTATION: "[1, 2"}}}
    assert views.annotation_json(obj, QUEUE_FIGURES_ANNOTATION) == {}


def test_the_kubectl_plugin_parses_the_same_commands() -> None:
    """`kubectl py-volcano` is the same parser under kubectl's name."""
    parser = build_parser(KUBECTL_PLUGIN)
    assert parser.prog == "kubectl py-volcano"
    args = parser.parse_args(["jobs", "-n", "ns", "--queue", "q", "-o", "yaml"])
    assert (args.command, args.namespace, args.queue, args.output) == ("jobs", "ns", "q", "yaml")
    args = parser.parse_args(["queue", "close", "team-a"])
    assert (args.action, args.name, args.output) == ("close", "team-a", "table")


@pytest.mark.parametrize(
    ("target", "parsed"),
    [
        pytest.param("train-0", ("pod", "train-0"), id="bare-pod"),
        pytest.param("pod/train-0", ("pod", "train-0"), id="pod"),
        pytest.param("pg/train", ("podgroup", "train"), id="pg"),
        pytest.param("PodGroup/train", ("podgroup", "train"), id="podgroup"),
    ],
)
def test_explain_takes_a_pod_or_a_podgroup(target: str, parsed: tuple[str, str]) -> None:
    assert build_parser().parse_args(["explain", target]).target == parsed


def test_explain_refuses_another_kind_as_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 with the usage line, as every bad argument."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["explain", "deployment/web"])
    assert exited.value.code == 2
    assert "'deployment/web': name a pod" in capsys.readouterr().err
