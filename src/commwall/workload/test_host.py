"""The host wait of a MoE layer: the two measurements it is taken from, and its scaling."""

from __future__ import annotations

import doctest

import pytest

from commwall.workload import host
from commwall.workload.host import HOST_SYNC_EXPERTS, HOST_SYNC_GAP, host_wait


def test_doctests() -> None:
    assert doctest.testmod(host).failed == 0


def test_gaps_are_the_sources_idle_time_over_their_moe_layer_forwards() -> None:
    """BF16: Megatron-Bridge's Nsight A/B, the step less the GPU-active union over GBS 1024 /
    (MBS 1 × DP 16) micro-batches × 48 layers. FP8: PR #5728's two recipes' steps, each the
    FLOP count over 480.3 and 598.1 model TFLOP/s/GPU on 16 GPUs, over GBS 512 / (MBS 4 × 16)
    micro-batches × 48 layers."""
    assert HOST_SYNC_GAP["bf16"] == pytest.approx((24.7138 - 22.821) / (1024 // 16 * 48))
    flops = 23_006_281_728 * 512 * 4096  # the recipes' FLOP count a step (the rows' notes)
    partial, paged = flops / (480.3e12 * 16), flops / (598.1e12 * 16)
    assert (partial, paged) == (pytest.approx(6.2783, abs=1e-4), pytest.approx(5.0418, abs=1e-4))
    assert HOST_SYNC_GAP["low"] == pytest.approx((partial - paged) / (512 // 64 * 48), rel=1e-3)


@pytest.mark.parametrize("local", [1, 2, 4, 8, 16, 32])
def test_fewer_local_experts_pay_their_share_and_more_pay_the_measured_gap(local: int) -> None:
    for precision, key in (("bf16", "bf16"), ("fp16", "bf16"), ("fp8", "low"), ("fp4", "low")):
        wait = host_wait(local * 8, 8, precision, sync_free=False)
        assert wait == pytest.approx(HOST_SYNC_GAP[key] * min(1.0, local / HOST_SYNC_EXPERTS))


def test_no_wait_without_experts_or_with_a_sync_free_dispatch_and_a_measured_one_as_given() -> None:
    assert host_wait(1, 1, "fp8", sync_free=False) == 0.0
    assert host_wait(64, 8, "fp8", sync_free=True) == 0.0
    assert host_wait(64, 8, "fp8", sync_free=True, measured=1e-3) == 0.0
    assert host_wait(64, 8, "fp8", sync_free=False, measured=0.0) == 0.0
    assert host_wait(64, 64, "bf16", sync_free=False, measured=2.5e-3) == 2.5e-3
