"""`py-volcano simulate`: scenarios (docs/scenarios.md) run in memory, with their expectations checked."""

from py_volcano.simulation.cluster import InMemoryCluster
from py_volcano.simulation.run import run_scenario, run_scenario_file
from py_volcano.simulation.scenario import Expect, Scenario, load_scenario

__all__ = ["Expect", "InMemoryCluster", "Scenario", "load_scenario", "run_scenario", "run_scenario_file"]
