"""Token copies of the MoE dispatchers: closed forms, a seeded simulation, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commwall.cluster import build_cluster
from commwall.collectives import Op
from commwall.collectives.schedule import CollectiveTask, Group
from commwall.engines import AnalyticEngine
from commwall.scenario import parse_scenario
from commwall.workload.dispatch import (
    DEEPEP_NVL_PEERS,
    dispatch_share,
    dispatch_units,
    units_reached,
)


def _closed_form(n_experts: int, top_k: int, widths: tuple[int, ...]) -> float:
    """Ungrouped routing: a unit of ``w`` experts is missed with ``C(E−w, k) / C(E, k)``."""
    return sum(1 - math.comb(n_experts - w, top_k) / math.comb(n_experts, top_k) for w in widths)


def _simulated(
    n_experts: int, top_k: int, widths: tuple[int, ...], groups: int, group_topk: int
) -> float:
    """The expectation by drawing tokens: groups first, then experts among theirs (seeded)."""
    rng, size, draws = np.random.default_rng(7), n_experts // groups, 40_000
    chosen = np.argsort(rng.random((draws, groups)), axis=1)[:, :group_topk]
    # an expert among the chosen groups' pool: its group, then its place in the group
    pick = np.argsort(rng.random((draws, group_topk * size)), axis=1)[:, :top_k]
    experts = np.take_along_axis(chosen, pick // size, axis=1) * size + pick % size
    units = np.searchsorted(np.cumsum(widths), experts, side="right")
    reached = [len(np.unique(row)) for row in units]
    return float(np.mean(reached))


@pytest.mark.parametrize(
    ("n_experts", "top_k", "widths"),
    [(128, 8, (8,) * 16), (128, 8, (64, 64)), (256, 8, (32,) * 8), (60, 4, (12,) * 5)],
)
def test_ungrouped_routing_reaches_the_closed_form(
    n_experts: int, top_k: int, widths: tuple[int, ...]
) -> None:
    assert units_reached(n_experts, top_k, widths) == pytest.approx(
        _closed_form(n_experts, top_k, widths), rel=1e-12
    )


@pytest.mark.parametrize(
    ("n_experts", "top_k", "widths", "groups", "group_topk"),
    [(256, 8, (32,) * 8, 8, 4),  # DeepSeek-V3 on 8 nodes: groups are the nodes
     (256, 8, (4,) * 64, 8, 4),  # the same 64 ranks, one unit a rank
     (256, 8, (48,) * 4 + (64,), 8, 4),  # units that straddle groups
     (64, 6, (16,) * 4, 8, 3)],  # two groups a unit
)  # fmt: skip
def test_group_limited_routing_matches_drawn_tokens(
    n_experts: int, top_k: int, widths: tuple[int, ...], groups: int, group_topk: int
) -> None:
    exact = units_reached(n_experts, top_k, widths, groups, group_topk)
    assert exact == pytest.approx(
        _simulated(n_experts, top_k, widths, groups, group_topk), rel=0.01
    )
    # limiting the groups concentrates the experts: never more units than ungrouped
    assert exact <= _closed_form(n_experts, top_k, widths) + 1e-12


def test_deepseek_v3_reaches_at_most_its_four_groups() -> None:
    """DeepSeek-V3 §2.1.2: "each token will be sent to at most M = 4 nodes"; with the groups
    on the nodes, 8 experts over 4 nodes of 32 reach 3.63 of them on average."""
    nodes = units_reached(256, 8, (32,) * 8, 8, 4)
    assert 3.5 < nodes < 4.0
    assert _closed_form(256, 8, (32,) * 8) > 5.0  # without the limit: 5.3 of 8


def test_the_all_to_all_moves_every_copy_and_the_flex_backends_one_per_unit() -> None:
    """Qwen3-30B-A3B's 128 experts, top-8, over EP 16 on two 8-GPU nodes: the all-to-all
    sends 4 of a token's 8 copies across nodes, DeepEP and HybridEP one per remote node (the
    other node is reached with probability 1 − C(64, 8)/C(128, 8))."""
    args = {"n_experts": 128, "top_k": 8, "ranks": 16, "per_domain": 8}
    assert dispatch_share("alltoall", **args) == 1.0
    nodes = 2 * (1 - math.comb(64, 8) / math.comb(128, 8))
    for backend in ("deepep", "hybridep"):
        assert dispatch_share(backend, **args) == pytest.approx(nodes / 8, rel=1e-12)
    # one domain: a copy per rank reached (8 experts per rank of 16)
    one = {**args, "per_domain": 16}
    ranks = _closed_form(128, 8, (8,) * 16)
    assert dispatch_share("hybridep", **one) == pytest.approx(ranks / 8, rel=1e-12)
    # DeepEP's NVLink node is 8 ranks even inside a larger domain
    assert dispatch_units(16, 16, "deepep") == (2, DEEPEP_NVL_PEERS)
    assert dispatch_units(16, 16, "hybridep") == (16, 1)
    # a token with one expert has nothing to deduplicate; one rank has no dispatch
    assert dispatch_share("hybridep", **{**args, "top_k": 1}) == pytest.approx(1.0)
    assert dispatch_share("hybridep", **{**args, "ranks": 1}) == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [((128, 8, (64, 60)), "do not split 128"),
     ((128, 8, (64, 64), 3, 1), "3 groups"),
     ((128, 8, (64, 64), 8, 9), "top 9"),
     ((128, 8, (64, 64), 64, 2), "top_k 8 exceeds the 4 experts")],
)  # fmt: skip
def test_inconsistent_splits_are_refused(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        units_reached(*args)  # type: ignore[arg-type]


def test_hybridep_s_bytes_as_an_all_to_all_fall_among_its_published_rates() -> None:
    """The step prices HybridEP's kernels as NCCL all-to-alls of the bytes it sends (one copy a
    destination rank). NVIDIA publishes two sets of HybridEP rates (GB/s one way, top-8): the
    DeepSeek-V3 GB200 guide's plot (Megatron-LM
    docs/discussions/deepseek-v3-gb200-optimization/images/image6.png @eb0783b6, 32 CUDA
    blocks) 714.66 dispatch and 657.72 combine over a 36-GPU GB200 NVLink domain and 368.9 /
    368.87 over one DGX H100 (16 blocks); DeepEP's Hybrid-EP_Implementation.md, through the
    PyTorch API, 523 / 522 on 16 GB200 and 484 / 465 on 32 (32 SMs) — about 30 % apart.
    Taking the size as DeepEP's benchmark shape (4,096 tokens of hidden 7,168 in BF16, an
    assumption: neither says), the model's all-to-all of those bytes runs at 697 GB/s on the
    36 GB200, inside the published range and near the plot's, and within 12 % of the plot's
    H100 rate (394 GB/s)."""

    def rate(cluster: dict[str, object], experts: int) -> float:
        sc = parse_scenario({"name": "hybridep", "cluster": cluster, "job": {"model": "llama3-8b"}})
        cl = build_cluster(sc.cluster)
        ranks = cl.n_gpus
        copies = units_reached(experts, 8, (experts // ranks,) * ranks)  # destinations a token
        nbytes = 4096 * copies * 7168 * 2
        task = CollectiveTask(Op.ALLTOALL, nbytes, Group("ep", 1, ranks))
        return nbytes / AnalyticEngine().cost(task, cl).time / 1e9

    gb200 = rate({"preset": "gb200-nvl72", "nodes": 9, "scale_up_domain": 36}, 288)
    assert 465.0 <= gb200 <= 714.66
    assert gb200 == pytest.approx((714.66 + 657.72) / 2, rel=0.05)
    assert rate({"preset": "dgx-h100", "nodes": 1}, 256) == pytest.approx(368.9, rel=0.12)
