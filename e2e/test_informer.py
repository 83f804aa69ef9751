"""The pod informer (LIST, then WATCH from the LIST's version) against the real API server: what the store
holds matches the cluster through creations, changes, deletions, an API server restart and a version the
API server no longer keeps; the LIST is a streaming list where the API server serves one, else paged."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest

from e2e.harness import Rest, pod, token, wait_for
from py_volcano.cache import ApiClient, Store
from py_volcano.cache import informer as informer_module
from py_volcano.cache.listing import list_by_watch, list_pages
from py_volcano.cache.store import PODS, Kind
from py_volcano.settings import WatchingSettings

pytest_plugins = ["e2e.fixtures"]

T = TypeVar("T")

SETTINGS = WatchingSettings(list_retry=0.5, watch_timeout=60.0)


class Informed:
    """`inform` for pods on an event loop of its own thread, feeding a fresh Store."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.store = Store(scheduler_name=token("pv"))
        self.client: ApiClient = self.call(lambda: ApiClient.connect(kubeconfig=kubeconfig))
        self.stop_event: asyncio.Event = self.call(self._event)
        self.task: Future[None] = asyncio.run_coroutine_threadsafe(
            informer_module.inform(self.client, self.store, PODS, settings=SETTINGS, stop=self.stop_event), self.loop
        )

    @staticmethod
    async def _event() -> asyncio.Event:
        return asyncio.Event()

    def call(self, coro: Callable[[], Any]) -> Any:
        """Run a coroutine on the informer's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro(), self.loop).result(timeout=60)

    def read(self, fn: Callable[[Store], T]) -> T:
        """Read the store on its own loop, between two events."""

        async def reading() -> T:
            return fn(self.store)

        result: T = self.call(reading)
        return result

    def names(self, namespace: str) -> set[str]:
        """Return the names of the pods of `namespace` in the store."""
        return self.read(
            lambda store: {k.split("/", 1)[1] for k in store.records[PODS.name] if k.startswith(namespace + "/")}
        )

    def close(self) -> None:
        """Stop the informer, close its client and its loop."""
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.task.result(timeout=30)
        self.call(self.client.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def _api_names(rest: Rest, namespace: str) -> set[str]:
    return set(rest.pods(namespace))


def _label(informed: Informed, key: str, label: str) -> str | None:
    def read(store: Store) -> str | None:
        parsed = store.pod(key)
        return parsed.task.labels.get(label) if parsed is not None else None

    return informed.read(read)


def test_listed_then_watched_pods_match_the_api_server(rest: Rest, namespace: str, control_plane: Any) -> None:
    """Pods that exist before the LIST and pods created, changed and deleted after it all show."""
    for name in ("before-1", "before-2"):
        rest.create(pod(name, namespace, scheduler="nobody"))
    informed = Informed(str(control_plane.kubeconfig))
    try:
        wait_for("the LIST", lambda: informed.read(lambda store: PODS.name in store.synced))
        assert informed.names(namespace) == {"before-1", "before-2"}
        rest.create(pod("after", namespace, scheduler="nobody"))
        rest.delete("Pod", "before-1", namespace, grace=0)
        rest.ok(
            "PATCH",
            rest.path("Pod", namespace, "before-2"),
            {"metadata": {"labels": {"changed": "yes"}}},
            content_type="application/merge-patch+json",
        )
        wait_for("the watch", lambda: informed.names(namespace) == _api_names(rest, namespace) == {"before-2", "after"})
        wait_for("the label change", lambda: _label(informed, f"{namespace}/before-2", "changed") == "yes")
    finally:
        informed.close()


def test_the_watch_resumes_after_an_api_server_restart(rest: Rest, namespace: str, control_plane: Any) -> None:
    """A broken stream is resumed from the last version seen: what happens afterwards still shows."""
    rest.create(pod("kept", namespace, scheduler="nobody"))
    rest.create(pod("doomed", namespace, scheduler="nobody"))
    informed = Informed(str(control_plane.kubeconfig))
    try:
        wait_for("the LIST", lambda: informed.names(namespace) == {"kept", "doomed"})
        control_plane.restart_apiserver()
        rest.delete("Pod", "doomed", namespace, grace=0)
        rest.create(pod("new", namespace, scheduler="nobody"))
        wait_for("the resumed watch", lambda: informed.names(namespace) == {"kept", "new"}, timeout=90)
    finally:
        informed.close()


def test_a_version_the_api_server_no_longer_keeps_is_reported_as_expired(control_plane: Any, rest: Rest) -> None:
    """A watch from resourceVersion 1 (older than any the API server keeps) ends as expired, which
    makes `inform` LIST again rather than miss what happened since."""
    store = Store(scheduler_name=token("pv"))

    async def scenario() -> None:
        async with await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig)) as client:
            with pytest.raises(informer_module._Expired):
                await informer_module._watch(client, store, PODS, 1, settings=SETTINGS)

    asyncio.run(scenario())


def test_a_list_in_small_pages_gets_every_pod_once_and_a_reader_may_stop_early(
    rest: Rest, namespace: str, control_plane: Any
) -> None:
    """Pages are asked for one ahead of the reader; every pod comes once, and a reader that stops after
    the first page leaves no request running."""
    for index in range(5):
        rest.create(pod(f"paged-{index}", namespace, scheduler="nobody"))

    async def listed() -> tuple[list[list[str]], int]:
        client = await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig))
        try:
            pages = [
                [item["metadata"]["name"] for item in items if item["metadata"]["namespace"] == namespace]
                async for items, _ in list_pages(client, PODS, page_size=2)
            ]
            pending_before = len(asyncio.all_tasks())
            async with contextlib.aclosing(list_pages(client, PODS, page_size=2)) as first_page_only:
                async for _ in first_page_only:
                    break
            for _ in range(100):  # the cancelled request ends within a few turns of the loop
                if len(asyncio.all_tasks()) == pending_before:
                    break
                await asyncio.sleep(0.01)
            return pages, len(asyncio.all_tasks()) - pending_before
        finally:
            await client.close()

    pages, left = asyncio.run(listed())
    names = [name for page in pages for name in page]
    assert sorted(names) == [f"paged-{index}" for index in range(5)]
    assert len(pages) >= 3 and left == 0


def test_a_streaming_list_fills_the_store_and_its_stream_goes_on_as_the_watch(
    rest: Rest, namespace: str, control_plane: Any
) -> None:
    """Every pod comes as the stream's initial events, in batches, and the listing finishes at the version
    the end bookmark names; a pod created afterwards is the next event on the same stream, decoded without
    its managedFields and otherwise as the API server serves it."""
    for index in range(5):
        rest.create(pod(f"streamed-{index}", namespace, scheduler="nobody"))
    store = Store(scheduler_name=token("pv"))

    async def scenario() -> tuple[int, set[str], dict[str, Any]]:
        async with await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig)) as client:
            listed = await list_by_watch(client, store, PODS, batch=2, timeout=60)
            assert listed is not None, "the API server refused a streaming list"
            version, stream = listed
            names = {key.split("/", 1)[1] for key in store.records[PODS.name] if key.startswith(namespace + "/")}
            async with contextlib.aclosing(stream):
                await asyncio.to_thread(rest.create, pod("after", namespace, scheduler="nobody"))
                async for status, event in stream:
                    assert status == 200
                    if event["type"] != "BOOKMARK" and event["object"]["metadata"]["namespace"] == namespace:
                        return version, names, event
        raise AssertionError("the stream ended")

    version, names, event = asyncio.run(scenario())
    assert names == {f"streamed-{index}" for index in range(5)}
    assert PODS.name in store.synced and version > 0
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
    assert int(event["object"]["metadata"]["resourceVersion"]) > version
    # the API server writes managedFields; the stream's decoding leaves them out and nothing else
    served = rest.get("Pod", "after", namespace)
    assert served is not None and served["metadata"].pop("managedFields")
    assert event["object"]["spec"] == served["spec"]
    assert {**event["object"]["metadata"], "resourceVersion": ""} == {**served["metadata"], "resourceVersion": ""}


def test_a_kind_the_api_server_will_not_stream_is_listed_page_by_page(control_plane: Any) -> None:
    """A streaming list the API server answers with an error leaves the listing unfinished, and `inform`
    then LISTs page by page (here a version of a kind that is not served: the paged LIST takes it as empty)."""
    widgets = Kind("Numatopology", "nodeinfo.volcano.sh", "v9", "numatopologies", False)
    store = Store(scheduler_name=token("pv"))

    async def scenario() -> bool:
        async with await ApiClient.connect(kubeconfig=str(control_plane.kubeconfig)) as client:
            assert await list_by_watch(client, store, widgets, batch=2, timeout=60) is None
            assert widgets.name not in store.synced
            stop = asyncio.Event()
            informing = asyncio.ensure_future(
                informer_module.inform(client, store, widgets, settings=SETTINGS, stop=stop)
            )
            for _ in range(100):
                if widgets.name in store.synced:
                    break
                await asyncio.sleep(0.1)
            stop.set()
            await informing
            return widgets.name in store.synced

    assert asyncio.run(scenario())
