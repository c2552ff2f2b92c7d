"""NSCC, Ultra Ethernet's sender congestion control (a window driven by ECN echoes and queueing
delay); rules from uet-htsim ``uec.cpp`` ``updateCwndOnAck_NSCC`` as summarised in reference
transport.md §3 (NSCC = SMaRTT, arXiv:2404.01630).

Per ACK, with ``delay`` the queueing delay (RTT sample − base RTT) and ``target`` its target:

====  ==============  =================================================================
ECN   delay           action
====  ==============  =================================================================
no    ≥ target        fair increase: inc += fi·acked, fi = 5·MSS·a
no    < target        proportional increase: inc += α·acked·(target − delay), α = 4·MSS·a·b/target
yes   ≥ target        multiplicative decrease, at most once per base RTT:
                      cwnd ×= max(1 − γ·(avg_delay − target)/avg_delay, 0.5), γ = 0.8
yes   < target        keep cwnd, move to another path (new entropy value)
====  ==============  =================================================================

Every base RTT or 8 MTUs acked: cwnd += inc/cwnd + η, η = 0.15·MSS·a. QuickAdapt: on a trim
(NACK) or a delay above 4·target, if fewer than maxwnd/8 bytes were delivered over the last
base RTT + target, cwnd falls to what was delivered. Scaling: a = BDP/(100 Gb/s × 12 µs),
b = target/12 µs, target = 0.75·base RTT with trimming (1·RTT without), maxwnd = 1.5·BDP,
average delay an EWMA of gain 0.0125. The window starts at one BDP (line rate).

>>> n = Nscc(12.5e9, 12e-6, 4178)
>>> round(n.cwnd), round(n.maxwnd)
(150000, 225000)
>>> n.on_ack(0, 4178, delay_s=20e-6, ecn=True)   # ECN + delay above target: decrease
False
>>> n.cwnd < 150000
True
"""

from __future__ import annotations

__all__ = ["Nscc"]

_REF_BDP = 100e9 / 8 * 12e-6  # the reference point NSCC's constants are scaled from
_REF_RTT = 12e-6


class Nscc:
    """One flow's NSCC window (bytes). Times in seconds except ``now`` (any monotone unit
    consistent with ``base_rtt_ps``; the packet engine passes picoseconds)."""

    __slots__ = (
        "acked_since",
        "alpha",
        "avg_delay",
        "base_rtt",
        "cwnd",
        "eta",
        "fi",
        "inc",
        "last_adjust",
        "last_md",
        "maxwnd",
        "mss",
        "qa_bytes",
        "qa_start",
        "target",
    )

    def __init__(
        self, line_rate: float, base_rtt_s: float, mss: int, *, trimming: bool = True
    ) -> None:
        bdp = line_rate * base_rtt_s
        a = bdp / _REF_BDP
        self.mss = mss
        self.base_rtt = base_rtt_s
        self.target = (0.75 if trimming else 1.0) * base_rtt_s
        b = self.target / _REF_RTT
        self.fi = 5.0 * mss * a
        self.alpha = 4.0 * mss * a * b / self.target
        self.eta = 0.15 * mss * a
        self.maxwnd = max(1.5 * bdp, 2.0 * mss)
        self.cwnd = max(bdp, float(mss))
        self.inc = 0.0
        self.acked_since = 0.0
        self.avg_delay = 0.0
        self.last_md = -1e300
        self.last_adjust = 0.0
        self.qa_start = 0.0
        self.qa_bytes = 0.0

    def on_ack(self, now_s: float, acked: int, *, delay_s: float, ecn: bool) -> bool:
        """An ACK for ``acked`` bytes; returns True when the flow should change path."""
        self.avg_delay += 0.0125 * (delay_s - self.avg_delay)
        self.qa_bytes += acked
        repath = False
        if not ecn:
            if delay_s >= self.target:
                self.inc += self.fi * acked
            else:
                self.inc += self.alpha * acked * (self.target - delay_s)
        elif delay_s >= self.target:
            if now_s - self.last_md >= self.base_rtt:
                avg = max(self.avg_delay, delay_s, 1e-12)
                self.cwnd *= max(1.0 - 0.8 * (avg - self.target) / avg, 0.5)
                self.last_md = now_s
        else:
            repath = True
        self.acked_since += acked
        if now_s - self.last_adjust >= self.base_rtt or self.acked_since >= 8 * self.mss:
            self.cwnd += self.inc / self.cwnd + self.eta
            self.inc = 0.0
            self.acked_since = 0.0
            self.last_adjust = now_s
        if delay_s > 4.0 * self.target:
            self.quick_adapt(now_s)
        self._clamp()
        return repath

    def on_trim(self, now_s: float) -> None:
        """A NACK for a trimmed packet."""
        self.quick_adapt(now_s)

    def on_timeout(self, now_s: float) -> None:
        """A retransmission timeout: restart from one MTU of window."""
        self.cwnd = float(self.mss)
        self.qa_start = now_s
        self.qa_bytes = 0.0

    def quick_adapt(self, now_s: float) -> None:
        """Fall to what was delivered over the last base RTT + target, when that is small."""
        if now_s - self.qa_start < self.base_rtt + self.target:
            return
        delivered = self.qa_bytes
        self.qa_start = now_s
        self.qa_bytes = 0.0
        if delivered < self.maxwnd / 8.0:
            self.cwnd = max(delivered, float(self.mss))
            self.inc = 0.0

    def _clamp(self) -> None:
        self.cwnd = min(max(self.cwnd, float(self.mss)), self.maxwnd)
