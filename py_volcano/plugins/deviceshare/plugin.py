"""The deviceshare plugin: per-node device state, the device predicate and score, and the devices taken
and given back as the session allocates and discards."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import structlog

from py_volcano.api import MaskArray, NodeInfo, TaskID, TaskInfo, TaskStatus, is_allocated_status
from py_volcano.framework import EventHandler, IndexArray, PredicateStatus, Session
from py_volcano.plugins.deviceshare import gpushare, vgpu
from py_volcano.plugins.deviceshare.args import DeviceShareArgs
from py_volcano.plugins.deviceshare.gpushare import SharedGpus
from py_volcano.plugins.deviceshare.vgpu import VGpuNode
from py_volcano.plugins.deviceshare.vgpu_fits import VGpuFits

__all__ = ["NAME", "DeviceSharePlugin", "NodeDevices"]

NAME = "deviceshare"
log = structlog.get_logger(__name__)
FloatArray = npt.NDArray[np.float64]
_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})


class NodeDevices:
    """The shareable devices of one node: GPU cards (sharing or number) and vGPU cards."""

    __slots__ = ("gpus", "vgpus")

    def __init__(self, gpus: SharedGpus | None, vgpus: VGpuNode | None) -> None:
        self.gpus = gpus
        self.vgpus = vgpus


class DeviceSharePlugin:
    """Filters and scores nodes by their shareable devices and writes the devices chosen on the pod."""

    name = NAME

    def __init__(self, args: DeviceShareArgs) -> None:
        self.args = args
        self.ssn: Session | None = None
        self.nodes: dict[str, NodeDevices] = {}
        #: The session's node rows that have devices.
        self.rows: list[tuple[int, NodeInfo]] = []
        self.row_of: dict[str, int] = {}
        #: Per node row: the GPU memory left on its emptiest card and its idle cards (inf: no GPU cards).
        self.free_memory: FloatArray = np.zeros(0)
        self.idle_cards: FloatArray = np.zeros(0)
        #: Tasks placed in this session whose devices the handlers took, and the annotations they wrote.
        self.placed: dict[TaskID, Mapping[str, str]] = {}
        #: Tasks evicted in this session whose devices were given back (restored if the eviction is undone).
        self.evicted: set[TaskID] = set()
        self.vgpu_fits: VGpuFits | None = None

    def on_session_open(self, ssn: Session) -> None:
        """Build every node's devices with what its pods hold; register the predicate, score and handlers."""
        self.ssn, self.placed, self.evicted, self.vgpu_fits = ssn, {}, set(), None
        if self.args.ascend_vnpu:
            ssn.warn(f"{NAME}: {', '.join(self.args.ascend_vnpu)}: Ascend vNPU is not supported; ignored")
        self.nodes = self._build(ssn) if self.args.gpu_sharing or self.args.gpu_number or self.args.vgpu else {}
        if not self.nodes:
            return
        self.rows = [(row, node) for row, node in enumerate(ssn.node_list) if node.name in self.nodes]
        self.row_of = {node.name: row for row, node in self.rows}
        self.free_memory = np.full(len(ssn.node_list), np.inf)
        self.idle_cards = np.full(len(ssn.node_list), np.inf)
        cards = {row: vgpus for row, node in self.rows if (vgpus := self.nodes[node.name].vgpus) is not None}
        if cards:
            policy, weight = self.args.schedule_policy, self.args.schedule_weight
            self.vgpu_fits = VGpuFits(len(ssn.node_list), cards, policy=policy, weight=weight)
        for row, node in self.rows:
            self._refresh(row, self.nodes[node.name])
        ssn.add_predicate_fn(NAME, self.predicate)
        ssn.add_batch_predicate_fn(NAME, self.predicate_mask)
        if self.args.vgpu and self.args.schedule_weight > 0:
            ssn.add_batch_node_order_fn(NAME, self.scores)
        ssn.add_event_handler(EventHandler(allocate=self._allocated, deallocate=self._deallocated))

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session; the device state stays for the explanations written as the session closes."""
        self.ssn = None

    def _build(self, ssn: Session) -> dict[str, NodeDevices]:
        nodes: dict[str, NodeDevices] = {}
        gpus_on = self.args.gpu_sharing or self.args.gpu_number
        for node in ssn.node_list:
            gpus = SharedGpus.from_node(node, ssn.warn) if gpus_on else None
            vgpus = VGpuNode.from_node(node, ssn.warn) if self.args.vgpu else None
            if gpus is None and vgpus is None:
                continue
            devices = nodes[node.name] = NodeDevices(gpus, vgpus)
            for task in node.tasks.values():
                if is_allocated_status(task.status):
                    self._hold_existing(devices, task)
        return nodes

    def _hold_existing(self, devices: NodeDevices, task: TaskInfo) -> None:
        """Account a pod already on the node from the annotations written when it was placed; a malformed
        annotation is warned about and what it fails to name is not counted."""
        if devices.gpus is not None and (gpushare.gpu_memory(task) > 0 or gpushare.gpu_number(task) > 0):
            cards = gpushare.gpu_index(task.annotations)
            if cards is None and gpushare.GPU_INDEX in task.annotations:
                self._warn_annotation(task, gpushare.GPU_INDEX, "is not a list of card indexes")
            devices.gpus.hold(task.uid, cards or [], gpushare.gpu_memory(task))
        ids = task.annotations.get(vgpu.ASSIGNED_IDS)
        if devices.vgpus is not None and ids:
            skipped: list[str] = []
            devices.vgpus.hold(task, vgpu.decode_pod_devices(ids, skipped), exact=False)
            if skipped:
                self._warn_annotation(task, vgpu.ASSIGNED_IDS, f"entries {skipped} are not uuid,type,memory,cores")

    def _warn_annotation(self, task: TaskInfo, key: str, problem: str) -> None:
        if self.ssn is not None:
            value = task.annotations.get(key)
            self.ssn.warn(f"Pod {task.key}: field metadata.annotations[{key}]: {value!r} {problem}; not counted")

    def _requests_gpus(self, task: TaskInfo) -> bool:
        return (self.args.gpu_sharing and gpushare.gpu_memory(task) > 0) or (
            self.args.gpu_number and gpushare.gpu_number(task) > 0
        )

    def predicate(self, task: TaskInfo, node: NodeInfo) -> PredicateStatus | None:
        """Refuse the node when no device there fits the task (Volcano's reason, vGPU's with its cause)."""
        devices = self.nodes.get(node.name)
        if devices is None:
            return None
        if devices.gpus is not None and self._requests_gpus(task):
            reason = devices.gpus.failure(task, sharing=self.args.gpu_sharing, number=self.args.gpu_number)
            if reason is not None:
                return PredicateStatus(reason, resolvable=True)
        if devices.vgpus is not None and vgpu.has_vgpu_request(task):
            fit = devices.vgpus.fit(task, self.args.schedule_policy)
            if isinstance(fit, str):
                return PredicateStatus(f"hami-vgpuDeviceSharing error: {fit}", resolvable=True)
        return None

    def predicate_mask(self, task: TaskInfo, for_preempt: bool) -> MaskArray:
        """`predicate` over the session's nodes at once (a task asking no device passes everywhere);
        with `for_preempt`, refusals preemption may resolve do not count."""
        mask: MaskArray = np.ones(len(self.free_memory), dtype=bool)
        if for_preempt:  # every device refusal is one preemption may resolve
            return mask
        memory, count = gpushare.gpu_memory(task), gpushare.gpu_number(task)
        if self.args.gpu_sharing and memory > 0:
            mask &= self.free_memory >= memory
        if self.args.gpu_number and count > 0:
            mask &= self.idle_cards >= count
        if self.vgpu_fits is not None and vgpu.has_vgpu_request(task):
            mask &= self.vgpu_fits.of(task).ok
        return mask

    def _refresh(self, row: int, devices: NodeDevices) -> None:
        """Bring the node's row of `free_memory` and `idle_cards` up to date with its cards."""
        if devices.gpus is not None:
            self.free_memory[row] = devices.gpus.most_free_memory()
            self.idle_cards[row] = len(devices.gpus.idle_cards())
        if devices.vgpus is not None and self.vgpu_fits is not None:
            self.vgpu_fits.touch(row)

    def scores(self, task: TaskInfo, rows: IndexArray) -> FloatArray:
        """The vGPU device score of each candidate row (Volcano's GPUScore summed over the cards the task
        would take, rounded), times `deviceshare.ScheduleWeight`; GPU sharing and number score 0."""
        if self.vgpu_fits is None or not vgpu.has_vgpu_request(task):
            return np.zeros(len(rows))
        return self.vgpu_fits.of(task).score[rows]

    def _allocated(self, task: TaskInfo) -> None:
        devices = self.nodes.get(task.node_name)
        if devices is None:
            return
        if task.status not in _PLACED:  # an undone eviction: the pod holds its devices again
            if task.uid in self.evicted:
                self.evicted.discard(task.uid)
                self._hold_existing(devices, task)
        else:
            annotations = self._take(devices, task)
            if annotations:
                self.placed[task.uid] = annotations
                task.bind_annotations = {**task.bind_annotations, **annotations}
        self._refresh(self.row_of[task.node_name], devices)

    def _take(self, devices: NodeDevices, task: TaskInfo) -> dict[str, str]:
        """Choose and hold the task's devices on the node; return the annotations that tell the device
        plugin which (empty when nothing was asked or nothing fits, which the predicate rules out)."""
        assert self.ssn is not None
        annotations: dict[str, str] = {}
        if devices.gpus is not None and self._requests_gpus(task):
            cards = devices.gpus.hold(task.uid, devices.gpus.choose(task), gpushare.gpu_memory(task))
            if cards:
                now = self.ssn.now
                annotations[gpushare.PREDICATE_TIME] = str(int(now.timestamp() * 1_000_000_000))
                annotations[gpushare.GPU_INDEX] = ",".join(map(str, cards))
            else:
                log.warning("no_gpu_fits", task=task.key, node=task.node_name)
        if devices.vgpus is not None and vgpu.has_vgpu_request(task):
            fit = devices.vgpus.fit(task, self.args.schedule_policy)
            if isinstance(fit, str):
                log.warning("no_vgpu_fits", task=task.key, node=task.node_name, reason=fit)
            else:
                devices.vgpus.hold(task, fit[0], exact=True)
                ids = vgpu.encode_pod_devices(fit[0])
                seconds = str(int(self.ssn.now.timestamp()))
                annotations.update(
                    {
                        vgpu.ASSIGNED_NODE: task.node_name,
                        vgpu.ASSIGNED_TIME: seconds,
                        vgpu.ASSIGNED_IDS: ids,
                        vgpu.TO_ALLOCATE: ids,
                        vgpu.BIND_PHASE: "allocating",
                        vgpu.BIND_TIME: seconds,
                    }
                )
        return annotations

    def _deallocated(self, task: TaskInfo) -> None:
        devices = self.nodes.get(task.node_name)
        if devices is None:
            return
        written = self.placed.pop(task.uid, None)
        if written is None and task.status is not TaskStatus.RELEASING:
            return
        if devices.gpus is not None:
            devices.gpus.release(task.uid)
        if devices.vgpus is not None:
            devices.vgpus.release(task.uid)
        if written is None:
            self.evicted.add(task.uid)
        else:
            task.bind_annotations = {k: v for k, v in task.bind_annotations.items() if k not in written}
        self._refresh(self.row_of[task.node_name], devices)
