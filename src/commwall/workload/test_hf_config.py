"""Models as data: Hugging Face config.json files and inline definitions become ModelSpecs whose
parameter counts match the published ones, and everything else is a one-line error."""

from __future__ import annotations

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
#: openai-community/gpt2 config.json (124M).
GPT2: dict[str, Any] = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "n_inner": None, "vocab_size": 50257,
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


def test_qwen_moe_activates_its_published_share() -> None:
    spec = model_from_hf_config(QWEN_MOE)
    # 2.7B activated per the model card (embeddings counted once, as Qwen counts them)
    assert spec.active_params_per_token() == pytest.approx(2.7e9, rel=0.06)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"model_type": "deepseek_v3"}, "model_type: 'deepseek_v3' is not supported"),
     ({"q_lora_rank": 1536}, "q_lora_rank: 1536: multi-head latent attention"),
     ({"q_lora_rank": False}, "q_lora_rank: False; allowed: an integer"),
     ({"num_hidden_layers": 0}, "num_hidden_layers: 0: must be an integer from 1"),
     ({"hidden_size": "4096"}, "hidden_size: '4096'"),
     ({"num_hidden_layers": None}, "num_hidden_layers: missing"),
     ({"sliding_window": 4096}, "sliding_window: 4096"),
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


@pytest.mark.parametrize(
    ("model", "message"),
    [("{hf_config: missing.json}", "job.model.hf_config"),
     ("{name: '[red]x', n_layers: 2}", "job.model.name"),
     ("{n_layers: 2, hidden: 256}", "job.model: ffn_hidden, n_heads, vocab missing"),
     ("{n_layers: 2, hidden: 250, ffn_hidden: 8, n_heads: 3, vocab: 9}", "divisible"),
     ("{n_layers: 2, hidden: 256, ffn_hidden: 8, n_heads: 4, vocab: 9, bogus: 1}", "bogus")],
)  # fmt: skip
def test_bad_models_in_a_scenario_are_one_line(tmp_path: Path, model: str, message: str) -> None:
    scenario = tmp_path / "job.yaml"
    scenario.write_text(
        f"cluster: {{preset: dgx-h100, nodes: 1}}\njob: {{model: {model}, tp: 1}}\n"
    )
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
