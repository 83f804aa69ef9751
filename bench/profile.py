"""Sampling profile of the `py-volcano run` process under load, with py-spy (not a project dependency:
`.venv/bin/pip install py-spy`).

`PySpy(pid, path)` records, while the context is open, the stacks of the thread holding the GIL (`--gil`:
Python work only, not threads waiting for it) at 100 Hz, in py-spy's collapsed ("raw") format.
`summarise(path)` sorts every sample into one part of the scheduler, by the first frame of the stack
(outermost first) that names one, and ranks functions by own and inclusive samples.

Usage: python -m bench.profile FILE.txt [--top 25]   (summarise an existing recording)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["PySpy", "categorise", "summarise"]

#: (part, substrings of a frame) in priority order: the first part any frame of a stack matches wins.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cycle (run_cycle: actions, plugins, session)", ("run_cycle (",)),
    (
        "snapshot (Store.snapshot, ClusterInfo.build)",
        ("snapshot (py_volcano/cache/store.py", "build (py_volcano/api/cluster"),
    ),
    ("LISTs (relist: GET, JSON, reconcile)", ("py_volcano/cache/listing.py",)),
    ("store (apply_event: trim, parse, overlays)", ("apply_event (",)),
    ("pod and node watches (informer: stream, JSON)", ("py_volcano/cache/informer.py",)),
    ("status writer", ("py_volcano/cache/status",)),
    ("metrics", ("py_volcano/metrics.py", "prometheus_client")),
    ("bind (Binder, ApiClient, aiohttp requests)", ("py_volcano/cache/binder.py", "py_volcano/cache/client.py")),
    ("watch handling (kopf: stream, JSON, queues, handler dispatch)", ("kopf/",)),
    ("logging", ("structlog", "logging/")),
    ("asyncio / aiohttp / ssl plumbing", ("asyncio/", "aiohttp/", "ssl.py")),
)


def categorise(stack: str) -> str:
    """Return the part of the scheduler a collapsed stack belongs to."""
    frames = stack.split(";")
    for part, needles in PARTS:
        if any(needle in frame for frame in frames for needle in needles):
            return part
    return "other"


def _frame_name(frame: str) -> str:
    return frame.strip()


def summarise(path: Path, *, top: int = 25) -> dict[str, Any]:
    """Return the share of samples per part, and the top functions by own and by inclusive samples."""
    parts: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        parts[categorise(stack)] += count
        frames = [_frame_name(f) for f in stack.split(";") if f.strip()]
        if frames:
            own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count

    def share(counter: collections.Counter[str], n: int) -> list[dict[str, Any]]:
        return [
            {"what": name, "samples": value, "percent": round(100 * value / total, 1)}
            for name, value in counter.most_common(n)
        ]

    return {
        "samples": total,
        "parts": share(parts, len(parts)),
        "own": share(own, top),
        "inclusive": share(inclusive, top),
    }


def print_summary(summary: dict[str, Any], *, top: int = 25) -> None:
    """Print the parts and the top functions."""
    print(f"py-spy samples holding the GIL: {summary['samples']}")
    for title, key in (("by part", "parts"), ("own time", "own"), ("inclusive time", "inclusive")):
        print(f"\n{title}:")
        for row in summary[key][:top]:
            print(f"  {row['percent']:5.1f}%  {row['what']}")
    print(flush=True)


class PySpy:
    """`py-spy record --pid PID --gil --nonblocking --format raw` while the context is open."""

    def __init__(self, pid: int, path: Path, *, rate: int = 100, seconds: float | None = None) -> None:
        self.pid = pid
        self.path = path
        self.rate = rate
        self.seconds = seconds
        """Stop recording after this many seconds (py-spy's `--duration`) even while the context is open."""
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> str | None:
        """Return the py-spy executable, None when it is not installed."""
        beside = Path(sys.executable).parent / "py-spy"
        return str(beside) if beside.exists() else shutil.which("py-spy")

    async def __aenter__(self) -> PySpy:
        exe = self.available()
        if exe is None:
            raise RuntimeError("py-spy is not installed: .venv/bin/pip install py-spy")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        args = [exe, "record", "--pid", str(self.pid), "--rate", str(self.rate), "--gil", "--nonblocking"]
        args += ["--format", "raw", "--function", "--output", str(self.path)]
        if self.seconds is not None:
            args += ["--duration", str(max(1, round(self.seconds)))]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await asyncio.sleep(0.5)  # attached
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)
        try:
            await asyncio.to_thread(self.proc.wait, 60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Summarise a recording."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("path", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    summary = summarise(args.path, top=args.top)
    print_summary(summary, top=args.top)
    if args.json:
        print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
