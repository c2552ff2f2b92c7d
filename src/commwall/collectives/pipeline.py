"""Pipelined transfers: what a collective of a given size really costs once NCCL has cut it up.

NCCL's tuning model (``tuning.cc``) prices a collective as ``lat + S/bw`` with the bandwidth a
big message reaches. Between 1 and 256 MiB that is optimistic: a channel moves its share as
chunks and slices through FIFOs of ``NCCL_STEPS`` slots, every slice pays a synchronisation cost
on the GPU, a network connection can only have a window of slices in flight, and pipelines must
fill before they run at full rate. This module prices exactly those effects for the plans of
:mod:`commwall.collectives.nccl`.

A **hop class** (:class:`Hop`) is one kind of link a channel's data crosses — NVLink, PCIe or
the network — with

* ``latency`` ℓ: time from a step being posted to the peer seeing it. Inside a node it is
  NCCL's per-step latency of the LL protocol (``hwLat[hw][algo][LL]``, whose flag travels with
  the data); across nodes NCCL's per-step network latency of the protocol in use;
* ``overhead`` o: GPU time per slice that does not overlap the slice's own data movement — the
  fence and flag of Simple, the 128-byte line flags of LL128. Derived from the same table as
  ``hwLat[intra][algo][proto] − hwLat[intra][algo][LL]`` (ours: LL has neither);
* ``rate`` b: bytes/s one channel moves on that class;
* ``window`` W: slices a connection may have in flight (``NCCL_STEPS / sliceSteps``); the credit
  for a slot comes back one round trip (``2ℓ``) after it was sent.

A slice of ``s`` bytes then occupies a hop for ``svc = max(o + s/b, (2ℓ + o + s/b) / W)``, and
reaches the peer ``ℓ + o + s/b`` after it started — or ``ℓ + o`` on a ``streaming`` hop, where LL
and LL128 flags travel in every 8- or 128-byte line so the peer can forward data as it arrives.
The network never streams: NCCL's proxy posts a step only once the GPU has written all of it,
so a network slice reaches the peer ``ℓ + s/f`` after it started, ``f`` being the rate at which
the whole step then crosses the wire (``forward_rate``). Its ℓ is NCCL's per-step network
latency of the protocol, which already holds the protocol's per-slice work, so ``o`` is not
added again (``overhead_in_latency``; :func:`~commwall.collectives.cost.net_hop`).

* :func:`ring_time` — every rank sends and receives each step (rings): steps follow each other
  at ``max(k·svc_max, max over the ring's hop classes of their arrival)`` for ``k`` slices per
  chunk, the first term when bandwidth binds, the second when latency does — a ring's latency
  is "2(n−1) × max_latency" (sjeaugey, nccl-tests#123), so one network hop paces every step of a
  ring that crosses nodes. For large messages it is the link rate.
* :func:`chain_time` — a chunk travels a path of hops (trees, chains, p2p): the first chunk
  fills the path, the others follow at the slowest hop's service time.
* :func:`loop_time` — NVLS: loops of ``channels × heads`` chunks through ``stages`` warp groups
  (scatter, reduce, gather…); the pipeline fills ``stages − 1`` loops.

Each returns ``(latency, bw_time)``: the part a contended network cannot slow (fills, per-step
latencies) and the part it can (the bandwidth-bound service), so the flow engine can replay them.

>>> nvl = Hop(latency=0.6e-6, overhead=2.8e-6, rate=15e9, window=4, count=8)
>>> lat, bw = ring_time(steps=14, slices=2, slice_bytes=1 << 20, hops=(nvl,), base=8.4e-6)
>>> round(bw * 1e6), round(lat * 1e6, 1)  # 14 steps of two 1 MiB slices at 15 GB/s + fences
(2036, 8.4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Hop:
    """One class of hop a channel crosses (module doc); ``count`` of them on the ring or path."""

    latency: float
    overhead: float
    rate: float
    window: int
    count: int
    streaming: bool = False
    #: For a store-and-forward hop (the network, whatever the protocol: NCCL's proxy sends a
    #: step only once the GPU has written all of it): bytes/s at which the whole slice then
    #: crosses the wire before the peer holds any of it; 0 means ``rate``.
    forward_rate: float = 0.0
    #: Whether ``latency`` already holds the per-slice ``overhead``, as NCCL's per-step network
    #: latencies do (:func:`~commwall.collectives.cost.net_hop`): a slice's arrival then adds
    #: none of its own; its service time still does.
    overhead_in_latency: bool = False

    def service(self, slice_bytes: float) -> float:
        """Seconds one slice occupies this hop: its data and overhead, or the window's share
        of a credit round trip when that is longer."""
        busy = self.overhead + slice_bytes / self.rate
        return max(busy, (2.0 * self.latency + busy) / max(1, self.window))

    def arrival(self, slice_bytes: float) -> float:
        """Seconds from a slice starting on this hop to the peer holding it (its first bytes,
        for a streaming protocol)."""
        start = self.latency + (0.0 if self.overhead_in_latency else self.overhead)
        if self.streaming:
            return start
        return start + slice_bytes / (self.forward_rate or self.rate)


def _live(hops: Sequence[Hop]) -> list[Hop]:
    live = [h for h in hops if h.count > 0]
    if not live:
        raise ValueError("a pipeline needs at least one hop")
    for h in live:
        if not h.rate > 0:
            raise ValueError(f"hop rate must be > 0 B/s, got {h.rate}")
    return live


def ring_time(
    *,
    steps: int,
    slices: int,
    slice_bytes: float,
    hops: Sequence[Hop],
    base: float,
) -> tuple[float, float]:
    """``(latency, bw_time)`` of ``steps`` ring steps of ``slices`` slices each (module doc).

    ``hops`` are the classes on the ring with how many hops of each; ``base`` is NCCL's launch
    latency (``baseLat``).
    """
    live = _live(hops)
    service = slices * max(h.service(slice_bytes) for h in live)
    around = max(h.arrival(slice_bytes) for h in live)
    period = max(service, around)
    return base + steps * (period - service), steps * service


def chain_time(
    *, items: int, slice_bytes: float, path: Sequence[Hop], base: float
) -> tuple[float, float]:
    """``(latency, bw_time)`` of ``items`` slices pipelined along ``path`` (module doc): every
    slice passes the slowest hop (``bw_time``), and the first one must first reach it — the
    journey along the path, less the one service the bandwidth term already counts when the
    slowest hop holds whole slices (when it streams, the first bytes travel without waiting for
    a whole slice and nothing is counted twice)."""
    live = _live(path)
    fill = sum(h.count * h.arrival(slice_bytes) for h in live)
    slowest = max(live, key=lambda h: h.service(slice_bytes))
    service = slowest.service(slice_bytes)
    extra = fill if slowest.streaming else max(0.0, fill - service)
    return base + extra, max(1, items) * service


def loop_time(
    *, loops: int, stages: int, loop_seconds: float, latency: float
) -> tuple[float, float]:
    """``(latency, bw_time)`` of ``loops`` loops through ``stages`` pipelined stages, each loop
    taking ``loop_seconds`` in the slowest stage: ``stages − 1`` loops of fill."""
    if loops < 1 or stages < 1 or loop_seconds < 0:
        raise ValueError(
            f"need loops >= 1, stages >= 1, loop_seconds >= 0; got {loops}, {stages}, {loop_seconds}"
        )
    return latency + (stages - 1) * loop_seconds, loops * loop_seconds
