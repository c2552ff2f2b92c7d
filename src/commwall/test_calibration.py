"""Calibration: the scenario section acts on the model, and the fit recovers known corrections."""

from __future__ import annotations

from dataclasses import replace

import pytest

from commwall.calibration import (
    CalibrationError,
    Measured,
    classes_seen,
    fit_calibration,
    predict,
)
from commwall.cluster import build_cluster
from commwall.collectives import choose
from commwall.collectives.constants import BASE_LAT, HW_LAT, Hw, Proto
from commwall.collectives.ops import Op
from commwall.scenario import CalibrationSpec, ClusterSpec, LinkCalibration, ScenarioError
from commwall.scenario import parse_scenario as parse

SIZES = [2.0**k for k in range(10, 31)]  # 1 KiB .. 1 GiB


def h100(nodes: int, **extra: object) -> object:
    return build_cluster(
        ClusterSpec.model_validate({"preset": "dgx-h100", "nodes": nodes, **extra})
    )


def test_bandwidth_factor_scales_each_class() -> None:
    base = h100(2)
    cal = CalibrationSpec(
        nvlink=LinkCalibration(bandwidth_factor=0.5), network=LinkCalibration(bandwidth_factor=2)
    )
    tuned = replace(base, calibration=cal)
    assert tuned.intra_bw == pytest.approx(0.5 * base.intra_bw)
    assert tuned.net_bw_per_gpu == pytest.approx(2 * base.net_bw_per_gpu)
    pcie = replace(tuned, scale_up="pcie")  # the nvlink correction does not touch PCIe steps
    assert pcie.intra_bw == pytest.approx(base.pcie.nccl_bandwidth(16))


def test_latency_is_added_per_step_and_never_below_zero() -> None:
    base = h100(1)
    ring = Op.ALL_REDUCE
    plain = choose(ring, 1024.0, base.world(), algo="ring", proto=Proto.SIMPLE).best
    plus = replace(base, calibration=CalibrationSpec(nvlink=LinkCalibration(latency=1e-6)))
    shifted = choose(ring, 1024.0, plus.world(), algo="ring", proto=Proto.SIMPLE).best
    # ring all-reduce on 8 ranks: 2(p-1) = 14 NVLink steps, each 1 us later
    assert shifted.latency - plain.latency == pytest.approx(14e-6)
    minus = replace(base, calibration=CalibrationSpec(nvlink=LinkCalibration(latency=-1e-3)))
    floor = choose(ring, 1024.0, minus.world(), algo="ring", proto=Proto.SIMPLE).best
    # Each hop's latency is floored at zero: what is left per step is the slice's own service
    # (its data and Simple's fence), so only NCCL's launch latency stays a fixed cost.
    assert floor.latency == pytest.approx(BASE_LAT["ring"][Proto.SIMPLE])
    assert 0 < floor.time < plain.time
    assert plain.time - floor.time <= 14 * HW_LAT[Hw.NVLINK]["ring"][Proto.LL] + 1e-12


def test_scenario_reads_signed_latencies_and_rejects_bad_values() -> None:
    sc = parse({"cluster": {"calibration": {"network": {"bandwidth_factor": 0.9,
                                                        "latency": "-1.5 us"}}}})  # fmt: skip
    assert sc.cluster.calibration.network is not None
    assert sc.cluster.calibration.network.latency == pytest.approx(-1.5e-6)
    with pytest.raises(ScenarioError, match="bandwidth_factor"):
        parse({"cluster": {"calibration": {"pcie": {"bandwidth_factor": 0}}}})
    with pytest.raises(ScenarioError, match=r"calibration\.infiniband"):
        parse({"cluster": {"calibration": {"infiniband": {}}}})


def synthetic(cluster: object, per_node: int, truth: CalibrationSpec, op: Op) -> list[Measured]:
    """What a machine with ``truth``'s corrections would measure (the tuner's own choice)."""
    points = [Measured("synthetic:1", op, s, 1.0, cluster, per_node) for s in SIZES]  # type: ignore[arg-type]
    return [replace(p, seconds=predict(p, truth)[0]) for p in points]


def test_fit_recovers_known_network_and_nvlink_corrections() -> None:
    truth = CalibrationSpec(
        nvlink=LinkCalibration(bandwidth_factor=0.8, latency=0.4e-6),
        network=LinkCalibration(bandwidth_factor=0.7, latency=2e-6),
    )
    one, two = h100(1), h100(4)
    points = synthetic(one, 8, truth, Op.ALL_REDUCE) + synthetic(two, 1, truth, Op.ALL_REDUCE)
    fit = fit_calibration(points, holdout=3)
    assert fit.classes == ("nvlink", "network")
    got = fit.calibration
    assert got.nvlink is not None and got.network is not None
    assert got.nvlink.bandwidth_factor == pytest.approx(0.8, rel=0.02)
    assert got.network.bandwidth_factor == pytest.approx(0.7, rel=0.02)
    assert got.nvlink.latency == pytest.approx(0.4e-6, abs=0.1e-6)
    assert got.network.latency == pytest.approx(2e-6, abs=0.3e-6)
    s = fit.summary()
    assert s["fit_max_after"] is not None and s["fit_max_after"] < 0.01
    assert s["held_out_max_after"] is not None and s["held_out_max_after"] < 0.01
    assert s["fit_median_before"] is not None and s["fit_median_before"] > 0.05
    assert sum(p.held_out for p in fit.points) == 14  # every 3rd size of each 21-size run


def test_fit_starts_far_from_the_model() -> None:
    """A CPU host 50x slower than the modelled PCIe path with 300 us per step still fits."""
    host = build_cluster(ClusterSpec.model_validate(
        {"preset": "dgx-h100", "gpus_per_node": 4, "scale_up": "pcie", "scale_up_domain": 4}))  # fmt: skip
    truth = CalibrationSpec(pcie=LinkCalibration(bandwidth_factor=0.02, latency=300e-6))
    points = synthetic(host, 4, truth, Op.ALL_REDUCE)[:15]
    points = [
        replace(p, seconds=predict(p, truth, algo="ring", proto=Proto.SIMPLE)[0]) for p in points
    ]
    fit = fit_calibration(points, algo="ring", proto=Proto.SIMPLE)
    assert fit.calibration.pcie is not None
    assert fit.calibration.pcie.bandwidth_factor == pytest.approx(0.02, rel=0.02)
    assert fit.calibration.pcie.latency == pytest.approx(300e-6, rel=0.02)


def test_a_run_is_priced_under_its_own_nccl_settings() -> None:
    """A log's NCCL_PROTO / NCCL_MAX_NCHANNELS (NCCL_DEBUG=INFO 'set by environment') shape the
    model's prediction; an algorithm or protocol forced on the command line wins."""
    cluster, none = h100(2), CalibrationSpec()
    plain = Measured("x", Op.ALL_REDUCE, 64.0 * 2**20, 1.0, cluster, 8)
    ll = replace(plain, env={"NCCL_PROTO": "LL", "NCCL_MAX_NCHANNELS": "4"})
    assert predict(plain, none)[1] != "ring/LL"
    seconds, ran = predict(ll, none)
    assert ran.endswith("/LL") and seconds > predict(plain, none)[0]
    assert predict(ll, none, proto=Proto.SIMPLE)[1].endswith("/Simple")


def test_classes_seen_follow_the_communicator() -> None:
    one, four = h100(1), h100(4)
    assert classes_seen(Measured("x", Op.ALL_REDUCE, 1.0, 1.0, one, 8)) == {"nvlink"}
    assert classes_seen(Measured("x", Op.ALL_REDUCE, 1.0, 1.0, four, 1)) == {"network"}
    assert classes_seen(Measured("x", Op.ALL_REDUCE, 1.0, 1.0, four, 8)) == {"nvlink", "network"}


def test_fit_refuses_what_it_cannot_fit() -> None:
    one = h100(1)
    with pytest.raises(CalibrationError, match="no measured size"):
        fit_calibration([Measured("x", Op.ALL_REDUCE, 0.0, 1e-5, one, 8)])  # type: ignore[arg-type]
    ok = [Measured("x", Op.ALL_REDUCE, 1024.0, 1e-5, one, 8)]  # type: ignore[arg-type]
    with pytest.raises(CalibrationError, match="holdout"):
        fit_calibration(ok, holdout=1)
    with pytest.raises(CalibrationError, match="cannot run"):
        fit_calibration(ok, algo="collnet")


def test_flow_engine_links_carry_the_calibrated_bandwidth() -> None:
    """Halving the network's bandwidth doubles a bandwidth-bound all-reduce across nodes on the
    flow engine too: the link capacities carry the factor, not only the per-chain caps."""
    from commwall.collectives.schedule import CollectiveTask, Schedule
    from commwall.engines.communicators import world_group
    from commwall.engines.flow.engine import FlowEngine

    base = build_cluster(ClusterSpec(preset="dgx-h100", nodes=4, routing="ecmp"))
    slow = replace(base, calibration=CalibrationSpec(network=LinkCalibration(bandwidth_factor=0.5)))
    times = []
    for cluster in (base, slow):
        task = CollectiveTask(Op.ALL_REDUCE, 2**30, world_group(cluster, cluster.world(1)))
        times.append(FlowEngine().run(Schedule.single(task), cluster, "ecmp", seed=0).makespan)
    assert times[1] / times[0] == pytest.approx(2.0, rel=0.05)
