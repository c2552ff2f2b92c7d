"""The scenario side of the fault models: weak scaling a scenario and rebuilding its step."""

from __future__ import annotations

import pytest

from commwall.faults import FaultError
from commwall.faults.analysis import rebuilt_scaling, scenario_at_scale
from commwall.faults.stragglers import Variability, profile_from_report, simulate_stragglers
from commwall.scenario import parse_scenario
from commwall.workload.simulate import simulate


def _zero3(nodes: int = 2) -> object:
    return parse_scenario(
        {
            "name": "zero3",
            "cluster": {"preset": "dgx-h100", "nodes": nodes},
            "job": {"model": "llama3-8b", "global_batch": 8 * nodes, "micro_batch": 1,
                    "seq_len": 4096, "zero_stage": 3, "tp": 2},
            "faults": {"stragglers": {"jitter": 0.01}},
        }
    )  # fmt: skip


def test_weak_scaling_keeps_model_parallelism_and_the_per_rank_batch() -> None:
    sc = _zero3(nodes=2)  # 16 GPUs, tp 2 -> dp 8, 2 sequences per replica
    big = scenario_at_scale(sc, 8, 64)  # type: ignore[arg-type]
    assert big.cluster.nodes == 8
    assert (big.job.tp, big.job.pp, big.job.cp) == (2, 1, 1)
    assert big.job.dp == 32
    assert big.job.global_batch == 64  # 2 per replica, as before
    assert big.faults is None
    assert big.name == sc.name  # type: ignore[attr-defined]


@pytest.mark.parametrize(("n", "needle"), [(12, "whole 8-GPU nodes"), (0, "whole 8-GPU nodes")])
def test_scales_that_do_not_fill_nodes_are_refused(n: int, needle: str) -> None:
    with pytest.raises(FaultError, match=needle):
        scenario_at_scale(_zero3(), 8, n)  # type: ignore[arg-type]


def test_scales_that_do_not_fill_model_parallel_groups_are_refused() -> None:
    sc = parse_scenario(
        {"cluster": {"preset": "dgx-h100", "nodes": 2}, "job": {"model": "llama3-8b", "tp": 8,
         "pp": 2, "global_batch": 8}}
    )  # fmt: skip
    with pytest.raises(FaultError, match="model-parallel groups of tp x cp x pp = 16"):
        scenario_at_scale(sc, 8, 24)


def test_hybrid_sharding_keeps_its_shard_group_as_it_scales() -> None:
    """With job.dp_replicate the shard group (here 8 ranks, a node) stays and the replicas
    grow or shrink with the GPUs; a scale whose dp x cp the shard does not divide is refused."""

    def hsdp(replicas: int) -> object:
        return parse_scenario(
            {"cluster": {"preset": "dgx-h100", "nodes": 4},
             "job": {"model": "llama3-8b", "tp": 1, "global_batch": 32, "dp_replicate": replicas}}
        )  # fmt: skip

    scaled = {n: scenario_at_scale(hsdp(4), 8, n).job for n in (8, 64, 1024)}  # type: ignore[arg-type]
    assert {n: (j.dp, j.dp_replicate) for n, j in scaled.items()} == {
        8: (8, 1),
        64: (64, 8),
        1024: (1024, 128),
    }
    with pytest.raises(FaultError, match="the shard group of 16 ranks"):
        scenario_at_scale(hsdp(2), 8, 8)  # type: ignore[arg-type]


def test_a_batch_that_does_not_split_over_dp_is_refused() -> None:
    sc = parse_scenario(
        {"cluster": {"preset": "dgx-h100", "nodes": 2}, "job": {"model": "llama3-8b", "tp": 2,
         "global_batch": 12, "micro_batch": 1}}
    )  # fmt: skip
    with pytest.raises(FaultError, match="does not split evenly over dp = 8"):
        scenario_at_scale(sc, 8, 32)


def test_the_rebuilt_step_at_the_scenarios_own_scale_is_its_own_step() -> None:
    sc = _zero3(nodes=2)
    v = Variability(message_tail=2e-6)
    own, bigger = rebuilt_scaling(sc, v, [16, 256], gpus_per_node=8, steps=200)  # type: ignore[arg-type]
    alone = simulate_stragglers(profile_from_report(simulate(sc)), v, steps=200)  # type: ignore[arg-type]
    assert own.ideal == pytest.approx(alone.ideal)
    assert own.step_time.mean == pytest.approx(alone.step_time.mean)
    # at 16x the GPUs the ZeRO-3 gathers span 16x the ranks: the step itself is rebuilt
    assert bigger.n_ranks == 256 and bigger.ideal > own.ideal


def test_rebuilt_scaling_needs_scales() -> None:
    with pytest.raises(FaultError, match="scales: empty"):
        rebuilt_scaling(_zero3(), Variability(), [], gpus_per_node=8)  # type: ignore[arg-type]


def _with_faults(faults: dict[str, object], nodes: int = 2) -> object:
    return parse_scenario(
        {
            "name": "faulty",
            "cluster": {"preset": "dgx-h100", "nodes": nodes},
            "job": {"model": "llama3-8b", "global_batch": 16, "seq_len": 2048, "tp": 8},
            "faults": faults,
        }
    )


@pytest.mark.parametrize(
    ("faults", "needle"),
    [
        ({"stragglers": {"slow_ranks": 17, "slowdown": 2}},
         "faults.stragglers: slow_ranks: 17; allowed: at most the job's 16 ranks"),
        ({"stragglers": {"steps": 1_000_000, "os_noise_rate": 100, "os_noise_duration": 1e-6}},
         "faults.stragglers: steps: 1,000,000 x 16 ranks"),
        ({"bit_errors": {"samples": 100_000}}, "faults.bit_errors: samples: 100,000 x"),
    ],
)  # fmt: skip
def test_fault_studies_past_their_budget_name_the_section(
    faults: dict[str, object], needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A study the cluster cannot hold (more slow ranks than ranks) or that would run for
    minutes (per-rank draws past the budget) is refused before it starts, naming the section."""
    import commwall.faults.bit_errors as bits
    import commwall.faults.stragglers as strag
    from commwall.faults.analysis import analyse_faults
    from commwall.scenario import ScenarioError

    monkeypatch.setattr(strag, "MAX_DIRECT_DRAWS", 1_000_000)  # small: the test stays fast
    monkeypatch.setattr(bits, "MAX_LINK_DRAWS", 1_000_000)
    sc = _with_faults(faults)
    report = simulate(sc)  # type: ignore[arg-type]
    from commwall.cluster import build_cluster

    with pytest.raises(ScenarioError, match=needle):
        analyse_faults(sc, report, build_cluster(sc.cluster))  # type: ignore[arg-type, attr-defined]


def test_failures_that_cut_an_endpoint_off_are_named_before_the_flow_engine_runs() -> None:
    """Cable 0 is endpoint 0's only access link: the flow engine could not route its flows, so
    the run says which failure did it instead of a routing error about rail-only fabrics."""
    from commwall.cluster import build_cluster
    from commwall.faults.analysis import cluster_with_scenario_failures
    from commwall.scenario import ScenarioError

    sc = parse_scenario(
        {
            "name": "cut",
            "cluster": {"preset": "dgx-h100", "nodes": 4},
            "job": {"model": "llama3-8b", "tp": 8, "global_batch": 32},
            "simulation": {"engine": "flow"},
            "faults": {"failures": {"cables": [0]}},
        }
    )
    with pytest.raises(ScenarioError, match=r"faults.failures: .*cut 1 endpoint\(s\) off .*: 0\)"):
        cluster_with_scenario_failures(sc, build_cluster(sc.cluster))
    analytic = sc.model_copy(
        update={"simulation": sc.simulation.model_copy(update={"engine": "analytic"})}
    )
    _, impact = cluster_with_scenario_failures(analytic, build_cluster(sc.cluster))
    assert impact is not None and impact.endpoints_disconnected == (0,)  # reported, not refused
