"""The packet engine's protocol models (DESIGN.md ``transport/``).

* :mod:`~commwall.transport.fabric` — what each fabric does at a switch port and a NIC: link
  flow control (IB credits, RoCEv2 PFC, none), ECN marking, trimming, spraying, reliability;
  PFC headroom and credit sizing.
* :mod:`~commwall.transport.dcqcn` — RoCEv2's DCQCN rate control (Zhu et al., SIGCOMM 2015).
* :mod:`~commwall.transport.nscc` — Ultra Ethernet's NSCC window control (uet-htsim ``uec.cpp``).
* :mod:`~commwall.transport.reno` — a TCP NewReno-style window for plain lossy Ethernet.

Parameters and their sources: ``../shared/reference/transport.md``.
"""

from commwall.transport.fabric import (
    FABRICS,
    EcnParams,
    FabricProfile,
    TransportError,
    fabric_profile,
    pfc_headroom,
)

__all__ = [
    "FABRICS",
    "EcnParams",
    "FabricProfile",
    "TransportError",
    "fabric_profile",
    "pfc_headroom",
]
