"""Bit errors end to end: every link's pre-FEC BER → goodput, latency and silent corruption.

For each directed link of a cluster (every scale-out cable direction, grouped by segment, medium
and length from :func:`commwall.topology.bom.bill_of_materials`; every GPU NVLink direction)
this module draws a pre-FEC BER, runs the link's recovery model from :mod:`commwall.phy.link`
(no FEC maths is redone here) and adds up:

* the goodput lost to retransmission and the added latency per packet (mean over links and the
  worst link: a synchronous collective runs at its slowest link, transport.md §7);
* the rate of corruptions that escape every check — decoder miscorrection (≤ 1/t!) × CRC
  escape (2^-bits per check), ``phy/link.py`` — summed over links: the cluster's rate λ of silent
  gradient corruptions, the expected time between them 1/λ, the expected count per training step
  and per run of T = D days, and P(at least one in the run) = 1 − exp(−λT) (Poisson arrivals);
* the links whose post-FEC BER misses a target (default 1e-12, the 802.3 post-FEC objective,
  phy.md §6): the pre-FEC BER where that happens is :func:`commwall.phy.fec.max_pre_fec_ber`.

Spread across links (assumption): log10 BER ~ Normal(log10 median, σ decades), σ = 0.5 by
default. Real links differ by orders of magnitude (connectors, fibre, SerDes margin); no
reference in ``shared/reference`` gives a distribution, so σ is a stated assumption. The draws
are a Monte Carlo over cluster builds (seeded :class:`numpy.random.Generator`), so every figure
is a :class:`~commwall.faults.stats.Summary` with 95% intervals.

Recovery per fabric (phy.md §8): ``ethernet`` drops the frame and TCP resends selectively;
``roce`` drops it and RC go-back-N resends (FCS + ICRC checks); ``ib`` replays the cell by LLR on
cables ≤ 30 m and falls back to end-to-end go-back-N beyond; NVLink replays the flit.

Speed trick: each link group's reliability is evaluated exactly (by ``phy.link``) on a grid of
log10 BER spaced :data:`GRID_STEP_DECADES` apart that contains the median, and per-link values
are interpolated linearly in log space, so 100k links x 200 draws cost numpy work, not 20M calls.
With σ = 0 every link sits on the median grid point and the result is exactly ``phy.link``'s.

Modelling choices (assumption): every link carries ``utilisation`` of its payload rate; goodput
and latency use the line-rate go-back-N window (bursts run at line rate); the corruption rate
scales linearly with utilisation (it is linear in the payload rate in ``phy.link``). A link that
loses at least half of its recovery units (:data:`DOWN_UNIT_ERROR`) is counted as down — taken
out by link training or the operator — and carries no traffic (the failure models own it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np
import numpy.typing as npt

from commwall.faults.errors import FaultError
from commwall.faults.stats import Summary, summarize
from commwall.phy.fec import CODES, FecCode, max_pre_fec_ber, parse_fec
from commwall.phy.link import (
    LinkReliability,
    ethernet_link,
    infiniband_llr_link,
    nvlink_link,
)
from commwall.phy.signaling import PhyError, parse_lane

if TYPE_CHECKING:
    from commwall.cluster import Cluster

__all__ = [
    "DEFAULT_BER_SPREAD",
    "DOWN_UNIT_ERROR",
    "GRID_STEP_DECADES",
    "BitErrorResult",
    "LinkGroup",
    "bit_error_model",
    "cluster_bit_errors",
    "cluster_link_groups",
    "group_reliability",
    "p_at_least_one",
]

Recovery = Literal["ethernet", "roce", "ib", "nvlink"]

#: Most per-link BER draws of one study (samples x link directions; ~80 ns each on one
#: core): 2.5e8 take about 20 s.
MAX_LINK_DRAWS: Final = 250_000_000

DEFAULT_BER_SPREAD: Final = 0.5
"""Decades: σ of log10 pre-FEC BER across links (assumption; no measured spread in the refs)."""

DOWN_UNIT_ERROR: Final = 0.5
"""A link losing at least this share of its recovery units is counted as down (assumption)."""

GRID_STEP_DECADES: Final = 0.005
"""Spacing of the exact ``phy.link`` evaluations that per-link values are interpolated from."""

_GRID_SIGMAS: Final = 8.0  # draws beyond ±8σ (P ≈ 1e-15 each) are clipped to the grid
_MAX_LOG10_BER: Final = math.log10(0.45)  # phy.fec accepts BER < 0.5
_RATE_FLOOR: Final = 1e-150  # per s; keeps 1/λ and its variance finite (> 1e142 years)
_PROPAGATION: Final = 5e-9  # s/m: "cable ~5 ns/m" (transport.md §2.1, IEEE 802.3 headroom table)
_LLR_BASE_RTT: Final = 200e-9  # s: phy.link's default LLR round trip at 3 m (assumption there)
_SECONDS_PER_DAY: Final = 86_400.0


@dataclass(frozen=True)
class LinkGroup:
    """Directed links that share a recovery model: same fabric, FEC, rate and length."""

    name: str
    kind: Literal["scale-out", "nvlink"]
    count: int
    """Directed links (a cable is two: each direction has its own receiver and BER)."""
    recovery: Recovery
    fec: FecCode
    payload_rate_bps: float
    """Line payload rate of one link direction, bits/s."""
    length_m: float
    medium: str

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "directed_links": self.count,
            "recovery": self.recovery,
            "fec": self.fec.key,
            "payload_rate_gbps": self.payload_rate_bps / 1e9,
            "length_m": self.length_m,
            "medium": self.medium,
        }


def _check(
    name: str, value: float, lo: float, hi: float = math.inf, *, lo_open: bool = True
) -> float:
    ok = isinstance(value, int | float) and math.isfinite(value)
    ok = ok and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bound = f"> {lo:g}" if lo_open else f">= {lo:g}"
        top = "" if hi == math.inf else f" and <= {hi:g}"
        raise FaultError(f"{name}: {value!r} is out of range; allowed: a number {bound}{top}")
    return float(value)


def _fec(value: FecCode | str | None, lane_rate_bps: float, field: str) -> FecCode:
    if isinstance(value, FecCode):
        return value
    if value is None:
        try:
            return parse_fec(parse_lane(f"{lane_rate_bps / 1e9:g}G").fec)
        except PhyError:
            return CODES["kp4"]  # lanes outside the catalogue: the PAM4 default (phy.md §5)
    try:
        return parse_fec(value)
    except PhyError:
        raise FaultError(
            f"{field}: {value!r} is not a known FEC code; allowed: {', '.join(CODES)}"
        ) from None


def cluster_link_groups(
    cluster: Cluster,
    *,
    fec: FecCode | str | None = None,
    nvlink_fec: FecCode | str | None = None,
    include_nvlink: bool = True,
) -> list[LinkGroup]:
    """Every directed link of ``cluster`` in groups, with the fabric's recovery and FEC.

    Scale-out cables come from the bill of materials of ``cluster.scale_out_topology()`` (segment,
    medium, run length; rail access runs default to 20 m there). NVLink: ``nvlink_links`` per GPU,
    each two directions at ``per_link_bandwidth`` (catalog ``nvlink.yaml``). FEC defaults to the
    lane's standard code (``phy.signaling.LANES``: KP4 on 50G–200G PAM4 lanes, NVLink4 included).
    """
    from commwall.topology.bom import bill_of_materials

    bom = bill_of_materials(
        cluster.scale_out_topology(), switch=cluster.switch.name, nic=cluster.nic.name
    )
    recovery: Recovery = "ib" if cluster.fabric == "ib" else (
        "roce" if cluster.fabric == "roce" else "ethernet"
    )  # fmt: skip
    groups = [
        LinkGroup(
            name=f"{line.segment} ({line.medium}, {line.length_m:g} m)",
            kind="scale-out",
            count=2 * line.count,
            recovery=recovery,
            fec=_fec(fec, line.lane_rate * 8, "fec"),
            payload_rate_bps=line.rate * 8,
            length_m=line.length_m,
            medium=line.medium,
        )
        for line in bom.cables
    ]
    nv = cluster.nvlink
    if include_nvlink and cluster.scale_up == "nvlink" and cluster.gpu.nvlink_links > 0:
        groups.append(
            LinkGroup(
                name=f"GPU NVLink ({nv.name})",
                kind="nvlink",
                count=2 * cluster.n_gpus * cluster.gpu.nvlink_links,
                recovery="nvlink",
                fec=_fec(nvlink_fec, nv.lane_rate * 8, "nvlink_fec"),
                payload_rate_bps=nv.per_link_bandwidth * 8,
                length_m=0.5,
                medium="board",
            )
        )
    return groups


def group_reliability(group: LinkGroup, pre_fec_ber: float) -> LinkReliability:
    """One link of ``group`` at ``pre_fec_ber``, at line rate, by :mod:`commwall.phy.link`.

    IB LLR round trip = 200 ns (phy.link's default, assumption) + 2 x 5 ns/m x length
    (transport.md §2.1); LLR is off above 30 m (phy.md §8, inside ``infiniband_llr_link``).
    RoCE checks FCS-32 and ICRC-32; Ethernet (TCP) only FCS-32 (the 16-bit TCP checksum is left
    out: weak and not in the references).
    """
    rate = group.payload_rate_bps
    if group.recovery == "ib":
        return infiniband_llr_link(
            group.fec,
            pre_fec_ber,
            payload_rate_bps=rate,
            cable_length=max(group.length_m, 1e-3),
            link_rtt=_LLR_BASE_RTT + 2 * _PROPAGATION * group.length_m,
        )
    if group.recovery == "nvlink":
        return nvlink_link(group.fec, pre_fec_ber, payload_rate_bps=rate)
    if group.recovery == "roce":
        return ethernet_link(
            group.fec, pre_fec_ber, payload_rate_bps=rate, recovery="go_back_n", check_bits=(32, 32)
        )
    return ethernet_link(group.fec, pre_fec_ber, payload_rate_bps=rate, recovery="selective")


def p_at_least_one(rate: float, duration: float) -> float:
    """P(at least one event) in ``duration`` seconds of a Poisson process of ``rate`` per second.

    >>> round(p_at_least_one(1 / 86400, 54 * 86400), 6)
    1.0
    >>> p_at_least_one(0.0, 10.0)
    0.0
    """
    return -math.expm1(-rate * duration)


@dataclass(frozen=True)
class _Grid:
    """Exact ``phy.link`` values of one group at log10 BER = x0 + i·step."""

    x0: float
    step: float
    ln_rate: npt.NDArray[np.float64]  # undetected corruptions/s at line rate (floored)
    ln_q: npt.NDArray[np.float64]  # P(recovery unit fails), floored
    loss: npt.NDArray[np.float64]  # 1 − retransmission efficiency
    ln_latency: npt.NDArray[np.float64]  # added seconds per packet (floored; inf → huge)

    def at(self, x: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
        if len(self.ln_rate) == 1:
            full = np.ones_like(x)
            return (
                full * self.ln_rate[0],
                full * self.ln_q[0],
                full * self.loss[0],
                full * self.ln_latency[0],
            )
        pos = np.clip((x - self.x0) / self.step, 0.0, len(self.ln_rate) - 1.0)
        i = np.minimum(pos.astype(np.int64), len(self.ln_rate) - 2)
        f = pos - i
        return tuple(a[i] * (1.0 - f) + a[i + 1] * f for a in (self.ln_rate, self.ln_q, self.loss,
                                                                   self.ln_latency))  # fmt: skip


def _ln(x: float) -> float:
    return math.log(max(x, 1e-300)) if math.isfinite(x) else math.log(1e300)


def _grid(group: LinkGroup, log10_median: float, sigma: float) -> _Grid:
    lo_k = math.ceil(_GRID_SIGMAS * sigma / GRID_STEP_DECADES)
    hi_k = min(lo_k, math.floor((_MAX_LOG10_BER - log10_median) / GRID_STEP_DECADES))
    lo_k = min(lo_k, math.floor((log10_median + 300.0) / GRID_STEP_DECADES))  # BER >= 1e-300
    ks = np.arange(-lo_k, hi_k + 1)
    xs = log10_median + ks * GRID_STEP_DECADES
    xs[lo_k] = log10_median  # the median itself, exactly
    rel = [group_reliability(group, 10.0 ** float(x)) for x in xs]
    return _Grid(
        x0=float(xs[0]),
        step=GRID_STEP_DECADES,
        ln_rate=np.array([_ln(r.undetected_corruption_rate) for r in rel]),
        ln_q=np.array([_ln(r.unit_error_prob) for r in rel]),
        loss=np.array([1.0 - r.retransmission_efficiency for r in rel]),
        ln_latency=np.array([_ln(r.added_latency) for r in rel]),
    )


@dataclass(frozen=True)
class BitErrorResult:
    """Cluster-wide bit-error figures, each a distribution over ``samples`` cluster builds."""

    groups: tuple[LinkGroup, ...]
    pre_fec_ber: float
    ber_spread: float
    utilisation: float
    step_time: float
    run_time: float
    target_post_fec_ber: float
    flag_pre_fec_ber: dict[str, float]
    """Per FEC key: the pre-FEC BER above which a link misses the post-FEC target."""
    median_link: dict[str, LinkReliability]
    """Per group name: one link at the median BER (exact ``phy.link`` result)."""
    corruption_rate: Summary
    """Silent corruptions per second, whole cluster, links in service."""
    time_between: Summary
    """Seconds between silent corruptions (1/λ)."""
    per_step: Summary
    per_run: Summary
    p_any_in_run: Summary
    corruption_rate_flagged_drained: Summary
    """λ once the flagged links are drained (taken out of service)."""
    flagged: dict[str, Summary]
    """Links missing the post-FEC target, per kind (scale-out, nvlink) and ``all``."""
    down: Summary
    goodput_loss: dict[str, Summary]
    """Mean retransmission loss (1 − efficiency) over in-service links, per kind."""
    worst_goodput_loss: dict[str, Summary]
    added_latency: dict[str, Summary]
    """Mean added seconds per packet per link hop, per kind."""
    worst_added_latency: dict[str, Summary]

    @property
    def n_links(self) -> int:
        return sum(g.count for g in self.groups)

    def to_dict(self) -> dict[str, object]:
        def by_kind(d: dict[str, Summary]) -> dict[str, object]:
            return {k: v.to_dict() for k, v in d.items()}

        return {
            "groups": [g.to_dict() for g in self.groups],
            "directed_links": self.n_links,
            "pre_fec_ber_median": self.pre_fec_ber,
            "ber_spread_decades": self.ber_spread,
            "utilisation": self.utilisation,
            "step_time_s": self.step_time,
            "run_time_s": self.run_time,
            "target_post_fec_ber": self.target_post_fec_ber,
            "flag_above_pre_fec_ber": self.flag_pre_fec_ber,
            "median_link": {k: v.to_dict() for k, v in self.median_link.items()},
            "silent_corruptions_per_s": self.corruption_rate.to_dict(),
            "time_between_silent_corruptions_s": self.time_between.to_dict(),
            "silent_corruptions_per_step": self.per_step.to_dict(),
            "silent_corruptions_per_run": self.per_run.to_dict(),
            "p_at_least_one_in_run": self.p_any_in_run.to_dict(),
            "silent_corruptions_per_s_flagged_drained": (
                self.corruption_rate_flagged_drained.to_dict()
            ),
            "links_flagged": by_kind(self.flagged),
            "links_down": self.down.to_dict(),
            "goodput_loss_mean": by_kind(self.goodput_loss),
            "goodput_loss_worst_link": by_kind(self.worst_goodput_loss),
            "added_latency_per_hop_mean_s": by_kind(self.added_latency),
            "added_latency_worst_link_s": by_kind(self.worst_added_latency),
            "assumptions": [
                f"log10 pre-FEC BER ~ Normal(log10 {self.pre_fec_ber:g}, {self.ber_spread:g} "
                "decades) per directed link, independent",
                f"a link losing >= {DOWN_UNIT_ERROR:g} of its units is down and carries nothing",
                f"every link carries {self.utilisation:g} of its payload rate",
                f"corruption rates below {_RATE_FLOOR:g}/s are floored there",
            ],
        }


def bit_error_model(
    groups: Sequence[LinkGroup],
    *,
    pre_fec_ber: float,
    rng: np.random.Generator,
    ber_spread: float = DEFAULT_BER_SPREAD,
    utilisation: float = 0.5,
    step_time: float = 10.0,
    run_days: float = 54.0,
    target_post_fec_ber: float = 1e-12,
    samples: int = 200,
) -> BitErrorResult:
    """Monte Carlo of per-link BER draws over ``groups`` → cluster-wide distributions.

    ``pre_fec_ber`` is the median across links, ``ber_spread`` σ of log10 BER in decades (0:
    every link at the median, a deterministic result), ``utilisation`` the payload share each link
    carries, ``step_time`` seconds per training step, ``run_days`` the run length. λ sums the
    in-service links' ``undetected_corruption_rate`` (phy.link) × utilisation; the run's count is
    Poisson(λT), so P(≥1) = 1 − exp(−λT). A link is flagged when its BER exceeds
    ``max_pre_fec_ber(fec, target_post_fec_ber)``.
    """
    if not groups:
        raise FaultError("groups: no links to model; give at least one link group")
    ber = _check("pre_fec_ber", pre_fec_ber, 0.0, 0.45)
    sigma = _check("ber_spread", ber_spread, 0.0, 5.0, lo_open=False)
    util = _check("utilisation", utilisation, 0.0, 1.0)
    step = _check("step_time", step_time, 0.0)
    run = _check("run_days", run_days, 0.0) * _SECONDS_PER_DAY
    target = _check("target_post_fec_ber", target_post_fec_ber, 0.0, 0.45)
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise FaultError(f"samples: {samples!r}; allowed: an integer >= 1")
    links = sum(g.count for g in groups)
    if sigma > 0 and samples * links > MAX_LINK_DRAWS:
        raise FaultError(
            f"samples: {samples:,} x {links:,} link directions = {samples * links:.3g} draws; "
            f"allowed: at most {MAX_LINK_DRAWS:.1e} (about 20 s), i.e. "
            f"{max(1, MAX_LINK_DRAWS // links):,} samples on this cluster"
        )
    log10_median = math.log10(ber)
    grids = [_grid(g, log10_median, sigma) for g in groups]
    flag_x = {
        g.fec.key: math.log10(max_pre_fec_ber(g.fec, target)) for g in groups
    }  # fmt: skip
    kinds = sorted({g.kind for g in groups})
    lam = np.empty(samples)
    lam_drained = np.empty(samples)
    down = np.empty(samples)
    flagged = {k: np.zeros(samples) for k in [*kinds, "all"]}
    loss = {k: np.zeros(samples) for k in kinds}
    worst_loss = {k: np.zeros(samples) for k in kinds}
    latency = {k: np.zeros(samples) for k in kinds}
    worst_latency = {k: np.zeros(samples) for k in kinds}
    ln_down = math.log(DOWN_UNIT_ERROR)
    for s in range(samples):
        total = drained = n_down = 0.0
        sums = {k: [0.0, 0.0, 0] for k in kinds}  # loss, latency, links in service
        for g, grid in zip(groups, grids, strict=True):
            if sigma > 0:
                x = log10_median + sigma * rng.standard_normal(g.count)
            else:  # σ = 0: no draws, every link on the median (exact phy.link values)
                x = np.full(g.count, log10_median)
            ln_rate, ln_q, lo, ln_lat = grid.at(x)
            up = ln_q < ln_down
            bad = x > flag_x[g.fec.key]
            rate = np.exp(ln_rate) * util
            total += float(rate[up].sum())
            drained += float(rate[up & ~bad].sum())
            n_down += float((~up).sum())
            nf = float(bad.sum())
            flagged[g.kind][s] += nf
            flagged["all"][s] += nf
            acc = sums[g.kind]
            acc[0] += float(lo[up].sum())
            lat = np.exp(ln_lat[up])
            acc[1] += float(lat.sum())
            acc[2] += int(up.sum())
            if up.any():
                worst_loss[g.kind][s] = max(worst_loss[g.kind][s], float(lo[up].max()))
                worst_latency[g.kind][s] = max(worst_latency[g.kind][s], float(lat.max()))
        lam[s] = max(total, _RATE_FLOOR)
        lam_drained[s] = max(drained, _RATE_FLOOR)
        down[s] = n_down
        for k, (lsum, tsum, n) in sums.items():
            loss[k][s] = lsum / n if n else 1.0
            latency[k][s] = tsum / n if n else 0.0
    return BitErrorResult(
        groups=tuple(groups),
        pre_fec_ber=ber,
        ber_spread=sigma,
        utilisation=util,
        step_time=step,
        run_time=run,
        target_post_fec_ber=target,
        flag_pre_fec_ber={k: 10.0**v for k, v in flag_x.items()},
        median_link={g.name: group_reliability(g, ber) for g in groups},
        corruption_rate=summarize(lam, name="corruption rate"),
        time_between=summarize(1.0 / lam, name="time between corruptions"),
        per_step=summarize(lam * step, name="corruptions per step"),
        per_run=summarize(lam * run, name="corruptions per run"),
        p_any_in_run=summarize(-np.expm1(-lam * run), name="P(at least one)"),
        corruption_rate_flagged_drained=summarize(lam_drained, name="drained rate"),
        flagged={k: summarize(v, name=f"flagged {k}") for k, v in flagged.items()},
        down=summarize(down, name="links down"),
        goodput_loss={k: summarize(v, name=f"goodput loss {k}") for k, v in loss.items()},
        worst_goodput_loss={k: summarize(v, name="worst loss") for k, v in worst_loss.items()},
        added_latency={k: summarize(v, name="added latency") for k, v in latency.items()},
        worst_added_latency={
            k: summarize(v, name="worst latency") for k, v in worst_latency.items()
        },
    )


def cluster_bit_errors(
    cluster: Cluster,
    *,
    pre_fec_ber: float,
    seed: int = 0,
    fec: FecCode | str | None = None,
    nvlink_fec: FecCode | str | None = None,
    include_nvlink: bool = True,
    ber_spread: float = DEFAULT_BER_SPREAD,
    utilisation: float = 0.5,
    step_time: float = 10.0,
    run_days: float = 54.0,
    target_post_fec_ber: float = 1e-12,
    samples: int = 200,
) -> BitErrorResult:
    """:func:`bit_error_model` over :func:`cluster_link_groups`, drawing from
    ``numpy.random.default_rng(seed)``."""
    groups = cluster_link_groups(
        cluster, fec=fec, nvlink_fec=nvlink_fec, include_nvlink=include_nvlink
    )
    return bit_error_model(
        groups,
        pre_fec_ber=pre_fec_ber,
        rng=np.random.default_rng(seed),
        ber_spread=ber_spread,
        utilisation=utilisation,
        step_time=step_time,
        run_days=run_days,
        target_post_fec_ber=target_post_fec_ber,
        samples=samples,
    )
