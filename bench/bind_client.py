"""Binds per second: `py_volcano.cache.ApiClient` (aiohttp) vs the official client in a thread pool.

Usage: python bench/bind_client.py --kubeconfig PATH [--pods 2000] [--concurrency 32]

Creates a namespace and a plain Node (no kubelet or kwok touches it), then for each client creates
`--pods` unscheduled pods and times binding all of them through pods/binding with `--concurrency`
requests in flight. Pod creation is not timed. Prints one JSON line per client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from py_volcano.cache.client import ApiClient


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": "bench-nobody", "containers": [{"name": "c", "image": "pause"}]},
    }


def _binding(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def _create_pods(client: ApiClient, namespace: str, names: list[str]) -> None:
    async def one(name: str) -> None:
        status, body = await client.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=_pod(name))
        if status != 201:
            raise RuntimeError(f"create {name}: {status} {body}")

    await asyncio.gather(*(one(name) for name in names))


async def _bind_async(client: ApiClient, namespace: str, names: list[str], node: str) -> float:
    async def one(name: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        status, body = await client.request("POST", path, body=_binding(name, node))
        if status != 201:
            raise RuntimeError(f"bind {name}: {status} {body}")

    started = time.perf_counter()
    await asyncio.gather(*(one(name) for name in names))
    return time.perf_counter() - started


def _bind_threads(kubeconfig: str, namespace: str, names: list[str], node: str, threads: int) -> float:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    api_client.configuration.connection_pool_maxsize = threads
    api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] = threads
    core = client.CoreV1Api(api_client)

    def one(name: str) -> None:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        core.create_namespaced_binding(namespace, body, _preload_content=False)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, names))
    elapsed = time.perf_counter() - started
    api_client.close()
    return elapsed


async def _main(args: argparse.Namespace) -> None:
    client = await ApiClient.connect(kubeconfig=args.kubeconfig, concurrency=args.concurrency)
    namespace, node = f"bench-{secrets.token_hex(3)}", f"bench-node-{secrets.token_hex(3)}"
    await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    await client.request("POST", "/api/v1/nodes", body={"metadata": {"name": node}})
    while (await client.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default"))[0] != 200:
        await asyncio.sleep(0.2)
    try:
        for round_ in range(args.rounds):
            for which in ("aiohttp", "threads"):
                names = [f"{which}-{round_}-{i}" for i in range(args.pods)]
                await _create_pods(client, namespace, names)
                if which == "aiohttp":
                    seconds = await _bind_async(client, namespace, names, node)
                else:
                    seconds = await asyncio.to_thread(
                        _bind_threads, args.kubeconfig, namespace, names, node, args.concurrency
                    )
                report = {"client": which, "round": round_, "pods": args.pods, "seconds": round(seconds, 3)}
                report["binds_per_second"] = round(args.pods / seconds)
                print(json.dumps(report), flush=True)
    finally:
        # Bound pods on a node without kubelet never finish a graceful delete: remove them at once.
        await client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", body={"gracePeriodSeconds": 0})
        await client.request("DELETE", f"/api/v1/namespaces/{namespace}")
        await client.request("DELETE", f"/api/v1/nodes/{node}")
        await client.close()


def main() -> None:
    """Parse the arguments and run the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
