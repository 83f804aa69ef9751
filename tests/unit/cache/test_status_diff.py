"""The status diffs: exact patches from what was written and what a cycle wants."""

from __future__ import annotations

from typing import Any

import pytest

from py_volcano.api import GANG_READY, NOT_ENOUGH_PODS, ConditionUpdate
from py_volcano.cache.status_diff import (
    NOTE_LIMIT,
    GroupState,
    apply_conditions,
    changed_conditions,
    event_body,
    map_patch,
    micro_time,
    pod_group_diff,
    pod_scheduled_patch,
    rfc3339,
    status_patch,
)

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:00:05Z"
MESSAGE = (
    "3/5 tasks unschedulable: 0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 Insufficient cpu"
)


def unschedulable(
    message: str = MESSAGE, *, status: str = "True", since: str = T0, reason: str = "NotEnoughResources"
) -> dict[str, Any]:
    return {
        "type": "Unschedulable",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def scheduled(since: str = T0) -> dict[str, Any]:
    return {
        "type": "Scheduled",
        "status": "True",
        "reason": GANG_READY,
        "message": "",
        "lastTransitionTime": since,
    }


FOREIGN = {"type": "Ready", "status": "True", "lastTransitionTime": "2025-12-31T00:00:00Z"}
#: The conditions a cycle sets on a gang it could not place, and on one it placed.
UNSCHEDULABLE_GANG = (ConditionUpdate("Unschedulable", "True", "NotEnoughResources", MESSAGE),)
PLACED_GANG = (
    ConditionUpdate("Scheduled", "True", GANG_READY),
    ConditionUpdate("Unschedulable", "False", "Scheduled"),
)


def test_times_are_kubernetes_time_and_micro_time() -> None:
    assert rfc3339(1_767_225_600.75) == "2026-01-01T00:00:00Z"
    assert micro_time(1_767_225_600.5) == "2026-01-01T00:00:00.500000Z"


@pytest.mark.parametrize(
    ("current", "update", "changes"),
    [
        pytest.param(
            [], ConditionUpdate("Unschedulable", "True", "NotEnoughResources", MESSAGE), True, id="new type"
        ),
        pytest.param(
            [unschedulable()],
            ConditionUpdate("Unschedulable", "True", "NotEnoughResources", MESSAGE),
            False,
            id="same",
        ),
        pytest.param(
            [unschedulable()],
            ConditionUpdate("Unschedulable", "True", "NotEnoughResources", "other"),
            True,
            id="message",
        ),
        pytest.param(
            [unschedulable()],
            ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_PODS, MESSAGE),
            True,
            id="reason",
        ),
        pytest.param(
            [unschedulable()],
            ConditionUpdate("Unschedulable", "False", "NotEnoughResources", MESSAGE),
            True,
            id="status",
        ),
        pytest.param(
            [{"type": "Scheduled", "status": "True", "reason": GANG_READY}],
            ConditionUpdate("Scheduled", "True", GANG_READY),
            False,
            id="absent message equals empty message",
        ),
    ],
)
def test_changed_conditions_ignores_times(
    current: list[dict[str, Any]], update: ConditionUpdate, changes: bool
) -> None:
    assert changed_conditions(current, [update]) == ([update] if changes else [])


def test_apply_conditions_keeps_the_transition_time_while_the_status_stays() -> None:
    result = apply_conditions(
        [FOREIGN, unschedulable()],
        [ConditionUpdate("Unschedulable", "True", "NotEnoughResources", "new")],
        T1,
    )
    assert result == [FOREIGN, unschedulable("new", since=T0)]


def test_apply_conditions_moves_the_transition_time_when_the_status_changes() -> None:
    result = apply_conditions(
        [unschedulable(), FOREIGN], [ConditionUpdate("Unschedulable", "False", "Scheduled")], T1
    )
    assert result == [unschedulable("", status="False", since=T1, reason="Scheduled"), FOREIGN]


def test_apply_conditions_appends_new_types_and_leaves_the_input_alone() -> None:
    current = [FOREIGN]
    result = apply_conditions(current, [ConditionUpdate("Scheduled", "True", GANG_READY)], T1)
    assert result == [FOREIGN, scheduled(T1)]
    assert current == [FOREIGN]


@pytest.mark.parametrize(
    ("conditions", "current", "expected"),
    [
        pytest.param(
            (ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_PODS, MESSAGE),),
            [],
            [ConditionUpdate("Unschedulable", "True", NOT_ENOUGH_PODS, MESSAGE)],
            id="unschedulable gang",
        ),
        pytest.param(PLACED_GANG, [], [ConditionUpdate("Scheduled", "True", GANG_READY)], id="placed gang"),
        pytest.param(
            PLACED_GANG,
            [unschedulable()],
            [
                ConditionUpdate("Scheduled", "True", GANG_READY),
                ConditionUpdate("Unschedulable", "False", "Scheduled"),
            ],
            id="placed gang with extra unschedulable pods clears a stale Unschedulable",
        ),
        pytest.param(
            PLACED_GANG,
            [unschedulable(status="False")],
            [ConditionUpdate("Scheduled", "True", GANG_READY)],
            id="already cleared",
        ),
        pytest.param((), [unschedulable()], [], id="nothing said: conditions stay"),
    ],
)
def test_a_cycles_conditions_change_only_what_differs_and_false_only_retracts(
    conditions: tuple[ConditionUpdate, ...], current: list[dict[str, Any]], expected: list[ConditionUpdate]
) -> None:
    assert changed_conditions(current, conditions) == expected


def test_first_write_of_an_unschedulable_group_writes_everything() -> None:
    state = GroupState(phase="Inqueue", conditions=UNSCHEDULABLE_GANG)
    diff = pod_group_diff({}, [FOREIGN], state, T0)
    assert diff.patch == {
        "status": {
            "phase": "Inqueue",
            "running": 0,
            "succeeded": 0,
            "failed": 0,
            "conditions": [FOREIGN, unschedulable()],
        }
    }
    assert diff.status == diff.patch["status"]
    assert diff.changed == [ConditionUpdate("Unschedulable", "True", "NotEnoughResources", MESSAGE)]


def test_an_identical_cycle_writes_nothing() -> None:
    state = GroupState(phase="Inqueue", conditions=UNSCHEDULABLE_GANG)
    first = pod_group_diff({}, [], state, T0)
    again = pod_group_diff(first.status, [], state, T1)
    assert again.patch is None
    assert again.changed == []
    assert again.status == first.status


def test_observed_conditions_spare_a_write_after_a_restart() -> None:
    """The counts are not observable, so they are written; the condition already on the object is not."""
    diff = pod_group_diff({}, [unschedulable()], GroupState(phase="Inqueue", conditions=UNSCHEDULABLE_GANG), T1)
    assert diff.patch == {"status": {"phase": "Inqueue", "running": 0, "succeeded": 0, "failed": 0}}
    assert diff.changed == []


def test_a_new_message_patches_only_the_conditions() -> None:
    written = pod_group_diff({}, [], GroupState(phase="Inqueue", conditions=UNSCHEDULABLE_GANG), T0).status
    diff = pod_group_diff(
        written,
        [],
        GroupState(
            phase="Inqueue",
            conditions=(
                ConditionUpdate("Unschedulable", "True", "NotEnoughResources", "1/5 tasks unschedulable: x"),
            ),
        ),
        T1,
    )
    assert diff.patch == {"status": {"conditions": [unschedulable("1/5 tasks unschedulable: x", since=T0)]}}


def test_placing_the_gang_adds_scheduled_and_clears_unschedulable() -> None:
    written = pod_group_diff({}, [], GroupState(phase="Inqueue", conditions=UNSCHEDULABLE_GANG), T0).status
    diff = pod_group_diff(written, [], GroupState(phase="Inqueue", conditions=PLACED_GANG), T1)
    assert diff.patch == {
        "status": {
            "conditions": [unschedulable("", status="False", since=T1, reason="Scheduled"), scheduled(T1)],
        }
    }


def test_running_counts_patch_alone() -> None:
    written = pod_group_diff({}, [], GroupState(phase="Inqueue", conditions=PLACED_GANG), T0).status
    diff = pod_group_diff(written, [], GroupState(phase="Running", running=3, conditions=PLACED_GANG), T1)
    assert diff.patch == {"status": {"phase": "Running", "running": 3}}


def test_map_patch_nulls_removed_keys() -> None:
    assert map_patch({"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}, {"cpu": "1", "memory": "1Gi"}) == {
        "cpu": "1",
        "nvidia.com/gpu": None,
    }


@pytest.mark.parametrize(
    ("previous", "desired", "patch"),
    [
        pytest.param(
            {},
            {"state": "Open", "pending": 1, "allocated": {"cpu": "0", "memory": "0"}},
            {"status": {"state": "Open", "pending": 1, "allocated": {"cpu": "0", "memory": "0"}}},
            id="first write",
        ),
        pytest.param(
            {"state": "Open", "pending": 1, "allocated": {"cpu": "0", "memory": "0"}},
            {"state": "Open", "pending": 1, "allocated": {"cpu": "0", "memory": "0"}},
            None,
            id="unchanged",
        ),
        pytest.param(
            {
                "state": "Open",
                "pending": 1,
                "running": 0,
                "allocated": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "2"},
            },
            {"state": "Open", "pending": 0, "running": 1, "allocated": {"cpu": "1500m", "memory": "0"}},
            {"status": {"pending": 0, "running": 1, "allocated": {"cpu": "1500m", "nvidia.com/gpu": None}}},
            id="counts move, a resource goes",
        ),
    ],
)
def test_status_patch(
    previous: dict[str, Any], desired: dict[str, Any], patch: dict[str, Any] | None
) -> None:
    assert status_patch(previous, desired) == patch


def test_pod_scheduled_patch_is_one_condition_with_a_uid_precondition() -> None:
    assert pod_scheduled_patch(uid="u-1", reason="Unschedulable", message=MESSAGE, since=T0) == {
        "metadata": {"uid": "u-1"},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": MESSAGE,
                    "lastProbeTime": None,
                    "lastTransitionTime": T0,
                }
            ]
        },
    }


def test_event_body() -> None:
    regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"}
    body = event_body(
        regarding=regarding,
        type_="Warning",
        reason="FailedScheduling",
        action="Scheduling",
        note=MESSAGE,
        name="p.1",
        event_time="2026-01-01T00:00:00.000000Z",
        controller="py-volcano",
        instance="py-volcano-host",
    )
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "ns"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "py-volcano",
        "reportingInstance": "py-volcano-host",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": regarding,
        "note": MESSAGE,
        "type": "Warning",
    }


def test_event_note_is_cut_to_the_api_limit_on_a_character_boundary() -> None:
    regarding = {"kind": "Pod", "namespace": "ns", "name": "p"}
    note = "é" * NOTE_LIMIT
    body = event_body(
        regarding=regarding,
        type_="Warning",
        reason="r",
        action="a",
        note=note,
        name="n",
        event_time="t",
        controller="c",
        instance="i",
    )
    assert len(body["note"].encode()) <= NOTE_LIMIT
    assert body["note"].endswith("...")
    assert body["note"].startswith("é" * 500)
