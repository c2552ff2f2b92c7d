"""Bit errors end to end: against phy.link, closed forms and the Poisson identities."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # no stubs in the venv

from commwall.cluster import build_cluster
from commwall.faults import FaultError
from commwall.faults.bit_errors import (
    GRID_STEP_DECADES,
    LinkGroup,
    _grid,
    bit_error_model,
    cluster_bit_errors,
    cluster_link_groups,
    group_reliability,
    p_at_least_one,
)
from commwall.phy.fec import CODES, max_pre_fec_ber
from commwall.phy.link import ethernet_link, infiniband_llr_link, nvlink_link
from commwall.scenario import ClusterSpec

KP4 = CODES["kp4"]
ROCE = LinkGroup("test", "scale-out", 1, "roce", KP4, 400e9, 3.0, "dac")
DAY = 86_400.0


def test_single_link_equals_phy_link_exactly() -> None:
    ber, util = 2e-4, 0.5
    exact = ethernet_link(
        KP4, ber, payload_rate_bps=400e9, recovery="go_back_n", check_bits=(32, 32)
    )
    assert group_reliability(ROCE, ber) == exact
    res = bit_error_model([ROCE], pre_fec_ber=ber, rng=np.random.default_rng(0), ber_spread=0.0,
                          utilisation=util, samples=2)  # fmt: skip
    lam = exact.undetected_corruption_rate * util
    assert res.corruption_rate.mean == pytest.approx(lam, rel=1e-12)
    assert res.time_between.mean == pytest.approx(1 / lam, rel=1e-12)
    assert res.goodput_loss["scale-out"].mean == pytest.approx(
        1 - exact.retransmission_efficiency, rel=1e-9
    )
    assert res.added_latency["scale-out"].mean == pytest.approx(exact.added_latency, rel=1e-9)
    assert res.per_step.mean == pytest.approx(lam * 10.0, rel=1e-12)
    assert res.per_run.mean == pytest.approx(lam * 54 * DAY, rel=1e-12)


def test_ib_and_nvlink_use_their_recovery() -> None:
    short = LinkGroup("a", "scale-out", 1, "ib", KP4, 400e9, 20.0, "sr")
    long = replace(short, length_m=50.0)
    nv = LinkGroup("n", "nvlink", 1, "nvlink", KP4, 200e9, 0.5, "board")
    assert "LLR" in group_reliability(short, 1e-4).recovery
    assert group_reliability(short, 1e-4) == infiniband_llr_link(
        KP4, 1e-4, payload_rate_bps=400e9, cable_length=20.0, link_rtt=200e-9 + 2 * 5e-9 * 20
    )
    assert group_reliability(long, 1e-4).recovery.startswith("no LLR")
    assert group_reliability(nv, 1e-4) == nvlink_link(KP4, 1e-4, payload_rate_bps=200e9)


def test_sigma_zero_is_deterministic_and_seed_free() -> None:
    a = bit_error_model([ROCE], pre_fec_ber=1e-4, rng=np.random.default_rng(1), ber_spread=0.0,
                        samples=5)  # fmt: skip
    b = bit_error_model([ROCE], pre_fec_ber=1e-4, rng=np.random.default_rng(2), ber_spread=0.0,
                        samples=5)  # fmt: skip
    assert a.corruption_rate.std == 0.0
    assert a.to_dict() == b.to_dict()


def test_rate_scales_linearly_with_link_count() -> None:
    one = bit_error_model([ROCE], pre_fec_ber=2e-4, rng=np.random.default_rng(0), ber_spread=0.0,
                          samples=2)  # fmt: skip
    many = bit_error_model([replace(ROCE, count=1000)], pre_fec_ber=2e-4,
                           rng=np.random.default_rng(0), ber_spread=0.0, samples=2)  # fmt: skip
    assert many.corruption_rate.mean == pytest.approx(1000 * one.corruption_rate.mean, rel=1e-12)


def test_p_at_least_one_is_poisson() -> None:
    res = bit_error_model([replace(ROCE, count=10)], pre_fec_ber=3e-4,
                          rng=np.random.default_rng(0), ber_spread=0.0, run_days=2.0, samples=2)  # fmt: skip
    lam = res.corruption_rate.mean
    assert res.p_any_in_run.mean == pytest.approx(1 - math.exp(-lam * 2 * DAY), rel=1e-12)
    assert p_at_least_one(1e-3, 1e3) == pytest.approx(1 - math.exp(-1.0))


def test_interpolated_grid_matches_phy_link() -> None:
    g = _grid(ROCE, math.log10(1e-5), 0.5)
    xs = np.array([-5.0 + 0.0123, -4.3337, -3.2071, -6.0021])
    ln_rate, ln_q, _loss, _lat = g.at(xs)
    for x, lr, lq in zip(xs, ln_rate, ln_q, strict=True):
        exact = group_reliability(ROCE, 10.0**x)
        assert lr == pytest.approx(math.log(exact.undetected_corruption_rate), rel=1e-4)
        assert lq == pytest.approx(math.log(exact.unit_error_prob), rel=1e-4)
    assert g.step == GRID_STEP_DECADES


def test_flagged_links_follow_the_lognormal_tail() -> None:
    n, sigma, ber = 20_000, 0.5, 1e-5
    res = bit_error_model([replace(ROCE, count=n)], pre_fec_ber=ber, rng=np.random.default_rng(3),
                          ber_spread=sigma, samples=40)  # fmt: skip
    flag = max_pre_fec_ber(KP4, 1e-12)
    assert res.flag_pre_fec_ber["kp4"] == flag
    expected = n * stats.norm.sf((math.log10(flag) - math.log10(ber)) / sigma)
    lo, hi = res.flagged["all"].mean_ci
    assert lo <= expected <= hi or abs(res.flagged["all"].mean - expected) < 0.05 * expected
    # draining the flagged links removes most of the silent-corruption rate
    assert res.corruption_rate_flagged_drained.mean < 1e-3 * res.corruption_rate.mean


def test_dgx_h100_cluster_groups_and_determinism() -> None:
    cluster = build_cluster(ClusterSpec(preset="dgx-h100", nodes=16))
    groups = cluster_link_groups(cluster)
    assert [g.kind for g in groups][-1] == "nvlink"
    assert groups[-1].count == 2 * 128 * 18
    assert all(g.recovery == "ib" and g.fec.key == "kp4" for g in groups if g.kind == "scale-out")
    scale_out = sum(g.count for g in groups if g.kind == "scale-out")
    assert scale_out == 2 * cluster.scale_out_topology().n_links // 2
    a = cluster_bit_errors(cluster, pre_fec_ber=1e-5, seed=7, samples=20).to_dict()
    b = cluster_bit_errors(cluster, pre_fec_ber=1e-5, seed=7, samples=20).to_dict()
    assert a == b
    roce = build_cluster(ClusterSpec(preset="dgx-h100-roce", nodes=16))
    assert {g.recovery for g in cluster_link_groups(roce, include_nvlink=False)} == {"roce"}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"pre_fec_ber": 0.6}, "pre_fec_ber"),
        ({"pre_fec_ber": 0.0}, "pre_fec_ber"),
        ({"ber_spread": -1.0}, "ber_spread"),
        ({"utilisation": 1.5}, "utilisation"),
        ({"run_days": 0.0}, "run_days"),
        ({"samples": 0}, "samples"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, float], fragment: str) -> None:
    args = {"pre_fec_ber": 1e-5, **kwargs}
    with pytest.raises(FaultError, match=fragment):
        bit_error_model([ROCE], rng=np.random.default_rng(0), **args)  # type: ignore[arg-type]


def test_unknown_fec_is_refused() -> None:
    cluster = build_cluster(ClusterSpec(preset="dgx-h100", nodes=16))
    with pytest.raises(FaultError, match=r"fec: 'kp9'.*kp4"):
        cluster_link_groups(cluster, fec="kp9")
