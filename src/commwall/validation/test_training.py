"""The published training runs: every row sourced and convertible, the conversions in closed
form, a cheap subset predicted within bounds that the old flat constant misses, and
docs/validation-training.md, the known compute bias and the regime accuracy current (slow: the
whole table takes ~6 minutes)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.errors import CommwallError
from commwall.scenario import parse_scenario
from commwall.validation.accuracy import accuracy_table, load_accuracy, regime_markdown
from commwall.validation.known_bias import COMPUTE_BIAS, summarise
from commwall.validation.training import (
    SCALES,
    TRAINING_GROUPS,
    TrainingRun,
    ValidationDataError,
    _group_key,
    load_training_runs,
    megatron_flops_per_token,
    select_training_runs,
    training_comparisons,
    training_markdown,
    training_report,
)

runner = CliRunner()
DOC = Path(__file__).resolve().parents[3] / "docs" / "validation-training.md"


def test_every_run_is_sourced_and_either_skipped_with_a_reason_or_a_scenario() -> None:
    runs = load_training_runs()
    assert len(runs) >= 40 and len({r.id for r in runs}) == len(runs)
    for r in runs:
        assert r.source.startswith("http") and r.quote, r.id
        if r.skip:
            continue
        parse_scenario(r.scenario(), r.id)  # a valid scenario
        per_node = r.cluster.get("gpus_per_node", 4 if r.preset.startswith("gb") else 8)
        assert r.n_gpus == r.nodes * per_node, r.id
        assert r.measured_step() > 0


def test_every_blackwell_run_names_the_cudnn_release_it_ran() -> None:
    """Blackwell's attention depends on the cuDNN release (job.cudnn), so every Blackwell row
    states its container's, with the reason in its assumptions; Hopper rows need none."""
    gpus = {"b200", "b300", "gb200", "gb300"}
    blackwell = [r for r in load_training_runs() if gpus & set(r.preset.split("-"))]
    assert len(blackwell) >= 80
    for r in blackwell:
        assert "cudnn" in r.job, r.id
        assert any(a.startswith(f"cudnn {r.job['cudnn']}:") for a in r.assumed), r.id


def test_measured_figures_become_step_times_as_the_source_counts() -> None:
    runs = {r.id: r for r in load_training_runs()}
    # Narayanan et al. SC'21 Table 1, 1.7B: 137 TFLOP/s per GPU on 32 GPUs, eq. 3 FLOPs
    r = runs["narayanan21-t1-gpt1p7b"]
    b, s, layer, h, v = 512, 2048, 24, 2304, 51200
    flops = 96 * b * s * layer * h * h * (1 + s / (6 * h) + v / (16 * layer * h))
    assert r.measured_step() == pytest.approx(flops / (137e12 * 32))
    # NeMo 24.07 Llama 2 7B FP8: 16,934 tokens/s per GPU on 8 GPUs, 128 x 4096 tokens a step
    assert runs["nemo2407-h100-fp8-llama2-7b-8gpu"].measured_step() == pytest.approx(
        128 * 4096 / (16934 * 8)
    )
    # Korthikanti et al. Table 5 gives the step itself
    assert runs["korthikanti22-t5-gpt3-175b-seqsel"].measured_step() == 13.75


def test_megatron_s_flops_give_the_throughput_its_log_prints() -> None:
    """Megatron-LM's log of MIT ORCD's B200 GPT 7B step (11,374.3 ms, 128 × 2048 tokens on one
    GPU) prints 989.0 TFLOP/s; the ``megatron`` count gives that figure, and the closed form
    12·B·s·l·h²·((2 + s/(2h)) + f/h + V/(2lh)) for this MHA, GeLU model."""
    run = {r.id: r for r in load_training_runs()}["mitorcd2607-b200-bf16-gpt7b-1gpu"]
    flops = run.step_flops("megatron")
    assert flops / 11.3743 / 1e12 == pytest.approx(989.0, abs=0.1)
    b, s, layers, h, f, v = 128, 2048, 36, 4096, 14336, 50432
    closed = 12 * b * s * layers * h * h * (2 + s / (2 * h) + f / h + v / (2 * layers * h))
    assert flops == pytest.approx(closed)


def test_megatron_s_flops_give_the_bridge_tables_own_teraflops() -> None:
    """Megatron-Bridge's performance tables print tokens/s/GPU and model TFLOP/s/GPU side by
    side, the second from Megatron's count: their ratio is the count per token. The
    ``megatron`` count gives it within 0.5 % (the tables' rounding) for every dense, MoE and MLA
    row quoted (the first figure of a "CS (MX)" cell), DeepSeek-V3's MTP module and Nemotron 3
    Nano's Mamba-2 layers included (but its 26.08 row, 1.3 % more) — and
    not for GPT-OSS, which the tables count otherwise: its MLP as not gated (0.79 of this
    count, 25.11-26.04), then its windowed layers' attention core over the window (0.95,
    26.06-); those rows keep their tokens/s."""
    checked = set()
    for run in load_training_runs():
        if not run.id.startswith("mbridge") or "tokens_per_s_per_gpu" not in run.measured:
            continue
        *_, tokens, teraflops = (c.strip() for c in run.quote.strip().strip("|").split("|"))
        per_token = float(teraflops.split()[0]) * 1e12 / float(tokens.split()[0])
        mtp = int(run.job.get("mtp_layers", 0))
        count = megatron_flops_per_token(run.spec, run.job["seq_len"], mtp)
        if "gpt-oss" in run.id:
            assert count > per_token * 1.04, run.id
            continue
        if run.id == "mbridge2608-gb300-mxfp8-nemotron3-nano-8gpu":
            # the 26.08 table divides by 1.3 % more than the count its 26.06.01 row and the
            # model's card (937.770 TFLOP/s at 42,094.107 tokens/s) divide by
            assert count == pytest.approx(per_token / 1.0127, rel=5e-3), run.id
            continue
        assert count == pytest.approx(per_token, rel=5e-3), run.id
        checked.add(run.spec.name)
    assert {"deepseek-v3", "qwen3-30b-a3b", "kimi-k2", "llama-3.1-405b"} <= checked
    assert "nemotron-3-nano-30b-a3b" in checked  # a hybrid: Megatron-LM's hybrid_flops


def test_the_memory_model_meets_the_measured_peaks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MIT ORCD's Megatron-LM sweep reports each run's peak memory (PyTorch's max allocated on
    rank 0; GPT 5B and 13B, BF16 and FP8, three recompute settings, 44 to 260 GiB): the memory
    model gives 90-102 % of every one. FP8 runs count the FP8 weight copy Transformer Engine
    keeps through the step (one byte a layer weight on Blackwell); without it their fully
    recomputed runs, where little else is held, fall to 83-88 %. Nemotron 3.5 Lightning's
    model card (8 GB200, BF16 gradients, 156.85 GiB): 97 %, where holding the optimizer
    step's fp32 gradient copy beside the activations gave 107 %."""
    from commwall import simulate

    runs = [r for r in load_training_runs() if "peak_memory_gib" in r.measured]
    assert len(runs) == 51

    def ratio(run: TrainingRun) -> float:
        return float(
            simulate(run.scenario()).memory.total / (run.measured["peak_memory_gib"] * 2**30)
        )

    ratios = {run.id: ratio(run) for run in runs}
    assert all(0.89 < r < 1.03 for r in ratios.values()), ratios
    assert 0.96 < statistics.median(ratios.values()) < 0.99
    monkeypatch.setattr("commwall.workload.simulate.cached_weight_bytes", lambda *a: 0.0)
    fp8_full = [r for r in runs if r.job["precision"] == "fp8" and r.job["recompute"] == "full"]
    assert len(fp8_full) == 12 and all(ratio(r) < 0.89 for r in fp8_full)


def test_an_unknown_flops_formula_raises_validation_data_error() -> None:
    run = load_training_runs()[0]
    allowed = "'palm'; allowed: narayanan, model, megatron"
    with pytest.raises(ValidationDataError, match=allowed) as info:
        run.step_flops("palm")
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


def test_a_cheap_subset_is_predicted_closer_than_the_flat_constant() -> None:
    ids = ("korthikanti22-t5-megatron-22b-full", "nemo2407-h100-fp8-llama2-7b-8gpu",
           "llmfoundry-a100-80-bf16-mpt7b-2k-8gpu-noac", "mbridge2511-h100-fp8cs-llama3-8b-8gpu")  # fmt: skip
    runs = tuple(r for r in load_training_runs() if r.id in ids)
    compared, skipped = training_comparisons(runs)
    assert not skipped and len(compared) == 4
    for c in compared:  # docs/validation-training.md: -4.5%, -2.9%, -6.3%, +4.8%
        assert -0.2 < c.error < 0.05, (c.run.id, c.error)
    assert sum(abs(c.error) for c in compared) < sum(abs(c.flat_error) for c in compared)
    # the reports summarise dev runs (seen while the model was built) apart from held-out ones
    assert TRAINING_GROUPS[0] == "by_role"
    assert {_group_key(c, "role") for c in compared} == {"dev"}
    # and group by job scale (GPUs), in order of scale, as well as by model size
    assert {_group_key(c, "scale") for c in compared} == {"1-8 GPUs"}
    assert {_group_key(c, "layers") for c in compared} == {"dense"}
    moe = {r.id: r for r in load_training_runs()}
    kinds = {
        _group_key(SimpleNamespace(run=moe[i]), "layers")  # type: ignore[arg-type]
        for i in (
            "mbridge2604-b200-mxfp8-qwen3-30b-a3b-8gpu",
            "mbridge2608-gb200-mxfp8-qwen3-30b-a3b-8gpu",
        )
    }
    assert kinds == {"MoE", "MoE, EP overlapped"}
    report = training_report(runs)
    assert list(report["by_scale"]) == ["1-8 GPUs"]
    assert report["by_scale"]["1-8 GPUs"]["model"]["n"] == 4
    labels = [_group_key(SimpleNamespace(run=SimpleNamespace(n_gpus=n)), "scale")  # type: ignore[arg-type]
              for n in (1, 8, 9, 64, 65, 512, 513, 4096, 4097, 100_000)]  # fmt: skip
    assert labels == [label for _, label in SCALES for _ in (0, 1)]


def test_nemo_launcher_runs_take_flash_attention_2_and_hold_across_sequence_length() -> None:
    # NeMo-Framework-Launcher 24.01-24.07 set NVTE_FUSED_ATTN: 0, so TE ran flash-attn (FA2):
    # every NeMo 24.03/24.07 row says so, and on those rates NeMo 24.03's long-sequence table
    # holds from 4K to 1M tokens, where cuDNN's rates leave the attention-bound end ~30 % fast.
    runs = [r for r in load_training_runs() if r.id.startswith(("nemo2403", "nemo2407"))]
    assert len(runs) == 21
    for r in runs:
        assert r.job["attention"] == "flash2", r.id
        assert any("NVTE_FUSED_ATTN: 0" in a for a in r.assumed), r.id
    ends = tuple(r for r in runs if r.id.endswith(("llama2-7b-4k", "llama2-7b-1024k-cp32")))
    compared, _ = training_comparisons(ends)
    assert len(compared) == 2
    for c in compared:  # docs/validation-training.md: -6.1 %, -2.6 %
        assert -0.08 < c.error < 0.0, (c.run.id, c.error)
    cudnn = tuple(replace(r, job={**r.job, "attention": "flash"}) for r in ends)
    long_end = max(training_comparisons(cudnn)[0], key=lambda c: c.run.job["seq_len"])
    assert long_end.error < -0.25


def test_mlperf_evaluation_steps_time_the_forward_apart_from_the_rest() -> None:
    """MLPerf v5.0 and v5.1 logs time evaluation steps (``validation_step_time``: one global
    batch's forwards) as well as training steps. On one-node runs the model's forward is as
    close as its step; on Cisco's 64 H100 over RoCE the forward is within 2 % while the step is
    20 % fast, so what the model misses there is after the forward (backward, gradient
    reduction, optimizer)."""
    runs = {r.id: r for r in load_training_runs()}
    timed = [r for r in runs.values() if r.measured_eval() is not None]
    assert len(timed) == 53 and all(r.id.startswith(("mlperf50", "mlperf51")) for r in timed)
    assert all(0 < r.measured_eval() < r.measured_step() for r in timed)  # type: ignore[operator]
    assert runs["mlperf51-gb300-llama31-8b-72gpu"].measured_eval() == 0.0401
    ids = ("mlperf51-b200-llama31-8b-8gpu-dell-xe9680l", "mlperf51-gb300-llama31-8b-72gpu",
           "mlperf51-h100-llama31-8b-64gpu-cisco")  # fmt: skip
    compared, _ = training_comparisons(tuple(runs[i] for i in ids))
    got = {c.run.id: c for c in compared}
    for one_node in ids[:2]:  # docs/validation-training.md: -0.4 % / -6.0 %, -1.2 % / -0.4 %
        assert abs(got[one_node].eval_error) < 0.03, got[one_node].eval_error  # type: ignore[arg-type]
    cisco = got[ids[2]]  # +1.4 % forward, -20.4 % step
    assert abs(cisco.eval_error) < 0.03 and cisco.error < -0.15  # type: ignore[arg-type]
    assert cisco.rest_error < cisco.error  # type: ignore[operator]  # the rest misses more
    report = training_report(tuple(runs[i] for i in ids))
    assert report["evaluation"]["forward"]["n"] == report["evaluation"]["rest"]["n"] == 3
    assert [r["rest_error"] for r in report["runs"]] == [got[i].rest_error for i in ids]
    text = training_markdown(report)
    assert "## Forward only: evaluation steps" in text and "| after the forward |" in text
    no_eval = training_report((runs["korthikanti22-t5-megatron-22b-full"],))
    assert no_eval["evaluation"]["forward"] == no_eval["evaluation"]["rest"] == {"n": 0}
    assert no_eval["runs"][0]["eval_error"] is no_eval["runs"][0]["rest_error"] is None
    assert "Forward only" not in training_markdown(no_eval)


def test_after_the_forward_is_the_step_less_its_forward_on_both_sides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 10 s step whose forwards take 3 s, predicted 9 s with 3.5 s of forward: the step is
    10 % fast, the forward 16.7 % slow, and the 7 s after it, predicted 5.5 s, 21.4 % fast —
    two errors cancelling, which the step alone hides. The command's table shows the column."""
    from commwall.commands.validate import _training
    from commwall.validation.training import TrainingComparison

    (run,) = [r for r in load_training_runs() if r.id == "mlperf51-gb200-llama31-8b-8gpu"]
    c = TrainingComparison(run, 10.0, 9.0, 9.0, {}, eval_measured=3.0, eval_predicted=3.5)
    assert c.error == pytest.approx(-0.1)
    assert c.eval_error == pytest.approx(0.5 / 3.0)
    assert c.rest_error == pytest.approx(5.5 / 7.0 - 1.0)
    assert TrainingComparison(run, 10.0, 9.0, 9.0, {}).rest_error is None
    _training(False, False, (run,))
    out = capsys.readouterr().out
    assert "after the forward" in out and "the step less its forwards" in out


def _refused(
    monkeypatch: pytest.MonkeyPatch,
    message: str,
    *,
    job: dict[str, Any] | None = None,
    measured: dict[str, Any] | None = None,
    **extra: object,
) -> None:
    """Loading a data file of one row ``x`` (a 1 s step unless ``measured``) with ``extra``
    fields raises :class:`ValidationDataError` matching ``message``."""
    import yaml

    row = {"id": "x", "source": "http://x", "quote": "q", "preset": "dgx-h100", "nodes": 1,
           "model": {}, "job": job or {}, "measured": measured or {"step_time_s": 1.0},
           **extra}  # fmt: skip
    text = yaml.safe_dump({"runs": [row]})
    monkeypatch.setattr(
        "commwall.validation.training.importlib.resources.files",
        lambda _: SimpleNamespace(joinpath=lambda _: SimpleNamespace(read_text=lambda _: text)),
    )
    load_training_runs.cache_clear()
    try:
        with pytest.raises(ValidationDataError, match=message):
            load_training_runs()
    finally:
        load_training_runs.cache_clear()


@pytest.mark.parametrize("evaluation", [1.0, 1.5])
def test_an_evaluation_step_not_shorter_than_the_step_is_refused(
    evaluation: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refused(monkeypatch, r"x: measured.eval_step_time_s .* not shorter than the step \(1 s\)",
             measured={"step_time_s": 1.0, "eval_step_time_s": evaluation})  # fmt: skip


@pytest.mark.parametrize("bad", ["fast", 0, -0.1, True, float("inf")])
def test_an_evaluation_step_that_is_not_a_positive_time_is_refused(
    bad: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refused(monkeypatch, r"eval_step_time_s.*allowed: a positive",
             measured={"step_time_s": 1.0, "eval_step_time_s": bad})  # fmt: skip


def test_a_run_the_model_cannot_build_is_listed_not_raised() -> None:
    run = next(r for r in load_training_runs() if r.id == "korthikanti22-t5-megatron-22b-full")
    broken = replace(run, job={**run.job, "tp": 3})
    compared, skipped = training_comparisons((broken,))
    assert not compared and "job.tp" in skipped[0][1]


def test_worker_processes_give_the_same_comparisons_in_the_same_order() -> None:
    runs = {r.id: r for r in load_training_runs()}
    small = runs["korthikanti22-t5-megatron-22b-full"]
    picked = (
        runs["korthikanti22-abstract-530b-2240gpu-seqsel"],  # skipped by the data file
        runs["mlm2024-h100-gpt-1p7b"],  # unstated micro-batches: priced three times
        replace(small, job={**small.job, "tp": 3}),  # the model cannot build it
        small,
    )
    alone = training_comparisons(picked)
    pooled = training_comparisons(picked, workers=2)
    assert [c.run.id for c in pooled[0]] == ["mlm2024-h100-gpt-1p7b", small.id]
    assert [(c.predicted, c.flat, c.alternatives, c.breakdown) for c in pooled[0]] == [
        (c.predicted, c.flat, c.alternatives, c.breakdown) for c in alone[0]
    ]
    assert [(r.id, why) for r, why in pooled[1]] == [(r.id, why) for r, why in alone[1]]
    assert [r.id for r, _ in pooled[1]] == [picked[0].id, small.id] and "job.tp" in pooled[1][1][1]


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_workers_must_be_a_whole_number_from_one(bad: object) -> None:
    with pytest.raises(ValueError, match=r"workers: .* is not allowed; allowed: an integer >= 1"):
        training_comparisons((), workers=bad)  # type: ignore[arg-type]


def test_the_command_takes_jobs_with_training_only() -> None:
    pick = ["validate", "--training", "--source", "aicr2605", "--json", "--jobs"]
    pooled, alone = runner.invoke(app, [*pick, "2"]), runner.invoke(app, [*pick, "1"])
    assert pooled.exit_code == alone.exit_code == 0, pooled.output + alone.output
    assert len(json.loads(pooled.stdout)["runs"]) == 2  # two runs: two workers
    assert json.loads(pooled.stdout) == json.loads(alone.stdout)
    for args, needle in (
        (["validate", "--jobs", "2"], "--training only"),
        (["validate", "--training", "--jobs", "0"], "--jobs"),
    ):
        bad = runner.invoke(app, args)
        assert bad.exit_code == 2 and needle in bad.output, (args, bad.output)


def test_the_default_jobs_are_the_cpus_at_most_four(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from commwall.validation import training

    for cpus, jobs in ((1, 1), (2, 2), (64, training.MAX_DEFAULT_JOBS)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert training.default_jobs() == jobs


def test_the_command_refuses_collective_filters() -> None:
    result = runner.invoke(app, ["validate", "--training", "--op", "all_reduce"])
    assert result.exit_code == 2 and "--training" in result.output


def test_runs_are_picked_by_source_prefix_and_role() -> None:
    mlperf = select_training_runs(source="mlperf")
    assert len(mlperf) == 69 and all(r.id.startswith("mlperf") for r in mlperf)
    assert {r.id.split("-")[0] for r in mlperf} == {
        "mlperf31",
        "mlperf40",
        "mlperf41",
        "mlperf50",
        "mlperf51",
    }
    assert len(select_training_runs(source="mlperf50")) == 12
    held = select_training_runs(role="held_out", source="nemo24")
    assert held and all(r.role == "held_out" and r.id.startswith("nemo2407") for r in held)
    assert select_training_runs() == load_training_runs()
    with pytest.raises(ValueError, match=r"--source: 'mlperf99' starts no source.*mlperf51"):
        select_training_runs(source="mlperf99")
    with pytest.raises(ValueError, match="--source: '' starts no source"):
        select_training_runs(source="")
    with pytest.raises(ValueError, match="--role: 'test' is not allowed; allowed: dev, held_out"):
        select_training_runs(role="test")
    with pytest.raises(ValueError, match="--role dev --source mlperf: no bundled run is both"):
        select_training_runs(role="dev", source="mlperf")


def test_the_command_runs_only_the_picked_runs() -> None:
    result = runner.invoke(app, ["validate", "--training", "--source", "mbridge260201", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["id"] for r in data["runs"]] == [
        r.id for r in select_training_runs(source="mbridge260201")
    ]
    assert data["overall"]["model"]["n"] == len(data["runs"]) == 1
    text = runner.invoke(app, ["validate", "--training", "--source", "mbridge260201"]).output
    assert "By regime: what `commwall run` quotes under a step" in text
    (cell,) = [c for c in accuracy_table(data) if c.family == c.scale == "all"]
    assert cell.runs == 1 and f"{cell.median:+.1%}" in text
    for args, needle in (
        (["validate", "--source", "mlperf"], "--training only"),
        (["validate", "--training", "--source", "mlperf", "--markdown"], "whole table"),
        (["validate", "--training", "--source", "nope"], "sources: aicr2605"),
        (["validate", "--training", "--role", "test"], "allowed: dev, held_out"),
    ):
        bad = runner.invoke(app, args)
        assert bad.exit_code == 2 and needle in bad.output, (args, bad.output)


@pytest.fixture(scope="module")
def full_report() -> dict[str, Any]:
    """The whole table, computed once for the slow tests below, on two worker processes (the
    serial table's figures: the docs it must match were written in one process)."""
    return training_report(workers=2)


@pytest.mark.slow
def test_docs_validation_training_md_is_current(full_report: dict[str, Any]) -> None:
    """Regenerate with ``commwall validate --training --markdown > docs/validation-training.md``."""
    assert DOC.read_text(encoding="utf-8") == training_markdown(
        full_report, regime_markdown(full_report)
    )


@pytest.mark.slow
def test_the_known_compute_bias_is_what_the_table_says(full_report: dict[str, Any]) -> None:
    """``commwall run``'s notes (commwall.validation.known_bias) state the dense runs' errors as
    the table has them, and no GPU family without one misses by more than 10 % on its median:
    update COMPUTE_BIAS when this fails."""
    runs = {r.id: r for r in load_training_runs()}
    # the dense runs of each GPU family noted
    for bias in COMPUTE_BIAS:
        errors = [
            row["error"]
            for row in full_report["runs"]
            if runs[row["id"]].preset in bias.presets and not runs[row["id"]].spec.is_moe
        ]
        got = summarise(errors, bias)
        assert (got.runs, got.within) == (bias.runs, bias.within)
        assert (got.low, got.high, got.median) == pytest.approx(
            (bias.low, bias.high, bias.median), abs=0.005
        )
    # and a family with no entry (five dense runs or more on one preset) has none to report
    noted = {preset for bias in COMPUTE_BIAS for preset in bias.presets}
    families: dict[str, list[float]] = {}
    for row in full_report["runs"]:
        run = runs[row["id"]]
        if run.spec.n_experts == 1 and run.preset not in noted:
            families.setdefault(run.preset, []).append(row["error"])
    for preset, errors in families.items():
        if len(errors) >= 5:
            assert abs(statistics.median(errors)) <= 0.10, (preset, statistics.median(errors))


@pytest.mark.slow
def test_the_bundled_regime_accuracy_is_what_the_table_says(full_report: dict[str, Any]) -> None:
    """``commwall run``'s accuracy line (commwall.validation.accuracy) quotes the table as it
    is: regenerate with ``python -m commwall.validation.accuracy`` when this fails."""
    assert accuracy_table(full_report) == list(load_accuracy())


def test_a_setting_the_source_leaves_unstated_is_priced_at_each_value_it_allows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Megatron-LM's H100 table states no micro-batch: its 1.7B row takes 1 and lists 2 and 4
    as ``unstated``; each is the step a scenario with that micro-batch prices, the taken one
    the row's own error, and the report, its markdown and the command show them all."""
    from commwall.commands.validate import _training
    from commwall.workload.simulate import simulate

    (run,) = [r for r in load_training_runs() if r.id == "mlm2024-h100-gpt-1p7b"]
    assert run.unstated == {"micro_batch": (1, 2, 4)} and run.job["micro_batch"] == 1
    (c,), _ = training_comparisons((run,))
    assert [(n, v) for n, v, _ in c.alternatives] == [("micro_batch", 2), ("micro_batch", 4)]
    direct = simulate(parse_scenario(run.scenario(micro_batch=4), run.id)).step_time
    assert c.alternatives[1][2] == direct
    (errors,) = c.unstated_errors().values()
    assert [v for v, _ in errors] == [1, 2, 4] and errors[0][1] == c.error
    assert errors[2][1] == pytest.approx(direct / c.measured - 1.0)
    report = training_report((run,))
    assert report["runs"][0]["unstated"] == [
        {"setting": "micro_batch", "taken": 1, "errors": [list(e) for e in errors]}
    ]
    text = training_markdown(report)
    assert "## Settings the source leaves unstated" in text
    span = "yes" if min(e for _, e in errors) <= 0 <= max(e for _, e in errors) else "no"
    row = f"| mlm2024-h100-gpt-1p7b | `micro_batch` | 1 | 1: {errors[0][1]:+.1%}, 2: "
    assert row in text and text.split(row)[1].split("\n")[0].endswith(f"| {span} |")
    plain = training_report((run_without_unstated := replace(run, unstated={}),))
    assert plain["runs"][0]["unstated"] == []
    assert "## Settings the source leaves unstated" not in training_markdown(plain)
    assert training_comparisons((run_without_unstated,))[0][0].alternatives == ()
    _training(False, False, (run,))
    assert "Settings the source leaves unstated" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("unstated", "message"),
    [
        ([1, 2], r"x: unstated \[1, 2\]; allowed: a mapping"),
        ({}, r"x: unstated \{\}; allowed: a mapping"),
        ({"tp": [1, 2]}, r"x: unstated.tp: it changes the GPUs or the tokens.*allowed: any job "
         r"setting but cp, dp, ep, global_batch, pp, seq_len, tp"),
        ({"recompute": ["none", "full"]}, r"x: unstated.recompute: the row's job sets no"),
        ({"micro_batch": [1]}, r"x: unstated.micro_batch \[1\]; allowed: a list of two or more"),
        ({"micro_batch": [1, 1]}, r"unstated.micro_batch \[1, 1\]; allowed: a list of two"),
        ({"micro_batch": [[1], [2]]}, r"unstated.micro_batch \[\[1\], \[2\]\]; allowed"),
        ({"micro_batch": "1, 2"}, r"unstated.micro_batch '1, 2'; allowed"),
        ({"micro_batch": [2, 4]}, r"unstated.micro_batch \[2, 4\] leaves out the job's own "
         r"micro_batch 1"),
        ({"micro_batch": [True, 2]}, r"\[True, 2\] leaves out the job's own micro_batch 1"),
    ],
)  # fmt: skip
def test_an_unstated_entry_the_report_cannot_price_is_refused(
    unstated: object, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refused(monkeypatch, message, job={"micro_batch": 1}, unstated=unstated)
