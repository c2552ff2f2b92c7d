"""Models as data: Hugging Face config.json files and inline definitions become ModelSpecs whose
parameter counts match the published ones, and everything else is a one-line error."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.scenario import ModelDef, load_scenario
from commwall.workload.hf_config import (
    ModelDefinitionError,
    load_hf_config,
    model_from_def,
    model_from_hf_config,
)
from commwall.workload.models import get_model

runner = CliRunner()

#: Published config.json values (Hugging Face model repositories, keys as published).
LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "tie_word_embeddings": False, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
    "attention_bias": False, "hidden_act": "silu", "_name_or_path": "meta-llama/Meta-Llama-3-8B",
}  # fmt: skip
#: Qwen/Qwen2.5-7B config.json; 7.61B parameters on its model card.
QWEN25_7B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "sliding_window": 131072, "use_sliding_window": False,
}  # fmt: skip
#: mistralai/Mixtral-8x7B-v0.1 config.json; 46.7B total on Mistral AI's announcement.
MIXTRAL: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": None,
    "tie_word_embeddings": False,
}  # fmt: skip
#: Qwen/Qwen1.5-MoE-A2.7B config.json: 14.3B total, 2.7B activated (model card).
QWEN_MOE: dict[str, Any] = {
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 24,
    "vocab_size": 151936, "max_position_embeddings": 8192, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "tie_word_embeddings": False, "use_sliding_window": False,
    "sliding_window": 32768,
}  # fmt: skip
#: mistralai/Mistral-7B-v0.1 config.json: a 4,096-token window on every layer (Jiang et al.
#: 2023 §2); 7,241,732,096 parameters (the safetensors index's total_size / 2 bytes).
MISTRAL_V01: dict[str, Any] = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096, "tie_word_embeddings": False, "rope_theta": 10000.0,
}  # fmt: skip
#: microsoft/Phi-3-mini-4k-instruct config.json: window 2047 at a 4k context; 3.8B on the card.
PHI3_MINI: dict[str, Any] = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
    "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 32, "vocab_size": 32064, "max_position_embeddings": 4096,
    "sliding_window": 2047, "tie_word_embeddings": False, "attention_bias": False,
}  # fmt: skip
#: openai-community/gpt2 config.json (124M).
GPT2: dict[str, Any] = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "n_inner": None, "vocab_size": 50257,
}  # fmt: skip


#: meta-llama/Llama-4-Maverick-17B-128E config.json's text_config, as NVIDIA TensorRT-LLM's
#: Llama 4 test copies it (LLAMA_4_MAVERICK_TWO_LAYER_CONFIG) with its 48 layers and without
#: the test's no_rope_layer_interval override; 17B active of 400B on Meta's model card.
MAVERICK_TEXT: dict[str, Any] = {
    "attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 5120, "interleave_moe_layer_step": 2,
    "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 1048576, "model_type": "llama4_text", "num_attention_heads": 40,
    "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
    "num_local_experts": 128, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 500000.0, "use_qk_norm": False, "vocab_size": 202048,
}  # fmt: skip
MAVERICK: dict[str, Any] = {
    "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
    "text_config": MAVERICK_TEXT, "vision_config": {"model_type": "llama4_vision_model"},
}  # fmt: skip
#: Scout: Maverick's text model with 16 experts on every layer and q/k norms
#: (meta-llama/Llama-4-Scout-17B-16E); 17B active of 109B on the card.
SCOUT: dict[str, Any] = {
    **MAVERICK,
    "text_config": {**MAVERICK_TEXT, "interleave_moe_layer_step": 1, "num_local_experts": 16,
                    "use_qk_norm": True, "max_position_embeddings": 10485760},
}  # fmt: skip


def test_a_llama3_config_is_the_zoo_model() -> None:
    spec = model_from_hf_config(LLAMA3_8B, name="x")
    zoo = get_model("llama3-8b")
    assert spec.total_params() == zoo.total_params() == 8_030_261_248
    assert spec.training_flops_per_token(8192) == zoo.training_flops_per_token(8192)


@pytest.mark.parametrize(
    ("config", "published", "rel"),
    [(QWEN25_7B, 7.61e9, 0.005), (MIXTRAL, 46.7e9, 0.005), (QWEN_MOE, 14.3e9, 0.01),
     (GPT2, 124.44e6, 0.001)],
)  # fmt: skip
def test_parameter_counts_match_the_published_ones(
    config: dict[str, Any], published: float, rel: float
) -> None:
    spec = model_from_hf_config(config)
    assert spec.total_params() == pytest.approx(published, rel=rel)
    assert sum(n for _, n in spec.gradient_tensors()) == spec.total_params()


@pytest.mark.parametrize(
    ("config", "window", "params"),
    [(MISTRAL_V01, 4096, 7_241_732_096), (PHI3_MINI, 2047, 3_821_079_552),
     ({**QWEN25_7B, "use_sliding_window": True, "max_window_layers": 0}, 131072, None),
     ({**QWEN25_7B, "use_sliding_window": True, "max_window_layers": 28}, None, None),
     ({**QWEN25_7B, "layer_types": ["full_attention"] * 28}, None, None),
     ({**MISTRAL_V01, "sliding_window": None}, None, 7_241_732_096),
     ({**LLAMA3_8B, "sliding_window": 4096}, None, 8_030_261_248),
     ({**QWEN25_7B, "use_sliding_window": True, "max_window_layers": 21}, (131072, 7), None),
     ({**QWEN25_7B, "use_sliding_window": True}, None, None),  # the default 28 of 28 layers
     ({**LLAMA3_8B, "layer_types": ["full_attention"] * 31 + ["sliding_attention"],
       "sliding_window": 8}, (8, 1), 8_030_261_248)],
)  # fmt: skip
def test_a_window_is_read_with_the_layers_it_is_on_and_changes_no_parameter(
    config: dict[str, Any], window: int | tuple[int, int] | None, params: int | None
) -> None:
    """Mistral and Phi-3 use ``sliding_window`` whenever it is set, Qwen only when
    ``use_sliding_window`` is true, on the layers from ``max_window_layers`` on;
    ``layer_types`` overrides both, and Llama's class has no window to read."""
    spec = model_from_hf_config(config)
    if isinstance(window, tuple):
        assert (spec.sliding_window, spec.sliding_window_layers) == window
    else:
        assert spec.sliding_window == window and spec.sliding_window_layers is None
    if params is not None:
        assert spec.total_params() == params


def test_mistral_s_window_makes_its_8k_step_cheaper_than_without(tmp_path: Path) -> None:
    """From the CLI: the window shortens the attention at 8k and not at 4k (= the window)."""
    steps = {}
    for name, window in (("win", 4096), ("none", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(
            json.dumps({**MISTRAL_V01, "sliding_window": window})
        )
        for s in (4096, 8192):
            scenario = tmp_path / f"{name}{s}.yaml"
            scenario.write_text(
                "cluster: {preset: dgx-h100, nodes: 1}\n"
                f"job: {{model: {{hf_config: {name}/config.json}}, tp: 1, dp: 8, "
                f"global_batch: 8, seq_len: {s}}}\n"
            )
            result = runner.invoke(app, ["run", str(scenario), "--json"])
            assert result.exit_code == 0, result.output
            steps[name, s] = json.loads(result.stdout)["step_time_s"]
    assert steps["win", 4096] == steps["none", 4096]
    assert steps["win", 8192] < steps["none", 8192]
    text = runner.invoke(app, ["run", str(tmp_path / "win8192.yaml")], env={"COLUMNS": "200"})
    assert "cuDNN fused attention over a 4,096-token window" in text.stdout
    text = runner.invoke(app, ["run", str(tmp_path / "win4096.yaml")], env={"COLUMNS": "200"})
    assert "window" not in text.stdout


#: EleutherAI/pythia-* config.json shapes (hidden, layers, heads, intermediate, vocab) and the
#: total parameters the Pythia model cards list (Biderman et al. 2023, "Pythia", Table 1).
PYTHIA = {
    "70m": (512, 6, 8, 2048, 50304, 70_426_624),
    "1.4b": (2048, 24, 16, 8192, 50304, 1_414_647_808),
    "6.9b": (4096, 32, 32, 16384, 50432, 6_857_302_016),
    "12b": (5120, 36, 40, 20480, 50688, 11_846_072_320),
}


@pytest.mark.parametrize("size", sorted(PYTHIA))
def test_pythia_is_gpt_neox_to_the_parameter(size: str) -> None:
    """GPT-NeoX: LayerNorm, biases on every linear layer, a GELU MLP, rotary positions and an
    untied head; every Pythia size matches its published count exactly."""
    h, layers, heads, ffn, vocab, published = PYTHIA[size]
    spec = model_from_hf_config(
        {"model_type": "gpt_neox", "hidden_size": h, "num_hidden_layers": layers,
         "num_attention_heads": heads, "intermediate_size": ffn, "vocab_size": vocab,
         "max_position_embeddings": 2048, "rotary_pct": 0.25, "use_parallel_residual": True}
    )  # fmt: skip
    assert spec.total_params() == published
    assert spec.norm == "layernorm" and spec.linear_bias and not spec.gated_mlp
    assert not spec.learned_pos_emb and not spec.tied_embeddings
    with pytest.raises(ModelDefinitionError, match="attention_bias: false: the MLP keeps"):
        model_from_hf_config({**GPT_NEOX_20B, "attention_bias": False})


#: EleutherAI/gpt-neox-20b config.json.
GPT_NEOX_20B: dict[str, Any] = {
    "model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44,
    "num_attention_heads": 64, "intermediate_size": 24576, "vocab_size": 50432,
    "max_position_embeddings": 2048, "rotary_pct": 0.25, "tie_word_embeddings": False,
}  # fmt: skip
#: bigcode/starcoder2-7b config.json.
STARCODER2_7B: dict[str, Any] = {
    "model_type": "starcoder2", "hidden_size": 4608, "intermediate_size": 18432,
    "num_attention_heads": 36, "num_key_value_heads": 4, "num_hidden_layers": 32,
    "vocab_size": 49152, "max_position_embeddings": 16384, "sliding_window": 4096,
    "use_bias": True, "norm_type": "layer_norm", "tie_word_embeddings": False,
}  # fmt: skip


def test_starcoder2_counts_its_biases_layernorms_and_kv_heads_and_keeps_its_window() -> None:
    """StarCoder2 (transformers' Starcoder2 modules): q, k, v, o and c_fc, c_proj with biases,
    two LayerNorms (weight and bias) a layer and a final one, GQA and a window on every layer."""
    spec = model_from_hf_config(STARCODER2_7B)
    h, f, kv, layers, vocab = 4608, 18432, 4 * 128, 32, 49152
    layer = (2 * (h * h + h) + 2 * (h * kv + kv)) + (h * f + f) + (f * h + h) + 2 * 2 * h
    assert spec.total_params() == 2 * vocab * h + layers * layer + 2 * h
    assert spec.sliding_window == 4096 and spec.n_kv_heads == 4
    tied = model_from_hf_config(
        {k: v for k, v in STARCODER2_7B.items() if k != "tie_word_embeddings"}
    )
    assert tied.tied_embeddings  # Starcoder2Config's default
    with pytest.raises(ModelDefinitionError, match="use_bias: false: no biases"):
        model_from_hf_config({**STARCODER2_7B, "use_bias": False})


def test_granite_and_olmo2_are_llama_shaped() -> None:
    """ibm-granite/granite-3.0-8b-base and allenai/OLMo-2-1124-7B config.json shapes: Llama's
    layer (q, k, v, o; gate, up, down; two RMSNorms), Granite's scaling constants change no
    shape."""
    granite = model_from_hf_config(
        {**LLAMA3_8B, "model_type": "granite", "intermediate_size": 12800,
         "num_hidden_layers": 40, "vocab_size": 49155, "tie_word_embeddings": True,
         "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "logits_scaling": 16.0}
    )  # fmt: skip
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12800 + 2 * 4096
    assert granite.total_params() == 49155 * 4096 + 40 * layer + 4096  # tied: 8.17B
    olmo2 = model_from_hf_config(
        {**LLAMA3_8B, "model_type": "olmo2", "intermediate_size": 11008,
         "num_key_value_heads": 32, "vocab_size": 100352, "max_position_embeddings": 4096}
    )  # fmt: skip
    # OLMo 2's q and k norms over the whole projections: 4096 + 4096 weights a layer
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096 + 2 * 4096
    assert olmo2.total_params() == 2 * 100352 * 4096 + 32 * layer + 4096
    assert olmo2.qk_norm == "projection" and granite.qk_norm == "none"


def test_qwen3_normalises_queries_and_keys_per_head() -> None:
    """Qwen/Qwen3-8B config.json: ``Qwen3Attention``'s q_norm and k_norm (head_dim weights
    each) after o_proj in registration order; 8.19B in all (the model card's 8.2B)."""
    spec = model_from_hf_config(
        {**LLAMA3_8B, "model_type": "qwen3", "num_hidden_layers": 36, "intermediate_size": 12288,
         "vocab_size": 151936, "head_dim": 128, "max_position_embeddings": 40960}
    )  # fmt: skip
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12288 + 2 * 4096 + 2 * 128
    assert spec.total_params() == 2 * 151936 * 4096 + 36 * layer + 4096 == 8_190_735_360
    names = [n for n, _ in spec.gradient_tensors() if n.startswith("model.layers.0.self_attn")]
    assert names[-2:] == ["model.layers.0.self_attn.q_norm.weight",
                          "model.layers.0.self_attn.k_norm.weight"]  # fmt: skip


#: openai/gpt-oss-120b config.json (layer_types: sliding and full alternating from layer 0).
GPT_OSS_120B: dict[str, Any] = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36,
    "num_local_experts": 128, "num_experts_per_tok": 4, "vocab_size": 201088,
    "hidden_size": 2880, "intermediate_size": 2880, "head_dim": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "sliding_window": 128, "tie_word_embeddings": False,
    "max_position_embeddings": 131072, "attention_bias": True, "swiglu_limit": 7.0,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                     "original_max_position_embeddings": 4096, "rope_type": "yarn",
                     "truncate": False},
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "total", "layers"),
    [({}, 116.83e9, 18), ({"layer_types": None}, 116.83e9, 18),
     ({"sliding_window": None}, 116.83e9, None),
     ({"num_hidden_layers": 24, "num_local_experts": 32, "layer_types": None}, 20.91e9, 12)],
)  # fmt: skip
def test_gpt_oss_matches_its_model_card(
    change: dict[str, Any], total: float, layers: int | None
) -> None:
    """OpenAI's gpt-oss model card, Table 1: 116.83B parameters (120b), 20.91B (20b); its
    architecture section: a 128-token window on every other layer. Active: the card's 5.13B leaves the
    unembedding out, so it is 5.13B + 201,088 x 2,880 here (embeddings counted once)."""
    spec = model_from_hf_config({**GPT_OSS_120B, **change})
    assert spec.total_params() == pytest.approx(total, abs=0.005e9)
    window = (None, None) if layers is None else (128, layers)
    assert (spec.sliding_window, spec.sliding_window_layers) == window
    if total > 100e9:
        active = spec.active_params_per_token() - 201088 * 2880
        assert active == pytest.approx(5.13e9, abs=0.005e9)
    with pytest.raises(ModelDefinitionError, match="attention_bias: false: the experts keep"):
        model_from_hf_config({**GPT_OSS_120B, "attention_bias": False})


def test_gpt_oss_s_swiglu_limit_is_the_glu_clamp() -> None:
    """``swiglu_limit`` is the clamp of GPT-OSS's GLU (``activation_clamp``, as the zoo model
    has it; GptOssConfig's default 7 when absent); a value that is not a positive, finite
    number is named with the key."""
    assert model_from_hf_config(GPT_OSS_120B).activation_clamp == 7.0
    assert get_model("gpt-oss-120b").activation_clamp == 7.0
    absent = {k: v for k, v in GPT_OSS_120B.items() if k != "swiglu_limit"}
    assert model_from_hf_config(absent).activation_clamp == 7.0
    assert model_from_hf_config({**GPT_OSS_120B, "swiglu_limit": 5}).activation_clamp == 5.0
    for bad in (0, -7.0, "7", True, None, float("inf")):
        with pytest.raises(ModelDefinitionError, match=r"swiglu_limit: .* positive, finite"):
            model_from_hf_config({**GPT_OSS_120B, "swiglu_limit": bad})
    assert model_from_hf_config(LLAMA3_8B).activation_clamp is None


def test_a_yarn_rope_scaling_marks_the_rotary_unfused_where_megatron_runs_it_so() -> None:
    """GPT-OSS's ``rope_scaling`` (``rope_type`` yarn) sets ``yarn_rope``, as the zoo model has
    it, under either key and in older files' ``type``; Llama 3.1's ``llama3`` scaling and none
    leave it off, as do MLA models (DeepSeek-V3's yarn: its rotary is MLA's own kernel); a
    scaling that is not an object is named."""
    yarn = {"rope_type": "yarn", "factor": 32.0}
    assert model_from_hf_config(GPT_OSS_120B).yarn_rope is get_model("gpt-oss-120b").yarn_rope
    assert model_from_hf_config(GPT_OSS_120B).yarn_rope is True
    no_scaling = {k: v for k, v in GPT_OSS_120B.items() if k != "rope_scaling"}
    assert not model_from_hf_config(no_scaling).yarn_rope
    assert model_from_hf_config({**no_scaling, "rope_parameters": yarn}).yarn_rope
    assert model_from_hf_config({**LLAMA3_8B, "rope_scaling": {"type": "yarn"}}).yarn_rope
    llama31 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert not model_from_hf_config({**LLAMA3_8B, "rope_scaling": llama31}).yarn_rope
    assert not model_from_hf_config({**LLAMA3_8B, "rope_scaling": None}).yarn_rope
    deepseek = {**DEEPSEEK_V3, "rope_scaling": {**yarn, "mscale": 1.0, "mscale_all_dim": 1.0}}
    assert not model_from_hf_config(deepseek).yarn_rope
    assert not model_from_hf_config({**GPT2, "rope_scaling": yarn}).yarn_rope
    # a multimodal checkpoint's text model carries it in its text_config, read as the family is
    nested = {**MAVERICK, "text_config": {**MAVERICK_TEXT, "rope_scaling": yarn}}
    assert model_from_hf_config(nested).yarn_rope
    assert not model_from_hf_config({**MAVERICK, "rope_scaling": yarn}).yarn_rope
    for bad, message in (("yarn", "rope_scaling: 'yarn': must be an object"),
                         ({"rope_type": 3}, "rope_scaling.rope_type: 3: must be a string")):  # fmt: skip
        with pytest.raises(ModelDefinitionError, match=message):
            model_from_hf_config({**LLAMA3_8B, "rope_scaling": bad})


#: deepseek-ai/DeepSeek-V3 config.json (keys that size the model): 671B total, 37B activated
#: (DeepSeek-V3 Technical Report §4.2; the MTP module's weights are not loaded by transformers).
DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
    "max_position_embeddings": 163840, "tie_word_embeddings": False, "attention_bias": False,
    "num_nextn_predict_layers": 1, "n_group": 8, "topk_group": 4, "scoring_func": "sigmoid",
}  # fmt: skip
#: zai-org/GLM-4.5 config.json (keys that size the model): 355B total with its MTP layer.
GLM45: dict[str, Any] = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 5120,
    "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_attention_heads": 96,
    "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 92, "n_routed_experts": 160,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "attention_bias": True, "use_qk_norm": True, "partial_rotary_factor": 0.5,
    "vocab_size": 151552, "max_position_embeddings": 131072, "tie_word_embeddings": False,
}  # fmt: skip


def test_deepseek_v3_config_is_the_zoo_model_with_its_published_counts() -> None:
    spec = model_from_hf_config(DEEPSEEK_V3, name="deepseek-v3")
    zoo = get_model("deepseek-v3")
    assert spec.total_params() == zoo.total_params() == 671_026_404_352
    assert spec.total_params() == pytest.approx(671e9, rel=0.001)
    assert spec.active_params_per_token() == pytest.approx(37e9, rel=0.02)
    assert (spec.dense_layers, spec.kv_lora_rank, spec.q_lora_rank) == (3, 512, 1536)
    assert (spec.qk_head_dim, spec.v_head, spec.q_dim, spec.o_dim) == (192, 128, 24576, 16384)
    assert (spec.expert_groups, spec.group_topk) == (zoo.expert_groups, zoo.group_topk) == (8, 4)


def test_group_limited_routing_is_read_where_the_config_routes_by_groups() -> None:
    """n_group and topk_group become expert_groups and group_topk (Megatron-Bridge's
    moe_router_num_groups and moe_router_group_topk); DeepSeek-V2-Lite's greedy top-k routes
    over all experts whatever its n_group; impossible groups are named."""
    glm = model_from_hf_config({**GLM45, "n_group": 1, "topk_group": 1})
    assert (glm.expert_groups, glm.group_topk) == (1, 1)
    greedy = model_from_hf_config({**DEEPSEEK_V3, "topk_method": "greedy"})
    assert (greedy.expert_groups, greedy.group_topk) == (1, 1)
    with pytest.raises(ModelDefinitionError, match="expert_groups=8, group_topk=1 is invalid"):
        model_from_hf_config({**DEEPSEEK_V3, "topk_group": 1, "num_experts_per_tok": 40})
    with pytest.raises(ModelDefinitionError, match="expert_groups=3, group_topk=1 is invalid"):
        model_from_hf_config({**DEEPSEEK_V3, "n_group": 3, "topk_group": 1})
    with pytest.raises(ModelDefinitionError, match="n_group: 0: must be an integer"):
        model_from_hf_config({**DEEPSEEK_V3, "n_group": 0})


def test_glm45_has_dense_layers_and_grouped_query_attention_with_biases() -> None:
    spec = model_from_hf_config(GLM45, name="glm-4.5")
    assert spec.total_params() == get_model("glm-4.5").total_params()
    # the card's 355B counts the MTP layer (one more MoE layer and its projection, ~4B)
    assert spec.total_params() == pytest.approx(355e9, rel=0.01)
    assert (spec.mla, spec.qkv_bias, spec.qk_norm, spec.dense_layers) == (False, True, "head", 3)


def test_kimi_k2_is_deepseek_v3_s_architecture_at_a_trillion() -> None:
    """moonshotai/Kimi-K2-Instruct config.json: 384 experts, 64 heads, one dense layer; its
    model card gives 1T total and 32B activated parameters (embeddings counted here)."""
    kimi = {**DEEPSEEK_V3, "model_type": "kimi_k2", "n_routed_experts": 384,
            "num_attention_heads": 64, "num_key_value_heads": 64, "first_k_dense_replace": 1,
            "vocab_size": 163840, "max_position_embeddings": 131072,
            "num_nextn_predict_layers": 0}  # fmt: skip
    spec = model_from_hf_config(kimi)
    assert spec.total_params() == pytest.approx(1e12, rel=0.03)
    assert spec.active_params_per_token() == pytest.approx(32e9, rel=0.03)
    assert (spec.dense_layers, spec.n_experts, spec.n_heads) == (1, 384, 64)


def test_deepseek_moe_layer_freq_keeps_experts_on_every_n_th_layer_past_the_dense_ones() -> None:
    """DeepSeek's reference decoder layer holds experts where layer_idx >= first_k_dense_replace
    and layer_idx % moe_layer_freq == 0: with 3 dense layers and a frequency of 2, layers 4, 6,
    8, ... of 61 (29 of them)."""
    spec = model_from_hf_config({**DEEPSEEK_V3, "moe_layer_freq": 2})
    assert [spec.is_moe_layer(i) for i in range(7)] == [False] * 4 + [True, False, True]
    assert spec.moe_layer_count == 29
    (dense, n_dense), (_, n_moe) = spec.layer_kinds
    assert (n_dense, n_moe) == (32, 29) and dense.ffn_hidden == 18432
    with pytest.raises(ModelDefinitionError, match="moe_layer_freq: 2: read for the DeepSeek"):
        model_from_hf_config({**MIXTRAL, "moe_layer_freq": 2})


def test_deepseek_v2_lite_has_no_query_latent() -> None:
    """DeepSeek-V2-Lite (15.7B on its model card): queries straight from the hidden state."""
    lite = {**DEEPSEEK_V3, "model_type": "deepseek_v2", "num_hidden_layers": 27,
            "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
            "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2,
            "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
            "q_lora_rank": None, "vocab_size": 102400}  # fmt: skip
    spec = model_from_hf_config(lite)
    assert spec.q_lora_rank is None
    assert spec.mla_projections()[0][0] == "q_proj"
    assert spec.total_params() == pytest.approx(15.7e9, rel=0.01)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"moe_layer_freq": 0}, "moe_layer_freq: 0: must be an integer >= 1"),
     ({"attention_bias": True}, "attention_bias: true: biases on MLA"),
     ({"kv_lora_rank": None}, "kv_lora_rank: missing"),
     ({"num_key_value_heads": 16}, "n_kv_heads=16 is invalid with kv_lora_rank"),
     ({"first_k_dense_replace": 61}, "dense_layers=61 is invalid"),
     ({"n_routed_experts": 1, "num_experts_per_tok": 1}, "dense_layers=3 is invalid")],
)  # fmt: skip
def test_deepseek_configs_that_cannot_be_used_are_named(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ModelDefinitionError, match=message):
        model_from_hf_config({**DEEPSEEK_V3, **change})


#: allenai/OLMoE-1B-7B-0924 config.json (Muennighoff et al. 2024, "OLMoE", Table 1: 6.9B
#: total, 1.3B active, embeddings counted) and ibm-granite/granite-3.0-3b-a800m-base's (3.3B
#: total; its name's 800M active leave the 75.5M-parameter tied embedding out).
OLMOE: dict[str, Any] = {
    "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048,
    "intermediate_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 16,
    "num_hidden_layers": 16, "num_experts": 64, "num_experts_per_tok": 8,
    "vocab_size": 50304, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}  # fmt: skip
GRANITE_MOE: dict[str, Any] = {
    "architectures": ["GraniteMoeForCausalLM"], "model_type": "granitemoe",
    "hidden_size": 1536, "intermediate_size": 512, "num_attention_heads": 24,
    "num_key_value_heads": 8, "num_hidden_layers": 32, "num_local_experts": 40,
    "num_experts_per_tok": 8, "vocab_size": 49155, "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "total", "active", "embedding"),
    [(OLMOE, 6.9e9, 1.3e9, True), (GRANITE_MOE, 3.3e9, 0.8e9, False)],
)
def test_olmoe_and_granite_moe_match_their_published_sizes(
    config: dict[str, Any], total: float, active: float, embedding: bool
) -> None:
    spec = model_from_hf_config(config)
    assert spec.total_params() == pytest.approx(total, rel=0.01)
    table = 0 if embedding else spec.vocab * spec.hidden
    assert spec.active_params_per_token() - table == pytest.approx(active, rel=0.02)
    assert spec.expert_ffn == config["intermediate_size"] and spec.moe_layer_pattern is None
    assert spec.qk_norm == ("projection" if config["model_type"] == "olmoe" else "none")
    shared = model_from_hf_config(
        {**GRANITE_MOE, "model_type": "granitemoeshared", "shared_intermediate_size": 1024}
    )
    assert shared.shared_ffn_hidden == 1024


def test_qwen_moe_activates_its_published_share() -> None:
    spec = model_from_hf_config(QWEN_MOE)
    # 2.7B activated per the model card (embeddings counted once, as Qwen counts them)
    assert spec.active_params_per_token() == pytest.approx(2.7e9, rel=0.06)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"model_type": "falcon"}, "model_type: 'falcon' is not supported; supported: llama"),
     ({"model_type": "qwen3_next"}, "'qwen3_next' is not supported (its Gated DeltaNet"),
     ({"model_type": "jamba"}, "'jamba' is not supported (its Mamba-1 layers"),
     ({"first_k_dense_replace": 3}, "first_k_dense_replace: 3: dense layers among MoE layers"),
     ({"q_lora_rank": 1536}, "q_lora_rank: 1536: multi-head latent attention"),
     ({"q_lora_rank": False}, "q_lora_rank: False; allowed: an integer"),
     ({"num_hidden_layers": 0}, "num_hidden_layers: 0: must be an integer from 1"),
     ({"hidden_size": "4096"}, "hidden_size: '4096'"),
     ({"num_hidden_layers": None}, "num_hidden_layers: missing"),
     ({"layer_types": ["full_attention"] * 31, "sliding_window": 8}, "layer_types: 31 entries"),
     ({"layer_types": ["sliding_attention"] * 32, "sliding_window": 0},
      "sliding_window: 0: must be"),
     ({"layer_types": ["chunked_attention"] * 32, "sliding_window": 8},
      "allowed: 32 (num_hidden_layers"),
     ({"layer_types": "full_attention", "sliding_window": 8},
      "layer_types: 'full_attention': must be a list"),
     ({"model_type": "mistral", "sliding_window": 0}, "sliding_window: 0: must be"),
     ({"attention_bias": True}, "attention_bias: true"),
     ({"tie_word_embeddings": "no"}, "tie_word_embeddings: 'no'"),
     ({"num_key_value_heads": 5}, "n_kv_heads=5 is invalid"),
     ({"hidden_size": 10**12}, "hidden_size"),
     ({"num_hidden_layers": 100_000}, "n_layers: 100000: at most 1,024"),
     ({"model_type": "mixtral", "num_local_experts": 4096, "num_experts_per_tok": 2},
      "n_experts: 4096 experts x 32 layers")],
)  # fmt: skip
def test_what_cannot_be_used_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelDefinitionError, match=message.replace("(", r"\(")):
        model_from_hf_config({**LLAMA3_8B, **change})


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\xff\xfe\x00binary", "not a JSON file"), (b"[1, 2]", "top level must be a JSON object"),
     (b"", "not a JSON file"), (b"{" + b" " * (1 << 20) + b"}", "larger than 1 MiB"),
     (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
     (b'{"model_type": "llama", "model_type": "gpt2"}', "duplicate key 'model_type'")],
)  # fmt: skip
def test_bad_files_are_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(ModelDefinitionError, match=message):
        load_hf_config(path)
    with pytest.raises(ModelDefinitionError, match="cannot read"):
        load_hf_config(tmp_path / "missing.json")


def test_the_name_comes_from_the_config_and_is_safe_to_print(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA3_8B, "_name_or_path": "org/[bold]Evil\x1b[31m"}))
    name = load_hf_config(path).name
    assert name == "bold-evil-x1b-31m" or set(name) <= set(
        "abcdefghijklmnopqrstuvwxyz0123456789.-+_"
    )


def test_llama4_maverick_is_the_zoo_model_with_its_interleaved_layers() -> None:
    spec = model_from_hf_config(MAVERICK, name="llama4-maverick")
    zoo = get_model("llama4-maverick")
    assert spec.total_params() == zoo.total_params()
    assert spec.moe_layer_pattern == zoo.moe_layer_pattern == tuple(i % 2 for i in range(48))
    assert (spec.attention_chunk, spec.attention_chunk_layers) == (8192, 36)
    assert spec.training_flops_per_token(8192) == zoo.training_flops_per_token(8192)
    # the card's 400B total counts the ~0.9B vision encoder too
    assert spec.total_params() == pytest.approx(400e9, rel=0.01)
    assert spec.active_params_per_token() == pytest.approx(17e9, rel=0.02)
    # the text model's keys at the top level read the same
    assert model_from_hf_config(MAVERICK_TEXT, name="llama4-maverick") == spec


def test_llama4_scout_has_experts_on_every_layer_and_chunks_three_of_four() -> None:
    spec = model_from_hf_config(SCOUT)
    assert spec.moe_layer_pattern is None and spec.moe_layer_count == 48
    assert spec.qk_norm == "head" and spec.attention_chunk_layers == 36
    # 109B on the card with the vision encoder (34 layers of width 1408: ~0.9B)
    assert spec.total_params() == pytest.approx(109e9 - 0.9e9, rel=0.01)
    assert spec.active_params_per_token() == pytest.approx(17e9, rel=0.02)
    # at 8k every chunk is the whole sequence; at 32k three layers of four keep a quarter
    assert spec.attended_pairs(8192) == 8192**2 / 2
    assert spec.attended_pairs(32768) / (32768**2 / 2) == pytest.approx(0.75 / 4 + 0.25)


def test_a_llama4_config_runs_from_the_cli_with_its_chunks_past_8k(tmp_path: Path) -> None:
    """A 4-layer Maverick-shaped config.json: experts on layers 1 and 3, chunks of 8192 on the
    three rotary layers; at 16k the chunks halve those layers' attention and the run says so."""
    small = {**MAVERICK, "text_config": {
        **MAVERICK_TEXT, "num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
        "num_key_value_heads": 2, "intermediate_size": 512, "intermediate_size_mlp": 2048,
        "num_local_experts": 16, "vocab_size": 32000}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(small))
    steps = {}
    for s in (8192, 16384):
        scenario = tmp_path / f"l4-{s}.yaml"
        scenario.write_text(
            "cluster: {preset: dgx-h100, nodes: 1}\n"
            f"job: {{model: {{hf_config: config.json}}, tp: 1, dp: 8, ep: 8, global_batch: 8, "
            f"seq_len: {s}}}\n"
        )
        result = runner.invoke(app, ["run", str(scenario), "--json"])
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert (out["job"]["attention_chunk"], out["job"]["attention_chunk_layers"]) == (8192, 3)
        steps[s] = out["step_time_s"]
    text = runner.invoke(app, ["run", str(tmp_path / "l4-16384.yaml")], env={"COLUMNS": "200"})
    assert "cuDNN fused attention in 8,192-token chunks on 3 layers" in " ".join(
        text.stdout.split()
    )
    text = runner.invoke(app, ["run", str(tmp_path / "l4-8192.yaml")], env={"COLUMNS": "200"})
    assert "chunks" not in text.stdout
    # twice the tokens: 2.02 times the step with the chunks, 2.41 with full attention
    assert steps[16384] < 2.2 * steps[8192]


@pytest.mark.parametrize(
    ("change", "expect"),
    [({"moe_layers": [0, 47]}, (2, 8192, 36)),
     ({"no_rope_layers": [1, 0] * 24}, (24, 8192, 24)),
     ({"layer_types": ["full_attention"] * 48}, (24, None, None)),
     ({"attention_chunk_size": None}, (24, None, None))],
)  # fmt: skip
def test_llama4_reads_the_moe_and_chunked_layers_it_names(
    change: dict[str, Any], expect: tuple[int, int | None, int | None]
) -> None:
    spec = model_from_hf_config({**MAVERICK_TEXT, **change})
    assert (spec.moe_layer_count, spec.attention_chunk, spec.attention_chunk_layers) == expect


@pytest.mark.parametrize(
    ("change", "message"),
    [({"text_config": None}, "text_config: None: a llama4 config.json holds"),
     ({"text_config": {**MAVERICK_TEXT, "moe_layers": [48]}}, "moe_layers: \\[48\\]"),
     ({"text_config": {**MAVERICK_TEXT, "moe_layers": []}}, "no layer holds experts"),
     ({"text_config": {**MAVERICK_TEXT, "interleave_moe_layer_step": 0}},
      "interleave_moe_layer_step: 0"),
     ({"text_config": {**MAVERICK_TEXT, "no_rope_layers": [2] * 48}}, "no_rope_layers"),
     ({"text_config": {**MAVERICK_TEXT, "layer_types": ["sliding_attention"] * 48}},
      "layer_types"),
     ({"text_config": {**MAVERICK_TEXT, "attention_bias": True}}, "attention_bias: true"),
     ({"text_config": {**MAVERICK_TEXT, "intermediate_size_mlp": None}},
      "intermediate_size_mlp: missing")],
)  # fmt: skip
def test_llama4_configs_that_cannot_be_used_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelDefinitionError, match=message):
        model_from_hf_config({**MAVERICK, **change})


#: google/gemma-2-2b config.json (Gemma Team 2024, "Gemma 2", Table 2: 2,024,517,888
#: non-embedding parameters; 9B: 8,324,201,984).
GEMMA2_2B: dict[str, Any] = {
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
    "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
    "max_position_embeddings": 8192, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 256,
    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
}  # fmt: skip
#: google/gemma-3-4b-pt config.json: its text_config names neither the heads nor the vocabulary
#: (Gemma3TextConfig's defaults: 8 heads, 4 KV heads of 256, 262,208 entries); Gemma Team 2025,
#: "Gemma 3 Technical Report", Table 1: 3,209M non-embedding parameters (1B: 302M + 698M).
GEMMA3_4B: dict[str, Any] = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                    "model_type": "gemma3_text", "num_hidden_layers": 34,
                    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"model_type": "siglip_vision_model"},
}  # fmt: skip


def test_gemma2_counts_its_four_norms_a_layer_to_the_published_parameter() -> None:
    spec = model_from_hf_config(GEMMA2_2B)
    assert spec.sandwich_norm and spec.norms_per_layer == 4 and spec.tied_embeddings
    embedding = spec.vocab * spec.hidden
    assert spec.total_params() - embedding == 2_024_517_888
    nine = model_from_hf_config({**GEMMA2_2B, "hidden_size": 3584, "intermediate_size": 14336,
                                 "num_hidden_layers": 42, "num_attention_heads": 16,
                                 "num_key_value_heads": 8})  # fmt: skip
    assert nine.total_params() - nine.vocab * nine.hidden == 8_324_201_984
    assert sum(n for _, n in spec.gradient_tensors()) == spec.total_params()
    # the local layers: the even ones (13 of 26), 4,096 tokens
    assert (spec.sliding_window, spec.sliding_window_layers) == (4096, 13)


def test_gemma3_takes_its_class_defaults_and_windows_five_layers_of_six() -> None:
    spec = model_from_hf_config(GEMMA3_4B)
    assert (spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.vocab) == (8, 4, 256, 262208)
    assert spec.qk_norm == "head" and spec.sandwich_norm
    assert (spec.sliding_window, spec.sliding_window_layers) == (1024, 34 - 5)
    assert spec.total_params() - spec.vocab * spec.hidden == pytest.approx(3209e6, rel=0.001)
    one = model_from_hf_config({
        "model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
        "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
        "head_dim": 256, "vocab_size": 262144, "sliding_window": 512,
        "max_position_embeddings": 32768})  # fmt: skip
    assert one.vocab * one.hidden == pytest.approx(302e6, rel=0.002)
    assert one.total_params() - one.vocab * one.hidden == pytest.approx(698e6, rel=0.001)
    for change, message in (
        ({"text_config": None}, "text_config: None: a gemma3 config.json holds"),
        ({"text_config": {"sliding_window_pattern": 0}}, "sliding_window_pattern: 0"),
        ({"text_config": {"attention_bias": True}}, "attention_bias: true"),
    ):
        with pytest.raises(ModelDefinitionError, match=message):
            model_from_hf_config({**GEMMA3_4B, **change})


def test_qwen_moe_sparse_steps_and_mlp_only_layers_make_dense_layers() -> None:
    """Qwen2-MoE layer i holds experts unless it is in mlp_only_layers, when
    (i + 1) % decoder_sparse_step == 0; the others a dense MLP of intermediate_size."""
    every = model_from_hf_config(QWEN_MOE)
    assert every.moe_layer_pattern is None
    spec = model_from_hf_config({**QWEN_MOE, "decoder_sparse_step": 2, "mlp_only_layers": [3]})
    assert [spec.is_moe_layer(i) for i in range(6)] == [False, True, False, False, False, True]
    assert spec.moe_layer_count == 11
    (dense, n_dense), (moe, _) = spec.layer_kinds
    assert n_dense == 13 and dense.ffn_hidden == 5632 and not dense.is_moe
    assert spec.total_params() == every.total_params() - 13 * (
        moe.layer_params() - dense.layer_params()
    )
    for change, message in (
        ({"decoder_sparse_step": 0}, "decoder_sparse_step: 0: must be an integer >= 1"),
        ({"mlp_only_layers": [24]}, "mlp_only_layers: \\[24\\]: must be a list"),
        ({"mlp_only_layers": list(range(24))}, "leaves no mixture-of-experts layer"),
    ):
        with pytest.raises(ModelDefinitionError, match=message):
            model_from_hf_config({**QWEN_MOE, **change})
    with pytest.raises(ModelDefinitionError, match="read for the qwen2_moe and qwen3_moe"):
        model_from_hf_config({**MIXTRAL, "decoder_sparse_step": 2})


def test_an_inline_model_takes_megatron_s_moe_layer_freq() -> None:
    base = {"n_layers": 4, "hidden": 256, "ffn_hidden": 1024, "n_heads": 4, "vocab": 1000,
            "n_experts": 8, "top_k": 2}  # fmt: skip
    every_other = model_from_def(ModelDef(**base, moe_layer_freq=2))  # type: ignore[arg-type]
    assert every_other.moe_layer_pattern == (1, 0, 1, 0)  # i % 2 == 0, as Megatron-Core
    listed = model_from_def(ModelDef(**base, moe_layer_freq=[0, 1, 1, 1]))  # type: ignore[arg-type]
    assert listed.moe_layer_count == 3
    with pytest.raises(ModelDefinitionError, match="moe_layer_freq: a list of 3 entries"):
        model_from_def(ModelDef(**base, moe_layer_freq=[0, 1, 1]))  # type: ignore[arg-type]
    with pytest.raises(ModelDefinitionError, match="moe_layer_freq: 0 is invalid"):
        model_from_def(ModelDef(**base, moe_layer_freq=0))  # type: ignore[arg-type]
    grouped = model_from_def(ModelDef(**base, expert_groups=4, group_topk=2))  # type: ignore[arg-type]
    assert (grouped.expert_groups, grouped.group_topk) == (4, 2)
    with pytest.raises(ModelDefinitionError, match="expert_groups=4, group_topk=5 is invalid"):
        model_from_def(ModelDef(**base, expert_groups=4, group_topk=5))  # type: ignore[arg-type]


def test_inline_definition_needs_the_sizes_and_not_both_forms() -> None:
    spec = model_from_def(
        ModelDef(name="mine", n_layers=2, hidden=256, ffn_hidden=1024, n_heads=4, vocab=1000)
    )
    assert spec.n_kv_heads == 4 and spec.gated_mlp and spec.total_params() > 0
    with pytest.raises(ModelDefinitionError, match="ffn_hidden, vocab missing"):
        model_from_def(ModelDef(n_layers=2, hidden=256, n_heads=4))
    with pytest.raises(ModelDefinitionError, match="not both"):
        model_from_def(ModelDef(hf_config="x.json", n_layers=2))


def test_a_scenario_runs_a_config_next_to_it_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_7B))
    scenario = tmp_path / "job.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-h100, nodes: 1}\n"
        "job: {model: {hf_config: config.json}, tp: 4, global_batch: 16, seq_len: 4096}\n"
    )
    monkeypatch.chdir("/")
    assert Path(str(load_scenario(scenario).job.model.hf_config)).is_absolute()  # type: ignore[union-attr]
    result = runner.invoke(app, ["run", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    job = json.loads(result.stdout)["job"]
    assert job["model"] == "qwen2.5-7b" or job["model"] == tmp_path.name.lower() or job["params"]
    assert job["params"] == pytest.approx(7.61e9, rel=0.005)


def test_a_deepseek_config_trains_with_its_mtp_module_from_the_cli(tmp_path: Path) -> None:
    """A DeepSeek-V3-shaped config.json (4 of its layers) runs from `commwall run` with
    multi-token prediction, MLA's recompute module and experts over the node."""
    small = {**DEEPSEEK_V3, "num_hidden_layers": 4, "first_k_dense_replace": 1,
             "_name_or_path": "deepseek-ai/DeepSeek-V3"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(small))
    scenario = tmp_path / "job.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-h100, nodes: 2}\n"
        "job: {model: {hf_config: config.json}, tp: 1, pp: 2, ep: 8, global_batch: 64,\n"
        "      seq_len: 4096, mtp_layers: 1, pipeline_layout: 'Et*2|t*2mL',\n"
        "      recompute_modules: [mla_up_proj]}\n"
    )
    result = runner.invoke(app, ["run", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    job = out["job"]
    assert (job["model"], job["mtp_layers"], job["recompute_modules"]) == (
        "deepseek-v3", 1, ["mla_up_proj"])  # fmt: skip
    spec = model_from_hf_config(small)
    assert job["params"] == spec.total_params() + spec.layer_params() + 2 * 7168**2 + 3 * 7168
    assert any(c["op"] == "alltoall" for c in out["collectives"])
    text = runner.invoke(app, ["run", str(scenario)])
    assert "with 1 MTP module" in text.output


@pytest.mark.parametrize(
    ("model", "message"),
    [("{hf_config: missing.json}", "job.model.hf_config"),
     ("{name: '[red]x', n_layers: 2}", "job.model.name"),
     ("{n_layers: 2, hidden: 256}", "job.model: ffn_hidden, n_heads, vocab missing"),
     ("{n_layers: 2, hidden: 250, ffn_hidden: 8, n_heads: 3, vocab: 9}", "divisible"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, bogus: 1}", "bogus"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, sliding_window: 0}",
      "job.model.sliding_window"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, n_experts: 4, "
      "moe_layer_freq: [1, 2]}", "job.model.moe_layer_freq"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, moe_layer_freq: 1}",
      "moe_layer_pattern is invalid: needs a mixture-of-experts model"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, max_seq_len: 64, "
      "learned_pos_emb: true, yarn_rope: true}", "yarn_rope=True is invalid with learned_pos_emb"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, yarn_rope: maybe}",
      "job.model.yarn_rope")],
)  # fmt: skip
def test_bad_models_in_a_scenario_are_one_line(tmp_path: Path, model: str, message: str) -> None:
    scenario = tmp_path / "job.yaml"
    scenario.write_text(
        f"cluster: {{preset: dgx-h100, nodes: 1}}\njob: {{model: {model}, tp: 1}}\n"
    )
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


#: Nemotron 3 Nano's config.json keys (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, as the
#: Megatron-Bridge recipe states them): the zoo's nemotron-3-nano-30b-a3b.
NEMOTRON_H: dict[str, Any] = {
    "model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"],
    "hidden_size": 2688, "intermediate_size": 1856, "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
    "conv_kernel": 4, "chunk_size": 128, "expand": 2, "vocab_size": 131072,
    "max_position_embeddings": 262144, "tie_word_embeddings": False, "mlp_hidden_act": "relu2",
    "use_bias": False, "use_conv_bias": True, "n_routed_experts": 128, "num_experts_per_tok": 6,
    "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "n_group": 1,
    "topk_group": 1,
}  # fmt: skip


def test_a_nemotron_h_config_reads_as_the_zoo_hybrid() -> None:
    spec = model_from_hf_config(NEMOTRON_H)
    zoo = get_model("nemotron-3-nano-30b-a3b")
    assert spec.total_params() == zoo.total_params()
    assert spec.training_flops_per_token(8192) == zoo.training_flops_per_token(8192)
    assert [(k.block, n) for k, n in spec.layer_kinds] == [(k.block, n) for k, n in zoo.layer_kinds]
    assert not spec.rotary and not spec.gated_mlp
    # transformers 5 lists the blocks by name instead of the pattern
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    listed = {k: v for k, v in NEMOTRON_H.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[c] for c in NEMOTRON_H["hybrid_override_pattern"]]
    assert model_from_hf_config(listed).hybrid_pattern == zoo.hybrid_pattern
    # a dense Nemotron-H (M, * and - only), heads from expand · hidden / head dim
    dense = {k: v for k, v in NEMOTRON_H.items() if k != "mamba_num_heads"}
    dense["hybrid_override_pattern"] = "M-M*" * 13
    dense["hidden_size"] = 4096
    spec = model_from_hf_config(dense)
    assert not spec.is_moe and spec.mamba_heads == 2 * 4096 // 64
    assert [k.block for k, _ in spec.layer_kinds] == ["mamba", "attention", "mlp"]


def test_a_nemotron_h_config_s_mtp_module_is_read_for_a_job_to_train() -> None:
    """Nemotron 3.5 Lightning's config.json adds num_nextn_predict_layers 2 and its module's
    blocks, mtp_hybrid_override_pattern '*E' (the keys Megatron-Bridge's NemotronHBridge reads):
    the model holds the pattern; the published count, like DeepSeek-V3's, leaves the module out
    until a job trains it (job.mtp_layers, job.mtp_shared)."""
    lightning = {**NEMOTRON_H, "num_nextn_predict_layers": 2, "mtp_hybrid_override_pattern": "*E"}
    spec = model_from_hf_config(lightning)
    assert (spec.mtp_pattern, spec.mtp_layers) == ("*E", 0)
    assert spec.total_params() == get_model("nemotron-3-nano-30b-a3b").total_params()
    trained = dataclasses.replace(spec, mtp_layers=2, mtp_shared=True)
    assert trained.total_params() == spec.total_params() + trained.mtp_layer_params()


@pytest.mark.parametrize(
    ("change", "message"),
    [({"moe_latent_size": 1024}, "moe_latent_size: 1024: latent experts"),
     ({"num_nextn_predict_layers": 2}, "mtp_hybrid_override_pattern: None: num_nextn_predict_layers 2"),
     ({"num_nextn_predict_layers": 2, "mtp_hybrid_override_pattern": "M*E"},
      "mtp_pattern='M\\*E' is invalid: allowed"),
     ({"hybrid_override_pattern": "ME"}, "hybrid_override_pattern: 2 symbols for num_hidden_layers 52"),
     ({"hybrid_override_pattern": None}, "hybrid_override_pattern: None: missing"),
     ({"hybrid_override_pattern": "MQ" * 26}, "hybrid_pattern='MQMQ"),
     ({"hybrid_override_pattern": None, "layers_block_type": [["mamba"]] * 52},
      "layers_block_type: \\['mamba'\\] is not a block"),
     ({"mlp_hidden_act": "silu"}, "mlp_hidden_act: 'silu': only relu2"),
     ({"use_conv_bias": False}, "use_conv_bias: false"),
     ({"n_groups": 3}, "mamba_heads=64 is invalid: .* groups of mamba_groups=3")],
)  # fmt: skip
def test_what_a_nemotron_h_config_cannot_use_is_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelDefinitionError, match=message):
        model_from_hf_config({**NEMOTRON_H, **change})


def test_an_inline_hybrid_model_and_its_stray_mamba_fields() -> None:
    base = {"n_layers": 4, "hidden": 512, "ffn_hidden": 1024, "n_heads": 8, "vocab": 1000}
    spec = model_from_def(
        ModelDef(**base, hybrid_pattern="M*M-", mamba_heads=16, rotary=False)  # type: ignore[arg-type]
    )
    assert [(k.block, n) for k, n in spec.layer_kinds] == [
        ("mamba", 2), ("attention", 1), ("mlp", 1)
    ]  # fmt: skip
    with pytest.raises(ModelDefinitionError, match="mamba_state given without hybrid_pattern"):
        model_from_def(ModelDef(**base, mamba_state=64))  # type: ignore[arg-type]


def test_a_nemotron_h_config_runs_from_the_cli(tmp_path: Path) -> None:
    """A 4-layer hybrid (Mamba, attention, Mamba, experts) on one H100 node: the step runs, its
    JSON names the model, and TP 2 splits the mixers' groups (TP 8 does not fit their 4)."""
    small = {**NEMOTRON_H, "num_hidden_layers": 4, "hybrid_override_pattern": "M*ME",
             "hidden_size": 1024, "mamba_num_heads": 32, "n_groups": 4, "n_routed_experts": 8,
             "vocab_size": 32000}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(small))
    scenario = tmp_path / "h.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-h100, nodes: 1}\n"
        "job: {model: {hf_config: config.json}, tp: 2, ep: 4, global_batch: 8, seq_len: 4096}\n"
    )
    result = runner.invoke(app, ["run", str(scenario), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["step_time_s"] > 0 and out["job"]["tp"] == 2
    scenario.write_text(scenario.read_text().replace("tp: 2, ep: 4", "tp: 8, ep: 1, cp: 1"))
    bad = runner.invoke(app, ["run", str(scenario)])
    assert bad.exit_code != 0
    assert "does not divide" in bad.output and "Mamba-2 mixers (32 heads in 4 groups" in bad.output
