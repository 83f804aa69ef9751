"""The scheduler configurations of Volcano's user guides and design notes that name sla, resourcequota,
nodegroup, cdp, pdb, resource-strategy-fit, task-topology, deviceshare, network-topology-aware or numa-aware load as
they are written (nothing unsupported, no unknown key) and schedule a small cluster."""

from __future__ import annotations

import pytest

from py_volcano.framework import run_cycle
from py_volcano.registry import default_registry, load_conf
from tests.builders import cluster, node, pod, queue

TIER1 = "- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n"

CONFS = {
    # docs/user-guide/how_to_use_cdp_plugin.md
    "cdp-guide": 'actions: "enqueue, allocate, preempt, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
    "  - name: gang\n  - name: conformance\n  - name: cdp\n- plugins:\n  - name: drf\n  - name: predicates\n"
    "  - name: task-topology\n    arguments:\n      task-topology.weight: 10\n  - name: proportion\n"
    "  - name: nodeorder\n  - name: binpack\n",
    # docs/user-guide/how_to_use_task_topology_plugin.md
    "task-topology-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: predicates\n  - name: task-topology\n    arguments:\n"
    "      task-topology.weight: 10\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n",
    # docs/user-guide/how_to_use_nodegroup_plugin.md: strict, preferred order, hierarchy
    "nodegroup-strict": 'actions: "allocate, backfill, preempt, reclaim"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodegroup\n    arguments:\n"
    "      strict: false\n",
    "nodegroup-preferred-order": 'actions: "allocate, backfill, preempt, reclaim"\ntiers:\n' + TIER1
    + "- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodegroup\n"
    "    arguments:\n      enablePreferredOrder: true\n",
    "nodegroup-hierarchy": 'actions: "allocate, backfill, preempt, reclaim"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodegroup\n    enableHierarchy: true\n",
    # docs/user-guide/how_to_use_resource_strategy_fit_plugin.md
    "resource-strategy-fit-guide": 'actions: "reclaim, allocate, backfill, preempt"\ntiers:\n' + TIER1
    + "- plugins:\n  - name: drf\n  - name: predicates\n  - name: resource-strategy-fit\n    arguments:\n"
    "      resourceStrategyFitWeight: 10\n      resources:\n        cpu:\n          type: \"LeastAllocated\"\n"
    "          weight: 1\n        memory:\n          type: \"LeastAllocated\"\n          weight: 1\n"
    "        nvidia.com/gpu:\n          type: \"MostAllocated\"\n          weight: 2\n",
    # pkg/scheduler/plugins/resource-strategy-fit/resource_strategy_fit.go (its documented example)
    "resource-strategy-fit-sra-proportional": 'actions: "enqueue, allocate, backfill, reclaim, preempt"\ntiers:\n'
    "- plugins:\n  - name: resource-strategy-fit\n    arguments:\n       resourceStrategyFitWeight: 10\n"
    "       resources:\n         nvidia.com/gpu:\n           type: MostAllocated\n           weight: 2\n"
    "         cpu:\n           type: LeastAllocated\n           weight: 1\n       sra:\n         enable: true\n"
    "         resources: nvidia.com/gpu\n         weight: 10\n         resourceWeight:\n"
    "           nvidia.com/gpu: 1\n       proportional:\n         enable: false\n"
    "         resources: nvidia.com/gpu\n         resourceProportion:\n           nvidia.com/gpu.cpu: 4\n"
    "           nvidia.com/gpu.memory: 8\n",
    # docs/design/sla-plugin.md
    "sla-design": 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    "  - name: sla\n    arguments:\n      sla-waiting-time: 1h2m3s\n",
    # docs/design/pdb-plugin.md
    "pdb-design": 'actions: "reclaim, preempt, shuffle"\ntiers:\n- plugins:\n  - name: pdb\n',
    # docs/user-guide/how_to_use_gpu_sharing.md and how_to_use_gpu_number.md (deviceshare)
    "gpu-sharing-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: deviceshare\n    arguments:\n      deviceshare.GPUSharingEnable: true\n"
    "  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n",
    "gpu-number-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: deviceshare\n    arguments:\n      deviceshare.GPUNumberEnable: true\n"
    "  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n",
    # docs/user-guide/how_to_use_volcano_vgpu.md
    "vgpu-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: predicates\n'
    "  - name: deviceshare\n    arguments:\n      deviceshare.VGPUEnable: true\n"
    "      deviceshare.SchedulePolicy: binpack\n",
    # the resourcequota plugin as Volcano's chart lists it among its plugins
    "resourcequota": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: resourcequota\n  - name: predicates\n  - name: proportion\n",
    # docs/user-guide/how_to_use_network_topology_aware_scheduling.md
    "network-topology-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n"
    "  - name: network-topology-aware\n    arguments:\n      weight: 10\n      hypernode.binpack.cpu: 5\n"
    "      hypernode.binpack.memory: 1\n      hypernode.binpack.resources: nvidia.com/gpu, example.com/foo\n"
    "      hypernode.binpack.resources.nvidia.com/gpu: 2\n      hypernode.binpack.resources.example.com/foo: 3\n"
    "      hypernode.binpack.normal-pod.enable: true\n      hypernode.binpack.normal-pod.fading: 0.8\n",
    # docs/user-guide/how_to_use_numa_aware.md
    "numa-aware-guide": 'actions: "enqueue, allocate, backfill"\ntiers:\n' + TIER1 + "- plugins:\n"
    "  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n"
    "  - name: numa-aware # add it to enable numa-aware plugin\n    arguments:\n      weight: 10\n",
}


#: A node of node group `g` and the queue `default` bound to it, for nodegroup in strict mode.
GROUPED = (
    node(name="n", labels={"volcano.sh/nodegroup-name": "g"}),
    queue(name="default", affinity={"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g"]}}),
)


@pytest.mark.parametrize("text", CONFS.values(), ids=CONFS.keys())
def test_volcano_configuration_loads_and_schedules(text: str) -> None:
    """Nothing reported unsupported or unknown (a warning fails the test), and a pending pod binds."""
    registry = default_registry()
    conf = load_conf(text, registry=registry)
    assert conf.unsupported == ()
    objects = GROUPED if "nodegroup" in text else (node(name="n"),)
    result = run_cycle(cluster(*objects, pod(name="p")), conf, registry)
    if "allocate" in conf.actions:
        assert [(task.key, where) for task, where in result.binds] == [("default/p", "n")]
