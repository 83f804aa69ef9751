"""Random small clusters (e2e/parity/generator.py), played by vc-scheduler and by py-volcano: decisions agree
up to the ties Volcano breaks at random.

Opt-in, not part of CI: skipped unless `VOLCANO_SCHEDULER` names a vc-scheduler (docs/parity.md).
`PARITY_EXAMPLES` sets how many clusters are drawn (default 20); each divergent one is saved as a
scenario YAML under `PARITY_DIVERGENCE_DIR` (default /tmp/parity-divergences) with both outcomes in its
description; each case compared is a line of `compared.log` there: its differences by kind, then those
left up to a random tie (which node among equal ones, which pod of a job: `Decisions.loosened`), or
`node-tie` when another order of equal nodes, or each choice among equal-best nodes guided to Volcano's,
leads py-volcano to Volcano's decisions, `queue-order-tie` when proportion walking the queues in another
order does, `victim-order-tie` when victim candidates offered in reverse order do (e2e/parity/ties.py;
all saved under `node-ties/`, not a failure). The test fails listing
every other divergent case (no shrinking: a case takes tens of seconds).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings

from e2e.parity.generator import clusters
from e2e.parity.ties import random_tie
from e2e.parity.volcano import Comparison, Parity, skip_without_volcano
from py_volcano.simulation.scenario import Scenario

pytest_plugins = ["e2e.fixtures"]
pytestmark = skip_without_volcano()

#: Generated clusters are compared up to the ties Volcano breaks at random (e2e/parity/known.py, `loosen`).
GENERATED_TIE = "a generated cluster: equal-score nodes and equal pods of one job tie"


def _save(case: dict[str, Any], comparison: Comparison, folder: Path) -> Path:
    """Write the divergent case as a scenario, both outcomes in its description."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case['name']}.yaml"
    saved = {**case, "description": f"{case['description']}\n{comparison.report()}"}
    path.write_text(yaml.safe_dump(saved, sort_keys=False))
    return path


def test_generated_clusters_match_volcano(parity: Parity) -> None:
    """Over `PARITY_EXAMPLES` random clusters, vc-scheduler and py-volcano bind, evict and phase alike, up to
    a random tie: a generated cluster often has equal-score nodes or equal pods of a job, among which
    Volcano picks at random."""
    folder = Path(os.environ.get("PARITY_DIVERGENCE_DIR", "/tmp/parity-divergences"))
    compared: list[str] = []
    divergent: list[str] = []

    @settings(
        max_examples=int(os.environ.get("PARITY_EXAMPLES", "20")),
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=clusters())
    def play(case: dict[str, Any]) -> None:
        scenario = Scenario.model_validate(case)
        comparison = parity.compare(scenario)
        comparison.tie = GENERATED_TIE
        strict = comparison.volcano.differences(comparison.py_volcano)
        compared.append(case["name"])
        verdict = sorted(comparison.differences) or "same"
        if comparison.differences:
            tie = random_tie(scenario, comparison.volcano, comparison.jobs)
            if tie:
                verdict = tie
                _save(case, comparison, folder / "node-ties")
            else:
                divergent.append(f"{_save(case, comparison, folder)}: {comparison.differences}")
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "compared.log", "a") as log:
            log.write(f"{case['name']} {sorted(strict) or 'same'} up-to-ties {verdict}\n")

    play()
    assert not divergent, f"{len(divergent)} of {len(compared)} clusters differ:\n" + "\n".join(divergent)
