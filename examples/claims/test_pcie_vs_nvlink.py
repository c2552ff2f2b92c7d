"""pcie_vs_nvlink: the ratios equal their closed forms from the catalog; the collective obeys them."""

import pcie_vs_nvlink as claim
import pytest

from commwall.catalog import load_catalog
from commwall.collectives import busbw_factor
from commwall.collectives.ops import Op

CAT = load_catalog()
PCIE5 = CAT.pcie("gen5")
B200 = CAT.gpu("b200")
NVLINK5 = CAT.nvlink(B200.nvlink)

PCIE5_X16 = PCIE5.x16_bandwidth  # one way
PCIE5_X16_BIDIR = 2 * PCIE5_X16
NVLINK5_PER_GPU = B200.nvlink_links * NVLINK5.per_link_bandwidth  # one way
NVLINK5_PER_GPU_BIDIR = 2 * NVLINK5_PER_GPU


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_catalog_matches_the_articles_inputs() -> None:
    # ~64 GB/s: 32 GT/s x 16 lanes / 8 bits, less 128b/130b encoding
    encoded = PCIE5.transfer_rate_gt_s * 1e9 * 16 / 8 * 128 / 130
    assert encoded == pytest.approx(PCIE5_X16, rel=1e-3)
    assert 60e9 <= PCIE5_X16 <= 64e9
    # 1.8 TB/s per GPU, bidirectional
    per_gpu_bidir = 2 * B200.nvlink_links * NVLINK5.per_link_bandwidth
    assert per_gpu_bidir == pytest.approx(1.8e12)


def test_articles_ratio_is_bidirectional_over_one_way_and_nearly_30(n: claim.Numbers) -> None:
    assert n.article_ratio == pytest.approx(NVLINK5_PER_GPU_BIDIR / PCIE5_X16)
    assert 25 <= n.article_ratio <= 32
    assert n.holds


def test_like_for_like_ratio_is_half_of_it(n: claim.Numbers) -> None:
    assert n.like_for_like_ratio == pytest.approx(NVLINK5_PER_GPU_BIDIR / PCIE5_X16_BIDIR)
    assert n.like_for_like_ratio == pytest.approx(NVLINK5_PER_GPU / PCIE5_X16)
    assert n.like_for_like_ratio == pytest.approx(n.article_ratio / 2)
    assert n.like_for_like_ratio < 25  # like for like it is not "nearly 30x"


def test_nccl_constants_ratio(n: claim.Numbers) -> None:
    nccl_nvlink = B200.nvlink_links * NVLINK5.nccl_link_bandwidth
    assert n.nccl_ratio == pytest.approx(nccl_nvlink / PCIE5.nccl_x16_bandwidth)
    assert n.nvlink.intra_bw == pytest.approx(nccl_nvlink)
    assert n.pcie.intra_bw == pytest.approx(PCIE5.nccl_x16_bandwidth)


def test_all_reduce_over_pcie_is_bounded_by_the_pcie_link(n: claim.Numbers) -> None:
    # ring all-reduce: busbw cannot exceed the per-GPU link bandwidth NCCL models
    assert n.pcie.nranks == 8
    assert n.pcie.busbw <= PCIE5.nccl_x16_bandwidth
    assert n.pcie.busbw >= 0.9 * PCIE5.nccl_x16_bandwidth  # 1 GiB is bandwidth-bound


def test_all_reduce_over_nvlink_is_bounded_by_nvlink(n: claim.Numbers) -> None:
    # even with in-switch reduction (NVLS) each GPU must send and receive S once:
    # algbw <= per-GPU NVLink bandwidth, so busbw <= 2(n-1)/n x that
    nccl_nvlink = B200.nvlink_links * NVLINK5.nccl_link_bandwidth
    assert n.nvlink.algbw <= nccl_nvlink
    assert n.nvlink.busbw <= busbw_factor(Op.ALL_REDUCE, n.nvlink.nranks) * nccl_nvlink
    assert n.nvlink.busbw == pytest.approx(
        n.nvlink.algbw * busbw_factor(Op.ALL_REDUCE, 8), rel=1e-9
    )


def test_collective_gap_is_between_like_for_like_and_the_articles(n: claim.Numbers) -> None:
    assert n.busbw_ratio == pytest.approx(n.pcie.time / n.nvlink.time)
    assert n.like_for_like_ratio <= n.busbw_ratio <= n.article_ratio


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "28.6x" in out and "14.3x" in out
