"""The cluster link graph both engines run on: numbering, rates, names and PXN relays."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from commwall.cluster import HOST_BOUNCE_LATENCY, cluster_from_option
from commwall.engines.flow.network import FlowNetwork
from commwall.engines.links import PCIE_ATTACH_LATENCY, ClusterLinks
from commwall.engines.packet.engine import cluster_graph


def _links(preset: str = "dgx-h100", nodes: int = 2) -> ClusterLinks:
    return ClusterLinks(cluster_from_option(preset, nodes=nodes))


def test_numbering_follows_the_documented_order() -> None:
    links = _links()
    topo = links.topology
    n = links.n_gpus
    assert links.net_links == topo.n_links and links.net_nodes == topo.n_nodes
    assert links.n_links == topo.n_links + 4 * n
    assert links.n_nodes == topo.n_nodes + n + 2  # two NVSwitch domains
    # GPU 9's NVLink out goes from its node to its domain's switch, and back
    out, back = links.scale_up_link(9, inbound=False), links.scale_up_link(9, inbound=True)
    assert (links.link_src[out], links.link_dst[out]) == (links.gpu0 + 9, links.switch0 + 1)
    assert (links.link_src[back], links.link_dst[back]) == (links.switch0 + 1, links.gpu0 + 9)
    # its PCIe attachment ends at its own NIC: node 1, rail 1 (one NIC per GPU)
    pcie = links.pcie_link(9, inbound=False)
    assert links.link_dst[pcie] == 1 * links.rails + 1
    assert links.node_kind(int(links.link_dst[pcie])) == "nic"
    assert links.node_kind(links.switch0) == "nvswitch"


def test_one_domain_has_no_fabric_and_no_nic_links() -> None:
    links = _links(nodes=1)
    assert not links.has_fabric
    assert links.net_links == 0 and links.n_links == 2 * links.n_gpus
    assert links.n_nodes == links.n_gpus + 1


def test_rates_latencies_and_flow_control() -> None:
    links = _links()
    cl = links.cluster
    rate, lat = links.line_rate(), links.latency()
    L, P = links.net_links, links.pcie_base
    assert np.array_equal(rate[:L], np.maximum(links.topology.link_capacity, 1.0))
    assert np.all(rate[L:P] == cl.scale_up_link_rate)
    assert np.all(rate[P:] == cl.pcie.bandwidth(16))
    assert np.all(lat[L:P] == 0) and np.all(lat[P:] == PCIE_ATTACH_LATENCY)
    assert links.fabric_mask().sum() == L
    # a payload share scales the scale-out links only
    assert np.allclose(links.line_rate(0.5)[:L], rate[:L] / 2)
    assert np.array_equal(links.line_rate(0.5)[L:], rate[L:])
    no_gdr = ClusterLinks(replace(cl, gpudirect_rdma=False))
    assert np.all(no_gdr.latency()[P:] == PCIE_ATTACH_LATENCY + HOST_BOUNCE_LATENCY)


def test_names_and_classes() -> None:
    links = _links()
    L, P = links.net_links, links.pcie_base
    assert links.link_name(L) == "GPU 0 NVLink out"
    assert links.link_name(L + 3) == "GPU 1 NVLink in"
    assert links.link_name(P + 1) == "GPU 0 PCIe from NIC"
    assert links.link_name(links.n_links) == f"virtual link {links.n_links}"
    first = links.link_name(0)
    assert "NIC" in first or "leaf" in first
    assert links.link_class(L) == "scale-up"
    assert links.link_class(P) == "PCIe (GPU-NIC)"
    assert links.link_class(0) == "access (NIC-leaf)"
    assert links.node_name(0) == "node 0 NIC 0"
    assert links.node_name(links.switch0) == "NVSwitch 0"


def test_relays_take_pxn_legs_only_where_the_nic_is_another_gpus() -> None:
    links = _links()
    src, dst = np.array([1, 1, 1]), np.array([10, 10, 10])
    rail = np.array([-1, -1, 5])
    at = links.relays(src, dst, rail, np.array([False, True, False]))
    # own NIC: GPU 1 sends on rail 1, GPU 10 (local 2) receives on rail 2
    assert (at.ep_src[0], at.ep_dst[0]) == (1, 8 + 2) and not at.leg_src[0]
    assert not at.leg_dst[0]
    # PXN: the receiver's rail at both ends, so GPU 1 relays through GPU 2 first
    assert (at.ep_src[1], at.ep_dst[1]) == (2, 10) and at.leg_src[1] and not at.leg_dst[1]
    assert at.via_src[1] == 2 and at.via_dst[1] == 10
    # a chosen rail: relays at both ends through the GPUs owning rail 5
    assert (at.via_src[2], at.via_dst[2]) == (5, 13) and at.leg_src[2] and at.leg_dst[2]
    # GPUs that share a NIC use it without a relay
    shared = ClusterLinks(replace(links.cluster, nics_per_node=2))
    at = shared.relays(np.array([1]), np.array([9]), np.array([-1]), False)
    assert not at.leg_src[0] and not at.leg_dst[0]
    assert (at.ep_src[0], at.ep_dst[0]) == (0, 2)


@pytest.mark.parametrize("preset", ["dgx-h100", "dgx-h100-roce", "dgx-a100"])
def test_both_engines_run_on_the_same_graph(preset: str) -> None:
    cl = cluster_from_option(preset, nodes=2)
    flow = FlowNetwork(cl)
    graph, links = cluster_graph(cl)
    assert flow.n_links == links.scale_up_end
    assert np.array_equal(graph.link_src, links.link_src)
    assert np.array_equal(graph.link_rate, links.line_rate())
    # the flow engine's capacities are the graph's rates, payload only on the fabric
    caps = flow.capacity()
    assert np.array_equal(caps[links.net_links :], graph.link_rate[links.net_links : flow.n_links])
    assert np.all(caps[: links.net_links] < graph.link_rate[: links.net_links])
    assert [flow.link_name(i) for i in range(flow.n_links)] == graph.link_names[: flow.n_links]
