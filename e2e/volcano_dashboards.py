"""Volcano's two scheduler dashboards ("Volcano Scheduler Internal Metrics", "Volcano Queue Metrics"), read
from a checkout of Volcano's repository named by `VOLCANO_SOURCE`: opt-in, as no copy of them is kept here
(content of other repositories stays out of this one).

They live in the ConfigMap of Volcano's Helm chart (`installer/helm/chart/volcano/templates/grafana.yaml`),
rendered with `helm template` as a user installing the chart with metrics on would get it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

__all__ = ["DASHBOARD_KEYS", "SKIP_REASON", "volcano_dashboard_queries"]

#: The ConfigMap keys of the two scheduler dashboards.
DASHBOARD_KEYS = ("volcano-scheduler-internal-dashboard.json", "volcano-scheduler-queue-dashboard.json")
SKIP_REASON = "Volcano's dashboards: set VOLCANO_SOURCE to a checkout of volcano-sh/volcano (opt-in, not in CI)"


def volcano_dashboard_queries(helm: str) -> list[tuple[str, str, str]] | None:
    """Return (dashboard title, panel title, PromQL) of every panel target, None when VOLCANO_SOURCE is unset."""
    source = os.environ.get("VOLCANO_SOURCE")
    if not source:
        return None
    chart = Path(source) / "installer" / "helm" / "chart" / "volcano"
    rendered = subprocess.run(
        [helm, "template", "volcano", str(chart), "--set", "custom.metrics_enable=true",
         "--show-only", "templates/grafana.yaml"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout
    boards = [
        json.loads(data[key])
        for doc in yaml.safe_load_all(rendered)
        if isinstance(doc, dict) and (data := doc.get("data"))
        for key in DASHBOARD_KEYS
        if key in data
    ]
    if len(boards) != len(DASHBOARD_KEYS):
        raise RuntimeError(f"{chart}: expected the dashboards {DASHBOARD_KEYS} in templates/grafana.yaml")
    return [
        (board["title"], panel["title"], target["expr"])
        for board in boards
        for top in board["panels"]
        for panel in (top, *top.get("panels", []))
        for target in panel.get("targets", [])
        if target.get("expr")
    ]
