"""PodOrder keeps the store's pods in snapshot order between snapshots: after any sequence of pods
entering, changing (job too) and leaving, `ordered` equals sorting the live pods afresh, through both the
path that inserts a few changes and the one that sorts after many, less the tasks of the jobs excluded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.cache.pod_order import PodOrder, Since

_KEYS = st.sampled_from([f"ns/p-{index}" for index in range(40)])
_STEP = st.one_of(
    st.tuples(st.just("put"), _KEYS, st.integers(0, 5)),
    st.tuples(st.just("delete"), _KEYS, st.just(0)),
    st.tuples(st.just("snapshot"), st.just(""), st.integers(0, 3)),
    st.tuples(st.just("burst"), st.just(""), st.integers(0, 5)),
)


class _Pods:
    """Pods put and deleted as a test's steps say, kept in a `PodOrder` and in `live` (key -> (order, job))."""

    def __init__(self, jobs: int) -> None:
        self.order = PodOrder()
        self.live: dict[str, tuple[tuple[float, str], str]] = {}
        self._jobs = jobs

    def put(self, key: str, creation: int) -> None:
        previous, current = self.live.get(key), ((float(creation), key), f"job-{creation % self._jobs}")
        if previous == current:
            return
        if previous is not None:
            self.order.remove(previous[0], key, previous[1])
        self.order.add(current[0], key, current[1])
        self.live[key] = current

    def step(self, action: str, key: str, creation: int) -> bool:
        """Apply a put, delete or burst step; False for a snapshot (the test's own)."""
        if action == "put":
            self.put(key, creation)
        elif action == "delete" and key in self.live:
            gone = self.live.pop(key)
            self.order.remove(gone[0], key, gone[1])
        elif action == "burst":  # more changes than the few-insertions path takes
            for index in range(300):
                self.put(f"ns/q-{index}", creation + index % 3)
        return action != "snapshot"

    def afresh(self, excluding: set[str]) -> list[str]:
        """The live pods sorted afresh, less the jobs `excluding` names."""
        return [key for (_, key), job in sorted(self.live.values()) if job not in excluding]


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEP, max_size=60))
def test_the_order_kept_is_the_order_sorted_afresh(steps: list[tuple[str, str, int]]) -> None:
    pods = _Pods(jobs=3)
    for action, key, creation in steps:
        if not pods.step(action, key, creation):
            excluding = {f"job-{index}" for index in range(creation)}
            assert pods.order.ordered(excluding) == pods.afresh(excluding)
    assert pods.order.ordered() == pods.afresh(set())


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEP, max_size=60), left_out=st.lists(st.sets(st.integers(0, 5)), min_size=1, max_size=8))
def test_the_order_shown_follows_how_the_jobs_left_out_change(
    steps: list[tuple[str, str, int]], left_out: list[set[int]]
) -> None:
    """Told how the jobs left out changed (`Since`: those entering, and the entries of those leaving as
    the last call saw them), `ordered` gives what filtering the whole order gives, pods of jobs left out
    added and removed meanwhile included."""
    pods = _Pods(jobs=6)
    seen: dict[str, tuple[tuple[float, str], str]] = {}  # live as the last `ordered` call saw it
    previous: set[str] = set()
    rounds = iter(left_out * 10)
    for action, key, creation in steps:
        if not pods.step(action, key, creation):
            excluding = {f"job-{index}" for index in next(rounds)}
            restored = [(at, pod, job) for pod, (at, job) in seen.items() if job in previous - excluding]
            since = Since(previous, excluding - previous, restored)
            assert pods.order.ordered(excluding, since) == pods.afresh(excluding)
            previous, seen = excluding, dict(pods.live)
