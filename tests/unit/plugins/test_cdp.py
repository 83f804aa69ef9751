"""cdp: a running pod is kept out of the victims while its `volcano.sh/cooldown-time` since it was scheduled
has not passed (Volcano's cdp plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import Vote
from py_volcano.framework import Session
from py_volcano.plugins.cdp import CooldownProtectionPlugin
from tests.builders import node, pod
from tests.unit.actions.sessions import task
from tests.unit.plugins.sessions import open_at

CONF = 'actions: "preempt"\ntiers:\n- plugins:\n  - name: cdp\n'
COOLDOWN = "volcano.sh/cooldown-time"


def _running(name: str, *, scheduled: float | None = 100.0, labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None, phase: str = "Running") -> dict[str, Any]:
    manifest = pod(name=name, node_name="n", phase=phase, labels=labels, annotations=annotations)
    if scheduled is not None:
        stamp = f"1970-01-01T00:{int(scheduled) // 60:02d}:{int(scheduled) % 60:02d}Z"
        manifest["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]
    return manifest


def _plugin(ssn: Session) -> CooldownProtectionPlugin:
    plugin = ssn.plugins["cdp"]
    assert isinstance(plugin, CooldownProtectionPlugin)
    return plugin


@pytest.mark.parametrize(
    ("victim", "now", "protected"),
    [
        pytest.param(_running("v", annotations={COOLDOWN: "600s"}), 699.0, True, id="annotation-within-cooldown"),
        pytest.param(_running("v", annotations={COOLDOWN: "600s"}), 700.0, False, id="cooldown-just-over"),
        pytest.param(_running("v", labels={COOLDOWN: "10m"}), 650.0, True, id="label"),
        pytest.param(_running("v", labels={COOLDOWN: "1s"}, annotations={COOLDOWN: "1h"}), 650.0, False,
                     id="label-wins-over-annotation"),
        pytest.param(_running("v"), 101.0, False, id="no-cooldown"),
        pytest.param(_running("v", annotations={COOLDOWN: "ten minutes"}), 101.0, False, id="unreadable"),
        pytest.param(_running("v", annotations={COOLDOWN: "1h"}, scheduled=None), 101.0, False,
                     id="no-pod-scheduled-condition"),
        pytest.param(_running("v", annotations={COOLDOWN: "1h"}, phase="Pending"), 101.0, False,
                     id="bound-but-not-running"),
    ],
)
def test_cooldown(victim: dict[str, Any], now: float, protected: bool) -> None:
    """Only a Running pod with a readable cooldown, within it since PodScheduled turned True, is protected."""
    ssn = open_at(CONF, node(name="n"), victim, pod(name="p"), now=now)
    v = task(ssn, "v")
    victims, vote = _plugin(ssn).victims(task(ssn, "p"), [v])
    assert vote == Vote.PERMIT
    assert victims == ([] if protected else [v])


def test_an_unreadable_cooldown_is_warned_about() -> None:
    """Volcano logs it and offers the pod; here the cycle's warnings name the pod."""
    ssn = open_at(CONF, node(name="n"), _running("v", annotations={COOLDOWN: "soon"}), pod(name="p"))
    _plugin(ssn).victims(task(ssn, "p"), [task(ssn, "v")])
    assert ssn.warnings == ["Pod default/v: volcano.sh/cooldown-time: 'soon' is not a duration; no cooldown"]


def test_an_empty_answer_still_votes_so_the_tier_defers() -> None:
    """Every candidate cooling down: cdp answers none with a permit, which empties its tier (Volcano's
    intersection), so a later tier decides; alone, there is no victim."""
    ssn = open_at(CONF, node(name="n"), _running("v", annotations={COOLDOWN: "1h"}), pod(name="p"), now=200.0)
    assert ssn.preemptable(task(ssn, "p"), [task(ssn, "v")]) == []
