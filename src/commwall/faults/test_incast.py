"""Incast fluid model: closed forms and the invariants every fabric must keep."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from commwall.faults import FaultError
from commwall.faults.incast import (
    FABRICS,
    Fabric,
    IncastConfig,
    buffer_share,
    ideal_completion,
    incast,
    incast_once,
    pfc_headroom,
)

R = 50e9  # 400 Gb/s in bytes/s
BASE = IncastConfig(senders=64, size=2e6, sender_rate=R, egress_rate=R, buffer=128e6,
                    fabric="lossy", alpha=1 / 8)  # fmt: skip


def once(cfg: IncastConfig) -> object:
    return incast_once(cfg, np.zeros(cfg.senders))


def test_buffer_share_dynamic_threshold() -> None:
    assert buffer_share(128e6, 1.0) == 64e6
    assert buffer_share(90e6, 1 / 8) == pytest.approx(10e6)
    assert BASE.share == pytest.approx(128e6 / 9)


@pytest.mark.parametrize("fabric", FABRICS)
def test_nothing_drops_when_the_burst_fits(fabric: Fabric) -> None:
    cfg = replace(BASE, fabric=fabric, senders=8, size=1e6, jitter=2e-6)  # 8 MB < 14.2 MB share
    res = incast(cfg, samples=20, rng=np.random.default_rng(0))
    assert res.dropped.maximum == 0.0 and res.p_any_drop == 0.0
    assert res.completion.minimum >= cfg.senders * cfg.size / cfg.egress_rate * (1 - 1e-12)
    assert res.completion.maximum < 1e-3  # never waits for an RTO


@pytest.mark.parametrize("fabric", ["roce", "ib"])
def test_lossless_never_drops_and_completes_ideally(fabric: Fabric) -> None:
    cfg = replace(BASE, fabric=fabric, senders=256)
    run = incast_once(cfg, np.zeros(256))
    assert run.dropped == 0.0
    assert run.completion == pytest.approx(256 * 2e6 / R, rel=1e-12)  # egress never idles
    assert run.sent == pytest.approx(run.delivered) and run.delivered == pytest.approx(256 * 2e6)
    # line rate until the queue reaches Q at t1 = Q/(N·r − C), then C/N each until the last
    # byte leaves the sender at T = (N·S − N·r·t1)/C + t1: paused T − S/r
    t1 = cfg.queue_limit / (256 * R - R)
    last_sent = (256 * 2e6 - 256 * R * t1) / R + t1
    assert run.paused_time == pytest.approx(np.full(256, last_sent - 2e6 / R), rel=1e-9)
    assert run.ports_paused == 256
    jittered = incast(replace(cfg, jitter=5e-6), samples=10, rng=np.random.default_rng(1))
    assert jittered.dropped.maximum == 0.0


def test_lossy_closed_form_two_rounds() -> None:
    # N=4 x 1 MB at r = C, share 2 MB: the queue fills at 3C, drops N·S − C·S/r − Q = 1 MB,
    # drains 2 MB in 40 µs, then after the RTO 4 x 0.25 MB fits and takes 20 µs.
    cfg = IncastConfig(senders=4, size=1e6, sender_rate=R, egress_rate=R, buffer=4e6,
                       fabric="lossy", alpha=1.0, rto=1e-3)  # fmt: skip
    run = incast_once(cfg, np.zeros(4))
    assert run.dropped == pytest.approx(4e6 - 1e6 - 2e6, rel=1e-9)
    assert run.rounds == 2
    assert run.completion == pytest.approx(20e-6 + 40e-6 + 1e-3 + 20e-6, rel=1e-9)
    assert run.peak_queue == pytest.approx(2e6)
    assert run.sent == pytest.approx(run.delivered + run.dropped)


def test_lossy_completion_exceeds_rto_once_anything_drops() -> None:
    for rto in (200e-3, 50e-6):
        res = incast(replace(BASE, rto=rto, jitter=1e-6), samples=10, rng=np.random.default_rng(2))
        assert res.dropped.minimum > 0
        assert res.completion.minimum >= rto


def test_goodput_collapses_as_senders_grow() -> None:
    g = [
        incast(
            replace(BASE, senders=n, jitter=1e-6), samples=5, rng=np.random.default_rng(0)
        ).goodput.mean
        for n in (4, 16, 64)
    ]
    assert g[0] > 0.99 and g[1] < 0.02 and g[2] < g[1]


def test_uec_trims_but_recovers_in_rtts_not_rtos() -> None:
    uec = once(replace(BASE, fabric="uec"))
    assert uec.dropped > 0  # type: ignore[attr-defined]
    ideal = 64 * 2e6 / R
    assert ideal <= uec.completion < 1.05 * ideal  # type: ignore[attr-defined]
    assert uec.sent == pytest.approx(uec.delivered + uec.dropped)  # type: ignore[attr-defined]


@pytest.mark.parametrize("fabric", FABRICS)
def test_single_sender_is_ideal(fabric: Fabric) -> None:
    cfg = replace(BASE, fabric=fabric, senders=1)
    assert once(cfg).completion == pytest.approx(2e6 / R, rel=1e-12)  # type: ignore[attr-defined]
    slow_port = replace(cfg, egress_rate=R / 2, buffer=1e9)  # queue grows at r − C, no loss
    run = incast_once(slow_port, np.zeros(1))
    assert run.completion == pytest.approx(ideal_completion(1, 2e6, R, R / 2), rel=1e-12)
    assert run.completion == pytest.approx(2e6 / (R / 2), rel=1e-12)


@pytest.mark.parametrize("fabric", FABRICS)
def test_completion_bounds_and_conservation_under_jitter(fabric: Fabric) -> None:
    cfg = replace(BASE, fabric=fabric, senders=32, jitter=3e-6, rto=1e-4)
    rng = np.random.default_rng(5)
    for _ in range(5):
        starts = rng.normal(0.0, 3e-6, 32)
        run = incast_once(cfg, starts)
        assert run.completion >= 32 * 2e6 / R * (1 - 1e-12)
        assert run.sent == pytest.approx(run.delivered + run.dropped, rel=1e-12)


def test_same_seed_same_output() -> None:
    cfg = replace(BASE, fabric="roce", jitter=1e-6)
    a = incast(cfg, samples=10, rng=np.random.default_rng(9)).to_dict()
    b = incast(cfg, samples=10, rng=np.random.default_rng(9)).to_dict()
    assert a == b


def test_pfc_headroom_cisco_rule() -> None:
    # 2 x 4096 B frames + 463,360 bit-times response at 400G + 2 x 50 ns x 50 GB/s
    assert pfc_headroom(R, 10.0) == pytest.approx(8192 + 463_360 / 8 + 2 * 50e-9 * R)


@pytest.mark.parametrize(
    ("field", "value"),
    [("senders", 0), ("size", -1.0), ("buffer", 0.0), ("jitter", -1e-6), ("fabric", "tcp")],
)
def test_bad_config_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(FaultError, match=field):
        replace(BASE, **{field: value})
