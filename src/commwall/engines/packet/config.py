"""The packet engine's knobs: each with its unit, default, bounds and source (ns-3's rule)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Final

from commwall.transport.fabric import TransportError

__all__ = ["DEFAULT_BUFFER", "KERNELS", "PacketConfig", "PhyErrors", "phy_errors"]

#: The event loops ``PacketConfig.kernel`` chooses from.
KERNELS: Final = ("auto", "python", "numba")

#: Shared packet buffer per switch, bytes: 16 MiB, the order of a 12.8–25.6 Tb/s shallow-buffer
#: Ethernet ASIC (HPCC's ns-3 runs use 12–32 MB; reference transport.md §2.1) and of the fluid
#: incast model's default.
DEFAULT_BUFFER: Final = 16 * 1024 * 1024


@dataclass(frozen=True)
class PacketConfig:
    """How the packet engine runs. Sizes in bytes, times in seconds."""

    mtu: int = 4096
    """Payload bytes per packet (RoCE/IB MTU 4096; UEC's 4150-byte frames carry ~4 KiB)."""
    buffer: int = DEFAULT_BUFFER
    """Shared buffer of every switch."""
    endpoint_buffer: int = 64 * 1024 * 1024
    """Buffer of a NIC or GPU that forwards (PXN, NIC staging)."""
    cut_through: bool = True
    """Switches forward a packet once its header is in (cut-through, as Quantum, Spectrum and
    Tomahawk do); False waits for the tail (store-and-forward)."""
    credit_period_s: float = 1e-6
    """IB/NVLink/PCIe flow-control update period (assumption; transport.md §1.1 cites 4.096 µs
    as the OMNeT++ IB model's minimum)."""
    credit_bytes: int = 0
    """Credits per ingress port; 0 sizes them to the credit loop (transport/fabric.py)."""
    ack_every: int = 1
    """Go-back-N receivers acknowledge every this many packets (selective ones ack each)."""
    ack_bytes: int = 64
    """Wire bytes of an ACK, NACK or CNP."""
    max_inflight: int = 0
    """Bytes a window-less sender (IB, DCQCN) may have unacknowledged; 0 = no limit."""
    nvswitch_latency_s: float = 100e-9
    """Forwarding latency of an NVSwitch hop (estimate, ours)."""
    ber: float = 0.0
    """Bit error rate after FEC on every scale-out link; a packet with a bit error fails its
    FCS and is dropped at the far end (recovered end to end). :func:`phy_errors` derives it
    from a pre-FEC BER and an FEC code."""
    link_retry: bool = False
    """A packet that fails its FCS is replayed by the link (InfiniBand LLR, NVLink and PCIe
    replay: one link round trip, :mod:`commwall.phy.link`) instead of being dropped and
    recovered end to end. NVLink and PCIe hops of a cluster always replay."""
    fec_latency_s: float = 0.0
    """FEC encode + decode latency added to every scale-out hop (:func:`phy_errors`)."""
    sample_s: float = 1e-6
    """Interval of the queue-occupancy time series (doubles on long runs); 0 = none."""
    max_events: int | None = 200_000_000
    """Stop (with an error) after this many events."""
    kernel: str = "auto"
    """Which event loop runs plain traffic: ``"python"`` (the reference), ``"numba"`` (compiled,
    bit-identical; every fabric and routing: :mod:`commwall.engines.packet.fast`) or ``"auto"``
    (numba for runs of a million events or more when it is installed, else python)."""

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise TransportError(
                f"kernel={self.kernel!r}: unknown; allowed: {', '.join(map(repr, KERNELS))}"
            )
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "kernel":
                continue
            if f.name in ("cut_through", "link_retry"):
                if not isinstance(value, bool):
                    raise TransportError(f"{f.name}={value!r}: must be true or false")
                continue
            if f.name == "max_events" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TransportError(f"{f.name}={value!r}: must be a number")
            if not math.isfinite(value) or value < 0:
                raise TransportError(f"{f.name}={value!r}: must be a finite number >= 0")
        if not 256 <= self.mtu <= 65536:
            raise TransportError(f"mtu={self.mtu}: must be 256 to 65536 bytes")
        if self.buffer < 4 * (self.mtu + 100):
            raise TransportError(f"buffer={self.buffer}: must hold at least 4 packets")
        if self.ack_every < 1:
            raise TransportError(f"ack_every={self.ack_every}: must be >= 1")
        if not 16 <= self.ack_bytes <= 1500:
            raise TransportError(f"ack_bytes={self.ack_bytes}: must be 16 to 1500")
        if self.ber >= 1e-3:
            raise TransportError(f"ber={self.ber}: must be below 1e-3 (post-FEC bit error rate)")
        if self.max_events is not None and self.max_events < 1:
            raise TransportError(f"max_events={self.max_events}: must be >= 1 (or None: no limit)")
        if self.credit_period_s <= 0:
            raise TransportError(f"credit_period_s={self.credit_period_s}: must be > 0")


@dataclass(frozen=True)
class PhyErrors:
    """A fabric link's errors as the packet engine takes them (from :mod:`commwall.phy`)."""

    fec: str
    lanes: int
    packet_error: float
    """Probability a full-MTU packet hits at least one uncorrectable codeword."""
    ber: float
    """The random bit error rate that gives a full packet that probability (``PacketConfig.ber``)."""
    fec_latency_s: float


def phy_errors(
    pre_fec_ber: float, link_rate: float, wire_bytes: int, *, fec: str | None = None,
    lane: str = "100G",
) -> PhyErrors:  # fmt: skip
    """Packet errors and FEC latency of a link of ``link_rate`` bytes/s built from ``lane``
    SerDes lanes at ``pre_fec_ber``, protected by ``fec`` (default: the lane's standard code).

    A packet fails its FCS when it touches an uncorrectable codeword
    (:func:`commwall.phy.link.codeword_failures_per_packet`: errors after FEC come in bursts of
    t + 1 symbols, not as independent bits); the engine draws per packet, so the equivalent
    random BER is the one with the same per-packet failure probability,
    1 − (1 − P_pkt)^(1/bits). FEC latency is :func:`commwall.phy.fec.fec_latency` with
    codewords striped over the port's lanes (802.3bs interleaving for 4+ lanes).

    >>> e = phy_errors(1e-4, 12.5e9, 4178)            # 100G: one 100G lane, KP4
    >>> e.fec, e.lanes, f"{e.packet_error:.1e}", round(e.fec_latency_s * 1e9, 1)
    ('kp4', 1, '9.7e-18', 88.2)
    >>> phy_errors(2e-4, 12.5e9, 4178, fec="none").packet_error > 0.99
    True
    """
    from commwall.phy import parse_lane
    from commwall.phy.fec import default_interleave, fec_latency, parse_fec
    from commwall.phy.link import codeword_failures_per_packet

    gen = parse_lane(lane)
    code = parse_fec(fec or gen.fec)
    if not (math.isfinite(link_rate) and link_rate > 0):
        raise TransportError(f"link_rate={link_rate!r}: must be a positive rate in bytes/s")
    lanes = max(1, round(link_rate * 8 / gen.payload_rate_bps))
    p_pkt = min(codeword_failures_per_packet(code, pre_fec_ber, wire_bytes), 1.0)
    bits = 8 * wire_bytes
    ber = 1.0 if p_pkt >= 1.0 else -math.expm1(math.log1p(-p_pkt) / bits)
    latency = fec_latency(
        code, gen.line_rate_bps, lanes=lanes, interleave=default_interleave(code, lanes)
    )
    return PhyErrors(code.key, lanes, p_pkt, ber, latency)
