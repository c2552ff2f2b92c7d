"""The packet-level engine: discrete events in integer picoseconds — credits, pauses, ECN marks,
trims and drops (DESIGN.md ``engines/packet``). Small scale, highest fidelity.

* :mod:`~commwall.engines.packet.kernel` — the event loop (no network knowledge).
* :mod:`~commwall.engines.packet.components` — packets, ports (serialising queue + pipe), nodes.
* :mod:`~commwall.engines.packet.endpoints` — flows, the NIC scheduler, senders and receivers.
* :mod:`~commwall.engines.packet.network` — building a network, running it, its invariants.
* :mod:`~commwall.engines.packet.traffic` — incast, permutation and flow lists on a topology.
* :mod:`~commwall.engines.packet.engine` — :class:`PacketEngine`, any ``Schedule`` on a cluster.
"""

from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.result import PacketResult, jain
from commwall.engines.packet.traffic import PACKET_ROUTINGS, run_packet_traffic

__all__ = ["PACKET_ROUTINGS", "PacketConfig", "PacketResult", "jain", "run_packet_traffic"]
