"""The null scheduler: the fastest any scheduler can bind on this machine with creation in the window.

`python -m bench.null_scheduler --kubeconfig PATH --scheduler-name NAME [--concurrency N]` lists the
nodes once, then watches every pod of `spec.schedulerName=NAME` without a node and POSTs its binding at
once, round-robin over the nodes, with py-volcano's client and bind concurrency. It decides nothing, reads
no queue, keeps no cache: what is left is the watch, the JSON and the binding calls, the part of a
scheduler's work that no scheduling logic can remove. The bench runs it as a subprocess, as it runs
py-volcano, on the same workload; `e2e_over_null` is py-volcano's pods/s over its pods/s.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

from py_volcano.cache.client import ApiClient
from py_volcano.errors import ApiError
from py_volcano.settings import BindingSettings

__all__ = ["NullScheduler", "main"]


class NullScheduler:
    """Watch unbound pods of one scheduler name and bind each round-robin as soon as it is seen."""

    def __init__(self, client: ApiClient, scheduler_name: str) -> None:
        self.client = client
        self.selector = f"spec.schedulerName={scheduler_name},spec.nodeName="
        self.sent: set[str] = set()
        self.bound = 0
        self.errors = 0
        self._nodes: itertools.cycle[str] | None = None
        self._calls: set[asyncio.Task[None]] = set()

    async def nodes(self) -> list[str]:
        """Return the names of the cluster's nodes."""
        status, body = await self.client.request("GET", "/api/v1/nodes")
        if status != 200:
            raise ApiError(f"GET /api/v1/nodes: {status}", status=status)
        return sorted(item["metadata"]["name"] for item in body["items"])

    async def run(self) -> None:
        """List the nodes, then follow the pods until cancelled, re-opening the watch when it ends."""
        self._nodes = itertools.cycle(await self.nodes())
        version = ""
        while True:
            params = {"fieldSelector": self.selector}
            if not version:
                status, body = await self.client.request("GET", "/api/v1/pods", params=params)
                version = body["metadata"]["resourceVersion"]
                for pod in body["items"]:
                    self._bind(pod)
                print("watching", flush=True)  # the bench starts creating pods on this line
            params |= {"watch": "1", "resourceVersion": version, "allowWatchBookmarks": "true"}
            try:
                async for status, event in self.client.stream("/api/v1/pods", params=params, timeout=60.0):
                    if status != 200 or event.get("type") == "ERROR":
                        version = ""
                        break
                    version = event["object"]["metadata"].get("resourceVersion", version)
                    if event["type"] == "ADDED":
                        self._bind(event["object"])
            except ApiError:
                await asyncio.sleep(0.5)

    def _bind(self, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        key = f"{metadata['namespace']}/{metadata['name']}"
        if key in self.sent or self._nodes is None:
            return
        self.sent.add(key)
        call = asyncio.create_task(self._post(metadata["namespace"], metadata["name"], next(self._nodes)))
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)

    async def _post(self, namespace: str, name: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            status, _ = await self.client.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body
            )
        except ApiError:
            status = 0
        if status in (200, 201):
            self.bound += 1
        else:
            self.errors += 1


async def _main(args: argparse.Namespace) -> None:
    client = await ApiClient.connect(kubeconfig=args.kubeconfig, concurrency=args.concurrency, timeout=120.0)
    try:
        await NullScheduler(client, args.scheduler_name).run()
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments and bind until killed."""
    parser = argparse.ArgumentParser(prog="python -m bench.null_scheduler", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler-name", default="null-scheduler")
    parser.add_argument(
        "--concurrency", type=int, default=BindingSettings().concurrency, help="binds in flight (py-volcano's default)"
    )
    asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
