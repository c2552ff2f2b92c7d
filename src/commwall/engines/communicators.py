"""Communicators on a cluster, as both the flow and the packet engine replay them: the GPUs of a
group (:func:`group_members`), the communicator nccl-tests measures (:func:`world_group`), a
task's shape made exact (:func:`exact_shape`) and the non-blocking twin of a cluster whose rate
caps the compiled plans take (:func:`non_blocking`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from commwall.collectives.fabric import CommFabric
from commwall.collectives.schedule import CollectiveTask, Group, Placement
from commwall.engines.base import EngineInputError

if TYPE_CHECKING:
    from commwall.cluster import Cluster

__all__ = ["exact_shape", "group_members", "non_blocking", "world_group"]

IntArray = npt.NDArray[np.int64]


def group_members(group: Group, cluster: Cluster) -> IntArray:
    """``(copies, size)`` GPUs of a communicator: its placement, or one copy laid out by shape
    (``ranks_per_domain`` consecutive GPUs at the start of each of ``n_domains`` domains)."""
    if group.placement is not None:
        members = group.placement.members()
    else:
        i = np.arange(group.nranks, dtype=np.int64)
        g = group.ranks_per_domain
        members = ((i // g) * cluster.scale_up_domain + i % g)[None, :]
    if int(members.max()) >= cluster.n_gpus:
        raise EngineInputError(
            f"group {group.name!r} reaches GPU {int(members.max())}, but the cluster has "
            f"{cluster.n_gpus} GPUs"
        )
    return members


def world_group(cluster: Cluster, fabric: CommFabric) -> Group:
    """The communicator nccl-tests measures (``cluster.world(g)``) with its GPUs: the first
    ``g`` GPUs of every node."""
    per_node = fabric.nranks // cluster.n_nodes
    placement = Placement(fabric.nranks, cluster.gpus_per_node, per_node)
    return Group("world", fabric.n_domains, fabric.ranks_per_domain, placement)


def exact_shape(task: CollectiveTask) -> CollectiveTask:
    """``task`` with a shape of exactly its placement's rank count.

    A shape is whole domains (:func:`commwall.workload.layout.group_shape`: DP 12 on 8-GPU
    domains is modelled as 2 × 8); the flow engine moves the real 12 ranks, so its caps come
    from the largest even split that fits the domains (2 × 6).
    """
    group = task.group
    if group.placement is None or group.placement.size == group.nranks:
        return task
    size = group.placement.size
    per = max(d for d in range(1, min(size, group.ranks_per_domain) + 1) if size % d == 0)
    return replace(task, group=replace(group, n_domains=size // per, ranks_per_domain=per))


def non_blocking(cluster: Cluster) -> Cluster:
    """``cluster`` with a non-blocking fabric: the rate caps come from it, the taper from the
    topology the flows actually cross."""
    if cluster.topology.oversubscription == 1.0:
        return cluster
    spec = cluster.topology.model_copy(update={"oversubscription": 1.0})
    return replace(cluster, topology=spec)
