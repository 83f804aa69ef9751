"""GPU sharing (`volcano.sh/gpu-memory`) and GPU number (`volcano.sh/gpu-number`): Volcano's gpushare device.

A node offers `volcano.sh/gpu-number` cards in its capacity, each with an equal part of its
`volcano.sh/gpu-memory` capacity, less the cards listed in its `volcano.sh/gpu-unhealthy-ids`
annotation. A pod placed earlier holds the cards named by its `volcano.sh/gpu-index` annotation: its
GPU memory on each, and the card itself (a card holding any pod is not idle). A memory request takes
the lowest-numbered card with that much memory left; a number request takes that many idle cards,
lowest numbers first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from py_volcano.api import NodeInfo, TaskID, TaskInfo

__all__ = [
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "PREDICATE_TIME",
    "UNHEALTHY_IDS",
    "SharedGpus",
    "gpu_memory",
    "gpu_number",
]

GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
#: Written at allocation: when the scheduler decided (ns since the epoch) and the cards chosen ("0,1").
PREDICATE_TIME = "volcano.sh/predicate-time"
GPU_INDEX = "volcano.sh/gpu-index"
#: Node annotation: comma-separated indexes of the cards not to use.
UNHEALTHY_IDS = "volcano.sh/gpu-unhealthy-ids"


def gpu_memory(task: TaskInfo) -> int:
    """The pod's GPU memory request (containers summed, or the largest init container)."""
    return int(task.resreq.scalars.get(GPU_MEMORY, 0.0) / 1000)


def gpu_number(task: TaskInfo) -> int:
    """The pod's GPU card request."""
    return int(task.resreq.scalars.get(GPU_NUMBER, 0.0) / 1000)


def gpu_index(annotations: Mapping[str, str]) -> list[int] | None:
    """The cards a pod's `volcano.sh/gpu-index` names; None when absent or not a list of integers."""
    value = annotations.get(GPU_INDEX)
    if value is None:
        return None
    try:
        return [int(part) for part in value.split(",")]
    except ValueError:
        return None


class SharedGpus:
    """One node's cards: memory per card and, per card, the pods on it with their GPU memory."""

    __slots__ = ("memory", "name", "pods")

    def __init__(self, name: str, memory: Mapping[int, int]) -> None:
        self.name = name
        self.memory = dict(memory)
        self.pods: dict[int, dict[TaskID, int]] = {card: {} for card in memory}

    @classmethod
    def from_node(cls, node: NodeInfo, warn: Callable[[str], None]) -> SharedGpus | None:
        """The node's cards from its capacity and annotations; None when it offers none."""
        total = node.capacity.scalars.get(GPU_MEMORY)
        count = node.capacity.scalars.get(GPU_NUMBER)
        if total is None or count is None:
            return None
        cards = int(count / 1000)
        if cards <= 0:
            warn(f"Node {node.name}: field status.capacity[{GPU_NUMBER}]: 0 cards; no GPU sharing on it")
            return None
        per_card = int(total / 1000) // cards
        memory = dict.fromkeys(range(cards), per_card)
        unhealthy = node.spec.annotations.get(UNHEALTHY_IDS)
        for part in unhealthy.split(",") if unhealthy else ():
            try:
                memory.pop(int(part), None)
            except ValueError:
                warn(f"Node {node.name}: field metadata.annotations[{UNHEALTHY_IDS}]: {part!r} is not a card index")
        return cls(node.name, memory)

    def used_memory(self, card: int) -> int:
        """GPU memory the pods on `card` hold."""
        return sum(self.pods[card].values())

    def cards_with_memory(self, request: int) -> list[int]:
        """Cards with at least `request` memory left, lowest first."""
        return [card for card in sorted(self.memory) if self.memory[card] - self.used_memory(card) >= request]

    def idle_cards(self) -> list[int]:
        """Cards no pod holds, lowest first."""
        return [card for card in sorted(self.memory) if not self.pods[card]]

    def most_free_memory(self) -> int:
        """The memory left on the card with the most left (-1 without cards)."""
        return max((self.memory[card] - self.used_memory(card) for card in self.memory), default=-1)

    def failure(self, task: TaskInfo, *, sharing: bool, number: bool) -> str | None:
        """Volcano's reason when the node cannot hold the task's request, else None."""
        memory = gpu_memory(task)
        if sharing and memory > 0 and not self.cards_with_memory(memory):
            return f"GpuShare no enough gpu memory on node {self.name}"
        count = gpu_number(task)
        if number and count > 0 and len(self.idle_cards()) < count:
            return f"GpuNumber no enough gpu number on node {self.name}"
        return None

    def choose(self, task: TaskInfo) -> list[int]:
        """The cards the task takes (memory request first, as Volcano), or [] when none fit."""
        memory = gpu_memory(task)
        if memory > 0:
            return self.cards_with_memory(memory)[:1]
        count = gpu_number(task)
        idle = self.idle_cards()
        return idle[:count] if 0 < count <= len(idle) else []

    def hold(self, uid: TaskID, cards: list[int], memory: int) -> list[int]:
        """Put the pod on `cards` (those the node has) with `memory` each; return the cards taken."""
        taken = [card for card in cards if card in self.pods]
        for card in taken:
            self.pods[card][uid] = memory
        return taken

    def release(self, uid: TaskID) -> list[int]:
        """Take the pod off every card; return the cards it held."""
        return [card for card, pods in self.pods.items() if pods.pop(uid, None) is not None]
