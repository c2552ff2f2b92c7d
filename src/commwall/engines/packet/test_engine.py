"""The packet engine on clusters: it agrees with the flow engine where their models meet, runs
any schedule in dependency order, and says what it cannot model."""

from __future__ import annotations

import pytest

from commwall.cluster import cluster_from_option
from commwall.collectives.ops import Op
from commwall.collectives.schedule import CollectiveTask, ComputeTask, Phase, Schedule
from commwall.engines.communicators import world_group
from commwall.engines.flow.engine import FlowEngine
from commwall.engines.packet.engine import PacketEngine, cluster_graph
from commwall.engines.registry import get_engine
from commwall.transport import TransportError


def _cluster(preset: str = "dgx-h100", nodes: int = 2):  # type: ignore[no-untyped-def]
    return cluster_from_option(preset, nodes=nodes, sharp=None, gdr=None)


def _task(cl, op: Op, size: float, algo: str | None = "ring") -> CollectiveTask:  # type: ignore[no-untyped-def]
    return CollectiveTask(op, size, world_group(cl, cl.world(None)), algo, None)


def test_graph_has_every_gpu_port_and_nic_attachment() -> None:
    cl = _cluster()
    graph, lay = cluster_graph(cl)
    topo = cl.scale_out_topology()
    assert lay.net_links == topo.n_links
    # per GPU: NVLink out + in, PCIe to the NIC and back
    assert len(graph.link_src) == topo.n_links + 4 * cl.n_gpus
    assert graph.kinds.count("gpu") == cl.n_gpus
    assert graph.kinds.count("nvswitch") == cl.n_domains
    assert not graph.link_fabric[lay.net_links :].any()


@pytest.mark.parametrize("preset", ["dgx-h100", "dgx-h100-roce"])
@pytest.mark.parametrize("op", [Op.ALL_REDUCE, Op.ALL_GATHER])
def test_ring_agrees_with_flow_engine(preset: str, op: Op) -> None:
    """An uncontended ring on a non-blocking rail-optimized fabric: within 5%."""
    cl = _cluster(preset)
    task = _task(cl, op, 4e6)
    flow = FlowEngine().run(Schedule.single(task), cl)
    packet = PacketEngine().run(Schedule.single(task), cl)
    assert packet.makespan == pytest.approx(flow.makespan, rel=0.05)
    assert packet.phases[0].algo == "ring"
    assert packet.counters["drop_packets"] == 0
    assert "lossless fabric dropped nothing" in packet.invariants


def test_nvls_runs_packet_by_packet_and_sharp_falls_back_and_says_so() -> None:
    """NVLS moves through the domain's NVSwitch node like any flow, so the packet engine runs
    NCCL's choice; reduction in the scale-out switches (CollNet/SHARP) is not modelled: the
    engine runs the best other algorithm and says so, and a forced CollNet is an error."""
    cl = _cluster(nodes=1)
    result = PacketEngine().run(Schedule.single(_task(cl, Op.ALL_REDUCE, 64e6, algo=None)), cl)
    assert result.phases[0].algo == "nvls"
    assert "substitutions" not in result.details
    sharp = cluster_from_option("dgx-h100", nodes=2, sharp=True, gdr=None)
    forced = _task(sharp, Op.ALL_REDUCE, 8e6, algo="collnet")
    with pytest.raises(TransportError, match="SHARP"):
        PacketEngine().run(Schedule.single(forced), sharp)


def test_schedule_order_compute_and_streams() -> None:
    cl = _cluster()
    sched = Schedule()
    a = sched.add(Phase("fwd", ComputeTask(20e-6), "compute"))
    sched.add(Phase("grads", _task(cl, Op.ALL_REDUCE, 1e6), "collective", "comm", after=(a,)))
    sched.add(Phase("bwd", ComputeTask(30e-6), "compute"))
    result = get_engine("packet").run(sched, cl)
    fwd, grads, bwd = result.phases
    assert grads.start >= fwd.end
    assert bwd.start == pytest.approx(fwd.end)
    assert bwd.end == pytest.approx(50e-6, rel=1e-9)
    assert result.makespan == max(grads.end, bwd.end)


def test_same_seed_same_result_and_fabric_override() -> None:
    cl = _cluster()
    task = _task(cl, Op.ALL_GATHER, 1e6)
    one = PacketEngine("uec").run(Schedule.single(task), cl, seed=3)
    two = PacketEngine("uec").run(Schedule.single(task), cl, seed=3)
    assert one.makespan == two.makespan and one.counters == two.counters
    assert one.details["packet"]["fabric"] == "uec"
    assert one.details["routing"] == "spray"


def test_bad_routing_is_a_clear_error() -> None:
    cl = _cluster()
    with pytest.raises(TransportError, match="routing='cells'"):
        PacketEngine().run(Schedule.single(_task(cl, Op.ALL_GATHER, 1e6)), cl, "cells")
