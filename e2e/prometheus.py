"""A real Prometheus for the e2e tests: scrapes targets on loopback every second, answers PromQL queries.

The binary is `prometheus` on PATH (Debian's package, installed by hack/install-tools.sh). Each
instance keeps its data and configuration in a folder of its own and listens on a free loopback port.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.controlplane import free_port
from e2e.harness import wait_for

__all__ = ["Prometheus"]


class Prometheus:
    """One `prometheus` process scraping `targets` (host:port) as job `job`, every second; with
    `honor_labels`, a target's own `instance` label is kept (a fixture standing for several nodes)."""

    def __init__(
        self, workdir: Path, targets: list[str], *, job: str = "py-volcano", honor_labels: bool = False
    ) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail("prometheus not on PATH: run `bash hack/install-tools.sh` (Debian's prometheus)", pytrace=False)
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [
                        {"job_name": job, "honor_labels": honor_labels, "static_configs": [{"targets": targets}]}
                    ],
                }
            )
        )
        self.job = job
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log_path = workdir / "prometheus.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address={self.url.removeprefix('http://')}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for("Prometheus ready", self._ready, timeout=60)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"prometheus exited {self.proc.returncode}:\n{self.tail()}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Evaluate `expr` now; return its vector (a scalar comes back as one unlabelled sample)."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            pytest.fail(f"Prometheus refused {expr!r}: {exc.read().decode(errors='replace')}", pytrace=False)
        data = body["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def value(self, expr: str) -> float | None:
        """Return the single value `expr` evaluates to now, None when it has no data."""
        result = self.query(expr)
        assert len(result) <= 1, f"{expr} returned {len(result)} series"
        return float(result[0]["value"][1]) if result else None

    def wait_scraped(self, timeout: float = 30.0) -> None:
        """Wait until every target has been scraped successfully at least once."""
        wait_for(
            f"{self.job} scraped",
            lambda: (result := self.query(f'up{{job="{self.job}"}}')) and all(r["value"][1] == "1" for r in result),
            timeout=timeout,
        )

    def tail(self, lines: int = 30) -> str:
        """Return the last log lines."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the process."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
