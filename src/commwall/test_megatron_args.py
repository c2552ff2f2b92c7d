"""Megatron-LM arguments → job and model: shell text and recipe mappings, Megatron-LM's defaults,
the architectures against the zoo's published parameter counts, refusals by flag, and a
validation run rebuilt from its recipe's flags."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.megatron_args import FLAGS, MegatronArgsError, megatron_job, padded_vocab, read_args
from commwall.scenario import ModelDef, ScenarioError, load_scenario, parse_scenario
from commwall.workload.hf_config import model_from_def
from commwall.workload.models import get_model

#: Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh (@d98e8a64), its flags as the
#: script lays them out: arrays, continuation lines, variables.
GPT3_SCRIPT = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=${NUM_NODES:-64}
CHECKPOINT_PATH=$1 # comment
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # Can use (flash/fused/unfused/local)
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --rampup-batch-size 16 16 5859375
    --train-iters 500000
    --weight-decay 0.1
    --init-method-std 0.006
    --clip-grad 1.0
    --fp16
    --lr 6.0e-5
)
MODEL_PARALLEL_ARGS=(
\t--tensor-model-parallel-size 8
\t--pipeline-model-parallel-size 16
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\
    ${GPT_MODEL_ARGS[@]} ${TRAINING_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]} \\
    --save $CHECKPOINT_PATH
"""

#: examples/moe_recipes/qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml's ARGS (Megatron-LM
#: @7146484607), the flags that shape the model and the step.
QWEN3_30B_ARGS: dict[str, Any] = {
    "num_layers": 48,
    "hidden_size": 2048,
    "ffn_hidden_size": 6144,
    "num_attention_heads": 32,
    "kv_channels": 128,
    "max_position_embeddings": 40960,
    "group_query_attention": True,
    "num_query_groups": 4,
    "qk_layernorm": True,
    "normalization": "RMSNorm",
    "swiglu": True,
    "disable_bias_linear": True,
    "untie_embeddings_and_output_weights": True,
    "position_embedding_type": "rope",
    "make_vocab_size_divisible_by": 1187,
    "num_experts": 128,
    "moe_ffn_hidden_size": 768,
    "moe_router_topk": 8,
    "attention_dropout": 0.0,
    "hidden_dropout": 0.0,
    "seq_length": 4096,
    "moe_router_force_load_balancing": True,
    "tensor_model_parallel_size": 1,
    "pipeline_model_parallel_size": 1,
    "expert_model_parallel_size": 8,
    "context_parallel_size": 1,
    "expert_tensor_parallel_size": 1,
    "use_distributed_optimizer": True,
    "sequence_parallel": True,
    "overlap_grad_reduce": True,
    "overlap_param_gather": True,
    "moe_token_dispatcher_type": "flex",
    "moe_flex_dispatcher_backend": "hybridep",
    "moe_grouped_gemm": True,
    "micro_batch_size": 1,
    "global_batch_size": 256,
    "cross_entropy_loss_fusion": True,
    "cross_entropy_fusion_impl": "te",
    "bf16": True,
    "lr": 0.00012,
    "load": "${LOAD_PATH}",
    "no_check_for_nan_in_loss_and_grad": True,
}

#: examples/moe_recipes/deepseek_v3/h100/bf16_1024GPU_TP1PP16EP64.yaml (Megatron-LM
#: @7146484607): DeepSeek-V3's architecture flags.
DEEPSEEK_V3_ARGS: dict[str, Any] = {
    "num_layers": 61,
    "hidden_size": 7168,
    "ffn_hidden_size": 18432,
    "num_attention_heads": 128,
    "kv_channels": 128,
    "multi_latent_attention": True,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_head_dim": 128,
    "qk_pos_emb_head_dim": 64,
    "v_head_dim": 128,
    "qk_layernorm": True,
    "normalization": "RMSNorm",
    "swiglu": True,
    "disable_bias_linear": True,
    "untie_embeddings_and_output_weights": True,
    "position_embedding_type": "rope",
    "num_experts": 256,
    "moe_layer_freq": "([0]*3+[1]*58)",
    "moe_ffn_hidden_size": 2048,
    "moe_shared_expert_intermediate_size": 2048,
    "moe_router_topk": 8,
    "moe_router_num_groups": 8,
    "moe_router_group_topk": 4,
    "moe_token_dispatcher_type": "flex",
    "moe_grouped_gemm": True,
    "seq_length": 4096,
    "vocab_size": 129280,
    "bf16": True,
    "tensor_model_parallel_size": 1,
    "pipeline_model_parallel_size": 16,
    "expert_model_parallel_size": 64,
}


def _spec(read_model: dict[str, Any], vocab: int | None = None) -> Any:
    fields = dict(read_model)
    if vocab is not None:
        fields["vocab"] = vocab
    return model_from_def(ModelDef(name="m", **fields))


def test_gpt3_script_and_megatron_defaults() -> None:
    read = megatron_job(GPT3_SCRIPT)
    job, model = read.job, read.model
    assert model is not None
    assert (job["tp"], job["pp"], job["micro_batch"], job["global_batch"]) == (8, 16, 1, 1536)
    assert (job["seq_len"], job["precision"], job["grad_reduce_in_fp32"]) == (2048, "fp16", False)
    # Megatron-LM's defaults where commwall's differ
    assert job["recompute"] == "none" and job["sequence_parallel"] is False
    assert job["zero_stage"] == 0 and job["overlap"] is False
    assert job["attention_dropout"] == 0.1 and job["cross_entropy"] == "unfused"
    assert model["ffn_hidden"] == 4 * 12288 and model["norm"] == "layernorm"
    assert model["learned_pos_emb"] and model["tied_embeddings"] and model["linear_bias"]
    # GPT-3 175B as the zoo has it (Brown et al. 2020), vocabulary padded as Megatron pads it
    vocab = padded_vocab(50257, read.vocab_multiple)
    assert (read.vocab_multiple, vocab) == (128 * 8, 51200)
    zoo = get_model("gpt3-175b")
    ours = _spec(model, 50257)
    assert ours.total_params() == zoo.total_params()
    assert "--lr" in read.ignored and "--save" in read.ignored
    assert "--rampup-batch-size" in read.unread
    assert any("hidden-dropout" in line for line in read.not_priced)


def test_distributed_optimizer_instances_are_hybrid_sharding_of_a_dense_model() -> None:
    """--num-distributed-optimizer-instances N (Megatron-Core's partial distributed optimizer)
    is job.dp_replicate N for a dense model, priced as such; with Megatron-FSDP, which
    all-reduces the replicas once a step, a note says it is priced every micro-batch."""
    extra = " --use-distributed-optimizer --num-distributed-optimizer-instances 2"
    read = megatron_job(GPT3_SCRIPT + extra)
    assert read.job["dp_replicate"] == 2 and read.job["zero_stage"] == 1
    assert not any("instances" in n for n in read.not_priced)
    fsdp = " --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params"
    read = megatron_job(GPT3_SCRIPT + extra + fsdp)
    assert read.job["zero_stage"] == 3 and read.job["dp_replicate"] == 2
    assert any("Megatron-FSDP" in n for n in read.not_priced)


def test_recipe_mapping_matches_the_zoo() -> None:
    read = megatron_job(QWEN3_30B_ARGS)
    assert read.model is not None
    assert padded_vocab(151936, read.vocab_multiple) == 151936  # 1187 x 128
    assert _spec(read.model, 151936).total_params() == get_model("qwen3-30b-a3b").total_params()
    job = read.job
    assert (job["ep"], job["expert_tp"], job["moe_dispatcher"]) == (8, 1, "hybridep")
    assert job["sequence_parallel"] is False  # TP 1: Megatron-LM turns it off
    assert job["grad_reduce_in_fp32"] is True  # bf16 without --grad-reduce-in-bf16
    assert job["cross_entropy"] == "te" and job["zero_stage"] == 1
    assert read.not_priced == ()  # no NaN check, no dropout, grouped GEMMs
    # partial sharding of the distributed optimizer is job.dp_replicate, for the expert
    # gradients too (1, the default, reads as nothing)
    one = megatron_job({**QWEN3_30B_ARGS, "num_distributed_optimizer_instances": 1})
    assert one.not_priced == () and one.job == job
    four = megatron_job({**QWEN3_30B_ARGS, "num_distributed_optimizer_instances": 4})
    assert four.job == {**job, "dp_replicate": 4} and four.not_priced == ()
    assert "--load" in read.ignored
    deepseek = megatron_job(DEEPSEEK_V3_ARGS)
    assert deepseek.model is not None
    assert deepseek.model["moe_layer_freq"] == [0] * 3 + [1] * 58
    assert _spec(deepseek.model).total_params() == get_model("deepseek-v3").total_params()
    assert deepseek.job["moe_dispatcher"] == "deepep"  # flex's default backend


def test_words_flags_and_variables() -> None:
    text = (
        'TP=4\nexport SEQ="8192"\nARGS=("--fp8-format hybrid" --fp8-recipe tensorwise)\n'
        "python pretrain_gpt.py ${ARGS[@]} --tensor-model-parallel-size $TP \\\n"
        "  --seq-length=${SEQ} --recompute-modules moe_act layernorm --bf16 \\\n"
        "  --pipeline-model-parallel-size ${PP:-2} --cp-comm-type a2a --tensor-model-parallel-size 8"
    )
    raw = read_args(text)
    assert raw["fp8"] == "hybrid" and raw["fp8_recipe"] == "tensorwise"
    assert raw["tensor_model_parallel_size"] == "8"  # the last one wins, as argparse
    assert raw["recompute_modules"] == ["moe_act", "layernorm"]
    job = megatron_job(text).job
    assert (job["tp"], job["pp"], job["seq_len"], job["cp_comm"]) == (8, 2, 8192, "a2a")
    assert (job["precision"], job["fp8_recipe"]) == ("fp8", "tensorwise")
    assert job["recompute_modules"] == ["moe_act", "layernorm"]


def test_pipeline_splits() -> None:
    base = {
        "num_layers": 94,
        "hidden_size": 1024,
        "num_attention_heads": 8,
        "seq_length": 64,
        "position_embedding_type": "rope",
    }
    accounted = {
        **base,
        "pipeline_model_parallel_size": 4,
        "num_layers_per_virtual_pipeline_stage": 2,
        "account_for_embedding_in_pipeline_split": True,
        "account_for_loss_in_pipeline_split": True,
    }
    job = megatron_job(accounted).job
    assert job["virtual_stages"] == 12  # (94 + 2) / 4 / 2, as Megatron-LM counts
    stages = job["pipeline_layout"].split("|")
    assert len(stages) == 48 and stages[0] == "Et*1" and stages[-1] == "t*1L"
    uneven = {**base, "pipeline_model_parallel_size": 4, "decoder_first_pipeline_num_layers": 22}
    assert megatron_job(uneven).job["pipeline_layout"] == "Et*22|t*24|t*24|t*24L"
    layout = {
        **base,
        "pipeline_model_parallel_size": 2,
        "pipeline_model_parallel_layout": "Et*47|t*47L",
    }
    assert "virtual_stages" not in megatron_job(layout).job  # the job counts the layout's stages
    chunks = {
        "cluster": {"preset": "dgx-h100", "nodes": 1},
        "job": {
            "megatron_args": {
                **layout,
                "pipeline_model_parallel_layout": "Et*23|t*24|t*24|t*23L",
                "vocab_size": 1024,
                "bf16": True,
                "global_batch_size": 16,
            }
        },
    }
    from commwall.cluster import build_cluster
    from commwall.workload.job import resolve_job

    sc = parse_scenario(chunks)
    assert resolve_job(sc.job, build_cluster(sc.cluster)).virtual_stages == 2
    with pytest.raises(MegatronArgsError, match="does not divide"):
        megatron_job(
            {**base, "pipeline_model_parallel_size": 4, "num_layers_per_virtual_pipeline_stage": 3}
        )


@pytest.mark.parametrize(
    ("freq", "windowed"),
    [(None, 36), (2, 18), (4, 27), (1, 0), ("[1,0]*18", 18), ([1] * 30 + [0] * 6, 30)],
)
def test_window_attn_skip_freq_counts_the_windowed_layers(freq: Any, windowed: int) -> None:
    """Megatron-Core's is_layer_window_attention: an integer N leaves every N-th layer (1-based)
    full, a list marks the windowed ones with 1 (GPT-OSS: window 128 on every other of 36)."""
    args = {"num_layers": 36, "hidden_size": 64, "num_attention_heads": 2, "seq_length": 8,
            "window_size": "(127, 0)"}  # fmt: skip
    if freq is not None:
        args["window_attn_skip_freq"] = freq
    model = megatron_job(args).model
    assert model is not None and model["sliding_window"] == 127
    assert model.get("sliding_window_layers", 36) == windowed
    without = megatron_job({k: v for k, v in args.items() if k != "window_size"} | {
        "window_attn_skip_freq": 2})  # fmt: skip
    assert without.model is not None and "sliding_window" not in without.model
    assert "--window-attn-skip-freq" not in without.unread


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"expert_model_parallel_size": 8, "num_experts": 64}, "allgather"),
        ("--seq-length $SEQ", "$SEQ"),
        ({"window_size": "(127,0)", "window_attn_skip_freq": 0}, "--window-attn-skip-freq: 0"),
        (
            {"window_size": "(127,0)", "window_attn_skip_freq": "[1,0,1]"},
            "a list of 3 layers for --num-layers 2",
        ),
        ({"num_experts": 8, "moe_layer_freq": -2}, "--moe-layer-freq: -2 is not allowed"),
        ({"experimental_attention_variant": "dsa"}, "experimental-attention-variant"),
        (
            {"tensor_model_parallel_size": "eight"},
            "'eight' is not allowed; allowed: a whole number",
        ),
        ({"tensor_model_parallel_size": 0}, "0 is not allowed; allowed: a whole number 1.."),
        ("--seq-length 8\x00", "NUL"),
        ("--num-layers 4 --seq-length 8", "--hidden-size, --num-attention-heads"),
        ({"bf16": True}, "--seq-length"),
        ({"num_experts": 8, "moe_layer_freq": "__import__('os').system('x')"}, "moe-layer-freq"),
        ({"num_experts": 8, "moe_layer_freq": "[1]*10**9"}, "moe-layer-freq"),
        ({"num_experts": 8, "moe_layer_freq": "([0]*100000)*100000"}, "moe-layer-freq"),
        ({"num_experts": 8, "moe_layer_freq": "[True]*4"}, "moe-layer-freq"),
        ({"num_experts": 8, "moe_layer_freq": "(" * 500 + "[1]" + ")" * 500}, "moe-layer-freq"),
        ({"tensor_model_parallel_size": 10**30}, "allowed: a whole number 1.."),
        ({"hidden_size": "[bold]x"}, "[bold]x"),
        ({"attention_dropout": 2}, "out of range; allowed: a finite number 0..1"),
        ({"fp8_format": "e5m2"}, "e4m3, hybrid"),
        ({"fp8_format": "hybrid", "fp8_recipe": "custom"}, "allowed: delayed, tensorwise"),
        ({"cp_comm_type": ["p2p", "a2a"]}, "differs by layer"),
        ({"fp4_format": "e2m1", "fp4_recipe": "mxfp4"}, "--fp4-recipe: 'mxfp4' is not allowed"),
        ({"recompute_granularity": "partial"}, "--recompute-granularity: 'partial'"),
        ("--tp 1 'unterminated", "shell words"),
    ],
)
def test_refused_by_flag(args: Any, words: str) -> None:
    if isinstance(args, dict):
        args = {
            "num_layers": 2,
            "hidden_size": 64,
            "num_attention_heads": 2,
            "seq_length": 8,
            **args,
        }
        if args.get("bf16"):
            args = {"bf16": True}
    with pytest.raises(MegatronArgsError, match=re.escape(words)):
        megatron_job(args)


def test_scenario_reads_megatron_args(tmp_path: Path) -> None:
    (tmp_path / "train.sh").write_text(GPT3_SCRIPT.replace("--fp16", "--bf16"))
    (tmp_path / "s.yaml").write_text(
        "cluster: {preset: dgx-h100, nodes: 16}\n"
        "job: {megatron_args: train.sh, model: {vocab: 50257}, pp: 8}\n"
    )
    sc = load_scenario(tmp_path / "s.yaml")
    job = sc.job
    assert (job.tp, job.pp, job.recompute, job.zero_stage) == (8, 8, "none", 0)  # pp given wins
    assert (
        isinstance(job.model, ModelDef) and job.model.vocab == 51200 and job.model.name == "train"
    )
    assert job.grad_reduce_in_fp32 is True
    with pytest.raises(ScenarioError, match="vocabulary is not in the arguments"):
        parse_scenario({"job": {"megatron_args": GPT3_SCRIPT}})
    with pytest.raises(ScenarioError, match="define no model"):
        parse_scenario({"job": {"megatron_args": "--seq-length 4096 --bf16 --global-batch-size 8"}})
    with pytest.raises(ScenarioError, match="no --global-batch-size"):
        parse_scenario({"job": {"megatron_args": "--seq-length 4096", "model": "llama3-8b"}})
    zoo = parse_scenario(
        {
            "job": {
                "megatron_args": "--seq-length 4096 --bf16",
                "model": "llama3-8b",
                "global_batch": 8,
            }
        }
    )
    assert zoo.job.model == "llama3-8b" and zoo.job.attention_dropout == 0.1
    with pytest.raises(ScenarioError, match="allgather"):
        parse_scenario(
            {
                "job": {
                    "megatron_args": {
                        "ARGS": {**QWEN3_30B_ARGS, "moe_token_dispatcher_type": "allgather"}
                    }
                }
            }
        )
    (tmp_path / "empty.yaml").write_text("[]\n")
    with pytest.raises(ScenarioError, match="mapping of flags"):
        parse_scenario({"job": {"megatron_args": str(tmp_path / "empty.yaml")}})
    with pytest.raises(ScenarioError, match="megatron_args"):
        parse_scenario({"job": {"megatron_args": str(tmp_path / "missing.sh")}})


def test_a_validation_run_from_its_recipe_flags() -> None:
    """mlmpr5728-h100-bf16-qwen3-30b-a3b-32gpu, written by hand from its Megatron-Bridge
    recipe, against the same run read from the linked Megatron-LM recipe's flags: the one
    difference, Megatron-Bridge's bf16 gradient reduction, given beside them."""
    from commwall.validation.training import load_training_runs
    from commwall.workload.simulate import simulate

    run = {r.id: r for r in load_training_runs()}["mlmpr5728-h100-bf16-qwen3-30b-a3b-32gpu"]
    written = run.scenario()
    read = dict(written)
    read["job"] = {
        "megatron_args": QWEN3_30B_ARGS,
        "model": {"name": "qwen3-30b-a3b", "vocab": 151936},
        "grad_reduce_in_fp32": False,
    }
    by_hand = simulate(parse_scenario(written, run.id))
    from_flags = simulate(parse_scenario(read, run.id))
    assert from_flags.step_time == pytest.approx(by_hand.step_time, rel=1e-12)


def test_variables_as_the_launch_environment() -> None:
    """The MoE model zoo's MODEL_ARGS name their parallelism as ${TP}, ${PP}, set by its
    launcher: a scenario gives them in job.megatron_vars, and names the dispatcher the
    launcher adds (``DISPATCHER=alltoall``) beside the flags."""
    zoo = {
        "MODEL_ARGS": {
            "--tensor-model-parallel-size": "${TP}",
            "--pipeline-model-parallel-size": "${PP}",
            "--num-layers-per-virtual-pipeline-stage": "${LAYERS_PER_VP}",
            "--expert-model-parallel-size": "${EP}",
            "--micro-batch-size": "${MBS}",
            "--global-batch-size": "${GBS}",
            "--seq-length": "${SEQ_LEN}",
            "--moe-grouped-gemm": "${MOE_GROUPED_GEMM}",
            **{
                f"--{k.replace('_', '-')}": v
                for k, v in QWEN3_30B_ARGS.items()
                if "parallel_size" not in k
                and k
                not in (
                    "micro_batch_size",
                    "global_batch_size",
                    "seq_length",
                    "moe_token_dispatcher_type",
                    "moe_flex_dispatcher_backend",
                    "moe_grouped_gemm",
                )
            },
        }
    }
    variables = {
        "TP": 2,
        "PP": 4,
        "LAYERS_PER_VP": 3,
        "EP": 8,
        "MBS": 1,
        "GBS": 512,
        "SEQ_LEN": 4096,
        "MOE_GROUPED_GEMM": True,
    }
    sc = parse_scenario(
        {
            "cluster": {"preset": "dgx-h100", "nodes": 8},
            "job": {
                "megatron_args": zoo,
                "megatron_vars": variables,
                "moe_dispatcher": "alltoall",
                "model": {"vocab": 151936},
            },
        }
    )
    job = sc.job
    assert (job.tp, job.pp, job.virtual_stages, job.ep, job.global_batch) == (2, 4, 4, 8, 512)
    assert job.moe_dispatcher == "alltoall" and job.sequence_parallel
    assert dict(job.megatron_vars or ())["MOE_GROUPED_GEMM"] == "true"
    with pytest.raises(MegatronArgsError, match="allgather"):
        megatron_job(zoo["MODEL_ARGS"], {k: str(v) for k, v in variables.items()})
    with pytest.raises(ScenarioError, match="not a shell variable name"):
        parse_scenario({"job": {"megatron_args": zoo, "megatron_vars": {"1TP": 2}}})
    with pytest.raises(ScenarioError, match=r"\$\{TP\}"):
        parse_scenario({"job": {"megatron_args": zoo, "model": "llama3-8b"}})


def test_the_schema_takes_the_forms_a_user_writes() -> None:
    """An editor checking a scenario against `commwall schema` accepts a mapping of flags and a
    mapping of variables, the forms the job takes and keeps in other shapes."""
    import jsonschema

    from commwall.scenario import json_schema

    doc = {
        "job": {
            "megatron_args": {"ARGS": QWEN3_30B_ARGS},
            "megatron_vars": {"TP": 2, "SEQ_LEN": "4096", "FUSED": True},
        }
    }
    jsonschema.validate(doc, json_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"job": {"megatron_vars": {"TP": [2]}}}, json_schema())


_NAMES = st.sampled_from([*sorted(FLAGS), "foo", "disable_bias_linear", "fp8_format"])
_VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.text(max_size=4), max_size=3),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_NAMES, _VALUES, max_size=12))
def test_any_mapping_is_read_or_refused_by_name(flags: dict[str, Any]) -> None:
    try:
        megatron_job(flags)
    except MegatronArgsError as err:
        assert str(err)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([f"--{n.replace('_', '-')}" for n in FLAGS]), st.text(max_size=8)
        ),
        max_size=16,
    )
)
def test_any_words_are_read_or_refused_by_name(words: list[str]) -> None:
    try:
        megatron_job(" ".join(words))
    except MegatronArgsError as err:
        assert str(err)


@pytest.mark.parametrize(
    ("flags", "ends"),
    [
        ("--fp8-format hybrid --first-last-layers-bf16", [1, 1]),
        ("--fp8-format hybrid --first-last-layers-bf16 --num-layers-at-start-in-bf16 2", [2, 1]),
        ("--fp4-format e2m1 --first-last-layers-bf16 --num-layers-at-end-in-bf16 0", [1, 0]),
        ("--fp8-format hybrid --num-layers-at-start-in-bf16 2", None),
        ("--bf16 --first-last-layers-bf16", None),
    ],
)
def test_first_last_layers_bf16_becomes_the_jobs_bf16_end_layers(
    flags: str, ends: list[int] | None
) -> None:
    """Megatron-Core keeps num_layers_at_start/end_in_bf16 (1 and 1 by default) out of the
    FP8 or NVFP4 autocast only with --first-last-layers-bf16; in BF16 the flags do nothing."""
    read = megatron_job(
        f"--num-layers 4 --hidden-size 64 --num-attention-heads 2 --seq-length 8 {flags}"
    )
    assert read.job.get("bf16_end_layers") == ends
    assert read.unread == ()


def test_a_sequence_length_given_beside_the_flags_lifts_their_requirement() -> None:
    with pytest.raises(MegatronArgsError, match=re.escape("give it, or job.seq_len")):
        megatron_job("--global-batch-size 8")
    job = {"megatron_args": "--global-batch-size 8 --bf16", "model": "llama3-8b", "seq_len": 2048}
    scenario = parse_scenario({"job": job})
    assert (scenario.job.seq_len, scenario.job.global_batch) == (2048, 8)


#: Nemotron 3 Nano's hybrid architecture as Megatron-LM flags (Megatron-Bridge's
#: nemotron_3_nano_pretrain_8gpu_h100_bf16_config), and the seq/batch a run needs.
NANO_ARGS: dict[str, Any] = {
    "hidden_size": 2688, "ffn_hidden_size": 1856, "num_attention_heads": 32,
    "group_query_attention": True, "num_query_groups": 2, "kv_channels": 128,
    "mamba_num_heads": 64, "mamba_head_dim": 64, "num_experts": 128, "moe_router_topk": 6,
    "moe_ffn_hidden_size": 1856, "moe_shared_expert_intermediate_size": 3712,
    "position_embedding_type": "none", "untie_embeddings_and_output_weights": True,
    "normalization": "RMSNorm", "seq_length": 8192, "micro_batch_size": 2,
    "expert_model_parallel_size": 8, "bf16": True, "moe_token_dispatcher_type": "alltoall",
}  # fmt: skip
NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"


def test_a_hybrid_pattern_s_multi_token_prediction_depths() -> None:
    """Megatron-Core's unified --hybrid-layer-pattern puts each MTP depth's pattern after a
    '/' (the depths set --mtp-num-layers, as validate_args infers them); the legacy
    --mtp-hybrid-override-pattern gives the pattern beside --mtp-num-layers; and
    --mtp-use-repeated-layer shares one module among the depths (Nemotron 3.5 Lightning)."""
    unified = megatron_job(
        {**NANO_ARGS, "hybrid_layer_pattern": NANO_PATTERN + "/*E/*E",
         "mtp_use_repeated_layer": True}
    )  # fmt: skip
    assert unified.model is not None
    assert unified.model["hybrid_pattern"] == NANO_PATTERN
    assert unified.model["mtp_pattern"] == "*E"
    assert (unified.job["mtp_layers"], unified.job["mtp_shared"]) == (2, True)
    legacy = megatron_job(
        {**NANO_ARGS, "hybrid_layer_pattern": NANO_PATTERN, "mtp_num_layers": 2,
         "mtp_hybrid_override_pattern": "*E", "mtp_use_repeated_layer": True}
    )  # fmt: skip
    assert legacy.model == unified.model and legacy.job == unified.job
    spec = model_from_def(ModelDef(name="lightning", vocab=131072, **unified.model))
    assert spec.mtp_pattern == "*E" and spec.hybrid_pattern == NANO_PATTERN
    conflict = megatron_job(
        {**NANO_ARGS, "hybrid_layer_pattern": NANO_PATTERN + "/*E/*E", "mtp_num_layers": 1}
    )
    assert conflict.job["mtp_layers"] == 2 and "mtp_shared" not in conflict.job
    assert any("uses the pattern's" in n for n in conflict.notes)
    for odd in ("/*E/E", "/*E//*E"):
        with pytest.raises(MegatronArgsError, match="same pattern"):
            megatron_job({**NANO_ARGS, "hybrid_layer_pattern": NANO_PATTERN + odd})
    with pytest.raises(MegatronArgsError, match="layers come before the first /"):
        megatron_job({**NANO_ARGS, "hybrid_layer_pattern": "/*E/*E"})
    bare = megatron_job({**NANO_ARGS, "hybrid_layer_pattern": NANO_PATTERN + "/"})
    assert bare.model is not None and "mtp_pattern" not in bare.model
    assert "mtp_layers" not in bare.job


def test_the_precision_aware_optimizer_flags() -> None:
    """--use-precision-aware-optimizer with its dtypes reads into the job; --main-grads-dtype
    bf16 keeps a bf16 run's gradients in bf16 (Megatron-LM's arguments.py accumulates them in
    fp32 only with fp32 main gradients); lower dtypes without the flag are refused, by flag."""
    base = megatron_job(QWEN3_30B_ARGS).job
    assert "precision_aware_optimizer" not in base and base["grad_reduce_in_fp32"] is True
    flags = {"use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16",
             "exp_avg_sq_dtype": "bf16", "main_grads_dtype": "bf16"}  # fmt: skip
    job = megatron_job({**QWEN3_30B_ARGS, **flags}).job
    assert job["precision_aware_optimizer"] is True
    assert (job["exp_avg_dtype"], job["exp_avg_sq_dtype"]) == ("bf16", "bf16")
    assert "main_params_dtype" not in job and job["grad_reduce_in_fp32"] is False
    fp32_grads = megatron_job({**QWEN3_30B_ARGS, **flags, "main_grads_dtype": "fp32"}).job
    assert fp32_grads["grad_reduce_in_fp32"] is True
    with pytest.raises(MegatronArgsError, match=r"--exp-avg-dtype: .*--use-precision-aware"):
        megatron_job({**QWEN3_30B_ARGS, "exp_avg_dtype": "bf16"})
    with pytest.raises(MegatronArgsError, match=r"--main-grads-dtype: .*--use-precision-aware"):
        megatron_job({**QWEN3_30B_ARGS, "main_grads_dtype": "bf16"})
    with pytest.raises(MegatronArgsError, match=r"--exp-avg-sq-dtype.*allowed: fp32, fp16"):
        megatron_job({**QWEN3_30B_ARGS, **flags, "exp_avg_sq_dtype": "int4"})
    with pytest.raises(MegatronArgsError, match="--accumulate-allreduce-grads-in-fp32"):
        megatron_job({**QWEN3_30B_ARGS, **flags, "accumulate_allreduce_grads_in_fp32": True})
    sc = parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 2}, "job": job})
    assert sc.job.precision_aware_optimizer and sc.job.exp_avg_dtype == "bf16"
