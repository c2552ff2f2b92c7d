"""Bill of materials, power and cost of a built :class:`~commwall.topology.graph.Topology`.

Counts come from the graph (switch nodes per tier, cables per segment); every cable gets a medium
from its length class at its lane rate (:func:`commwall.phy.optics.medium_for_length`: passive DAC
within the copper reach of the lane rate, active copper ACC/AEC beyond, then multimode SR, single-
mode DR, FR); optical cables get a transceiver at each end. Power and price of every part come from
the catalog and are cited in ``BillOfMaterials.sources`` (``part.source_for(field)``); all prices
are order-of-magnitude estimates (hardware.md §9).

Counting rules (also in ``BillOfMaterials.assumptions``):

* A transceiver is one module-equivalent per optical cable end at the link rate, so an optical
  cable has 2. Switch-side twin-port OSFP cages (2 × 400G in one 800G module, hardware.md §6.1)
  are counted as 2 port-equivalents. With ``optics="cpo"`` the switch-side ends are co-packaged
  optical engines (one port-equivalent per end, power per bit from the catalog CPO part) and
  still count as transceivers, but not as pluggables; the NIC-side end of an access cable stays a
  pluggable (``nic_optics``, DSP by default: NIC-side CPO is not shipping, hardware.md §6.2).
* Transceivers per GPU of an all-optical non-blocking Clos is then 2 × tiers: ≈ 4 for two tiers,
  ≈ 6 for three (NVIDIA: 655,000 / 128,000 GPUs ≈ 5.1, topology.md §1).
* The DGX H100 SuperPOD table (topology.md §2.1) lists 252 / 1,020 node+UFM → leaf cables at
  1 / 4 SU: the graph has only compute nodes (248 / 1,016); the RA adds
  :data:`SUPERPOD_UFM_LINKS` = 4 UFM links (4 at every size, not 4 per SU).

>>> from commwall.topology import leaf_spine
>>> b = bill_of_materials(leaf_spine(8, link_rate="400 Gb/s"), lengths={"access": 20})
>>> b.switch_count(), b.cables_by_medium(), b.total_transceivers
(12, {'sr': 64}, 128)
>>> round(b.transceivers_per_gpu, 2)
4.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from commwall.catalog import GPU, NIC, Catalog, Switch, load_catalog
from commwall.checks import whole
from commwall.phy.optics import (
    DEFAULT_LANES_PER_PORT,
    OpticChoice,
    OpticsError,
    medium_for_length,
    optic_choice,
)
from commwall.scenario import OPTICS as SCENARIO_OPTICS
from commwall.topology.graph import LinkKind, Medium, NodeKind, Topology, TopologyError
from commwall.units import UnitError, format_bandwidth, format_length, parse_length

__all__ = [
    "OPTICS",
    "RAIL_ACCESS_LENGTH_M",
    "SUPERPOD_UFM_LINKS",
    "BillOfMaterials",
    "BomError",
    "CableLine",
    "OpticsComparison",
    "OpticsRow",
    "PartLine",
    "SwitchLine",
    "TransceiverLine",
    "bill_of_materials",
    "compare_optics",
]


class BomError(TopologyError):
    """Bad input to the bill of materials; the message names the parameter and the fix."""


#: Optical technologies a fabric's optical ends can be built with.
OPTICS: Final[tuple[str, ...]] = SCENARIO_OPTICS

#: UFM (fabric manager) links in a DGX H100 SuperPOD compute fabric: the RA's "node+UFM → leaf"
#: column minus the compute nodes' links is 4 at every size (252 − 31·8, 508 − 63·8, 764 − 95·8,
#: 1,020 − 127·8; topology.md §2.1, derived): a fixed 4, not 4 per SU. One node slot (of 32 × SUs)
#: is given up for UFM connectivity.
SUPERPOD_UFM_LINKS: Final = 4

#: Access (NIC → leaf) run of a rail design: a rail leaf collects one NIC of every node of an SU,
#: spread over several racks, so its runs cross racks (127 DGX H100 in 38 racks; "a few to tens of
#: m"; the RA cables them with optics, 4 twin-port OSFP per DGX): topology.md §2.1, §7. The
#: builders' generic 3 m in-rack access length would pick active copper. Estimate (ours).
RAIL_ACCESS_LENGTH_M: Final = 20.0
_RAIL_ACCESS_SOURCE: Final = (
    "estimate (ours): rail leaves collect one NIC per node across racks, cabled with optics in "
    "the DGX SuperPOD RA (topology.md §2.1, §7: node → leaf 'a few to tens of m')"
)
_BUILDER_LENGTH_SOURCE: Final = (
    "topology builder default (topology/_checks.py, topology.md §7: node → leaf a few m, "
    "leaf → spine up to hundreds of m, spine → core up to km; estimates)"
)
_TIER_NAMES: Final = {1: "leaf", 2: "spine", 3: "core"}
_REL_TOL: Final = 1e-9


# --------------------------------------------------------------------------------------------
# line items


@dataclass(frozen=True)
class SwitchLine:
    """Switch boxes of one tier: ``count`` × catalog ``part``; power and price per box."""

    tier: str
    count: int
    part: str
    ports_used: int  # most ports used on one box of this tier
    ports_available: int  # ports at the link rate (port count × breakout)
    power_w: float  # per box, without pluggable optics (0 where the catalog has none)
    cost_usd: float | None  # per box

    @property
    def total_power_w(self) -> float:
        return self.count * self.power_w

    @property
    def total_cost_usd(self) -> float:
        return self.count * (self.cost_usd or 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "count": self.count,
            "part": self.part,
            "ports_used": self.ports_used,
            "ports_available": self.ports_available,
            "power_w": self.power_w,
            "total_power_w": self.total_power_w,
            "cost_usd": self.cost_usd,
            "total_cost_usd": self.total_cost_usd,
            "cost_is_estimate": True,
        }


@dataclass(frozen=True)
class CableLine:
    """Cables of one segment (access, leaf-spine, ...) on one medium.

    ``medium`` is a :data:`~commwall.phy.optics.MEDIUM_NAMES` class (dac, acc, aec, sr, dr, fr) or
    ``board`` (traces/backplane: no cable bought). ``power_w``/``cost_usd`` are totals for the
    copper cables' ends; optical cables' power and price are in their transceivers.
    """

    segment: str
    medium: str
    family: str  # copper, multimode, single-mode, board
    count: int
    rate: float  # bytes/s per direction per cable
    lane_rate: float
    length_m: float  # longest run in the line
    reach_m: float
    part: str | None
    topology_medium: str  # what the builder called it (copper, fibre, board)
    power_w: float
    cost_usd: float

    @property
    def optical(self) -> bool:
        return self.family in ("multimode", "single-mode")

    def to_dict(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "medium": self.medium,
            "family": self.family,
            "count": self.count,
            "rate_gbps": self.rate * 8 / 1e9,
            "lane_rate_gbps": self.lane_rate * 8 / 1e9,
            "length_m": self.length_m,
            "reach_m": self.reach_m,
            "part": self.part,
            "topology_medium": self.topology_medium,
            "power_w": self.power_w,
            "cost_usd": self.cost_usd,
            "cost_is_estimate": True,
        }


@dataclass(frozen=True)
class TransceiverLine:
    """Optical ends of one segment on one technology and side (``switch`` or ``nic``)."""

    segment: str
    technology: str  # dsp, lpo, cpo
    side: str
    count: int
    part: str
    power_w: float  # per end
    cost_usd: float | None  # per end
    scaled_from: str | None

    @property
    def pluggable(self) -> bool:
        return self.technology != "cpo"

    @property
    def total_power_w(self) -> float:
        return self.count * self.power_w

    @property
    def total_cost_usd(self) -> float:
        return self.count * (self.cost_usd or 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "technology": self.technology,
            "side": self.side,
            "count": self.count,
            "pluggable": self.pluggable,
            "part": self.part,
            "scaled_from": self.scaled_from,
            "power_w": self.power_w,
            "total_power_w": self.total_power_w,
            "cost_usd": self.cost_usd,
            "total_cost_usd": self.total_cost_usd,
            "cost_is_estimate": True,
        }


@dataclass(frozen=True)
class PartLine:
    """``count`` × a catalog part (NICs, GPUs) with power per unit (None: not counted)."""

    count: int
    part: str | None
    power_w: float | None

    @property
    def total_power_w(self) -> float:
        return self.count * (self.power_w or 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "part": self.part,
            "power_w": self.power_w,
            "total_power_w": self.total_power_w,
        }


# --------------------------------------------------------------------------------------------
# the bill


def _tally(lines: Sequence[Any], attr: str, segment: str | None = None) -> dict[str, int]:
    """Counts of ``lines`` per value of ``attr`` (in one segment, or all)."""
    out: dict[str, int] = {}
    for line in lines:
        if segment is None or line.segment == segment:
            key = getattr(line, attr)
            out[key] = out.get(key, 0) + line.count
    return out


def _tally_by_segment(lines: Sequence[Any], attr: str) -> dict[str, dict[str, int]]:
    """Counts per segment, then per value of ``attr``."""
    segments = dict.fromkeys(line.segment for line in lines)
    return {seg: _tally(lines, attr, seg) for seg in segments}


@dataclass(frozen=True)
class BillOfMaterials:
    """Switch boxes, cables, transceivers, NICs and GPUs of one fabric, with power and cost.

    ``watts`` splits power into ``switches`` (boxes without pluggable optics), ``optics``
    (transceivers and co-packaged engines), ``cables`` (active copper ends), ``nics`` and
    ``gpus``. ``cost_usd`` covers the network (switches, optics, cables); NICs and GPUs have no
    catalog price. Every figure is an estimate; ``sources`` cites each catalog number as
    ``"part.field"`` → citation.
    """

    topology: str
    optics: str
    nic_optics: str
    endpoints: int
    switches: tuple[SwitchLine, ...]
    cables: tuple[CableLine, ...]
    transceivers: tuple[TransceiverLine, ...]
    nics: PartLine
    gpus: PartLine
    nvswitch_chips: int
    sources: Mapping[str, str]
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())

    # ---- counts ----------------------------------------------------------------------------

    def switch_count(self, tier: str | None = None) -> int:
        """Switch boxes in ``tier`` (``leaf``, ``spine``, ``core``, ``router``) or in all."""
        return sum(s.count for s in self.switches if tier is None or s.tier == tier)

    @property
    def switches_by_tier(self) -> dict[str, int]:
        return {s.tier: s.count for s in self.switches}

    @property
    def total_cables(self) -> int:
        """Cables bought (board links excluded)."""
        return sum(c.count for c in self.cables if c.medium != "board")

    def cables_in(self, segment: str) -> int:
        """Cables of ``segment`` (``access``, ``leaf-spine``, ``spine-core``, ``local``, ...)."""
        return sum(c.count for c in self.cables if c.segment == segment)

    def cables_by_medium(self, segment: str | None = None) -> dict[str, int]:
        """Cables per medium class, in one segment or all."""
        return _tally(self.cables, "medium", segment)

    @property
    def cables_by_segment(self) -> dict[str, dict[str, int]]:
        return _tally_by_segment(self.cables, "medium")

    @property
    def total_transceivers(self) -> int:
        """Optical ends: pluggable modules plus co-packaged port-equivalents (2 per cable)."""
        return sum(t.count for t in self.transceivers)

    @property
    def pluggable_transceivers(self) -> int:
        return sum(t.count for t in self.transceivers if t.pluggable)

    @property
    def co_packaged_ports(self) -> int:
        return sum(t.count for t in self.transceivers if not t.pluggable)

    def transceivers_by_technology(self, segment: str | None = None) -> dict[str, int]:
        return _tally(self.transceivers, "technology", segment)

    @property
    def transceivers_by_segment(self) -> dict[str, dict[str, int]]:
        return _tally_by_segment(self.transceivers, "technology")

    @property
    def transceivers_per_gpu(self) -> float:
        """Optical ends per GPU (per endpoint when no GPUs are counted)."""
        return self.total_transceivers / max(self.gpus.count or self.endpoints, 1)

    # ---- power and cost --------------------------------------------------------------------

    @property
    def watts(self) -> dict[str, float]:
        """Power by category, W."""
        return {
            "switches": sum(s.total_power_w for s in self.switches),
            "optics": sum(t.total_power_w for t in self.transceivers),
            "cables": sum(c.power_w for c in self.cables),
            "nics": self.nics.total_power_w,
            "gpus": self.gpus.total_power_w,
        }

    @property
    def interconnect_power_w(self) -> float:
        """Optics plus active cables, W (what DSP vs LPO vs CPO changes)."""
        w = self.watts
        return w["optics"] + w["cables"]

    @property
    def network_power_w(self) -> float:
        """Switches, optics, cables and NICs, W."""
        w = self.watts
        return w["switches"] + w["optics"] + w["cables"] + w["nics"]

    @property
    def total_power_w(self) -> float:
        return sum(self.watts.values())

    @property
    def cost_usd(self) -> dict[str, float]:
        """Order-of-magnitude network cost by category, US$ (estimates)."""
        return {
            "switches": sum(s.total_cost_usd for s in self.switches),
            "optics": sum(t.total_cost_usd for t in self.transceivers),
            "cables": sum(c.cost_usd for c in self.cables),
        }

    @property
    def total_cost_usd(self) -> float:
        return sum(self.cost_usd.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "optics": self.optics,
            "nic_optics": self.nic_optics,
            "endpoints": self.endpoints,
            "switches": [s.to_dict() for s in self.switches],
            "switches_by_tier": self.switches_by_tier,
            "cables": [c.to_dict() for c in self.cables],
            "cables_by_segment": self.cables_by_segment,
            "cables_by_medium": self.cables_by_medium(),
            "transceivers": [t.to_dict() for t in self.transceivers],
            "transceivers_by_segment": self.transceivers_by_segment,
            "transceivers_by_technology": self.transceivers_by_technology(),
            "nics": self.nics.to_dict(),
            "gpus": self.gpus.to_dict(),
            "nvswitch_chips": self.nvswitch_chips,
            "totals": {
                "switches": self.switch_count(),
                "cables": self.total_cables,
                "transceivers": self.total_transceivers,
                "pluggable_transceivers": self.pluggable_transceivers,
                "co_packaged_ports": self.co_packaged_ports,
                "transceivers_per_gpu": self.transceivers_per_gpu,
                "watts": self.watts,
                "interconnect_power_w": self.interconnect_power_w,
                "network_power_w": self.network_power_w,
                "total_power_w": self.total_power_w,
                "cost_usd": self.cost_usd,
                "total_cost_usd": self.total_cost_usd,
                "cost_is_estimate": True,
            },
            "sources": dict(self.sources),
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------------------------
# building it


def _segments(topo: Topology) -> tuple[npt.NDArray[Any], dict[int, str]]:
    """Per-cable segment code and its name: access, leaf-spine, spine-core, local, global, ..."""
    kind = topo.link_kind[0::2].astype(np.int64)
    tier = topo.link_tier[0::2].astype(np.int64)
    code = kind * 64 + tier
    names: dict[int, str] = {}
    for c in np.unique(code).tolist():
        k, t = LinkKind(c // 64), c % 64
        if k == LinkKind.UP:
            lo, hi = _TIER_NAMES.get(t - 1, f"tier{t - 1}"), _TIER_NAMES.get(t, f"tier{t}")
            names[c] = f"{lo}-{hi}"
        else:
            names[c] = k.name.lower().replace("_", "-")
    return code, names


def _check_optics(name: str, value: str) -> None:
    if value not in OPTICS:
        raise BomError(f"{name}={value!r}: allowed: {', '.join(OPTICS)}")


def _effective_ports(part: Switch, rate: float) -> tuple[int, int] | None:
    """(ports at ``rate``, breakout) when each port splits into whole ``rate`` links."""
    m = part.port_rate / rate
    whole = round(m)
    if whole < 1 or not math.isclose(m, whole, rel_tol=1e-6):
        return None
    return part.ports * whole, whole


def _pick_switch(
    cat: Catalog, name: str | None, rate: float, ports_needed: int
) -> tuple[Switch, int, str]:
    """The switch part, its breakout at ``rate`` and how it was chosen."""
    speed = format_bandwidth(rate, bits=True)
    if name is not None:
        part = cat.switch(name)
        fit = _effective_ports(part, rate)
        if fit is None:
            raise BomError(
                f"switch={name!r}: its ports run at {format_bandwidth(part.port_rate, bits=True)}, "
                f"which do not split into whole {speed} links; pick a switch at {speed} or a "
                "multiple of it"
            )
        if fit[0] < ports_needed:
            raise BomError(
                f"switch={name!r}: {fit[0]} ports at {speed}, but a box in this fabric uses "
                f"{ports_needed}; pick a larger switch or build the topology with radix {fit[0]}"
            )
        return part, fit[1], f"switch {name} (given)"
    fits: list[tuple[int, bool, int, float, str, Switch]] = []
    for p in cat.parts("switch"):
        assert isinstance(p, Switch)  # the loader builds switch parts as Switch
        f = _effective_ports(p, rate)
        if f is not None and f[0] >= ports_needed:
            fits.append((f[1], p.cell_fabric, f[0], p.power or math.inf, p.name, p))
    if not fits:
        raise BomError(
            f"switch: no catalog switch has {ports_needed} ports at {speed}; give switch= a "
            "catalog name and a topology radix that fits it"
        )
    # native port rate first, a plain switch before a cell-fabric leaf, then the closest radix
    breakout, _, ports, _, nm, part = min(fits)
    return (
        part,
        breakout,
        f"switch {nm} chosen from the catalog: {ports} ports at {speed} cover the {ports_needed} "
        "a box uses (native port rate preferred, then a plain switch over a cell-fabric leaf, "
        "then the smallest radix that fits)",
    )


def _pick_nic(cat: Catalog, name: str | None, rate: float) -> NIC | None:
    if name is not None:
        nic = cat.nic(name)
        if nic.rate < rate * (1 - _REL_TOL):
            raise BomError(
                f"nic={name!r}: runs at {format_bandwidth(nic.rate, bits=True)}, slower than the "
                f"{format_bandwidth(rate, bits=True)} access links; pick a faster NIC"
            )
        return nic
    same = [
        p
        for p in cat.parts("nic")
        if isinstance(p, NIC) and math.isclose(p.rate, rate, rel_tol=_REL_TOL)
    ]
    return min(same, key=lambda p: (p.power, p.name)) if same else None


def _lengths(
    topo: Topology,
    code: npt.NDArray[Any],
    names: Mapping[int, str],
    given: Mapping[str, Any] | None,
) -> tuple[npt.NDArray[Any], dict[str, str]]:
    """Per-cable run length (m) and the source of each segment's length."""
    length = topo.link_length_m[0::2].astype(np.float64).copy()
    by_name = {v: k for k, v in names.items()}
    sources = dict.fromkeys(by_name, _BUILDER_LENGTH_SOURCE)
    rail = str(topo.params.get("kind", "")).startswith("rail")
    if given is None and rail and "access" in by_name:
        length[code == by_name["access"]] = RAIL_ACCESS_LENGTH_M
        sources["access"] = _RAIL_ACCESS_SOURCE
    for seg, value in (given or {}).items():
        if seg not in by_name:
            raise BomError(
                f"lengths: {topo.name!r} has no segment {seg!r}; its segments: {', '.join(by_name)}"
            )
        try:
            metres = parse_length(value)
        except UnitError as e:
            raise BomError(f"lengths[{seg!r}]={value!r}: {e}") from None
        if not metres > 0 or not math.isfinite(metres):
            raise BomError(
                f"lengths[{seg!r}]={value!r}: must be a positive length, e.g. 20 or '20 m'"
            )
        length[code == by_name[seg]] = metres
        sources[seg] = "given"
    return length, sources


def _endpoint_counts(topo: Topology, gpus_per_endpoint: float) -> tuple[int, int, int, int]:
    """(endpoints, NIC nodes, GPUs, NVSwitch chips)."""
    kinds = topo.node_kind
    endpoints = int(np.count_nonzero(topo.node_tier == 0))
    nic_nodes = int(np.count_nonzero(kinds == NodeKind.NIC.code))
    gpu_nodes = int(np.count_nonzero(kinds == NodeKind.GPU.code))
    nvswitch = int(np.count_nonzero(kinds == NodeKind.NVSWITCH.code))
    if gpu_nodes:
        return endpoints, nic_nodes, gpu_nodes, nvswitch
    g = endpoints * gpus_per_endpoint
    if not math.isclose(g, round(g), abs_tol=1e-6):
        raise BomError(
            f"gpus_per_endpoint={gpus_per_endpoint:g}: {endpoints} endpoints would hold {g:g} "
            "GPUs; give a value that makes a whole number"
        )
    return endpoints, nic_nodes, round(g), nvswitch


def _cite(sources: dict[str, str], part: Any, *fields: str) -> None:
    for f in fields:
        sources[f"{part.name}.{f}"] = part.source_for(f)


def _cite_choice(sources: dict[str, str], c: OpticChoice) -> None:
    for f in ("power", "cost_usd", "reach"):
        sources[f"{c.part}.{f}"] = c.sources[f]


def _switch_lines(
    topo: Topology, cat: Catalog, switch: str | None, sources: dict[str, str], notes: list[str]
) -> tuple[SwitchLine, ...]:
    is_switch = topo.node_kind == NodeKind.SWITCH.code
    if not is_switch.any():
        return ()
    degree = np.bincount(topo.link_src, minlength=topo.n_nodes)
    node_rate = np.zeros(topo.n_nodes)
    np.maximum.at(node_rate, topo.link_src, topo.link_capacity)
    rate = float(node_rate[is_switch].max())
    part, breakout, how = _pick_switch(cat, switch, rate, int(degree[is_switch].max()))
    notes.append(how)
    if breakout > 1:
        notes.append(
            f"switch ports at {format_bandwidth(part.port_rate, bits=True)} split into {breakout} "
            f"× {format_bandwidth(rate, bits=True)} links (breakout)"
        )
    if part.power is None:
        notes.append(f"switch {part.name}: no catalog power; box power counted as 0 W")
    else:
        _cite(sources, part, "power")
    if part.cost_usd is not None:
        _cite(sources, part, "cost_usd")
    _cite(sources, part, "ports", "port_rate")
    flat = topo.params.get("kind") == "dragonfly"
    lines = []
    for t in np.unique(topo.node_tier[is_switch]).tolist():
        sel = is_switch & (topo.node_tier == t)
        lines.append(
            SwitchLine(
                tier="router" if flat else _TIER_NAMES.get(t, f"tier{t}"),
                count=int(sel.sum()),
                part=part.name,
                ports_used=int(degree[sel].max()),
                ports_available=part.ports * breakout,
                power_w=part.power or 0.0,
                cost_usd=part.cost_usd,
            )
        )
    return tuple(lines)


@dataclass
class _Tally:
    """Mutable accumulators while walking the cable groups."""

    cables: dict[tuple[str, str], CableLine] = field(default_factory=dict)
    ends: dict[tuple[str, str, str, str], TransceiverLine] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add_cable(self, line: CableLine) -> None:
        key = (line.segment, line.medium)
        old = self.cables.get(key)
        if old is not None:
            line = CableLine(
                line.segment,
                line.medium,
                line.family,
                old.count + line.count,
                max(old.rate, line.rate),
                max(old.lane_rate, line.lane_rate),
                max(old.length_m, line.length_m),
                line.reach_m,
                line.part,
                line.topology_medium,
                old.power_w + line.power_w,
                old.cost_usd + line.cost_usd,
            )
        self.cables[key] = line

    def add_ends(self, segment: str, side: str, count: int, c: OpticChoice) -> None:
        if count == 0:
            return
        key = (segment, c.kind, side, c.part)
        old = self.ends.get(key)
        self.ends[key] = TransceiverLine(
            segment,
            c.kind,
            side,
            count + (old.count if old else 0),
            c.part,
            c.power_w,
            c.cost_usd,
            c.scaled_from,
        )


def bill_of_materials(
    topo: Topology,
    *,
    optics: str = "dsp",
    nic_optics: str | None = None,
    switch: str | None = None,
    nic: str | None = None,
    gpu: str | None = None,
    gpus_per_endpoint: float = 1.0,
    lanes_per_port: int = DEFAULT_LANES_PER_PORT,
    lengths: Mapping[str, str | float] | None = None,
    catalog: Catalog | None = None,
) -> BillOfMaterials:
    """Switch boxes, cables by medium, transceivers, NICs and GPUs of ``topo``, with power and cost.

    ``optics`` builds every optical end (``dsp`` retimed pluggables, ``lpo`` linear pluggables,
    ``cpo`` co-packaged on the switch side); ``nic_optics`` the NIC-side end of an access cable
    (default: ``optics``, or ``dsp`` under CPO). ``switch`` is a catalog switch name (default:
    ``topo.params["switch"]`` when the builder names one, else the catalog switch at the link
    rate with the fewest ports that cover the busiest box); ``nic`` a catalog NIC (default: the
    lowest-power one at the access rate; none there: NIC power not counted); ``gpu`` a catalog
    GPU whose TDP is counted for ``gpus_per_endpoint`` GPUs per endpoint (1 for rail designs:
    one NIC per GPU). Each cable's medium is :func:`~commwall.phy.optics.medium_for_length` of
    its run at ``link rate / lanes_per_port`` per lane; ``lengths`` sets a segment's run
    (``{"access": 20, "leaf-spine": "50 m"}``), else the builder's, except that a rail design's
    access runs default to :data:`RAIL_ACCESS_LENGTH_M` (cross-rack).
    """
    _check_optics("optics", optics)
    nic_tech = nic_optics if nic_optics is not None else ("dsp" if optics == "cpo" else optics)
    _check_optics("nic_optics", nic_tech)
    if nic_tech == "cpo":
        raise BomError(
            "nic_optics='cpo': NIC-side co-packaged optics are not modelled; use dsp or lpo"
        )
    whole("lanes_per_port", lanes_per_port, 1, error=BomError)
    if isinstance(gpus_per_endpoint, bool) or not gpus_per_endpoint > 0:
        raise BomError(f"gpus_per_endpoint={gpus_per_endpoint!r}: must be a number > 0")
    cat = catalog or load_catalog()
    sources: dict[str, str] = {}
    notes: list[str] = []

    if switch is None and isinstance(topo.params.get("switch"), str):
        switch = topo.params["switch"]  # a builder that knows its catalog switch names it
    switches = _switch_lines(topo, cat, switch, sources, notes)
    code, names = _segments(topo)
    length, length_sources = _lengths(topo, code, names, lengths)
    builder = {seg for seg, src in length_sources.items() if src == _BUILDER_LENGTH_SOURCE}
    tally = _tally_cables(
        topo, code, names, length, builder, optics, nic_tech, lanes_per_port, cat, sources
    )

    endpoints, nic_nodes, n_gpus, nvswitch = _endpoint_counts(topo, gpus_per_endpoint)
    access_rate = float(topo.link_capacity[topo.link_kind == LinkKind.ACCESS].max(initial=0.0))
    nic_part = _pick_nic(cat, nic, access_rate) if nic_nodes else None
    if nic_part is not None:
        _cite(sources, nic_part, "power")
        nics = PartLine(-(-nic_nodes // nic_part.ports), nic_part.name, nic_part.power)
    else:
        nics = PartLine(nic_nodes, None, None)
        if nic_nodes:
            notes.append(
                f"no catalog NIC at {format_bandwidth(access_rate, bits=True)}: NIC power not "
                "counted (give nic=)"
            )
    gpu_part: GPU | None = cat.gpu(gpu) if gpu is not None else None
    if gpu_part is not None:
        _cite(sources, gpu_part, "tdp")
    gpus = PartLine(n_gpus, gpu_part.name if gpu_part else None, gpu_part.tdp if gpu_part else None)
    for seg, src in length_sources.items():
        sources[f"length.{seg}"] = src

    assumptions = (
        "counts from the topology graph: switch nodes per tier, cables per segment (one cable "
        "per link pair)",
        f"medium per cable: medium_for_length(run length, link rate / {lanes_per_port} lanes) "
        "(DAC within copper reach, then ACC/AEC, SR multimode, DR/FR single-mode; phy.md §4)",
        "a transceiver is one module-equivalent per optical cable end at the link rate (2 per "
        "optical cable); switch-side twin-port OSFP modules count as 2 port-equivalents",
        (
            "CPO: switch-side ends are co-packaged optical engines, one port-equivalent per end "
            "at the catalog CPO energy per bit, counted as transceivers but not as pluggables; "
            f"NIC-side ends are {nic_tech} pluggables (NIC-side CPO is not shipping, hardware.md §6.2)"
            if optics == "cpo"
            else f"optical ends: {optics} pluggables on the switch side, {nic_tech} on the NIC side"
        ),
        "parts without a catalog entry at the link rate are scaled per bit from the nearest-rate "
        "part (power and price; flagged by scaled_from)",
        "switch power is the box without pluggable optics; copper cable power and price are per "
        "end (catalog), optical fibre itself is not priced",
        "costs are order-of-magnitude estimates (hardware.md §9); NICs and GPUs are not priced",
        "not counted: UFM/management links (the DGX H100 SuperPOD RA adds SUPERPOD_UFM_LINKS = 4 "
        "to the compute-node access cables, topology.md §2.1), storage and in-band fabrics",
        *notes,
    )
    return BillOfMaterials(
        topology=topo.name,
        optics=optics,
        nic_optics=nic_tech,
        endpoints=endpoints,
        switches=switches,
        cables=tuple(tally.cables.values()),
        transceivers=tuple(tally.ends.values()),
        nics=nics,
        gpus=gpus,
        nvswitch_chips=nvswitch,
        sources=sources,
        assumptions=assumptions,
        warnings=tuple(tally.warnings),
    )


def _tally_cables(
    topo: Topology,
    code: npt.NDArray[Any],
    names: Mapping[int, str],
    length: npt.NDArray[Any],
    builder_lengths: set[str],
    optics: str,
    nic_tech: str,
    lanes_per_port: int,
    cat: Catalog,
    sources: dict[str, str],
) -> _Tally:
    """Group cables by (segment, rate, length, board, NIC-side ends) and price each group once."""
    a, b = topo.link_src[0::2], topo.link_dst[0::2]
    host_ends = (topo.node_tier[a] == 0).astype(np.int64) + (topo.node_tier[b] == 0)
    medium = topo.link_medium[0::2].astype(np.int64)
    cols = np.column_stack([code, topo.link_capacity[0::2], length, medium, host_ends]).astype(
        np.float64
    )
    # a few distinct groups however many cables: price each group once, not each cable
    groups, counts = np.unique(cols, axis=0, return_counts=True)
    tally = _Tally()
    for (c, rate, run, med, hosts), n in zip(groups.tolist(), counts.tolist(), strict=True):
        seg, declared = names[int(c)], Medium(int(med)).name.lower()
        lane = rate / lanes_per_port
        if int(med) == Medium.BOARD:
            tally.add_cable(
                CableLine(seg, "board", "board", n, rate, lane, run, run, None, declared, 0.0, 0.0)
            )
            continue
        try:
            m = medium_for_length(run, lane, catalog=cat)
        except OpticsError as e:
            raise BomError(
                f"{seg} cables ({format_bandwidth(rate, bits=True)}, {format_length(run)}): {e}; "
                "set lanes_per_port or lengths"
            ) from None
        sources[f"medium.{m.name}.reach"] = m.source
        if m.copper:
            ch = optic_choice(m.name, rate, scale=True, catalog=cat)
            _cite_choice(sources, ch)
            power, cost = 2 * n * ch.power_w, 2 * n * (ch.cost_usd or 0.0)
            part = ch.part
        else:
            power, cost, part = 0.0, 0.0, None
            nic_ends = int(hosts) * n
            for side, tech, count in (
                ("switch", optics, 2 * n - nic_ends),
                ("nic", nic_tech, nic_ends),
            ):
                if count == 0:
                    continue
                ch = optic_choice(tech, rate, scale=True, catalog=cat)
                _cite_choice(sources, ch)
                tally.add_ends(seg, side, count, ch)
                if run > ch.reach_m * (1 + _REL_TOL):
                    tally.warnings.append(
                        f"{seg}: {ch.part} reaches {format_length(ch.reach_m)} but the runs are "
                        f"{format_length(run)} ({m.name.upper()} class); a longer-reach module is "
                        "needed and may draw more"
                    )
            if declared == "copper" and seg in builder_lengths:
                tally.warnings.append(
                    f"{seg}: the topology calls these {format_length(run)} runs copper, but at "
                    f"{format_bandwidth(lane, bits=True)} per lane copper reaches less; counted "
                    f"as {m.name.upper()} optics"
                )
        tally.add_cable(
            CableLine(
                seg, m.name, m.family, n, rate, lane, run, m.reach_m, part, declared, power, cost
            )
        )
    tally.warnings[:] = list(dict.fromkeys(tally.warnings))
    return tally


# --------------------------------------------------------------------------------------------
# DSP vs LPO vs CPO for one fabric


@dataclass(frozen=True)
class OpticsRow:
    """One technology's interconnect for a fabric."""

    optics: str
    transceivers: int
    pluggable: int
    co_packaged: int
    optics_w: float
    cables_w: float
    switches_w: float
    cost_usd: float
    saving_vs_dsp: float | None

    @property
    def interconnect_w(self) -> float:
        """Optics plus active cables, W."""
        return self.optics_w + self.cables_w

    def to_dict(self) -> dict[str, Any]:
        return {
            "optics": self.optics,
            "transceivers": self.transceivers,
            "pluggable": self.pluggable,
            "co_packaged": self.co_packaged,
            "optics_w": self.optics_w,
            "cables_w": self.cables_w,
            "interconnect_w": self.interconnect_w,
            "switches_w": self.switches_w,
            "network_cost_usd": self.cost_usd,
            "cost_is_estimate": True,
            "saving_vs_dsp": self.saving_vs_dsp,
        }


@dataclass(frozen=True)
class OpticsComparison:
    """Interconnect power (optics + active cables) of one fabric per optical technology."""

    topology: str
    rows: tuple[OpticsRow, ...]

    def row(self, optics: str) -> OpticsRow:
        for r in self.rows:
            if r.optics == optics:
                return r
        raise BomError(
            f"optics={optics!r}: no such row; rows: {', '.join(r.optics for r in self.rows)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"topology": self.topology, "rows": [r.to_dict() for r in self.rows]}


def compare_optics(
    topo: Topology, *, technologies: tuple[str, ...] = OPTICS, **kwargs: Any
) -> OpticsComparison:
    """Total interconnect power of ``topo`` built with DSP vs LPO vs CPO optics.

    ``kwargs`` go to :func:`bill_of_materials` (not ``optics``); the saving is
    ``1 − interconnect_w / interconnect_w(dsp)``.

    >>> from commwall.topology import leaf_spine
    >>> c = compare_optics(leaf_spine(8), lengths={"access": 20})
    >>> round(c.row("lpo").saving_vs_dsp, 3)  # 1 − 4.25 W / 9 W per 400G end
    0.528
    """
    if "optics" in kwargs:
        raise BomError("compare_optics: pass technologies=, not optics=")
    for t in technologies:
        _check_optics("technologies", t)
    boms = [bill_of_materials(topo, optics=t, **kwargs) for t in technologies]
    dsp = bill_of_materials(topo, optics="dsp", **kwargs) if "dsp" not in technologies else None
    base = next((b for b in boms if b.optics == "dsp"), dsp)
    ref = base.interconnect_power_w if base is not None else 0.0
    rows = tuple(
        OpticsRow(
            optics=b.optics,
            transceivers=b.total_transceivers,
            pluggable=b.pluggable_transceivers,
            co_packaged=b.co_packaged_ports,
            optics_w=b.watts["optics"],
            cables_w=b.watts["cables"],
            switches_w=b.watts["switches"],
            cost_usd=b.total_cost_usd,
            saving_vs_dsp=1.0 - b.interconnect_power_w / ref if ref > 0 else None,
        )
        for b in boms
    )
    return OpticsComparison(topo.name, rows)
