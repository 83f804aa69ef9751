"""The runner's clock: `--clock-start` moves it, and a cycle that read it is never skipped as idle."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from py_volcano.registry import default_registry
from py_volcano.runner import ConfFile, Runner
from py_volcano.settings import CycleSettings, Settings

START = datetime(2024, 5, 1, 2, 30, tzinfo=UTC)


def test_clock_start_runs_from_the_given_time_and_reading_it_makes_the_next_cycle_due() -> None:
    """With `--clock-start` the cycles' time starts there and moves with real time; the plugins' memory
    starts then too. A cycle that read the clock makes the next one due though the store did not change."""
    from py_volcano.cache import ApiClient, Credentials

    async def scenario() -> tuple[datetime, datetime, bool, bool]:
        client = ApiClient(Credentials(server="http://127.0.0.1:9"))
        try:
            settings = Settings(cycle=CycleSettings(clock_start=START))
            runner = Runner(settings, client, ConfFile(None, default_registry()), registry=default_registry())
            runner._last_input = (runner.store.generation, id(runner.conf.current()))
            quiet = runner._cycle_due()
            runner._reads_clock = True
            return runner.wall_clock(), runner.memory.started, quiet, runner._cycle_due()
        finally:
            await client.close()

    now, started, quiet, due = asyncio.run(scenario())
    assert START <= started <= now < START + timedelta(seconds=30)
    assert (quiet, due) == (False, True)
