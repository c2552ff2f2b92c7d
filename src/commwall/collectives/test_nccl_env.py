"""NCCL environment settings the collective model honours (``commwall.collectives.nccl_env``)."""

from __future__ import annotations

import doctest

import pytest

from commwall.cluster import build_cluster
from commwall.collectives import nccl_env
from commwall.collectives.nccl_env import (
    MODEL_READS,
    apply_nccl_env,
    describe_env,
    limit_channels,
    parse_env_assignments,
)
from commwall.scenario import ClusterSpec


def test_nccl_env_settings_are_applied() -> None:
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=2)).world()
    env = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_MIN_NCHANNELS": "32",
           "NCCL_NVLS_ENABLE": "0"}  # fmt: skip
    out, algo, proto = apply_nccl_env(fabric, env, "default", "default")
    assert (algo, proto is not None and proto.value) == ("ring", "Simple")
    assert out.channels == 32 and not out.nvls
    capped, _, _ = apply_nccl_env(fabric, {"NCCL_MAX_CTAS": "4"}, "default", "default")
    assert capped.channels == 4
    # The table's own algorithm wins over the environment's.
    _, algo, _ = apply_nccl_env(fabric, {"NCCL_ALGO": "Tree"}, "ring", "default")
    assert algo == "ring"


def test_p2p_channels_follow_the_channels_and_nothing_exceeds_ncclS_64() -> None:
    """paths.cc: p2pnChannels = pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS)), MAXCHANNELS 64."""
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1)).world()
    assert (fabric.channels, fabric.p2p_channels) == (24, 32)
    six, _, _ = apply_nccl_env(fabric, {"NCCL_MAX_NCHANNELS": "6"}, "default", "default")
    assert (six.channels, six.p2p_channels) == (6, 8)
    huge, _, _ = apply_nccl_env(fabric, {"NCCL_MIN_CTAS": "1000"}, "default", "default")
    assert (huge.channels, huge.p2p_channels) == (64, 64)
    same, algo, proto = apply_nccl_env(fabric, {"NCCL_IB_HCA": "mlx5_0"}, "default", "default")
    assert same == fabric and algo is None and proto is None
    assert "NCCL_IB_HCA" not in MODEL_READS and "NCCL_MIN_CTAS" in MODEL_READS


@pytest.mark.parametrize(
    "item", ["NCCL_ALGO", "nccl_algo=Ring", "ALGO=Ring", "NCCL_ALGO=", "=Ring", "NCCL ALGO=x"]
)
def test_a_malformed_setting_is_an_error_naming_it(item: str) -> None:
    with pytest.raises(ValueError, match=r"--env: .* is not a setting; allowed: NCCL_NAME=VALUE"):
        parse_env_assignments([item])


def test_values_the_model_cannot_use_are_named_not_dropped() -> None:
    """An exclusion list (NCCL_ALGO=^NVLS), an algorithm the model lacks or a channel count that
    is not a number changes nothing and is reported as such."""
    env = {"NCCL_ALGO": "^NVLS", "NCCL_PROTO": "LL128", "NCCL_MAX_CTAS": "many",
           "NCCL_NVLS_ENABLE": "0", "NCCL_SOCKET_IFNAME": "eth0"}  # fmt: skip
    seen = describe_env(env)
    assert seen["applied"] == ["NCCL_PROTO=LL128", "NCCL_NVLS_ENABLE=0"]
    assert seen["not_understood"] == ["NCCL_ALGO=^NVLS", "NCCL_MAX_CTAS=many"]
    assert seen["not_read"] == ["NCCL_SOCKET_IFNAME"]
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1)).world()
    out, algo, proto = apply_nccl_env(fabric, env, "default", "default")
    assert algo is None and proto is not None and proto.value == "LL128"
    assert out.channels == fabric.channels and not out.nvls


def test_channels_per_net_peer_set_the_network_p2p_channels_without_halving() -> None:
    """NCCL_NCHANNELS_PER_NET_PEER (init.cc: values below 1 are ignored) replaces NCCL's own
    count for network peers and skips the halving for many peers (paths.cc): on 64 DGX H100
    (512 ranks) NCCL's own count halves to 1, the setting keeps 4."""
    from commwall.collectives.direct import nccl_init_channels, p2p_limits

    big = build_cluster(ClusterSpec(preset="dgx-h100", nodes=64)).world()
    assert p2p_limits(big, network=True)[1] == 1
    four, _, _ = apply_nccl_env(big, {"NCCL_NCHANNELS_PER_NET_PEER": "4"}, "default", "default")
    assert p2p_limits(four, network=True)[1] == 4
    assert nccl_init_channels(four)["p2p_per_peer"] == 4
    ignored, _, _ = apply_nccl_env(big, {"NCCL_NCHANNELS_PER_NET_PEER": "0"}, "default", "")
    assert ignored == big
    assert describe_env({"NCCL_NCHANNELS_PER_NET_PEER": "0"})["not_understood"]
    one_node = build_cluster(ClusterSpec(preset="dgx-h100", nodes=1)).world()
    local, _, _ = apply_nccl_env(one_node, {"NCCL_NCHANNELS_PER_NET_PEER": "2"}, "default", "")
    assert p2p_limits(local, network=False) == p2p_limits(one_node, network=False)


def test_channel_limits_bound_the_channels_as_nccls_comm_config_does() -> None:
    fabric = build_cluster(ClusterSpec(preset="dgx-h100", nodes=2)).world()
    assert fabric.channels > 8
    capped = limit_channels(fabric, 1, 8)
    assert (capped.channels, capped.p2p_channels) == (8, 8)
    assert limit_channels(fabric, None, 3).p2p_channels == 4  # pow2Up
    raised = limit_channels(fabric, 40, None)
    assert (raised.channels, raised.p2p_channels) == (40, 64)
    assert limit_channels(fabric, 100, 200).channels == 64  # NCCL's MAXCHANNELS
    assert limit_channels(fabric, None, None) is fabric
    # the same bound as the environment variables NCCL reads for every communicator
    env_capped, _, _ = apply_nccl_env(fabric, {"NCCL_MAX_CTAS": "8"}, "default", "default")
    assert env_capped == capped


def test_doctests() -> None:
    assert doctest.testmod(nccl_env).failed == 0


def test_a_ring_of_fewer_channels_than_nics_reaches_only_that_many_nics() -> None:
    """Each ring channel leaves its domain through one NIC: two channels across NVL72 racks
    (72 NICs a rack) move at most two NICs' bandwidth a direction, however many NICs the
    domain has; with NCCL's own channel count the scale-up hop binds, as before."""
    from commwall.collectives import Op, Proto, evaluate

    fabric = build_cluster(ClusterSpec(preset="gb200-nvl72", nodes=36)).world()
    assert fabric.n_domains == 2 and fabric.net_bw_per_nic is not None
    two = limit_channels(fabric, None, 2)
    size = 2.0**30
    cost = evaluate(Op.ALL_REDUCE, size, two, "ring", Proto.SIMPLE)
    p = fabric.nranks
    floor = 2 * (p - 1) / p * size / (2 * fabric.net_bw_per_nic)
    assert cost.bw_time >= floor * (1 - 1e-9)
    free = evaluate(Op.ALL_REDUCE, size, fabric, "ring", Proto.SIMPLE)
    assert free.bottleneck == "nvlink" and free.time < cost.time
