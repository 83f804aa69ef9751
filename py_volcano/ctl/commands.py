"""The operator's subcommands of `py-volcano` (and `kubectl py-volcano`): `queues`, `queue open|close`,
`jobs`, `explain`. Each reads the cluster through the kubeconfig, prints a table (or `-o json|yaml`), and
exits 0, 1 when the API server refuses or the object does not exist, 2 on bad usage or an unusable
kubeconfig.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from py_volcano.api import GROUP_NAME_ANNOTATION
from py_volcano.ctl import explain, render, views
from py_volcano.errors import ApiError, ConfigError

if TYPE_CHECKING:
    from py_volcano.ctl.kube import Cluster

__all__ = ["add_commands"]

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
#: `explain` targets: the kinds, as kubectl spells them, that name a PodGroup and a pod (a bare name is a pod).
_GROUP_KINDS = frozenset({"podgroup", "podgroups", "pg", "podgroup.scheduling.volcano.sh"})
_POD_KINDS = frozenset({"pod", "pods", "po"})

Command = Callable[["Cluster", argparse.Namespace], Awaitable[str]]


def _run(args: argparse.Namespace, command: Command) -> int:
    # The API client (aiohttp, the kubernetes loaders) loads only when a command runs.
    from py_volcano.cache.client import ApiClient
    from py_volcano.ctl.kube import Cluster

    async def main() -> str:
        client = await ApiClient.connect(kubeconfig=args.kubeconfig, concurrency=4, timeout=args.request_timeout)
        try:
            if getattr(args, "namespace", "") is None and args.command == "explain":
                args.namespace = client.credentials.default_namespace
            return await command(Cluster(client), args)
        finally:
            await client.close()

    try:
        print(asyncio.run(main()))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _queues(cluster: Cluster, args: argparse.Namespace) -> str:
    rows = views.queue_rows(await cluster.queues())
    return render.queues_table(rows) if args.output == "table" else render.dump(rows, args.output)


async def _queue(cluster: Cluster, args: argparse.Namespace) -> str:
    state = "Open" if args.action == "open" else "Closed"
    queue = await cluster.set_queue_state(args.name, state)
    if queue is None:
        raise ApiError(f"queue {args.name} not found", status=404)
    [row] = views.queue_rows([queue])
    return f"queue {row['name']} {row['state']}" if args.output == "table" else render.dump(row, args.output)


async def _jobs(cluster: Cluster, args: argparse.Namespace) -> str:
    groups, pods = await asyncio.gather(cluster.pod_groups(args.namespace), cluster.pending_pods(args.namespace))
    rows = views.job_rows(groups, pods, now=datetime.now(UTC), queue=args.queue)
    if args.output != "table":
        return render.dump(rows, args.output)
    return render.jobs_table(rows, namespaces=args.namespace is None)


def _target(text: str) -> tuple[str, str]:
    """Return ("pod" | "podgroup", name) of `POD`, `pod/NAME` or `podgroup/NAME` (also `pg/NAME`); an
    argparse type, so anything else is a usage error."""
    kind, _, name = text.rpartition("/")
    if name and not kind:
        return "pod", name
    if name and kind.lower() in _GROUP_KINDS:
        return "podgroup", name
    if name and kind.lower() in _POD_KINDS:
        return "pod", name
    raise argparse.ArgumentTypeError(f"{text!r}: name a pod (POD or pod/NAME) or a PodGroup (podgroup/NAME)")


async def _explain(cluster: Cluster, args: argparse.Namespace) -> str:
    kind, name = args.target
    namespace: str = args.namespace
    pod: dict[str, Any] | None = None
    group_name = name
    if kind == "pod":
        pod = await cluster.pod(namespace, name)
        if pod is None:
            raise ApiError(f"pod {namespace}/{name} not found", status=404)
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        group_name = str(annotations.get(GROUP_NAME_ANNOTATION) or "")
    group = await cluster.pod_group(namespace, group_name) if group_name else None
    if kind == "podgroup" and group is None:
        raise ApiError(f"podgroup {namespace}/{name} not found", status=404)
    queues = await cluster.queues()
    wanted = explain.queue_of(pod, group)
    queue = next((q for q in queues if (q.get("metadata") or {}).get("name") == wanted), None)
    result = explain.explain(target=f"{kind} {namespace}/{name}", pod=pod, group=group, queue=queue, queues=queues)
    return explain.explanation_text(result) if args.output == "table" else render.dump(result, args.output)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="kubeconfig of the cluster (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "-o", "--output", choices=render.FORMATS, default="table", help="output format (default: %(default)s)"
    )
    parser.add_argument(
        "--request-timeout", metavar="SECONDS", type=float, default=30.0, help="bound on each API call (default: 30)"
    )


def add_commands(commands: Any, *, prog: str) -> None:
    """Add `queues`, `queue`, `jobs` and `explain` to the subcommands `commands` of `prog`."""
    queues = commands.add_parser(
        "queues",
        help="list queues with their share, deserved, allocated and capability",
        description="One row per Queue: state, weight, parent, share, PodGroups Pending / Inqueue / Running, and "
        "per resource allocated/deserved/capability as the scheduler last computed them (- when unknown or "
        "unlimited).",
    )
    queues.set_defaults(handler=lambda args: _run(args, _queues))
    queue = commands.add_parser(
        "queue",
        help="open or close a queue",
        description="Set a Queue's status.state: a Closed queue admits no new jobs (enqueue leaves its Pending "
        f"PodGroups waiting, and the queue plugins place no more of its pods); `{prog} queue open` lets them in "
        "again.",
    )
    queue.add_argument("action", choices=("open", "close"))
    queue.add_argument("name", metavar="NAME")
    queue.set_defaults(handler=lambda args: _run(args, _queue))
    jobs = commands.add_parser(
        "jobs",
        help="list PodGroups: phase, minMember, running and pending pods, why they wait",
        description="One row per PodGroup, of every namespace unless -n: queue, phase, minMember, running and "
        f"Pending pods, age, and the reason it waits (`{prog} explain podgroup/NAME` says more).",
    )
    jobs.add_argument("-n", "--namespace", default=None, help="only this namespace (default: every namespace)")
    jobs.add_argument("--queue", default=None, help="only PodGroups of this queue")
    jobs.set_defaults(handler=lambda args: _run(args, _jobs))
    why = commands.add_parser(
        "explain",
        help="say why a pod or PodGroup waits, where it stands in line, and what would let it run",
        description="Read what the scheduler recorded on the PodGroup (and the pod's PodScheduled condition): "
        "the action and plugin that held it, why, its place among the waiting jobs of its queue and of the "
        "cluster, whether preemption can help, and what would let it run.",
    )
    why.add_argument("target", metavar="POD|pod/NAME|podgroup/NAME", type=_target)
    why.add_argument("-n", "--namespace", default=None, help="namespace (default: the kubeconfig context's)")
    why.set_defaults(handler=lambda args: _run(args, _explain))
    for parser in (queues, queue, jobs, why):
        _common(parser)
