"""deviceshare: GPU sharing, GPU number and vGPU as Volcano's deviceshare plugin schedules them
(docs/plugins.md, "deviceshare").

Layout: `args` (the `deviceshare.*` arguments), `gpushare` (cards shared by memory or taken whole),
`vgpu` (Volcano's vGPU cards), `vgpu_fits` (vGPU fits per task shape over the node rows), `plugin`
(node device state, predicate, score, event handlers).
"""

from py_volcano.plugins.deviceshare.args import DeviceShareArgs
from py_volcano.plugins.deviceshare.plugin import NAME, DeviceSharePlugin

__all__ = ["NAME", "DeviceShareArgs", "new"]


def new(args: DeviceShareArgs) -> DeviceSharePlugin:
    """Build the plugin."""
    return DeviceSharePlugin(args)
