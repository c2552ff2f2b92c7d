"""Megatron-Bridge configurations read as Megatron-LM arguments (commwall.megatron_bridge)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.megatron_args import MegatronArgsError, megatron_job
from commwall.megatron_bridge import (
    RECIPES,
    bridge_arguments,
    bridge_job,
    is_bridge_config,
    launch_job,
    layout_text,
)
from commwall.scenario import parse_scenario
from commwall.workload.simulate import simulate

EXAMPLE = Path(__file__).parents[2] / "examples/megatron-bridge/qwen3_8b_16gpu_h100_run_config.yaml"

#: A small Bridge override file: the fields it sets, Megatron-LM's defaults for the rest.
BASE: dict[str, Any] = {
    "model": {
        "num_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "seq_length": 512,
        "vocab_size": 1000, "tensor_model_parallel_size": 2, "max_position_embeddings": 512,
    },
    "train": {"micro_batch_size": 1, "global_batch_size": 16},
    "mixed_precision": "bf16_mixed",
}  # fmt: skip


def with_(**sections: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    for name, fields in sections.items():
        mine = out.get(name)
        out[name] = {**(mine if isinstance(mine, dict) else {}), **fields}
    return out


def assert_prices_as_row(source: str | dict[str, Any], row_id: str) -> tuple[Any, dict[str, Any]]:
    """The step of a scenario whose job is ``source`` on validation row ``row_id``'s cluster,
    asserted equal to the row's: (its report, that cluster mapping)."""
    from commwall.validation.training import load_training_runs

    row = next(r for r in load_training_runs() if r.id == row_id)
    cluster = {"preset": row.preset, "nodes": row.nodes, **row.cluster}
    report = simulate(parse_scenario({"cluster": cluster, "job": {"megatron_args": source}}))
    assert report.step_time == simulate(parse_scenario(row.scenario())).step_time
    return report, cluster


def test_a_saved_run_config_prices_as_the_published_run_it_describes() -> None:
    """The Qwen3-8B recipe of Megatron-Bridge's verification card on 16 H100 (validation row
    mbcard-h100-bf16-qwen3-8b-16gpu-pretrain), written as Bridge saves its ConfigContainer:
    every field, dataclasses with _target_, functions and dtypes as {_target_, _call_}, the
    attention backend as an enum. Read as arguments it is the row's job, step for step."""
    assert_prices_as_row(str(EXAMPLE), "mbcard-h100-bf16-qwen3-8b-16gpu-pretrain")
    read = launch_job(yaml.safe_load(EXAMPLE.read_text()))
    assert read.unread == ()  # a field at Megatron-Core's default is not listed
    assert read.vocab_multiple == 1  # should_pad_vocab false: Bridge keeps the vocabulary
    assert read.model is not None and read.model["name"] == "qwen3-8b"  # model.hf_model_id
    assert "model.moe_router_topk" in read.ignored  # a MoE field of a dense model
    assert any(
        t.startswith("ddp.check_for_nan_in_grad") and "ddp.check_for_nan_in_grad: false turns" in t
        for t in read.not_priced
    )


def test_an_override_file_prices_as_the_published_moe_run_it_describes() -> None:
    """A run_recipe.py --config-file override for Qwen3-30B-A3B in FP8 on 16 H100 (Bridge's
    26.04 performance summary, row mbridge2604-h100-fp8-qwen3-30b-a3b-16gpu): a named
    dispatcher, Bridge's DDP bucket in parameters, the precision fields; the row's step."""
    path = EXAMPLE.parent / "qwen3_30b_a3b_16gpu_h100_fp8_overrides.yaml"
    assert_prices_as_row(str(path), "mbridge2604-h100-fp8-qwen3-30b-a3b-16gpu")
    read = launch_job(yaml.safe_load(path.read_text()))
    assert (read.job["moe_dispatcher"], read.job["ddp_bucket"]) == ("hybridep", 256 * 2**20)
    assert any("not a saved run_config.yaml" in n for n in read.notes)


def test_bridge_names_become_megatron_lm_arguments() -> None:
    """Bridge's translator's renames (translate_mlm_to_bridge.py): experts, the untied head,
    the gated MLP, the DDP bucket, the gradient dtype, the first pipeline stage's layers."""
    cfg = with_(
        model={"num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 128,
               "moe_grouped_gemm": True, "moe_token_dispatcher_type": "alltoall",
               "expert_model_parallel_size": 2, "share_embeddings_and_output_weights": False,
               "gated_linear_unit": True,
               "activation_func": {"_target_": "torch.nn.functional.silu", "_call_": False},
               "num_query_groups": 2, "pipeline_model_parallel_size": 2,
               "num_layers_in_first_pipeline_stage": 1, "sequence_parallel": True},
        ddp={"use_distributed_optimizer": True, "bucket_size": 1000, "grad_reduce_in_fp32": False,
             "check_for_nan_in_grad": False},
    )  # fmt: skip
    args = bridge_arguments(cfg).arguments
    assert args["num_experts"] == 8 and args["untie_embeddings_and_output_weights"] is True
    assert args["swiglu"] is True and args["group_query_attention"] is True
    assert args["ddp_bucket_size"] == 1000 and args["grad_reduce_in_bf16"] is True
    assert args["decoder_first_pipeline_num_layers"] == 1
    read = bridge_job(cfg)
    flags = megatron_job(
        "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 512 "
        "--vocab-size 1000 --tensor-model-parallel-size 2 --max-position-embeddings 512 "
        "--micro-batch-size 1 "
        "--global-batch-size 16 --bf16 --num-experts 8 --moe-router-topk 2 "
        "--moe-ffn-hidden-size 128 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "
        "--expert-model-parallel-size 2 --untie-embeddings-and-output-weights --swiglu "
        "--group-query-attention --num-query-groups 2 --pipeline-model-parallel-size 2 "
        "--decoder-first-pipeline-num-layers 1 --sequence-parallel "
        "--use-distributed-optimizer --ddp-bucket-size 1000 --grad-reduce-in-bf16 "
        "--no-check-for-nan-in-loss-and-grad"
    )
    assert read.job == flags.job and read.model == flags.model
    assert read.vocab_multiple == 1 and flags.vocab_multiple == 256


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_named_precision_recipe_reads(name: str) -> None:
    read = bridge_job({**BASE, "mixed_precision": name.replace("_", "-")})
    recipe = RECIPES[name]
    expected = "fp4" if "fp4" in recipe else "fp8" if "fp8" in recipe else "bf16"
    expected = "fp16" if expected == "bf16" and recipe.get("fp16") else expected
    assert read.job["precision"] == expected
    if expected == "fp8":
        assert read.job["fp8_recipe"] == recipe["fp8_recipe"]
        assert read.job["fp8_param_gather"] is recipe["fp8_param_gather"]
    if recipe.get("first_last_layers_bf16"):
        ends = [recipe.get(f"num_layers_at_{w}_in_bf16", 1) for w in ("start", "end")]
        assert read.job["bf16_end_layers"] == ends
    else:
        assert "bf16_end_layers" not in read.job


def test_mixed_precision_fields_win_over_the_models_and_ddp_over_comm_overlap() -> None:
    """Bridge copies its precision config into the model and its overlap config into DDP at
    setup: a saved config's mixed_precision and ddp sections hold what ran."""
    cfg = with_(
        model={"fp8": None, "bf16": False},
        mixed_precision={"bf16": True, "fp8": "e4m3", "fp8_recipe": "mxfp8", "fp8_param": True},
        comm_overlap={"overlap_grad_reduce": False, "bucket_size": 5},
        ddp={"overlap_grad_reduce": True, "use_distributed_optimizer": True},
    )
    read = bridge_job(cfg)
    assert (read.job["precision"], read.job["fp8_recipe"]) == ("fp8", "mxfp8")
    assert read.job["fp8_param_gather"] is True and read.job["overlap_grad_reduce"] is True
    assert read.job["ddp_bucket"] == 10  # comm_overlap's, where ddp gives none


def test_userbuffers_settings_come_from_the_saved_overlap_config() -> None:
    """comm_overlap.tp_comm_overlap_cfg as Bridge saves a TransformerLayerTPOverlapCfg: each
    GEMM's method and SMs reach job.tp_overlap_cfg; PipelineOverlapCfg's tuple-valued fp8_buf
    default is dropped, not misread."""
    ub = {
        "_target_": "megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg",
        "qkv_dgrad": {"_target_": "megatron.bridge.training.comm_overlap.BulkOverlapCfg",
                      "num_sm": 4, "cga_size": 2, "set_sm_margin": False, "method": "bulk"},
        "fc2_fprop": {"_target_": "megatron.bridge.training.comm_overlap.PipelineOverlapCfg",
                      "num_sm": 16, "cga_size": 2, "num_splits": 4, "set_sm_margin": True,
                      "fp8_buf": [False], "atomic_gemm": False, "method": "pipeline"},
    }  # fmt: skip
    cfg = with_(
        model={"sequence_parallel": True},
        comm_overlap={"tp_comm_overlap": True, "tp_comm_overlap_cfg": ub},
    )
    read = bridge_job(cfg)
    assert read.job["tp_comm_overlap"] is True
    assert read.job["tp_overlap_cfg"] == {
        "qkv_dgrad": {"num_sm": 4, "cga_size": 2, "set_sm_margin": False, "method": "bulk"},
        "fc2_fprop": {"num_sm": 16, "cga_size": 2, "num_splits": 4, "set_sm_margin": True,
                      "atomic_gemm": False, "method": "pipeline"},
    }  # fmt: skip
    report = simulate(parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 1},
                                      "job": {"megatron_args": cfg}}))  # fmt: skip
    assert report.job["tp_overlap_cfg"]["qkv_dgrad"]["num_sm"] == 4


def test_a_gpt_oss_attention_reads_its_window_layers_and_names_the_sinks() -> None:
    """GPT-OSS as Bridge's GPTOSSBridge builds it: window (127, 0) on every other layer
    (window_attn_skip_freq 2), learnable softmax offsets, a gated quick-GELU."""
    cfg = with_(model={
        "window_size": [127, 0], "window_attn_skip_freq": 2, "softmax_type": "learnable",
        "gated_linear_unit": True,
        "activation_func": {"_target_": "megatron.core.fusions.fused_bias_geglu.quick_gelu",
                            "_call_": False},
    })  # fmt: skip
    read = bridge_job(cfg)
    assert read.model is not None
    assert (read.model["sliding_window"], read.model["sliding_window_layers"]) == (127, 2)
    assert read.model["gated_mlp"] is True
    assert any("model.softmax_type learnable" in t for t in read.not_priced)
    assert any("quick_gelu" in t for t in read.notes)


def test_a_hybrid_model_s_shared_mtp_depths_read_from_its_config() -> None:
    """Nemotron 3.5 Lightning's recipe fields (mtp_num_layers 2, mtp_hybrid_override_pattern
    '*E', mtp_use_repeated_layer) on a hybrid pattern read as the model's MTP pattern and the
    job's shared depths."""
    cfg = with_(model={
        "hybrid_layer_pattern": "M*ME", "num_layers": 4, "tensor_model_parallel_size": 1,
        "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 128,
        "moe_token_dispatcher_type": "alltoall", "mamba_num_heads": 8, "mamba_head_dim": 32,
        "mtp_num_layers": 2, "mtp_hybrid_override_pattern": "*E", "mtp_use_repeated_layer": True,
    })  # fmt: skip
    read = bridge_job(cfg)
    assert read.model is not None and read.model["mtp_pattern"] == "*E"
    assert (read.job["mtp_layers"], read.job["mtp_shared"]) == (2, True)


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        (with_(model={"num_moe_experts": 8, "expert_model_parallel_size": 2}),
         "model.moe_token_dispatcher_type allgather"),
        (with_(model={"tensor_model_parallel_size": 0}), "model.tensor_model_parallel_size: 0"),
        (with_(model={"hidden_size": "<b>wide</b>"}), "model.hidden_size: '<b>wide</b>'"),
        ({**BASE, "mixed_precision": "bf17_mixed"}, "mixed_precision: 'bf17_mixed'"),
        ({**BASE, "train": ["micro_batch_size", 1]}, "train: list; allowed: a mapping"),
        (with_(model={"experimental_attention_variant": "dsa"}),
         "model.experimental_attention_variant"),
        (with_(comm_overlap={"tp_comm_overlap_cfg": {"qkv_dgrad": 4}}),
         "comm_overlap.tp_comm_overlap_cfg.qkv_dgrad: 4"),
        ({"model": {"num_layers": 2, 7: 1}, "train": {}}, "model.7"),
        (
            with_(model={"share_embeddings_and_output_weights": "no"}),
            "model.share_embeddings_and_output_weights: 'no' is not true or false",
        ),
        (
            with_(model={"window_size": [127, 0], "window_attn_skip_freq": [1, 0, 2, 1]}),
            "model.window_attn_skip_freq: [1, 0, 2, 1]; allowed: an integer or a list of 0 and 1",
        ),
        (
            with_(model={"attention_backend": {"_target_": "AttnBackend", "_args_": [9]}}),
            "model.attention_backend: 'AttnBackend 9' is not allowed; allowed: auto",
        ),
    ],
)  # fmt: skip
def test_bad_fields_are_named_by_their_bridge_path(cfg: dict[str, Any], words: str) -> None:
    with pytest.raises(MegatronArgsError, match=re.escape(words)):
        bridge_job(cfg)


def test_a_list_form_pipeline_layout_reads_as_megatron_s_string() -> None:
    """Megatron-Bridge saves pipeline_model_parallel_layout as Megatron-Core's list form (one
    list of layer names a virtual stage, e.g. DeepSeek-V3's recipes); it prices as the string
    form, and a scenario's job.pipeline_layout takes either."""
    stages = [["embedding", "decoder", "decoder"], ["decoder"] * 2 + ["loss"]]
    assert layout_text(stages) == "Et*2|t*2L"
    assert layout_text([["embedding"], [], ["decoder", "mtp", "loss"]]) == "E||tmL"
    listed = with_(model={"pipeline_model_parallel_size": 2, "tensor_model_parallel_size": 1,
                          "pipeline_model_parallel_layout": stages})  # fmt: skip
    text = with_(model={"pipeline_model_parallel_size": 2, "tensor_model_parallel_size": 1,
                        "pipeline_model_parallel_layout": "Et*2|t*2L"})  # fmt: skip
    assert bridge_job(listed).job == bridge_job(text).job
    assert bridge_job(listed).job["pipeline_layout"] == "Et*2|t*2L"
    job = {"model": "llama3-8b", "tp": 8, "pp": 2, "global_batch": 64}
    as_list = {"job": {**job, "pipeline_layout": [["embedding"] + ["decoder"] * 16,
                                                  ["decoder"] * 16 + ["loss"]]}}  # fmt: skip
    as_text = {"job": {**job, "pipeline_layout": "Et*16|t*16L"}}
    assert parse_scenario(as_list) == parse_scenario(as_text)


@pytest.mark.parametrize(
    ("layout", "words"),
    [([["embedding", "encoder"], ["decoder", "loss"]],
      "virtual stage 0: layer 'encoder': an encoder's layers (T5, vision models) are not modelled"),
     ([["embedding", "<b>dense</b>"]],
      "virtual stage 0: layer '<b>dense</b>': allowed: embedding, decoder"),
     ([["embedding"], "decoder"], "virtual stage 1: str; allowed: a list of at most"),
     ([["embedding", 3]], "virtual stage 0: layer '3'"),
     ([], "an empty list; allowed: a non-empty list of virtual stages"),
     ([[], []], "2 virtual stages and no layer in any")],
)  # fmt: skip
def test_a_list_form_layout_it_cannot_use_is_named(layout: Any, words: str) -> None:
    cfg = with_(model={"pipeline_model_parallel_layout": layout})
    with pytest.raises(MegatronArgsError, match=re.escape(words)):
        bridge_job(cfg)
    from commwall.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=re.escape("job.pipeline_layout: " + words)):
        parse_scenario({"job": {"pipeline_layout": layout}})


def test_an_override_file_says_its_missing_fields_are_megatron_lms_defaults() -> None:
    from commwall.scenario import ScenarioError

    no_vocab = {**BASE, "model": {k: v for k, v in BASE["model"].items() if k != "vocab_size"}}
    with pytest.raises(ScenarioError, match=re.escape("give model.vocab_size or job.model")):
        parse_scenario({"job": {"megatron_args": no_vocab}})
    read = bridge_job(BASE)
    assert any("not a saved run_config.yaml" in n for n in read.notes)
    assert read.job["precision"] == "bf16" and read.job["tp"] == 2


def test_only_container_shaped_mappings_are_bridge_configs() -> None:
    assert is_bridge_config(BASE) and is_bridge_config({"_target_": "x.ConfigContainer"})
    assert not is_bridge_config({"num_layers": 4, "hidden_size": 8})
    assert not is_bridge_config({"model": "llama", "train": {}})
    assert not is_bridge_config("--num-layers 4")


_FIELDS = st.sampled_from(
    ["num_layers", "hidden_size", "num_attention_heads", "seq_length", "num_moe_experts",
     "window_size", "window_attn_skip_freq", "gated_linear_unit", "activation_func",
     "share_embeddings_and_output_weights", "bucket_size", "grad_reduce_in_fp32",
     "tp_comm_overlap_cfg", "attention_backend", "moe_layer_freq", "softmax_type",
     "pipeline_model_parallel_layout", "foo"]
)  # fmt: skip
_SCALARS = st.one_of(
    st.text(max_size=10),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
    st.lists(st.integers(-2, 2), max_size=4),
    st.lists(st.lists(st.sampled_from(["embedding", "decoder", "loss", "mtp", "encoder", ""]),
                      max_size=4), max_size=3),
    st.dictionaries(st.sampled_from(["_target_", "_call_", "_args_", "_name_", "num_sm"]),
                    st.one_of(st.text(max_size=6), st.integers(-3, 9), st.booleans(),
                              st.lists(st.integers(0, 6), max_size=2)), max_size=3),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["model", "train", "ddp", "comm_overlap", "mixed_precision", "dataset"]),
        st.one_of(st.dictionaries(_FIELDS, _SCALARS, max_size=8), _SCALARS),
        max_size=5,
    )
)
def test_any_container_is_read_or_refused_by_name(cfg: dict[str, Any]) -> None:
    """Whatever a (hostile, corrupted) configuration holds, the reading ends in a job or in
    one error that names what is wrong, never another exception."""
    try:
        bridge_job({"model": {}, **cfg})
    except MegatronArgsError as err:
        assert str(err)


def _ub(method: str, sms: int, margin: bool = False) -> dict[str, Any]:
    """One GEMM's Userbuffers settings as Bridge saves its dataclass."""
    if method == "bulk":
        return {"_target_": "megatron.bridge.training.comm_overlap.BulkOverlapCfg",
                "num_sm": sms, "cga_size": 2, "set_sm_margin": margin, "method": "bulk"}  # fmt: skip
    return {"_target_": "megatron.bridge.training.comm_overlap.RingExchangeOverlapCfg",
            "aggregate": False, "method": "ring_exchange", "num_sm": sms, "cga_size": 1,
            "set_sm_margin": margin, "fp8_buf": False, "atomic_gemm": False}  # fmt: skip


#: Megatron-Bridge's Llama 3.1 405B FP8 (current scaling) recipe on 1,024 H100 as its 26.06
#: performance summary ran it (row mbridge2606-h100-fp8cs-llama31-405b-1024gpu): TP 8, PP 8
#: with a layout of 64 chunks, CP 2, userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192.
LLAMA405: dict[str, Any] = {
    "model": {
        "num_layers": 126, "hidden_size": 16384, "ffn_hidden_size": 53248,
        "num_attention_heads": 128, "num_query_groups": 8, "kv_channels": 128,
        "vocab_size": 128256, "seq_length": 8192, "max_position_embeddings": 131072,
        "gated_linear_unit": True,
        "activation_func": {"_target_": "torch.nn.functional.silu", "_call_": False},
        "normalization": "RMSNorm", "position_embedding_type": "rope", "add_bias_linear": False,
        "share_embeddings_and_output_weights": False, "tensor_model_parallel_size": 8,
        "pipeline_model_parallel_size": 8, "context_parallel_size": 2,
        "pipeline_model_parallel_layout": "Et|(t*2|)*62,tL", "sequence_parallel": True,
        "attention_dropout": 0.0, "hidden_dropout": 0.0, "cross_entropy_loss_fusion": True,
        "cross_entropy_fusion_impl": "te",
    },
    "train": {"micro_batch_size": 1, "global_batch_size": 1536},
    "ddp": {"use_distributed_optimizer": True, "overlap_grad_reduce": True,
            "overlap_param_gather": True, "align_param_gather": True, "bucket_size": 134217728,
            "check_for_nan_in_grad": False},
    "comm_overlap": {
        "_target_": "megatron.bridge.training.comm_overlap.CommOverlapConfig",
        "tp_comm_overlap": True,
        "tp_comm_overlap_cfg": {
            "_target_": "megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg",
            "qkv_dgrad": _ub("bulk", 2), "qkv_wgrad": _ub("bulk", 24),
            "fc1_dgrad": _ub("bulk", 2), "fc1_wgrad": _ub("bulk", 2),
            "qkv_fprop": _ub("ring", 1), "proj_dgrad": _ub("ring", 1),
            "fc1_fprop": _ub("ring", 1), "fc2_dgrad": _ub("ring", 1),
            "proj_fprop": _ub("ring", 1, True), "fc2_fprop": _ub("ring", 1, True),
        },
    },
    "mixed_precision": {"bf16": True, "fp8": "hybrid", "fp8_recipe": "tensorwise",
                        "fp8_param_gather": True, "first_last_layers_bf16": False,
                        "grad_reduce_in_fp32": False},
}  # fmt: skip


@pytest.mark.slow
def test_a_userbuffers_pipeline_layout_config_prices_as_the_published_run() -> None:
    """Bridge's saved Userbuffers dataclasses, a pipeline layout string and CP: the 405B
    row's step exactly; its BF16 end layers (the recipe's bf16_with_fp8_current_scaling_mixed
    before the benchmark turns them off) run and cost more."""
    bridge, cluster = assert_prices_as_row(LLAMA405, "mbridge2606-h100-fp8cs-llama31-405b-1024gpu")
    ends = {**LLAMA405, "mixed_precision": "bf16_with_fp8_current_scaling_mixed"}
    slower = simulate(parse_scenario({"cluster": cluster, "job": {"megatron_args": ends}}))
    assert slower.job["bf16_end_layers"] == [1, 1] and slower.step_time > bridge.step_time


def test_an_override_of_a_few_fields_runs_beside_the_model_and_sequence_it_leaves_out() -> None:
    """Bridge's example override files set parallelism and batch and leave the model and the
    sequence to the recipe (examples/quantization/conf/*_override_example.yaml): the job names
    them beside the file; without the sequence the error says where to give it."""
    override = {
        "model": {"tensor_model_parallel_size": 1, "context_parallel_size": 1},
        "train": {"train_iters": 20, "global_batch_size": 8},
        "checkpoint": {"save_interval": 20},
    }
    job = {"megatron_args": override, "model": "llama3-8b", "seq_len": 2048}
    report = simulate(parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 1}, "job": job}))
    assert (report.job["global_batch"], report.job["seq_len"]) == (8, 2048)
    with pytest.raises(MegatronArgsError, match=re.escape("model.seq_length is not given")):
        bridge_job(override)


def test_the_optimizer_sections_precision_aware_fields_read() -> None:
    """OptimizerConfig's precision-aware fields, dtypes as Bridge saves them (torch dtypes as
    {_target_, _call_}) or by Megatron-LM's names; store_param_remainders false is kept; a
    dtype it cannot name is refused by its path. main_grads_dtype is not read: Megatron-Core's
    DDP keeps the gradients as ddp.grad_reduce_in_fp32 says."""
    bf16 = {"_target_": "torch.bfloat16", "_call_": False}
    cfg = with_(
        ddp={"use_distributed_optimizer": True, "grad_reduce_in_fp32": True},
        optimizer={"use_precision_aware_optimizer": True, "exp_avg_dtype": bf16,
                   "exp_avg_sq_dtype": "fp8", "main_params_dtype": "fp32",
                   "main_grads_dtype": bf16, "store_param_remainders": False},
    )  # fmt: skip
    job = launch_job(cfg).job
    assert job["precision_aware_optimizer"] is True and job["grad_reduce_in_fp32"] is True
    assert (job["exp_avg_dtype"], job["exp_avg_sq_dtype"]) == ("bf16", "fp8")
    assert job["store_param_remainders"] is False and "main_params_dtype" not in job
    assert "store_param_remainders" not in launch_job(with_(optimizer={"lr": 1e-4})).job
    bad = with_(optimizer={"use_precision_aware_optimizer": True,
                           "exp_avg_dtype": {"_target_": "torch.int8", "_call_": False}})  # fmt: skip
    with pytest.raises(MegatronArgsError, match=r"optimizer\.exp_avg_dtype: 'int8'"):
        launch_job(bad)
    off = with_(optimizer={"exp_avg_dtype": bf16})
    with pytest.raises(MegatronArgsError, match=r"optimizer\.exp_avg_dtype: .*use_precision"):
        launch_job(off)
