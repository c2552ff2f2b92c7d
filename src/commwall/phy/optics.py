"""Optics and cables: power, energy per bit, latency, reach and cost per technology, and per cluster.

Every number comes from a catalog part (``catalog/data/optics.yaml``, cited per field with
``part.source_for(field)``) or from a reach/length rule in ``shared/reference`` cited where it is
defined below. Quantities are SI inside: bytes/s, W, J/bit, s, m.

Three questions, one function each:

* :func:`optic_choice` / :func:`interconnect_power` / :func:`compare_interconnect` — what does a
  fleet of N modules of a technology (DSP pluggable, LPO, LRO, CPO, passive DAC, ACC, AEC, AOC)
  draw and cost at a speed, and how much does it save against DSP pluggables?
* :func:`medium_for_length` — which cable class a run of a given length needs at a lane rate
  (passive copper, active copper, multimode SR, single-mode DR, FR).
* :func:`cluster_optics` — how many links and transceivers a built :class:`~commwall.cluster.Cluster`
  needs per fabric tier, and what its interconnect draws for each optical technology. This is an
  estimate from fat-tree counting until the topology builders land; every assumption is a
  parameter with a default and a source.

>>> row = interconnect_power(50_000, "800G", "dsp")
>>> row.choice.part, round(row.total_power_w / 1e3)
('dsp-800g', 850)
>>> round(row.choice.energy_per_bit * 1e12, 2)  # pJ/bit = 17 W / 800 Gb/s
21.25
>>> medium_for_length(3.0, "100 Gb/s").name  # beyond the 2 m passive reach at 100G/lane
'acc'
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, get_args

from commwall.catalog import Catalog, Optic, OpticKind, load_catalog
from commwall.checks import whole
from commwall.errors import CommwallError
from commwall.units import format_bandwidth, format_length, parse_bandwidth, parse_length

__all__ = [
    "CATALOG_COPPER_LANES",
    "COPPER_KINDS",
    "COPPER_REACH_BY_LANE",
    "DEFAULT_LANES_PER_PORT",
    "KINDS",
    "LONGEST_FIBRE_BY_GPUS",
    "MEDIUM_NAMES",
    "OPTICAL_CLASSES",
    "TECHNOLOGY_KINDS",
    "TIER_NAMES",
    "ClusterOptics",
    "InterconnectComparison",
    "InterconnectEstimate",
    "Medium",
    "OpticChoice",
    "OpticsError",
    "TechnologyTotal",
    "TierLinks",
    "available_speeds",
    "cluster_optics",
    "compare_interconnect",
    "default_tier_lengths",
    "interconnect_power",
    "media_options",
    "medium_for_length",
    "optic_choice",
    "parse_speed",
]


class _Rated(Protocol):
    @property
    def rate(self) -> float: ...


class _Switch(Protocol):
    @property
    def port_rate(self) -> float: ...


class _Topology(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def oversubscription(self) -> float: ...


class Cluster(Protocol):
    """What :func:`cluster_optics` reads of a cluster: a :class:`commwall.cluster.Cluster` is
    one (phy sits below the cluster layer, so it names the fields, not the class)."""

    @property
    def name(self) -> str: ...

    @property
    def n_gpus(self) -> int: ...

    @property
    def n_nodes(self) -> int: ...

    @property
    def nics_per_node(self) -> int: ...

    @property
    def tiers(self) -> int: ...

    @property
    def nic(self) -> _Rated: ...

    @property
    def switch(self) -> _Switch: ...

    @property
    def topology(self) -> _Topology: ...


class OpticsError(CommwallError, ValueError):
    """Bad input to the optics model; the message names the parameter and the allowed values."""


#: Every interconnect technology, in the order tables list them (catalog ``Optic.kind``).
KINDS: Final[tuple[str, ...]] = get_args(OpticKind)
#: Cables whose medium is copper (their reach depends on the lane rate).
COPPER_KINDS: Final = frozenset({"dac", "acc", "aec"})
#: Technologies a cluster's optical links can be built with (AOC is a ≤ 30 m cable, not a tier choice).
TECHNOLOGY_KINDS: Final[tuple[str, ...]] = ("dsp", "lpo", "lro", "cpo")
#: Tier names from the hosts up (fat-tree / folded Clos, topology.md §1).
TIER_NAMES: Final[tuple[str, ...]] = ("host-leaf", "leaf-spine", "spine-core")

_REL_TOL: Final = 1e-9
_SHORTHAND: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GgTt])\s*$")


def _gbps(x: float) -> float:
    return x * 8 / 1e9


def _speed_text(rate: float) -> str:
    return format_bandwidth(rate, bits=True)


def parse_speed(value: str | float) -> float:
    """A module or link speed in bytes/s.

    Accepts the optics industry's shorthand (``"800G"``, ``"1.6T"``: bits per second, as in
    "800G transceiver") as well as any bandwidth :func:`commwall.units.parse_bandwidth` reads
    (``"800 Gb/s"``, or a plain number in bytes/s). The shorthand is rewritten to a unit string
    and read by :mod:`commwall.units`; no conversion happens here.

    >>> parse_speed("800G") == parse_speed("800 Gb/s") == 100e9
    True
    >>> parse_speed("1.6T")
    200000000000.0
    """
    if isinstance(value, str):
        m = _SHORTHAND.match(value)
        if m:
            value = f"{m.group(1)} {m.group(2).upper()}b/s"
    rate = parse_bandwidth(value)
    if not rate > 0 or not math.isfinite(rate):
        raise OpticsError(f"speed: must be a positive bandwidth such as '800G', got {value!r}")
    return rate


def _check_kind(kind: str, parameter: str = "kind") -> None:
    if kind not in KINDS:
        raise OpticsError(f"{parameter}: unknown technology {kind!r}; allowed: {', '.join(KINDS)}")


def _parts_by_kind(catalog: Catalog) -> dict[str, list[Optic]]:
    by_kind: dict[str, list[Optic]] = {k: [] for k in KINDS}
    for p in catalog.parts("optic"):
        assert isinstance(p, Optic)  # the loader builds optic parts as Optic
        by_kind[p.kind].append(p)
    for parts in by_kind.values():
        parts.sort(key=lambda p: p.rate)
    return by_kind


def available_speeds(catalog: Catalog | None = None) -> dict[str, list[float]]:
    """Catalog module speeds per technology, bytes/s (empty list: no part of that kind)."""
    return {k: [p.rate for p in ps] for k, ps in _parts_by_kind(catalog or load_catalog()).items()}


def _speeds_text(speeds: Mapping[str, list[float]]) -> str:
    return "; ".join(
        f"{k}: {', '.join(_speed_text(s) for s in v) if v else 'none in the catalog'}"
        for k, v in speeds.items()
    )


# --------------------------------------------------------------------------------------------
# one technology at one speed


@dataclass(frozen=True)
class OpticChoice:
    """One technology at one speed: a catalog part, or one scaled from the nearest-rate part.

    ``power_w`` is per module (transceivers) or per cable end; ``latency_s`` is added per end on
    top of propagation and FEC. ``scaled_from`` names the part whose power and cost were scaled
    linearly with rate (constant energy and cost per bit) when no part matched the speed.
    """

    kind: str
    part: str
    speed: float
    power_w: float
    latency_s: float
    reach_m: float
    cost_usd: float | None
    sources: Mapping[str, str]
    estimates: tuple[str, ...] = ()
    scaled_from: str | None = None

    @property
    def energy_per_bit(self) -> float:
        """power / rate, J/bit."""
        return self.power_w / (self.speed * 8)

    @property
    def cost_is_estimate(self) -> bool:
        """Whether the price is ours or scaled rather than a published figure."""
        return "cost_usd" in self.estimates

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "part": self.part,
            "speed_gbps": _gbps(self.speed),
            "power_w": self.power_w,
            "energy_pj_per_bit": self.energy_per_bit * 1e12,
            "latency_ns": self.latency_s * 1e9,
            "reach_m": self.reach_m,
            "cost_usd": self.cost_usd,
            "cost_is_estimate": self.cost_is_estimate,
            "estimates": list(self.estimates),
            "scaled_from": self.scaled_from,
            "sources": dict(self.sources),
        }


_CHOICE_FIELDS: Final = ("rate", "power", "reach", "latency", "cost_usd")


def _from_part(part: Optic, speed: float | None = None) -> OpticChoice:
    sources = {f: part.source_for(f) for f in _CHOICE_FIELDS}
    estimates = tuple(f for f in _CHOICE_FIELDS if part.is_estimate(f))
    if speed is None or math.isclose(speed, part.rate, rel_tol=_REL_TOL):
        return OpticChoice(
            kind=part.kind,
            part=part.name,
            speed=part.rate,
            power_w=part.power,
            latency_s=part.latency,
            reach_m=part.reach,
            cost_usd=part.cost_usd,
            sources=sources,
            estimates=estimates,
        )
    ratio = speed / part.rate
    note = f" — scaled ×{ratio:g} from {part.name} at constant {{}} per bit (ours)"
    sources["power"] += note.format("energy")
    sources["cost_usd"] += note.format("cost")
    sources["rate"] = f"requested speed {_speed_text(speed)} (ours)"
    sources["reach"] += f" — reach of {part.name}, not rescaled"
    return OpticChoice(
        kind=part.kind,
        part=part.name,
        speed=speed,
        power_w=part.power * ratio,
        latency_s=part.latency,
        reach_m=part.reach,
        cost_usd=None if part.cost_usd is None else part.cost_usd * ratio,
        sources=sources,
        estimates=tuple(dict.fromkeys((*estimates, "power", "cost_usd"))),
        scaled_from=part.name,
    )


def optic_choice(
    kind: str,
    speed: str | float,
    *,
    scale: bool = False,
    catalog: Catalog | None = None,
) -> OpticChoice:
    """The catalog part of technology ``kind`` whose rate is ``speed``.

    With ``scale=True`` a speed no part matches is served by the nearest-rate part of the kind,
    its power and cost scaled linearly with rate (an estimate, flagged in ``scaled_from``); CPO
    and LPO power is quoted per bit (hardware.md §6.2), so this is the natural extrapolation.
    Without it, a missing speed raises :class:`OpticsError` listing the speeds per kind.

    >>> optic_choice("lpo", "800G").power_w
    8.5
    >>> optic_choice("cpo", "800G", scale=True).power_w  # 9 W per 1.6T port, per bit
    4.5
    """
    _check_kind(kind)
    rate = parse_speed(speed)
    cat = catalog or load_catalog()
    by_kind = _parts_by_kind(cat)
    parts = by_kind[kind]
    for p in parts:
        if math.isclose(p.rate, rate, rel_tol=_REL_TOL):
            return _from_part(p)
    speeds = {k: [p.rate for p in ps] for k, ps in by_kind.items()}
    if not parts:
        raise OpticsError(
            f"kind: the catalog has no {kind} part; speeds available per kind: {_speeds_text(speeds)}"
        )
    if not scale:
        raise OpticsError(
            f"speed: no {kind} part at {_speed_text(rate)}; {kind} speeds: "
            f"{', '.join(_speed_text(p.rate) for p in parts)} (all kinds: {_speeds_text(speeds)})"
        )
    nearest = min(parts, key=lambda p: (abs(math.log(p.rate / rate)), -p.rate))
    return _from_part(nearest, rate)


# --------------------------------------------------------------------------------------------
# fleets of modules


@dataclass(frozen=True)
class InterconnectEstimate:
    """N modules (or cable ends) of one technology: total power and cost, saving against DSP."""

    choice: OpticChoice
    n_transceivers: int
    total_power_w: float
    total_cost_usd: float | None
    saving_vs_dsp: float | None

    @property
    def cost_is_estimate(self) -> bool:
        return self.choice.cost_is_estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.choice.to_dict(),
            "n_transceivers": self.n_transceivers,
            "total_power_w": self.total_power_w,
            "total_cost_usd": self.total_cost_usd,
            "saving_vs_dsp": self.saving_vs_dsp,
        }


def _estimate(n: int, choice: OpticChoice, dsp: OpticChoice | None) -> InterconnectEstimate:
    saving = None if dsp is None or dsp.power_w <= 0 else 1.0 - choice.power_w / dsp.power_w
    return InterconnectEstimate(
        choice=choice,
        n_transceivers=n,
        total_power_w=n * choice.power_w,
        total_cost_usd=None if choice.cost_usd is None else n * choice.cost_usd,
        saving_vs_dsp=saving,
    )


def interconnect_power(
    n_transceivers: int,
    speed: str | float,
    kind: str,
    *,
    scale: bool = False,
    catalog: Catalog | None = None,
) -> InterconnectEstimate:
    """Power, energy per bit and cost of ``n_transceivers`` modules of ``kind`` at ``speed``.

    The saving is ``1 − P_kind / P_dsp`` per module at the same speed (DSP scaled by energy per
    bit when the catalog has no DSP part at that speed). Costs are order-of-magnitude estimates
    (hardware.md §9); ``cost_is_estimate`` says when a price is ours.
    """
    whole("n_transceivers", n_transceivers, 0, error=OpticsError)
    choice = optic_choice(kind, speed, scale=scale, catalog=catalog)
    dsp = optic_choice("dsp", choice.speed, scale=True, catalog=catalog)
    return _estimate(n_transceivers, choice, dsp)


@dataclass(frozen=True)
class InterconnectComparison:
    """Every technology at one speed; ``unavailable`` says why a kind has no row."""

    n_transceivers: int
    speed: float
    rows: tuple[InterconnectEstimate, ...]
    unavailable: Mapping[str, str]

    def row(self, kind: str) -> InterconnectEstimate:
        for r in self.rows:
            if r.choice.kind == kind:
                return r
        raise OpticsError(
            f"kind: no {kind} row at {_speed_text(self.speed)} "
            f"({self.unavailable.get(kind, 'not compared')}); rows: "
            f"{', '.join(r.choice.kind for r in self.rows)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_transceivers": self.n_transceivers,
            "speed_gbps": _gbps(self.speed),
            "rows": [r.to_dict() for r in self.rows],
            "unavailable": dict(self.unavailable),
        }


def compare_interconnect(
    n_transceivers: int,
    speed: str | float,
    *,
    kinds: Sequence[str] | None = None,
    scale: bool = True,
    catalog: Catalog | None = None,
) -> InterconnectComparison:
    """DSP vs LPO vs LRO vs CPO vs copper vs AOC for ``n_transceivers`` modules at ``speed``.

    ``scale=True`` (default) lets an optical technology without a part at ``speed`` stand in
    with its nearest-rate part scaled per bit (flagged); copper is never rescaled, because its
    reach changes with the lane rate (phy.md §4) — those kinds go to ``unavailable``.
    """
    whole("n_transceivers", n_transceivers, 0, error=OpticsError)
    rate = parse_speed(speed)
    cat = catalog or load_catalog()
    chosen = tuple(KINDS if kinds is None else kinds)
    for k in chosen:
        _check_kind(k, "kinds")
    by_kind = _parts_by_kind(cat)
    dsp = optic_choice("dsp", rate, scale=True, catalog=cat) if by_kind["dsp"] else None
    rows: list[InterconnectEstimate] = []
    unavailable: dict[str, str] = {}
    for k in chosen:
        parts = by_kind[k]
        if not parts:
            unavailable[k] = f"the catalog has no {k} part"
            continue
        if scale and k not in COPPER_KINDS:
            rows.append(
                _estimate(n_transceivers, optic_choice(k, rate, scale=True, catalog=cat), dsp)
            )
            continue
        if not any(math.isclose(p.rate, rate, rel_tol=_REL_TOL) for p in parts):
            speeds = ", ".join(_speed_text(p.rate) for p in parts)
            why = " (copper reach depends on the lane rate, so copper is not rescaled)"
            unavailable[k] = f"no {k} part at {_speed_text(rate)}; {k} speeds: {speeds}" + (
                why if scale else ""
            )
            continue
        rows.append(_estimate(n_transceivers, optic_choice(k, rate, catalog=cat), dsp))
    return InterconnectComparison(n_transceivers, rate, tuple(rows), unavailable)


# --------------------------------------------------------------------------------------------
# reach: which medium a run of a given length needs

#: Passive-copper (DAC) reach by lane rate (bytes/s → m). phy.md §4 rule of thumb: ≈ 5–7 m at
#: 10–25G NRZ (802.3bj CR4 ≥ 5 m), 3 m at 50G PAM4 (802.3cd CR ≥ 3 m), 2 m at 100G PAM4
#: (802.3ck CR objective; NVIDIA NDR DAC 0.5–2 m), ~1 m at 200G PAM4 (802.3dj CR channels built
#: around 1 m assemblies, DesignCon 2024). A catalog DAC at the lane rate takes precedence.
COPPER_REACH_BY_LANE: Final[Mapping[float, float]] = {
    25e9 / 8: 5.0,
    50e9 / 8: 3.0,
    100e9 / 8: 2.0,
    200e9 / 8: 1.0,
}
_COPPER_REACH_SOURCE: Final = (
    "phy.md §4 rule of thumb: passive DAC ≈ 5 m @25G NRZ, 3 m @50G, 2 m @100G, ~1 m @200G PAM4"
)

#: Electrical lanes in the catalog's copper cables: 800G OSFP twin-port 2×400G = 8 × 100G
#: (hardware.md §6.1 MCP4Y10 2×400G; phy.md §3 NDR = 4 × 100G per 400G port).
CATALOG_COPPER_LANES: Final = 8

#: Optical reach classes (name, family, reach m, source), shortest first.
OPTICAL_CLASSES: Final[tuple[tuple[str, str, float, str], ...]] = (
    ("sr", "multimode", 50.0, "phy.md §4 / topology.md §7: SR4/SR8 MMF 50 m (NVIDIA)"),
    (
        "dr",
        "single-mode",
        500.0,
        "phy.md §4 / topology.md §7: DR4/DR8 SMF 500 m (IEEE DR; NVIDIA NDR parts 100 m)",
    ),
    ("fr", "single-mode", 2000.0, "phy.md §4 / topology.md §7: FR4 SMF 2 km"),
)
MediumName = Literal["dac", "acc", "aec", "sr", "dr", "fr"]
MEDIUM_NAMES: Final[tuple[str, ...]] = get_args(MediumName)


@dataclass(frozen=True)
class Medium:
    """A cable class for a run: copper (dac/acc/aec) or an optical reach class (sr/dr/fr)."""

    name: str
    family: str  # copper, multimode, single-mode
    reach_m: float
    lane_rate: float
    source: str
    part: str | None = None  # catalog part the reach comes from, if any

    @property
    def copper(self) -> bool:
        return self.family == "copper"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "reach_m": self.reach_m,
            "lane_rate_gbps": _gbps(self.lane_rate),
            "part": self.part,
            "source": self.source,
        }


def _lane_rule(lane: float) -> float:
    for rate, reach in COPPER_REACH_BY_LANE.items():
        if math.isclose(rate, lane, rel_tol=_REL_TOL):
            return reach
    allowed = ", ".join(_speed_text(r) for r in COPPER_REACH_BY_LANE)
    raise OpticsError(
        f"lane_rate: {_speed_text(lane)} is not a known lane rate; allowed: {allowed}"
    )


def media_options(lane_rate: str | float, *, catalog: Catalog | None = None) -> list[Medium]:
    """Every cable class at ``lane_rate`` with its reach, shortest reach first.

    Active copper (ACC, AEC) is offered only where the catalog has a cable at that lane rate.
    """
    lane = parse_speed(lane_rate)
    reach_rule = _lane_rule(lane)
    by_kind = _parts_by_kind(catalog or load_catalog())
    options: list[Medium] = []
    for kind in ("dac", "acc", "aec"):
        part = next(
            (
                p
                for p in by_kind[kind]
                if math.isclose(p.rate / CATALOG_COPPER_LANES, lane, rel_tol=_REL_TOL)
            ),
            None,
        )
        if part is not None:
            options.append(
                Medium(kind, "copper", part.reach, lane, part.source_for("reach"), part.name)
            )
        elif kind == "dac":
            options.append(Medium("dac", "copper", reach_rule, lane, _COPPER_REACH_SOURCE))
    options += [Medium(n, fam, r, lane, src) for n, fam, r, src in OPTICAL_CLASSES]
    return sorted(options, key=lambda m: m.reach_m)


def medium_for_length(
    length_m: str | float,
    lane_rate: str | float,
    *,
    allowed: Collection[str] | None = None,
    catalog: Catalog | None = None,
) -> Medium:
    """The cheapest-reach cable class that covers ``length_m`` at ``lane_rate`` per lane.

    Order: passive DAC within the copper reach of the lane rate, then active copper (ACC, AEC),
    multimode SR ≤ 50 m, single-mode DR ≤ 500 m, FR ≤ 2 km (reaches inclusive). ``allowed``
    restricts the classes (e.g. ``{"dac"}`` for a copper-only run); a run longer than every
    allowed class raises :class:`OpticsError` naming the length, the lane rate and the reaches.

    >>> medium_for_length(2.0, "100 Gb/s").name, medium_for_length(1.5, "200 Gb/s").name
    ('dac', 'sr')
    >>> medium_for_length(400, "100 Gb/s").name
    'dr'
    """
    length = parse_length(length_m)
    if not length > 0 or not math.isfinite(length):
        raise OpticsError(f"length_m: must be a positive length, got {length_m!r}")
    if allowed is not None:
        for name in allowed:
            if name not in MEDIUM_NAMES:
                raise OpticsError(
                    f"allowed: unknown medium {name!r}; allowed: {', '.join(MEDIUM_NAMES)}"
                )
    options = media_options(lane_rate, catalog=catalog)
    lane = options[0].lane_rate
    usable = [m for m in options if allowed is None or m.name in allowed]
    for m in usable:
        if length <= m.reach_m * (1 + _REL_TOL):
            return m
    copper = bool(usable) and all(m.copper for m in usable)
    what = "copper link" if copper else "link"
    listed = ", ".join(f"{m.name} ≤ {format_length(m.reach_m)}" for m in usable) or "none"
    every = ", ".join(f"{m.name} ≤ {format_length(m.reach_m)}" for m in options)
    raise OpticsError(
        f"length_m: {what} longer than its reach: {format_length(length)} at "
        f"{_speed_text(lane)} per lane exceeds {listed}; options at this lane rate: {every}"
    )


# --------------------------------------------------------------------------------------------
# a cluster's links, transceivers and interconnect power


#: Electrical lanes per NIC or switch port: InfiniBand ports are 4X (HDR 4 × 50G, NDR 4 × 100G,
#: XDR 4 × 200G; phy.md §3). 800G Ethernet ports on 100G SerDes (TH5, SN5600) are 8 lanes —
#: pass ``lanes_per_port=8`` for them (hardware.md §5).
DEFAULT_LANES_PER_PORT: Final = 4

#: Longest fibre run by cluster size (GPUs → m): ~200 m @8K, ~500 m @16K, ~1 km @32K, ~2 km @65K
#: GPUs (pingdo.net via topology.md §7); below 8K the "fibre 100 m +" rule (losslessnetwork.com
#: via topology.md §7).
LONGEST_FIBRE_BY_GPUS: Final[tuple[tuple[int, float], ...]] = (
    (0, 100.0),
    (8192, 200.0),
    (16384, 500.0),
    (32768, 1000.0),
    (65536, 2000.0),
)

_HOST_LEAF_IN_RACK: Final = (
    2.0,
    "in-rack top-of-rack run (ours); topology.md §7: node → leaf DAC ≤ 2 m @100G/lane, "
    "rule of thumb DAC < 3 m; Meta AI Zone RTSW copper to hosts",
)
_HOST_LEAF_RAIL: Final = (
    20.0,
    "estimate (ours): a rail leaf serves one NIC of every node of a scalable unit, spread over "
    "several racks (127 DGX H100 in 38 racks, topology.md §2.1), so runs cross racks: 'a few to "
    "tens of m' (topology.md §7); the SuperPOD RA cables them with optics (4 twin-port OSFP per "
    "DGX, topology.md §2.1)",
)
_INTERMEDIATE: Final = (
    100.0,
    "topology.md §7 rule of thumb: fibre 100 m + between switch tiers (losslessnetwork.com)",
)


def _longest_fibre(n_gpus: int) -> float:
    length = LONGEST_FIBRE_BY_GPUS[0][1]
    for gpus, metres in LONGEST_FIBRE_BY_GPUS:
        if n_gpus >= gpus:
            length = metres
    return length


def default_tier_lengths(cluster: Cluster) -> dict[str, tuple[float, str]]:
    """Default run length per tier of ``cluster`` (m) with its source.

    host–leaf: 2 m in-rack for a fat tree (a node's NICs on its top-of-rack leaf); 20 m for
    rail designs, whose leaves collect one rail across racks. The top tier gets the longest fibre
    for the cluster size (sized for its longest run, which sets the reach class bought); a tier
    in between gets 100 m.
    """
    names = TIER_NAMES[: cluster.tiers]
    fat_tree = cluster.topology.kind == "fat-tree"
    lengths: dict[str, tuple[float, str]] = {
        "host-leaf": _HOST_LEAF_IN_RACK if fat_tree else _HOST_LEAF_RAIL
    }
    for name in names[1:]:
        lengths[name] = _INTERMEDIATE
    if len(names) > 1:
        top = _longest_fibre(cluster.n_gpus)
        lengths[names[-1]] = (
            top,
            f"topology.md §7: longest fibre for {cluster.n_gpus:,} GPUs ≈ {format_length(top)} "
            "(~200 m @8K, ~500 m @16K, ~1 km @32K, ~2 km @65K GPUs, pingdo.net; "
            "≥ 100 m rule of thumb below 8K)",
        )
    return lengths


@dataclass(frozen=True)
class TierLinks:
    """The links of one fabric tier: count, rate, run length and the medium that covers it."""

    name: str
    links: int
    rate: float
    lane_rate: float
    length_m: float
    length_source: str
    medium: Medium
    count_rule: str

    @property
    def optical(self) -> bool:
        return not self.medium.copper

    @property
    def transceivers(self) -> int:
        """Optical modules on this tier: 2 per optical link, 0 on copper."""
        return 2 * self.links if self.optical else 0

    @property
    def cable_ends(self) -> int:
        return 2 * self.links

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.name,
            "links": self.links,
            "rate_gbps": _gbps(self.rate),
            "lane_rate_gbps": _gbps(self.lane_rate),
            "length_m": self.length_m,
            "length_source": self.length_source,
            "medium": self.medium.to_dict(),
            "transceivers": self.transceivers,
            "count_rule": self.count_rule,
        }


@dataclass(frozen=True)
class TechnologyTotal:
    """A cluster's interconnect power and cost with its optical tiers built from one technology."""

    kind: str
    parts: tuple[str, ...]
    transceivers: int
    optical_power_w: float
    copper_power_w: float
    cost_usd: float | None
    saving_vs_dsp: float | None
    scaled: bool
    warnings: tuple[str, ...] = ()

    @property
    def total_power_w(self) -> float:
        return self.optical_power_w + self.copper_power_w

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "parts": list(self.parts),
            "transceivers": self.transceivers,
            "optical_power_w": self.optical_power_w,
            "copper_power_w": self.copper_power_w,
            "total_power_w": self.total_power_w,
            "cost_usd": self.cost_usd,
            "cost_is_estimate": True,
            "saving_vs_dsp": self.saving_vs_dsp,
            "scaled": self.scaled,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ClusterOptics:
    """Links per tier and interconnect power per technology for one cluster (an estimate)."""

    cluster: str
    nodes: int
    gpus: int
    topology: str
    oversubscription: float
    tiers: tuple[TierLinks, ...]
    technologies: tuple[TechnologyTotal, ...]
    assumptions: tuple[str, ...] = field(default=())

    @property
    def links(self) -> int:
        return sum(t.links for t in self.tiers)

    @property
    def transceivers(self) -> int:
        return sum(t.transceivers for t in self.tiers)

    @property
    def transceivers_per_gpu(self) -> float:
        return self.transceivers / self.gpus

    def tier(self, name: str) -> TierLinks:
        for t in self.tiers:
            if t.name == name:
                return t
        raise OpticsError(
            f"tier: {self.cluster} has no tier {name!r}; tiers: "
            f"{', '.join(t.name for t in self.tiers)}"
        )

    def technology(self, kind: str) -> TechnologyTotal:
        for t in self.technologies:
            if t.kind == kind:
                return t
        raise OpticsError(
            f"kind: no {kind!r} total; technologies: {', '.join(t.kind for t in self.technologies)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "topology": self.topology,
            "oversubscription": self.oversubscription,
            "links": self.links,
            "transceivers": self.transceivers,
            "transceivers_per_gpu": self.transceivers_per_gpu,
            "tiers": [t.to_dict() for t in self.tiers],
            "technologies": [t.to_dict() for t in self.technologies],
            "assumptions": list(self.assumptions),
        }


def _tier_counts(cluster: Cluster) -> list[tuple[str, int, float, str]]:
    """(tier, links, link rate, rule) from the hosts up, by fat-tree counting (topology.md §1)."""
    host = cluster.n_nodes * cluster.nics_per_node
    rows = [
        (
            "host-leaf",
            host,
            cluster.nic.rate,
            f"nodes × NICs per node = {cluster.n_nodes} × {cluster.nics_per_node}",
        )
    ]
    if cluster.tiers < 2:
        return rows
    o = cluster.topology.oversubscription
    port = cluster.switch.port_rate
    # non-blocking: one uplink per downlink of equal rate; a taper o:1 above the leaf divides it
    up = math.ceil(host * cluster.nic.rate / (port * o) - _REL_TOL)
    rule = f"host links × NIC rate / (switch port rate × oversubscription {o:g})"
    rows.append(("leaf-spine", up, port, rule))
    if cluster.tiers >= 3:
        rows.append(("spine-core", up, port, "= leaf–spine links (non-blocking above the leaf)"))
    return rows


def cluster_optics(
    cluster: Cluster,
    *,
    lengths: Mapping[str, str | float] | None = None,
    lanes_per_port: int = DEFAULT_LANES_PER_PORT,
    allow_copper: bool = True,
    technologies: Sequence[str] = TECHNOLOGY_KINDS,
    catalog: Catalog | None = None,
) -> ClusterOptics:
    """Links, transceivers and interconnect power per tier of a built cluster.

    Counting (folded Clos, topology.md §1): host links = nodes × NICs per node; each tier above
    the leaf carries one uplink per downlink of equal bandwidth (non-blocking), divided by the
    oversubscription at the leaf (``cluster.topology.oversubscription``; tiers above stay 1:1).
    Uplinks run at the switch port rate. Each tier gets a run length (``lengths`` overrides
    :func:`default_tier_lengths`) and the medium :func:`medium_for_length` picks at its lane
    rate (link rate / ``lanes_per_port``); copper tiers use catalog cables, optical tiers each
    technology in ``technologies`` (2 modules per optical link, both ends the same technology).

    This is an estimate until the topology builders land. Known gaps: whole switches are not
    rounded up (the DGX H100 RA cables every leaf uplink, 1,024 at 127 nodes where this counts
    1,016); CPO is assumed at both ends although NIC-side CPO is not shipping.
    """
    cat = catalog or load_catalog()
    whole("lanes_per_port", lanes_per_port, 1, error=OpticsError)
    for k in technologies:
        if k not in TECHNOLOGY_KINDS:
            raise OpticsError(
                f"technologies: {k!r} is not an optical technology; allowed: "
                f"{', '.join(TECHNOLOGY_KINDS)}"
            )
    # one node: no traffic leaves it, so no scale-out link is bought (as `commwall run` says)
    counts = _tier_counts(cluster) if cluster.n_nodes > 1 else []
    names = [c[0] for c in counts]
    chosen = default_tier_lengths(cluster)
    for name, value in (lengths or {}).items():
        if name not in names:
            raise OpticsError(
                f"lengths: {cluster.name} has no tier {name!r}; its tiers: {', '.join(names)}"
                if names
                else f"lengths: {cluster.name} on one node has no scale-out tiers to set"
            )
        metres = parse_length(value)
        if not metres > 0:
            raise OpticsError(f"lengths.{name}: must be a positive length, got {value!r}")
        chosen[name] = (metres, "given")
    optical_only = [m for m in MEDIUM_NAMES if m not in COPPER_KINDS]
    tiers: list[TierLinks] = []
    for name, links, rate, rule in counts:
        length, source = chosen[name]
        lane = rate / lanes_per_port
        try:
            medium = medium_for_length(
                length, lane, allowed=None if allow_copper else optical_only, catalog=cat
            )
        except OpticsError as e:
            raise OpticsError(f"{name} tier: {e}") from None
        tiers.append(TierLinks(name, links, rate, lane, length, source, medium, rule))

    by_kind = _parts_by_kind(cat)
    kinds = [k for k in technologies if by_kind[k]]
    totals = [_technology_total(k, tiers, cat) for k in kinds]
    dsp = next((t for t in totals if t.kind == "dsp"), None)
    if dsp is not None and dsp.total_power_w > 0:
        totals = [_with_saving(t, 1.0 - t.total_power_w / dsp.total_power_w) for t in totals]
    assumptions = (
        "links: folded-Clos counting (topology.md §1), oversubscription applied once above the leaf",
        f"lanes per port: {lanes_per_port} (default {DEFAULT_LANES_PER_PORT}: IB 4X ports, phy.md §3)",
        "2 transceivers per optical link, same technology at both ends; copper tiers use "
        "catalog cables (power per end)",
        "parts without a catalog entry at a tier's rate are scaled per bit from the nearest rate",
        "costs are order-of-magnitude estimates (hardware.md §9)",
        *(f"{t.name} length {format_length(t.length_m)}: {t.length_source}" for t in tiers),
        *(("one node: no traffic leaves it, so there are no scale-out links to count",)
          if not tiers else ()),
    )  # fmt: skip
    return ClusterOptics(
        cluster=cluster.name,
        nodes=cluster.n_nodes,
        gpus=cluster.n_gpus,
        topology=cluster.topology.kind,
        oversubscription=cluster.topology.oversubscription,
        tiers=tuple(tiers),
        technologies=tuple(totals),
        assumptions=assumptions,
    )


def _with_saving(t: TechnologyTotal, saving: float) -> TechnologyTotal:
    return TechnologyTotal(
        t.kind,
        t.parts,
        t.transceivers,
        t.optical_power_w,
        t.copper_power_w,
        t.cost_usd,
        saving,
        t.scaled,
        t.warnings,
    )


def _technology_total(kind: str, tiers: Sequence[TierLinks], cat: Catalog) -> TechnologyTotal:
    optical = copper = 0.0
    cost: float | None = 0.0
    parts: list[str] = []
    warnings: list[str] = []
    scaled = False
    for t in tiers:
        use = kind if t.optical else t.medium.name
        choice = optic_choice(use, t.rate, scale=True, catalog=cat)
        power = t.cable_ends * choice.power_w
        if t.optical:
            optical += power
            if t.length_m > choice.reach_m * (1 + _REL_TOL):
                warnings.append(
                    f"{t.name}: {choice.part} reaches {format_length(choice.reach_m)} but the "
                    f"tier's runs are {format_length(t.length_m)}; a longer-reach module "
                    "(DR 500 m / FR 2 km class) is needed and may draw more"
                )
        else:
            copper += power
        scaled = scaled or choice.scaled_from is not None
        if choice.part not in parts:
            parts.append(choice.part)
        cost = (
            None
            if cost is None or choice.cost_usd is None
            else cost + t.cable_ends * choice.cost_usd
        )
    return TechnologyTotal(
        kind=kind,
        parts=tuple(parts),
        transceivers=sum(t.transceivers for t in tiers),
        optical_power_w=optical,
        copper_power_w=copper,
        cost_usd=cost,
        saving_vs_dsp=None,
        scaled=scaled,
        warnings=tuple(warnings),
    )
