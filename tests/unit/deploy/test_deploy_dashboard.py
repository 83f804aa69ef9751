"""The Grafana dashboard queries only the metrics docs/operations.md promises, the way their types allow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import operations_doc

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "deploy" / "grafana" / "py-volcano-dashboard.json"

_METRIC = re.compile(r"\bvolcano_[A-Za-z0-9_]+")
_HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")
_BY = re.compile(r"\bby\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"\b(volcano_[A-Za-z0-9_]+)\{([^}]*)\}")


def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions(board: dict[str, Any]) -> list[str]:
    exprs = [target["expr"] for panel in panels(board) for target in panel.get("targets", [])]
    exprs += [var["definition"] for var in board["templating"]["list"] if var["type"] == "query"]
    return exprs


def base_metric(series: str, table: dict[str, operations_doc.Metric]) -> str:
    """The documented metric a series belongs to: histogram series carry _bucket/_sum/_count."""
    for suffix in _HISTOGRAM_SERIES:
        stem = series.removesuffix(suffix)
        if stem != series and stem in table and table[stem].kind == "histogram":
            return stem
    return series


def test_dashboard_is_a_grafana_dashboard() -> None:
    board = dashboard()
    assert board["uid"] and board["title"]
    ids = [panel["id"] for panel in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(board):
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            for target in panel["targets"]:
                assert target["datasource"] == panel["datasource"], panel["title"]


def test_template_variables() -> None:
    variables = {var["name"]: var for var in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    queue = variables["queue"]
    assert queue["type"] == "query"
    assert queue["query"]["query"] == queue["definition"] == "label_values(volcano_queue_weight, queue_name)"


def test_every_queried_metric_is_documented() -> None:
    table = operations_doc.metrics()
    used = {
        base_metric(series, table) for expr in expressions(dashboard()) for series in _METRIC.findall(expr)
    }
    assert used, "no metric found in the dashboard"
    assert used - table.keys() == set(), "not in the metric table of docs/operations.md"


def test_metric_types_are_used_correctly() -> None:
    """Histograms only through their buckets/sum/count, counters only through rate()/increase()."""
    table = operations_doc.metrics()
    for expr in expressions(dashboard()):
        for series in _METRIC.findall(expr):
            metric = table.get(base_metric(series, table))
            if metric is None:
                continue
            if metric.kind == "histogram":
                assert series != metric.name, f"histogram {metric.name} queried bare in {expr}"
            if metric.kind == "counter":
                assert re.search(rf"\b(rate|irate|increase)\({series}\b", expr), (
                    f"counter {series} needs rate(): {expr}"
                )


def test_labels_exist_on_the_metrics() -> None:
    """Label matchers and `by (...)` groupings name only labels the table gives the metric."""
    table = operations_doc.metrics()
    for expr in expressions(dashboard()):
        series = _METRIC.findall(expr)
        known = set().union(
            *(table[base_metric(s, table)].labels for s in series if base_metric(s, table) in table)
        )
        if any(s.endswith("_bucket") for s in series):
            known.add("le")
        for name, matchers in _SELECTOR.findall(expr):
            for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers):
                assert label in table[base_metric(name, table)].labels, f"{name} has no label {label}: {expr}"
        for grouping in _BY.findall(expr):
            for label in filter(None, (part.strip() for part in grouping.split(","))):
                assert label in known, f"no metric in {expr!r} has label {label}"


@pytest.mark.parametrize(
    "metric",
    [
        "volcano_e2e_scheduling_latency_milliseconds",
        "volcano_action_scheduling_latency_milliseconds",
        "volcano_plugin_scheduling_latency_milliseconds",
        "volcano_task_scheduling_latency_milliseconds",
        "volcano_e2e_job_scheduling_latency_milliseconds",
        "volcano_e2e_job_scheduling_duration",
        "volcano_pod_binds_total",
        "volcano_pod_evictions_total",
        "volcano_schedule_attempts_total",
        "volcano_total_preemption_attempts",
        "volcano_pod_preemption_victims",
        "volcano_unschedule_job_count",
        "volcano_unschedule_task_count",
        "volcano_job_share",
        "volcano_namespace_share",
        *(
            f"volcano_queue_{which}_{res}"
            for which in ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")
            for res in ("milli_cpu", "memory_bytes", "scalar_resources")
        ),
        "volcano_queue_share",
        "volcano_queue_overused",
        *(
            f"volcano_queue_pod_group_{phase}_count"
            for phase in ("pending", "inqueue", "running", "unknown", "completed")
        ),
    ],
)
def test_required_panels_are_present(metric: str) -> None:
    table = operations_doc.metrics()
    used = {
        base_metric(series, table) for expr in expressions(dashboard()) for series in _METRIC.findall(expr)
    }
    assert metric in used


@pytest.mark.parametrize("quantile", ["0.5", "0.99"])
@pytest.mark.parametrize(
    "histogram", ["volcano_e2e_scheduling_latency_milliseconds", "volcano_task_scheduling_latency_milliseconds"]
)
def test_latency_quantiles(histogram: str, quantile: str) -> None:
    assert any(
        f"histogram_quantile({quantile}," in expr and f"{histogram}_bucket" in expr
        for expr in expressions(dashboard())
    )


def test_base_metric_only_strips_histogram_suffixes() -> None:
    table = {
        "a_seconds": operations_doc.Metric("a_seconds", "histogram", frozenset()),
        "b_count": operations_doc.Metric("b_count", "gauge", frozenset()),
    }
    assert base_metric("a_seconds_bucket", table) == "a_seconds"
    assert base_metric("b_count", table) == "b_count"
    assert base_metric("c_total_count", table) == "c_total_count"


def test_dashboard_is_what_its_generator_makes() -> None:
    """deploy/grafana/py-volcano-dashboard.json is generated by hack/grafana-dashboard.py, never edited by hand."""
    script = REPO / "hack" / "grafana-dashboard.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
