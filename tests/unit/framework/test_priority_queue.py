"""PriorityQueue and ordered: the order items come out in, strict or not."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.framework import PriorityQueue, ordered

T = TypeVar("T")
Item = tuple[int, int]


def _drain(queue: PriorityQueue[T]) -> list[T]:
    return [queue.pop() for _ in range(len(queue))]


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(st.integers(0, 4), max_size=40),
    pops=st.lists(st.booleans(), max_size=60),
)
def test_a_strict_queue_pops_as_the_tie_finding_one_and_asks_less_once_a_comparison(
    keys: list[int], pops: list[bool]
) -> None:
    """Over an order with a tie-break by id (as the session's job, task and queue orders), a strict queue
    gives the same items in the same order as one that asks `less` both ways, through pushes and pops
    interleaved, with at most as many calls of `less`."""
    calls = {"strict": 0, "both": 0}

    def counting(name: str) -> Callable[[Item, Item], bool]:
        def less(l: Item, r: Item) -> bool:
            calls[name] += 1
            return l < r  # (key, id): distinct items never tie

        return less

    items = [(key, uid) for uid, key in enumerate(keys)]
    half = len(items) // 2
    strict = PriorityQueue(counting("strict"), items[:half], strict=True)
    both = PriorityQueue(counting("both"), items[:half])
    rest = iter(items[half:])
    for pop in pops:
        if pop and len(strict):
            assert strict.pop() == both.pop()
        elif (item := next(rest, None)) is not None:
            strict.push(item)
            both.push(item)
    assert _drain(strict) == _drain(both)
    assert calls["strict"] <= calls["both"]


def test_equal_items_of_a_queue_that_is_not_strict_come_out_in_push_order() -> None:
    queue: PriorityQueue[tuple[int, str]] = PriorityQueue(
        lambda l, r: l[0] < r[0], [(1, "a"), (0, "b"), (1, "c"), (0, "d")]
    )
    assert _drain(queue) == [(0, "b"), (0, "d"), (1, "a"), (1, "c")]


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 4), max_size=40), presorted=st.booleans())
def test_a_strict_sort_gives_the_order_a_strict_queue_pops_asking_less_once_a_comparison(
    keys: list[int], presorted: bool
) -> None:
    """allocate sorts a job's pending tasks once instead of heaping them: the same order; items already
    in order cost one call of `less` each."""
    items = [(key, uid) for uid, key in enumerate(sorted(keys) if presorted else keys)]
    calls = 0

    def less(l: Item, r: Item) -> bool:
        nonlocal calls
        calls += 1
        return l < r

    got = ordered(less, items, strict=True)
    sorted_calls = calls
    assert got == _drain(PriorityQueue(less, items, strict=True)) == ordered(less, items)
    if presorted:
        assert sorted_calls == max(len(items) - 1, 0)
