"""Tests for the model zoo: parameter counts vs published, FLOPs, gradient tensors, lookup."""

from __future__ import annotations

import dataclasses
import doctest
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.errors import CommwallError
from commwall.workload import WorkloadError, models
from commwall.workload.models import (
    MTP_PATTERNS,
    ModelDefinitionError,
    ModelSpec,
    UnknownModelError,
    get_model,
    list_models,
)

REQUIRED = ["gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b"]


def test_zoo_has_the_required_names() -> None:
    names = list_models()
    assert set(REQUIRED) <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("name", list_models())
def test_total_params_within_1_percent_of_published(name: str) -> None:
    m = get_model(name)
    assert m.total_params() == pytest.approx(m.published_params, rel=0.01)
    assert m.source


@pytest.mark.parametrize(
    ("name", "exact"),
    [
        # Hugging Face safetensors totals (model.safetensors.index.json "total_size" / 2 bytes).
        ("llama2-7b", 6_738_415_616),
        ("llama3-8b", 8_030_261_248),
        ("llama3-70b", 70_553_706_496),
    ],
)
def test_llama_counts_are_exact(name: str, exact: int) -> None:
    assert get_model(name).total_params() == exact


def test_llama3_hyperparameters_match_configs() -> None:
    expected = {
        "llama3-8b": (32, 4096, 14336, 32, 8),
        "llama3-70b": (80, 8192, 28672, 64, 8),
        "llama3-405b": (126, 16384, 53248, 128, 8),
    }
    for name, shape in expected.items():
        m = get_model(name)
        assert (m.n_layers, m.hidden, m.ffn_hidden, m.n_heads, m.n_kv_heads) == shape
        assert m.vocab == 128256 and not m.tied_embeddings and m.gated_mlp


def test_mixtral_total_and_active_params() -> None:
    m = get_model("mixtral-8x7b")
    assert (m.n_experts, m.top_k) == (8, 2)
    assert m.total_params() == pytest.approx(46.7e9, rel=0.01)
    assert m.published_active_params is not None
    assert m.active_params_per_token() == pytest.approx(m.published_active_params, rel=0.02)
    assert m.router_params_per_layer() == 4096 * 8


@pytest.mark.parametrize(
    "name", [n for n in list_models() if get_model(n).published_active_params is not None]
)
def test_moe_active_params_within_2_percent_of_published(name: str) -> None:
    """Mixtral, Qwen2-MoE's and Qwen3's fine-grained experts (with Qwen2's shared expert):
    the activated parameters their authors publish."""
    m = get_model(name)
    assert m.is_moe and m.published_active_params is not None
    assert m.active_params_per_token() == pytest.approx(m.published_active_params, rel=0.02)


def test_windowed_zoo_models_carry_their_windows() -> None:
    """Mistral 7B's 4096 on every layer; GPT-OSS's 128 on every other one (18 of 36)."""
    assert get_model("mistral-7b").sliding_window == 4096
    oss = get_model("gpt-oss-120b")
    assert (oss.sliding_window, oss.sliding_window_layers, oss.head_dim) == (128, 18, 64)


@pytest.mark.parametrize("name", [n for n in list_models() if get_model(n).n_experts == 1])
def test_dense_active_equals_total(name: str) -> None:
    m = get_model(name)
    assert m.active_params_per_token() == m.total_params()
    assert m.router_params_per_layer() == 0


def test_gpt3_layer_is_12h2_plus_13h() -> None:
    m = get_model("gpt3-175b")
    h = m.hidden
    assert m.layer_params() == 12 * h * h + 13 * h  # Narayanan et al. SC'21 eq. for GPT layers


def _non_lookup_active_params(m: ModelSpec) -> int:
    """Active params minus the embedding lookups (the tied table doubles as the LM head)."""
    lookup = m.position_embedding_params() + (0 if m.tied_embeddings else m.vocab * m.hidden)
    return m.active_params_per_token() - lookup


@pytest.mark.parametrize("name", list_models())
def test_flops_per_token_is_6n_at_short_sequence(name: str) -> None:
    m = get_model(name)
    flops = m.training_flops_per_token(1)
    # a hybrid model's Mamba-2 scans: 7·d_inner·state a token forward, x3 (Megatron-LM's count)
    scan = 3 * 7 * m.mamba_inner * m.mamba_state * m.mamba_layers
    assert flops == pytest.approx(6 * _non_lookup_active_params(m) + scan, rel=0.005)


def test_flops_close_to_6n_total_for_large_dense_model() -> None:
    m = get_model("llama3-70b")  # embeddings are 1.5% of 70B
    assert m.training_flops_per_token(16) == pytest.approx(6 * m.total_params(), rel=0.02)


@pytest.mark.parametrize("name", list_models())
def test_attention_flops_term_is_12_l_h_s(name: str) -> None:
    m = get_model(name)
    s = 4096
    delta = m.training_flops_per_token(s) - m.training_flops_per_token(1)
    # q_dim = o_dim = heads x head dim, except with MLA (scores 192, values 128 a head); a
    # hybrid model's attention layers only
    assert delta == pytest.approx(6 * m.attention_layers * (m.q_dim + m.o_dim) * (s - 1))
    if not m.mla:
        assert m.q_dim == m.o_dim


def test_flops_count_lm_head_even_when_tied() -> None:
    m = get_model("gpt3-175b")
    assert m.matmul_params_per_token() >= 12 * m.hidden**2 * m.n_layers + m.vocab * m.hidden


def test_flops_rejects_bad_seq_len() -> None:
    with pytest.raises(WorkloadError, match="seq_len=0"):
        get_model("llama3-8b").training_flops_per_token(0)


@pytest.mark.parametrize("name", list_models())
def test_gradient_tensors_sum_to_total_params(name: str) -> None:
    m = get_model(name)
    tensors = m.gradient_tensors()
    assert sum(n for _, n in tensors) == m.total_params()
    names = [t for t, _ in tensors]
    assert len(names) == len(set(names))
    assert all(n > 0 for _, n in tensors)


def _layer_index(tensor_name: str) -> int | None:
    parts = tensor_name.split(".")
    for marker in ("layers", "h"):
        if marker in parts:
            return int(parts[parts.index(marker) + 1])
    return None


@pytest.mark.parametrize("name", list_models())
def test_gradient_tensors_in_registration_order(name: str) -> None:
    m = get_model(name)
    names = [t for t, _ in m.gradient_tensors()]
    assert any(word in names[0] for word in ("embed_tokens", "wte", "backbone.embeddings"))
    indices = [i for i in map(_layer_index, names) if i is not None]
    assert indices == sorted(indices)
    assert indices[0] == 0 and indices[-1] == m.n_layers - 1
    if m.tied_embeddings:
        assert names[-1].endswith(("norm.weight", "ln_f.bias"))
    else:
        assert names[-1] == "lm_head.weight"


def test_llama_layer_tensor_order() -> None:
    names = [t for t, _ in get_model("llama3-8b").gradient_tensors()]
    layer0 = [n.removeprefix("model.layers.0.") for n in names if n.startswith("model.layers.0.")]
    assert layer0 == [
        "self_attn.q_proj.weight",
        "self_attn.k_proj.weight",
        "self_attn.v_proj.weight",
        "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
        "input_layernorm.weight",
        "post_attention_layernorm.weight",
    ]


def test_mixtral_router_comes_before_experts() -> None:
    names = [t for t, _ in get_model("mixtral-8x7b").gradient_tensors()]
    layer0 = [n for n in names if n.startswith("model.layers.0.block_sparse_moe")]
    assert layer0[0].endswith("gate.weight")
    assert len(layer0) == 1 + 8 * 3


@st.composite
def specs(draw: st.DrawFn) -> ModelSpec:
    """Small random architectures covering every feature combination."""
    kv_heads = draw(st.sampled_from([1, 2, 4]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4]))
    experts = draw(st.integers(1, 4))
    layers = draw(st.integers(1, 4))
    mla: dict[str, object] = {}
    if draw(st.booleans()):  # multi-head latent attention: every head its own key and value
        kv_heads = heads
        mla = {
            "kv_lora_rank": draw(st.integers(1, 16)),
            "q_lora_rank": draw(st.one_of(st.none(), st.integers(1, 16))),
            "qk_rope_head_dim": draw(st.integers(0, 8)),
            "v_head_dim": draw(st.integers(1, 16)),
        }
    dense = draw(st.integers(0, layers - 1)) if experts > 1 else 0
    return ModelSpec(
        name="hyp",
        dense_layers=dense,
        **mla,  # type: ignore[arg-type]
        n_layers=layers,
        hidden=heads * draw(st.integers(1, 16)),
        ffn_hidden=draw(st.integers(1, 64)),
        n_heads=heads,
        n_kv_heads=kv_heads,
        vocab=draw(st.integers(1, 500)),
        max_seq_len=128,
        gated_mlp=draw(st.booleans()),
        tied_embeddings=draw(st.booleans()),
        n_experts=experts,
        top_k=draw(st.integers(1, experts)),
        published_params=1.0,
        source="test",
        linear_bias=draw(st.booleans()),
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        learned_pos_emb=draw(st.booleans()),
        shared_ffn_hidden=draw(st.integers(0, 8)),
        mtp_layers=draw(st.integers(0, 2)),
    )


@settings(max_examples=200, deadline=None)
@given(specs())
def test_property_gradient_tensors_sum_and_active_bounds(m: ModelSpec) -> None:
    assert sum(n for _, n in m.gradient_tensors()) == m.total_params()
    assert m.active_params_per_token() <= m.total_params()
    assert m.training_flops_per_token(2) > m.training_flops_per_token(1) > 0
    assert sum(n for _, n in m.layer_kinds) == m.n_layers
    assert m.layers_params() == sum(n * kind.layer_params() for kind, n in m.layer_kinds)


def test_mla_counts_deepseek_v3_s_projections_by_hand() -> None:
    """DeepSeek-V3 §4.2: q 7168→1536→128·192, kv 7168→512+64, 512→128·(128+128), o 128·128→7168,
    and the two latents' norms."""
    m = get_model("deepseek-v3")
    by_hand = (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256
               + 128 * 128 * 7168 + 1536 + 512)  # fmt: skip
    assert m.attention_params_per_layer() == by_hand == 187_107_328
    assert m.dense_layer_params() == by_hand + 3 * 7168 * 18432 + 2 * 7168
    experts = 256 * 3 * 7168 * 2048 + 3 * 7168 * 2048 + 7168 * 256  # routed, shared, router
    assert m.layer_params() == by_hand + experts + 2 * 7168
    assert m.layers_params() == 3 * m.dense_layer_params() + 58 * m.layer_params()
    names = [n for n, _ in m.gradient_tensors() if n.startswith("model.layers.0.")]
    assert names[:7] == [f"model.layers.0.self_attn.{x}.weight" for x in (
        "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm",
        "kv_b_proj", "o_proj")]  # fmt: skip
    assert "model.layers.0.mlp.gate_proj.weight" in names  # a dense layer
    assert not any("experts" in n for n in names)
    assert any("model.layers.3.block_sparse_moe.experts.255" in n for n, _ in m.gradient_tensors())


def test_mla_attention_flops_use_the_query_key_and_value_widths() -> None:
    """Scores over q·k (192 a head) and values of 128: 6·L·(q_dim + o_dim)·s, which is the
    usual 12·L·q_dim·s when they are equal."""
    m = get_model("deepseek-v3")
    s = 4096
    attention = m.training_flops_per_token(s) - 6 * m.matmul_params_per_token()
    assert attention == 6 * 61 * (128 * 192 + 128 * 128) * s
    llama = get_model("llama3-8b")
    assert llama.training_flops_per_token(s) - 6 * llama.matmul_params_per_token() == (
        12 * 32 * 4096 * s
    )


def test_layer_kinds_are_the_dense_then_the_moe_model() -> None:
    m = get_model("deepseek-v3")
    (dense, n_dense), (moe, n_moe) = m.layer_kinds
    assert (n_dense, n_moe) == (3, 58)
    assert not dense.is_moe and dense.dense_layers == 0 and dense.mla
    assert moe.is_moe and moe.dense_layers == 0 and moe.n_experts == 256
    assert m.layer_kind(2) == dense and m.layer_kind(3) == moe
    assert get_model("mixtral-8x7b").layer_kinds == ((get_model("mixtral-8x7b"), 32),)


def test_interleaved_moe_layers_are_their_own_kind_wherever_they_are() -> None:
    """Llama 4 Maverick alternates dense layers (an MLP of 16384) and MoE ones (128 experts of
    8192, top-1, a shared expert of 8192), from a dense first layer: 24 of each."""
    m = get_model("llama4-maverick")
    assert [m.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    (dense, n_dense), (moe, n_moe) = m.layer_kinds
    assert (n_dense, n_moe) == (24, 24) and m.moe_layer_count == 24 and m.has_dense_layers
    assert not dense.is_moe and dense.ffn_hidden == 16384 and dense.moe_layer_pattern is None
    assert moe.is_moe and moe.moe_layer_pattern is None and moe.expert_ffn == 8192
    assert [m.kind_index(i) for i in range(4)] == [0, 1, 0, 1]
    attention = 5120 * (5120 + 2 * 1024) + 5120 * 5120
    assert dense.layer_params() == attention + 3 * 5120 * 16384 + 2 * 5120
    assert moe.layer_params() == attention + 129 * 3 * 5120 * 8192 + 5120 * 128 + 2 * 5120
    assert m.layers_params() == 24 * dense.layer_params() + 24 * moe.layer_params()
    assert sum(n for _, n in m.gradient_tensors()) == m.total_params()
    # top-1 of 128 plus the shared expert on the MoE layers: 17B active
    assert m.active_params_per_token() == pytest.approx(17e9, rel=0.02)
    assert not get_model("mixtral-8x7b").has_dense_layers


def test_the_moe_layer_pattern_is_checked() -> None:
    m = get_model("mixtral-8x7b")
    for pattern, message in (
        ((1, 0), "one 0 \\(dense\\) or 1"),
        ((2,) * 32, "one 0 \\(dense\\) or 1"),
        ((0,) * 32, "leaves no mixture-of-experts layer"),
    ):
        with pytest.raises(CommwallError, match=f"moe_layer_pattern.*{message}"):
            dataclasses.replace(m, moe_layer_pattern=pattern)
    with pytest.raises(CommwallError, match="needs a mixture-of-experts model"):
        dataclasses.replace(get_model("llama3-8b"), moe_layer_pattern=(1,) * 32)
    # a pattern and first dense layers together: MoE past the dense ones where marked 1
    both = dataclasses.replace(m, dense_layers=2, moe_layer_pattern=(1, 1, 0, 1) * 8)
    assert [both.is_moe_layer(i) for i in range(6)] == [False, False, False, True, True, True]
    assert both.moe_layer_count == 32 - 2 - 8  # the first two, and the 0s at 2, 6, ..., 30


def test_unknown_model_error_names_close_matches_and_all_names() -> None:
    with pytest.raises(UnknownModelError) as info:
        get_model("llama3-70")
    err = info.value
    assert isinstance(err, ValueError)
    msg = str(err)
    assert "'llama3-70'" in msg
    assert "llama3-70b" in err.close_matches
    for name in list_models():
        assert name in msg


def test_get_model_ignores_case_and_spaces() -> None:
    assert get_model(" LLaMA3-8B ") is get_model("llama3-8b")


def test_spec_is_frozen() -> None:
    m = get_model("llama3-8b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.hidden = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"n_layers": 0}, "n_layers"),
        ({"n_kv_heads": 3}, "n_kv_heads"),
        ({"hidden": 4097}, "hidden"),
        ({"top_k": 9}, "top_k"),
        ({"norm": "batchnorm"}, "norm"),
        ({"dense_layers": 32}, "dense_layers=32 is invalid"),
        ({"dense_layers": -1}, "dense_layers=-1 is invalid"),
        ({"q_lora_rank": 64}, "q_lora_rank=64 is invalid without kv_lora_rank"),
        ({"v_head_dim": 64}, "v_head_dim=64 is invalid without kv_lora_rank"),
        ({"kv_lora_rank": 64}, "n_kv_heads=8 is invalid with kv_lora_rank"),
        ({"kv_lora_rank": 0}, "kv_lora_rank=0 is invalid"),
    ],
)
def test_spec_validation_names_the_field(change: dict[str, object], field: str) -> None:
    base = get_model("mixtral-8x7b")
    with pytest.raises(ModelDefinitionError, match=field) as info:
        dataclasses.replace(base, **change)  # type: ignore[arg-type]
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


def test_module_doctests() -> None:
    assert doctest.testmod(models).failed == 0


def test_a_multi_token_prediction_module_is_a_layer_its_projection_and_norms() -> None:
    """DeepSeek-V3 §2.2 (Megatron-Core's MultiTokenPredictionLayer): a layer like the last,
    eh_proj (2h x h) and three norms; the embedding and LM head are shared. The published
    685B counts the MTP module and a second copy of the embedding and head (2 x 0.93B)."""
    m = get_model("deepseek-v3")
    mtp = dataclasses.replace(m, mtp_layers=1)
    module = m.layer_params() + 2 * 7168 * 7168 + 3 * 7168
    assert mtp.mtp_layer_params() == module
    assert mtp.total_params() == m.total_params() + module
    assert mtp.total_params() + 2 * 129280 * 7168 == pytest.approx(685e9, rel=0.002)
    assert mtp.layer_kinds == m.layer_kinds  # the modules are not model layers
    names = [n for n, _ in mtp.gradient_tensors()]
    assert names[-1] == "lm_head.weight"
    assert "model.mtp.0.eh_proj.weight" in names
    assert "model.mtp.0.block_sparse_moe.experts.255.w1.weight" in names
    # FLOPs: one more layer, its projection and the LM head again (Megatron-LM's count)
    extra = mtp.matmul_params_per_token() - m.matmul_params_per_token()
    last = m.layer_kind(60)
    layer = (last.attention_weight_params_per_layer() + 8 * last.mlp_weight_params_per_layer()
             + 3 * 7168 * 2048 + last.router_params_per_layer())  # fmt: skip
    assert extra == layer + 2 * 7168 * 7168 + 129280 * 7168


# ---------------------------------------------------------------- hybrid (Mamba-2) models
NANO = "nemotron-3-nano-30b-a3b"


def test_hybrid_model_kinds_follow_its_pattern() -> None:
    m = get_model(NANO)
    assert m.is_hybrid and m.is_moe
    assert [(k.block, n) for k, n in m.layer_kinds] == [
        ("mamba", 23),
        ("attention", 6),
        ("moe", 23),
    ]
    assert [m.kind_index(i) for i in range(6)] == [0, 2, 0, 2, 0, 1]  # M E M E M *
    assert m.moe_layer_count == 23 and m.is_moe_layer(1) and not m.is_moe_layer(0)
    assert m.attention_layers == 6 and m.mamba_layers == 23
    mamba, attention, moe = (k for k, _ in m.layer_kinds)
    assert not mamba.is_moe and not mamba.has_attention and not mamba.has_mlp
    assert attention.has_attention and not attention.has_mlp and attention.norms_per_layer == 1
    assert moe.is_moe and moe.has_mlp and not moe.has_attention


def test_mamba_mixer_parameters_in_closed_form() -> None:
    """Megatron-Core's MambaMixer: in_proj h x (2·d_inner + 2·G·N + H), conv (d_inner + 2GN)
    x (taps + bias), A_log, D and dt_bias per head, the gated norm's d_inner, out_proj."""
    m = get_model(NANO)
    h, heads, inner, g, n = 2688, 64, 64 * 64, 8, 128
    in_proj = h * (2 * inner + 2 * g * n + heads)
    conv = (inner + 2 * g * n) * (4 + 1)
    assert m.mamba_params_per_layer() == in_proj + conv + 3 * heads + inner + inner * h
    kinds = dict((k.block, k) for k, _ in m.layer_kinds)
    assert kinds["mamba"].layer_params() == m.mamba_params_per_layer() + h
    assert kinds["attention"].layer_params() == h * 4096 + 2 * h * 256 + 4096 * h + h
    expert, shared = 2 * h * 1856, 2 * h * 3712  # squared ReLU: up and down
    assert kinds["moe"].layer_params() == 128 * expert + shared + h * 128 + h
    assert (
        m.total_params()
        == 23 * kinds["mamba"].layer_params()
        + 6 * kinds["attention"].layer_params()
        + 23 * kinds["moe"].layer_params()
        + 2 * 131072 * h
        + h
    )


def test_hybrid_flops_count_attention_blocks_and_scans() -> None:
    m = get_model(NANO)
    s = 8192
    attention = 6 * 6 * (m.q_dim + m.o_dim) * s
    scan = 3 * 7 * 4096 * 128 * 23
    assert m.training_flops_per_token(s) == pytest.approx(
        6 * m.matmul_params_per_token() + attention + scan
    )
    # Megatron-Bridge's model card logs 937.770 TFLOP/s/GPU at 42,094.107 tokens/s/GPU: 22.28
    # GFLOP a token by Megatron-LM's own count, which sizes the mixer from 2·hidden; within 2 %
    assert m.training_flops_per_token(s) == pytest.approx(937.770e12 / 42094.107, rel=0.02)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"hybrid_pattern": "M*"}, "one of M, \\*, -, E .* n_layers=52"),
     ({"hybrid_pattern": "MX" * 26}, "one of M"),
     ({"n_experts": 1, "top_k": 1, "expert_ffn_hidden": None, "shared_ffn_hidden": 0},
      "E layers need experts"),
     ({"mamba_heads": 60}, "mamba_heads=60 is invalid: .* whole groups of mamba_groups=8"),
     ({"mamba_state": 0}, "mamba_state=0 is invalid"),
     ({"sliding_window": 128}, "sliding_window=128 is invalid with hybrid_pattern"),
     ({"mtp_layers": 1}, "mtp_layers=1 is invalid with hybrid_pattern without mtp_pattern"),
     ({"mtp_layers": 1, "mtp_pattern": "**"}, "mtp_pattern='\\*\\*' is invalid: allowed"),
     ({"mtp_layers": 1, "mtp_pattern": "E*"}, "mtp_pattern='E\\*' is invalid: allowed"),
     ({"mtp_shared": True}, "mtp_shared=True is invalid without mtp_layers"),
     ({"block": "mamba"}, "block='mamba' is invalid with hybrid_pattern")],
)  # fmt: skip
def test_hybrid_model_errors_name_the_field(change: dict[str, object], message: str) -> None:
    with pytest.raises(ModelDefinitionError, match=message):
        dataclasses.replace(get_model(NANO), **change)  # type: ignore[arg-type]


def test_an_mtp_pattern_needs_a_hybrid_model_and_its_blocks() -> None:
    with pytest.raises(ModelDefinitionError, match="mtp_pattern='E' is invalid without hybrid"):
        dataclasses.replace(get_model("deepseek-v3"), mtp_layers=1, mtp_pattern="E")
    dense = dataclasses.replace(
        get_model(NANO), n_layers=3, hybrid_pattern="M*-", n_experts=1, top_k=1,
        expert_ffn_hidden=None, shared_ffn_hidden=0,
    )  # fmt: skip
    with pytest.raises(ModelDefinitionError, match="an E block needs experts"):
        dataclasses.replace(dense, mtp_layers=1, mtp_pattern="E")
    assert dataclasses.replace(dense, mtp_layers=1, mtp_pattern="*-").mtp_kind().block == "layer"


def test_a_hybrid_model_s_mtp_module_runs_its_pattern_s_blocks() -> None:
    """Nemotron 3.5 Lightning: two depths of a '*E' module (an attention and the experts, as
    Megatron-Core's mtp_hybrid_override_pattern), each with its projection and three norms;
    one set of weights when the depths share it (mtp_use_repeated_layer)."""
    m = get_model(NANO)
    h = m.hidden
    kinds = {k.block: k for k, _ in m.layer_kinds}
    module = kinds["attention"].layer_params() + kinds["moe"].layer_params() + 2 * h * h + 3 * h
    lightning = dataclasses.replace(m, mtp_layers=2, mtp_pattern="*E")
    assert lightning.mtp_layer_params() == module
    assert lightning.total_params() == m.total_params() + 2 * module
    shared = dataclasses.replace(lightning, mtp_shared=True)
    assert shared.mtp_modules == 1 and shared.total_params() == m.total_params() + module
    kind = lightning.mtp_kind()
    assert (kind.block, kind.is_moe, kind.hybrid_pattern, kind.mtp_layers) == (
        "layer",
        True,
        None,
        0,
    )
    # each depth computes, shared or not: the attention's q, k, v, o weights twice more than E's
    attention = h * m.q_dim + 2 * h * m.kv_dim + m.q_dim * h
    only_e = dataclasses.replace(lightning, mtp_pattern="E")
    assert shared.matmul_params_per_token() == lightning.matmul_params_per_token()
    assert lightning.matmul_params_per_token() - only_e.matmul_params_per_token() == 2 * attention
    names = [n for n, _ in shared.gradient_tensors()]
    assert "backbone.mtp.0.blocks.0.mixer.q_proj.weight" in names
    assert "backbone.mtp.0.blocks.1.mixer.experts.127.up_proj.weight" in names
    assert "backbone.mtp.0.eh_proj.weight" in names and not any(".mtp.1." in n for n in names)
    for pattern, share in itertools.product(MTP_PATTERNS, (False, True)):
        x = dataclasses.replace(m, mtp_layers=2, mtp_pattern=pattern, mtp_shared=share)
        assert sum(n for _, n in x.gradient_tensors()) == x.total_params()


def test_mamba_fields_need_a_hybrid_pattern() -> None:
    with pytest.raises(ModelDefinitionError, match="mamba_heads=64 is invalid without"):
        dataclasses.replace(get_model("llama3-8b"), mamba_heads=64)


def test_hybrid_gradient_tensors_sum_and_name_the_blocks() -> None:
    m = get_model(NANO)
    tensors = m.gradient_tensors()
    assert sum(n for _, n in tensors) == m.total_params()
    layer0 = [t.removeprefix("backbone.layers.0.") for t, _ in tensors if ".layers.0." in t]
    assert layer0 == ["norm.weight", "mixer.in_proj.weight", "mixer.conv1d.weight",
                      "mixer.conv1d.bias", "mixer.dt_bias", "mixer.A_log", "mixer.D",
                      "mixer.norm.weight", "mixer.out_proj.weight"]  # fmt: skip
