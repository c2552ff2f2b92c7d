"""Direct algorithms: every rank talks to every peer at once.

Used by NCCL for all-to-all and send/recv (grouped point-to-point), and as the "one-shot"
all-reduce (a direct reduce-scatter then a direct all-gather) that inference libraries use for
small messages. One all-pairs step with chunk ``c`` per peer moves, per rank and direction,
``(g−1)·c`` bytes over scale-up and ``(p−g)·c`` over the network, concurrently::

    T_step = α + max((g−1)·c / B_intra, (p−g)·c / B_net)

α is NCCL's ring per-step latency of the slowest class crossed (the peers are served in
parallel, so it is paid once per step).
"""

from __future__ import annotations

from commwall.collectives.constants import Hw, Proto
from commwall.collectives.cost import Cost, base_latency, ring_proto_bw, step_latency, trivial
from commwall.collectives.fabric import CommFabric
from commwall.collectives.ops import Op


def _all_pairs(f: CommFabric, proto: Proto, chunk: float) -> tuple[float, float, str]:
    """(latency, bandwidth time, bottleneck) of one all-pairs step with ``chunk`` bytes per peer."""
    g, p = f.ranks_per_domain, f.nranks
    intra = (g - 1) * chunk / ring_proto_bw(f, proto, f.intra_bw) if g > 1 else 0.0
    net = (p - g) * chunk / ring_proto_bw(f, proto, f.net_bw_per_rank) if p > g else 0.0
    hw = Hw.NET if p > g else f.intra_hw
    bottleneck = Hw.NET.value if net >= intra else f.intra_hw.value
    return step_latency(f, hw, "ring", proto), max(intra, net), bottleneck


def direct(op: Op, nbytes: float, f: CommFabric, proto: Proto) -> Cost:
    """Direct all-to-all, all-gather, reduce-scatter, one-shot all-reduce, broadcast, reduce, send/recv."""
    p = f.nranks
    if p == 1:
        return trivial(op, nbytes, f, proto)
    base = base_latency("ring", proto)
    if op is Op.SENDRECV:
        # nccl-tests sendrecv: rank r sends to r+1; the domain boundary ranks cross the network.
        hw = Hw.NET if f.n_domains > 1 else f.intra_hw
        bw = f.net_bw_per_rank if hw is Hw.NET else f.intra_bw
        latency = base + step_latency(f, hw, "ring", proto)
        bw_time = nbytes / ring_proto_bw(f, proto, bw)
        return Cost(op, "direct", proto, nbytes, p, latency, bw_time, 1, hw.value)
    if op in (Op.BROADCAST, Op.REDUCE):
        # The root exchanges the whole buffer with every peer.
        lat, bw_time, bottleneck = _all_pairs(f, proto, nbytes)
        return Cost(op, "direct", proto, nbytes, p, base + lat, bw_time, 1, bottleneck)
    lat, bw_time, bottleneck = _all_pairs(f, proto, nbytes / p)
    steps = 2 if op is Op.ALL_REDUCE else 1
    return Cost(
        op, "direct", proto, nbytes, p, base + steps * lat, steps * bw_time, steps, bottleneck
    )
