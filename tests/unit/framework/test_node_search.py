"""A task's search for feasible nodes (`framework.node_search`): Volcano's numbers, the rotating start,
and allocate scoring only the nodes found."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from py_volcano.framework import PluginMemory, run_cycle
from py_volcano.framework.node_search import NodesToFind
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod


@pytest.mark.parametrize(
    ("nodes", "flags", "found"),
    [
        (50, NodesToFind(), 50),
        (100, NodesToFind(), 100),
        (200, NodesToFind(), 100),  # 49% of 200 is 98, below the minimum
        (1000, NodesToFind(), 420),  # 50% - 8%
        (5000, NodesToFind(), 500),  # 50% - 40%
        (10000, NodesToFind(), 500),  # 50% - 80% is below 5%
        (5000, NodesToFind(percentage=100), 5000),
        (5000, NodesToFind(percentage=30), 1500),
        (5000, NodesToFind(minimum=1000), 1000),
        (5000, NodesToFind(minimum_percentage=20), 1000),
    ],
)
def test_volcano_numbers_of_nodes_to_find(nodes: int, flags: NodesToFind, found: int) -> None:
    assert flags.count(nodes) == found


def test_the_search_takes_feasible_nodes_from_its_start_round_the_list() -> None:
    flags = NodesToFind(minimum=2, percentage=10)
    feasible = np.array([True, False, True, True, False, True, True])  # 7 nodes: 2 to find
    taken, start = flags.search(feasible, 3)
    assert taken.tolist() == [3, 5] and start == 6
    taken, start = flags.search(feasible, start)
    assert taken.tolist() == [0, 6] and start == 1  # round the end
    taken, start = flags.search(np.array([False] * 6 + [True]), 1)
    assert taken.tolist() == [6] and start == 1  # fewer found than wanted: every node checked


@given(size=st.integers(101, 400), seed=st.integers(0, 2**16))
def test_successive_searches_take_the_feasible_nodes_in_turn_round_the_list(size: int, seed: int) -> None:
    feasible = np.random.default_rng(seed).random(size) < 0.7
    flags, start, found = NodesToFind(), 0, np.flatnonzero(feasible).tolist()
    wanted = min(flags.count(size), len(found))
    turns: list[tuple[list[int], int]] = []
    for _ in range(3):
        taken, start = flags.search(feasible, start)
        assert feasible[taken].all() and len(taken) == wanted
        begin = turns[-1][1] if turns else 0
        turns.append((sorted(taken.tolist(), key=lambda row: (row - begin) % size), start))
    taken_in_turn = [row for rows, _ in turns for row in rows]
    assert taken_in_turn == (found * 3)[: len(taken_in_turn)]


def _placed(flags: NodesToFind, memory: PluginMemory) -> str:
    nodes = [node(name=f"n{i:03d}", cpu="8") for i in range(200)]
    result = run_cycle(
        cluster(*nodes, pod(name="p", cpu="1")), load_conf(None), default_registry(), memory=memory, nodes_to_find=flags
    )
    ((_, placed),) = result.binds
    return placed


def test_allocate_scores_the_nodes_its_search_found_starting_where_the_last_search_stopped() -> None:
    memory = PluginMemory(datetime.now(UTC))
    assert [_placed(NodesToFind(), memory) for _ in range(3)] == ["n000", "n100", "n000"]
    assert memory.next_node == 100
    every = PluginMemory(datetime.now(UTC))
    assert [_placed(NodesToFind(percentage=100), every) for _ in range(2)] == ["n000", "n000"]


def test_volcano_flags_set_the_search_of_py_volcano_run() -> None:
    from py_volcano.cli import build_parser
    from py_volcano.settings import Settings

    parser = build_parser()
    assert NodesToFind(*Settings.from_args(parser.parse_args(["run"])).cycle.nodes_to_find) == NodesToFind()
    flags = [
        "run",
        "--minimum-feasible-nodes=50",
        "--minimum-percentage-nodes-to-find=10",
        "--percentage-nodes-to-find=30",
    ]
    assert NodesToFind(*Settings.from_args(parser.parse_args(flags)).cycle.nodes_to_find) == NodesToFind(50, 10, 30)
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--minimum-feasible-nodes=-1"])
