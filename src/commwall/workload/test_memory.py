"""Tests for the per-GPU memory model: ZeRO closed forms, Korthikanti activations, fit checks."""

from __future__ import annotations

import dataclasses
import doctest
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.workload import memory
from commwall.workload.memory import (
    LayerShape,
    MemoryBreakdown,
    MemoryModelError,
    activation_bytes_per_layer,
    adam_state,
    memory_per_gpu,
    model_state_bytes,
    optimizer_bytes_per_param,
    params_per_gpu,
)
from commwall.workload.models import get_model

H100_HBM = 80e9


# ---------------------------------------------------------------- ZeRO (Rajbhandari et al. SC'20)
@pytest.mark.parametrize(
    ("stage", "paper_gb"),
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],  # Fig. 1: Ψ = 7.5B, N_d = 64, K = 12
)
def test_zero_paper_figure_1(stage: int, paper_gb: float) -> None:
    w, g, o = model_state_bytes(7.5e9, dp=64, zero_stage=stage, optimizer_bytes=12)
    assert (w + g + o) / 1e9 == pytest.approx(paper_gb, rel=0.02)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_closed_forms(stage: int) -> None:
    psi, nd, k = 1.0e9, 16, 12
    closed = {
        0: (2 + 2 + k) * psi,
        1: 4 * psi + k * psi / nd,
        2: 2 * psi + (2 + k) * psi / nd,
        3: (2 + 2 + k) * psi / nd,
    }[stage]
    assert sum(model_state_bytes(psi, dp=nd, zero_stage=stage)) == pytest.approx(closed)


def test_optimizer_bytes() -> None:
    assert optimizer_bytes_per_param("adam") == 12
    assert optimizer_bytes_per_param("adamw", master_weights=False) == 8
    assert optimizer_bytes_per_param("sgd") == 8


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_memory_per_gpu_model_states_match_closed_form(stage: int) -> None:
    m = get_model("llama3-8b")
    kw: dict[str, Any] = {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "seq_len": 128}
    got = memory_per_gpu(m, zero_stage=stage, grad_bytes=4, **kw)
    w, g, o = model_state_bytes(m.total_params(), dp=8, zero_stage=stage, grad_bytes=4)
    assert (got.weights, got.gradients, got.optimizer) == pytest.approx((w, g, o))
    assert got.total == pytest.approx(w + g + o + got.activations)


@pytest.mark.parametrize(
    ("param_bytes", "grad_bytes", "whole", "fixed", "sharded"),
    [(2, 2, 20, 4, 16), (2, 4, 18, 6, 12), (4, 4, 16, 8, 8)],
)
def test_model_states_match_megatrons_distributed_optimizer_table(
    param_bytes: int, grad_bytes: int, whole: int, fixed: int, sharded: int
) -> None:
    """Megatron-LM docs/user-guide/features/dist_optimizer.md: bytes a parameter for fp16/fp16,
    bf16/fp32 and fp32/fp32 — 20, 18, 16 without the distributed optimizer, ``fixed +
    sharded/d`` with it (ZeRO-1 over d). With 16-bit gradients 4 of them (sharded: 4/d) are the
    optimizer step's fp32 copy of the gradients, which Megatron drops in the next step's
    zero_grad: the step's peak holds it or the activations, the larger."""
    m = get_model("llama3-8b")
    n, d = m.total_params(), 8
    kw: dict[str, Any] = {"tp": 1, "pp": 1, "dp": d, "micro_batch": 1, "seq_len": 128}
    kw.update(param_bytes=param_bytes, grad_bytes=grad_bytes)
    copy = 4 if grad_bytes < 4 else 0
    for stage, expected, shard in ((0, whole, 1), (1, fixed + sharded / d, d)):
        got = memory_per_gpu(m, zero_stage=stage, **kw)
        states = got.weights + got.gradients + got.optimizer
        assert states + got.activations == pytest.approx(
            (expected - copy / shard) * n + max(got.activations, copy / shard * n)
        )
        if copy:  # 128 tokens' activations weigh less than the copy: the table's bytes
            assert states + got.activations == pytest.approx(expected * n)
            long = memory_per_gpu(m, zero_stage=stage, **{**kw, "seq_len": 65536})
            assert long.activations > copy / shard * n  # the copy is gone by the forward
            assert long.total == pytest.approx((expected - copy / shard) * n + long.activations)


# ---------------------------------------------------------------- Korthikanti et al. Table 2
S, B, H, A, T = 2048, 1, 12288, 96, 8  # GPT-3, as in the paper's §5 (5as/h = 80)


def _act(**kw: Any) -> float:
    args: dict[str, Any] = {"seq_len": S, "micro_batch": B, "hidden": H, "n_heads": A, "tp": T}
    args.update(kw)
    return activation_bytes_per_layer(**args)


def test_korthikanti_table2_rows() -> None:
    sbh = S * B * H
    assert 5 * A * S / H == 80
    assert _act(tp=1, recompute="none") == pytest.approx(sbh * (34 + 80))
    assert _act(recompute="none", sequence_parallel=False) == pytest.approx(
        sbh * (10 + 24 / T + 80 / T)
    )
    assert _act(recompute="none") == pytest.approx(sbh / T * (34 + 80))
    assert _act(recompute="selective", sequence_parallel=False) == pytest.approx(
        sbh * (10 + 24 / T)
    )
    assert _act(recompute="selective") == pytest.approx(34 * sbh / T)
    assert _act(recompute="full") == pytest.approx(2 * sbh)


def test_selective_recompute_saves_70_percent_for_gpt3() -> None:
    # Korthikanti et al. §5: "we can save 70% ... of the required memory for activations for GPT-3"
    saving = 1 - _act(recompute="selective") / _act(recompute="none")
    assert saving == pytest.approx(0.70, abs=0.01)


def test_sp_and_no_sp_coincide_at_tp1() -> None:
    for r in ("none", "selective", "full"):
        assert _act(tp=1, recompute=r) == _act(tp=1, recompute=r, sequence_parallel=False)


def test_activation_per_layer_value_for_llama70b() -> None:
    # 34·s·b·h/t, s = 8192, h = 8192, t = 8: 285,212,672 bytes
    got = activation_bytes_per_layer(seq_len=8192, micro_batch=1, hidden=8192, n_heads=64, tp=8)
    assert got == 34 * 8192 * 8192 / 8 == 285_212_672


def test_first_stage_keeps_pp_microbatches() -> None:
    m = get_model("llama3-70b")
    kw: dict[str, Any] = {"tp": 8, "dp": 1, "micro_batch": 1, "seq_len": 8192}
    per_layer = activation_bytes_per_layer(
        seq_len=8192, micro_batch=1, hidden=8192, n_heads=64, tp=8, layer=LayerShape.of(m)
    )
    pp4 = memory_per_gpu(m, pp=4, **kw)
    # first stage: 20 layers x 4 in flight = L layers' worth (Korthikanti eq. 5), + dropout mask
    assert pp4.activations == pytest.approx(80 * per_layer + 4 * 8192 * 8192 / 8)
    one = memory_per_gpu(m, pp=4, inflight_microbatches=1, **kw)
    assert one.activations < pp4.activations


def test_last_stage_logits_count_for_pp1() -> None:
    m = get_model("llama3-8b")
    got = memory_per_gpu(m, tp=1, pp=1, dp=1, micro_batch=1, seq_len=4096)
    per_layer = activation_bytes_per_layer(
        seq_len=4096, micro_batch=1, hidden=4096, n_heads=32, layer=LayerShape.of(m)
    )
    sbh = 4096 * 4096
    expected = 32 * per_layer + sbh + 4 * sbh + 4 * 4096 * m.vocab  # §4.3 extra terms
    assert got.activations == pytest.approx(expected)


# ---------------------------------------------------------------- weights per GPU
def test_params_per_gpu_unsplit_is_total() -> None:
    for name in ("llama3-8b", "gpt3-175b", "mixtral-8x7b"):
        m = get_model(name)
        assert params_per_gpu(m) == pytest.approx(m.total_params())


def test_tp_splits_weights() -> None:
    m = get_model("llama3-70b")
    one, eight = params_per_gpu(m, tp=1), params_per_gpu(m, tp=8)
    assert one / eight == pytest.approx(8, rel=0.01)  # norms replicated: slightly less than 8


def test_uneven_pipeline_uses_ceil() -> None:
    m = get_model("llama3-405b")  # 126 layers over 8 stages: worst stage holds 16
    got = params_per_gpu(m, pp=8)
    expected = 16 * m.layer_params() + m.vocab * m.hidden + m.final_norm_params()
    assert got == pytest.approx(expected)


def test_expert_parallel_divides_experts() -> None:
    m = get_model("mixtral-8x7b")
    dense = m.total_params() - m.n_layers * m.n_experts * m.mlp_params_per_layer()
    expert = m.n_layers * m.n_experts * m.mlp_params_per_layer()
    assert params_per_gpu(m, ep=8) == pytest.approx(dense + expert / 8)


def test_ep_shards_optimizer_over_expert_dp_group() -> None:
    m = get_model("mixtral-8x7b")
    kw: dict[str, Any] = {"tp": 1, "pp": 1, "micro_batch": 1, "seq_len": 1024, "zero_stage": 1}
    got = memory_per_gpu(m, dp=16, ep=8, grad_bytes=4, **kw)
    expert = m.n_layers * m.mlp_params_per_layer()  # one expert per layer per GPU
    dense = m.total_params() - m.n_layers * m.n_experts * m.mlp_params_per_layer()
    assert got.optimizer == pytest.approx(12 * (dense / 16 + expert / 2))


# ---------------------------------------------------------------- fit checks
def test_llama3_70b_fits_h100_with_tp8_pp4_dp32() -> None:
    mem = memory_per_gpu(get_model("llama3-70b"), tp=8, pp=4, dp=32, micro_batch=1, seq_len=8192)
    assert mem.fits(H100_HBM)
    assert 40e9 < mem.total < 72e9


def test_llama3_405b_unsharded_does_not_fit() -> None:
    mem = memory_per_gpu(get_model("llama3-405b"), tp=1, pp=1, dp=1, micro_batch=1, seq_len=8192)
    assert not mem.fits(H100_HBM)
    assert mem.weights == pytest.approx(2 * get_model("llama3-405b").total_params())


def test_fits_respects_reserve() -> None:
    mem = MemoryBreakdown(0.0, 0.0, 0.0, 75e9, 75e9)
    assert mem.fits(80e9, reserve_fraction=0.0)
    assert not mem.fits(80e9)  # 72 GB usable
    with pytest.raises(ValueError, match="reserve_fraction"):
        mem.fits(80e9, reserve_fraction=1.0)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4, 5, 8]),
    st.sampled_from([1, 8, 64]),
    st.sampled_from(["none", "selective", "full"]),
)
def test_property_more_sharding_never_costs_memory(tp: int, pp: int, dp: int, r: str) -> None:
    m = get_model("llama3-70b")
    kw: dict[str, Any] = {"tp": tp, "pp": pp, "dp": dp, "micro_batch": 1, "seq_len": 2048}
    totals = [memory_per_gpu(m, zero_stage=z, recompute=r, **kw).total for z in range(4)]
    assert totals == sorted(totals, reverse=True)
    wider = memory_per_gpu(m, zero_stage=0, recompute=r, **{**kw, "tp": tp * 2})
    assert wider.weights < memory_per_gpu(m, zero_stage=0, recompute=r, **kw).weights


# ---------------------------------------------------------------- argument errors
BASE: dict[str, Any] = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": 1, "seq_len": 128}


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"tp": 0}, ["tp: 0 is not allowed", ">= 1"]),
        ({"tp": 3}, ["tp=3", "n_heads=32"]),
        ({"pp": 33}, ["pp=33", "n_layers=32"]),
        ({"dp": 0}, ["dp: 0 is not allowed"]),
        ({"zero_stage": 4}, ["zero_stage: 4 is not allowed", "a whole number 0..3"]),
        ({"recompute": "some"}, ["recompute: 'some' is not allowed", "none, selective, full"]),
        ({"optimizer": "lion"}, ["optimizer: 'lion' is not allowed", "adam", "sgd"]),
        ({"ep": 2}, ["ep=2", "n_experts=1"]),
        ({"micro_batch": 0}, ["micro_batch: 0 is not allowed"]),
        ({"inflight_microbatches": 0}, ["inflight_microbatches: 0 is out of range"]),
        ({"param_bytes": 0}, ["param_bytes: 0 is not allowed"]),
    ],
)
def test_bad_arguments_name_argument_value_and_allowed(
    change: dict[str, Any], needles: list[str]
) -> None:
    with pytest.raises(MemoryModelError) as info:
        memory_per_gpu(get_model("llama3-8b"), **{**BASE, **change})
    for needle in needles:
        assert needle in str(info.value)


def test_ep_times_expert_tp_must_divide_tp_times_dp() -> None:
    """Megatron-Core's expert grid folds over the attention's tp x dp ranks."""
    with pytest.raises(ValueError, match=r"ep=4 is invalid: ep x expert_tp = 4 x 1 must divide"):
        memory_per_gpu(get_model("mixtral-8x7b"), **{**BASE, "tp": 1, "dp": 2, "ep": 4})
    mixtral = get_model("mixtral-8x7b")
    # on tp 2 x dp 2: ep 4 of whole experts (expert_tp 1) holds 2 experts a GPU, as ep 2 of
    # half experts (expert_tp 2, the default) does; ep 2 of whole experts holds twice that
    grid = {**BASE, "tp": 2, "dp": 2}
    folded = memory_per_gpu(mixtral, **{**grid, "ep": 4, "expert_tp": 1})
    halves = memory_per_gpu(mixtral, **{**grid, "ep": 2})
    wholes = memory_per_gpu(mixtral, **{**grid, "ep": 2, "expert_tp": 1})
    assert folded.weights == pytest.approx(halves.weights)
    assert wholes.weights > folded.weights


def test_breakdown_is_frozen() -> None:
    mem = memory_per_gpu(get_model("llama3-8b"), **BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mem.total = 0.0  # type: ignore[misc]


def test_module_doctests() -> None:
    assert doctest.testmod(memory).failed == 0


def test_flash_attention_keeps_softmax_statistics_not_scores() -> None:
    """Dao et al. 2022: FlashAttention never stores the s² scores, only one fp32 statistic per
    query and head; so without recomputation a layer keeps 34·sbh/t plus 4·b·s·a/t bytes."""
    from commwall.workload.memory import activation_bytes_per_layer

    s, b, h, a, t = 8192, 1, 8192, 64, 8
    kwargs = {"seq_len": s, "micro_batch": b, "hidden": h, "n_heads": a, "tp": t,
              "sequence_parallel": True, "recompute": "none"}  # fmt: skip
    flash = activation_bytes_per_layer(**kwargs, flash_attention=True)  # type: ignore[arg-type]
    assert flash == pytest.approx(34 * s * b * h / t + 4 * b * s * a / t)
    unfused = activation_bytes_per_layer(**kwargs)  # type: ignore[arg-type]
    assert unfused == pytest.approx(s * b * h / t * (34 + 5 * a * s / h))
    assert unfused > 10 * flash


# ---------------------------------------------------------------- the model's own layer
def _per_layer(model: str, **kw: Any) -> float:
    m = get_model(model)
    args: dict[str, Any] = {"seq_len": 4096, "micro_batch": 2, "hidden": m.hidden,
                            "n_heads": m.n_heads, "recompute": "selective"}  # fmt: skip
    return activation_bytes_per_layer(**{**args, **kw}, layer=LayerShape.of(m))


@pytest.mark.parametrize("sp", [True, False])
def test_gpt_layer_shape_reproduces_korthikanti_constants(sp: bool) -> None:
    """GPT-3 (q = kv = h, f = 4h, dropout): the tensor-by-tensor count is Table 2's."""
    m = get_model("gpt3-175b")
    sbh = 4096 * 2 * m.hidden
    got = _per_layer("gpt3-175b", tp=8, sequence_parallel=sp)
    assert got == pytest.approx(sbh * (34 / 8 if sp else 10 + 24 / 8), rel=1e-12)


def test_llama_layer_counts_gqa_swiglu_and_no_dropout() -> None:
    """Llama 3 70B by hand: norms 4h, QKV and MLP inputs 2h each, Q/K/V/attention output
    2q + 2kv + 2kv + 2q, SwiGLU gate and up 4f, down input 2f; no dropout masks."""
    m = get_model("llama3-70b")
    h, q, kv, f = m.hidden, m.q_dim, m.kv_dim, m.ffn_hidden
    per_token = 8 * h + 4 * q + 4 * kv + 6 * f
    assert _per_layer("llama3-70b", tp=8) == pytest.approx(4096 * 2 * per_token / 8, rel=1e-12)
    unfused = _per_layer("llama3-70b", tp=8, recompute="none")
    # no dropout: the scores keep only the softmax output, 2·a·s bytes per token
    assert unfused - _per_layer("llama3-70b", tp=8) == pytest.approx(
        4096 * 2 * 2 * m.n_heads * 4096 / 8, rel=1e-12
    )


def test_fp8_saves_gemm_inputs_in_one_byte() -> None:
    """Transformer Engine keeps the QKV, MLP-up and MLP-down inputs in FP8 and adds an FP8
    copy of the attention output: −(2h + f − q) bytes per token."""
    m = get_model("llama3-8b")
    diff = _per_layer("llama3-8b", tp=4) - _per_layer("llama3-8b", tp=4, fp8=True)
    assert diff == pytest.approx(4096 * 2 * (2 * m.hidden + m.ffn_hidden - m.q_dim) / 4)


def test_moe_layer_counts_routed_copies_and_experts() -> None:
    m = get_model("mixtral-8x7b")
    h, q, kv, k, e = m.hidden, m.q_dim, m.kv_dim, m.top_k, m.expert_ffn
    per_token = 8 * h + 4 * q + 4 * kv + k * (2 * h + 6 * e)
    assert _per_layer("mixtral-8x7b", tp=2) == pytest.approx(4096 * 2 * per_token / 2)


def test_query_and_key_norms_keep_their_inputs() -> None:
    """Qwen3 by hand: as Llama's layer plus the q/k norms' 16-bit inputs, 2q + 2kv a token."""
    m = get_model("qwen3-8b")
    h, q, kv, f = m.hidden, m.q_dim, m.kv_dim, m.ffn_hidden
    per_token = 8 * h + 4 * q + 4 * kv + 6 * f + 2 * (q + kv)
    assert _per_layer("qwen3-8b", tp=4) == pytest.approx(4096 * 2 * per_token / 4, rel=1e-12)


def test_published_fp8_run_fits_as_it_ran() -> None:
    """Megatron-Bridge ran Llama 3 70B in FP8 on 64 H100 (TP 4, PP 8, VP 5, no recompute);
    with 34·sbh/t and 16-bit saved inputs the model said it needed 81 GB. Its recipe keeps the
    weights in FP8 (fp8_param_gather) and its performance script reduces gradients in bf16
    (grad_reduce_in_fp32 False): 1 and 2 bytes a parameter, and the optimizer steps on an fp32
    copy of its gradient shard (Megatron-LM docs/user-guide/features/dist_optimizer.md: 16-bit
    gradients take 4 + 16/d bytes with 16-bit weights)."""
    from commwall.scenario import parse_scenario
    from commwall.validation.training import load_training_runs
    from commwall.workload.simulate import simulate

    run = next(r for r in load_training_runs() if r.id == "mbridge2511-h100-fp8cs-llama3-70b-64gpu")
    report = simulate(parse_scenario(run.scenario(), run.id))
    assert report.fits_in_memory
    assert report.memory.gradients == pytest.approx(2 * report.memory.weights, rel=1e-12)
    assert report.memory.total < 76e9


def test_transformer_engine_s_weight_copies_by_recipe_and_gpu() -> None:
    """TE keeps each layer weight's quantized copies through the step: per-tensor FP8 one byte
    on Blackwell (any operand layout) and two on Hopper (row-wise and transposed); MXFP8 and
    NVFP4 a row-wise and a column-wise copy with their block scales; none for 16-bit weights or
    FP8 parameters (``fp8_param_gather``: the parameter is the copy)."""
    from commwall.workload.compute import cached_weight_bytes

    assert cached_weight_bytes("b300", "fp8", "tensorwise", False) == 1.0
    assert cached_weight_bytes("h200", "fp8", "tensorwise", False) == 2.0
    assert cached_weight_bytes("gb200", "fp8", "mxfp8", False) == 2 * (1 + 1 / 32)
    assert cached_weight_bytes("b200", "fp4", "delayed", False) == 2 * (0.5 + 1 / 16)
    assert cached_weight_bytes("h100-sxm", "fp8", "delayed", True) == 0.0
    assert cached_weight_bytes("b200", "bf16", "delayed", False) == 0.0


# ---------------------------------------------------------------- dense layers, MLA, recompute
def test_gemma_s_extra_norms_keep_their_inputs_and_weights() -> None:
    """Norms after the attention and the MLP (Gemma 2/3) save their two inputs, 2h bytes each
    per token outside the TP split, and hold two more norm weights a layer (replicated)."""
    m = get_model("llama3-8b")
    g = dataclasses.replace(m, sandwich_norm=True)
    base = LayerShape.of(m).per_hidden(4096)
    unsplit, split = LayerShape.of(g).per_hidden(4096)
    assert (unsplit - base[0], split - base[1]) == (4.0, 0.0)
    plain = memory._stage_params(m, tp=2, pp=1, ep=1, first=True)
    gemma = memory._stage_params(g, tp=2, pp=1, ep=1, first=True)
    assert gemma.dense - plain.dense == 32 * 2 * 4096 and gemma.linear == plain.linear
    assert g.total_params() - m.total_params() == 32 * 2 * 4096


def test_interleaved_stages_count_the_dense_and_moe_layers_they_hold() -> None:
    """Llama 4 Maverick over 4 stages of 12 layers: each holds 6 dense and 6 MoE layers; over
    16 stages of 3 the first holds layers 0-2 (two dense, one MoE), the last 45-47 (one
    dense, two MoE)."""
    m = get_model("llama4-maverick")
    assert memory.params_per_gpu(m) == m.total_params()
    dense, moe = m.dense_layer_params(), m.layer_params()
    table = m.vocab * m.hidden
    for first, held in ((True, table), (False, table + m.hidden)):
        stage = memory._stage_params(m, tp=1, pp=4, ep=1, first=first)
        assert stage.dense + stage.expert == 6 * dense + 6 * moe + held
    first = memory._stage_params(m, tp=1, pp=16, ep=1, first=True)
    last = memory._stage_params(m, tp=1, pp=16, ep=1, first=False)
    assert first.dense + first.expert == 2 * dense + moe + table
    assert last.dense + last.expert == dense + 2 * moe + table + m.hidden


def test_deepseek_v3_stages_hold_their_own_kinds_of_layer() -> None:
    """The first stage holds the 3 dense layers (Megatron's layout puts them first), the last
    only MoE layers; MLA's down projections and latent norms are whole on every TP rank."""
    m = get_model("deepseek-v3")
    assert memory.params_per_gpu(m) == m.total_params()
    first = memory._stage_params(m, tp=1, pp=4, ep=1, first=True)
    last = memory._stage_params(m, tp=1, pp=4, ep=1, first=False)
    table = m.vocab * m.hidden
    assert first.dense + first.expert == 3 * m.dense_layer_params() + 13 * m.layer_params() + table
    assert last.dense + last.expert == 16 * m.layer_params() + table + m.hidden
    whole = 7168 * 1536 + 7168 * 576 + 1536 + 512  # down projections and latent norms
    split = memory._stage_params(m, tp=8, pp=61, ep=1, first=False)
    attention = (m.attention_params_per_layer() - whole) / 8 + whole
    shared = 3 * 7168 * 2048 / 8
    experts = 256 * 3 * 7168 * 2048 / 8
    assert split.dense + split.expert == pytest.approx(
        attention + shared + experts + 2 * 7168 + 7168 * 256 + table / 8 + 7168
    )


@pytest.mark.parametrize(
    ("modules", "saved"),
    [(("mla_up_proj",), 2 * 128 * (192 + 192 + 128)),  # Q, K and V, 16-bit
     (("moe_act",), 8 * 2 * 2048),  # the routed experts' activation outputs
     (("layernorm",), 2 * 2 * 7168),  # the QKV and MLP inputs
     (("shared_experts",), (2 * 2 + 2) * 2048),  # the shared expert's MLP tensors
     (("moe",), 8 * 2 * 7168 + (2 * 2 + 2) * (8 * 2048 + 2048))],  # routed copies, experts
)  # fmt: skip
def test_recompute_modules_drop_what_they_recompute(modules: tuple[str, ...], saved: int) -> None:
    """Bytes a token of one DeepSeek-V3 MoE layer no longer keeps (t = 1, b = 1, s = 1)."""
    moe = get_model("deepseek-v3").layer_kind(60)
    shape = LayerShape.of(moe)

    def kept(mods: tuple[str, ...]) -> float:
        return memory.activation_bytes_per_layer(
            seq_len=1, micro_batch=1, hidden=7168, n_heads=128, tp=1, recompute="selective",
            flash_attention=True, layer=shape, recompute_modules=mods,
        )  # fmt: skip

    scores = 4.0 * 128  # the attention's softmax statistics: kept unless core_attn is recomputed
    assert kept(("core_attn",)) + scores - kept(modules) == pytest.approx(saved)


def test_per_op_checkpointing_keeps_every_second_matmul_output() -> None:
    """Llama 3 8B under torchtitan's per-op policy, per token, 16-bit: the layer input, wq's
    and wv's outputs, the attention output and its fp32 softmax statistics, w1's output and
    w2's (the fourth kept product); with TP and sequence parallelism the two reduce-scatters'
    outputs too, and the input on 1/t of the tokens."""
    shape = LayerShape.of(get_model("llama3-8b"))
    h, q, kv, f, a = 4096, 4096, 1024, 14336, 32

    def kept(tp: int, sp: bool = True) -> float:
        return memory.activation_bytes_per_layer(
            seq_len=1, micro_batch=1, hidden=h, n_heads=a, tp=tp, recompute="selective_op",
            flash_attention=True, layer=shape, sequence_parallel=sp,
        )  # fmt: skip

    assert kept(1) == 2 * h + 2 * (q + kv + q) + 4 * a + 2 * f + 2 * h
    assert kept(4) == 2 * h / 4 + 2 * 2 * h / 4 + (2 * (q + kv + q) + 4 * a + 2 * f) / 4 + 2 * h
    assert kept(4, sp=False) == 2 * h + (2 * (q + kv + q) + 4 * a + 2 * f) / 4 + 2 * h
    # between the attention core's recompute (Megatron's default) and a whole layer's
    core = memory.activation_bytes_per_layer(
        seq_len=1, micro_batch=1, hidden=h, n_heads=a, tp=1, recompute="selective",
        flash_attention=True, layer=shape,
    )  # fmt: skip
    assert 2 * h < kept(1) < core
    with pytest.raises(memory.MemoryModelError, match="dense layers"):
        memory.activation_bytes_per_layer(
            seq_len=1, micro_batch=1, hidden=7168, n_heads=128, recompute="selective_op",
            layer=LayerShape.of(get_model("deepseek-v3").layer_kind(60)),
        )  # fmt: skip


def test_the_dense_mlp_module_drops_only_a_dense_layer_s_mlp() -> None:
    m = get_model("deepseek-v3")
    args: dict[str, Any] = {"seq_len": 1, "micro_batch": 1, "hidden": 7168, "n_heads": 128,
                            "tp": 1, "recompute": "selective", "flash_attention": True}  # fmt: skip
    for kind, dropped in ((m.layer_kind(0), (2 * 2 + 2) * 18432), (m.layer_kind(60), 0)):
        shape = LayerShape.of(kind)
        base = memory.activation_bytes_per_layer(**args, layer=shape)
        mlp = memory.activation_bytes_per_layer(
            **args, layer=shape, recompute_modules=("core_attn", "mlp")
        )
        assert base - mlp == pytest.approx(dropped)


def test_the_last_stage_holds_the_multi_token_prediction_modules() -> None:
    m = get_model("deepseek-v3")
    mtp = dataclasses.replace(m, mtp_layers=1)
    for first, extra in ((True, 0), (False, mtp.mtp_layer_params())):
        with_mtp = memory._stage_params(mtp, tp=1, pp=4, ep=1, first=first)
        without = memory._stage_params(m, tp=1, pp=4, ep=1, first=first)
        assert (with_mtp.dense + with_mtp.expert) - (without.dense + without.expert) == extra
    assert memory.params_per_gpu(mtp) == mtp.total_params()
    args: dict[str, Any] = {"tp": 1, "pp": 4, "micro_batch": 1, "seq_len": 4096,
                            "sequence_parallel": False, "recompute": "selective",
                            "inflight": 4, "flash_attention": True}  # fmt: skip
    last = memory._stage_activation_bytes(mtp, **args, first=False)
    assert last > memory._stage_activation_bytes(m, **args, first=False)
    first = memory._stage_activation_bytes(mtp, **args, first=True)
    assert first == memory._stage_activation_bytes(m, **args, first=True)


def test_a_hybrid_model_s_shared_module_holds_one_set_of_weights() -> None:
    """Nemotron 3.5 Lightning's two '*E' depths of one module (mtp_use_repeated_layer): the
    last stage holds the module's weights once and both depths' activations, each depth's the
    attention-and-experts layer its pattern makes."""
    m = dataclasses.replace(get_model("nemotron-3-nano-30b-a3b"), mtp_pattern="*E")
    two = dataclasses.replace(m, mtp_layers=2)
    one = dataclasses.replace(two, mtp_shared=True)
    params = lambda x: memory._stage_params(x, tp=1, pp=2, ep=8, first=False)  # noqa: E731
    base = params(m)
    module = two.mtp_layer_params()
    experts = two.mtp_kind().n_experts * two.mtp_kind().mlp_params_per_layer()
    for x, n in ((two, 2), (one, 1)):
        held = params(x)
        assert held.expert - base.expert == pytest.approx(n * experts / 8)  # over EP 8
        assert (held.dense + held.expert * 8) - (base.dense + base.expert * 8) == pytest.approx(
            n * module, rel=1e-9
        )
    args: dict[str, Any] = {"tp": 1, "pp": 2, "micro_batch": 1, "seq_len": 8192,
                            "sequence_parallel": False, "recompute": "none",
                            "inflight": 2, "flash_attention": True}  # fmt: skip
    acts = lambda x: memory._stage_activation_bytes(x, **args, first=False)  # noqa: E731
    assert acts(one) == acts(two) > acts(m)
    layer = memory.activation_bytes_per_layer(
        **{k: v for k, v in args.items() if k not in ("pp", "inflight")},
        hidden=m.hidden,
        n_heads=m.n_heads,
        layer=memory.LayerShape.of(two.mtp_kind()),
    )
    assert acts(two) - acts(m) > 2 * layer  # the layers, and each depth's head again


def test_an_eager_glu_clamp_keeps_the_unclamped_expert_output_too() -> None:
    """Megatron-Core's TEGroupedMLP clamps GPT-OSS's GLU in eager PyTorch (compute.
    EAGER_CLAMP_BYTES): the clamps keep the unclamped first GEMM output, both halves in 16 bits
    (4 bytes a routed expert width element a copy), beside what the activation keeps; the TE
    op fuser's fused activation does not, and recomputing moe_act (or the whole moe block)
    drops it with the activation, which re-runs the clamp."""
    m = get_model("gpt-oss-120b")
    eager, fused = LayerShape.of(m), LayerShape.of(m, eager_experts=False)
    assert eager.eager_clamp and not fused.eager_clamp
    h, routed = m.hidden, m.top_k * m.expert_ffn
    (u1, s1), (u0, s0) = eager.per_hidden(h), fused.per_hidden(h)
    assert u1 == u0 and (s1 - s0) * h == pytest.approx(4.0 * routed)
    for modules in (("moe_act",), ("moe",)):
        a, b = (x.per_hidden(h, discarded=modules) for x in (eager, fused))
        assert a == pytest.approx(b)
    assert not LayerShape.of(get_model("qwen3-30b-a3b")).eager_clamp
    kw = {"tp": 1, "pp": 1, "dp": 64, "ep": 64, "micro_batch": 4, "seq_len": 4096}
    more = memory_per_gpu(m, recompute="none", **kw).activations
    less = memory_per_gpu(m, recompute="none", eager_experts=False, **kw).activations
    assert more - less == pytest.approx(m.n_layers * 4 * 4096 * 4.0 * routed, rel=1e-9)


# ---------------------------------------------------------------- hybrid (Mamba-2) blocks
def _nano_kinds() -> dict[str, Any]:
    return {k.block: k for k, _ in get_model("nemotron-3-nano-30b-a3b").layer_kinds}


@pytest.mark.parametrize("fp8", [False, True])
def test_a_mamba_block_keeps_its_projection_inputs_and_zxbcdt(fp8: bool) -> None:
    """Per token: the norm's input (2h) and the input projection's (2h, 1h in FP8), split by
    TP the projection's output zxBCdt, the scan's output and the norm's output (the output
    projection's input, one byte in FP8); no attention statistics."""
    h, inner, width = 2688, 4096, 2 * 4096 + 2 * 8 * 128 + 64
    kw = {"seq_len": 4096, "micro_batch": 2, "hidden": h, "n_heads": 32, "tp": 2}
    got = activation_bytes_per_layer(
        **kw, recompute="none", flash_attention=True, fp8=fp8,
        layer=LayerShape.of(_nano_kinds()["mamba"]),
    )  # fmt: skip
    unsplit = 4 * h - (h if fp8 else 0)
    split = 2 * (width + 2 * inner) - (inner if fp8 else 0)
    assert got == pytest.approx(4096 * 2 * (unsplit + split) / 2)


def test_hybrid_attention_and_moe_blocks_keep_one_norm_each() -> None:
    kinds = _nano_kinds()
    h = 2688
    attention = LayerShape.of(kinds["attention"]).per_hidden(h)
    q, kv = 32 * 128, 2 * 128
    # norm input 2h and the QKV input 2h; Q, K, V and the output
    assert attention == pytest.approx((4.0, (2 * q + 2 * kv + 2 * kv + 2 * q) / h))
    moe = LayerShape.of(kinds["moe"]).per_hidden(h)
    act = 2 * 1 + 2  # squared ReLU: its input and the down projection's, 16-bit
    routed = 6 * act * 1856 + act * 3712
    assert moe == pytest.approx(((2 + 2 + 6 * 2) * h / h, routed / h))


def test_hybrid_params_per_gpu_split_the_experts_over_ep() -> None:
    m = get_model("nemotron-3-nano-30b-a3b")
    kinds = _nano_kinds()
    expert = 23 * 128 * kinds["moe"].mlp_params_per_layer()
    assert params_per_gpu(m, ep=8) == pytest.approx(m.total_params() - expert + expert / 8)


def test_adam_state_under_the_precision_aware_optimizer() -> None:
    """Megatron-Core's Adam bytes a parameter: 12 (fp32 master and moments) plus an fp32 copy of
    16-bit gradients at the step without the precision-aware optimizer; with it, FusedAdam's
    master as the bf16 parameter's 16-bit remainder (store_param_remainders), as fp16, or as
    fp32 for fp16 or FP8 parameters, moments in their dtypes (fp8: 1 byte), no gradient copy;
    under an FP8 recipe that scales from the current amax Megatron-Core keeps the fp32 master
    and the copy. fp32 parameters are their own master."""
    assert (adam_state().state, adam_state(grad_bytes=2).grad_copy) == (12, 4)
    assert adam_state(param_dtype="fp32").state == 8
    aware = {"precision_aware": True, "grad_bytes": 2}
    assert adam_state(**aware).state == 10  # 2 + 4 + 4
    assert adam_state(**aware, store_param_remainders=False).state == 12
    assert adam_state(**aware, main_params_dtype="fp16").master == 2
    assert adam_state(**aware, param_dtype="fp16").master == 4  # remainders need bf16 weights
    assert adam_state(**aware, param_dtype="fp8").master == 4  # --fp8-param-gather
    low = adam_state(**aware, exp_avg_dtype="fp8", exp_avg_sq_dtype="bf16")
    assert (low.state, low.grad_copy, low.te_master) == (5, 0, True)
    scaled = adam_state(**aware, exp_avg_dtype="bf16", exp_avg_sq_dtype="bf16", scaled_fp8=True)
    assert (scaled.state, scaled.grad_copy, scaled.te_master) == (8, 4, False)
    assert scaled.step_bytes == 4 + (4 + 4 + 4) + (4 + 4) + 6
    assert adam_state(**aware, main_params_dtype="fp16", scaled_fp8=True).te_master
    with pytest.raises(MemoryModelError, match="need precision_aware"):
        adam_state(exp_avg_dtype="bf16")
    with pytest.raises(MemoryModelError, match=r"exp_avg_dtype.*'int4'"):
        adam_state(precision_aware=True, exp_avg_dtype="int4")
    model = get_model("llama3-8b")
    kw: dict[str, Any] = {"tp": 1, "pp": 1, "dp": 8, "zero_stage": 1, "micro_batch": 1,
                          "seq_len": 4096, "grad_bytes": 2}  # fmt: skip
    plain = memory_per_gpu(model, **kw)
    less = memory_per_gpu(model, **kw, adam=adam_state(**aware, exp_avg_dtype="bf16",
                                                       exp_avg_sq_dtype="bf16"))  # fmt: skip
    assert plain.optimizer - less.optimizer == pytest.approx(6 * model.total_params() / 8)
    with pytest.raises(MemoryModelError, match="adam: given with optimizer 'sgd'"):
        memory_per_gpu(model, **kw, optimizer="sgd", adam=adam_state())


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["fp32", "bf16", "fp16", "fp8"]),
    st.sampled_from(["fp32", "bf16", "fp16", "fp8"]),
    st.sampled_from(["fp32", "fp16"]),
    st.booleans(),
    st.sampled_from(["fp32", "bf16", "fp16", "fp8"]),
    st.booleans(),
    st.sampled_from([2, 4]),
)
def test_the_precision_aware_optimizer_never_holds_or_moves_more(
    m: str, v: str, master: str, remainders: bool, params: str, scaled: bool, grads: int
) -> None:
    """Whatever its dtypes, the precision-aware optimizer holds at most the fp32 optimizer's
    state and gradient copy, and its step moves at most the same bytes: lower dtypes only
    shrink them."""
    plain = adam_state(param_dtype=params, grad_bytes=grads)
    aware = adam_state(
        precision_aware=True, exp_avg_dtype=m, exp_avg_sq_dtype=v, main_params_dtype=master,
        store_param_remainders=remainders, param_dtype=params, scaled_fp8=scaled, grad_bytes=grads,
    )  # fmt: skip
    assert aware.state <= plain.state and aware.grad_copy <= plain.grad_copy
    assert aware.step_bytes <= plain.step_bytes
    assert aware.state >= 2  # two moments of one byte at least
