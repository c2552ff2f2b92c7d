"""Where TP, DP, EP and PP communicators land in scale-up domains (``tp-dp-pp`` rank order)."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.cluster import build_cluster
from commwall.collectives.schedule import Group
from commwall.scenario import ClusterSpec, parse_scenario
from commwall.workload import WorkloadError, layout
from commwall.workload.job import resolve_job
from commwall.workload.layout import group_shape, pipeline_peer_group
from commwall.workload.step import job_groups


def _shape(g: Group) -> tuple[int, int]:
    return g.n_domains, g.ranks_per_domain


def _brute_force(size: int, stride: int, domain: int, offset: int = 0) -> dict[int, int]:
    """Ranks per domain of the communicator ``offset + j·stride``, ``j < size``."""
    out: dict[int, int] = {}
    for j in range(size):
        d = (offset + j * stride) // domain
        out[d] = out.get(d, 0) + 1
    return out


def test_doctests() -> None:
    assert doctest.testmod(layout).failed == 0


# ---------------------------------------------------------------- 8-GPU domains (HGX / DGX)
@pytest.mark.parametrize(
    ("name", "size", "stride", "expected"),
    [
        ("tp", 8, 1, (1, 8)),  # TP 8 fills the node
        ("tp", 4, 1, (1, 4)),
        ("tp", 1, 1, (1, 1)),
        ("dp", 16, 8, (16, 1)),  # tp 8: every DP peer in another node, one rank per node
        ("dp", 16, 1, (2, 8)),  # tp 1: 8 DP ranks per node
        ("dp", 8, 2, (2, 4)),  # tp 2: 4 DP ranks per node
        ("dp", 4, 4, (2, 2)),
        ("ep", 8, 1, (1, 8)),  # EP inside the node
        ("ep", 8, 8, (8, 1)),  # EP over tp 8: each expert rank in its own node
        ("ep", 4, 2, (1, 4)),
    ],
)
def test_hgx_groups(name: str, size: int, stride: int, expected: tuple[int, int]) -> None:
    g = group_shape(name, size, stride, 8)
    assert _shape(g) == expected
    assert g.name == name
    assert g.nranks == size


# ---------------------------------------------------------------- 72-GPU domains (GB200 NVL72)
@pytest.mark.parametrize(
    ("name", "size", "stride", "expected"),
    [
        ("tp", 8, 1, (1, 8)),
        ("tp", 72, 1, (1, 72)),
        ("dp", 9, 8, (1, 9)),  # tp 8: 72 / 8 = 9 DP ranks per NVL72 domain
        ("dp", 18, 8, (2, 9)),
        ("dp", 144, 8, (16, 9)),
        ("dp", 144, 1, (2, 72)),
        ("dp", 36, 4, (2, 18)),
        ("dp", 4, 8, (1, 4)),  # small DP stays inside one domain
        ("ep", 8, 8, (1, 8)),  # EP 8 over tp 8 stays inside NVLink at NVL72
        ("ep", 9, 8, (1, 9)),
        ("ep", 64, 1, (1, 64)),
    ],
)
def test_nvl72_groups(name: str, size: int, stride: int, expected: tuple[int, int]) -> None:
    g = group_shape(name, size, stride, 72)
    assert _shape(g) == expected
    if size % g.ranks_per_domain == 0:
        assert g.nranks == size


def test_dp_of_a_resolved_nvl72_job_has_nine_ranks_per_domain() -> None:
    scenario = parse_scenario(
        {
            "cluster": {"preset": "gb200-nvl72", "nodes": 36},  # 144 GPUs, two NVL72 domains
            "job": {"model": "llama3-70b", "tp": 8, "pp": 1, "global_batch": 18},
        }
    )
    cluster = build_cluster(scenario.cluster)
    job = resolve_job(scenario.job, cluster)
    assert cluster.scale_up_domain == 72 and job.dp == 18
    groups = job_groups(job, cluster)
    assert _shape(groups.tp) == (1, 8)
    assert _shape(groups.dp) == (2, 9)
    assert groups.dp.nranks == job.dp


def test_hgx_job_groups() -> None:
    cluster = build_cluster(ClusterSpec(preset="dgx-h100", nodes=16))  # 128 GPUs
    spec = parse_scenario({"job": {"model": "llama3-70b", "tp": 8, "pp": 4, "global_batch": 64}})
    job = resolve_job(spec.job, cluster)
    groups = job_groups(job, cluster)
    assert job.dp == 4
    assert _shape(groups.tp) == (1, 8)
    assert _shape(groups.dp) == (4, 1)
    assert _shape(groups.pp) == (2, 1)  # tp·dp = 32 ranks apart: another node


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([4, 8, 16, 72]),
    st.integers(1, 72),
    st.integers(1, 64),
)
def test_group_shape_matches_rank_enumeration(domain: int, stride: int, size: int) -> None:
    """An aligned communicator: domains spanned and the fullest domain's ranks, exactly.

    When the ranks do not spread evenly (the last domain partly filled) the uniform shape
    overcounts ranks; when they do, it is exact.
    """
    if domain % stride and stride % domain:
        return  # a degree that does not fit the domain (resolve_job rejects TP like that)
    g = group_shape("x", size, stride, domain)
    counts = _brute_force(size, stride, domain)
    assert _shape(g) == (len(counts), max(counts.values()))
    if len(set(counts.values())) == 1:
        assert g.nranks == size
    else:
        assert g.nranks > size


def test_group_shape_rejects_bad_sizes() -> None:
    for args in ((0, 1, 8), (1, 0, 8), (1, 1, 0)):
        with pytest.raises(WorkloadError, match="must be >= 1"):
            group_shape("x", *args)


# ---------------------------------------------------------------- pipeline peers
@pytest.mark.parametrize(
    ("tp", "dp", "domain", "expected"),
    [
        (8, 4, 8, [(2, 1)] * 3),  # tp·dp ≥ domain: every boundary crosses
        (1, 8, 8, [(2, 1)] * 3),
        (1, 4, 8, [(1, 2), (2, 1), (1, 2)]),  # ranks 4-7 → 8-11 cross the node boundary
        (1, 2, 8, [(1, 2), (1, 2), (1, 2), (2, 1), (1, 2)]),
        (8, 4, 72, [(1, 2), (2, 1), (2, 1), (2, 1), (2, 1)]),  # 32 apart: stages straddle domains
        (8, 6, 72, [(2, 1), (2, 1), (2, 1)]),  # 48 apart: rank 30 → 78 already crosses
        (4, 9, 72, [(1, 2), (2, 1), (1, 2)]),  # 36 apart: only 36-71 → 72-107
    ],
)
def test_pipeline_peers_per_boundary(
    tp: int, dp: int, domain: int, expected: list[tuple[int, int]]
) -> None:
    got = [_shape(pipeline_peer_group(tp, dp, domain, s)) for s in range(len(expected))]
    assert got == expected
    assert all(pipeline_peer_group(tp, dp, domain, s).nranks == 2 for s in range(len(expected)))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([8, 72]),
    st.integers(1, 8),
    st.integers(1, 40),
    st.integers(0, 20),
)
def test_pipeline_peers_match_rank_pairs(domain: int, tp: int, dp: int, stage: int) -> None:
    k = tp * dp
    crosses = any(r // domain != (r + k) // domain for r in range(stage * k, (stage + 1) * k))
    assert _shape(pipeline_peer_group(tp, dp, domain, stage)) == ((2, 1) if crosses else (1, 2))


def test_pipeline_peers_reject_bad_input() -> None:
    with pytest.raises(WorkloadError):
        pipeline_peer_group(1, 1, 8, -1)
    with pytest.raises(WorkloadError):
        pipeline_peer_group(0, 1, 8)
