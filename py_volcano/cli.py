"""The `py-volcano` command: `simulate` scenarios in memory, `run` against a cluster, and the operator's
commands (`queues`, `queue open|close`, `jobs`, `explain`, in `py_volcano.ctl`); also `kubectl py-volcano`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from py_volcano import __version__
from py_volcano.api import NONE_SHARDING, SHARDING_MODES
from py_volcano.ctl import add_commands
from py_volcano.errors import ConfigError, ScenarioError
from py_volcano.logs import LEVELS, configure_logging
from py_volcano.settings import BindingSettings

__all__ = ["KUBECTL_PLUGIN", "build_parser", "main", "run", "run_kubectl_plugin"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
#: The program name when run as a kubectl plugin (the `kubectl-py_volcano` script).
KUBECTL_PLUGIN = "kubectl py-volcano"


def _simulate(args: argparse.Namespace) -> int:
    from py_volcano.simulation import run_scenario_file

    reports: list[dict[str, Any]] = []
    code = EXIT_OK
    for name in args.files:
        try:
            report = run_scenario_file(Path(name), cycles=args.cycles)
        except ScenarioError as exc:
            print(f"error: {exc}", file=sys.stderr)
            report = {"scenario": name, "ok": False, "error": str(exc)}
            code = EXIT_INVALID
        else:
            if not report["ok"] and code == EXIT_OK:
                code = EXIT_FAILED
        reports.append(report)
    output: Any = reports[0] if len(reports) == 1 else reports
    print(json.dumps(output, indent=2))
    return code


def _run(args: argparse.Namespace) -> int:
    from py_volcano.runner import run
    from py_volcano.settings import Settings

    problem = _tls_flags_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    try:
        return asyncio.run(run(Settings.from_args(args)))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID


def _tls_flags_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the secure serving flags together, None when nothing."""
    if (args.tls_cert_file is None) != (args.tls_private_key_file is None):
        return "--tls-cert-file and --tls-private-key-file go together"
    if args.tls_cert_file is not None and args.secure_listen_address is None:
        return "--tls-cert-file needs --secure-listen-address"
    return None


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _address(text: str) -> str:
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return text


def _add_run(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="schedule pods of a Kubernetes cluster",
        description="Watch the cluster and schedule every pod whose spec.schedulerName is --scheduler-name, "
        "one cycle every --schedule-period. Exit 0 after a clean stop (SIGTERM, SIGINT, --cycles reached), "
        "1 on a runtime failure, 2 on bad usage, an unusable --scheduler-conf or kubeconfig.",
    )
    run.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="kubeconfig of the cluster to schedule (default: in-cluster config, else $KUBECONFIG or ~/.kube/config)",
    )
    run.add_argument(
        "--scheduler-conf",
        metavar="PATH",
        default=None,
        help="volcano-scheduler.conf (default: the packaged configuration); re-read when the file changes, "
        "a broken new file is logged and the previous configuration keeps running",
    )
    run.add_argument(
        "--scheduler-name",
        metavar="NAME",
        default="py-volcano",
        help="schedule only pods with this spec.schedulerName (default: %(default)s)",
    )
    run.add_argument(
        "--schedule-period",
        metavar="SECONDS",
        type=_positive(float),
        default=1.0,
        help="most seconds between the starts of two scheduling cycles; a cycle is skipped when nothing it "
        "reads changed (default: %(default)s)",
    )
    run.add_argument(
        "--min-cycle-gap",
        metavar="SECONDS",
        type=_non_negative_float,
        default=0.1,
        help="least seconds between the starts of two cycles: new pending work (an unbound pod, a changed "
        "PodGroup) starts a cycle this soon after the last one began; at most --schedule-period (equal to it: "
        "cycles only on the period, as Volcano) (default: %(default)s)",
    )
    run.add_argument(
        "--fast-path",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="place a pod without a PodGroup that arrives between cycles at once, in the last cycle's session "
        "kept open, through the same plugins' checks; off, every pod waits for a cycle (default: on)",
    )
    run.add_argument(
        "--minimum-feasible-nodes",
        metavar="N",
        type=_non_negative_int,
        default=100,
        help="a task's search for feasible nodes looks at every node of a cluster this small, and stops at no "
        "fewer feasible nodes in a larger one; only the nodes found are scored (Volcano's flag; default: %(default)s)",
    )
    run.add_argument(
        "--minimum-percentage-nodes-to-find",
        metavar="PERCENT",
        type=_non_negative_int,
        default=5,
        help="the least share of the nodes the search stops at when --percentage-nodes-to-find is 0 "
        "(Volcano's flag; default: %(default)s)",
    )
    run.add_argument(
        "--percentage-nodes-to-find",
        metavar="PERCENT",
        type=_non_negative_int,
        default=0,
        help="the share of the nodes a task's search stops at once found feasible; 0: 50%% less 1%% per 125 nodes, "
        "100: every node (Volcano's flag; default: %(default)s)",
    )
    run.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect a leader on a coordination.k8s.io Lease; standbys keep their caches warm (default: on)",
    )
    run.add_argument(
        "--podgroup-controller",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="give pods of --scheduler-name without a scheduling.k8s.io/group-name annotation one PodGroup per "
        "workload (Job, ReplicaSet, StatefulSet, DaemonSet, any controller) or per pod, as Volcano's podgroup "
        "controller does; off, such pods are one-pod jobs (default: on)",
    )
    run.add_argument(
        "--leader-elect-namespace",
        metavar="NS",
        default=os.environ.get("POD_NAMESPACE") or "default",
        help="namespace of the Lease (default: $POD_NAMESPACE, else default)",
    )
    run.add_argument(
        "--leader-elect-lease-name",
        metavar="NAME",
        default="py-volcano",
        help="name of the Lease (default: %(default)s)",
    )
    run.add_argument(
        "--listen-address",
        metavar="HOST:PORT",
        type=_address,
        default="127.0.0.1:8080",
        help="where /healthz and /readyz, and /metrics without --secure-listen-address, are served in plain "
        "HTTP (default: %(default)s, loopback only)",
    )
    run.add_argument(
        "--secure-listen-address",
        metavar="HOST:PORT",
        type=_address,
        default=None,
        help="serve /metrics here over HTTPS instead: each request's bearer token is checked with a TokenReview "
        "and its user with a SubjectAccessReview (get on the non-resource URL /metrics) against the API server, "
        "as kube-scheduler's secure port does (default: off)",
    )
    run.add_argument(
        "--tls-cert-file",
        metavar="PATH",
        default=None,
        help="PEM certificate (chain) of --secure-listen-address, re-read when it changes (default: a "
        "self-signed certificate made at start, kept in memory)",
    )
    run.add_argument(
        "--tls-private-key-file",
        metavar="PATH",
        default=None,
        help="PEM private key of --tls-cert-file",
    )
    run.add_argument(
        "--bind-concurrency",
        metavar="N",
        type=_positive(int),
        default=BindingSettings().concurrency,
        help="binds and evictions in flight at once (default: %(default)s)",
    )
    run.add_argument(
        "--pod-initial-backoff-seconds",
        metavar="SECONDS",
        type=_positive(float),
        default=1.0,
        help="a job no node or quota could take waits this long before it is tried again, doubled at each "
        "further failure (kube-scheduler's podInitialBackoffSeconds; default: %(default)s)",
    )
    run.add_argument(
        "--pod-max-backoff-seconds",
        metavar="SECONDS",
        type=_positive(float),
        default=10.0,
        help="the longest such wait (kube-scheduler's podMaxBackoffSeconds; default: %(default)s)",
    )
    run.add_argument(
        "--pod-max-unschedulable-seconds",
        metavar="SECONDS",
        type=_positive(float),
        default=300.0,
        help="a waiting job is tried again after this long even when nothing it could use changed "
        "(kube-scheduler's podMaxInUnschedulablePodsDuration; default: %(default)s)",
    )
    run.add_argument(
        "--cycles",
        metavar="N",
        type=_positive(int),
        default=None,
        help="exit 0 after N cycles (at the end of the N-th period), each starting once the previous "
        "one's binds and evictions are observed (tests and e2e; default: run until stopped)",
    )
    run.add_argument(
        "--clock-start",
        metavar="TIME",
        type=_timestamp,
        default=None,
        help="take TIME (ISO 8601 with a UTC offset, e.g. 2024-05-01T02:30:00+08:00) as the wall-clock time the "
        "scheduler starts at, time advancing from there (tests and what-if runs of tdm's revocable zones and "
        "rescheduling's interval; default: the real clock)",
    )
    run.add_argument(
        "--scheduler-sharding-mode",
        choices=SHARDING_MODES,
        default=NONE_SHARDING,
        help="none: place pods on every node; hard: only on the nodes NodeShard --scheduler-sharding-name lists "
        "in spec.nodesDesired, while still counting every pod and node (Volcano's hard mode; default: %(default)s)",
    )
    run.add_argument(
        "--scheduler-sharding-name",
        metavar="NAME",
        default="py-volcano",
        help="the NodeShard (shard.volcano.sh/v1alpha1) this instance owns (default: %(default)s)",
    )
    run.add_argument(
        "--scheduler-sharding-takeover-seconds",
        metavar="SECONDS",
        type=_non_negative_float,
        default=5.0,
        help="with hard sharding, the pending jobs are shared out among the NodeShards' instances; a job "
        "another instance owns is left to it this long, then any instance may place it (default: %(default)s)",
    )
    _add_logging(run, log_format="json")
    run.set_defaults(handler=_run)


def _add_logging(parser: argparse.ArgumentParser, *, log_format: str) -> None:
    """Add `--log-level` (default info) and `--log-format` (default `log_format`)."""
    parser.add_argument(
        "--log-level", choices=LEVELS, default="info", help="lowest level logged (default: %(default)s)"
    )
    parser.add_argument(
        "--log-format", choices=("json", "console"), default=log_format, help="line format (default: %(default)s)"
    )


def _shard_selector(text: str) -> tuple[str, str]:
    """Parse `NAME=SELECTOR` (argparse type): a NodeShard name and a label selector."""
    name, sep, selector = text.partition("=")
    if not sep or not name or not selector:
        raise argparse.ArgumentTypeError(f"expected NAME=SELECTOR (e.g. shard-a=pool=a), got {text!r}")
    return name, selector


def _shard(args: argparse.Namespace) -> int:
    import signal

    from py_volcano.cache import ApiClient, sync_node_shards
    from py_volcano.cache.shards import keep_node_shards
    from py_volcano.errors import ApiError

    async def once(client: ApiClient) -> int:
        try:
            assigned = await sync_node_shards(client, args.shards)
        except ApiError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print(json.dumps({name: len(nodes) for name, nodes in assigned.items()}))
        return EXIT_OK

    async def sync() -> int:
        async with await ApiClient.connect(kubeconfig=args.kubeconfig) as client:
            if args.every is None:
                return await once(client)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await keep_node_shards(client, args.shards, every=args.every, stop=stop)
            return EXIT_OK

    try:
        return asyncio.run(sync())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID


def _add_shard(commands: Any) -> None:
    shard = commands.add_parser(
        "shard",
        help="fill NodeShards from label selectors (static node shards)",
        description="Set each NodeShard's spec.nodesDesired (shard.volcano.sh/v1alpha1, created when missing) to "
        "the nodes its label selector matches; a node matched by several selectors goes to the first. Once: print "
        "the node count per shard as JSON and exit 0 when written, 1 when the API server refused, 2 on bad usage. "
        "With --every: sync again every SECONDS, logging each change, until SIGTERM or SIGINT (exit 0).",
    )
    shard.add_argument(
        "--shard",
        dest="shards",
        metavar="NAME=SELECTOR",
        type=_shard_selector,
        action="append",
        required=True,
        help="a NodeShard and its label selector, e.g. shard-a=pool=a; repeat for each shard, in priority order",
    )
    shard.add_argument("--kubeconfig", metavar="PATH", default=None, help="kubeconfig (default: as for run)")
    shard.add_argument(
        "--every",
        metavar="SECONDS",
        type=_positive(float),
        default=None,
        help="sync again every SECONDS until stopped, a refused round retried at the next, as Volcano's "
        "shardSyncPeriod (the static sharding controller; default: once, then exit)",
    )
    _add_logging(shard, log_format="console")
    shard.set_defaults(handler=_shard)


def build_parser(prog: str = "py-volcano") -> argparse.ArgumentParser:
    """Return the argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog=prog, description="A Kubernetes batch scheduler with Volcano's semantics.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser(
        "simulate",
        help="run scenario files in memory and check their expectations",
        description="Run each scenario (docs/scenarios.md) in memory and print the outcome as JSON: "
        "one object for one file, a list for several. Exit 0 when every expectation holds, 1 when any fails, "
        "2 when a file is not a valid scenario.",
    )
    simulate.add_argument("files", nargs="+", metavar="FILE", help="scenario YAML files")
    simulate.add_argument("--cycles", type=int, default=None, help="cycles to run (default: the scenario's)")
    simulate.add_argument("--json", action="store_true", help="print JSON (the only output format; kept for scripts)")
    simulate.set_defaults(handler=_simulate)
    _add_run(commands)
    _add_shard(commands)
    add_commands(commands, prog=prog)
    return parser


def _timestamp(text: str) -> datetime:
    """Parse an ISO 8601 time that carries its UTC offset (argparse type)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset (add +00:00 or Z)")
    return value


def main(argv: Sequence[str] | None = None, *, prog: str = "py-volcano") -> int:
    """Entry point of the `py-volcano` console script."""
    args = build_parser(prog).parse_args(argv)
    configure_logging(getattr(args, "log_level", "warning"), getattr(args, "log_format", "console"))
    code: int = args.handler(args)
    return code


def run() -> None:
    """Console-script wrapper: exit with `main`'s code."""
    sys.exit(main())


def run_kubectl_plugin() -> None:
    """The `kubectl-py_volcano` script: `kubectl py-volcano ...` runs the same commands."""
    sys.exit(main(prog=KUBECTL_PLUGIN))
