"""`py-volcano simulate`: scenarios (FORMAT.md) run in memory, with their expectations checked."""

from scheduler.simulation.cluster import InMemoryCluster
from scheduler.simulation.run import run_scenario, run_scenario_file
from scheduler.simulation.scenario import Expect, Scenario, load_scenario

__all__ = ["Expect", "InMemoryCluster", "Scenario", "load_scenario", "run_scenario", "run_scenario_file"]
