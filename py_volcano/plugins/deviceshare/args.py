"""deviceshare's arguments, under Volcano's names (`deviceshare.*`)."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from py_volcano.framework import Arguments

__all__ = ["BINPACK", "SPREAD", "DeviceShareArgs"]

log = structlog.get_logger(__name__)

BINPACK = "binpack"
SPREAD = "spread"
#: Volcano's switches for Ascend vNPU (two current names and the older single one); not supported here.
ASCEND_SWITCHES = (
    "deviceshare.AscendMindClusterVNPUEnable",
    "deviceshare.AscendHAMiVNPUEnable",
    "deviceshare.AscendVNPUEnable",
)


@dataclass(slots=True, frozen=True)
class DeviceShareArgs:
    """Which devices are shared and how nodes are scored; every switch is off by default, as in Volcano."""

    gpu_sharing: bool = False
    """`deviceshare.GPUSharingEnable`: share GPUs by memory (`volcano.sh/gpu-memory`)."""
    gpu_number: bool = False
    """`deviceshare.GPUNumberEnable`: whole GPUs by count (`volcano.sh/gpu-number`)."""
    vgpu: bool = False
    """`deviceshare.VGPUEnable`: Volcano's vGPU (`volcano.sh/vgpu-number`, `-memory`, `-cores`)."""
    node_lock: bool = False
    """`deviceshare.NodeLockEnable`: read, not applied (docs/plugins.md, "deviceshare")."""
    ascend_vnpu: tuple[str, ...] = ()
    """The Ascend vNPU switches written true: not supported; an error is logged when the configuration
    loads and every session warns."""
    schedule_policy: str = ""
    """`deviceshare.SchedulePolicy`: `binpack` or `spread` for vGPU device choice and score; anything else
    takes devices from the highest index down and scores 0."""
    schedule_weight: int = 0
    """`deviceshare.ScheduleWeight`: multiplies the device score; 0 (default) or less scores nothing."""
    known_geometries_cm: str = "kube-system/volcano-vgpu-device-config"
    """`deviceshare.KnownGeometriesCMNamespace`/`deviceshare.KnownGeometriesCMName`: the device config map
    Volcano reads for MIG geometries and resource names; not read here (the defaults apply)."""

    @classmethod
    def parse(cls, args: Arguments) -> DeviceShareArgs:
        """Read the arguments; ConfigError on a wrong type or on switches Volcano refuses together."""
        gpu_sharing = args.get_bool("deviceshare.GPUSharingEnable", False)
        gpu_number = args.get_bool("deviceshare.GPUNumberEnable", False)
        vgpu = args.get_bool("deviceshare.VGPUEnable", False)
        if gpu_sharing and gpu_number:
            raise args.error("deviceshare.GPUNumberEnable", "cannot be true with deviceshare.GPUSharingEnable")
        if (gpu_sharing or gpu_number) and vgpu:
            raise args.error("deviceshare.VGPUEnable", "gpu sharing or gpu number and vgpu cannot be used together")
        ascend = tuple(key for key in ASCEND_SWITCHES if args.get_bool(key, False))
        if ascend:
            log.error("ascend_vnpu_unsupported", owner=args.owner, arguments=list(ascend))
        name = args.get_str("deviceshare.KnownGeometriesCMName", "volcano-vgpu-device-config")
        namespace = args.get_str("deviceshare.KnownGeometriesCMNamespace", "kube-system")
        return cls(
            gpu_sharing=gpu_sharing,
            gpu_number=gpu_number,
            vgpu=vgpu,
            node_lock=args.get_bool("deviceshare.NodeLockEnable", False),
            ascend_vnpu=ascend,
            schedule_policy=args.get_str("deviceshare.SchedulePolicy", ""),
            schedule_weight=args.get_int("deviceshare.ScheduleWeight", 0),
            known_geometries_cm=f"{namespace}/{name}",
        )
