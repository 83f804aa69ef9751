"""Tier semantics (docs/semantics.md, "Dispatch over tiers"): starving, votes, victim intersection."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from py_volcano.api import Resource, TaskID, TaskInfo, Vote
from py_volcano.framework import dispatch


def task(name: str) -> TaskInfo:
    return TaskInfo(uid=TaskID(name), name=name, namespace="ns", resreq=Resource())


A, B, C = task("a"), task("b"), task("c")


def offers(*tasks: TaskInfo, vote: Vote = Vote.PERMIT) -> dispatch.VictimFn:
    return lambda preemptor, candidates: (list(tasks), vote)


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param([[offers(A, B), offers(B, C)]], ["b"], id="intersection-inside-a-tier"),
        pytest.param([[offers(A, vote=Vote.ABSTAIN), offers(B)]], ["b"], id="abstainer-ignored"),
        pytest.param([[offers(), offers(A)], [offers(C)]], ["c"], id="empty-answer-defers-to-next-tier"),
        pytest.param([[offers(A)], [offers(C)]], ["a"], id="first-deciding-tier-wins"),
        pytest.param([[offers(A), offers(B)], [offers(C)]], ["c"], id="empty-intersection-defers"),
        pytest.param(
            [[offers(A), offers(B), offers(A, B, C)], [offers(C)]], ["a", "b", "c"], id="empty-intersection-restarts"
        ),
        pytest.param([[offers()], [offers()]], [], id="nobody-offers"),
    ],
)
def test_tiered_victims(tiers: list[list[dispatch.VictimFn]], expected: list[str]) -> None:
    """Victims are intersected inside a tier; an empty tier result does not veto."""
    assert [t.name for t in dispatch.tiered_victims(tiers, A, [A, B, C])] == expected


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param([], True, id="no-plugin-permits"),
        pytest.param([[lambda j: Vote.ABSTAIN]], True, id="abstention-permits"),
        pytest.param([[lambda j: Vote.PERMIT], [lambda j: Vote.REJECT]], True, id="permit-in-first-tier-decides"),
        pytest.param([[lambda j: Vote.PERMIT, lambda j: Vote.REJECT]], False, id="reject-in-same-tier-refuses"),
        pytest.param([[lambda j: Vote.ABSTAIN], [lambda j: Vote.REJECT]], False, id="reject-in-later-tier"),
    ],
)
def test_tiered_vote(tiers: list[list[Callable[[object], Vote]]], expected: bool) -> None:
    """Job enqueueable / pipelined voting."""
    assert dispatch.tiered_vote(tiers, object()) is expected


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param([], False, id="none-implements-not-starving"),
        pytest.param([[lambda j: True]], True, id="tier-says-starving"),
        pytest.param([[lambda j: True, lambda j: False]], False, id="any-plugin-says-not"),
        pytest.param([[lambda j: True], [lambda j: False]], True, id="first-tier-decides"),
    ],
)
def test_tiered_starving(tiers: list[list[Callable[[object], bool]]], expected: bool) -> None:
    """docs/semantics.md, "Starving"."""
    assert dispatch.tiered_starving(tiers, object()) is expected


def test_first_nonzero_orders_by_first_deciding_plugin() -> None:
    """Orderings walk tiers and plugins until one decides."""
    tiers = [[lambda l, r: 0, lambda l, r: 1], [lambda l, r: -1]]
    assert dispatch.first_nonzero(tiers, 1, 2) == 1
    assert dispatch.first_nonzero([[lambda l, r: 0]], 1, 2) == 0


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param([[lambda j: Vote.PERMIT], [lambda j: Vote.REJECT]], None, id="accepted-names-nobody"),
        pytest.param([[lambda j: Vote.ABSTAIN, lambda j: Vote.REJECT]], (0, 1), id="second-of-first-tier"),
        pytest.param([[lambda j: Vote.ABSTAIN], [lambda j: Vote.REJECT, lambda j: Vote.REJECT]], (1, 0), id="first"),
    ],
)
def test_tiered_veto_says_which_plugin_refused(
    tiers: list[list[Callable[[object], Vote]]], expected: tuple[int, int] | None
) -> None:
    """The refusing function's place (tier, index), so the session can name its plugin."""
    assert dispatch.tiered_veto(tiers, object()) == expected


def test_first_false_and_first_true_name_the_deciding_function() -> None:
    """`all_pass` fails, and `any_true` holds, at the place these return."""
    tiers: list[list[Callable[[object], bool]]] = [[lambda j: True], [lambda j: True, lambda j: False]]
    assert dispatch.first_false(tiers, object()) == (1, 1)
    assert dispatch.first_true(tiers, object()) == (0, 0)
    assert dispatch.first_true([[lambda j: False]], object()) is None
