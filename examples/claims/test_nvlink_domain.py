"""nvlink_domain: per-GPU and aggregate NVL72 bandwidth equal their closed forms from the catalog."""

import nvlink_domain as claim
import pytest

from commwall.catalog import load_catalog
from commwall.collectives import busbw_factor
from commwall.collectives.ops import Op

CAT = load_catalog()
NVL72 = CAT.preset("gb200-nvl72")
GPU = CAT.gpu(NVL72.gpu)
LINK = CAT.nvlink(GPU.nvlink)
CHIP = CAT.nvswitch(NVL72.nvswitch)
PER_GPU = GPU.nvlink_links * LINK.per_link_bandwidth  # one way
NCCL_PER_GPU = GPU.nvlink_links * LINK.nccl_link_bandwidth


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_per_gpu_is_1_8_tb_s_bidirectional(n: claim.Numbers) -> None:
    assert n.gpus == NVL72.scale_up_domain == 72
    assert n.per_gpu == pytest.approx(PER_GPU)
    assert n.per_gpu_bidir == pytest.approx(2 * PER_GPU)
    assert n.per_gpu_bidir == pytest.approx(1.8e12)


def test_aggregate_is_about_130_tb_s(n: claim.Numbers) -> None:
    assert n.aggregate_bidir == pytest.approx(NVL72.scale_up_domain * 2 * PER_GPU)
    assert 125e12 <= n.aggregate_bidir <= 135e12
    assert n.aggregate_ratio == pytest.approx(n.aggregate_bidir / 130e12)
    assert n.holds


def test_switch_side_carries_every_gpu_link(n: claim.Numbers) -> None:
    # every GPU link lands on a switch port: chips x ports >= GPUs x links, and the bandwidths agree
    assert NVL72.nvswitch_count * CHIP.ports >= NVL72.scale_up_domain * GPU.nvlink_links
    assert n.switch_aggregate_bidir == pytest.approx(NVL72.nvswitch_count * CHIP.bandwidth)
    assert n.switch_aggregate_bidir == pytest.approx(n.aggregate_bidir)


def test_every_gpu_to_every_other_shares_the_per_gpu_bandwidth(n: claim.Numbers) -> None:
    assert n.per_pair_all_to_all == pytest.approx(PER_GPU / (NVL72.scale_up_domain - 1))


def test_collectives_are_bounded_by_nccls_nvlink_bandwidth(n: claim.Numbers) -> None:
    assert n.nccl_per_gpu == pytest.approx(NCCL_PER_GPU)
    rows = {r.op: r for r in n.rows}
    p = NVL72.scale_up_domain
    # all-to-all and all-gather: busbw is what each GPU pushes out, at most its NVLink bandwidth
    for op in ("alltoall", "all_gather"):
        assert rows[op].busbw <= NCCL_PER_GPU
        assert rows[op].busbw >= 0.5 * NCCL_PER_GPU  # 1 GiB is bandwidth-bound
    # all-reduce: each GPU sends and receives S at least once, even with in-switch reduction
    ar = rows["all_reduce"]
    assert ar.algbw <= NCCL_PER_GPU
    assert ar.busbw == pytest.approx(ar.algbw * busbw_factor(Op.ALL_REDUCE, p), rel=1e-9)


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "129.6 TB/s" in out
