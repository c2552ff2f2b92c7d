"""DCQCN rate control at the sender (the reaction point), Zhu et al., "Congestion Control for
Large-Scale RDMA Deployments", SIGCOMM 2015; rules and parameters in reference transport.md §2.3.

On a CNP: R_T ← R_C, R_C ← R_C·(1 − α/2), α ← (1 − g)·α + g, counters reset. Every T without a
CNP α decays, α ← (1 − g)·α, and the timer counter i grows; every B bytes sent the byte counter
j grows; each step then raises the rate: fast recovery R_C ← (R_T + R_C)/2 while max(i, j) ≤ F,
additive increase R_T += R_AI while min(i, j) ≤ F, hyper increase R_T += (min(i, j) − F)·R_HAI
after. The paper's α timer and rate timer share the 55 µs period and both restart on a CNP, so
one tick serves both.

Parameters: g = 1/256, T = 55 µs, B = 10 MB, F = 5 (paper); R_AI = line/20 and R_HAI = line/10
(uet-htsim ``dcqcn.cpp``, transport.md §2.3, the same paper timers); a 100 Mb/s floor (HPCC ns-3).
HPCC's Mellanox-style increments (R_AI = 5·bw/25 Mb/s, 2·10⁻⁴ of the line) belong with its 1 µs
α update and 4 µs decrease check; with the paper's 55 µs timers they leave a flow cut by a CNP
at a fraction of its share for milliseconds (two long flows into one port finished at 2.7x
their ideal in our runs), so the simulator that keeps the paper's timers supplies the
increments. Both are :class:`DcqcnParams` knobs.

>>> d = Dcqcn(12.5e9)
>>> d.on_cnp(); round(d.rate / 12.5e9, 4)     # α = 1: the first CNP halves the rate
0.5
>>> for _ in range(5): d.on_tick()
>>> round(d.rate / 12.5e9, 4)                  # five fast-recovery steps close 31/32 of the gap
0.9844
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Dcqcn", "DcqcnParams"]


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN knobs (module doc for sources)."""

    g: float = 1.0 / 256.0
    period_s: float = 55e-6
    byte_counter: float = 10e6
    fast_recovery: int = 5
    rai_share: float = 1.0 / 20.0  # R_AI = line/20 (uet-htsim dcqcn.cpp)
    rhai_share: float = 1.0 / 10.0  # R_HAI = line/10 (uet-htsim dcqcn.cpp)
    min_rate: float = 100e6 / 8  # 100 Mb/s, bytes/s


class Dcqcn:
    """One queue pair's rate limiter. Rates in bytes/s."""

    __slots__ = ("alpha", "bytes", "cnp_seen", "i", "j", "line", "p", "rate", "target")

    def __init__(self, line_rate: float, params: DcqcnParams | None = None) -> None:
        self.p = params or DcqcnParams()
        self.line = line_rate
        self.rate = line_rate
        self.target = line_rate
        self.alpha = 1.0
        self.i = 0
        self.j = 0
        self.bytes = 0.0
        self.cnp_seen = False

    @property
    def limited(self) -> bool:
        """Whether the sender runs below line rate (and its tick must keep running)."""
        return self.rate < self.line or self.target < self.line

    def on_cnp(self) -> None:
        """A congestion notification arrived: cut the rate."""
        p = self.p
        self.target = self.rate
        self.rate = max(p.min_rate, self.rate * (1.0 - self.alpha / 2.0))
        self.alpha = (1.0 - p.g) * self.alpha + p.g
        self.i = self.j = 0
        self.bytes = 0.0
        self.cnp_seen = True

    def on_tick(self) -> None:
        """The 55 µs timer fired: α decays if no CNP came, and the timer counter steps up."""
        if not self.cnp_seen:
            self.alpha *= 1.0 - self.p.g
        self.cnp_seen = False
        self.i += 1
        self._increase()

    def on_sent(self, nbytes: int) -> bool:
        """``nbytes`` left the sender: the byte counter may step up. Returns whether the rate
        may have changed (the sender's pacing need not be recomputed otherwise)."""
        if self.rate >= self.line and self.target >= self.line:
            return False
        self.bytes += nbytes
        if self.bytes >= self.p.byte_counter:
            self.bytes = 0.0
            self.j += 1
            self._increase()
            return True
        return False

    def _increase(self) -> None:
        p = self.p
        f = p.fast_recovery
        hi, lo = max(self.i, self.j), min(self.i, self.j)
        if hi > f:
            if lo > f:
                self.target += (lo - f) * p.rhai_share * self.line
            else:
                self.target += p.rai_share * self.line
        self.target = min(self.target, self.line)
        self.rate = min((self.target + self.rate) / 2.0, self.line)
