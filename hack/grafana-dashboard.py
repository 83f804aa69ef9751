#!/usr/bin/env python3
"""Write deploy/grafana/py-volcano-dashboard.json, the Grafana dashboard of docs/operations.md's metrics.

The panels are declared in `panels()`, row by row; the JSON is generated so that every panel has the
same shape. The unit tests check the committed file against this script (`--check`) and every query
against the metric table; the e2e tests run every query against a real Prometheus.

usage: hack/grafana-dashboard.py [--check]
  --check  write nothing; exit 1 when the committed dashboard differs from what this script makes
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "py-volcano-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "[$__rate_interval]"
QUEUE = '{queue_name="$queue"}'
FIGURES = [
    ("allocated", "allocated"),
    ("request", "requested"),
    ("deserved", "deserved"),
    ("capacity", "capability"),
    ("real_capacity", "real capability"),
    ("inqueue", "inqueue"),
]
PHASES = ("pending", "inqueue", "running", "unknown", "completed")

Queries = list[tuple[str, str]]


def quantile(q: str, metric: str, by: str = "le") -> str:
    """Return the `q` quantile of a histogram over the rate interval."""
    return f"histogram_quantile({q}, sum by ({by}) (rate({metric}_bucket{RATE})))"


class Board:
    """Panels laid out on Grafana's 24-column grid, left to right, row by row."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self.y = 0

    def _id(self) -> int:
        return len(self.panels) + 1

    def row(self, title: str, *, repeat: str = "") -> None:
        """Start a row of panels."""
        panel: dict[str, Any] = {
            "id": self._id(),
            "type": "row",
            "title": title,
            "collapsed": False,
            "panels": [],
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
        }
        if repeat:
            panel["repeat"] = repeat
        self.panels.append(panel)
        self.y += 1

    def next_line(self) -> None:
        """Go below the panels placed so far (all 8 high)."""
        self.y += 8

    def _panel(self, kind: str, title: str, description: str, queries: Queries, x: int, w: int) -> dict[str, Any]:
        targets = [
            {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "refId": chr(65 + i), "range": True}
            for i, (expr, legend) in enumerate(queries)
        ]
        panel = {
            "id": self._id(),
            "type": kind,
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "gridPos": {"h": 8, "w": w, "x": x, "y": self.y},
            "targets": targets,
        }
        self.panels.append(panel)
        return panel

    def timeseries(self, title: str, description: str, unit: str, queries: Queries, *, x: int, w: int = 8) -> None:
        """Add a time series panel."""
        panel = self._panel("timeseries", title, description, queries, x, w)
        custom = {"lineWidth": 1, "fillOpacity": 10, "showPoints": "never", "spanNulls": True}
        panel["fieldConfig"] = {"defaults": {"unit": unit, "custom": custom, "min": 0}, "overrides": []}
        panel["options"] = {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }

    def stat(self, title: str, unit: str, query: str, *, x: int, orange: float = 1) -> None:
        """Add a stat panel, orange from `orange` on."""
        panel = self._panel("stat", title, query, [(query, title.lower())], x, 4)
        steps = [{"color": "green", "value": None}, {"color": "orange", "value": orange}]
        panel["fieldConfig"] = {
            "defaults": {"unit": unit, "mappings": [], "thresholds": {"mode": "absolute", "steps": steps}},
            "overrides": [],
        }
        panel["options"] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "none",
            "textMode": "value_and_name",
            "orientation": "horizontal",
        }


def scheduler_rows(board: Board) -> None:
    """Cycle, action, plugin and task latency; attempts, binds, evictions, cycles, preemption."""
    board.row("Scheduler")
    cycle = "volcano_e2e_scheduling_latency_milliseconds"
    board.timeseries("Scheduling cycle latency", f"Duration of one scheduling cycle ({cycle}).", "ms",
                     [(quantile("0.5", cycle), "p50"), (quantile("0.99", cycle), "p99")], x=0)
    action = "volcano_action_scheduling_latency_milliseconds"
    board.timeseries("Action latency p99", f"p99 duration of each action ({action}).", "ms",
                     [(quantile("0.99", action, "le, action"), "{{action}}")], x=8)
    plugin = "volcano_plugin_scheduling_latency_milliseconds"
    board.timeseries("Plugin session latency p99", f"p99 duration of each plugin's session hooks ({plugin}).", "ms",
                     [(quantile("0.99", plugin, "le, plugin, OnSession"), "{{plugin}} {{OnSession}}")], x=16)
    board.next_line()
    for x, (title, metric, meaning) in zip(
        (0, 8, 16),
        (
            ("Schedule attempts", "volcano_schedule_attempts_total", "Task placement attempts"),
            ("Binds", "volcano_pod_binds_total", "Bind calls"),
            ("Evictions", "volcano_pod_evictions_total", "Eviction calls (blocked: refused by a PodDisruptionBudget)"),
        ),
        strict=True,
    ):
        board.timeseries(title, f"{meaning} per second by result ({metric}).", "ops",
                         [(f"sum by (result) (rate({metric}{RATE}))", "{{result}}")], x=x)
    board.next_line()
    task = "volcano_task_scheduling_latency_milliseconds"
    board.timeseries("Task scheduling latency", f"Pod creation to its allocation (Assumed) and to its bind (Bound) "
                     f"({task}).", "ms",
                     [(quantile("0.5", task, "le, stage"), "p50 {{stage}}"),
                      (quantile("0.99", task, "le, stage"), "p99 {{stage}}")], x=0)
    board.timeseries("Scheduling cycles", "Cycles run per second (volcano_scheduling_cycles_total); an idle cluster "
                     "skips cycles.", "ops", [(f"sum(rate(volcano_scheduling_cycles_total{RATE}))", "cycles")], x=8)
    board.timeseries("Preemption", "Preemption attempts per second (volcano_total_preemption_attempts) and the "
                     "victims offered on the last node preemption considered (volcano_pod_preemption_victims).",
                     "short", [(f"sum(rate(volcano_total_preemption_attempts{RATE}))", "attempts/s"),
                               ("max(volcano_pod_preemption_victims)", "victims")], x=16)
    board.next_line()


def job_rows(board: Board) -> None:
    """Job latency and duration, unschedulable jobs, job and namespace shares, retries."""
    board.row("Jobs")
    job = "volcano_e2e_job_scheduling_latency_milliseconds"
    board.timeseries("Job scheduling latency", f"PodGroup creation to each task allocation ({job}).", "ms",
                     [(quantile("0.5", job), "p50"), (quantile("0.99", job), "p99")], x=0)
    board.timeseries("Job scheduling duration by queue", "Average PodGroup creation to last allocation of the jobs "
                     "of each queue (volcano_e2e_job_scheduling_duration).", "ms",
                     [('avg by (queue) (volcano_e2e_job_scheduling_duration{queue=~"$queue"})', "{{queue}}")], x=8)
    board.timeseries("Unschedulable jobs", "Jobs short of minAvailable after the last cycle "
                     "(volcano_unschedule_job_count) and the tasks they lack (volcano_unschedule_task_count).",
                     "short", [("max(volcano_unschedule_job_count)", "jobs"),
                               ("sum(volcano_unschedule_task_count)", "tasks")], x=16)
    board.next_line()
    board.timeseries("Job share (top 10)", "Dominant share of the jobs with the largest (volcano_job_share).",
                     "percentunit", [("topk(10, volcano_job_share)", "{{job_ns}}/{{job_id}}")], x=0)
    board.timeseries("Namespace share", "Dominant share of what each namespace's jobs have allocated "
                     "(volcano_namespace_share).", "percentunit",
                     [("max by (namespace_name) (volcano_namespace_share)", "{{namespace_name}}")], x=8)
    board.timeseries("Job retries (top 10)", "Cycles per second that ended with a job short of minAvailable "
                     "(volcano_job_retry_counts).", "ops",
                     [(f"topk(10, rate(volcano_job_retry_counts{RATE}))", "{{job_id}}")], x=16)
    board.next_line()


def queue_rows(board: Board) -> None:
    """Every queue's share, overuse and weight; then a repeated row per selected queue."""
    board.row("Queues")
    for x, (title, metric, unit) in zip(
        (0, 8, 16),
        (
            ("Queue share", "volcano_queue_share", "percentunit"),
            ("Overused queues", "volcano_queue_overused", "none"),
            ("Queue weight", "volcano_queue_weight", "none"),
        ),
        strict=True,
    ):
        board.timeseries(title, metric, unit,
                         [(f'max by (queue_name) ({metric}{{queue_name=~"$queue"}})', "{{queue_name}}")], x=x)
    board.next_line()
    board.row("Queue $queue", repeat="queue")
    board.timeseries("CPU", "Cores allocated, requested, deserved, capability, real capability and reserved by "
                     "admitted jobs (volcano_queue_*_milli_cpu / 1000).", "none",
                     [(f"max(volcano_queue_{f}_milli_cpu{QUEUE}) / 1000", legend) for f, legend in FIGURES], x=0)
    board.timeseries("Memory", "volcano_queue_*_memory_bytes", "bytes",
                     [(f"max(volcano_queue_{f}_memory_bytes{QUEUE})", legend) for f, legend in FIGURES], x=8)
    board.timeseries("Scalar resources", "Per resource, in units (volcano_queue_*_scalar_resources / 1000).", "none",
                     [(f"max by (resource) (volcano_queue_{f}_scalar_resources{QUEUE}) / 1000",
                       f"{legend} {{{{resource}}}}") for f, legend in FIGURES], x=16)
    board.next_line()
    board.stat("Share", "percentunit", f"max(volcano_queue_share{QUEUE})", x=0)
    board.stat("Overused", "none", f"max(volcano_queue_overused{QUEUE})", x=4)
    board.stat("Weight", "none", f"max(volcano_queue_weight{QUEUE})", x=8, orange=1e9)
    board.timeseries("PodGroups", "PodGroups of the queue per phase (volcano_queue_pod_group_*_count).", "none",
                     [(f"max(volcano_queue_pod_group_{phase}_count{QUEUE})", phase) for phase in PHASES], x=12, w=12)
    board.next_line()


def dashboard() -> dict[str, Any]:
    """Return the whole dashboard."""
    board = Board()
    scheduler_rows(board)
    job_rows(board)
    queue_rows(board)
    queue_variable = "label_values(volcano_queue_weight, queue_name)"
    return {
        "title": "py-volcano",
        "uid": "py-volcano",
        "description": "py-volcano scheduler under Volcano's metric names: scheduling latency, binds, evictions, "
        "preemption, jobs, and per-queue resources and share.",
        "tags": ["py-volcano", "volcano", "scheduler"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 2,
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard",
        }]},
        "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0, "refresh": 1, "regex": "", "includeAll": False, "multi": False, "options": []},
            {"name": "queue", "label": "Queue", "type": "query", "datasource": DATASOURCE,
             "definition": queue_variable, "query": {"query": queue_variable, "refId": "queue"},
             "current": {}, "hide": 0, "refresh": 2, "regex": "", "sort": 1, "includeAll": True, "multi": True,
             "options": []},
        ]},
        "panels": board.panels,
    }


def main(argv: list[str]) -> int:
    text = json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"
    if "--check" in argv:
        if OUTPUT.read_text() != text:
            print("grafana-dashboard: deploy/grafana/py-volcano-dashboard.json is stale: run hack/grafana-dashboard.py",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
