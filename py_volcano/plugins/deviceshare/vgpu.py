"""Volcano's vGPU device (`volcano.sh/vgpu-number`, `volcano.sh/vgpu-memory`, `volcano.sh/vgpu-cores`).

A node registers its cards in the `volcano.sh/node-vgpu-register` annotation written by Volcano's vGPU
device plugin (`uuid,split count,memory,type,health,mode:` per card) and offers the three resources
in its allocatable. A pod placed earlier holds what its `volcano.sh/vgpu-ids-new` annotation names
(`uuid,type,memory,cores:` per device, `;` between containers). Each container asking for vGPUs
takes its count of cards that have a split left, the memory (or, with none asked, the whole card)
and the cores; with `volcano.sh/vgpu-podgroup-policy: spread` never a card another pod of its group
holds. Cards are tried in the schedule policy's order: binpack fullest memory first, spread fewest
pods first, otherwise highest index first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from py_volcano.api import NodeInfo, TaskID, TaskInfo
from py_volcano.plugins.deviceshare.args import BINPACK, SPREAD

__all__ = [
    "ALLOCATION_ANNOTATIONS",
    "ASSIGNED_IDS",
    "REGISTER",
    "VGPU_CORES",
    "VGPU_MEMORY",
    "VGPU_NUMBER",
    "Assigned",
    "VGpuNode",
    "decode_pod_devices",
    "encode_pod_devices",
    "has_vgpu_request",
    "signature",
]

VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_CORES = "volcano.sh/vgpu-cores"
REGISTER = "volcano.sh/node-vgpu-register"
#: Written at allocation for the device plugin.
ASSIGNED_NODE = "volcano.sh/vgpu-node"
ASSIGNED_TIME = "volcano.sh/vgpu-time"
ASSIGNED_IDS = "volcano.sh/vgpu-ids-new"
TO_ALLOCATE = "volcano.sh/devices-to-allocate"
BIND_PHASE = "volcano.sh/bind-phase"
BIND_TIME = "volcano.sh/bind-time"
ALLOCATION_ANNOTATIONS = (ASSIGNED_NODE, ASSIGNED_TIME, ASSIGNED_IDS, TO_ALLOCATE, BIND_PHASE, BIND_TIME)
#: Pod annotations read: card type allow/deny lists, card uuid allow/deny lists, sharing mode, group spread.
USE_TYPE, NO_USE_TYPE = "nvidia.com/use-gputype", "nvidia.com/nouse-gputype"
USE_UUID, NO_USE_UUID = "volcano.sh/vgpu-use-gpuuuid", "volcano.sh/vgpu-nouse-gpuuuid"
MODE = "volcano.sh/vgpu-mode"
GROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
NVIDIA = "NVIDIA"
#: The only sharing mode without Volcano's device config map (MIG needs its known geometries).
HAMI_CORE = "hami-core"
FULL_CORES = 100


@dataclass(slots=True, frozen=True)
class Assigned:
    """One device given to one container: card uuid, type, memory and cores."""

    uuid: str
    type: str
    memory: int
    cores: int


@dataclass(slots=True)
class _Request:
    count: int
    memory: int
    percentage: int
    cores: int


def _plain(limits: Mapping[str, float], name: str) -> int | None:
    value = limits.get(name)
    return None if value is None else int(value / 1000)


def has_vgpu_request(task: TaskInfo) -> bool:
    """Whether some container limits `volcano.sh/vgpu-memory` or `volcano.sh/vgpu-number`."""
    return any(VGPU_MEMORY in limits.scalars or VGPU_NUMBER in limits.scalars for limits in task.container_limits)


def _requests(task: TaskInfo) -> list[_Request]:
    """Per container asking for vGPUs: count (1 when only memory is asked), memory, cores; a container
    asking no memory takes the whole card (100 percent)."""
    requests = []
    for limits in task.container_limits:
        count = _plain(limits.scalars, VGPU_NUMBER)
        memory = _plain(limits.scalars, VGPU_MEMORY)
        if count is None and memory is None:
            continue
        requests.append(
            _Request(
                count=1 if count is None else count,
                memory=memory or 0,
                percentage=100 if not memory else 101,
                cores=_plain(limits.scalars, VGPU_CORES) or 0,
            )
        )
    return requests


def signature(task: TaskInfo) -> tuple[object, ...]:
    """What a fit depends on besides the node: two tasks with one signature fit a node alike."""
    group = group_key(task) if task.annotations.get(GROUP_POLICY) == SPREAD else ""
    requests = tuple((r.count, r.memory, r.percentage, r.cores) for r in _requests(task))
    return (
        requests,
        group,
        *(task.annotations.get(key) for key in (MODE, USE_TYPE, NO_USE_TYPE, USE_UUID, NO_USE_UUID)),
    )


def encode_pod_devices(devices: list[list[Assigned]]) -> str:
    """Volcano's `volcano.sh/vgpu-ids-new` text."""
    return ";".join("".join(f"{d.uuid},{d.type},{d.memory},{d.cores}:" for d in container) for container in devices)


def decode_pod_devices(text: str, skipped: list[str] | None = None) -> list[list[Assigned]]:
    """Read `volcano.sh/vgpu-ids-new`; entries with fewer than four fields or bad numbers are skipped
    (and added to `skipped` when given)."""
    containers: list[list[Assigned]] = []
    for part in text.split(";") if text else ():
        devices = []
        for entry in part.split(":"):
            fields = entry.split(",")
            try:
                devices.append(Assigned(fields[0], fields[1], int(fields[2]), int(fields[3])))
            except (IndexError, ValueError):
                if entry and skipped is not None:
                    skipped.append(entry)
        containers.append(devices)
    return containers


def _type_allowed(annotations: Mapping[str, str], card_type: str) -> bool:
    upper = card_type.upper()
    if USE_TYPE in annotations:
        return any(value.upper() in upper for value in annotations[USE_TYPE].split(","))
    if NO_USE_TYPE in annotations:
        return not any(value.upper() in upper for value in annotations[NO_USE_TYPE].split(","))
    return True


def _uuid_list(value: str | None) -> list[str]:
    return [uuid.strip() for uuid in (value or "").split(",") if uuid.strip()]


def group_key(task: TaskInfo) -> str:
    """`namespace/group` of the pod's PodGroup annotation, or ""."""
    for key in GROUP_ANNOTATIONS:
        if task.annotations.get(key):
            return f"{task.namespace}/{task.annotations[key]}"
    return ""


class VGpu:
    """One registered card and what the pods on it use."""

    __slots__ = ("index", "memory", "pods", "splits", "type", "used_cores", "used_memory", "used_pods", "uuid")

    def __init__(self, index: int, uuid: str, splits: int, memory: int, card_type: str) -> None:
        self.index = index
        self.uuid = uuid
        self.splits = splits
        self.memory = memory
        self.type = card_type
        self.used_pods = 0
        self.used_memory = 0
        self.used_cores = 0
        #: Per pod on the card: memory, cores, PodGroup key.
        self.pods: dict[TaskID, tuple[int, int, str]] = {}

    def score(self, policy: str) -> float:
        """Volcano's GPUScore of the card as it stands."""
        if policy == BINPACK:
            return 100.0 * self.used_memory / self.memory if self.memory else 0.0
        if policy == SPREAD:
            return 100.0 if self.used_pods == 0 else 0.0
        return 0.0


class VGpuNode:
    """One node's registered cards, and per pod what it holds on them (for exact release)."""

    __slots__ = ("cards", "held", "mode", "name", "version")

    def __init__(self, name: str, cards: dict[int, VGpu]) -> None:
        self.name = name
        self.cards = cards
        self.mode = HAMI_CORE
        self.held: dict[TaskID, list[tuple[int, int, int]]] = {}
        #: Bumped by every hold and release: a fit computed at one version holds until the next.
        self.version = 0

    @classmethod
    def from_node(cls, node: NodeInfo, warn: Callable[[str], None]) -> VGpuNode | None:
        """The node's cards from its register annotation; None unless it registers cards and offers the
        three vGPU resources."""
        text = node.spec.annotations.get(REGISTER)
        if text is None:
            return None
        if any(not node.allocatable.scalars.get(name) for name in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY)):
            return None
        cards: dict[int, VGpu] = {}
        for index, part in enumerate(text.split(":")):
            if "," not in part:
                continue
            fields = part.split(",")
            if len(fields) < 6:
                warn(f"Node {node.name}: field metadata.annotations[{REGISTER}]: card {part!r} has fewer than 6 fields")
                return None
            cards[index] = VGpu(index, fields[0], _atoi(fields[1]), _atoi(fields[2]), fields[3])
        return cls(node.name, cards) if cards else None

    def order(self, policy: str) -> list[int]:
        """Card indexes in the order the policy tries them."""
        if policy == BINPACK:
            return sorted(self.cards, key=lambda i: (-self.cards[i].used_memory, i))
        if policy == SPREAD:
            return sorted(self.cards, key=lambda i: (self.cards[i].used_pods, i))
        return sorted(self.cards, reverse=True)

    def fit(self, task: TaskInfo, policy: str) -> tuple[list[list[Assigned]], float] | str:
        """The devices per container and the device score, or why the node cannot hold the task; the
        node is unchanged either way."""
        taken: list[tuple[int, int, int]] = []
        try:
            return self._fit(task, policy, taken)
        finally:
            for index, memory, cores in taken:
                card = self.cards[index]
                card.used_pods -= 1
                card.used_memory -= memory
                card.used_cores -= cores

    def _fit(
        self, task: TaskInfo, policy: str, taken: list[tuple[int, int, int]]
    ) -> tuple[list[list[Assigned]], float] | str:
        mode = task.annotations.get(MODE)
        if mode is not None and mode != self.mode:
            return f"pod required sharing mode {mode} is not the same as the node mode {self.mode}"
        group = group_key(task) if task.annotations.get(GROUP_POLICY) == SPREAD else ""
        allow, deny = _uuid_list(task.annotations.get(USE_UUID)), _uuid_list(task.annotations.get(NO_USE_UUID))
        score = 0.0
        devices: list[list[Assigned]] = []
        for request in _requests(task):
            if request.count > len(self.cards):
                return f"no enough gpu cards on node {self.name}"
            container: list[Assigned] = []
            uuid_matched = False
            for index in self.order(policy):
                card = self.cards[index]
                if (allow and card.uuid not in allow) or card.uuid in deny:
                    continue
                uuid_matched = True
                memory = card.memory * request.percentage // 100 if request.percentage != 101 else request.memory
                if not self._suits(card, request, memory, group, task.annotations):
                    continue
                card.used_pods += 1
                card.used_memory += memory
                card.used_cores += request.cores
                taken.append((index, memory, request.cores))
                if request.count > 0:
                    request.count -= 1
                    container.append(Assigned(card.uuid, NVIDIA, memory, request.cores))
                    score += card.score(policy)
                if request.count == 0:
                    break
            if request.count > 0:
                if (allow or deny) and not uuid_matched:
                    return (
                        f"no GPU matches UUID constraints {USE_UUID}={task.annotations.get(USE_UUID, '')!r}, "
                        f"{NO_USE_UUID}={task.annotations.get(NO_USE_UUID, '')!r} on node {self.name}"
                    )
                return "not enough gpu fitted on this node"
            devices.append(container)
        return devices, score

    @staticmethod
    def _suits(card: VGpu, request: _Request, memory: int, group: str, annotations: Mapping[str, str]) -> bool:
        if card.splits <= card.used_pods:
            return False
        if group and any(g == group and (m > 0 or c > 0) for m, c, g in card.pods.values()):
            return False
        if card.memory - card.used_memory < memory:
            return False
        if card.used_cores + request.cores > FULL_CORES:
            return False
        if request.cores == FULL_CORES and card.used_pods > 0:
            return False
        if card.used_cores == FULL_CORES and request.cores == 0:
            return False
        return NVIDIA in card.type and _type_allowed(annotations, card.type)

    def hold(self, task: TaskInfo, devices: list[list[Assigned]], *, exact: bool) -> None:
        """Account the pod's devices. `exact` (a placement of this session) counts every device; a pod
        read from its annotation counts each card once, with its first device there (as Volcano)."""
        self.version += 1
        by_uuid = {card.uuid: card for card in self.cards.values()}
        held = self.held.setdefault(task.uid, [])
        group = group_key(task)
        for container in devices:
            for device in container:
                card = by_uuid.get(device.uuid) or next((c for c in self.cards.values() if c.uuid in device.uuid), None)
                if card is None or (not exact and task.uid in card.pods):
                    continue
                card.used_pods += 1
                card.used_memory += device.memory
                card.used_cores += device.cores
                memory, cores, _ = card.pods.get(task.uid, (0, 0, group))
                card.pods[task.uid] = (memory + device.memory, cores + device.cores, group)
                held.append((card.index, device.memory, device.cores))

    def release(self, uid: TaskID) -> None:
        """Undo `hold` for the pod."""
        self.version += 1
        for index, memory, cores in self.held.pop(uid, ()):
            card = self.cards[index]
            card.used_pods -= 1
            card.used_memory -= memory
            card.used_cores -= cores
            card.pods.pop(uid, None)


def _atoi(text: str) -> int:
    """Go's Atoi with the error ignored: 0 for anything not an integer."""
    try:
        return int(text)
    except ValueError:
        return 0
