"""How NCCL actually launches a collective: channels, threads, chunks, slices and loops.

:mod:`commwall.collectives.tuning`-style formulas (``tuning.cc``) are what NCCL uses to *choose* an
algorithm and protocol; they say nothing of how the chosen kernel then moves a 16 MiB message.
This module mirrors the launch-side decisions NCCL makes once the choice is made, so the timing
model (:mod:`commwall.collectives.pipeline`) can price them. Every value is copied in value (not
code) from NVIDIA/nccl at tag v2.30.7-1 unless a comment names another version:

* ``src/include/device.h``: ``NCCL_STEPS``, thread counts, NVLS arity;
* ``src/include/collectives.h``: ``*_CHUNKSTEPS`` / ``*_SLICESTEPS`` per operation;
* ``src/include/comm.h``: per-thread work thresholds;
* ``src/init.cc``: default buffer sizes per protocol and p2p chunk sizes;
* ``src/enqueue.cc``: ``topoGetAlgoInfo`` (channels and threads for a size),
  ``calcCollChunking`` (chunk per algorithm), ``scheduleCollTasksToPlan`` (32 KiB of traffic per
  channel at least), ``addP2pToPlan`` / ``scheduleP2pTasksToPlan`` (p2p channels and chunks);
* ``src/transport/nvls.cc``: NVLS channels and chunk size;
* ``src/graph/paths.cc``: p2p channels per peer (``P2P_PER_CHANNEL_NET_BW``);
* ``src/device/prims_simple.h``: a slice is at least ``stepSize·StepPerSlice/32``.

Channel counts of the topology search itself (``coll channels``) are a property of the machine
and live on :class:`~commwall.collectives.fabric.CommFabric`.

>>> MIB = 1 << 20
>>> ring_chunking(Op.ALL_REDUCE, Proto.SIMPLE, 64 * MIB, nranks=8, channels=24)
RingChunking(loops=1, chunk=349525.3333333333, slice=174762.66666666666, slices=2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from commwall.collectives.constants import Proto
from commwall.collectives.ops import Op

KIB: Final = 1024
MIB: Final = 1024 * 1024

#: FIFO slots per connection (``device.h``).
NCCL_STEPS: Final = 8
#: Default buffer per connection and protocol (``init.cc``): Simple 4 MiB; LL
#: ``LL_LINES_PER_THREAD(8) · LL_MAX_NTHREADS(512) · STEPS · 16 B``; LL128
#: ``LL128_ELEMS_PER_THREAD(120) · LL128_MAX_NTHREADS(640) · STEPS · 8 B``.
BUFFER_BYTES: Final[dict[Proto, int]] = {
    Proto.SIMPLE: 4 * MIB,
    Proto.LL: 8 * 512 * NCCL_STEPS * 16,
    Proto.LL128: 120 * 640 * NCCL_STEPS * 8,
}
#: Steps per chunk and per slice, Simple ring (``collectives.h``): all-reduce, all-gather and
#: reduce-scatter use ``NCCL_STEPS/2`` and ``NCCL_STEPS/4``; broadcast, reduce and p2p use 1 and 1.
CHUNK_STEPS: Final[dict[Op, int]] = {
    Op.ALL_REDUCE: NCCL_STEPS // 2,
    Op.ALL_GATHER: NCCL_STEPS // 2,
    Op.REDUCE_SCATTER: NCCL_STEPS // 2,
}
SLICE_STEPS: Final[dict[Op, int]] = {
    Op.ALL_REDUCE: NCCL_STEPS // 4,
    Op.ALL_GATHER: NCCL_STEPS // 4,
    Op.REDUCE_SCATTER: NCCL_STEPS // 4,
}
#: Most threads per channel by protocol (``device.h``: Simple 512, LL 512, LL128 640; NVLS and
#: trees use all 640, ``tuning.cc``).
MAX_THREADS: Final[dict[Proto, int]] = {Proto.SIMPLE: 512, Proto.LL: 512, Proto.LL128: 640}
#: Bytes per thread before NCCL adds a channel (``comm.h``; Ring LL scales it by nRanks,
#: ``tuning.cc``).
THREAD_THRESHOLD: Final[dict[Proto, int]] = {Proto.SIMPLE: 64, Proto.LL: 8, Proto.LL128: 8}
#: Each channel gets at least this much traffic (``enqueue.cc`` ``MinTrafficPerChannel``).
MIN_TRAFFIC_PER_CHANNEL: Final = 32 * KIB
#: NVLS channels: 16 on Hopper, 24 on one Blackwell NVLink domain, 32 across several
#: (``nvls.cc`` ``NVLS_NCHANNELS_SM90/SM100_NVL/SM100``).
NVLS_CHANNELS_HOPPER: Final = 16
NVLS_CHANNELS_BLACKWELL_ONE_DOMAIN: Final = 24
NVLS_CHANNELS_BLACKWELL: Final = 32
#: Default NVLS chunk (``NCCL_NVLS_CHUNKSIZE``, ``nvls.cc``).
NVLS_CHUNK: Final = 128 * KIB
#: At most this many NVLS heads per domain (``NCCL_MAX_NVLS_ARITY``, ``device.h``).
MAX_NVLS_ARITY: Final = 32
#: p2p chunk: across nodes 128 KiB (twice that on Grace+Blackwell), inside an NVLink domain
#: 512 KiB, over PCIe 128 KiB (``init.cc`` ``NCCL_P2P_*_CHUNKSIZE``).
P2P_NET_CHUNK: Final = 128 * KIB
P2P_NVL_CHUNK: Final = 512 * KIB
P2P_PCI_CHUNK: Final = 128 * KIB
#: Bandwidth NCCL plans one network p2p channel for, GB/s (``NCCL_P2P_PER_CHANNEL_NET_BW``).
P2P_PER_CHANNEL_NET_GBPS: Final = 14.0
#: Steps of the shared buffers the peers on one network channel split (``NCCL_SHARED_STEPS``,
#: ``device.h``; net.cc gives each of ``nsubs`` peers ``min(NCCL_STEPS, 16 / nsubs)``).
NCCL_SHARED_STEPS: Final = 16
#: A p2p send of at most this many bytes per channel runs LL (``NCCL_P2P_LL_THRESHOLD``,
#: ``enqueue.cc``).
P2P_LL_THRESHOLD: Final = 16384
#: p2p peers served per work batch (``NCCL_MAX_DEV_WORK_P2P_PER_BATCH``, ``device.h``).
P2P_PER_BATCH: Final = 8
#: Warps of the p2p kernel's thread block (``NCCL_MAX_NTHREADS`` 640, ``device.h``;
#: ``scheduleP2pTasksToPlan`` launches p2p plans with it).
P2P_BLOCK_WARPS: Final = 640 // 32


def p2p_group_size(ranks_per_domain: int, n_domains: int) -> int:
    """Rounds (peers) whose p2p works share one set of channels.

    Across nodes NCCL gives the rounds of one schedule group the same channel base
    (``ncclP2pChannelBaseForRound``, ``channel.h``): groups of ``NCCL_P2P_SCHEDULE_GROUP_SIZE``
    (8), reduced to its gcd with the ranks per node (``init.cc``; NCCL 2.22-2.27 grouped by node
    delta in eights, the same for 8 GPUs a node). Inside one node every round has its own base.

    >>> p2p_group_size(8, 2), p2p_group_size(4, 4), p2p_group_size(1, 16), p2p_group_size(8, 1)
    (8, 4, 1, 1)
    """
    if n_domains <= 1:
        return 1
    return math.gcd(P2P_PER_BATCH, max(1, ranks_per_domain))


def p2p_side_share(works: int) -> float:
    """Share of a channel's thread block that copies one direction of one p2p work when
    ``works`` works run in one batch on the channel: ``RunWorkBatch<SendRecv>`` (``sendrecv.h``)
    gives each work ``nWarps / works`` warps and splits them between its send and its receive.

    >>> p2p_side_share(1), p2p_side_share(8)  # 10 of 20 warps; 1 of 20
    (0.5, 0.05)
    """
    per_work = P2P_BLOCK_WARPS // max(1, min(works, P2P_PER_BATCH))
    return per_work / (2.0 * P2P_BLOCK_WARPS)


def buffer_step(proto: Proto) -> int:
    """Bytes of one FIFO slot: the protocol's buffer over ``NCCL_STEPS``."""
    return BUFFER_BYTES[proto] // NCCL_STEPS


def pieces(total: float, piece: float) -> int:
    """How many pieces of at most ``piece`` bytes carry ``total`` bytes (at least one; a
    hair over a multiple, from float division, does not count as another piece).

    >>> pieces(4 << 20, 1 << 20), pieces(1, 1 << 20), pieces(0, 0)
    (4, 1, 1)
    """
    if piece <= 0:
        return 1
    return max(1, math.ceil(total / piece - 1e-12))


def chunk_bytes(op: Op, proto: Proto, steps: int | None = None) -> float:
    """Data bytes per chunk before any size-based reduction (``calcCollChunking``).

    ``stepSize · chunkSteps`` (chunk steps only for Simple rings); LL carries half its line as
    flags, LL128 120 of every 128 bytes.

    >>> chunk_bytes(Op.ALL_REDUCE, Proto.SIMPLE), chunk_bytes(Op.BROADCAST, Proto.SIMPLE)
    (2097152, 524288)
    >>> chunk_bytes(Op.ALL_REDUCE, Proto.LL), chunk_bytes(Op.ALL_REDUCE, Proto.LL128)
    (32768, 576000)
    """
    n = steps if steps is not None else (CHUNK_STEPS.get(op, 1) if proto is Proto.SIMPLE else 1)
    chunk = buffer_step(proto) * n
    if proto is Proto.LL:
        return chunk // 2
    if proto is Proto.LL128:
        return chunk // 128 * 120
    return chunk


def channels_used(
    nbytes: float, proto: Proto, channels: int, *, ring_ll_ranks: int = 1, traffic_per_byte: int = 1
) -> int:
    """Channels NCCL runs a ring or tree collective of ``nbytes`` on (``topoGetAlgoInfo``):
    one fewer while ``nbytes < nc · nThreads · threshold``, and no more than one per 32 KiB of
    traffic (``scheduleCollTasksToPlan``). ``ring_ll_ranks`` scales the LL threshold for rings.

    >>> channels_used(1 << 20, Proto.SIMPLE, 24), channels_used(64 << 20, Proto.SIMPLE, 24)
    (24, 24)
    >>> channels_used(64 << 10, Proto.LL, 24, ring_ll_ranks=8)
    2
    """
    nc = max(1, channels)
    threshold = THREAD_THRESHOLD[proto] * (ring_ll_ranks if proto is Proto.LL else 1)
    per_channel = MAX_THREADS[proto] * threshold
    while nbytes < nc * per_channel and nc > 1:
        nc -= 1
    traffic = nbytes * traffic_per_byte * (4 if proto is Proto.LL else 1)
    by_traffic = max(1, math.ceil(traffic / MIN_TRAFFIC_PER_CHANNEL))
    return max(1, min(nc, by_traffic))


@dataclass(frozen=True)
class RingChunking:
    """How a ring channel cuts its share: ``loops`` loops of ``nranks`` chunks of ``chunk``
    bytes, each chunk sent as ``slices`` slices of (up to) ``slice`` bytes."""

    loops: int
    chunk: float
    slice: float
    slices: int


def ring_chunking(
    op: Op, proto: Proto, nbytes: float, *, nranks: int, channels: int
) -> RingChunking:
    """Loops, chunk and slice of one ring channel (``runRing`` in ``all_reduce.h`` and friends).

    A channel owns ``nbytes / channels``; each loop moves ``nranks`` chunks of at most
    :func:`chunk_bytes`; a short last loop shrinks its chunks to fit (here every loop is taken
    equal). Simple splits a chunk into ``CHUNKSTEPS/SLICESTEPS`` slices of at least 1/32 of a
    slice's steps (``prims_simple.h``); LL and LL128 send a chunk as one step.
    """
    per_channel = nbytes / max(1, channels)
    largest = chunk_bytes(op, proto)
    loops = pieces(per_channel, nranks * largest)
    chunk = per_channel / (nranks * loops)
    if proto is not Proto.SIMPLE:
        return RingChunking(loops, chunk, chunk, 1)
    per_chunk = CHUNK_STEPS.get(op, 1) // SLICE_STEPS.get(op, 1)
    floor = buffer_step(proto) * SLICE_STEPS.get(op, 1) / 32
    size = min(chunk, max(chunk / per_chunk, floor)) if chunk > 0 else 0.0
    slices = pieces(chunk, size)
    return RingChunking(loops, chunk, size, slices)


def log2i(n: int) -> int:
    """NCCL's ``log2i``: floor of log2, 0 for 1."""
    return max(0, int(n).bit_length() - 1)


def tree_chunk(proto: Proto, nbytes: float, *, channels: int, n_domains: int, ppn: int) -> float:
    """Chunk of a tree all-reduce (``calcCollChunking``): one FIFO step; LL128 halves it while
    the message holds fewer than ``(1 + log2 N + 0.1·ppn)·64/ppn`` chunks per channel (down to
    128 KiB), then while fewer than ``…·16/ppn`` (down to 32 KiB).

    >>> tree_chunk(Proto.LL128, 16 << 20, channels=16, n_domains=4, ppn=8)
    72000.0
    """
    chunk = float(chunk_bytes(Op.ALL_REDUCE, proto, steps=1))
    if proto is Proto.LL128:
        nsteps = 1 + log2i(n_domains) + 0.1 * ppn
        # NCCL divides integers: nBytes / (nChannels · chunkSize)
        while nbytes // (channels * chunk) < nsteps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while nbytes // (channels * chunk) < nsteps * 16 / ppn and chunk > 32768:
            chunk //= 2
    return chunk


def nvls_channels(sm: int, n_domains: int) -> int:
    """NVLS channels (``ncclNvlsTuning``, ``nvls.cc``)."""
    if sm >= 100:
        return NVLS_CHANNELS_BLACKWELL if n_domains > 1 else NVLS_CHANNELS_BLACKWELL_ONE_DOMAIN
    return NVLS_CHANNELS_HOPPER


# fmt: off
#: The per-channel speeds NCCL's graph search tries across nodes, fastest first, GB/s
#: (``search.cc`` ``speedArrayInter``, ``sm90SpeedArrayInter``, ``sm100SpeedArrayInter``,
#: v2.29.2): it starts from the first one the GPU-to-NIC path can carry.
RING_INTER_SPEEDS: Final[dict[int, tuple[float, ...]]] = {
    0: (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12),
    90: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
    100: (96, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
}
# fmt: on
#: ``ncclTopoDupChannels`` doubles a graph whose per-channel speed is at least this, GB/s ...
DUP_MIN_SPEED: Final = 25.0
#: ... except, on GPUs newer than Ampere, a graph of more than ``DUP_MAX_SLOW_CHANNELS``
#: channels below ``DUP_FAST_SPEED`` (v2.19 on; before, Hopper needed 50 GB/s to double).
DUP_FAST_SPEED: Final = 50.0
DUP_MAX_SLOW_CHANNELS: Final = 4
#: Most channels the ring graph search returns (``MAXCHANNELS / 2``: ``init.cc``, ``device.h``).
GRAPH_MAX_CHANNELS: Final = 32


def inter_node_ring_channels(*, nics: int, path_gbps: float, sm: int) -> int:
    """Channels of a ring that leaves the node, before NCCL doubles them for the communicator
    (``ncclTopoCompute`` then ``ncclTopoDupChannels``, ``search.cc`` v2.29.2).

    The search runs each channel at the first speed of its array the GPU-to-NIC path can carry
    (``system->maxBw``: the NIC, or the PCIe link before it when narrower) — one channel per NIC
    the node's ranks drive, since a NIC has no room for a second at that speed. It then doubles
    them at half the speed when that speed is at least 25 GB/s, unless the GPU is newer than
    Ampere, the speed below 50 GB/s and the channels more than four. So a 400G NIC behind PCIe
    Gen5 (48 GB/s) carries two graph channels when a node's ranks drive at most four NICs and
    one when they drive eight; a 200G HDR NIC behind Gen4 (24 GB/s) one; an 800G NIC behind
    Gen6 (96 GB/s) always two. The communicator then runs twice these (``ncclTopoPostset``).

    >>> [inter_node_ring_channels(nics=n, path_gbps=48, sm=90) for n in (1, 4, 8)]
    [2, 8, 8]
    >>> inter_node_ring_channels(nics=8, path_gbps=24, sm=80)
    8
    >>> inter_node_ring_channels(nics=8, path_gbps=96, sm=103)
    16
    """
    speeds = RING_INTER_SPEEDS[100 if sm >= 100 else 90 if sm >= 90 else 0]
    speed = next((s for s in speeds if s <= path_gbps), speeds[-1])
    graph = max(1, nics)
    slow = sm > 80 and speed < DUP_FAST_SPEED and graph > DUP_MAX_SLOW_CHANNELS
    if speed >= DUP_MIN_SPEED and not slow:
        graph = min(2 * graph, GRAPH_MAX_CHANNELS)
    return graph


def nvls_chunk(nbytes: float, *, channels: int, heads: int) -> int:
    """NVLS chunk inside one domain (``calcCollChunking``): 128 KiB, cut to 64, 32 and 16 KiB
    when the message holds fewer than 64, 8 and 2 chunks per channel-head.

    >>> nvls_chunk(16 << 20, channels=16, heads=8), nvls_chunk(1 << 30, channels=16, heads=8)
    (32768, 131072)
    """
    ops = channels * heads
    chunk = NVLS_CHUNK
    if nbytes < 64 * ops * chunk and chunk > 65536:
        chunk = 65536
    if nbytes < 8 * ops * chunk and chunk > 32768:
        chunk = 32768
    if nbytes < 2 * ops * chunk and chunk > 16384:
        chunk = 16384
    return chunk


def nvls_tree_chunk(nbytes: float, *, channels: int, heads: int, n_domains: int) -> int:
    """NVLS-tree chunk (``calcCollChunking``; ``nvlsTreeMaxChunkSize`` 64 KiB from 4 domains,
    else the NVLS chunk, ``nvls.cc``), cut at 32/16/4/1 chunks per channel-head.

    >>> nvls_tree_chunk(16 << 20, channels=16, heads=8, n_domains=2)
    65536
    """
    ops = channels * heads
    chunk = 65536 if n_domains >= 4 else NVLS_CHUNK
    for factor, floor in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if nbytes < factor * ops * chunk and chunk > floor:
            chunk = floor
    return chunk


def p2p_chunk(nbytes: float, *, network: bool, nvlink: bool, grace_blackwell: bool = False) -> int:
    """p2p chunk for one send of ``nbytes`` (``addP2pToPlan``): the transport's chunk, a quarter
    of it for network sends under one chunk and half for sends under eight.

    >>> p2p_chunk(1 << 20, network=True, nvlink=False), p2p_chunk(1 << 20, network=False, nvlink=True)
    (131072, 524288)
    """
    if network:
        chunk = P2P_NET_CHUNK * (2 if grace_blackwell else 1)
        if nbytes < chunk:
            return chunk // 4
        if nbytes < 8 * chunk:
            return chunk // 2
        return chunk
    return P2P_NVL_CHUNK if nvlink else P2P_PCI_CHUNK


def p2p_channels(
    nbytes: float, *, min_channels: int, max_channels: int, network: bool, chunk: int
) -> int:
    """Channels one send uses (``addP2pToPlan``): ``min(nChannelsMin, bytes / minPart)``, doubled
    (up to ``max_channels``) while a part exceeds ``maxPart``. Parts: across nodes half a chunk to
    one chunk; inside a node 1/8 of a chunk to 32 chunks.

    >>> [p2p_channels(s << 20, min_channels=4, max_channels=32, network=False, chunk=524288)
    ...  for s in (32, 64, 128, 256)]
    [4, 4, 8, 16]
    """
    if nbytes <= 0:
        return 1
    lo, hi = (chunk / 2, chunk) if network else (chunk / 8, chunk * 32)
    nc = max(1, min(min_channels, math.ceil(nbytes / lo)))
    part = max(lo, nbytes / nc)
    while part > hi and nc <= max_channels // 2:
        nc *= 2
        part = nbytes / nc
    return nc


def pow2_up(n: int) -> int:
    """Smallest power of two >= ``n`` (``pow2Up``)."""
    return 1 << max(0, int(n) - 1).bit_length()


def p2p_channels_per_peer(
    *,
    nvlink_links: float,
    network: bool,
    nics: int,
    nic_gbps: float,
    p2p_channels: int,
    nranks: int,
    n_domains: int,
    net_peer_channels: int | None = None,
) -> tuple[int, int]:
    """(nChannelsMin, nChannelsMax) a p2p operation may use (``ncclTopoGetNchannels``,
    ``ncclTopoComputeP2pChannels``, ``scheduleP2pTasksToPlan``).

    Per peer: two channels per NVLink of the path inside a node, else 2; across nodes at least
    one per local NIC and enough for ``P2P_PER_CHANNEL_NET_BW`` each, or
    ``NCCL_NCHANNELS_PER_NET_PEER`` (``net_peer_channels``) when set. Rounded up to a power of
    two and capped by the p2p channels; across nodes halved until every peer of one batch fits,
    unless that setting was given. The minimum is halved until every rank's share fits in the
    p2p channels.

    >>> p2p_channels_per_peer(nvlink_links=18, network=False, nics=1, nic_gbps=50,
    ...                       p2p_channels=32, nranks=8, n_domains=1)
    (4, 32)
    """
    if network and net_peer_channels is not None:
        per_peer = net_peer_channels
    elif network:
        per_peer = max(max(1, nics), math.ceil(nic_gbps * max(1, nics) / P2P_PER_CHANNEL_NET_GBPS))
    else:
        per_peer = 2 * max(1, int(nvlink_links))
    per_peer = min(pow2_up(per_peer), p2p_channels)
    if n_domains > 1 and net_peer_channels is None:
        while per_peer * math.ceil(nranks / P2P_PER_BATCH) > p2p_channels and per_peer > 1:
            per_peer //= 2
    low = per_peer
    while low * nranks > p2p_channels and low > 1:
        low //= 2
    return low, per_peer


#: Host time per GPU of one nccl-tests iteration when a single process drives several GPUs
#: (``-g N``): it launches one NCCL kernel per GPU in turn, so a small collective takes at least
#: ``N`` launches. 33.7 µs for an 8-GPU ring all-reduce of 8-128 B with ``-g 8`` on DGX A100
#: (nccl-tests#123) — 4.2 µs per GPU; the same ~34 µs floor shows in 8-GPU ``-g 8`` logs of A100
#: and H100 (commwall.validation).
NCCL_TESTS_LAUNCH_PER_GPU: Final = 33.7e-6 / 8


def nccl_tests_time(seconds: float, gpus_per_process: int = 1) -> float:
    """What nccl-tests reports for a collective taking ``seconds`` when each process drives
    ``gpus_per_process`` GPUs (``-g``): the launches of one iteration bound it from below.

    >>> nccl_tests_time(15e-6, 1), round(nccl_tests_time(15e-6, 8) * 1e6, 1)
    (1.5e-05, 33.7)
    """
    if gpus_per_process <= 1:
        return seconds
    return max(seconds, gpus_per_process * NCCL_TESTS_LAUNCH_PER_GPU)
