"""Claim: "The 'Incast' Storm: When 1,000 nodes all try to send their gradients to a single
parameter server simultaneously, it creates a 'Micro-burst.' For a few microseconds, the traffic
exceeds the bandwidth of the switch by 1,000x. If the switch's Buffer Management isn't top-tier,
it drops everything, and the whole cluster grinds to a halt as it waits for timeouts."

commwall's incast model (``commwall.faults.incast``, a fluid model of N:1 into one egress port
with the switch's shared buffer under a dynamic threshold) for 1,000 senders x 256 KB at
400 Gb/s into one 400 Gb/s port of a Spectrum-4 switch (catalog buffer), start times jittered by
1 us, on each fabric: lossy Ethernet (tail drop, 200 ms TCP RTOmin), RoCE with PFC, InfiniBand
credits, and UEC-style trimming.

Run: ``python examples/claims/incast_storm.py``
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from _common import Cited, catalog, cite, fmt, report, table, verdict

from commwall.faults.incast import FABRICS, IncastConfig, IncastResult, incast

CLAIM = (
    "When 1,000 nodes all try to send their gradients to a single parameter server, the traffic "
    "exceeds the bandwidth of the switch by 1,000x ... it drops everything, and the whole "
    "cluster grinds to a halt as it waits for timeouts."
)
SENDERS = 1000
SIZE = 256e3  # bytes per sender
RATE = 50e9  # bytes/s: 400 Gb/s
SWITCH = "spectrum-4-sn5600"
JITTER = 1e-6
SAMPLES = 4  # lossy draws cost ~2 s each at 1,000 senders (every retry round re-runs)


@dataclass(frozen=True)
class Numbers:
    buffer: float
    overload: float  # offered / egress
    results: dict[str, IncastResult]
    inputs: tuple[Cited, ...]

    @property
    def lossy_slowdown(self) -> float:
        r = self.results["lossy"]
        return r.completion.quantile(0.5) / r.config.ideal

    @property
    def holds(self) -> bool:
        lossy = self.results["lossy"]
        return self.overload >= 999 and lossy.p_any_drop == 1.0 and self.lossy_slowdown > 10


def numbers() -> Numbers:
    part = catalog().switch(SWITCH)
    assert part.buffer is not None
    results = {}
    for i, fab in enumerate(FABRICS):
        cfg = IncastConfig(SENDERS, SIZE, RATE, RATE, float(part.buffer), fab, jitter=JITTER)
        results[fab] = incast(cfg, samples=SAMPLES, rng=np.random.default_rng([0, i]))
    return Numbers(
        buffer=float(part.buffer),
        overload=SENDERS * RATE / RATE,
        results=results,
        inputs=(cite(part, "buffer", unit="B"),),
    )


def main(n: Numbers | None = None) -> None:
    n = n or numbers()
    lossy = n.results["lossy"]
    c = lossy.config
    answers = [
        ("offered load / egress rate", f"{n.overload:,.0f}x"),
        ("burst / port's buffer share", f"{SENDERS * SIZE / c.share:,.1f}x"),
        ("ideal completion (N x S / C)", fmt(c.ideal, "s")),
        (
            "lossy: bytes dropped, all retry rounds",
            f"{lossy.dropped.mean / (SENDERS * SIZE):.1f}x the burst",
        ),
        (
            "lossy: p50 completion",
            f"{fmt(lossy.completion.quantile(0.5), 's')} ({n.lossy_slowdown:,.0f}x ideal)",
        ),
    ]
    print(
        report(
            "incast_storm",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"{SENDERS:,} senders offer {n.overload:,.0f}x the port; on lossy Ethernet "
                f"every retry round is another incast ({lossy.dropped.mean / (SENDERS * SIZE):.1f}x "
                f"the burst dropped in all) and the burst completes in {fmt(lossy.completion.quantile(0.5), 's')} instead of "
                f"{fmt(c.ideal, 's')}, waiting on timeouts. Lossless and trimming fabrics "
                f"avoid the halt: PFC and IB credits drop nothing and finish at the ideal "
                f"time, UEC trims and resends within an RTT.",
            ),
            notes=(
                "A fluid model (piecewise-linear queues); the packet engine checks the same "
                "behaviour packet by packet at 31:1 (examples/claims/lossless_fabrics.py).",
                "PFC's price is elsewhere: pauses spread upstream to victim flows.",
                "Lossy recovery resends the lost bytes in synchronised rounds with a doubling RTO "
                "(RFC 6298) and no TCP windows: an upper bound on the wait, not a TCP trace.",
            ),
        )
    )
    print()
    print(
        table(
            (
                "fabric",
                "p50 completion",
                "p99 completion",
                "dropped/burst",
                "P(drop)",
                "pause frames",
            ),
            (
                (
                    name,
                    fmt(r.completion.quantile(0.5), "s"),
                    fmt(r.completion.quantile(0.99), "s"),
                    f"{r.dropped.mean / (SENDERS * SIZE):.2f}x",
                    f"{r.p_any_drop:.0%}",
                    f"{r.pause_frames.mean:,.0f}",
                )
                for name, r in n.results.items()
            ),
        )
    )


if __name__ == "__main__":
    main()
