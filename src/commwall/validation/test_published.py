"""Accuracy against public nccl-tests results (tables and sources in nccl_tests_public.yaml).

Anchors hold single systems to the band a maintainer's statement or a clean vendor table allows;
the per-regime tests hold the whole validation set to the accuracy the model reached when it was
finished (docs/validation.md), so a change that makes any regime worse fails here. Known gaps are
asserted as gaps, so closing or widening one is noticed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from commwall.cluster import build_cluster
from commwall.collectives import Op, choose
from commwall.scenario import ClusterSpec
from commwall.validation import Measurement, compare, load_measurements
from commwall.validation.published import _share_run_verdicts, reference_statements
from commwall.validation.report import validation_report

GIB = 2**30
MIB = 2**20


def _by_id(name: str) -> Measurement:
    return next(m for m in load_measurements() if m.id == name)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return validation_report()


def test_every_table_names_its_source_role_and_points() -> None:
    ms = load_measurements()
    assert len(ms) >= 200
    assert len({m.id for m in ms}) == len(ms)
    for m in ms:
        assert m.source and m.points, m.id
        assert m.role in ("dev", "held_out"), m.id
        assert all(int(p["size_bytes"]) >= 0 for p in m.points), m.id
    assert {m.role for m in ms} == {"dev", "held_out"}


def test_every_table_not_compared_says_why(report: dict[str, Any]) -> None:
    compared = {r["id"] for r in report["rows"]}
    skipped = {s["id"]: s["why"] for s in report["skipped"]}
    for m in load_measurements():
        assert m.id in compared or skipped.get(m.id), m.id
    assert len(compared) >= 90


def test_outlier_points_are_predicted_but_not_scored(report: dict[str, Any]) -> None:
    outliers = [r for r in report["rows"] if r["outlier"]]
    assert outliers
    assert all(r["error"] is None for r in outliers)
    assert report["summary"]["outliers"] == len(outliers)
    # An outlier is slower than a larger size of its own table (that is how it was flagged).
    first = outliers[0]
    same = [r for r in report["rows"] if r["id"] == first["id"] and r["size"] > first["size"]]
    assert same


@pytest.mark.parametrize(
    "mid",
    [
        "dgxc-h100-1node-allreduce-default",  # NVIDIA DGX Cloud recipe, NVLS
        "azure-ndh100v5-1node-allreduce-nvls",
        "azure-ndh200v5-1node-allreduce-nvls",
        "azure-nda100v4-1node-allreduce",  # ring on A100
        "oci-gb200-2tray-mnnvl-allreduce",  # NVLS across two GB200 trays
        "nccl-tests-309-h100-4n8g-ib-ndr-allreduce-default-vm",  # NVLS-tree over 8 × NDR
    ],
)
def test_anchor_tables_within_10_percent_from_1_gib(mid: str) -> None:
    rows = [c for c in compare(_by_id(mid)) if c.size >= GIB and c.busbw_error is not None]
    assert rows
    for c in rows:
        assert c.busbw_error is not None
        assert abs(c.busbw_error) <= 0.10, (c.size, c.predicted_busbw, c.measured_busbw)


def test_dgx_h100_small_messages_in_the_right_tens_of_microseconds() -> None:
    rows = {c.size: c for c in compare(_by_id("dgxc-h100-1node-allreduce-default"))}
    for size in (8, 1024, 8192, MIB):
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


def test_dgx_h100_nvls_peak_matches_nccl_maintainers_480_gbps() -> None:
    # NVIDIA/nccl-tests#212 and #290: default (NVLS) all-reduce peaks at ~476–480 GB/s busbw.
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1)).world()
    best = choose(Op.ALL_REDUCE, 8 * GIB, fabric).best
    assert best.algo == "nvls"
    assert best.busbw == pytest.approx(480e9, rel=0.05)


@pytest.mark.parametrize(
    ("preset", "low", "high"), [("dgx-h100", 46e9, 48e9), ("dgx-a100", 23e9, 25e9)]
)
def test_per_nic_bandwidth_matches_nvidia_guidance(preset: str, low: float, high: float) -> None:
    # nccl-tests#290: 46–48 GB/s per NDR NIC; nccl-tests#119: ~24 GB/s per HDR NIC.
    cluster = build_cluster(ClusterSpec(preset=preset, nodes=4))
    assert low <= cluster.net_bw_per_gpu <= high


def test_multi_node_ring_is_nic_bound_as_maintainers_state() -> None:
    # nccl-tests#319: ~48 GB/s per CX7 NIC aggregate to up to ~396 GB/s ring busbw on 8-NIC nodes.
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=4)).world()
    ring = choose(Op.ALL_REDUCE, 8 * GIB, fabric, algo="ring").best
    assert 340e9 <= ring.busbw <= 396e9
    assert ring.busbw <= 8 * build_cluster(ClusterSpec(preset="dgx-h100", nodes=4)).net_bw_per_gpu


def test_nvl72_rack_nvls_busbw_is_flat_from_8_to_72_gpus_within_10_percent() -> None:
    # Measured NVLS busbw is flat from 8 GB200 (OCI, ~840 GB/s) to a 72-GPU rack (CoreWeave,
    # ~835 GB/s). The NVLink volume fits 8 GPUs; the tuner's rank-independent busbw caps the rack
    # (NCCL's 0.74 Blackwell efficiency leaves it a few percent optimistic).
    eight = [c for c in compare(_by_id("oci-gb200-2tray-mnnvl-allreduce")) if c.size >= 8 * GIB]
    rack = [
        c for c in compare(_by_id("coreweave-gb200-nvl72-1rack-allreduce")) if c.size >= 4 * GIB
    ]
    assert eight and rack
    for c in eight:
        assert c.busbw_error is not None and abs(c.busbw_error) <= 0.05
    for c in rack:
        assert c.busbw_error is not None and 0.0 < c.busbw_error <= 0.10


def test_twenty_nvl72_racks_are_a_known_gap() -> None:
    # CoreWeave GB200 over InfiniBand (NCCL 2.26): 2 racks measured 810 GB/s at 16 GiB, 20 racks
    # 406 GB/s; the model predicts ~0.9 TB/s for both — what limits 1,440 ranks is not modelled.
    twenty = [
        c for c in compare(_by_id("coreweave-gb200-nvl72-20rack-allreduce")) if c.size >= 8 * GIB
    ]
    assert twenty
    for c in twenty:
        assert c.busbw_error is not None and c.busbw_error > 0.8


def test_tables_of_one_run_share_its_all_reduce_bandwidth_verdict() -> None:
    # MIT ORCD's two-node B200 run logged every collective in one file; its all_reduce is below
    # 75% of NVIDIA's guidance, so its reduce_scatter (2-5x slow at 1-64 MiB) is not scored.
    ms = {m.id: m for m in load_measurements()}
    allreduce = ms["mit-orcd-b200-ubuntu-2n8g-ib-allreduce"]
    assert allreduce.not_compared and "NVIDIA's guidance" in allreduce.not_compared
    for sibling in ("reducescatter", "alltoall", "sendrecv"):
        why = ms[f"mit-orcd-b200-ubuntu-2n8g-ib-{sibling}"].not_compared
        assert why and allreduce.id in why and "rule applied to every table" in why
    # the same nodes' one-node run passes, so its tables stay in
    assert not ms["mit-orcd-b200-ubuntu-1n8g-nvlink-reducescatter"].not_compared
    # a table with a reason of its own keeps it; an all_reduce that passes changes nothing
    base = ms["mit-orcd-b200-ubuntu-1n8g-nvlink-reducescatter"]
    own = replace(base, id="own", not_compared="GPU x has no catalog part")
    ok = replace(base, id="ok-ar", op="all_reduce")
    shared = _share_run_verdicts([own, ok, replace(base, id="rs")])
    assert [m.not_compared for m in shared] == ["GPU x has no catalog part", None, None]
    # tables without a source are not one run
    failed = replace(base, id="ar", op="all_reduce", source="", not_compared=allreduce.not_compared)
    alone = _share_run_verdicts([failed, replace(base, id="rs", source="")])
    assert alone[1].not_compared is None


def _median(report: dict[str, Any], group: str | None, key: str | None, regime: str) -> float:
    s = report["summary"]
    cell = s["regime"][regime] if group is None else s[group][key][regime]
    assert cell["n"] >= 5, (group, key, regime)
    value: float = cell["median_abs"]
    assert math.isfinite(value)
    return value


@pytest.mark.parametrize(
    ("group", "key", "regime", "limit"),
    [
        # Whole set; dev and held-out tables separately (achieved with store-and-forward
        # network steps and NCCL's tree correction on the tree's bandwidth: 14.8%, 11.6%, 18.9%
        # at 1–256 MiB; 26.2% below 1 MiB; 4.1% from 1 GiB — docs/validation.md). Five held-out
        # tables added after that (2026-12-04: a 4-node H100 broadcast, reduce and all-gather
        # and a two-node A100 all-to-all and all-gather, one GPU per process), with the model
        # unchanged, moved the limits marked "new data": 15.3%, 11.6%, 20.0%; 29.7%; 4.4%. The
        # broadcast/reduce chain's store-and-forward network hops then gave 14.8%, 11.6%, 16.9%;
        # 28.9%. A network step's latency no longer adding the slice overhead again (NCCL's
        # figure holds it): 13.0%, 11.2%, 16.7%; 29.5%. Six held-out tables found after that,
        # model unchanged ("new data 2"): 13.9%, 11.2%, 17.1%; 28.7%; 4.5%, held-out 5.1%.
        # Five more held-out tables (two GKE H200 all-gathers over gIB, three ALCF A100 runs;
        # "new data 3"): 14.1%, 11.2%, 15.7%; 27.9%; 5.0%, held-out 6.1%. The p2p peers of a
        # schedule group sharing their channels' thread blocks across nodes (sendrecv.h):
        # 12.7%, 11.2%, 14.2%; 22.2%; 5.0%. Ten held-out GB300 NVL72 and B300 tables (Oracle
        # Cloud's quickstart READMEs, 2026-12-05; judged blind, model unchanged: "new data 4"):
        # 13.9%, 11.2%, 15.7%; 22.2%; 5.2%, held-out 6.0%; 256 MiB-1 GiB 7.6% -> 8.4%.
        # 23.4% once a communicator of one GPU a node ran NCCL's doubled graph channels (four
        # on a 400G NIC): the GKE B200 RoCE all-gather of one GPU a node, already 34-94% fast
        # at 32-256 KiB, moved 256 and 512 KiB from +34% and -6% to +76% and +29%
        (None, None, "< 1 MiB", 0.24),
        # new data 4 (was 0.13: 12.7%); 11.8% once a run's tables share its all_reduce's verdict
        (None, None, "1–256 MiB", 0.13),
        ("role", "dev", "1–256 MiB", 0.12),
        ("role", "held_out", "1–256 MiB", 0.16),  # new data 4 (was 0.15: 14.2%)
        (None, None, "256 MiB–1 GiB", 0.09),  # new data 4 (was 0.08: 7.6%)
        (None, None, "≥ 1 GiB", 0.06),  # new data 3 (was 0.05: 4.5%)
        ("role", "held_out", "≥ 1 GiB", 0.07),  # new data 2 and 3 (was 0.05; 5.1%, 6.1%)
        # Per operation in the size range users decide on.
        # 9.9% (10.8% adding the overhead twice); 11.7% with new data 4 (GB300 trays and
        # 8- and 64-GPU NVLS in one rack 7-41% fast at 1-64 MiB)
        ("op", "all_reduce", "1–256 MiB", 0.12),
        ("op", "all_gather", "1–256 MiB", 0.13),  # 14.8% (16.9%); 11.4% (shared verdicts)
        # 19.4%; 25.0% with a third MIT ORCD B200 pair's -g 8 table (new data 2: 4-6x slow);
        # 12.7% once the MIT ORCD two-node runs' tables shared their all_reduce's verdict
        ("op", "reduce_scatter", "1–256 MiB", 0.14),
        # 8.6%; 6.8% once one H100 a node sent on NCCL's four p2p channels, not two (MIT
        # ORCD's two-node table 16-21% slow -> 1-11%)
        ("op", "sendrecv", "1–256 MiB", 0.08),
        # 37.7%; 15.3% once the peers of a schedule group shared their channels' blocks;
        # 21.9% with new data 4 (GB300 NVLink all-to-alls 13-238% fast at 1-256 MiB; the
        # 64-GPU one measures 114-140 GB/s from 8 to 32 MiB, then 409 at 64 MiB); 22.3% with
        # new data 5 (MGHPCC's one-node B200 -g 8 all-to-all, 19-36% fast: the known gap);
        # 15.0% with Blackwell's p2p copy rate, 13.7% with shared verdicts
        ("op", "alltoall", "1–256 MiB", 0.15),
        # 19.2% (31.3% with a streaming network hop); 23.8% once the network step's latency no
        # longer counted the slice overhead twice: the chain was already fast (docs/validation.md);
        # 15.3% with MGHPCC's one-node B200 tables, 13.3% with shared verdicts
        ("op", "broadcast", "1–256 MiB", 0.15),
        ("op", "reduce", "1–256 MiB", 0.13),  # 21.0% (37.0%); 11.5% (shared verdicts)
        ("op", "all_reduce", "≥ 1 GiB", 0.05),
        ("op", "all_gather", "≥ 1 GiB", 0.06),  # new data 3: the GKE H200 +7-8% there
        ("op", "reduce_scatter", "≥ 1 GiB", 0.03),
        ("op", "sendrecv", "≥ 1 GiB", 0.04),
        # Per launch mode: one process per GPU (as training runs) and nccl-tests -g N.
        # 9.8% (11.9% before the chain fix, 10.8% before the network-step latency fix); 10.1%
        # with new data 2 (tree all-reduces fast on Azure A100 and Voltage Park H100)
        ("launch", "1 GPU per process", "1–256 MiB", 0.12),  # 11.5% with new data 4
        ("launch", "1 GPU per process", "≥ 1 GiB", 0.07),  # new data (was 0.05; 5.1%, 6.2%)
        ("launch", "several GPUs per process (-g N)", "1–256 MiB", 0.18),  # 16.7%
        ("op_one_gpu_per_process", "all_gather", "1–256 MiB", 0.10),  # 8.5% (12.1%)
        # 10.2% (new data 2); 11.6% (new data 4)
        ("op_one_gpu_per_process", "all_reduce", "1–256 MiB", 0.12),
        # 14.2% before ALCF's second two-node A100 alltoall table was added (2-5x fast below
        # 4 MiB, the known multi-node all-to-all gap); 21.4% with its third (new data), 22.3%
        # with its fourth (new data 3); 12.1% with the shared p2p blocks (two-node tables
        # 33% -> 13%: they are now 7-23% slow from 2 MiB, where they were 12-150% fast);
        # 15.3% with the three GB300 NVLink all-to-alls (new data 4)
        ("op_one_gpu_per_process", "alltoall", "1–256 MiB", 0.16),
        # 5.4%; 8.0% once together-h100-1n8g-reducescatter-ring-g8, a -g 8 run entered as one
        # GPU per process, was corrected (its log: "nThread 1 nGpus 8")
        ("op_one_gpu_per_process", "reduce_scatter", "1–256 MiB", 0.09),
        # Per scale.
        ("scale", "1 node", "1–256 MiB", 0.16),
        # 13.4% (16.8% adding the overhead twice); 14.8% with new data 2; 12.3% with the
        # shared p2p blocks; 13.0% with new data 4 (two GB300 trays in one rack)
        ("scale", "2 nodes", "1–256 MiB", 0.14),
        # 14.5% with the 4-node H100 broadcast and reduce (new data: their chains 1.3-2x fast at
        # 4-16 MiB), 8.8% once a chain's network hops were store-and-forward, 11.4% once a
        # network step's latency no longer counted the slice overhead twice (the 4-node H100
        # all-gather, +2-4% at 4-16 MiB before, is +27-29%)
        ("scale", "3–8 nodes", "1–256 MiB", 0.12),
    ],
)
def test_median_error_per_regime_does_not_regress(
    report: dict[str, Any], group: str | None, key: str | None, regime: str, limit: float
) -> None:
    assert _median(report, group, key, regime) <= limit
