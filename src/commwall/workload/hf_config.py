"""Models as data: a Hugging Face ``config.json`` or an inline scenario definition → ModelSpec.

:func:`model_from_hf_config` reads the keys of the ``transformers`` configuration classes of the
decoder families whose layers :class:`~commwall.workload.models.ModelSpec` describes exactly:

=============  ==================================================================================
model_type     keys read (``transformers`` ``configuration_<type>.py``)
=============  ==================================================================================
llama,         ``num_hidden_layers``, ``hidden_size``, ``intermediate_size``,
mistral,       ``num_attention_heads``, ``num_key_value_heads`` (default: heads), ``head_dim``
qwen2, qwen3,  (default ``hidden_size / heads``), ``vocab_size``, ``max_position_embeddings``,
phi3, gemma    ``tie_word_embeddings`` (the class's default: false; gemma true); SwiGLU/GeGLU
               MLP, RMSNorm, rotary positions; qwen2 adds biases on q, k, v
olmo2,         as llama (OLMo 2 puts its norms after attention and the MLP and normalises q and
granite        k over the whole projections, ``qk_norm: projection``; Granite scales embeddings,
               residuals and logits by constants: no kernel changes)
mixtral,       as llama, plus ``num_local_experts``, ``num_experts_per_tok`` (``num_experts``
olmoe,         in OLMoE, whose q and k are normalised over the projections as OLMo 2's), the
granitemoe     experts' width ``intermediate_size``; ``granitemoeshared`` adds a shared expert
               of ``shared_intermediate_size``
qwen2_moe,     as qwen2/qwen3, plus ``num_experts``, ``num_experts_per_tok``,
qwen3_moe      ``moe_intermediate_size``, ``shared_expert_intermediate_size`` (qwen2_moe)
gpt2           ``n_layer``, ``n_embd``, ``n_head``, ``n_inner`` (default ``4·n_embd``),
               ``vocab_size``, ``n_positions``; LayerNorm, biases, learned positions, tied head
gpt_neox       ``num_hidden_layers``, ``hidden_size``, ``intermediate_size``,
               ``num_attention_heads``, ``vocab_size``, ``max_position_embeddings``,
               ``tie_word_embeddings`` (false); LayerNorm, biases on every linear layer
               (``attention_bias`` false is refused: the MLP keeps its biases), GELU MLP,
               rotary positions (Pythia, GPT-NeoX-20B). ``use_parallel_residual`` feeds the
               attention and the MLP from one input: the same kernels but one residual add,
               priced as sequential; ``rotary_pct`` rotates part of each head: the rotary
               kernel is priced on the whole head
starcoder2     as llama for the shapes, plus ``use_bias`` (true: biases on every linear layer),
               ``sliding_window``; LayerNorm, GELU MLP, ``tie_word_embeddings`` (true)
gpt_oss        as mixtral with ``head_dim`` (64) and ``intermediate_size`` the expert's width;
               biases on the attention projections and the experts (``attention_bias`` false
               is refused: the experts keep theirs), ``sliding_window`` (128) on the layers
               ``layer_types`` names (default: every other one, from the first), the GLU's
               clamp ``swiglu_limit`` (default 7: ``activation_clamp``). Not counted:
               each layer's attention sinks (one logit per head) and router bias, 2,304 and
               4,608 parameters in gpt-oss-120b
deepseek_v2,   ``num_hidden_layers``, ``hidden_size``, ``intermediate_size`` (the dense layers'),
deepseek_v3,   ``moe_intermediate_size``, ``num_attention_heads``, ``n_routed_experts``,
kimi_k2        ``n_shared_experts``, ``num_experts_per_tok``, ``first_k_dense_replace`` (dense
               first layers), multi-head latent attention (``q_lora_rank``, null: queries from
               the hidden state; ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
               ``v_head_dim``), group-limited routing (``n_group``, ``topk_group``;
               ``topk_method`` greedy: none), ``vocab_size``, ``max_position_embeddings``,
               ``tie_word_embeddings`` (false); ``moe_layer_freq`` (layer ``i`` past the dense
               ones holds experts when ``i % moe_layer_freq == 0``). Not counted: the
               router's expert-bias buffer and the multi-token-prediction module
               (``num_nextn_predict_layers``, which ``transformers`` does not load; a job
               trains it with ``job.mtp_layers``)
glm4_moe       as deepseek_v3 for the experts and dense layers, with grouped-query attention:
               ``num_key_value_heads``, ``head_dim``, biases on q, k and v
               (``attention_bias``), per-head query and key norms (``use_qk_norm``);
               ``partial_rotary_factor`` rotates part of each head: priced on the whole head
llama4,        ``text_config`` (``llama4``) or the top level (``llama4_text``): as llama with
llama4_text    ``head_dim``, ``num_local_experts`` experts of ``intermediate_size`` routed
               ``num_experts_per_tok`` and a shared expert of that width on the ``moe_layers``
               (default every ``interleave_moe_layer_step``-th), a dense MLP of
               ``intermediate_size_mlp`` on the others, chunked attention
               (``attention_chunk_size``) on the rotary layers (``layer_types`` or
               ``no_rope_layers``), ``use_qk_norm`` (:func:`_llama4`)
nemotron_h     a hybrid (``hybrid_override_pattern`` or ``layers_block_type``): Mamba-2 mixers
               (``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size``, ``n_groups``,
               ``conv_kernel``, ``chunk_size``), attention without rotary (``head_dim``), a
               squared-ReLU MLP, Nemotron 3's experts (``n_routed_experts``,
               ``moe_intermediate_size``, ``moe_shared_expert_intermediate_size``), the
               MTP module's blocks (``mtp_hybrid_override_pattern``; a job trains it with
               ``job.mtp_layers``); latent experts refused (:func:`_nemotron_h`)
gemma2,        as llama with ``head_dim``, a GeGLU MLP, four norms a layer (``sandwich_norm``),
gemma3_text,   a tied head, a ``sliding_window`` on the local layers (``layer_types``; by
gemma3         default Gemma 2's even layers, five of six in Gemma 3), per-head q/k norms in
               Gemma 3; ``gemma3``: the ``text_config``, with ``Gemma3TextConfig``'s defaults
               for the keys it leaves out (:func:`_gemma`)
=============  ==================================================================================

Qwen2-MoE and Qwen3-MoE read ``decoder_sparse_step`` and ``mlp_only_layers`` as their
``transformers`` decoder layers do: a dense MLP of ``intermediate_size`` on the layers they
leave without experts (:func:`_qwen_moe_layers`).

Anything that changes the layer's shape in a way the model cannot represent is refused with the
key, its value and why — never silently approximated: multi-head latent attention or dense first
layers in a family that does not define them (``q_lora_rank``, ``kv_lora_rank``,
``first_k_dense_replace``), ``mlp_only_layers`` or ``decoder_sparse_step`` outside the Qwen
MoE families, ``moe_layer_freq`` outside the DeepSeek-style ones, Llama's
``attention_bias``/``mlp_bias``,
biases on MLA's projections. A sliding window (:func:`_window` says which keys switch it
on) is read as ``sliding_window`` and, where only some layers use it (``layer_types`` mixing
both, Qwen's ``max_window_layers`` inside the stack, GPT-OSS), ``sliding_window_layers``; each
layer's attention is then priced at the layers' mean
(:meth:`~commwall.workload.models.ModelSpec.attended_pairs`). Keys that do not change the
compute or the parameters (token ids, the rotary base and scaling factors, initialisation,
dtype, dropout rates) are ignored. Qwen3 normalises q and k per head (``qk_norm: head``). A
YaRN rotary scaling (``rope_scaling`` or ``rope_parameters`` with ``rope_type`` yarn, GPT-OSS)
sets ``yarn_rope`` on every family but the learned-position and MLA ones: the rotary kernel
then runs unfused (:attr:`~commwall.workload.models.ModelSpec.yarn_rope`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from commwall.scenario import MODEL_NAME, ModelDef
from commwall.workload.models import ModelDefinitionError, ModelSpec, get_model

__all__ = ["ModelDefinitionError", "model_from_def", "model_from_hf_config", "resolve_model"]

#: The ``model_type`` values read, with the tie default of their ``transformers`` class.
_LLAMA_LIKE: Final = {
    "llama": False,
    "mistral": False,
    "qwen2": False,
    "qwen3": False,
    "phi3": False,
    "gemma": True,
    "mixtral": False,
    "qwen2_moe": False,
    "qwen3_moe": False,
    "olmo2": False,
    "granite": False,
    "olmoe": False,
    "granitemoe": False,
    "granitemoeshared": False,
}
#: Families that normalise queries and keys (``Qwen3Attention``: per head;
#: ``Olmo2Attention``: over the whole projections).
_QK_NORM: Final = {
    "qwen3": "head", "qwen3_moe": "head", "olmo2": "projection", "olmoe": "projection"
}  # fmt: skip
#: GPT-style families with LayerNorm, biases and a GELU MLP but rotary positions, with the
#: tie default of their ``transformers`` class.
_GPT_ROTARY: Final = {"gpt_neox": False, "starcoder2": True}
#: DeepSeek-style mixture-of-experts families: dense first layers (``first_k_dense_replace``),
#: routed experts with shared ones; multi-head latent attention in all but GLM-4.5's.
_DEEPSEEK_LIKE: Final = ("deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe")
#: Llama 4: the text model's keys, at the top level (``llama4_text``) or under
#: ``text_config`` (``llama4``, the multimodal checkpoints' config.json).
_LLAMA4: Final = ("llama4", "llama4_text")
#: Gemma 2 and 3: norms after the attention and the MLP too, local and global layers; Gemma 3's
#: text model at the top level (``gemma3_text``) or under ``text_config`` (``gemma3``).
_GEMMA: Final = ("gemma2", "gemma3_text", "gemma3")
#: ``Gemma3TextConfig``'s defaults (``transformers`` ``models/gemma3``), which the multimodal
#: checkpoints' ``text_config`` leaves out (google/gemma-3-4b-pt's names neither its heads nor
#: its vocabulary).
GEMMA3_TEXT_DEFAULTS: Final = {
    "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
    "head_dim": 256, "max_position_embeddings": 131072, "sliding_window": 4096,
    "sliding_window_pattern": 6, "tie_word_embeddings": True,
}  # fmt: skip
#: Families whose layers the kernel model has no kernels for, and what those layers are.
_UNMODELLED: Final = {
    "mamba": "Mamba-1 layers are not modelled (Mamba-2 hybrids are: model_type nemotron_h)",
    "mamba2": "a pure Mamba-2 stack is not read; inline, give hybrid_pattern with M layers",
    "jamba": "its Mamba-1 layers are not modelled",
    "falcon_h1": "its Mamba-2 layers are not modelled",
    "zamba2": "its Mamba-2 layers are not modelled",
    "qwen3_next": "its Gated DeltaNet linear-attention layers are not modelled",
    "rwkv": "RWKV's recurrent layers are not modelled",
    "bert": "an encoder; commwall models decoder language models",
    "t5": "an encoder-decoder; commwall models decoder language models",
}
SUPPORTED: Final = (
    *_LLAMA_LIKE, *_GPT_ROTARY, "gpt_oss", *_DEEPSEEK_LIKE, *_LLAMA4, *_GEMMA, "gpt2",
    "nemotron_h",
)  # fmt: skip
#: ``layers_block_type`` names (``transformers`` 5's ``NemotronHConfig``) as hybrid pattern
#: symbols (:data:`~commwall.workload.models.HYBRID_BLOCKS`).
_NEMOTRON_H_BLOCKS: Final = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
#: ``max_seq_len`` of an inline model that does not give one (rotary positions: no table).
NO_CONTEXT_LIMIT: Final = 100_000_000
#: Largest config.json read, bytes (real ones are a few kB).
MAX_CONFIG_BYTES: Final = 1 << 20

#: Keys that would change the layer in ways ModelSpec cannot hold in the families that do
#: not define them, and why (the DeepSeek-style families read them).
_REFUSED: Final = {
    "q_lora_rank": "multi-head latent attention is read for the deepseek_v2/v3 and kimi_k2 "
    "model types only",
    "kv_lora_rank": "multi-head latent attention is read for the deepseek_v2/v3 and kimi_k2 "
    "model types only",
    "first_k_dense_replace": "dense layers among MoE layers are read for the DeepSeek-style "
    "model types only",
    "moe_layer_freq": "read for the DeepSeek-style model types only (inline, job.model."
    "moe_layer_freq is Megatron-Core's --moe-layer-freq)",
}


def resolve_model(model: str | ModelDef) -> ModelSpec:
    """The :class:`ModelSpec` of a scenario's ``job.model``: a zoo name or a definition."""
    if isinstance(model, str):
        return get_model(model)
    return model_from_def(model)


def model_from_def(d: ModelDef) -> ModelSpec:
    """A scenario's inline definition, or the ``config.json`` it points to."""
    given = d.model_fields_set - {"name", "hf_config"}
    arch = {k: v for k, v in d.model_dump(exclude={"name", "hf_config"}).items() if v is not None}
    if d.hf_config is not None:
        if given:
            raise ModelDefinitionError(
                f"job.model: give hf_config or the architecture fields, not both "
                f"(also given: {', '.join(sorted(given))})"
            )
        spec = load_hf_config(Path(d.hf_config))
        return spec if "name" not in d.model_fields_set else replace(spec, name=d.name)
    missing = [k for k in ("n_layers", "hidden", "ffn_hidden", "n_heads", "vocab") if k not in arch]
    if missing:
        raise ModelDefinitionError(
            f"job.model: {', '.join(missing)} missing; an inline model needs n_layers, hidden, "
            "ffn_hidden, n_heads and vocab (or hf_config: path/to/config.json)"
        )
    if arch.get("learned_pos_emb") and "max_seq_len" not in arch:
        raise ModelDefinitionError(
            "job.model: max_seq_len missing; a learned position table (learned_pos_emb) has "
            "max_seq_len rows"
        )
    mamba = sorted(k for k in given if k.startswith("mamba_"))
    if mamba and "hybrid_pattern" not in arch:
        raise ModelDefinitionError(
            f"job.model: {', '.join(mamba)} given without hybrid_pattern; Mamba-2 mixers sit in "
            "a hybrid model's M layers (hybrid_pattern: e.g. M-M*-)"
        )
    head_dim = arch.pop("head_dim", None)
    freq = arch.pop("moe_layer_freq", None)
    if freq is not None:
        arch["moe_layer_pattern"] = _megatron_moe_pattern(freq, int(arch["n_layers"]))
    arch.setdefault("n_kv_heads", arch["n_heads"])
    arch.setdefault("max_seq_len", NO_CONTEXT_LIMIT)
    return _checked(d.name, source="inline in the scenario", head_size=head_dim, **arch)


def _megatron_moe_pattern(freq: int | tuple[int, ...], n_layers: int) -> tuple[int, ...]:
    """``job.model.moe_layer_freq`` as a pattern of 1s (MoE) and 0s (dense), one per layer:
    Megatron-Core's ``--moe-layer-freq`` (``moe_layer_pattern`` in
    ``megatron/core/models/gpt/gpt_layer_specs.py`` @d98e8a6: an integer N makes layer ``i``
    MoE when ``i % N == 0``; a list gives each layer's)."""
    if isinstance(freq, int):
        if freq < 1:
            raise ModelDefinitionError(
                f"job.model.moe_layer_freq: {freq} is invalid: an integer N >= 1 (every N-th "
                "layer from the first holds experts) or one 0 or 1 per layer"
            )
        return tuple(1 if i % freq == 0 else 0 for i in range(n_layers))
    if len(freq) != n_layers:
        raise ModelDefinitionError(
            f"job.model.moe_layer_freq: a list of {len(freq)} entries for n_layers {n_layers}; "
            "give one 0 (dense) or 1 (MoE) per layer"
        )
    return tuple(freq)


def load_hf_config(path: Path) -> ModelSpec:
    """Read and convert a local ``config.json`` (module docstring); nothing is downloaded."""
    where = f"job.model.hf_config: {str(path)!r}"
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ModelDefinitionError(f"{where}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ModelDefinitionError(f"{where}: larger than 1 MiB; a config.json is a few kB")
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise ModelDefinitionError(f"{where}: {e} (each key may appear once)") from None
    except RecursionError:
        raise ModelDefinitionError(
            f"{where}: nests too deeply for the JSON parser; a config.json nests a few levels"
        ) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ModelDefinitionError(f"{where}: not a JSON file ({e})") from None
    if not isinstance(data, dict):
        raise ModelDefinitionError(f"{where}: the top level must be a JSON object")
    name = _name(data, path)
    return model_from_hf_config(data, name=name, source=f"Hugging Face config.json {path}")


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (``json`` would keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate key {key!r}")
        out[key] = value
    return out


def _name(data: Mapping[str, Any], path: Path) -> str:
    raw = data.get("_name_or_path")
    base = raw.rsplit("/", 1)[-1] if isinstance(raw, str) and raw else path.parent.name
    clean = re.sub(r"[^A-Za-z0-9._+-]+", "-", base).strip("-.+")[:64]
    return clean.lower() if clean and re.match(MODEL_NAME, clean) else "hf-model"


def model_from_hf_config(
    data: Mapping[str, Any], *, name: str = "hf-model", source: str = "config.json"
) -> ModelSpec:
    """A :class:`ModelSpec` from the keys of a ``transformers`` config (module docstring)."""
    spec = _family_model(data, name, source)
    kind = str(data.get("model_type"))
    text = _text_config(data, kind) if kind in _NESTED_TEXT else data
    if _yarn(text) and not spec.mla and not spec.learned_pos_emb:
        spec = replace(spec, yarn_rope=True)
    return spec


#: Families whose text model's keys sit in a ``text_config`` (:func:`_text_config`).
_NESTED_TEXT: Final = ("llama4", "gemma3")


#: The keys a ``transformers`` config keeps its rotary scaling under: ``rope_scaling`` (with
#: ``rope_type``, or ``type`` in older files) and, from ``transformers`` 5, ``rope_parameters``.
_ROPE_KEYS: Final = ("rope_scaling", "rope_parameters")


def _yarn(text: Mapping[str, Any]) -> bool:
    """Whether the text model's rotary positions are YaRN's (``rope_type`` or ``type``
    ``yarn`` under :data:`_ROPE_KEYS`): ``ModelSpec.yarn_rope``."""
    for key in _ROPE_KEYS:
        value = text.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ModelDefinitionError(
                f"{key}: {_shown(value)}: must be an object (or null: plain rotary)"
            )
        kind = value.get("rope_type", value.get("type"))
        if kind is not None and not isinstance(kind, str):
            raise ModelDefinitionError(f"{key}.rope_type: {_shown(kind)}: must be a string")
        if kind == "yarn":
            return True
    return False


def _family_model(data: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    """The model of ``data``'s ``model_type`` family (module docstring's table)."""
    kind = data.get("model_type")
    if kind not in SUPPORTED:
        raise ModelDefinitionError(
            f"model_type: {kind!r} is not supported"
            + (f" ({_UNMODELLED[kind]})" if isinstance(kind, str) and kind in _UNMODELLED else "")
            + f"; supported: {', '.join(SUPPORTED)}"
        )
    if kind in _DEEPSEEK_LIKE:
        return _deepseek(data, kind, name, source)
    if kind in _LLAMA4:
        return _llama4(data, kind, name, source)
    if kind in _GEMMA:
        return _gemma(data, kind, name, source)
    if kind == "nemotron_h":
        return _nemotron_h(data, name, source)
    for key, why in _REFUSED.items():
        value = data.get(key)
        if isinstance(value, bool) or not (value is None or isinstance(value, int)):
            raise ModelDefinitionError(
                f"{key}: {value!r}; allowed: an integer (0 or absent: unused)"
            )
        if value:
            raise ModelDefinitionError(f"{key}: {value!r}: {why}")
    if kind == "gpt2":
        return _gpt2(data, name, source)
    get = _Reader(data)
    if kind in _GPT_ROTARY:
        return _gpt_rotary(data, get, kind, name, source)
    if kind == "gpt_oss":
        return _gpt_oss(data, name, source)
    for key in ("attention_bias", "mlp_bias"):
        if get.flag(key, False) and kind != "qwen2":
            raise ModelDefinitionError(f"{key}: true: biases on these projections are not modelled")
    sparse = kind in ("qwen2_moe", "qwen3_moe")
    if data.get("mlp_only_layers") and not sparse:
        raise ModelDefinitionError(
            f"mlp_only_layers: {data['mlp_only_layers']!r}: read for the qwen2_moe and "
            "qwen3_moe model types only"
        )
    if get.optional("decoder_sparse_step", 1) != 1 and not sparse:
        raise ModelDefinitionError(
            f"decoder_sparse_step: {data['decoder_sparse_step']}: read for the qwen2_moe and "
            "qwen3_moe model types only"
        )
    fields: dict[str, Any] = {
        **get.shape(),
        "max_seq_len": get.positive("max_position_embeddings"),
        "gated_mlp": True,
        "tied_embeddings": get.flag("tie_word_embeddings", _LLAMA_LIKE[kind]),
        "head_size": get.optional("head_dim", None),
        "qkv_bias": kind in ("qwen2", "qwen2_moe"),
        "qk_norm": _QK_NORM.get(kind, "none"),
        **_window(data, get, kind),
    }
    if kind in ("mixtral", "olmoe", "granitemoe", "granitemoeshared"):
        # intermediate_size is each expert's width (no dense layers in these families)
        fields["n_experts"] = get.positive(
            "num_experts" if kind == "olmoe" else "num_local_experts"
        )
        fields["top_k"] = get.positive("num_experts_per_tok")
        if kind == "granitemoeshared":
            fields["shared_ffn_hidden"] = get.optional("shared_intermediate_size", 0)
    elif kind in ("qwen2_moe", "qwen3_moe"):
        fields["n_experts"] = get.positive("num_experts")
        fields["top_k"] = get.positive("num_experts_per_tok")
        fields["expert_ffn_hidden"] = get.positive("moe_intermediate_size")
        fields["shared_ffn_hidden"] = get.optional("shared_expert_intermediate_size", 0)
        fields["moe_layer_pattern"] = _qwen_moe_layers(data, get, fields["n_layers"])
    return _checked(name, source=source, **fields)


def _qwen_moe_layers(
    data: Mapping[str, Any], get: _Reader, n_layers: int
) -> tuple[int, ...] | None:
    """Which Qwen2-MoE / Qwen3-MoE layers hold experts (``Qwen2MoeDecoderLayer``: layer ``i``
    unless it is in ``mlp_only_layers``, when ``(i + 1) % decoder_sparse_step == 0``; the
    others a dense MLP of ``intermediate_size``), as a pattern; ``None`` when all do."""
    step = get.optional("decoder_sparse_step", 1)
    if step < 1:
        raise ModelDefinitionError(
            f"decoder_sparse_step: {step}: must be an integer >= 1 (every step-th layer holds "
            "experts)"
        )
    dense = _layer_indices("mlp_only_layers", data.get("mlp_only_layers") or [], n_layers)
    pattern = tuple(int(i not in dense and (i + 1) % step == 0) for i in range(n_layers))
    return None if all(pattern) else pattern


def _llama4(data: Mapping[str, Any], kind: str, name: str, source: str) -> ModelSpec:
    """Llama 4 (``Llama4TextConfig``, ``transformers`` ``models/llama4``): grouped-query
    attention with ``head_dim``, ``num_local_experts`` experts of width ``intermediate_size``
    routed ``num_experts_per_tok`` and a shared expert of the same width on the MoE layers
    (``moe_layers``; default every ``interleave_moe_layer_step``-th, from layer
    ``step − 1``), a dense MLP of ``intermediate_size_mlp`` on the others; chunked attention
    (``attention_chunk_size``) on the layers ``layer_types`` calls ``chunked_attention`` —
    without it, the rotary ones (``no_rope_layers`` 1; default all but every
    ``no_rope_layer_interval``-th, 4). ``use_qk_norm``'s L2 norm of the rotary layers' queries
    and keys is priced as a per-head norm on every layer (``qk_norm: head``, whose weights,
    2·``head_dim`` a layer, Llama 4 does not have). Not priced: the attention temperature
    tuning of the global layers (a scale of the queries)."""
    text = _text_config(data, kind) if kind == "llama4" else data
    get, shape = _unbiased_shape(text)
    n_layers = shape["n_layers"]
    dense_width = get.positive("intermediate_size_mlp")
    moe_layers = text.get("moe_layers")
    if moe_layers is None:
        step = get.optional("interleave_moe_layer_step", 1)
        if step < 1:
            raise ModelDefinitionError(
                f"interleave_moe_layer_step: {step}: must be an integer >= 1"
            )
        moe_layers = list(range(step - 1, n_layers, step))
    experts = _layer_indices("moe_layers", moe_layers, n_layers)
    pattern = tuple(int(i in experts) for i in range(n_layers))
    if not any(pattern):
        raise ModelDefinitionError(
            f"moe_layers: {_shown(moe_layers)}: no layer holds experts; a dense Llama is "
            "model_type llama"
        )
    chunk = text.get("attention_chunk_size", 8192)
    chunked = _llama4_chunked_layers(text, get, n_layers) if chunk is not None else 0
    return _checked(
        name,
        source=source,
        n_layers=n_layers,
        hidden=shape["hidden"],
        ffn_hidden=dense_width,
        n_heads=shape["n_heads"],
        n_kv_heads=shape["n_kv_heads"],
        vocab=shape["vocab"],
        head_size=get.optional("head_dim", None),
        max_seq_len=get.positive("max_position_embeddings"),
        gated_mlp=True,
        tied_embeddings=get.flag("tie_word_embeddings", False),
        n_experts=get.positive("num_local_experts"),
        top_k=get.positive("num_experts_per_tok"),
        expert_ffn_hidden=shape["ffn_hidden"],
        shared_ffn_hidden=shape["ffn_hidden"],
        moe_layer_pattern=None if all(pattern) else pattern,
        qk_norm="head" if get.flag("use_qk_norm", True) else "none",
        attention_chunk=get.positive("attention_chunk_size") if chunked else None,
        attention_chunk_layers=chunked if 0 < chunked < n_layers else None,
    )


def _nemotron_h(data: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    """Nemotron-H and Nemotron 3 (``NemotronHConfig``, ``transformers`` ``models/nemotron_h``):
    a hybrid model (``ModelSpec.hybrid_pattern``) whose layers ``hybrid_override_pattern``
    gives (or, in ``transformers`` 5, ``layers_block_type``: mamba, attention, mlp, moe);
    Mamba-2 mixers of ``mamba_num_heads`` heads (default ``expand · hidden_size /
    mamba_head_dim``) of ``mamba_head_dim``, ``n_groups`` groups of ``ssm_state_size``,
    ``conv_kernel`` taps, chunks of ``chunk_size``; grouped-query attention with ``head_dim``
    (or ``attention_head_dim``) and no rotary positions; a squared-ReLU MLP of
    ``intermediate_size`` (``mlp_hidden_act`` relu2; not gated); experts as Nemotron 3's:
    ``n_routed_experts`` of ``moe_intermediate_size`` routed ``num_experts_per_tok``, a shared
    one of ``moe_shared_expert_intermediate_size``, groups ``n_group``/``topk_group``;
    ``use_bias`` on the projections; RMSNorm; untied by default. With
    ``num_nextn_predict_layers`` (Nemotron 3.5 Lightning: 2), the multi-token-prediction
    module's blocks ``mtp_hybrid_override_pattern`` (``ModelSpec.mtp_pattern``; required then,
    as Megatron-Bridge's ``NemotronHBridge._hf_mtp_config`` requires it @067f987): like
    DeepSeek-V3's module, a job trains it with ``job.mtp_layers`` (and shares it among the depths
    with ``job.mtp_shared``, the config's ``mtp_use_repeated_layer``), which the published count
    leaves out. Refused: a latent MoE (``moe_latent_size``, Nemotron 3 Super's experts in a
    narrower space)."""
    get = _Reader(data)
    if get.optional("moe_latent_size", 0):
        raise ModelDefinitionError(
            f"moe_latent_size: {data['moe_latent_size']!r}: latent experts (LatentMoE) are not "
            "modelled"
        )
    mtp_pattern = None
    if get.optional("num_nextn_predict_layers", 0):
        mtp_pattern = data.get("mtp_hybrid_override_pattern")
        if not isinstance(mtp_pattern, str) or not mtp_pattern:
            raise ModelDefinitionError(
                f"mtp_hybrid_override_pattern: {_shown(mtp_pattern)}: num_nextn_predict_layers "
                f"{data['num_nextn_predict_layers']!r} needs the blocks of its multi-token-"
                "prediction module (e.g. '*E')"
            )
    pattern = data.get("hybrid_override_pattern")
    types = data.get("layers_block_type")
    if pattern is None and isinstance(types, list):
        unknown = [t for t in types if not isinstance(t, str) or t not in _NEMOTRON_H_BLOCKS]
        if unknown:
            raise ModelDefinitionError(
                f"layers_block_type: {_shown(unknown[0])} is not a block; allowed: "
                f"{', '.join(_NEMOTRON_H_BLOCKS)}"
            )
        pattern = "".join(_NEMOTRON_H_BLOCKS[t] for t in types)
    if not isinstance(pattern, str) or not pattern:
        raise ModelDefinitionError(
            f"hybrid_override_pattern: {_shown(pattern)}: missing or not a string; it gives "
            "each layer's block (M Mamba, * attention, - MLP, E MoE)"
        )
    layers = get.positive("num_hidden_layers")
    if len(pattern) != layers:
        raise ModelDefinitionError(
            f"hybrid_override_pattern: {len(pattern)} symbols for num_hidden_layers {layers}; "
            "give one per layer"
        )
    act = data.get("mlp_hidden_act", "relu2")
    if act != "relu2":
        raise ModelDefinitionError(
            f"mlp_hidden_act: {_shown(act)}: only relu2 (Nemotron-H's squared ReLU, an ungated "
            "MLP) is read"
        )
    if not get.flag("use_conv_bias", True):
        raise ModelDefinitionError(
            "use_conv_bias: false: Megatron-Core's Mamba mixer always has its convolution's "
            "bias (MambaMixer asserts conv_bias)"
        )
    hidden = get.positive("hidden_size")
    head_dim = get.optional("mamba_head_dim", 64, 1)
    expand = get.optional("expand", 2, 1)
    heads = get.optional("num_attention_heads", 1, 1)
    fields: dict[str, Any] = {
        "n_layers": layers,
        "hidden": hidden,
        "ffn_hidden": get.positive("intermediate_size"),
        "n_heads": heads,
        "n_kv_heads": get.optional("num_key_value_heads", heads, 1),
        "vocab": get.positive("vocab_size"),
        "head_size": get.optional("head_dim", None, 1)
        or get.optional("attention_head_dim", None, 1),
        "max_seq_len": get.optional("max_position_embeddings", NO_CONTEXT_LIMIT, 1),
        "gated_mlp": False,
        "tied_embeddings": get.flag("tie_word_embeddings", False),
        "linear_bias": get.flag("use_bias", False),
        "hybrid_pattern": pattern,
        "mamba_heads": get.optional("mamba_num_heads", None, 1) or expand * hidden // head_dim,
        "mamba_head_dim": head_dim,
        "mamba_state": get.optional("ssm_state_size", 128, 1),
        "mamba_groups": get.optional("n_groups", 8, 1),
        "mamba_conv": get.optional("conv_kernel", 4, 1),
        "mamba_chunk": get.optional("chunk_size", 128, 1),
        "rotary": False,
        "mtp_pattern": mtp_pattern,
    }
    if "E" in pattern:
        fields["n_experts"] = get.positive("n_routed_experts")
        fields["top_k"] = get.positive("num_experts_per_tok")
        fields["expert_ffn_hidden"] = get.positive("moe_intermediate_size")
        fields["shared_ffn_hidden"] = get.optional("moe_shared_expert_intermediate_size", 0)
        fields["expert_groups"] = get.optional("n_group", 1, 1)
        fields["group_topk"] = get.optional("topk_group", 1, 1)
    return _checked(name, source=source, **fields)


def _gemma(data: Mapping[str, Any], kind: str, name: str, source: str) -> ModelSpec:
    """Gemma 2 (``Gemma2Config``) and Gemma 3 (``Gemma3TextConfig``, ``transformers``
    ``models/gemma2``, ``models/gemma3``): grouped-query attention with ``head_dim``, a GeGLU
    MLP, four RMSNorms a layer (before and after the attention and the MLP: ``sandwich_norm``),
    a tied head by default, and a ``sliding_window`` on the local layers: those ``layer_types``
    calls ``sliding_attention`` or, without it, Gemma 2's even layers and all but every
    ``sliding_window_pattern``-th (6) of Gemma 3's. Gemma 3 normalises q and k per head
    (``qk_norm: head``); its ``text_config`` (``gemma3``) takes ``Gemma3TextConfig``'s defaults
    for the keys it leaves out. Not priced: Gemma 2's logit soft-capping (a tanh of the
    attention scores and of the logits), the embedding's scale by √hidden and
    ``query_pre_attn_scalar`` (scales)."""
    text = _text_config(data, kind) if kind == "gemma3" else data
    if kind != "gemma2":
        text = {**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in text.items() if v is not None}}
    get, shape = _unbiased_shape(text)
    n_layers = shape["n_layers"]
    windows = {"sliding_window": 4096, **text}
    if windows.get("layer_types") is None:
        if kind == "gemma2":
            local = [i % 2 == 0 for i in range(n_layers)]
        else:
            every = get.optional("sliding_window_pattern", 6)
            if every < 1:
                raise ModelDefinitionError(
                    f"sliding_window_pattern: {every}: must be an integer >= 1 (every n-th "
                    "layer attends globally)"
                )
            local = [(i + 1) % every != 0 for i in range(n_layers)]
        windows["layer_types"] = [
            "sliding_attention" if x else "full_attention" for x in local
        ]  # fmt: skip
    return _checked(
        name,
        source=source,
        **shape,
        head_size=get.optional("head_dim", 256),
        max_seq_len=get.positive("max_position_embeddings"),
        gated_mlp=True,
        tied_embeddings=get.flag("tie_word_embeddings", True),
        qk_norm="none" if kind == "gemma2" else "head",
        sandwich_norm=True,
        **_window(windows, _Reader(windows), kind),
    )


def _unbiased_shape(text: Mapping[str, Any]) -> tuple[_Reader, dict[str, int]]:
    """A reader of ``text`` and its sizes (:meth:`_Reader.shape`), for the families that
    have no biases on their attention projections (Llama 4, Gemma 2/3): ``attention_bias``
    true is refused."""
    get = _Reader(text)
    if get.flag("attention_bias", False):
        raise ModelDefinitionError(
            "attention_bias: true: biases on these projections are not modelled"
        )
    return get, get.shape()


def _text_config(data: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """A multimodal checkpoint's ``text_config`` (Llama 4, Gemma 3): the text model's keys."""
    text = data.get("text_config")
    if not isinstance(text, dict):
        raise ModelDefinitionError(
            f"text_config: {_shown(text)}: a {kind} config.json holds the text model's keys in "
            "a text_config object"
        )
    return text


def _layer_indices(key: str, value: Any, n_layers: int) -> set[int]:
    """``value``, a config's list of layer indices, as a set; one line naming ``key`` when
    it is not a list of indices below ``n_layers``."""
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_layers for i in value
    ):
        raise ModelDefinitionError(
            f"{key}: {_shown(value)}: must be a list of layer indices from 0 to "
            f"{n_layers - 1} (num_hidden_layers {n_layers})"
        )
    return set(value)


def _shown(value: Any) -> str:
    """``value`` as a config would spell it, cut to one short line for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _llama4_chunked_layers(text: Mapping[str, Any], get: _Reader, n_layers: int) -> int:
    """How many Llama 4 layers attend in chunks (:func:`_llama4`)."""
    types = text.get("layer_types")
    if types is not None:
        if (
            not isinstance(types, list)
            or len(types) != n_layers
            or not set(types) <= {"chunked_attention", "full_attention"}
        ):
            raise ModelDefinitionError(
                f"layer_types: {_shown(types)}: must list {n_layers} (num_hidden_layers) of "
                "'chunked_attention' and 'full_attention'"
            )
        return types.count("chunked_attention")
    rope = text.get("no_rope_layers")
    if rope is None or rope == []:
        interval = get.optional("no_rope_layer_interval", 4)
        if interval < 1:
            raise ModelDefinitionError(
                f"no_rope_layer_interval: {interval}: must be an integer >= 1"
            )
        return sum((i + 1) % interval != 0 for i in range(n_layers))
    if (
        not isinstance(rope, list)
        or len(rope) != n_layers
        or any(isinstance(v, bool) or v not in (0, 1) for v in rope)
    ):
        raise ModelDefinitionError(
            f"no_rope_layers: {_shown(rope)}: must list one 1 (rotary, chunked) or 0 (global) "
            f"per layer, {n_layers} (num_hidden_layers)"
        )
    return sum(rope)


#: ``model_type`` values whose ``sliding_window`` applies whenever it is set (``transformers``
#: Mistral, Mixtral, Phi-3 and StarCoder2 attention: no switch); the Qwen families gate it
#: instead with ``use_sliding_window`` and ``max_window_layers``.
_WINDOW_ALWAYS: Final = frozenset({"mistral", "mixtral", "phi3", "starcoder2"})
_QWEN: Final = frozenset({"qwen2", "qwen3", "qwen2_moe", "qwen3_moe"})


def _window(data: Mapping[str, Any], get: _Reader, kind: str) -> dict[str, int | None]:
    """``sliding_window`` and ``sliding_window_layers`` (how many layers attend over it;
    ``None``: all) as :class:`ModelSpec` takes them; no window: both ``None``.

    A ``sliding_window`` of ``null`` (or none given) is no window on any layer, as the
    ``transformers`` attention classes read it. ``layer_types`` (newer configs) names each
    layer's attention; without it, Mistral, Mixtral, Phi-3 and StarCoder2 use the window on
    every layer, and the Qwen families only when ``use_sliding_window`` is true, on the layers
    from ``max_window_layers`` on (``Qwen2Config``: the first ``max_window_layers`` attend
    fully; 28 when the key is absent, the Qwen2/Qwen3 (MoE) classes' default).
    """
    n_layers = get.positive("num_hidden_layers")
    if data.get("sliding_window") is None:
        return {"sliding_window": None, "sliding_window_layers": None}
    types = data.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(x, str) for x in types):
            raise ModelDefinitionError(
                f"layer_types: {types!r}: must be a list of strings, one per layer"
            )
        kinds = set(types)
        if len(types) != n_layers or not kinds <= {"full_attention", "sliding_attention"}:
            raise ModelDefinitionError(
                f"layer_types: {len(types)} entries of {sorted(kinds)}; allowed: "
                f"{n_layers} (num_hidden_layers) of 'full_attention' and 'sliding_attention'"
            )
        windowed = types.count("sliding_attention")
    elif kind in _WINDOW_ALWAYS:
        windowed = n_layers
    elif kind in _QWEN and get.flag("use_sliding_window", False):
        first = get.optional("max_window_layers", 28)  # the classes' default
        windowed = max(0, n_layers - first)
    else:
        windowed = 0
    if windowed == 0:
        return {"sliding_window": None, "sliding_window_layers": None}
    return {
        "sliding_window": int(get.positive("sliding_window")),
        "sliding_window_layers": None if windowed == n_layers else windowed,
    }


def _gpt_rotary(
    data: Mapping[str, Any], get: _Reader, kind: str, name: str, source: str
) -> ModelSpec:
    """GPT-NeoX and StarCoder2 (module docstring): GPT-3's layer with rotary positions."""
    bias_key = "attention_bias" if kind == "gpt_neox" else "use_bias"
    if not get.flag(bias_key, True):
        what = "the MLP keeps its biases" if kind == "gpt_neox" else "no biases"
        raise ModelDefinitionError(
            f"{bias_key}: false: {what}; only biases on every linear layer are modelled "
            "for this family"
        )
    return _checked(
        name,
        source=source,
        **get.shape(grouped_query=kind == "starcoder2"),
        max_seq_len=get.positive("max_position_embeddings"),
        gated_mlp=False,
        tied_embeddings=get.flag("tie_word_embeddings", _GPT_ROTARY[kind]),
        norm="layernorm",
        linear_bias=True,
        **_window(data, get, kind),
    )


def _gpt_oss(data: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    """GPT-OSS (module docstring), with ``GptOssConfig``'s defaults for the window: 128 tokens
    on the even-numbered layers when ``layer_types`` is not given."""
    get = _Reader(data)
    if not get.flag("attention_bias", True):
        raise ModelDefinitionError(
            "attention_bias: false: the experts keep their biases; only biases on every "
            "linear layer are modelled for this family"
        )
    shape = get.shape()
    windows = {"sliding_window": 128, **data}  # null stays null: no window
    if windows.get("layer_types") is None:
        windows["layer_types"] = [
            "sliding_attention" if i % 2 == 0 else "full_attention"
            for i in range(shape["n_layers"])
        ]
    return _checked(
        name,
        source=source,
        **shape,
        head_size=get.optional("head_dim", 64),
        max_seq_len=get.optional("max_position_embeddings", 131072),
        gated_mlp=True,
        tied_embeddings=get.flag("tie_word_embeddings", False),
        n_experts=get.positive("num_local_experts"),
        top_k=get.positive("num_experts_per_tok"),
        linear_bias=True,
        activation_clamp=get.bound("swiglu_limit", 7.0),
        **_window(windows, _Reader(windows), "gpt_oss"),
    )


def _deepseek(data: Mapping[str, Any], kind: str, name: str, source: str) -> ModelSpec:
    """DeepSeek-V2/V3, Kimi K2 and GLM-4.5 (module docstring): ``first_k_dense_replace``
    dense layers of width ``intermediate_size``, then MoE layers of ``n_routed_experts``
    experts of width ``moe_intermediate_size`` with ``n_shared_experts`` of that width
    beside them (one shared MLP of their summed width); multi-head latent attention
    (``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
    ``v_head_dim``) except in ``glm4_moe``, which has grouped-query attention with biases on
    q, k and v (``attention_bias``) and, with ``use_qk_norm``, per-head query and key norms."""
    get = _Reader(data)
    freq = get.optional("moe_layer_freq", 1)
    if freq < 1:
        raise ModelDefinitionError(
            f"moe_layer_freq: {freq}: must be an integer >= 1 (every n-th layer holds experts)"
        )
    shape = get.shape()
    expert = get.positive("moe_intermediate_size")
    fields: dict[str, Any] = {
        **shape,
        "max_seq_len": get.positive("max_position_embeddings"),
        "gated_mlp": True,
        "tied_embeddings": get.flag("tie_word_embeddings", False),
        "n_experts": get.positive("n_routed_experts"),
        "top_k": get.positive("num_experts_per_tok"),
        "expert_ffn_hidden": expert,
        "shared_ffn_hidden": get.optional("n_shared_experts", 0) * expert,
        "dense_layers": get.optional("first_k_dense_replace", 0),
        **_expert_groups(data, get),
    }
    if freq > 1:
        # DeepSeek's reference decoder layer: experts where layer_idx >= first_k_dense_replace
        # and layer_idx % moe_layer_freq == 0 (modeling_deepseek.py, as vLLM and SGLang port it)
        fields["moe_layer_pattern"] = tuple(int(i % freq == 0) for i in range(shape["n_layers"]))
    if kind == "glm4_moe":
        fields["head_size"] = get.optional("head_dim", None)
        fields["qkv_bias"] = get.flag("attention_bias", False)
        fields["qk_norm"] = "head" if get.flag("use_qk_norm", False) else "none"
        return _checked(name, source=source, **fields)
    if get.flag("attention_bias", False):
        raise ModelDefinitionError(
            "attention_bias: true: biases on MLA's projections are not modelled"
        )
    return _checked(
        name,
        source=source,
        **fields,
        head_size=get.positive("qk_nope_head_dim"),
        q_lora_rank=get.optional("q_lora_rank", None),
        kv_lora_rank=get.positive("kv_lora_rank"),
        qk_rope_head_dim=get.optional("qk_rope_head_dim", 0),
        v_head_dim=get.positive("v_head_dim"),
    )


def _expert_groups(data: Mapping[str, Any], get: _Reader) -> dict[str, int]:
    """Group-limited routing (``n_group``, ``topk_group``; default 1, none), as Megatron-Bridge
    maps them (``moe_router_num_groups``, ``moe_router_group_topk``:
    ``models/conversion/model_bridge.py``). ``topk_method`` ``greedy`` (DeepSeek-V2-Lite) routes
    over all experts whatever the groups (``transformers`` ``DeepseekV2Moe``)."""
    if data.get("topk_method") == "greedy":
        return {}
    return {
        "expert_groups": get.optional("n_group", 1, least=1),
        "group_topk": get.optional("topk_group", 1, least=1),
    }


def _gpt2(data: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    get = _Reader(data)
    hidden = get.positive("n_embd")
    return _checked(
        name,
        source=source,
        n_layers=get.positive("n_layer"),
        hidden=hidden,
        ffn_hidden=get.optional("n_inner", 4 * hidden) or 4 * hidden,
        n_heads=get.positive("n_head"),
        n_kv_heads=get.positive("n_head"),
        vocab=get.positive("vocab_size"),
        max_seq_len=get.positive("n_positions"),
        gated_mlp=False,
        tied_embeddings=get.flag("tie_word_embeddings", True),
        norm="layernorm",
        linear_bias=True,
        learned_pos_emb=True,
    )


#: Largest layer count and layers × experts a definition may have: the step lists every
#: gradient tensor (three per expert per layer), so a hostile definition could otherwise ask
#: for billions of them. DeepSeek-V3 has 61 × 256 = 15,616.
MAX_LAYERS: Final = 1024
MAX_EXPERT_LAYERS: Final = 65_536


def _checked(name: str, *, source: str, **fields: Any) -> ModelSpec:
    layers, experts = int(fields.get("n_layers", 1)), int(fields.get("n_experts", 1))
    if layers > MAX_LAYERS:
        raise ModelDefinitionError(f"n_layers: {layers}: at most {MAX_LAYERS:,} layers")
    if layers * experts > MAX_EXPERT_LAYERS:
        raise ModelDefinitionError(
            f"n_experts: {experts} experts x {layers} layers = {layers * experts:,} expert MLPs; "
            f"at most {MAX_EXPERT_LAYERS:,}"
        )
    try:
        spec = ModelSpec(name=name, published_params=0.0, source=source, **fields)
    except ValueError as e:
        raise ModelDefinitionError(str(e)) from None
    if spec.top_k > 1 and not spec.is_moe:
        raise ModelDefinitionError(f"{name}: top_k={spec.top_k} needs n_experts > 1")
    return replace(spec, published_params=float(spec.total_params()))


class _Reader:
    """Typed reads of config keys: one clear line naming the key when a value is wrong."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    def shape(self, *, grouped_query: bool = True) -> dict[str, int]:
        """The sizes every decoder family names alike: layers, hidden, MLP width (an expert's
        in GPT-OSS), heads, key/value heads (``num_key_value_heads``, default the heads; read
        only where the family has the key) and vocabulary."""
        heads = self.positive("num_attention_heads")
        return {
            "n_layers": self.positive("num_hidden_layers"),
            "hidden": self.positive("hidden_size"),
            "ffn_hidden": self.positive("intermediate_size"),
            "n_heads": heads,
            "n_kv_heads": self.optional("num_key_value_heads", heads) if grouped_query else heads,
            "vocab": self.positive("vocab_size"),
        }

    def positive(self, key: str) -> int:
        if key not in self.data or self.data[key] is None:
            raise ModelDefinitionError(f"{key}: missing; it is needed to size the model")
        return self._int(key, self.data[key], 1)

    def optional(self, key: str, default: int | None, least: int = 0) -> Any:
        value = self.data.get(key)
        return default if value is None else self._int(key, value, least)

    def bound(self, key: str, default: float) -> float:
        """A positive, finite number (an int or a float) under ``key``, ``default`` when absent."""
        value = self.data.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 < value < float("inf")
        ):
            raise ModelDefinitionError(f"{key}: {value!r}: must be a positive, finite number")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ModelDefinitionError(f"{key}: {value!r}: must be true or false")
        return value

    @staticmethod
    def _int(key: str, value: Any, least: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= 10**9:
            raise ModelDefinitionError(
                f"{key}: {value!r}: must be an integer from {least} to 1,000,000,000"
            )
        return value
