"""nodeorder's NodeSums: the per-node request sums handed from one session to the next equal sums taken
afresh, whatever changed between (nodes reordered, gone, new, rebuilt, or their tasks changed in place)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from py_volcano.api import NodeInfo
from py_volcano.plugins.nodeorder.resources import NodeSums
from tests.builders import cluster, node, pod

CPUS = ("", "100m", "250m", "1")
MEMORIES = ("", "64Mi", "1Gi")


def build(names: list[str], draw: st.DataObject) -> list[NodeInfo]:
    """Nodes `names` (fresh objects), each with 0 to 3 Running pods of drawn requests."""
    objects = [node(name=name, cpu="64", memory="256Gi") for name in names]
    for name in names:
        for index in range(draw.draw(st.integers(0, 3))):
            cpu, memory = draw.draw(st.sampled_from(CPUS)), draw.draw(st.sampled_from(MEMORIES))
            objects.append(pod(name=f"{name}-{index}-{len(objects)}", cpu=cpu, memory=memory, node_name=name))
    built = cluster(*objects).nodes
    return [built[name] for name in names]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_sums_kept_between_sessions_equal_fresh_sums(data: st.DataObject) -> None:
    names = [f"n{index}" for index in range(data.draw(st.integers(1, 6)))]
    nodes = build(names, data)
    kept = NodeSums()
    for _ in range(data.draw(st.integers(1, 5))):
        rows, sums = kept.take(nodes)
        fresh_rows, fresh = NodeSums().take(nodes)
        assert rows == fresh_rows == {item.name: row for row, item in enumerate(nodes)}
        assert sums.tolist() == fresh.tolist()
        change = data.draw(st.sampled_from(("shuffle", "drop", "add", "rebuild", "move", "none")))
        if change == "shuffle":
            nodes = data.draw(st.permutations(nodes))
        elif change == "drop" and len(nodes) > 1:
            nodes.pop(data.draw(st.integers(0, len(nodes) - 1)))
        elif change == "add":
            nodes.append(build([f"n{len(names)}"], data)[0])
            names.append(f"n{len(names)}")
        elif change == "rebuild":  # another object of the same name, other pods
            index = data.draw(st.integers(0, len(nodes) - 1))
            nodes[index] = build([nodes[index].name], data)[0]
        elif change == "move":  # a task leaves one node object and joins another, in place
            source = data.draw(st.sampled_from(nodes))
            if source.tasks:
                task = next(iter(source.tasks.values()))
                source.remove_task(task)
                target = data.draw(st.sampled_from(nodes))
                moved = task.clone()
                moved.node_name = target.name
                target.add_task(moved)


def test_a_task_added_in_place_is_summed_again() -> None:
    built = cluster(node(name="a"), node(name="b"), pod(name="p", cpu="1", memory="1Gi", node_name="a"))
    nodes = list(built.nodes.values())
    kept = NodeSums()
    _, before = kept.take(nodes)
    task = next(iter(nodes[0].tasks.values())).clone()
    task.node_name = "b"
    nodes[1].add_task(task)
    _, after = kept.take(nodes)
    assert before[1].tolist() == [0.0] * 5
    assert after[1].tolist() == after[0].tolist() == [1000.0, 1024.0**3, 0.0, 1000.0, 1024.0**3]
