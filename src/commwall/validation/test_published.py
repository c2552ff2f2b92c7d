"""Accuracy against public nccl-tests results (sources in nccl_tests_published.yaml).

Calibration targets (issue: DGX H100 one node, ring and NVLS; multi-node H100 with 8 × 400G NDR)
must be within 10% at large sizes and in the right tens of µs at small sizes. Cross-checks use the
same constants on other systems and are held to looser bands that document how far the model
carries; the known gaps are asserted as gaps so a change that closes or widens them is noticed.
"""

from __future__ import annotations

import pytest

from commwall.cluster import build_cluster
from commwall.collectives import Op, choose
from commwall.io.scenario import ClusterSpec
from commwall.validation import compare, load_measurements
from commwall.validation.published import reference_statements

GIB = 2**30


def _by_id(name: str):  # type: ignore[no-untyped-def]
    return next(m for m in load_measurements() if m.id == name)


def test_every_measurement_cites_a_source() -> None:
    ms = load_measurements()
    assert len(ms) >= 10
    for m in ms:
        assert m.source and m.points, m.id


@pytest.mark.parametrize(
    "mid",
    [
        "dgxc-h100-1node-allreduce-default",  # NVIDIA DGX Cloud benchmarking recipe (NVLS)
        "azure-ndh100v5-1node-allreduce-nvls",  # Azure ND H100 v5
        # 8 × 400G NDR per node. The run is labelled a SHARP job, but its 386 GB/s sits at the
        # NIC-bound level of a non-offloaded algorithm (NVLS + SHARP would reach ~550 GB/s), so
        # it is compared with NCCL's default configuration, CollNet off.
        "coreweave-h100-multinode-ib-sharp-allreduce",
    ],
)
def test_calibration_targets_large_messages_within_10_percent(mid: str) -> None:
    rows = [c for c in compare(_by_id(mid)) if c.size >= GIB]
    assert rows
    for c in rows:
        assert c.busbw_error is not None
        assert abs(c.busbw_error) <= 0.10, (c.size, c.predicted_busbw, c.measured_busbw)


def test_dgx_h100_small_messages_in_the_right_tens_of_microseconds() -> None:
    rows = {c.size: c for c in compare(_by_id("dgxc-h100-1node-allreduce-default"))}
    for size in (8, 1024, 2**20):
        c = rows[size]
        assert c.measured_time is not None
        assert abs(c.predicted_time - c.measured_time) <= 0.25 * c.measured_time, size
    assert 10e-6 < rows[8].predicted_time < 20e-6


def test_dgx_h100_ring_matches_nccl_maintainers_370_gbps() -> None:
    # NVIDIA/nccl-tests#212: NCCL_ALGO=RING on 8 × H100 gives ~370 GB/s busbw.
    assert any("370GB/s" in s["quote"] for s in reference_statements())
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1)).world()
    ring = choose(Op.ALL_REDUCE, 8 * GIB, fabric, algo="ring").best
    assert ring.busbw == pytest.approx(370e9, rel=0.10)


@pytest.mark.parametrize(
    ("preset", "low", "high"), [("dgx-h100", 46e9, 48e9), ("dgx-a100", 23e9, 25e9)]
)
def test_per_nic_bandwidth_matches_nvidia_guidance(preset: str, low: float, high: float) -> None:
    # nccl-tests#290: 46–48 GB/s per NDR NIC; nccl-tests#119: ~24 GB/s per HDR NIC.
    cluster = build_cluster(ClusterSpec(preset=preset, nodes=4))
    assert low <= cluster.net_bw_per_gpu <= high


@pytest.mark.parametrize(
    ("mid", "band"),
    [
        ("azure-ndh200v5-1node-allreduce-nvls", 0.10),
        ("azure-nda100v4-1node-allreduce", 0.10),
        ("oci-bm-gpu4-a100-2node-roce-allreduce-default", 0.15),
        ("nebius-h200-2node-ib-allreduce-default", 0.10),
        ("oci-bm-gpu-h100-2node-roce-allreduce-default", 0.10),
    ],
)
def test_cross_checks_carry_without_retuning(mid: str, band: float) -> None:
    rows = [c for c in compare(_by_id(mid)) if c.size >= GIB and c.busbw_error is not None]
    assert rows
    for c in rows:
        assert c.busbw_error is not None
        assert abs(c.busbw_error) <= band, (c.size, c.predicted_busbw, c.measured_busbw)


def test_nvls_busbw_is_flat_from_8_to_72_gpus_as_measured() -> None:
    # The NVLS fraction was calibrated on DGX H100 alone; GB200 at 8 GPUs (OCI) and a whole
    # 72-GPU NVL72 rack (CoreWeave) must follow without retuning.
    for mid in ("oci-gb200-2tray-mnnvl-allreduce", "coreweave-gb200-nvl72-1rack-allreduce"):
        rows = [c for c in compare(_by_id(mid)) if c.size >= 4 * GIB]
        assert rows
        for c in rows:
            assert c.busbw_error is not None
            assert abs(c.busbw_error) <= 0.10, (mid, c.size, c.busbw_error)


def test_two_nvl72_racks_carry_and_twenty_are_a_known_gap() -> None:
    # CoreWeave GB200 over InfiniBand (NCCL 2.26): 2 racks measured 810 GB/s at 16 GiB, which
    # the model meets; 20 racks measured 406 GB/s, which it overpredicts about 2× — whatever
    # limits the real run at 1,440 ranks is not modelled yet.
    two = [c for c in compare(_by_id("coreweave-gb200-nvl72-2rack-allreduce")) if c.size >= 8 * GIB]
    assert two
    for c in two:
        assert c.busbw_error is not None
        assert abs(c.busbw_error) <= 0.10
    twenty = [
        c for c in compare(_by_id("coreweave-gb200-nvl72-20rack-allreduce")) if c.size >= 8 * GIB
    ]
    assert twenty
    for c in twenty:
        assert c.busbw_error is not None
        assert c.busbw_error > 0.8
