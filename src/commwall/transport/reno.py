"""A TCP NewReno-style window for plain lossy Ethernet (RFC 5681 / RFC 6582, simplified).

Slow start from an initial window of 10 segments (RFC 6928), congestion avoidance of one
segment per window, halving on three duplicate ACKs (fast retransmit of the missing segment)
and back to one segment on a retransmission timeout. No SACK scoreboard and no pacing: the
contrast the packet engine offers to the lossless fabrics, not a full TCP.

>>> r = Reno(4096)
>>> r.cwnd, r.on_ack(4096), r.cwnd        # slow start: +1 segment per segment acked
(40960.0, None, 45056.0)
>>> r.on_dupacks(); r.cwnd                 # halve
22528.0
"""

from __future__ import annotations

__all__ = ["Reno"]


class Reno:
    """One flow's window, bytes."""

    __slots__ = ("cwnd", "mss", "ssthresh")

    def __init__(self, mss: int, initial_segments: int = 10) -> None:
        self.mss = mss
        self.cwnd = float(initial_segments * mss)
        self.ssthresh = float("inf")

    def on_ack(self, acked: int) -> None:
        """``acked`` new bytes were acknowledged."""
        if self.cwnd < self.ssthresh:
            self.cwnd += acked
        else:
            self.cwnd += self.mss * acked / self.cwnd

    def on_dupacks(self) -> None:
        """Three duplicate ACKs: fast retransmit, halve the window."""
        self.ssthresh = max(self.cwnd / 2.0, 2.0 * self.mss)
        self.cwnd = self.ssthresh

    def on_timeout(self) -> None:
        """A retransmission timeout: one segment, slow start again."""
        self.ssthresh = max(self.cwnd / 2.0, 2.0 * self.mss)
        self.cwnd = float(self.mss)
