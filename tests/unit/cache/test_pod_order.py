"""PodOrder keeps the store's pods in snapshot order between snapshots: after any sequence of pods
entering, changing (job too) and leaving, `ordered` equals sorting the live pods afresh, through both the
path that inserts a few changes and the one that sorts after many, less the tasks of the jobs excluded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.cache.pod_order import PodOrder

_KEYS = st.sampled_from([f"ns/p-{index}" for index in range(40)])
_STEP = st.one_of(
    st.tuples(st.just("put"), _KEYS, st.integers(0, 5)),
    st.tuples(st.just("delete"), _KEYS, st.just(0)),
    st.tuples(st.just("snapshot"), st.just(""), st.integers(0, 3)),
    st.tuples(st.just("burst"), st.just(""), st.integers(0, 5)),
)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEP, max_size=60))
def test_the_order_kept_is_the_order_sorted_afresh(steps: list[tuple[str, str, int]]) -> None:
    order = PodOrder()
    live: dict[str, tuple[tuple[float, str], str]] = {}

    def put(key: str, creation: int) -> None:
        previous, current = live.get(key), ((float(creation), key), f"job-{creation % 3}")
        if previous == current:
            return
        if previous is not None:
            order.remove(previous[0], key, previous[1])
        order.add(current[0], key, current[1])
        live[key] = current

    def afresh(excluding: set[str]) -> list[str]:
        return [key for (_, key), job in sorted(live.values()) if job not in excluding]

    for action, key, creation in steps:
        if action == "put":
            put(key, creation)
        elif action == "delete" and key in live:
            gone = live.pop(key)
            order.remove(gone[0], key, gone[1])
        elif action == "burst":  # more changes than the few-insertions path takes
            for index in range(300):
                put(f"ns/q-{index}", creation + index % 3)
        elif action == "snapshot":
            excluding = {f"job-{index}" for index in range(creation)}
            assert order.ordered(excluding) == afresh(excluding)
    assert order.ordered() == afresh(set())
