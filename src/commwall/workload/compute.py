"""Compute per micro-batch from the kernels a transformer layer runs, not from one efficiency.

A layer's forward and backward are priced kernel by kernel on one GPU of the tensor-parallel
group (Megatron-LM's partitioning: Shoeybi et al. 2019; Korthikanti et al. 2022):

* **GEMMs** — QKV, attention output, MLP up (gate+up when gated) and down, the MoE router and
  experts (grouped, balanced tokens), the shared expert, the LM head on the last stage. Forward
  ``(M=tokens, N, K)``; backward a data-gradient ``(M, K, N)`` and a weight-gradient ``(K, N, M)``
  GEMM of the same FLOPs. Time = ``2MNK / (min(peak × ceiling, power bound) × sustained ×
  waves(M, N))``, and never less than the operands' HBM traffic at the achieved bandwidth
  (roofline, Williams et al. 2009), plus a GEMM kernel's fixed time (:data:`GEMM_FIXED`, from
  XLA's published GEMM table):

  - ``peak`` is the catalog's dense tensor peak of the precision (FP8 runs the decoder layers'
    GEMMs at the FP8 peak; the LM head stays 16-bit, as Megatron-Core builds it outside TE);
  - ``ceiling`` is the measured *maximum achievable* matmul throughput of that GPU and
    precision as a share of the peak (:data:`GEMM_CEILING`, sources there) — no GPU reaches its
    datasheet peak even on the best shape;
  - ``power bound``: where a GPU's sustained rate at its power limit is measured (a large GEMM
    run for a minute or more, :data:`POWER_BOUND_GEMM`), the best shape runs at no more than
    that: the power cap lowers the clock, more in FP8 than in BF16;
  - ``sustained`` is the share of the best shape's rate that long back-to-back layer GEMMs
    reach (:data:`SUSTAINED_GEMM`), under the power cap as without it: the cap slows every
    GEMM in the proportion it slows the tuned one;
  - ``waves(M, N)`` is wave and tile quantization (NVIDIA, "Matrix Multiplication Background
    User's Guide", §"Wave Quantization"): the output is cut into thread-block tiles, the tiles
    run in waves of one per SM, and the last wave may be partly idle. The best of cuBLAS's
    usual 256×128, 128×256 and 128×128 tiles (and 64×64 for outputs thinner than 128) is taken.
  - ``block-scaled on Hopper``: FP8 with per-block scales (``fp8_recipe: blockwise``) on a
    Hopper GPU runs its GEMMs :data:`HOPPER_BLOCKWISE_GEMM` times longer than per-tensor FP8:
    Hopper's tensor cores take one scale per operand, so the kernel applies the block scales
    in software (:data:`BLOCK_SCALES_EMULATED`).

* **Attention core** — FlashAttention (Dao 2022; Dao 2023; Shah et al. 2024): forward
  ``4·b·s²·a·d/t`` FLOPs halved by the causal mask (a sliding window ``w < s`` keeps
  ``(s·w − w²/2)/s²`` of them, :meth:`~commwall.workload.models.ModelSpec.attended_pairs`),
  backward 2.5× that (five GEMM-shaped products instead of two), at the measured share of
  peak of the GPU's fused attention kernel (:data:`ATTENTION`); a windowed layer no faster a
  query row than cuDNN's measured 128-token window (:data:`WINDOW_ROW_SECONDS`), and with
  ``job.attention_dropout`` the kernels' dropout variant (:data:`DROPOUT_SHARE`). ``attention: unfused``
  instead prices the 2021 Megatron path the SC'21 runs used: batched ``QKᵀ`` and
  ``softmax·V`` GEMMs with the full ``s²`` (no causal or window saving) plus the
  scale-mask-softmax and dropout passes over the ``s²`` scores in HBM.
* **Memory-bound kernels** — norms, residual adds, the MLP activation, rotary embedding (a
  YaRN model's unfused, :data:`UNFUSED_ROTARY_PASSES`), bias
  and dropout (GPT), a MoE layer's token permutations around its all-to-alls
  (:func:`_token_permutation`), the FP8 or NVFP4 casts of every GEMM input and output gradient
  (Transformer Engine writes a row-wise and a transposed copy of each,
  :data:`LOW_PRECISION_CAST`; of a per-tensor FP8 one only the row-wise copy on Blackwell,
  :data:`NON_TN_FP8`), the merges of a context-parallel ring attention's partial results
  (:func:`_ring_merges`) and the LM head's cross-entropy
  (the passes of the implementation ``job.cross_entropy`` names, :data:`CROSS_ENTROPY_PASSES`),
  priced by the bytes they move at the achieved HBM bandwidth (:data:`HBM_SHARE`); backward
  moves twice the forward's element-wise bytes.

Recomputation is charged as what is recomputed: ``full`` runs every forward kernel of the layer
again in backward, ``selective`` the parts ``recompute_modules`` names (Megatron-Core's
``recompute_modules``; by default only the attention core, Korthikanti et al. 2022 §5:
:func:`_recomputed`), ``selective_op`` what PyTorch's per-op policy in torchtitan does not
keep (every second matrix multiply, the element-wise kernels and casts:
:func:`_per_op_recomputed`).

What is not here: kernel-launch gaps and host overhead, data loading, clock throttling under
power limits beyond the measured GEMM bound above (attention and the memory-bound kernels run at
their benchmarks' rates), and any overlap of these kernels with each other — the numbers are a
GPU running one kernel after another at the measured ceilings. ``job.compute_efficiency`` replaces all of
this with the old flat model (executed FLOPs at a share of peak), e.g. from a measured step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from commwall.workload.errors import WorkloadError
from commwall.workload.models import ModelSpec

__all__ = [
    "ATTENTION",
    "ATTENTION_FP8",
    "BLOCK_SCALES_EMULATED",
    "CUDNN_RELEASES",
    "FP4_CEILING",
    "GEMM_CEILING",
    "GEMM_FIXED",
    "GPU_FRYER_BIAS",
    "HBM_SHARE",
    "HEAD_DIM_64_SHARE",
    "HOPPER_BLOCKWISE_GEMM",
    "KERNEL_LAUNCH",
    "NON_TN_FP8",
    "PER_TENSOR_FP8",
    "POWER_BOUND_GEMM",
    "SUSTAINED_GEMM",
    "Device",
    "Kernel",
    "LayerWork",
    "attention_family",
    "attention_share",
    "cached_weight_bytes",
    "device_for",
    "dropout_share",
    "gemm_seconds",
    "head_dim_efficiency",
    "layer_work",
    "wave_efficiency",
]

#: Measured maximum achievable dense-matmul throughput (MAMF: the best of a brute-force shape
#: search, mean of 100 timed matmuls) as a share of the dense spec peak, per GPU and precision.
#: Bekman, "Machine Learning Engineering", compute/accelerator/README.md @744d01e, "Maximum
#: Achievable Matmul FLOPS comparison table": A100 SXM BF16 271.2 of 312; H100 SXM 794.5 of 989
#: ("H200 is the same"), FP8 1402.6 of 1979; H200 FP8 1453.4; B200 1745.0 of 2250, FP8 3432.5
#: of 4500; B300 1769.0 of 2250, FP8 3353.3 of 4500; GB200 1822.0 of 2500, FP8 3615.6 of 5000.
#: A100 TF32: ~130 of 156 TFLOP/s read off NVIDIA's "CUDA 11 features revealed" cuBLAS figure.
#: Values marked ``*`` have no published measurement and take the nearest precision's share;
#: GB300 has none at all and takes GB200's (the same peaks, package and power class; its die is
#: B300's, whose shares are within 3 points of B200's) — docs/compute-model.md lists them. FP4:
#: :data:`FP4_CEILING`.
#: NVFP4 GEMMs (``precision: fp4``) have no published MAMF. Transformer Engine's GEMM profiling
#: tutorial (``docs/examples/gemm_profiling/gemm_profiling.rst`` @d0067d0, the source of
#: :data:`SUSTAINED_GEMM`) also times the layer's twelve GEMMs pre-quantized — the kernels alone
#: — on B300: 13.102 ms in BF16, 6.812 in FP8 (current scaling) and 3.764 in NVFP4. FP4's share
#: of its peak is BF16's MAMF share times that measured speed-up times the peaks' ratio (B300:
#: BF16 2,250, FP4 12,600 TFLOP/s): 0.786 × 3.481 × 0.179 = 0.489 (derived; the same steps give
#: FP8 0.756 against its measured MAMF share of 0.745). The FP4 tensor cores run far below their
#: nominal rate on real layer shapes. Every Blackwell GPU takes this share of its own FP4 peak
#: (*): no other NVFP4 GEMM measurement was found.
FP4_CEILING: Final = (1769.0 / 2250.0) * (13.102 / 3.764) * (2250.0 / 12600.0)
_GB200_CEILING: Final = {
    "bf16": 1822 / 2500,
    "fp16": 1822 / 2500,
    "tf32": 1822 / 2500,
    "fp8": 3615.6 / 5000,
    "fp4": FP4_CEILING,
}
GEMM_CEILING: Final[dict[str, dict[str, float]]] = {
    "a100-sxm": {"bf16": 271.2 / 312, "fp16": 271.2 / 312, "tf32": 130 / 156},
    "h100-sxm": {
        "bf16": 794.5 / 989,
        "fp16": 794.5 / 989,
        "tf32": 794.5 / 989,
        "fp8": 1402.6 / 1979,
    },  # tf32*
    "h200": {
        "bf16": 794.5 / 989,
        "fp16": 794.5 / 989,
        "tf32": 794.5 / 989,
        "fp8": 1453.4 / 1979,
    },  # tf32*
    "b200": {
        "bf16": 1745 / 2250,
        "fp16": 1745 / 2250,
        "tf32": 1745 / 2250,
        "fp8": 3432.5 / 4500,
        "fp4": FP4_CEILING,
    },  # tf32*, fp4*
    "b300": {
        "bf16": 1769 / 2250,
        "fp16": 1769 / 2250,
        "tf32": 1769 / 2250,
        "fp8": 3353.3 / 4500,
        "fp4": FP4_CEILING,
    },  # tf32*, fp4*
    "gb200": _GB200_CEILING,  # tf32*, fp4*
    "gb300": _GB200_CEILING,  # all * (GB200's)
}
#: Share of the best shape's rate that GEMMs of transformer layers sustain back to back: NVIDIA
#: Transformer Engine's GEMM profiling tutorial (docs/examples/gemm_profiling/gemm_profiling.rst
#: @d0067d0) times the four forward GEMMs of a hidden-4096, FFN-16384 layer at 15,872 tokens on
#: B300 in BF16: 6.39 TFLOP in 4.196 ms = 1,523 TFLOP/s, against a MAMF of 1,769 on the same GPU
#: (ml-engineering table) — 0.861 (derived). The 0.3 ms attention-output GEMM alone reaches 0.98
#: of MAMF, the 1.1–1.4 ms ones 0.84–0.86: long back-to-back GEMMs run below the best shape's
#: short benchmark. The one measurement of real layer shapes found; applied to every GPU, and
#: to the best shape's power-capped rate where one is measured (:data:`POWER_BOUND_GEMM`).
SUSTAINED_GEMM: Final = 1523.0 / 1769.0
#: Dense GEMM TFLOP/s a GPU sustains at its power limit, per precision: every GPU of a node
#: running its tuned GEMM shape with cuBLASLt 13.8 for 60 s (the first 10 s dropped), MIT ORCD's
#: HGX nodes — B200 at its 1,000 W limit, B300 at 1,100 W (mit-orcd/orcd-benchmarks
#: ``b300-nodes/COMPARISON-b200-vs-b300.md`` @cd7f796, §3 "cuBLASLt GEMM": "Sustained = tuned
#: shape for 60 s, first 10 s dropped, what a long job gets"). Both draw 991–994 W (B300
#: 1,086–1,091 W) and the power cap pulls the SM clock from ~1,965 MHz to 1,299 MHz in BF16 and
#: 1,131 MHz in FP8 on B200 (1,241 and 1,114 on B300): FP8 sustains 56 % of its datasheet peak,
#: BF16 62 %, where the short best-shape MAMF benchmark behind :data:`GEMM_CEILING` reaches 76
#: and 78 %. The best shape runs at the lower of this and ``ceiling`` of its peak, and a layer's
#: GEMMs at :data:`SUSTAINED_GEMM` of that: the power cap sets one clock for every kernel, so a
#: real layer shape keeps the share of the tuned shape's rate it has at full clock (the tutorial's
#: 0.861; a model choice, no sustained real-shape measurement was found). Megatron-LM's timers
#: on MIT ORCD's GPT 7B (one GPU, no communication) agree: a micro-batch's forward 113 ms and
#: backward 240 ms on B200, 110 and 231 ms on B300 (``b200-nodes`` and ``b300-nodes``
#: ``output-megatron`` logs), where this prices 110/229 and 107/223 ms and the lower bound alone
#: 97/202 and 94/197. BF16, FP16, TF32 and FP8 are power-bound on both GPUs, NVFP4 is
#: shape-bound (5,708 and 6,877 TFLOP/s sustained on the tuned shape, above the 4,398 and 6,158
#: that :data:`FP4_CEILING` gives of the peaks). A cross-check on the same
#: nodes: gpu-fryer's 8192³ cuBLASLt loop on all eight GPUs for 300 s sustains 1,456 TFLOP/s in
#: BF16 on B200 (mean of ten nodes) and 1,521 on B300 (§2), 4 and 6 % above; its FP8 figures
#: (~4,000) are not used: it fills FP8 operands by casting random 32-bit integers to E4M3
#: (huggingface/gpu-fryer ``src/main.rs``), nearly all beyond its 448 maximum, so the operands
#: are all one value, and predictable data draws less power and runs faster (H. He, "Strangely,
#: Matrix Multiplications on GPUs Run Faster When Given 'Predictable' Data!", 2024).
#:
#: Other GPUs, each precision from one of two further sources (none gives clocks or power):
#:
#: * FP8 and NVFP4 on GB200, FP8 on H200 and H100: Microsoft's Azure AI benchmarking guide,
#:   cuBLASLt (superbench ``cublaslt_gemm``) on one GPU, random operands, 10,000 warm-up and
#:   1,000 timed iterations per shape (``Benchmarks/NVIDIA/GEMMCublasLt.py`` @cd84f36). Its
#:   longest run, 32768³ (11,000 GEMMs: 2.5 to 10 minutes at these rates), is taken: GB200
#:   (ND GB200 v6, 1,200 W) 2,825.6 TFLOP/s in FP8 and 5,262.2 in NVFP4, where its 8192³ run of
#:   a second or two reached 7,609 in NVFP4 (``Azure_Results/ND_GB200_v6_results.md``
#:   @fa79995); H200 (ND H200 v5) 1,349.5 in FP8 (``ND_H200_v5_results.md`` @7f20e5f); H100
#:   (ND H100 v5) 1,382.2 in FP8, the same guide's ``ND_H100_v5_results.md`` as its fork
#:   yosoyjay/AI-benchmarking-guide keeps it (@a8263ef; Azure's own repository no longer has it).
#: * BF16 on GB200, H100 and A100: gpu-fryer's reference table (huggingface/gpu-fryer
#:   ``README.md`` @f9d564b; its 8192³ cuBLAS loop on every GPU of a node, 60 s by default):
#:   GB200-NVL72 ~1,550, H100 SXM ~730, A100 SXM4 80GB ~270 TFLOP/s, each divided by
#:   :data:`GPU_FRYER_BIAS`: gpu-fryer's BF16 operands are random 32-bit integers cast to
#:   float (``src/main.rs``, unchanged from c83e0ef, which added the BF16 burn, to f9d564b, the
#:   table's commit), all positive and nearly all of one or two exponents, data that
#:   toggles fewer bits than a random-operand benchmark's and draws less power, and where both
#:   ran on the same nodes (B200, B300, above) it read that much above cuBLASLt.
#:
#: GB300 (1,400 W) has none, and H200 none in BF16: they take ``ceiling`` alone.
#: gpu-fryer's BF16 reading over the random-operand cuBLASLt rate on the same nodes: 1,456 over
#: 1,396 TFLOP/s on B200 and 1,521 over 1,437 on B300 (MIT ORCD, above), the mean of 1.043 and
#: 1.058 (derived).
GPU_FRYER_BIAS: Final = (1456.0 / 1396.0 + 1521.0 / 1437.0) / 2
POWER_BOUND_GEMM: Final[dict[str, dict[str, float]]] = {
    "b200": {"bf16": 1396.0, "fp16": 1322.0, "tf32": 720.0, "fp8": 2524.0, "fp4": 5708.0},
    "b300": {"bf16": 1437.0, "fp16": 1333.0, "tf32": 756.0, "fp8": 2524.0, "fp4": 6877.0},
    "gb200": {"bf16": 1550.0 / GPU_FRYER_BIAS, "fp8": 2825.6, "fp4": 5262.2},
    "h200": {"fp8": 1349.5},
    "h100-sxm": {"bf16": 730.0 / GPU_FRYER_BIAS, "fp8": 1382.2},
    "a100-sxm": {"bf16": 270.0 / GPU_FRYER_BIAS},
}
#: Causal attention throughput, head dim 128, TFLOP/s counting the computed half (FlashAttention
#: papers' convention), by sequence length: (forward, backward) per kernel family.
#: ``fa2-a100``: FlashAttention-2 on A100 80GB, forward+backward (Dao 2023, Fig. 4 =
#: flash-attention assets/flash2_a100_fwd_bwd_benchmark.png @0251105) — one rate for both.
#: ``fa2-h100``: the same kernel on H100 SXM (assets/flash2_h100_fwd_bwd_benchmark.png).
#: ``cudnn-h100``: cuDNN's fused attention on H100 SXM (Shah et al. 2024, FlashAttention-3,
#: Fig. 5 causal forward; backward = its non-causal Fig. 6 values × the forward's causal /
#: non-causal ratio at each length, derived) — what Transformer Engine runs in Megatron/NeMo.
#: ``cudnn-gb200`` / ``cudnn-gb300``: cuDNN's fused attention on GB200 and GB300 (cuDNN 9.22,
#: BF16, causal ``top_left`` mask, GQA 64/8 heads, batch 2, forward and non-deterministic
#: backward timed apart; NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/
#: llama3.1/{gb200,gb300}/*.csv @3929da2) — Blackwell Ultra's doubled exponential throughput
#: shows in its faster forward. ``cudnn-fp8-gb200`` / ``cudnn-fp8-gb300``: the same runs'
#: FP8 rows (:data:`ATTENTION_FP8`).
_ATTENTION_TFLOPS: Final[dict[str, dict[int, tuple[float, float]]]] = {
    "fa2-a100": {512: (99, 99), 1024: (133, 133), 2048: (155, 155), 4096: (173, 173),
                 8192: (182, 182), 16384: (189, 189)},
    "fa2-h100": {512: (163, 163), 1024: (221, 221), 2048: (265, 265), 4096: (294, 294),
                 8192: (308, 308), 16384: (328, 328)},
    "cudnn-h100": {512: (315, 193), 1024: (410, 291), 2048: (484, 365), 4096: (518, 425),
                   8192: (529, 456), 16384: (539, 468)},
    "cudnn-gb200": {2048: (1097, 885), 4096: (1408, 1148), 8192: (1574, 1332),
                    16384: (1708, 1328), 32768: (1622, 1226)},
    "cudnn-gb300": {2048: (1373, 967), 4096: (1703, 1248), 8192: (1856, 1435),
                    16384: (1915, 1507), 32768: (1953, 1490)},
    "cudnn-fp8-gb200": {2048: (1420, 831), 4096: (1805, 1178), 8192: (2047, 1454),
                        16384: (2154, 1632), 32768: (2197, 1687)},
    "cudnn-fp8-gb300": {2048: (1954, 944), 4096: (2532, 1396), 8192: (2897, 1781),
                        16384: (3054, 2035), 32768: (3108, 2128)},
    # older cuDNN releases (CUDNN_RELEASES)
    "cudnn917-gb200": {2048: (1068, 656), 4096: (1378, 1054), 8192: (1583, 1211),
                       16384: (1673, 1303), 32768: (1687, 1311)},
    "cudnn917-gb300": {2048: (1310, 634), 4096: (1680, 1110), 8192: (1899, 1293),
                       16384: (1975, 1399), 32768: (2006, 1438)},
    "cudnn917-fp8-gb200": {2048: (1324, 671), 4096: (1663, 1088), 8192: (1894, 1263),
                           16384: (2033, 1373), 32768: (2124, 1429)},
    "cudnn917-fp8-gb300": {2048: (1700, 696), 4096: (2197, 1178), 8192: (2565, 1400),
                           16384: (2810, 1534), 32768: (2967, 1605)},
    "cudnn913-b200": {2048: (908, 545), 4096: (1141, 833), 8192: (1384, 995),
                      16384: (1475, 1152), 32768: (1515, 1180)},
    "cudnn913-gb300": {2048: (1000, 545), 4096: (1445, 942), 8192: (1716, 1150),
                       16384: (1836, 1291), 32768: (1884, 1350)},
    "cudnn913-fp8-b200": {2048: (974, 556), 4096: (1231, 972), 8192: (1502, 1255),
                          16384: (1692, 1469), 32768: (1781, 1582)},
    "cudnn913-fp8-gb300": {2048: (1030, 573), 4096: (1675, 1156), 8192: (2074, 1514),
                           16384: (2267, 1746), 32768: (2352, 1880)},
}  # fmt: skip
#: The BF16 peak those measurements ran against (A100 312, H100 989.4, GB200/GB300 2500 TFLOP/s).
_ATTENTION_PEAK: Final = {
    "fa2-a100": 312.0, "fa2-h100": 989.4, "cudnn-h100": 989.4, "cudnn-gb200": 2500.0,
    "cudnn-gb300": 2500.0, "cudnn-fp8-gb200": 2500.0, "cudnn-fp8-gb300": 2500.0,
    "cudnn917-gb200": 2500.0, "cudnn917-gb300": 2500.0, "cudnn917-fp8-gb200": 2500.0,
    "cudnn917-fp8-gb300": 2500.0, "cudnn913-b200": 2250.0, "cudnn913-gb300": 2500.0,
    "cudnn913-fp8-b200": 2250.0, "cudnn913-fp8-gb300": 2500.0,
}  # fmt: skip
#: Which measured kernel ``attention: flash`` / ``flash2`` means on each GPU: B200 takes the
#: GB200 cuDNN shares of its own peak and B300 GB300's (the same silicon; *); FlashAttention-2
#: has no Blackwell kernel of its own and takes its H100 shares (*).
ATTENTION: Final[dict[str, dict[str, str]]] = {
    "a100-sxm": {"flash": "fa2-a100", "flash2": "fa2-a100"},
    "h100-sxm": {"flash": "cudnn-h100", "flash2": "fa2-h100"},
    "h200": {"flash": "cudnn-h100", "flash2": "fa2-h100"},
    "b200": {"flash": "cudnn-gb200", "flash2": "fa2-h100"},
    "b300": {"flash": "cudnn-gb300", "flash2": "fa2-h100"},
    "gb200": {"flash": "cudnn-gb200", "flash2": "fa2-h100"},
    "gb300": {"flash": "cudnn-gb300", "flash2": "fa2-h100"},
}
#: cuDNN's fused attention got faster release by release on Blackwell, mostly its backward (at
#: 8K: 0.44, 0.48 and 0.53 of the BF16 peak in 9.13, 9.17 and 9.22), so ``job.cudnn`` picks the
#: measurement of the release a job runs: the newest measured at or below it (below 9.13, 9.13's,
#: the oldest measured; no ``job.cudnn``: the newest). The same cudnn-frontend benchmark, BF16
#: and FP8 rows timed apart with cuDNN called directly, as Transformer Engine calls it, Llama 3.1
#: 405B's heads (128 query, 8 key/value, head dim 128), causal:
#:
#: * 9.13.1: ``benchmark/sdpa_benchmark_training/artifacts/sdpa_fp8_benchmark_results_NVIDIA_
#:   {B200,GB300}.csv`` @0b1577c (``nvcr.io/nvidia/pytorch:25.09-py3``, the MLPerf Training
#:   v5.1 stack) — B200 measured itself;
#: * 9.17.0: the same files for GB200 and GB300 @b372d39 (``pytorch:25.11-py3``);
#: * 9.22: the ``cudnn-gb200`` / ``cudnn-gb300`` tables above (@3929da2).
#:
#: Each GPU takes its own GPU's measurement or its sibling's shares of its own peak, as above.
#: A100 and Hopper have one measurement each; ``job.cudnn`` does not change them.
_BLACKWELL_RELEASES: Final = (
    ((9, 13), "cudnn913-b200", "cudnn913-fp8-b200"),
    ((9, 17), "cudnn917-gb200", "cudnn917-fp8-gb200"),
    ((9, 22), "cudnn-gb200", "cudnn-fp8-gb200"),
)
_ULTRA_RELEASES: Final = (
    ((9, 13), "cudnn913-gb300", "cudnn913-fp8-gb300"),
    ((9, 17), "cudnn917-gb300", "cudnn917-fp8-gb300"),
    ((9, 22), "cudnn-gb300", "cudnn-fp8-gb300"),
)
#: (release, BF16 family, FP8 family) per GPU, oldest first.
CUDNN_RELEASES: Final[dict[str, tuple[tuple[tuple[int, int], str, str], ...]]] = {
    "b200": _BLACKWELL_RELEASES,
    "gb200": _BLACKWELL_RELEASES,
    "b300": _ULTRA_RELEASES,
    "gb300": _ULTRA_RELEASES,
}


#: The measured kernel ``job.fp8_attention`` prices by default (the newest release's FP8 rows
#: of the same cudnn-frontend files, E4M3 in both passes, timed beside the BF16 ones; B200 and
#: B300 take the GB200 and GB300 shares of their own peaks, *), and the GPUs it can run on.
#: Transformer Engine keeps the output and the gradients 16-bit and casts Q, K, V and the output
#: gradient first (:func:`_attention`). No Hopper measurement of cuDNN's FP8 backward was found,
#: so Hopper has none.
ATTENTION_FP8: Final[dict[str, str]] = {
    gpu: releases[-1][2] for gpu, releases in CUDNN_RELEASES.items()
}


def attention_family(
    gpu: str, attention: str, *, fp8: bool = False, cudnn: tuple[int, int] | None = None
) -> str:
    """The measured kernel (a key of the attention tables) ``attention`` prices on ``gpu``:
    cuDNN's on Blackwell at the release ``cudnn`` (:data:`CUDNN_RELEASES`), FP8 with ``fp8``.

    >>> attention_family("b200", "flash", cudnn=(9, 15))
    'cudnn913-b200'
    >>> attention_family("gb300", "flash", fp8=True), attention_family("h100-sxm", "flash2")
    ('cudnn-fp8-gb300', 'fa2-h100')
    """
    releases = CUDNN_RELEASES.get(gpu)
    if attention != "flash" or releases is None:
        return ATTENTION_FP8[gpu] if fp8 else ATTENTION[gpu][attention]
    picked = releases[-1] if cudnn is None else releases[0]
    for release in releases:
        if cudnn is not None and release[0] <= cudnn:
            picked = release
    return picked[2] if fp8 else picked[1]


#: The kernel a measured attention family's name starts with, in words (a step's one-line
#: summary): ``fa2-h100`` is FlashAttention-2, ``cudnn-gb200`` cuDNN's fused kernel.
ATTENTION_KERNEL: Final[dict[str, str]] = {
    "fa2": "FlashAttention-2",
    "cudnn": "cuDNN fused attention",
}


def attention_kernel(gpu: str, attention: str, cudnn: str | None = None) -> str:
    """The attention kernel ``job.attention`` prices on catalog GPU ``gpu``, in words, with the
    cuDNN release ``job.cudnn`` names where it picks the measurement (:data:`CUDNN_RELEASES`).

    >>> attention_kernel("h100-sxm", "flash"), attention_kernel("h100-sxm", "flash2")
    ('cuDNN fused attention', 'FlashAttention-2')
    >>> attention_kernel("a100-sxm", "flash"), attention_kernel("b200", "unfused")
    ('FlashAttention-2', 'unfused attention')
    """
    family = ATTENTION.get(gpu, {}).get(attention)
    if family is None:
        return "unfused attention" if attention == "unfused" else f"{attention} attention"
    words = ATTENTION_KERNEL[family.split("-", 1)[0]]
    if cudnn and attention == "flash" and gpu in CUDNN_RELEASES:
        return words.replace("cuDNN", f"cuDNN {cudnn}")
    return words


#: Achieved share of the spec HBM bandwidth by streaming element-wise kernels: A100 80GB 1.80 of
#: 2.04 TB/s (NVIDIA developer forum thread 339083, confirmed with Nsight Compute); H100 89.6%
#: for torch.clone and 89.7% for a softmax (Dao-AILab/quack @c8ec317); Blackwell 84% measured
#: on B300 (pytorch/ao torchao/testing/training/roofline_utils.py @36027d8).
HBM_SHARE: Final[dict[str, float]] = {
    "a100-sxm": 1.80 / 2.04, "h100-sxm": 0.896, "h200": 0.896, "b200": 0.84, "b300": 0.84,
    "gb200": 0.84, "gb300": 0.84,
}  # fmt: skip
#: GPU time of launching one kernel, seconds (torchao roofline_utils.py: a one-element Triton
#: kernel traced on H100).
KERNEL_LAUNCH: Final = 2e-6
#: A GEMM kernel's fixed GPU time beyond its math, seconds: XLA's published GEMM table
#: (``matmul_interpolator_data.h``, tensorflow/tensorflow @a305421: each shape's median kernel
#: time of five runs under a CUPTI tracer, b ∈ {1, 2, 4} × m, n, k ∈ {256 … 4096}) on B200 in
#: BF16 and FP8 and on H100 in BF16, 465 shapes of at least 2048² outputs, is fitted by
#: ``t = a + s·(math at this module's rate)·(k + k₀)/k`` with one ``a`` and one per-wave fill
#: ``k₀·τ`` for all three (rms 5.2 %; derived): ``a`` = 5.52 µs, where a one-element kernel
#: takes 2 µs (:data:`KERNEL_LAUNCH`). The per-wave fill (2.1 µs of the
#: model's time per wave of 256×128 tiles, 1–14 waves in the table) is not priced:
#: Transformer Engine's tutorial GEMMs (:data:`SUSTAINED_GEMM`: its 14-wave 15,872×4,096×4,096
#: GEMM at 0.98 of MAMF) and MAMF's best shapes (B300's 12,288×18,432×1,024, 47 waves of
#: k = 1,024) show no such cost at 14 waves and more, where XLA's kernels (cuBLAS or its own
#: Triton GEMMs, whichever its autotuner picked) may not be the persistent cuBLAS kernels
#: Transformer Engine calls; docs/compute-model.md sets out the table's comparison. A check on
#: cuBLASLt itself, which the fit did not see: Azure's FP8 runs on one H100 (AI-benchmarking-guide
#: ``ND_H100_v5_results.md``, 10,000 warm-up iterations) reach 0.198, 0.732 and 0.297 of their
#: 32768³ rate at 1024³, 2048³ and 1024×2145×1024; with this the model gives 0.195, 0.708 and
#: 0.292 (with 2 µs: 0.316, 0.856 and 0.401).
GEMM_FIXED: Final = 5.52e-6
#: Streaming multiprocessors per GPU (NVIDIA architecture whitepapers; B200: 148; B300: 148 of
#: the Blackwell Ultra die's 160, as its devices report — GB300 taken the same, no report found).
SMS: Final[dict[str, int]] = {
    "a100-sxm": 108,
    "h100-sxm": 132,
    "h200": 132,
    "b200": 148,
    "b300": 148,
    "gb200": 148,
    "gb300": 148,
}
#: Thread-block output tiles cuBLAS commonly picks (NVIDIA Matrix Multiplication guide: 256×128
#: and 128×256 the most efficient, 64×64 the least). The 64×64 tile is only considered for an
#: output thinner than 128 (its lower per-SM rate is not modelled, so it would otherwise win).
_TILES: Final = ((256, 128), (128, 256), (128, 128))
_THIN_TILE: Final = (64, 64)


#: Causal forward attention at 4K tokens on GB200 with head dim 64: cuDNN 977 TFLOP/s
#: (Dao-AILab/flash-attention#2605's benchmark table, batch 8), against cuDNN's 1,378 at head
#: dim 128 and that length in :data:`ATTENTION` (GB200, cuDNN 9.17); FlashAttention-4 in the same
#: table: 1,011 at 64 against 1,431 at 128, the same 0.71. A check on a kernel it was not taken
#: from: cudnn-frontend's GPT-OSS benchmark (head dim 64, b 2 × 128 heads, GB300) times the
#: FP8 backward at 4K tokens at 1.486 ms (MXFP8: 1.844); over the whole causal triangle (see
#: :func:`_attention`) at this share of the measured FP8 rate the model gives 1.65 ms. Measured on
#: Blackwell only; every GPU and kernel family takes it (no other measurement found).
HEAD_DIM_64_SHARE: Final = 977.0 / 1378.0

#: Seconds per query row (one query of one head) below which cuDNN's sliding-window attention
#: does not go, (BF16 forward, BF16 backward, FP8 forward), per GPU: cudnn-frontend's SDPA
#: training benchmark with its GPT-OSS preset (a 128-token window, head dim 64, b 2 × 128
#: heads, 2K to 32K tokens, the non-deterministic backward; ``benchmark/sdpa_benchmark_training/
#: results/gpt_oss/{gb200,gb300}/gpt_oss_20260424_1000{11,22}.csv`` @3929da2, cuDNN 9.22). The
#: time per row hardly moves with the length (GB200 BF16 forward 0.208, 0.200, 0.197, 0.196 ns
#: from 2K to 16K; backward 0.452 to 0.433), so the least of the lengths is taken: at such a
#: window a kernel pays its per-query-block fixed work (loading Q, the softmax statistics,
#: writing O) over a loop of two key blocks, and runs at 161 TFLOP/s of the window's FLOPs
#: (6.5 % of the BF16 peak) where the whole causal square at 4K runs at 998. A wider window
#: is no faster a row, so :func:`_attention` prices a windowed layer at the slower of its
#: FLOPs at the full-attention rate and these rows. The same benchmark's H200 rows (cuDNN
#: 9.19, 64 query and 8 key/value heads) use a 1,024-token window, where the FLOPs alone land
#: within 9 % of the measured times; Hopper has no 128-token measurement and keeps the FLOP
#: price. B200 and B300 take their GB siblings' rows.
WINDOW_ROW_SECONDS: Final[dict[str, tuple[float, float, float]]] = {
    "b200": (0.1960e-9, 0.4334e-9, 0.1823e-9),
    "gb200": (0.1960e-9, 0.4334e-9, 0.1823e-9),
    "b300": (0.1884e-9, 0.4082e-9, 0.1545e-9),
    "gb300": (0.1884e-9, 0.4082e-9, 0.1545e-9),
}

#: Share of a fused attention kernel's rate it keeps with dropout on the attention
#: probabilities (``job.attention_dropout`` > 0: a Philox draw per score and the mask applied
#: in both passes), forward and backward at head dim 128, and backward at 64. Derived from the
#: GB200 measurements of Dao-AILab/flash-attention PR #2597 (FlashAttention-4 dropout on SM100,
#: bf16, 16 heads, ~32K tokens, p 0.125, against cuDNN 9.24): FlashAttention-4 keeps 75-85 % of
#: its no-dropout TFLOP/s forward and 60-70 % backward; cuDNN's dropout backward is 1.1-1.2×
#: slower than FlashAttention-4's at head dim 128 and 1.4-1.7× at 64, the forwards trade wins;
#: and cuDNN without dropout runs at 1,378 / 1,431 (head dim 128) and 977 / 1,011 (64) of
#: FlashAttention-4's rate in cudnn-frontend's table (:data:`HEAD_DIM_64_SHARE`'s source).
#: With the ranges' middles: forward 0.80 / 0.963 = 0.83, backward 0.65 / 1.15 / 0.963 = 0.59
#: (head dim 128) and 0.65 / 1.55 / 0.966 = 0.43 (64), linear in the head dim between. Measured
#: on GB200 only; every fused kernel takes it (FlashAttention-2's own dropout cost on A100 and
#: H100 is not published in a comparable form).
DROPOUT_SHARE: Final = (0.80 / 0.963, 0.65 / 1.15 / 0.963, 0.65 / 1.55 / 0.966)


def dropout_share(head_dim: int) -> tuple[float, float]:
    """(forward, backward) share of its rate a fused attention kernel keeps with dropout
    (:data:`DROPOUT_SHARE`), linear in the head dim between 64 and 128 and flat outside.

    >>> [round(x, 3) for x in dropout_share(128)], [round(x, 3) for x in dropout_share(64)]
    ([0.831, 0.587], [0.831, 0.434])
    """
    forward, wide, narrow = DROPOUT_SHARE
    x = min(1.0, max(0.0, (head_dim - 64) / 64))
    return forward, narrow + x * (wide - narrow)


def head_dim_efficiency(head_dim: int) -> float:
    """Share of the measured (head dim 128) attention rate a kernel with narrower heads keeps.

    Each score costs the softmax the same work whatever the head dim (its exponentials, max
    and sum: FlashAttention-2's non-matmul work, Dao 2023 §3.1), while QKᵀ and softmax·V scale
    with it, so time per FLOP goes as ``1 + x·128/d`` over ``1 + x``; ``x`` follows from
    :data:`HEAD_DIM_64_SHARE`. Head dims of 128 and more keep the measured rate (the rates
    were measured at 128; wider heads are not credited).

    >>> round(head_dim_efficiency(64), 3), round(head_dim_efficiency(96), 3)
    (0.709, 0.88)
    >>> head_dim_efficiency(128), head_dim_efficiency(192)
    (1.0, 1.0)
    """
    if head_dim >= 128:
        return 1.0
    r = HEAD_DIM_64_SHARE
    x = (1.0 - r) / (2.0 * r - 1.0)  # r = (1 + x) / (1 + 2x)
    return (1.0 + x) / (1.0 + x * 128.0 / head_dim)


def attention_share(family: str, seq_len: int) -> tuple[float, float]:
    """(forward, backward) share of the BF16 peak of a measured attention kernel at
    ``seq_len``, log-linear between the measured lengths and flat beyond them.

    >>> [round(x, 3) for x in attention_share("fa2-a100", 2048)]
    [0.497, 0.497]
    >>> [round(x, 3) for x in attention_share("cudnn-h100", 3000)]  # between 2k and 4k
    [0.508, 0.402]
    """
    table = _ATTENTION_TFLOPS[family]
    lengths = sorted(table)
    peak = _ATTENTION_PEAK[family]
    if seq_len <= lengths[0]:
        fwd, bwd = table[lengths[0]]
    elif seq_len >= lengths[-1]:
        fwd, bwd = table[lengths[-1]]
    else:
        hi = next(n for n in lengths if n >= seq_len)
        lo = lengths[lengths.index(hi) - 1]
        w = math.log(seq_len / lo) / math.log(hi / lo)
        fwd = table[lo][0] + w * (table[hi][0] - table[lo][0])
        bwd = table[lo][1] + w * (table[hi][1] - table[lo][1])
    return fwd / peak, bwd / peak


@dataclass(frozen=True)
class Device:
    """The rates one GPU runs kernels at, for one matmul precision."""

    name: str
    sms: int
    peak: float  #: dense tensor FLOP/s of the GEMM precision
    half_peak: float  #: dense BF16/FP16 FLOP/s (attention runs in 16 bits)
    hbm: float  #: achieved HBM bytes/s
    precision: str
    gemm_ceiling: float  #: share of ``peak`` the best GEMM shape reaches (:data:`GEMM_CEILING`)
    #: FLOP/s the GPU sustains at its power limit in this precision (:data:`POWER_BOUND_GEMM`);
    #: infinite where not measured.
    gemm_bound: float = math.inf


def device_for(
    gpu_name: str, peak: float, half_peak: float, hbm_bw: float, precision: str
) -> Device:
    """The :class:`Device` of a catalog GPU; :class:`WorkloadError` naming the GPUs known otherwise."""
    if gpu_name not in GEMM_CEILING:
        raise WorkloadError(
            f"no kernel-efficiency data for GPU {gpu_name!r} (known: "
            f"{', '.join(sorted(GEMM_CEILING))}); set job.compute_efficiency to use the flat model"
        )
    ceiling = GEMM_CEILING[gpu_name].get(precision)
    if ceiling is None:
        raise WorkloadError(f"no {precision} GEMM data for {gpu_name}")
    hbm = hbm_bw * HBM_SHARE[gpu_name]
    bound = _power_bound(gpu_name, precision)
    return Device(gpu_name, SMS[gpu_name], peak, half_peak, hbm, precision, ceiling, bound)


def _power_bound(gpu_name: str, precision: str) -> float:
    """FLOP/s ``gpu_name`` sustains at its power limit in ``precision`` (infinite if unmeasured)."""
    tflops = POWER_BOUND_GEMM.get(gpu_name, {}).get(precision)
    return math.inf if tflops is None else tflops * 1e12


def wave_efficiency(m: int, n: int, sms: int) -> float:
    """Useful share of the tile-waves a ``m × n`` output needs, best tile (module docstring).

    >>> wave_efficiency(8192, 8192, 132)  # 2048 tiles of 256×128 = 15.5 waves
    0.9696969696969697
    >>> round(wave_efficiency(256, 128, 132), 4)  # two 128×128 tiles: 2 of 132 SMs busy
    0.0152
    """
    best = 0.0
    for tm, tn in _TILES if min(m, n) >= 128 else (*_TILES, _THIN_TILE):
        tiles = math.ceil(m / tm) * math.ceil(n / tn)
        waves = math.ceil(tiles / sms)
        best = max(best, m * n / (waves * sms * tm * tn))
    return min(1.0, best)


def gemm_seconds(m: int, n: int, k: int, dev: Device, elem_bytes: float, count: int = 1) -> float:
    """Seconds of ``count`` GEMMs ``(m × k)·(k × n)`` on ``dev`` run as one launch (grouped or
    batched): the slower of the math at the sustained share of the wave-quantized ceiling (or of
    the power bound, where lower) and the operands' HBM traffic (module docstring), plus a
    GEMM kernel's fixed time (:data:`GEMM_FIXED`).

    >>> h100 = device_for("h100-sxm", 989.4e12, 989.4e12, 3.35e12, "bf16")
    >>> round(gemm_seconds(8192, 8192, 8192, h100, 2) * 1e3, 3)  # 1.1 TFLOP at 695·0.86·0.97
    1.901
    >>> b200 = device_for("b200", 4500e12, 2250e12, 8e12, "fp8")
    >>> round(gemm_seconds(8192, 8192, 8192, b200, 1) * 1e3, 3)  # 2,524 TFLOP/s × 0.86 × 0.988
    0.517
    """
    if min(m, n, k, count) < 1:
        return 0.0
    flops = 2.0 * m * n * k * count
    rate = min(dev.peak * dev.gemm_ceiling, dev.gemm_bound) * SUSTAINED_GEMM
    rate *= wave_efficiency(m, n * count, dev.sms)
    memory = elem_bytes * (m * k + k * n + m * n) * count / dev.hbm
    return max(flops / rate, memory) + GEMM_FIXED


@dataclass(frozen=True)
class Kernel:
    """One priced kernel (or a group of equal ones): FLOPs, HBM bytes and seconds."""

    name: str
    kind: str  #: "gemm", "attention" or "memory"
    flops: float
    nbytes: float
    seconds: float


@dataclass(frozen=True)
class LayerWork:
    """One micro-batch's kernels on one GPU: per transformer layer and the LM head."""

    forward: tuple[Kernel, ...]
    backward: tuple[Kernel, ...]
    recompute: tuple[Kernel, ...]
    head_forward: tuple[Kernel, ...]
    head_backward: tuple[Kernel, ...]
    #: The embedding's lookup and its gradient, on the stage that holds the embedding.
    embed_forward: tuple[Kernel, ...] = ()
    embed_backward: tuple[Kernel, ...] = ()
    #: One multi-token-prediction module's kernels outside its layer (its projection, norms
    #: and the LM head and loss once more; empty without ``model.mtp_layers``).
    mtp_forward: tuple[Kernel, ...] = ()
    mtp_backward: tuple[Kernel, ...] = ()

    @staticmethod
    def seconds(kernels: Iterable[Kernel]) -> float:
        """Total seconds of ``kernels``."""
        return sum(k.seconds for k in kernels)

    def layer_forward(self) -> float:
        """Seconds of one layer's forward."""
        return self.seconds(self.forward)

    def layer_backward(self) -> float:
        """Seconds of one layer's backward, recomputation included."""
        return self.seconds(self.backward) + self.seconds(self.recompute)


def layer_work(
    model: ModelSpec,
    dev: Device,
    *,
    micro_batch: int,
    seq_len: int,
    tp: int,
    ep: int = 1,
    sequence_parallel: bool = True,
    recompute: str = "selective",
    recompute_modules: tuple[str, ...] = ("core_attn",),
    attention: str = "flash",
    elem_bytes: int = 2,
    context_parallel: int = 1,
    context_a2a: int = 1,
    context_ring: bool = True,
    cross_entropy: str = "unfused",
    fp8_recipe: str = "delayed",
    expert_tp: int | None = None,
    fp8_attention: bool = False,
    cudnn: tuple[int, int] | None = None,
    attention_dropout: bool = False,
    fp8_output_proj: bool = False,
    eager_experts: bool = True,
) -> LayerWork:
    """The kernels of one micro-batch through one layer and the LM head (module docstring).

    A hybrid model's kind of layer (``model.block``) runs its block's kernels alone, behind
    one norm and residual: a Mamba-2 mixer (its projections and :func:`_mamba_mixer` between
    them), an attention, a dense MLP or the experts.

    With context parallelism ``cp`` the GPU holds ``s/cp`` of each sequence's tokens and
    computes their attention against every earlier key: ``1/cp`` of the attention FLOPs
    (Megatron-Core's load-balanced split: each rank holds two of ``2·cp`` chunks), in kernels
    over ``s/(2·cp)``-long query blocks. An all-to-all over ``context_a2a`` of them (Ulysses:
    all ``cp``) first trades the sequence split for a head split: each rank then holds
    ``s·a/cp`` tokens of ``1/a`` of the heads and the ring runs over ``cp/a`` ranks, in blocks of
    ``s·a/(2·cp)`` (the whole sequence when ``a = cp``). ``context_ring``: K and V travel in a
    ring (``cp_comm`` p2p or a2a+p2p), so the partial results of its steps are merged
    (:func:`_ring_merges`); the all-gather variant computes each block in one kernel.
    ``cross_entropy``: the loss's implementation (:data:`CROSS_ENTROPY_PASSES`);
    ``fp8_recipe``: how FP8 operands are scaled (:data:`LOW_PRECISION_CAST`; FP8 jobs only;
    FP4 jobs cast with ``nvfp4``); ``fp8_attention``: the attention core in FP8
    (:data:`ATTENTION_FP8`); ``cudnn``: the cuDNN release (:data:`CUDNN_RELEASES`);
    ``expert_tp``: the ranks that split each expert's GEMMs (default ``tp``);
    ``recompute_modules``: what ``recompute="selective"`` re-runs (:func:`_recomputed`);
    ``attention_dropout``: the fused attention kernels run their dropout variant
    (:data:`DROPOUT_SHARE`; the unfused kind always prices its dropout pass);
    ``fp8_output_proj``: under the ``mxfp8`` recipe the LM head runs in MXFP8 as a decoder
    layer's GEMM does, casts included (Megatron-Core's ``--fp8-output-proj``);
    ``eager_experts``: a MoE layer's experts run as Megatron-Core's ``TEGroupedMLP`` (not
    Transformer Engine's fused operations, ``job.te_op_fuser``), whose clamp of a clamped GLU
    and second-GEMM biases are eager PyTorch passes (:func:`_eager_expert_passes`).
    """
    tokens = micro_batch * seq_len // context_parallel
    h, t = model.hidden, tp
    low = dev.precision in ("fp8", "fp4")
    recipe = "nvfp4" if dev.precision == "fp4" else fp8_recipe
    if low and recipe == "blockwise" and dev.name in BLOCK_SCALES_EMULATED:
        # Hopper applies the block scales in software: every FP8 GEMM's rate falls by
        # HOPPER_BLOCKWISE_GEMM (16-bit kernels re-derive theirs, sixteen_bit)
        slow = HOPPER_BLOCKWISE_GEMM
        dev = replace(dev, gemm_ceiling=dev.gemm_ceiling / slow, gemm_bound=dev.gemm_bound / slow)
    # GEMM inputs: 1 byte in FP8 and 9/16 in NVFP4 (Transformer Engine casts them first), else
    # the element size
    g_bytes = float(elem_bytes)
    if low:
        g_bytes = LOW_PRECISION_CAST["nvfp4"][0] if recipe == "nvfp4" else 1.0
    fwd: list[Kernel] = []
    bwd: list[Kernel] = []
    layer_lists = (fwd, bwd)

    gathered_input = sequence_parallel and t > 1

    def gemm(
        name: str,
        m: int,
        n: int,
        k: int,
        count: int = 1,
        gathered: bool = False,
        into: tuple[list[Kernel], list[Kernel]] | None = None,
    ) -> None:
        """``gathered``: a column-parallel GEMM whose input sequence parallelism all-gathers;
        ``into``: the forward and backward lists its kernels join (default the layer's)."""
        fwd, bwd = into if into is not None else layer_lists
        flops = 2.0 * m * n * k * count
        f = gemm_seconds(m, n, k, dev, g_bytes, count)
        grads = gemm_seconds(m, k, n, dev, g_bytes, count) + gemm_seconds(
            k, n, m, dev, g_bytes, count
        )
        if recipe == "nvfp4":
            # each NVFP4 GEMM first swizzles both operands' scales and computes its alpha
            # from their amaxes (gemm.cpp swizzle_scaling_factors, cublaslt_gemm.cu
            # compute_nvfp4_per_tensor_scale_kernel @v2.8): three small kernels
            f += NVFP4_GEMM_KERNELS * KERNEL_LAUNCH
            grads += 2 * NVFP4_GEMM_KERNELS * KERNEL_LAUNCH
        fwd.append(Kernel(name, "gemm", flops, 0.0, f))
        bwd.append(Kernel(f"{name} dgrad+wgrad", "gemm", 2 * flops, 0.0, grads))
        if low:
            # Transformer Engine keeps a row-wise copy of each low-precision GEMM operand for
            # one GEMM and a column-wise (transposed) one for the other (a quantizer's rowwise
            # and columnwise usages in TE 2.x): an input the weight gradient needs is cast to
            # both in one pass (fp8_cast_transpose_fused, nvfp4_quantize_transpose), the output
            # gradient likewise (grad_output_preprocess); LOW_PRECISION_CAST holds each
            # recipe's bytes. On a GPU of NON_TN_FP8 a per-tensor FP8 operand is written once:
            # the row-wise data serves both GEMMs. With sequence parallelism the input is cast
            # before its all-gather (1/t of the rows): FP8 casts the row-wise copy and, where
            # a transposed one is kept, transposes the gathered one in the backward
            # (tex.fp8_transpose: read 1, write 1); NVFP4 cannot transpose its 1×16 blocks, so
            # it casts both copies first and the backward re-gathers the column-wise one and
            # reorders it (swap_first_dims: read and write it once).
            written, extra, launches = LOW_PRECISION_CAST[recipe]
            copies = _quantized_copies(dev.name, recipe)
            one_copy = copies == 1
            cast_bytes = 2.0 + extra + copies * written  # read, amax pass, the copies written
            inputs, grads = m * k * count, m * n * count
            label = "fp4" if recipe == "nvfp4" else "fp8"
            what = "cast" if one_copy else "cast+transpose"
            if gathered and recipe == "nvfp4":
                fwd.append(_memory(f"{name} fp4 cast", cast_bytes * inputs / t, dev, launches))
                bwd.append(_memory(f"{name} fp4 reorder", 2.0 * written * inputs, dev))
            elif gathered:
                cast = 2.0 + extra + written
                fwd.append(_memory(f"{name} fp8 cast", cast * inputs / t, dev, launches))
                if not one_copy:
                    bwd.append(_memory(f"{name} fp8 transpose", 2.0 * written * inputs, dev))
            else:
                fwd.append(_memory(f"{name} {label} {what}", cast_bytes * inputs, dev, launches))
            bwd.append(_memory(f"{name} grad {label} {what}", cast_bytes * grads, dev, launches))

    if model.block == "mamba":
        mixer = _mamba_mixer(model, dev, tokens, t, elem_bytes)
        gemm("mamba in", tokens, model.mamba_in_width // t, h, gathered=gathered_input)
        fwd.extend(mixer[0])
        bwd.extend(mixer[1])
        gemm("mamba out", tokens, h, model.mamba_inner // t)
    elif model.mla:
        # Megatron-Core's MLA: the down projections whole on every TP rank, over the rank's
        # own tokens (the sequence shard with sequence parallelism), the up projections
        # column-parallel over the gathered latents (ModelSpec.mla_projections)
        own = tokens // t if gathered_input else tokens
        for name, n_in, n_out, split in model.mla_projections():
            if name == "o_proj":
                continue
            if split:
                gemm(MLA_GEMMS[name], tokens, n_out // t, n_in, gathered=gathered_input)
            else:
                gemm(MLA_GEMMS[name], own, n_out, n_in)
    elif model.has_attention:
        gemm("qkv", tokens, (model.q_dim + 2 * model.kv_dim) // t, h, gathered=gathered_input)
    if model.has_attention:
        gemm("attention out", tokens, h, model.o_dim // t)
    mlp_in = 2 if model.gated_mlp else 1
    if not model.has_mlp:
        active_ffn = 0
    elif model.is_moe:
        gemm("router", tokens, model.n_experts, h)
        # expert TP e (Megatron-Core's MoE parallel folding; e = t by default): the tokens of
        # e sequence-parallel shards (T·e/t) reach each rank's experts, each GEMM 1/e wide
        e = expert_tp or t
        local = max(1, model.n_experts // ep)
        gathered_tokens = tokens * e / t
        per_expert = max(1, round(gathered_tokens * model.top_k * ep / model.n_experts))
        width = model.expert_ffn // e
        gemm("experts up", per_expert, mlp_in * width, h, local)
        gemm("experts down", per_expert, h, width, local)
        routed = _token_permutation(model, dev, tokens, t, e, local, elem_bytes)
        fwd.append(routed[0])
        bwd.append(routed[1])
        if eager_experts:
            for pair in _eager_expert_passes(
                model, dev, per_expert * local, width, local, elem_bytes
            ):
                fwd.append(pair[0])
                bwd.append(pair[1])
        if model.shared_ffn_hidden:
            gemm(
                "shared expert up", tokens, mlp_in * model.shared_ffn_hidden // t, h,
                gathered=gathered_input,
            )  # fmt: skip
            gemm("shared expert down", tokens, h, model.shared_ffn_hidden // t)
        active_ffn = model.top_k * model.expert_ffn + model.shared_ffn_hidden
    else:
        gemm("mlp up", tokens, mlp_in * model.ffn_hidden // t, h, gathered=gathered_input)
        gemm("mlp down", tokens, h, model.ffn_hidden // t)
        active_ffn = model.ffn_hidden
    attn_fwd: list[Kernel] = []
    attn_bwd: list[Kernel] = []
    if model.has_attention:
        attn_fwd, attn_bwd = _attention(
            model, dev, micro_batch, seq_len, t, attention, elem_bytes, context_parallel,
            context_a2a, fp8_attention, cudnn, attention_dropout,
        )  # fmt: skip
    if context_ring and attention in ("flash", "flash2") and model.has_attention:
        ring = max(1, context_parallel // max(1, context_a2a))
        merges = _ring_merges(
            model, dev, micro_batch * seq_len, t, elem_bytes, context_parallel, ring
        )
        if merges is not None:
            attn_fwd.append(merges[0])
            attn_bwd.append(merges[1])
    fwd += attn_fwd
    bwd += attn_bwd
    fwd_bytes, launches = _elementwise_bytes(model, t, sequence_parallel and t > 1, active_ffn)
    nbytes = fwd_bytes * elem_bytes * tokens
    what = "norms, residuals, activation, rotary" if model.block == "layer" else "norm, residual"
    fwd.append(_memory(what, nbytes, dev, launches))
    bwd.append(_memory(f"{what} (grad)", 2 * nbytes, dev, launches))
    if model.yarn_rope:
        rotary = _unfused_rotary(model, dev, tokens, t, elem_bytes)
        fwd.append(rotary[0])
        bwd.append(rotary[1])
    if recompute == "full":
        redo = tuple(fwd)
    elif recompute == "selective":
        redo = _recomputed(
            model, dev, fwd, attn_fwd, recompute_modules, tokens, t, sequence_parallel, elem_bytes
        )
    elif recompute == "selective_op":
        redo = _per_op_recomputed(model, dev, fwd, attn_fwd, tokens, t, g_bytes)
    else:
        redo = ()
    vocab = model.vocab // t
    flops = 2.0 * tokens * vocab * h
    # The LM head stays in 16 bits under FP8: Megatron-Core builds it as its own
    # ColumnParallelLinear, outside Transformer Engine's FP8 autocast of the decoder layers
    # (gpt_model.py @core_v0.12.0; from 2026 a TE layer only with the opt-in fp8_output_proj
    # and the MXFP8 recipe, transformer_config.py @d98e8a6), as do llm-foundry's and Llama 3's.
    loss_fwd, loss_bwd = _cross_entropy(tokens * vocab, dev, cross_entropy)
    if fp8_output_proj and recipe == "mxfp8":
        # Megatron-Core's TELMHeadColumnParallelLinear: the head as a Transformer Engine
        # layer under the MXFP8 autocast, its input and output gradient cast like a layer's
        # (extensions/transformer_engine.py @d98e8a6)
        mx_fwd: list[Kernel] = []
        mx_bwd: list[Kernel] = []
        gemm("lm head", tokens, vocab, h, gathered=gathered_input, into=(mx_fwd, mx_bwd))
        head_fwd: tuple[Kernel, ...] = (*mx_fwd, loss_fwd)
        head_bwd: tuple[Kernel, ...] = (*mx_bwd, loss_bwd)
    else:
        head = sixteen_bit(dev) if low else dev
        head_bytes = 2.0 if low else g_bytes
        head_grads = gemm_seconds(tokens, h, vocab, head, head_bytes) + gemm_seconds(
            h, vocab, tokens, head, head_bytes
        )
        forward_s = gemm_seconds(tokens, vocab, h, head, head_bytes)
        head_fwd = (Kernel("lm head", "gemm", flops, 0.0, forward_s), loss_fwd)
        head_bwd = (Kernel("lm head dgrad+wgrad", "gemm", 2 * flops, 0.0, head_grads), loss_bwd)
    embed = _embedding(model, dev, tokens, t, elem_bytes)
    mtp = (
        _mtp_extra(model, dev, tokens, t, gathered_input, g_bytes, elem_bytes)
        if model.mtp_layers
        else ((), ())
    )
    return LayerWork(
        tuple(fwd), tuple(bwd), redo, head_fwd, head_bwd, embed[:1], embed[1:],
        (*mtp[0], *head_fwd) if mtp[0] else (), (*mtp[1], *head_bwd) if mtp[1] else (),
    )  # fmt: skip


def _mtp_extra(
    model: ModelSpec,
    dev: Device,
    tokens: int,
    t: int,
    sequence_parallel: bool,
    g_bytes: float,
    elem_bytes: int,
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """A multi-token-prediction module's kernels besides its layer and the LM head it shares
    (Megatron-Core ``MultiTokenPredictionLayer``; DeepSeek-V3 §2.2), forward and backward:
    the ``2h → h`` projection of the normalised hidden state and next-token embedding
    (``eh_proj``, column-parallel: ``(b·s, h/t, 2h)``), and the element-wise work of its
    three norms (``enorm``, ``hnorm``, its final norm: a read and a write of ``h`` each) and
    the concatenation (a read and a write of ``2h``), ``h/t`` with sequence parallelism; the
    backward twice the forward's bytes. The next tokens' embedding lookup is not counted."""
    h = model.hidden
    flops = 2.0 * tokens * (h // t) * 2 * h
    forward = gemm_seconds(tokens, h // t, 2 * h, dev, g_bytes)
    backward = gemm_seconds(tokens, 2 * h, h // t, dev, g_bytes) + gemm_seconds(
        2 * h, h // t, tokens, dev, g_bytes
    )
    hs = h / t if sequence_parallel else h
    nbytes = (2 * 3 * hs + 2 * 2 * hs) * elem_bytes * tokens
    return (
        (Kernel("mtp projection", "gemm", flops, 0.0, forward),
         _memory("mtp norms and concat", nbytes, dev, 4)),
        (Kernel("mtp projection dgrad+wgrad", "gemm", 2 * flops, 0.0, backward),
         _memory("mtp norms and concat (grad)", 2 * nbytes, dev, 4)),
    )  # fmt: skip


def _embedding(
    model: ModelSpec, dev: Device, tokens: int, t: int, elem_bytes: int
) -> tuple[Kernel, Kernel]:
    """The embedding's forward and backward on one GPU of a tensor-parallel group of ``t``
    (Megatron-Core's ``VocabParallelEmbedding`` over ``V/t`` rows), in elements of
    ``elem_bytes``: the lookup reads and writes ``T·h`` (with ``t > 1`` the rows of other
    ranks' vocabulary are zeroed in one more pass), learned positions (GPT) look up and add
    ``T·h`` more. The backward is PyTorch's ``embedding_dense_backward`` (a zeroed ``V/t × h``
    gradient, the ``T`` rows read and accumulated) and Megatron-Core's DDP hook adding it into
    the parameter's main gradient every micro-batch (``param.main_grad.add_(param.grad)``,
    ``distributed_data_parallel.py`` @core_v0.12.0: read both, write one), positions likewise."""
    h, e = model.hidden, elem_bytes
    rows = model.vocab / t
    forward = (2.0 + (2.0 if t > 1 else 0.0)) * tokens * h
    backward = 4.0 * rows * h + 3.0 * tokens * h
    launches = (2 if t > 1 else 1, 2)
    if model.learned_pos_emb:
        forward += 4.0 * tokens * h
        backward += 4.0 * model.max_seq_len * h + 3.0 * tokens * h
        launches = (launches[0] + 2, 4)
    return (
        _memory("embedding", forward * e, dev, launches[0]),
        _memory("embedding (grad)", backward * e, dev, launches[1]),
    )


#: Small kernels before each NVFP4 GEMM: a scale swizzle per operand and the alpha kernel
#: (``swizzle_scaling_factors`` in ``pytorch/csrc/extensions/gemm.cpp``,
#: ``compute_nvfp4_per_tensor_scale_kernel`` in ``common/gemm/cublaslt_gemm.cu`` @v2.8).
NVFP4_GEMM_KERNELS: Final = 3
#: How each low-precision recipe casts one GEMM operand (Transformer Engine's quantizers,
#: ``transformer_engine/pytorch/csrc/quantizer.cpp`` @d0067d0; NVFP4 as of TE v2.8): bytes
#: written per element for each of the two copies it keeps (the row-wise one feeds one GEMM, the
#: column-wise or transposed one the other), bytes read beyond the cast's own read of the 2-byte
#: input, and kernels launched in all.
#:
#: * ``delayed`` (Megatron-Core's default ``--fp8-recipe``): the scale comes from the amax
#:   history; the cast kernel records the new amax as it goes — one byte each way, one kernel.
#: * ``tensorwise`` (current scaling, "FP8-CS"): ``Float8CurrentScalingQuantizer`` first
#:   computes the tensor's amax (``nvte_compute_amax``: one more read of the 2-byte input), then
#:   the scale from it (``nvte_compute_scale_from_amax``), then casts — 2 bytes, three kernels.
#: * ``mxfp8`` (Blackwell) and ``blockwise``: one quantize kernel finds each block's scale as it
#:   casts (``MXFP8Quantizer``, ``Float8BlockQuantizer``) and writes the scales too — an E8M0
#:   byte per 32 elements each way, or an fp32 per 128 — one kernel.
#: * ``nvfp4`` (``precision: fp4``; ``NVFP4Quantizer``): the per-tensor amax in its own pass
#:   (``nvte_compute_amax_with_config``: a zeroing kernel and the amax kernel, one more read),
#:   then one kernel (``nvfp4_quantize_transpose``) writes both copies, E2M1 data (half a byte)
#:   and an E4M3 scale per 16 elements each. Its random Hadamard transform (the wgrad operands),
#:   stochastic rounding (the output gradient) and 16×16 weight blocks are not priced: the
#:   transform reads the input about once more where it is on (TE's default; MLPerf v5.1 turns
#:   it off, ``NVTE_NVFP4_DISABLE_RHT=1``), the other two happen inside the cast kernel.
LOW_PRECISION_CAST: Final[dict[str, tuple[float, float, int]]] = {
    "delayed": (1.0, 0.0, 1),
    "tensorwise": (1.0, 2.0, 3),
    "mxfp8": (1.0 + 1.0 / 32.0, 0.0, 1),
    "blockwise": (1.0 + 4.0 / 128.0, 0.0, 1),
    "nvfp4": (0.5 + 1.0 / 16.0, 2.0, 3),
}


#: How much longer a GEMM's kernel runs under FP8 block scaling (``blockwise``: an fp32 scale
#: per 1×128 or 128×128 block, DeepSeek-V3's recipe) than under per-tensor FP8 on the GPUs of
#: :data:`BLOCK_SCALES_EMULATED`, where "block-scaled GEMMs are software-emulated" (Transformer
#: Engine, ``docs/features/low_precision_training/fp8_blockwise_scaling/fp8_blockwise_scaling.rst``
#: @d0067d0): the tensor cores take one scale per operand, so the kernel rescales its fp32
#: partial sums once per 128-deep slice of K. Derived from the one published measurement of both
#: recipes on the same shapes: Transformer Engine's GEMM profiling tutorial
#: (``docs/examples/gemm_profiling/gemm_profiling.rst`` @d0067d0, "Worked Example: 5B Model on
#: H200": the twelve GEMMs of a hidden-4096, FFN-16384 layer at 15,872 tokens on an H200 NVL)
#: times a layer's GEMMs at 20.285 ms with current scaling and 22.882 ms with block scaling,
#: each cast included ("autocast"), and at 16.785 ms with current scaling's operands cast
#: beforehand, so current scaling's casts cost 20.285 − 16.785 = 3.500 ms. Block scaling's
#: casts are priced from current scaling's in the ratio of the bytes each moves an element
#: (:data:`LOW_PRECISION_CAST`: read 2, write two 1-byte copies and their scales, 4.0625 B,
#: against tensorwise's 6.0 B with its amax pass): 2.370 ms, leaving 20.512 ms of block-scaled
#: GEMM against 16.785 — 1.222 (derived). Were block scaling's casts as dear as current
#: scaling's, 1.155. Measured on one GPU and one layer shape; every Hopper GPU and shape takes
#: it. On Blackwell Transformer Engine runs the recipe as MXFP8 on tensor cores that take block
#: scales natively (the same page), so this does not apply there.
HOPPER_BLOCKWISE_GEMM: Final = (
    22.882 - (20.285 - 16.785) * (2.0 + 2.0 * (1.0 + 4.0 / 128.0)) / 6.0
) / 16.785
#: GPUs whose tensor cores take no block scales (Hopper, compute capability 9.0), so a
#: block-scaled FP8 GEMM runs :data:`HOPPER_BLOCKWISE_GEMM` slower than a per-tensor one.
BLOCK_SCALES_EMULATED: Final = frozenset({"h100-sxm", "h200"})


#: GPUs whose FP8 GEMMs take any operand layout, so Transformer Engine keeps no transposed
#: copy of a per-tensor-scaled FP8 tensor on them (``is_non_tn_fp8_gemm_supported``: compute
#: capability 10.x and 11.x, Blackwell, in ``transformer_engine/pytorch/utils.py``;
#: ``Float8Quantizer::create_tensor`` in ``pytorch/csrc/quantizer.cpp`` allocates the transpose
#: only when ``columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()``); Hopper's need the TN
#: layout. On these GPUs the casts of :data:`LOW_PRECISION_CAST` of the per-tensor recipes
#: (:data:`PER_TENSOR_FP8`) write the row-wise copy alone, and a sequence-parallel input gathered
#: in FP8 is not transposed in the backward; block-scaled recipes (MXFP8, blockwise, NVFP4)
#: still quantize each direction with its own block scales, so they write both.
NON_TN_FP8: Final = frozenset({"b200", "b300", "gb200", "gb300"})
#: The FP8 recipes that scale a whole tensor at once (delayed and current scaling).
PER_TENSOR_FP8: Final = frozenset({"delayed", "tensorwise"})


def _quantized_copies(gpu: str, recipe: str) -> int:
    """Copies Transformer Engine writes of a low-precision operand cast with ``recipe``
    (``nvfp4`` for FP4 jobs) on ``gpu``: the row-wise one alone for a per-tensor FP8 recipe on a
    GPU of :data:`NON_TN_FP8`, else a row-wise and a column-wise (transposed) one."""
    return 1 if recipe in PER_TENSOR_FP8 and gpu in NON_TN_FP8 else 2


def cached_weight_bytes(gpu: str, precision: str, recipe: str, fp8_param_gather: bool) -> float:
    """Bytes a decoder-layer GEMM weight costs in the low-precision copies Transformer Engine
    keeps through the step, beyond the weight itself.

    Megatron-Core's TE layers pass ``is_first_microbatch``, so TE quantizes each weight once a
    step and keeps the result in a workspace (``get_weight_workspace(..., cache_name="weight")``
    in ``module/base.py``): a row-wise and a column-wise copy, each of
    :data:`LOW_PRECISION_CAST`'s bytes, except that per-tensor FP8 (``delayed``,
    ``tensorwise``) on a GPU in :data:`NON_TN_FP8` uses the row-wise data for both GEMMs. With
    ``fp8_param_gather`` the parameter is itself the quantized weight and nothing is added (the
    transposed or column-wise data TE derives from it for the backward is not counted: no
    measurement). 0 for 16-bit jobs. MIT ORCD's measured peaks of FP8 runs on B200 and B300
    agree with one byte a parameter (``validation/test_training.py``).

    >>> cached_weight_bytes("b200", "fp8", "delayed", False), cached_weight_bytes("h100-sxm", "fp8", "delayed", False)
    (1.0, 2.0)
    >>> cached_weight_bytes("gb200", "fp4", "delayed", False)
    1.125
    """
    if precision not in ("fp8", "fp4") or fp8_param_gather:
        return 0.0
    kind = "nvfp4" if precision == "fp4" else recipe
    return LOW_PRECISION_CAST[kind][0] * _quantized_copies(gpu, kind)


#: Bytes moved per logit and kernels launched by the vocabulary-parallel cross-entropy
#: (forward, backward) of each implementation, with 16-bit logits from the LM head:
#:
#: * ``unfused``: Megatron's ``_VocabParallelCrossEntropy`` (Megatron-Core's default,
#:   ``cross_entropy_loss_fusion=False``; ``megatron/core/tensor_parallel/cross_entropy.py``
#:   @core_v0.8.0, and the same steps in 2021 Megatron-LM after ``output.float()``). Forward:
#:   the fp32 copy (read 2, write 4), the max (read 4), the in-place subtraction and ``exp``
#:   (read 4, write 4 each), the sum (read 4) and the in-place division into the softmax (read
#:   4, write 4): 38 bytes, 6 kernels. Backward: ``grad_input.mul_(grad_output)`` (read 4,
#:   write 4) and the cast back to 16 bits for the LM head's GEMMs (read 4, write 2): 14 bytes,
#:   2 kernels.
#: * ``fused``: ``--cross-entropy-loss-fusion`` with the native implementation
#:   (``megatron/core/fusions/fused_cross_entropy.py``; the default of NeMo 2's ``GPTConfig``
#:   and Megatron-Bridge's ``GPTModelProvider``): each ``jit_fuser`` function one kernel —
#:   cast and max (read 2, write 4), subtraction, ``exp`` and sum (read 4, write 4), division
#:   (read 4, write 4): 22 bytes, 3 kernels; backward the gradient and its cast (read 4, write
#:   2): 6 bytes, 1 kernel.
#: * ``te``: ``--cross-entropy-fusion-impl te``, Transformer Engine's Triton kernels
#:   (``transformer_engine/pytorch/triton/cross_entropy.py`` @d0067d0): an online softmax over
#:   the 16-bit logits (read 2), then the loss with the gradient written in place (read 2,
#:   write 2): 6 bytes, 2 kernels; backward ``element_mul_kernel`` scales it by the per-token
#:   loss gradient (read 2, write 2): 4 bytes, 1 kernel.
CROSS_ENTROPY_PASSES: Final[dict[str, tuple[tuple[float, int], tuple[float, int]]]] = {
    "unfused": ((38.0, 6), (14.0, 2)),
    "fused": ((22.0, 3), (6.0, 1)),
    "te": ((6.0, 2), (4.0, 1)),
}


def sixteen_bit(dev: Device) -> Device:
    """``dev`` running 16-bit GEMMs: the BF16 dense peak at the BF16 ceiling."""
    return replace(
        dev,
        peak=dev.half_peak,
        gemm_ceiling=GEMM_CEILING[dev.name]["bf16"],
        gemm_bound=_power_bound(dev.name, "bf16"),
    )


def _cross_entropy(logits: float, dev: Device, kind: str) -> tuple[Kernel, Kernel]:
    """The cross-entropy's forward and backward kernels over ``logits`` logits of one GPU
    (:data:`CROSS_ENTROPY_PASSES`; the byte counts assume 16-bit logits, as mixed-precision
    training writes them).

    >>> h100 = device_for("h100-sxm", 989.4e12, 989.4e12, 3.35e12, "bf16")
    >>> f, b = _cross_entropy(1e9, h100, "unfused")
    >>> round(f.nbytes / 1e9), round(b.nbytes / 1e9)
    (38, 14)
    """
    (fwd, fwd_launches), (bwd, bwd_launches) = CROSS_ENTROPY_PASSES[kind]
    return (
        _memory("cross-entropy", fwd * logits, dev, fwd_launches),
        _memory("cross-entropy (grad)", bwd * logits, dev, bwd_launches),
    )


#: Bytes a Mamba-2 mixer's SSD scan moves per token, forward and backward, as multiples of
#: (``X``: the rank's ``heads·head_dim`` 16-bit channels of x, y, z or a gradient; ``S``: its
#: fp32 chunk states, ``heads·head_dim·state·4/chunk``; ``BC``: one of B or C,
#: ``groups·state`` 16-bit; ``CB``: the fp32 chunk products, ``groups·chunk·4``), counted from
#: the kernels Megatron-Core runs (its copy of mamba_ssm's Triton SSD,
#: ``megatron/core/ssm/ops/mamba2/ssd_combined.py`` @d98e8a6, called through
#: ``mamba_split_conv1d_scan_combined`` with the gate ``z`` inside the scan, as its
#: ``MambaMixer`` passes no norm weight). Forward, five kernels: the chunk states from x and B
#: (X + BC + S), their passing between chunks (read S in fp32, write S/2 in 16 bits), the chunk
#: products C·Bᵀ (2BC + CB) and the scan (CB, x, C, the states S/2, z; writes y and the ungated
#: y: 4X + BC); 5X + 3S + 4BC + 2CB. Backward: the first four forward kernels again
#: (X + 3BC + CB + 2.5S; ``_mamba_chunk_scan_combined_bwd`` keeps neither states nor CB), then
#: dz (reads dout, x and z, writes dz and y: 4X), the states' gradient (X + BC + S), its
#: passing back (2.5S), dx (3X + CB + BC + S), dB (X + S + BC), dC (X + S/2 + BC), dCB
#: (2X + CB), dB and dC from dCB (2CB + 6BC) and the gradient of the decays (2X + CB): 15X +
#: 8.5S + 13BC + 6CB in 13 kernels and three PyTorch ones (the reversed cumulative sum).
SSD_PASSES: Final = {"forward": (5.0, 3.0, 4.0, 2.0, 5), "backward": (15.0, 8.5, 13.0, 6.0, 16)}
#: The SSD kernels' achieved bandwidth over that of streaming kernels (:data:`HBM_SHARE`): the
#: five forward Triton kernels ran 1.262327e7 tokens/s on one H100 at 8,192 tokens, 128 heads
#: of 64, one group of state 128 (vLLM PR #27299, its "Original" column, measured "to match
#: granite-4.0-h-small", whose ``mamba_chunk_size`` is 256; without the gate, 3X + 3S + 4BC
#: + 2CB = 101,376 bytes a token): 1.280 TB/s, 0.382 of the H100 SXM's 3.35 TB/s and 0.426 of
#: its streaming rate. The Triton SSD is "mostly bottlenecked by memory bandwidth and latency"
#: (PyTorch's "Accelerating Mamba2 with Kernel Fusion"); the share is taken on every GPU.
SSD_STREAM_SHARE: Final = 101_376 * 1.262327e7 / (0.896 * 3.35e12)


def _mamba_mixer(
    model: ModelSpec, dev: Device, tokens: int, t: int, elem_bytes: int
) -> tuple[list[Kernel], list[Kernel]]:
    """The kernels of one Mamba-2 mixer between its input and output projections, forward and
    backward, on the rank's ``1/t`` of the heads and groups (Megatron-Core's ``MambaMixer``,
    ``megatron/core/ssm/mamba_mixer.py`` @d98e8a6, memory-efficient training path):

    - the input projection's output ``zxBCdt`` made contiguous batch-first before the fused
      call and the scan's output back (``rearrange(...).contiguous()``: a read and a write of
      each, again in the backward);
    - the causal convolution with its SiLU over x, B and C (``causal_conv1d``: a read and a
      write; the backward re-runs it, then reads the input and the gradient and writes the
      input's gradient);
    - the SSD scan, bytes as :data:`SSD_PASSES` counts them at :data:`SSD_STREAM_SHARE` of the
      streaming rate;
    - the norm of the gated output (``ExtendedRMSNorm``: a read and a write; its backward reads
      the gradient and the input and writes the input's gradient).
    """
    e = float(elem_bytes)
    heads = model.mamba_heads / t
    x = heads * model.mamba_head_dim * e
    states = heads * model.mamba_head_dim * model.mamba_state * 4.0 / model.mamba_chunk
    bc = model.mamba_groups / t * model.mamba_state * e
    cb = model.mamba_groups / t * model.mamba_chunk * 4.0
    conv = model.mamba_conv_channels / t * e
    layout = (model.mamba_in_width / t * e + x) * 2.0 * tokens
    ssd_dev = replace(dev, hbm=dev.hbm * SSD_STREAM_SHARE)
    out: tuple[list[Kernel], list[Kernel]] = ([], [])
    for i, (way, (nx, ns, nbc, ncb, launches)) in enumerate(SSD_PASSES.items()):
        suffix = "" if way == "forward" else " (grad)"
        scan = (nx * x + ns * states + nbc * bc + ncb * cb) * tokens
        out[i].append(_memory(f"mamba layout copies{suffix}", layout, dev, 2))
        out[i].append(_memory(f"mamba conv1d{suffix}", (2 if i == 0 else 5) * conv * tokens, dev,
                              1 if i == 0 else 2))  # fmt: skip
        out[i].append(_memory(f"mamba ssd scan{suffix}", scan, ssd_dev, launches))
        out[i].append(_memory(f"mamba gated norm{suffix}", (2 if i == 0 else 3) * x * tokens, dev))
    return out


def _token_permutation(
    model: ModelSpec, dev: Device, tokens: int, t: int, e: int, local: int, elem_bytes: int
) -> tuple[Kernel, Kernel]:
    """The MoE layer's token permutations around its all-to-alls, forward and backward
    (Megatron-Core's ``MoEAlltoAllTokenDispatcher`` and ``moe_utils`` @core_v0.12.0), priced at
    the traffic of the fused kernels (``--moe-permute-fusion``, Transformer Engine's
    ``fused_permute``/``fused_unpermute``/``fused_sort_chunks_by_index``), a lower bound for
    the unfused PyTorch path, which moves more (an fp32 product with the routing weights,
    ``scatter_add_`` into a zeroed buffer).

    With ``k`` experts per token, ``h`` the hidden size, ``T`` the GPU's tokens and ``Tₛ`` its
    sequence-parallel share (``T/t`` with tensor parallelism), in elements: the forward
    permutes each token into ``k`` copies grouped by expert (read ``k·Tₛ·h``, write ``k·Tₛ·h``),
    sorts the received chunks by local expert when the GPU holds more than one (read and write
    ``k·Tₑ·h``, ``Tₑ = T·e/t`` the tokens of the ``e`` expert-TP ranks' shards) and unsorts them
    after the experts (again), and unpermutes, weighting each copy
    by its routing probability (read ``k·Tₛ·h``, write ``Tₛ·h``). The backward mirrors each
    step and reads the expert outputs once more for the probabilities' gradient (``k·Tₛ·h``).
    """
    k, h = model.top_k, model.hidden
    shard = tokens / t
    sorts = 4.0 * k * shard * e if local > 1 else 0.0
    launches = 4 if local > 1 else 2
    forward = (3.0 * k * shard + shard + sorts) * h * elem_bytes
    backward = (4.0 * k * shard + shard + sorts) * h * elem_bytes
    return (
        _memory("moe token permutation", forward, dev, launches),
        _memory("moe token permutation (grad)", backward, dev, launches),
    )


#: The kernel of the clamp Megatron-Core runs before a clamped GLU's fused expert activation
#: (:func:`_eager_expert_passes`); ``moe_act`` recomputation re-runs it with the activation.
EAGER_CLAMP: Final = "experts' GLU clamp, eager"
#: Bytes a clamped GLU's eager clamp moves per element of the experts' first GEMM output
#: (both halves, ``M`` elements of ``e`` bytes), forward and backward, and its kernels.
#: Megatron-Core's ``weighted_bias_quick_geglu_impl`` (``fusions/fused_bias_geglu.py``
#: @d98e8a6, since 2e29a5e1e3 "Add quick geglu activation for gpt-oss", 2025-09), when
#: ``activation_func_clamp_value`` is set, splits the input in its halves, clamps the gate
#: above and the linear half both ways and concatenates them before its compiled activation:
#: forward two clamps (read and write half each) and the ``cat`` (read and write all), ``4·e``
#: an element, three kernels. Autograd's backward masks each clamp's gradient (the gate: a
#: comparison writing a 1-byte mask and a ``where``; the linear half: two comparisons, their
#: ``logical_and`` and a ``where``) and concatenates the halves' gradients: ``5.5·e + 4``
#: bytes, seven kernels (15 bytes in BF16; the operations as traced on CPU PyTorch).
#: SwiGLU's clamp (``weighted_bias_swiglu_impl``) sits inside its compiled kernel instead.
EAGER_CLAMP_BYTES: Final = ((4.0, 0.0, 3), (5.5, 4.0, 7))
#: Bytes per element of the experts' second GEMM output (``R`` routed rows × ``h``, ``e``
#: bytes) that adding its biases times the routing probabilities moves, forward and backward,
#: and kernels per local expert and in all. ``TEGroupedMLP`` builds that GEMM with
#: ``skip_bias_add`` and adds the bias itself (``_apply_bias``, ``transformer/moe/experts.py``
#: @d98e8a6, since a329dd6da5 "Enable bias in expert mlp [gpt-oss 5/5]", 2025-09): per local
#: expert ``t + b·p`` over its rows (the product written, the sum reading two and writing
#: one), then one ``cat`` (read and write all): ``6·e``, two kernels an expert and one. Its
#: backward: the split's gradient concatenated (``2·e``), ``grad·p`` and its sum over the rows
#: for the bias, ``grad·b`` and its sum over the hidden size for the probabilities (``3·e``
#: each): ``8·e``, four kernels an expert and two. (The packed path the same file takes with
#: ``moe_use_grouped_tensor`` computes in FP32 and moves more; it is not modelled.)
EXPERT_BIAS_BYTES: Final = ((6.0, 2, 1), (8.0, 4, 2))
#: The kernel of those bias passes (``moe`` recomputation re-runs it with the experts).
EAGER_EXPERT_BIAS: Final = "experts' second bias times probabilities, eager"


def _eager_expert_passes(
    model: ModelSpec, dev: Device, rows: int, width: int, local: int, elem_bytes: int
) -> tuple[tuple[Kernel, Kernel], ...]:
    """The eager PyTorch passes Megatron-Core's ``TEGroupedMLP`` adds around the experts'
    fused GEMMs and activation for a clamped GLU (``model.activation_clamp``:
    :data:`EAGER_CLAMP_BYTES` over the ``rows × 2·width`` first GEMM output) and for expert
    biases (``model.linear_bias``: :data:`EXPERT_BIAS_BYTES` over the ``rows × h`` second GEMM
    output, ``local`` experts), forward and backward; none for a model with neither."""
    out: list[tuple[Kernel, Kernel]] = []
    e = float(elem_bytes)
    if model.activation_clamp is not None:  # ModelSpec holds it to a gated MLP
        elements = rows * 2.0 * width
        (f_e, f_b, f_k), (b_e, b_b, b_k) = EAGER_CLAMP_BYTES
        out.append((
            _memory(EAGER_CLAMP, (f_e * e + f_b) * elements, dev, f_k),
            _memory(f"{EAGER_CLAMP} (grad)", (b_e * e + b_b) * elements, dev, b_k),
        ))  # fmt: skip
    if model.linear_bias:
        elements = rows * float(model.hidden)
        (f_e, f_per, f_one), (b_e, b_per, b_one) = EXPERT_BIAS_BYTES
        out.append((
            _memory(EAGER_EXPERT_BIAS, f_e * e * elements, dev, f_per * local + f_one),
            _memory(f"{EAGER_EXPERT_BIAS} (grad)", b_e * e * elements, dev, b_per * local + b_one),
        ))  # fmt: skip
    return tuple(out)


#: The forward kernels each of Megatron-Core's ``recompute_modules`` re-runs, by the GEMM names
#: :func:`layer_work` gives them (their low-precision casts with them); the attention core
#: (``core_attn``) and the element-wise parts are added by :func:`_recomputed`.
RECOMPUTED_GEMMS: Final = {
    "mla_up_proj": ("q", "q up", "kv up"),
    "mlp": ("mlp up", "mlp down"),
    "moe": ("router", "experts up", "experts down", "moe token permutation",
            "shared expert up", "shared expert down", EAGER_EXPERT_BIAS),
    "shared_experts": ("shared expert up", "shared expert down"),
}  # fmt: skip


def _recomputed(
    model: ModelSpec,
    dev: Device,
    fwd: list[Kernel],
    attention: list[Kernel],
    modules: tuple[str, ...],
    tokens: int,
    t: int,
    sequence_parallel: bool,
    elem_bytes: int,
) -> tuple[Kernel, ...]:
    """The kernels a selective recomputation re-runs in a layer's backward, for the
    ``modules`` Megatron-Core's ``recompute_modules`` names (``transformer_config.py``;
    those a layer of this kind lacks re-run nothing): ``core_attn`` the attention core; the
    GEMMs of :data:`RECOMPUTED_GEMMS` (``mla_up_proj`` MLA's up projections, ``mlp`` a dense
    layer's MLP, ``moe`` the router, experts, token permutation and shared expert,
    ``shared_experts`` the shared expert), with the element-wise work they hold as
    :func:`_elementwise_bytes` prices it: MLA's rotary (a read and a write of q and k), the MLP
    activations (``moe_act`` the routed experts', ``mlp``/``shared_experts`` their own,
    ``moe`` both), ``layernorm`` the two norms (a read and a write of the hidden state each)."""
    names = {n for m in modules for n in RECOMPUTED_GEMMS.get(m, ())}
    if "moe_act" in modules or "moe" in modules:  # the clamp runs inside the activation call
        names.add(EAGER_CLAMP)
    kernels = [k for k in fwd if k.name.split(" fp")[0] in names]
    if "core_attn" in modules:
        kernels = [*attention, *kernels]
    hs = model.hidden / t if sequence_parallel and t > 1 else model.hidden
    act = 3 if model.gated_mlp else 2
    routed = model.top_k * model.expert_ffn if model.is_moe else 0
    shared = model.shared_ffn_hidden if model.is_moe else 0
    width = {  # the MLP activation's width each module re-runs
        "mlp": 0 if model.is_moe else model.ffn_hidden,
        "moe_act": routed if "moe" not in modules else 0,
        "moe": routed + shared,
        "shared_experts": shared if "moe" not in modules else 0,
    }
    per_token = {name: act * f / t for name, f in width.items() if f and name in modules}
    if "mla_up_proj" in modules and model.mla:
        per_token["mla_up_proj"] = 2 * (model.q_dim + model.k_dim) / t
    if "layernorm" in modules:
        per_token["layernorm"] = 2 * (1 if model.block != "layer" else 2) * hs
    for name, elements in per_token.items():
        launches = 2 if name == "layernorm" else 1
        nbytes = elements * elem_bytes * tokens
        kernels.append(_memory(f"{name} element-wise (recompute)", nbytes, dev, launches))
    return tuple(kernels)


def _per_op_recomputed(
    model: ModelSpec,
    dev: Device,
    fwd: list[Kernel],
    attention: list[Kernel],
    tokens: int,
    t: int,
    g_bytes: float,
) -> tuple[Kernel, ...]:
    """The kernels per-op selective activation checkpointing re-runs in a dense layer's
    backward (``recompute: selective_op``), as torchtitan's policy applies it
    (``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "op"``:
    ``_apply_ac_to_transformer_block`` in ``torchtitan/models/llama3/parallelize_llama.py``
    @e7c0cae, June 2025): the outputs of the ops in its save list (``aten.mm``, the flash and
    memory-efficient SDPA kernels, ``reduce_scatter_tensor``, ``max``) are kept except every
    second ``aten.mm`` of the layer's forward, counted in call order; everything else re-runs,
    up to the last tensor the backward reads (checkpointing stops there; ``torch.compile``'s
    partitioner likewise drops a re-run nothing reads).

    A Llama layer calls ``wq, wk, wv`` (count 1–3), ``wo`` (4), ``w1, w3`` (5, 6) and ``w2``
    (7): ``wk`` re-runs for the attention's backward (its keys), ``wo`` for the residual
    stream the MLP's norm reads, ``w3`` for the input of ``w2``'s weight gradient. Without a
    gated MLP the down projection (6) is the one dropped, and nothing the backward reads needs
    it, so only ``wk`` and ``wo`` re-run. The attention core is kept. Every element-wise kernel
    (norms, rotary, residuals, the activation; the layer's last residual add, which nothing
    reads, is charged too, a small overcount) and every low-precision cast of a GEMM input
    re-runs: none is in the save list (:func:`layer_work`'s forward memory-bound kernels, the
    attention's own left out). The key projection is priced at its own shape, the up half of
    the fused gate+up GEMM likewise.

    torchtitan's later ``SelectiveAC`` (``torchtitan/distributed/activation_checkpoint.py``
    @b5bcd76) keeps the same pattern in such a layer; it saves every SDPA backend's output,
    where the June 2025 list lacked cuDNN's (``_scaled_dot_product_cudnn_attention``, added in
    b39377f, 2025-12-01): on Blackwell, where torchtitan puts cuDNN attention first, earlier
    versions re-ran the attention core too, which this does not price. A linear layer with a
    bias runs ``aten.addmm``, which neither list counts (the earlier re-runs it, the later
    keeps it), so a model with linear biases is refused (``job._plain_dense``)."""
    by_name = {k.name: k for k in fwd}
    kept = {id(k) for k in attention}
    h = model.hidden

    def again(name: str, m: int, n: int, k: int) -> Kernel:
        return Kernel(name, "gemm", 2.0 * m * n * k, 0.0, gemm_seconds(m, n, k, dev, g_bytes))

    redo = [again("qkv (key)", tokens, model.kv_dim // t, h), by_name["attention out"]]
    if model.gated_mlp:
        redo.append(again("mlp up (up half)", tokens, model.ffn_hidden // t, h))
    redo += [k for k in fwd if k.kind == "memory" and id(k) not in kept]
    return tuple(redo)


#: The kernel names of MLA's projections (:meth:`~commwall.workload.models.ModelSpec.mla_projections`).
MLA_GEMMS: Final = {
    "q_proj": "q",
    "q_a_proj": "q down",
    "q_b_proj": "q up",
    "kv_a_proj_with_mqa": "kv down",
    "kv_b_proj": "kv up",
    "o_proj": "attention out",
}


def _elementwise_bytes(
    model: ModelSpec, t: int, sequence_parallel: bool, active_ffn: int
) -> tuple[float, int]:
    """Elements moved per token by one layer's forward element-wise kernels, and how many
    kernels: two norms (read + write), two residual adds (two reads + a write), the MLP
    activation (gated: two reads + a write of the MLP width; else one of each), rotary
    embedding on q and k (read + write) unless positions are a learned table (GPT-2/3) or the
    rotary is YaRN's, run unfused (:func:`_unfused_rotary`),
    for layers with biases (GPT-2/3, GPT-NeoX, StarCoder2) bias + dropout before each
    residual (a read and a 1-byte mask), and the query and key norms where the model has them
    (Qwen3, OLMo 2: a read and a write of q and k, one kernel each), and with ``sandwich_norm``
    (Gemma 2/3) two more norms, of the attention and MLP outputs. A hybrid model's block
    (:attr:`~commwall.workload.models.ModelSpec.block`) has one norm and one residual add, and
    what of the rest it holds: the activation (an MLP or the experts), the rotary and query and
    key norms (an attention, where the model has them). With MLA the rotary
    kernel writes each head's whole query and key (Megatron-Core's fused MLA rotary, which also
    joins the shared rotary key to every head: a read and a write of q and k), and the two
    latents' norms read and write ``q_lora_rank + kv_lora_rank`` per token (on the sequence
    shard with sequence parallelism)."""
    hs = model.hidden / t if sequence_parallel else model.hidden
    activation = (3 if model.gated_mlp else 2) * active_ffn / t
    blocks = 2 if model.block == "layer" else 1  # a hybrid model's block: one norm, one add
    per_token = blocks * 2 * hs + blocks * 3 * hs + activation
    launches = 2 * blocks + (1 if active_ffn else 0)
    if model.linear_bias:
        per_token += blocks * 1.5 * hs
        launches += blocks
    rotary = model.rotary and not model.learned_pos_emb and not model.yarn_rope
    if model.has_attention and rotary:
        per_token += 2 * (model.q_dim + model.k_dim) / t
        launches += 1
    if model.mla:
        latents = (model.q_lora_rank or 0) + (model.kv_lora_rank or 0)
        per_token += 2 * latents / (t if sequence_parallel else 1)
        launches += 2 if model.q_lora_rank else 1
    if model.has_attention and model.qk_norm != "none":
        per_token += 2 * (model.q_dim + model.kv_dim) / t
        launches += 2
    if model.sandwich_norm:  # Gemma's norms of the attention and MLP outputs
        per_token += 2 * 2 * hs
        launches += 2
    return per_token, launches


#: Reads and writes of each query and key element by Megatron-Core's unfused rotary
#: (``_apply_rotary_pos_emb_bshd``, ``models/common/embeddings/rope_utils.py`` @d98e8a6: ``t·cos
#: + rotate_half(t)·sin``, then the rotated part joined to the unrotated rest), forward and
#: backward, and its kernels. Forward: the product with cos (read, write), ``rotate_half``'s
#: negation of one half (half a read and half a write) and its concatenation of the halves
#: (read, write), the product with sin (read, write), the sum (two reads, a write) and the
#: final ``cat`` with the empty unrotated rest (read, write): 12 and six kernels. Backward, by
#: autograd: the gradient times sin (2), the negation (1), the halves put back together (2),
#: the gradient times cos (2) and the two paths' gradients summed (3): 10 and five kernels.
#: cos and sin (one row per position, shared by the heads and the batch) are left out. The
#: fused kernel it replaces reads and writes each element once a pass.
UNFUSED_ROTARY_PASSES: Final = (12, 6, 10, 5)


def _unfused_rotary(
    model: ModelSpec, dev: Device, tokens: int, t: int, elem_bytes: int
) -> tuple[Kernel, Kernel]:
    """The unfused rotary a YaRN model runs in Megatron (``ModelSpec.yarn_rope``): the passes
    of :data:`UNFUSED_ROTARY_PASSES` over the rank's queries and keys, forward and backward."""
    elements = tokens * (model.q_dim + model.k_dim) / t
    f_passes, f_kernels, b_passes, b_kernels = UNFUSED_ROTARY_PASSES
    return (
        _memory("rotary, unfused (YaRN)", f_passes * elem_bytes * elements, dev, f_kernels),
        _memory("rotary, unfused (YaRN) (grad)", b_passes * elem_bytes * elements, dev, b_kernels),
    )


#: The name of a ring's merge kernels (:func:`_ring_merges`; its gradient's adds " (grad)").
RING_MERGES: Final = "ring attention merges"


def _ring_merges(
    model: ModelSpec, dev: Device, tokens: int, t: int, elem_bytes: int, cp: int, ring: int
) -> tuple[Kernel, Kernel] | None:
    """The merges of a ring attention's partial results (Transformer Engine
    ``AttnFuncWithCPAndKVP2P``, ``context_parallel.py`` @d0067d0), forward and backward, or
    ``None`` without a ring.

    Forward: the first step's output is rescaled into the result (read, write) and every later
    step's is added in by its log-sum-exp correction (``flash_attn_fwd_out_correction``: read
    the result and the step's output, write the result), plus the log-sum-exp update. Backward:
    every step adds its dQ into the local gradient and its dK/dV into the ring's partial ones
    (``add_``: two reads, a write; the first step copies). With the causal load-balanced split a
    later step covers all of a rank's queries or half of them, 3/4 on average over the ranks,
    and likewise for K and V. Elements per rank: ``tokens·o_dim/(cp·t)`` of the output (and,
    as many, of dQ: ``o_dim = q_dim`` but with MLA), ``tokens·(k_dim + v_dim)/(cp·t)`` of dK
    and dV (an all-to-all first trades tokens for heads, which leaves the count as it is).
    """
    if ring <= 1:
        return None
    q = tokens * model.o_dim / (cp * t)
    kv = tokens * (model.k_dim + model.v_dim) / (cp * t)
    passes = 2.0 + 3.0 * 0.75 * (ring - 1)  # reads and writes of each element, all steps
    fwd = _memory(RING_MERGES, elem_bytes * q * passes, dev, 2 * ring)
    bwd = _memory(f"{RING_MERGES} (grad)", elem_bytes * (q + kv) * passes, dev, 2 * ring)
    return fwd, bwd


def _memory(name: str, nbytes: float, dev: Device, launches: int = 1) -> Kernel:
    return Kernel(name, "memory", 0.0, nbytes, nbytes / dev.hbm + launches * KERNEL_LAUNCH)


def _attention(
    model: ModelSpec,
    dev: Device,
    b: int,
    s: int,
    t: int,
    kind: str,
    elem_bytes: int,
    cp: int = 1,
    a2a: int = 1,
    fp8: bool = False,
    cudnn: tuple[int, int] | None = None,
    dropout: bool = False,
) -> tuple[list[Kernel], list[Kernel]]:
    """Attention core kernels, forward and backward (module docstring).

    ``fp8``: cuDNN's FP8 kernel (:data:`ATTENTION_FP8`) with Transformer Engine's current
    scaling around it (``FusedAttnFunc``, ``attention/dot_product_attention/backends.py``
    @v2.8): forward, Q, K and V are concatenated (read 2, write 2 bytes an element) and cast
    together (an amax pass, then read 2, write 1); backward, the output gradient is cast
    likewise (read 2 + 2, write 1). The output and dQ, dK, dV stay 16-bit.

    Chunked attention (``model.attention_chunk`` shorter than the sequence: Llama 4) runs its
    chunked layers' share at the kernel's rate at the chunk's length, as attention over
    sequences of that length, and the others' at the sequence's.

    cuDNN's FP8 kernel honours a sliding window forward but not backward, so an FP8 backward
    is priced over the whole causal triangle of every layer. cudnn-frontend's SDPA training
    benchmark with its GPT-OSS preset (head dim 64, window 128, b 2 × 128 heads;
    ``benchmark/sdpa_benchmark_training/results/gpt_oss/gb300/gpt_oss_20260724_040706.csv``
    @e99b0d0b, cuDNN 9.26, and the same shape with 9.22 on GB300 and 9.27 on GB200) times the
    FP8 backward at 0.469, 1.486, 5.204, 19.408 and 74.901 ms from 2K to 32K tokens, four times
    longer at each doubling — the causal square — where BF16's doubles (0.228 to 3.450 ms) and
    every forward grows linearly; over the full triangle the 32K backward runs at 1,174 TFLOP/s,
    a plausible FP8 rate. Transformer Engine keeps FP8 windowed attention on cuDNN from 9.21 on
    Blackwell (``attention/dot_product_attention/utils.py`` @d0067d0).

    ``dropout``: the fused kernels' dropout variant, at :func:`dropout_share` of their rate."""
    heads = model.n_heads // t
    d, d_v = model.qk_head_dim, model.v_head
    full = 2.0 * b * s * s * heads * (d + d_v) / cp  # QKᵀ and softmax·V over every score
    if kind in ("flash", "flash2"):
        # the load-balanced split runs each step on blocks of s/(2·ring) queries over a ring
        # of cp/a ranks (a: the all-to-all group; Ulysses' a = cp leaves whole sequences)
        ring = max(1, cp // max(1, a2a))
        windowed = model.sliding_window is not None and model.sliding_window < s
        if windowed and ring > 1:
            raise WorkloadError(
                f"model.sliding_window: {model.sliding_window} at seq_len {s} with the "
                f"sequence split over {ring} context-parallel ranks (cp {cp}): a windowed "
                "attention over a split sequence is not modelled; use cp_comm a2a (whole "
                "sequences per rank) or cp 1"
            )
        chunk = model.attention_chunk
        chunked = chunk is not None and chunk < s
        if chunked and ring > 1:
            raise WorkloadError(
                f"model.attention_chunk: {chunk} at seq_len {s} with the sequence split over "
                f"{ring} context-parallel ranks (cp {cp}): chunked attention over a split "
                "sequence is not modelled; use cp_comm a2a (whole sequences per rank) or cp 1"
            )
        block = s if ring == 1 else s // (2 * ring)
        family = attention_family(dev.name, kind, fp8=fp8, cudnn=cudnn)
        narrow = head_dim_efficiency(d)  # the rates are head dim 128's
        share_f, share_b = (x * narrow for x in attention_share(family, block))
        # the causal mask halves the scores; a window skips the blocks outside it too, at
        # the kernel's rate at this length (FlashAttention's window_size, Dao 2023)
        causal = full * model.attended_pairs(s) / (float(s) * s)
        grad = 2.5 * causal
        if fp8 and windowed:
            # cuDNN's FP8 backward computes the whole causal triangle of a windowed layer
            grad = 2.5 * full / 2.0
        forward = causal / (dev.half_peak * share_f) + KERNEL_LAUNCH
        backward = grad / (dev.half_peak * share_b) + KERNEL_LAUNCH
        floor = WINDOW_ROW_SECONDS.get(dev.name) if kind == "flash" else None
        if windowed and floor is not None and model.sliding_window is not None:
            # a windowed layer runs no faster a query row than cuDNN at a 128-token window
            rows = b * heads * s / cp
            w = model.sliding_window
            inside = full * (s * w - w * w / 2.0) / (float(s) * s)  # one windowed layer
            part = (model.sliding_window_layers or model.n_layers) / model.n_layers
            whole = full / 2.0
            slow_f = max(inside / (dev.half_peak * share_f), rows * floor[2 if fp8 else 0])
            forward = part * slow_f + (1.0 - part) * whole / (dev.half_peak * share_f)
            forward += KERNEL_LAUNCH
            if not fp8:
                slow_b = max(2.5 * inside / (dev.half_peak * share_b), rows * floor[1])
                backward = part * slow_b + (1.0 - part) * 2.5 * whole / (dev.half_peak * share_b)
                backward += KERNEL_LAUNCH
        if chunked and chunk is not None:
            # the chunked layers run causal attention over sequences of ``chunk`` tokens, at
            # the kernel's rate at that length; the others over the whole sequence
            part = (model.attention_chunk_layers or model.n_layers) / model.n_layers
            cf, cb = (x * narrow for x in attention_share(family, chunk))
            whole = full / 2.0
            inside = causal - (1.0 - part) * whole  # the chunked layers' share of the mean
            forward = (
                inside / (dev.half_peak * cf)
                + (1.0 - part) * whole / (dev.half_peak * share_f)
                + KERNEL_LAUNCH
            )
            backward = (
                2.5 * inside / (dev.half_peak * cb)
                + 2.5 * (1.0 - part) * whole / (dev.half_peak * share_b)
                + KERNEL_LAUNCH
            )
        if dropout:
            # the kernels' dropout variant keeps a measured share of their rate
            keep_f, keep_b = dropout_share(d)
            forward = (forward - KERNEL_LAUNCH) / keep_f + KERNEL_LAUNCH
            backward = (backward - KERNEL_LAUNCH) / keep_b + KERNEL_LAUNCH
        fwd = [Kernel("attention", "attention", causal, 0.0, forward)]
        bwd = [Kernel("attention (grad)", "attention", grad, 0.0, backward)]
        if fp8:
            tokens = b * s / cp
            qkv = tokens * (model.q_dim + model.k_dim + model.v_dim) / t
            fwd.append(_memory("attention Q, K, V fp8 concat+cast", 9.0 * qkv, dev, 4))
            grad_out = tokens * model.o_dim / t
            bwd.append(_memory("attention output grad fp8 cast", 5.0 * grad_out, dev, 3))
        return fwd, bwd
    # unfused (Megatron 2021): batched QKᵀ (s×s×d) and softmax·V (s×d×s) over b·heads, a fused
    # scale-mask-softmax (read + write the scores) and dropout (read, write, 1-byte mask)
    half = sixteen_bit(dev)
    e, count = elem_bytes, b * heads
    scores = float(count) * s * s
    forward = gemm_seconds(s, s, d, half, e, count) + gemm_seconds(s, d_v, s, half, e, count)
    backward = (
        gemm_seconds(s, d, s, half, e, count) + gemm_seconds(d, s, s, half, e, count)
        + gemm_seconds(s, s, d_v, half, e, count) + gemm_seconds(s, d_v, s, half, e, count)
    )  # fmt: skip
    return (
        [Kernel("attention scores and values", "gemm", full, 0.0, forward),
         _memory("softmax and dropout", scores * (4 * e + 1), dev, 2)],
        [Kernel("attention scores and values (grad)", "gemm", 2 * full, 0.0, backward),
         _memory("softmax and dropout (grad)", scores * (5 * e + 1), dev, 2)],
    )  # fmt: skip
