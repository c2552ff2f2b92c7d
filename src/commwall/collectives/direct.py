"""Direct algorithms: every rank talks to its peers with point-to-point sends.

NCCL runs all-to-all and send/recv as grouped ``ncclSend``/``ncclRecv`` (its p2p kernel); the
"one-shot" all-reduce (a direct reduce-scatter then a direct all-gather) that inference libraries
use for small messages is the same pattern with a reduction.

**How NCCL moves one send** (``enqueue.cc`` ``addP2pToPlan``, :mod:`commwall.collectives.nccl`):
over as many channels as its size asks for (:func:`~commwall.collectives.nccl.p2p_channels`:
four of a node's 32 p2p channels for a 32 MiB send inside an H100 node, doubling each time a
channel's part passes 16 MiB), in chunks of 512 KiB over NVLink and 128 KiB across nodes,
Simple protocol unless the send is at most 16 KiB per channel (then LL). A send gets half of
an SM's thread block on each of its channels (the other half receives), so it copies at half
a block's p2p copy rate (:func:`~commwall.collectives.cost.p2p_block_bw`) — 19 GB/s on
Hopper, 21 on Blackwell — which is why ``sendrecv_perf`` inside a node climbs in steps of 4, 8,
16 channels and only reaches the NVLink rate at 512 MiB.

**Peers that share a block.** Inside a node every round (peer offset) of an all-to-all has its
own channels. In a communicator that spans nodes the rounds of one schedule group — 8, or the
gcd of 8 and the GPUs per node (``init.cc``) — get the same channel base
(``ncclP2pChannelBaseForRound``, ``channel.h``), so up to 8 works run in one batch per channel
and ``RunWorkBatch<SendRecv>`` (``sendrecv.h``) gives each ``20 / 8 = 2`` of the block's 20
warps, one to send and one to receive (:func:`~commwall.collectives.nccl.p2p_side_share`). A
copy is taken to move in proportion to its warps — ours: NCCL publishes a full block's cap, not
a warp's — so on a two-node DGX A100 the eight remote peers' copies (2 channels, one warp each)
carry 19 GB/s against the 24 GB/s HDR NIC. Such a communicator also cuts every send, its NVLink
peers' included, by the network's 128 KiB p2p step (``computeBuffSizes``, ``addP2pToPlan``).

**Time**: a chunk crosses a pipeline (:func:`~commwall.collectives.pipeline.chain_time`): inside a
node the sender's copy into the peer and the receiver's copy out; across nodes the sender's copy
into its FIFO, the network (NCCL's per-step network latency, a window of ``NCCL_STEPS`` chunks),
and the receiver's copy out. All peers of an all-to-all run at once: scale-up and network parts
are concurrent, each bounded by its links and by the channels serving it; a rank's network
traffic goes through its own NIC (an all-to-all "cannot aggregate the bandwidth of multiple
NICs", sjeaugey, nccl-tests#267).

The tuner estimate (NCCL has no tuning model for p2p) is the α–β form the module always had:
``α + max((g−1)·c / B_intra, (p−g)·c / B_net)`` per all-pairs step, α being NCCL's ring per-step
latency of the slowest class crossed.
"""

from __future__ import annotations

import math

from commwall.collectives.constants import Gen, Hw, Proto
from commwall.collectives.cost import (
    Cost,
    Unsupported,
    base_latency,
    estimate_cost,
    net_latency,
    p2p_block_bw,
    ring_proto_bw,
    sm_channel_bw,
    step_latency,
    trivial,
)
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import (
    NCCL_SHARED_STEPS,
    NCCL_STEPS,
    P2P_LL_THRESHOLD,
    p2p_channels,
    p2p_channels_per_peer,
    p2p_chunk,
    p2p_group_size,
    p2p_side_share,
    pieces,
)
from commwall.collectives.ops import Op
from commwall.collectives.pipeline import Hop, chain_time


def _all_pairs(f: CommFabric, proto: Proto, chunk: float) -> tuple[float, float, str]:
    """(latency, bandwidth time, bottleneck) of one all-pairs step with ``chunk`` bytes per peer."""
    g, p = f.ranks_per_domain, f.nranks
    intra = (g - 1) * chunk / ring_proto_bw(f, proto, f.intra_bw) if g > 1 else 0.0
    net = (p - g) * chunk / ring_proto_bw(f, proto, f.net_bw_per_rank) if p > g else 0.0
    hw = Hw.NET if p > g else f.intra_hw
    bottleneck = Hw.NET.value if net >= intra else f.intra_hw.value
    return step_latency(f, hw, "ring", proto), max(intra, net), bottleneck


def _tuner(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> tuple[float, float, str]:
    """The α–β estimate (module doc): (latency, bandwidth time, bottleneck)."""
    base = base_latency("ring", proto)
    p = f.nranks
    if op is Op.SENDRECV:
        hw = Hw.NET if f.n_domains > 1 else f.intra_hw
        bw = f.net_bw_per_rank if hw is Hw.NET else f.intra_bw
        latency = base + step_latency(f, hw, "ring", proto)
        return latency, nbytes / ring_proto_bw(f, proto, bw), hw.value
    if op in (Op.BROADCAST, Op.REDUCE):
        lat, bw_time, bottleneck = _all_pairs(f, proto, nbytes)
        return base + lat, bw_time, bottleneck
    lat, bw_time, bottleneck = _all_pairs(f, proto, nbytes / p)
    steps = 2 if op is Op.ALL_REDUCE else 1
    return base + steps * lat, steps * bw_time, bottleneck


def nccl_init_channels(f: CommFabric) -> dict[str, int]:
    """The channel counts NCCL logs for this communicator once it is built, as the model has
    them: ``"%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p
    channels per peer"`` (``init.cc``, ``NCCL_DEBUG=INFO``), so a user can hold the model against
    their own log. NVLS needs two GPUs of the communicator in a node (``ncclNvlsInit``:
    ``gpuCount < 2`` leaves it off); the collnet figure is the coll channels again, as NCCL
    prints it."""
    _, per_peer = p2p_limits(f, network=f.n_domains > 1)
    nvls = f.nvls_channels if f.nvls and f.ranks_per_domain >= 2 else 0
    return {
        "coll": f.channels,
        "collnet": f.channels,
        "nvls": nvls,
        "p2p": f.p2p_channels,
        "p2p_per_peer": per_peer,
    }


def p2p_limits(f: CommFabric, *, network: bool) -> tuple[int, int]:
    """NCCL's (nChannelsMin, nChannelsMax) for this communicator's p2p operations: across
    domains every peer gets the network's count (NCCL keeps the minimum over peers)."""
    return f.memo(("p2p_limits", network), lambda: _p2p_limits(f, network))


def _p2p_limits(f: CommFabric, network: bool) -> tuple[int, int]:
    net = p2p_channels_per_peer(
        nvlink_links=f.nvlink_links, network=True, nics=f.nics_per_rank, nic_gbps=f.nic_gbps,
        p2p_channels=f.p2p_channels, nranks=f.nranks, n_domains=f.n_domains,
        net_peer_channels=f.net_peer_channels,
    )  # fmt: skip
    local = p2p_channels_per_peer(
        nvlink_links=f.nvlink_links if f.intra_hw is Hw.NVLINK else 1, network=False,
        nics=f.nics_per_rank, nic_gbps=f.nic_gbps, p2p_channels=f.p2p_channels,
        nranks=f.nranks, n_domains=f.n_domains,
    )  # fmt: skip
    if f.n_domains > 1:
        return net
    return local if not network else net


def _p2p_plan(f: CommFabric, nbytes: float, *, network: bool) -> tuple[float, int]:
    """``(chunk, channels)`` of one send of ``nbytes`` (``addP2pToPlan``). The channel count
    comes from the communicator's p2p step (``comm->p2pChunkSize``: the network's 128 KiB in any
    communicator that spans nodes, also for its NVLink peers; else 512 KiB over NVLink) and the
    part bounds of a multi-node or single-node communicator; only a network send then tunes its
    chunk down for small sends (:func:`~commwall.collectives.nccl.p2p_chunk`)."""
    low, high = p2p_limits(f, network=network)
    multi = f.n_domains > 1
    nvlink = f.intra_hw is Hw.NVLINK
    grace = f.gen is Gen.BLACKWELL and f.cpu == "other"
    step = p2p_chunk(math.inf, network=multi, nvlink=nvlink, grace_blackwell=grace)
    chunk = (
        p2p_chunk(nbytes, network=True, nvlink=nvlink, grace_blackwell=grace) if network else step
    )
    nc = p2p_channels(nbytes, min_channels=low, max_channels=high, network=multi, chunk=step)
    return float(chunk), nc


def _p2p_hops(
    f: CommFabric,
    proto: Proto,
    nbytes: float,
    *,
    network: bool,
    peers: int,
    link_bw: float,
    works: int = 1,
) -> tuple[list[Hop], float, int, int]:
    """The pipeline one send of ``nbytes`` to each of ``peers`` peers crosses: (hops, chunk,
    chunks per channel, channels per peer). ``works``: peers whose sends share each channel's
    thread block (:func:`~commwall.collectives.nccl.p2p_group_size`)."""
    chunk, nc = _p2p_plan(f, nbytes, network=network)
    channel_sets = max(1, min(math.ceil(peers / max(1, works)), f.p2p_channels))
    total_channels = nc * peers  # (peer, channel) streams: each its own share of the link
    # A send and its receive each get half of the warps the batch leaves their work: half a
    # block when a channel serves one peer, one warp of twenty when it serves eight. A copy is
    # taken to scale with its warps (one block's p2p copy rate, p2p_block_bw, over the block).
    # When the peers' parts outnumber the p2p channels (inside a node from 8 parts a peer:
    # rounds' channel ranges overlap, ncclP2pChannelForPart), the rounds meeting on a channel
    # join one batch (ncclAddWorkBatchToPlan: one p2p group) and split its warps.
    crowd = max(1.0, nc * channel_sets / f.p2p_channels)
    # A send to another node copies into its own GPU's FIFO (the NIC reads it there): a local
    # copy at NCCL's Simple cap; a send inside the node writes into the peer over the link.
    block = sm_channel_bw(f, Proto.SIMPLE) if network else p2p_block_bw(f)
    simple_copy = block * p2p_side_share(works) / crowd
    # The send and receive halves of a p2p block are separate warp groups: one half's fence
    # overlaps the other's copy, so a p2p chunk pays no per-slice overhead (measured p2p
    # channels inside H100 and A100 nodes move at half the SM's Simple rate, no less).
    overhead = 0.0
    per_channel_bytes = nbytes / nc
    chunk = min(chunk, per_channel_bytes) if per_channel_bytes > 0 else chunk
    items = pieces(per_channel_bytes, chunk)
    if network:
        # Network p2p connections have no LL buffers (NCCL_ALLOC_P2P_NET_LL_BUFFERS=0, init.cc;
        # net.cc sendProxyConnect, NCCL 2.22): a send to another node runs Simple whatever the
        # size. Peers one node apart share a channel (ncclP2pChannelBaseForRound) and so its
        # shared buffers: NCCL_SHARED_STEPS (16) over them, at most NCCL_STEPS each in flight.
        sharing = max(1, min(peers, f.ranks_per_domain))
        depth = max(1, min(NCCL_STEPS, NCCL_SHARED_STEPS // sharing))
        # copy into the FIFO, the NIC's RDMA write, copy out of the receiver's FIFO
        copy = Hop(0.0, overhead, simple_copy, depth, 2)
        # store-and-forward: the proxy sends a step once all of it is in the FIFO (net_hop)
        wire = Hop(net_latency(f, "ring", Proto.SIMPLE), 0.0, link_bw / total_channels, depth, 1)
        return [copy, wire], chunk, items, nc
    copy_rate, wire_rate = simple_copy, link_bw / total_channels
    if proto is Proto.LL:
        copy_rate /= 2.0  # half of every LL line is flags
        wire_rate /= 2.0
    streaming = proto is not Proto.SIMPLE
    # the sender's SM writes into the peer over NVLink/PCIe; the receiver's copies out
    latency = max(0.0, step_latency(f, f.intra_hw, "ring", Proto.LL))
    link = Hop(latency, overhead, min(copy_rate, wire_rate), NCCL_STEPS, 1, streaming)
    return [link, Hop(0.0, overhead, copy_rate, NCCL_STEPS, 1, streaming)], chunk, items, nc


def _p2p_time(
    f: CommFabric,
    proto: Proto,
    nbytes: float,
    *,
    network: bool,
    peers: int,
    link_bw: float,
    works: int = 1,
) -> tuple[float, float, int]:
    """``(fill, bandwidth time, channels)`` of ``peers`` concurrent sends of ``nbytes``,
    ``works`` of them sharing each channel."""
    hops, chunk, items, nc = _p2p_hops(
        f, proto, nbytes, network=network, peers=peers, link_bw=link_bw, works=works
    )
    fill, stream = chain_time(items=items, slice_bytes=chunk, path=hops, base=0.0)
    # never faster than the links allow, however the chunks fall
    return fill, max(stream, peers * nbytes / link_bw), nc * math.ceil(peers / max(1, works))


def _protocol_ok(nbytes: float, f: CommFabric, proto: Proto, *, network: bool, peers: int) -> None:
    """NCCL's p2p runs LL when a send is at most 16 KiB per channel, else Simple; never LL128."""
    if proto is Proto.LL128:
        raise Unsupported("NCCL's p2p kernel runs LL or Simple, not LL128")
    _, nc = _p2p_plan(f, nbytes, network=network)
    small = nbytes <= nc * P2P_LL_THRESHOLD
    if small and proto is Proto.SIMPLE:
        raise Unsupported(
            f"NCCL sends {nbytes:.0f} B per peer with LL (<= {P2P_LL_THRESHOLD} B per channel)"
        )
    if not small and proto is Proto.LL:
        raise Unsupported(
            f"NCCL sends {nbytes:.0f} B per peer with Simple (> {P2P_LL_THRESHOLD} B per channel)"
        )


def direct(op: Op, nbytes: float, f: CommFabric, proto: Proto, *, estimate: bool = False) -> Cost:
    """Direct all-to-all, all-gather, reduce-scatter, one-shot all-reduce, broadcast, reduce, send/recv."""
    p = f.nranks
    if p == 1:
        return trivial(op, nbytes, f, proto)
    g = f.ranks_per_domain
    lat, bw_time, bottleneck = _tuner(op, nbytes, f, proto)
    if estimate:
        _protocol_ok(
            nbytes if op is Op.SENDRECV else (nbytes if op in (Op.BROADCAST, Op.REDUCE) else nbytes / p),
            f, proto, network=f.n_domains > 1, peers=1 if op is Op.SENDRECV else p - 1,
        )  # fmt: skip
        return estimate_cost(op, "direct", proto, nbytes, f, lat, bw_time, 1, bottleneck)
    tuner_time = lat + bw_time
    base = base_latency("ring", proto)
    if op is Op.SENDRECV:
        network = f.n_domains > 1  # the ranks at a domain boundary send over the network
        _protocol_ok(nbytes, f, proto, network=network, peers=1)
        link = f.net_bw_per_rank if network else f.intra_bw
        fill, stream, nc = _p2p_time(f, proto, nbytes, network=network, peers=1, link_bw=link)
        return Cost(
            op, "direct", proto, nbytes, p, base + fill, stream, 1, bottleneck, tuner_time, nc
        )
    per_peer = nbytes if op in (Op.BROADCAST, Op.REDUCE) else nbytes / p
    net_peers, intra_peers = p - g, g - 1
    _protocol_ok(per_peer, f, proto, network=net_peers > 0, peers=p - 1)
    works = p2p_group_size(g, f.n_domains)
    parts: list[tuple[float, float, int]] = []
    if intra_peers > 0:
        parts.append(
            _p2p_time(
                f, proto, per_peer, network=False, peers=intra_peers, link_bw=f.intra_bw,
                works=works,
            )
        )  # fmt: skip
    if net_peers > 0:
        parts.append(
            _p2p_time(
                f, proto, per_peer, network=True, peers=net_peers, link_bw=f.net_bw_per_rank,
                works=works,
            )
        )  # fmt: skip
    steps = 2 if op is Op.ALL_REDUCE else 1
    fill = max(part[0] for part in parts)
    stream = max(part[1] for part in parts)
    nc = min(f.p2p_channels, sum(part[2] for part in parts))
    return Cost(
        op, "direct", proto, nbytes, p, base + steps * fill, steps * stream, steps, bottleneck,
        tuner_time, nc,
    )  # fmt: skip
