"""The `py-volcano` command: `simulate` scenarios in memory, `run` against a cluster."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduler.errors import ScenarioError
from scheduler.logs import configure_logging

__all__ = ["build_parser", "main", "run"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2


def _simulate(args: argparse.Namespace) -> int:
    from scheduler.simulation import run_scenario_file

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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="py-volcano", description="A Kubernetes batch scheduler with Volcano's semantics.")
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser(
        "simulate",
        help="run scenario files in memory and check their expectations",
        description="Run each scenario (shared/scenarios/FORMAT.md) in memory and print the outcome as JSON: "
        "one object for one file, a list for several. Exit 0 when every expectation holds, 1 when any fails, "
        "2 when a file is not a valid scenario.",
    )
    simulate.add_argument("files", nargs="+", metavar="FILE", help="scenario YAML files")
    simulate.add_argument("--cycles", type=int, default=None, help="cycles to run (default: the scenario's)")
    simulate.add_argument("--json", action="store_true", help="print JSON (the only output format; kept for scripts)")
    simulate.set_defaults(handler=_simulate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `py-volcano` console script."""
    args = build_parser().parse_args(argv)
    configure_logging(getattr(args, "log_level", "warning"), getattr(args, "log_format", "console"))
    code: int = args.handler(args)
    return code


def run() -> None:
    """Console-script wrapper: exit with `main`'s code."""
    sys.exit(main())


if __name__ == "__main__":
    run()
