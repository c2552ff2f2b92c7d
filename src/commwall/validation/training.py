"""Published, measured training runs bundled with commwall, and the step the model predicts.

``training_public.yaml`` holds runs read from papers, vendor performance tables and framework
READMEs; each has its source, one verbatim line, the architecture, the parallel layout and the
measured figure, and lists what the source leaves unstated and the file assumes (``assumed``).
:func:`training_comparisons` builds each run as a scenario on the matching catalog preset —
nothing is tuned per run — simulates one step with the analytic engine and compares the step
time with the measured one. Measured figures become step times as their source counts:

* ``step_time_s`` as it is;
* ``tokens_per_s_per_gpu``: ``global_batch × seq_len / (rate × GPUs)``;
* ``tflops_per_gpu`` with ``flops: narayanan`` — Narayanan et al. SC'21 eq. 3,
  ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`` per step, recomputation included;
* ``tflops_per_gpu`` with ``flops: model`` — :meth:`ModelSpec.training_flops_per_token` per
  token (``6·N_matmul + 12·l·(a·d)·s``, PaLM's count, as Llama 3 reports MFU);
* ``tflops_per_gpu`` with ``flops: megatron`` — what Megatron-LM's ``--log-throughput`` divides
  by (``transformer_flops`` in ``megatron/training/training.py``, 2025-;
  :func:`megatron_flops_per_token`): per token ``3·2·(l·(h·(q + 2·kv) + q·s/2·2 + q·h + m·f·h)
  + h·V)`` for a dense model, the attention core halved by the causal mask, ``m`` 3 for a gated
  MLP and 2 otherwise, ``V`` the padded vocabulary; MoE layers count their ``top_k`` routed and
  shared experts, multi-head latent attention its latent projections, and ``job.mtp_layers``
  the MTP modules. It gives 989.0 TFLOP/s for MIT ORCD's logged 11,374 ms B200 step, as
  logged, and Megatron-Bridge's tables' own TFLOP/s from their tokens/s.

``measured.eval_step_time_s``, where a source times one (MLPerf Training logs'
``validation_step_time``), is an evaluation step: the forwards of one global batch alone. The
report compares it with :func:`~commwall.workload.simulate.evaluation_step_time`, so a run's
error can be told apart into its forward and the rest (backward, gradient reduction,
optimizer).

``unstated``, where a row has one, names job settings the source leaves unstated and that
move the prediction, each with the values the source allows (``micro_batch: [1, 2, 4]``); the
row's ``job`` takes one of them (its ``assumed`` entry says why). The report prices the row
at every other value too (:attr:`TrainingComparison.alternatives`), so an error that a
setting nobody published decides is shown as the range it spans, recomputed with the model —
never fitted, and never the figure the table's medians use.

``measured.peak_memory_gib``, where a source gives it (MIT ORCD's sweep: PyTorch's maximum
allocated on rank 0), is the run's peak memory; a test holds the memory model to it.

The error is ``predicted / measured − 1`` of the step time (negative: the model is faster).
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from commwall.errors import CommwallError
from commwall.scenario import ModelDef, ScenarioError, parse_scenario
from commwall.workload.hf_config import model_from_def
from commwall.workload.models import MAMBA_SCAN_FLOPS, ModelSpec

DATA_FILE: Final = "training_public.yaml"
_METRICS: Final = ("step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu")
#: Job settings an ``unstated`` entry may not vary: they change the GPUs or the tokens of a
#: step, so the measured step itself (tokens/s and TFLOP/s convert through them).
_FIXED_SETTINGS: Final = frozenset({"tp", "pp", "dp", "cp", "ep", "global_batch", "seq_len"})


class ValidationDataError(CommwallError, ValueError):
    """A validation input (a run of the data file) is wrong; the message names the value, the
    problem and what is allowed."""


@dataclass(frozen=True)
class TrainingRun:
    """One published run (fields as in the data file)."""

    id: str
    role: str
    source: str
    quote: str
    preset: str
    nodes: int
    model: dict[str, Any]
    job: dict[str, Any]
    measured: dict[str, Any]
    skip: str | None
    assumed: tuple[str, ...]
    #: Cluster fields beyond the preset and node count (e.g. ``scale_up_domain`` for a partial
    #: NVL72 rack), as a scenario's ``cluster:`` takes them.
    cluster: dict[str, Any] = field(default_factory=dict)
    #: Job settings the source leaves unstated, each with the values it allows (the job's own
    #: among them; module docstring).
    unstated: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @functools.cached_property
    def spec(self) -> ModelSpec:
        """The run's architecture as a :class:`ModelSpec` (built once)."""
        return model_from_def(ModelDef(**self.model))

    @property
    def source_key(self) -> str:
        """The report's ``source`` group: the id up to its first ``-`` (``mlperf50``)."""
        return self.id.split("-")[0]

    @property
    def n_gpus(self) -> int:
        """GPUs of the run: the product of its parallel degrees."""
        j = self.job
        return int(j["tp"] * j.get("cp", 1) * j["pp"] * j["dp"])

    def scenario(self, compute_efficiency: float | None = None, **settings: Any) -> dict[str, Any]:
        """The run as a scenario mapping (optionally on the old flat compute model; ``settings``
        replace job fields, as :attr:`unstated` alternatives do)."""
        job = {**self.job, **settings, "model": self.model}
        if compute_efficiency is not None:
            job["compute_efficiency"] = compute_efficiency
        return {
            "name": self.id,
            "cluster": {"preset": self.preset, "nodes": self.nodes, **self.cluster},
            "job": job,
        }

    def measured_step(self) -> float:
        """The measured step time, seconds (module docstring)."""
        m, j = self.measured, self.job
        if "step_time_s" in m:
            return float(m["step_time_s"])
        tokens = j["global_batch"] * j["seq_len"]
        if "tokens_per_s_per_gpu" in m:
            return float(tokens / (float(m["tokens_per_s_per_gpu"]) * self.n_gpus))
        flops = self.step_flops(str(m["flops"]))
        return flops / (float(m["tflops_per_gpu"]) * 1e12 * self.n_gpus)

    def measured_eval(self) -> float | None:
        """The measured evaluation (forward-only) step, seconds, where the source times one."""
        value = self.measured.get("eval_step_time_s")
        return None if value is None else float(value)

    def step_flops(self, formula: str) -> float:
        """FLOPs per step as the source counts them (module docstring)."""
        j, md = self.job, self.model
        batch, s = j["global_batch"], j["seq_len"]
        if formula == "narayanan":
            layers, h, vocab = md["n_layers"], md["hidden"], md["vocab"]
            return float(
                96 * batch * s * layers * h * h * (1 + s / (6 * h) + vocab / (16 * layers * h))
            )
        if formula == "model":
            return float(self.spec.training_flops_per_token(s) * batch * s)
        if formula == "megatron":
            mtp = int(j.get("mtp_layers", 0))
            return float(megatron_flops_per_token(self.spec, s, mtp) * batch * s)
        raise ValidationDataError(
            f"{self.id}: measured.flops {formula!r}; allowed: narayanan, model, megatron"
        )


def megatron_flops_per_token(m: ModelSpec, seq_len: int, mtp_layers: int = 0) -> float:
    """FLOPs per token Megatron-LM's ``--log-throughput`` divides by: ``transformer_flops`` in
    ``num_floating_point_operations`` (``megatron/training/training.py`` @effebd81, 2025-10).

    Every GEMM counts three times (forward, data and weight gradients) at two FLOPs a
    multiply-add. Per layer — the ``mtp_layers`` multi-token-prediction modules count as more
    layers, MoE when the last layer is — the MLP is ``12·h·g·f`` with ``g`` 3/2 gated, 1 not
    (``--swiglu``), ``f`` the dense FFN, or ``top_k`` routed experts' widths plus the shared
    expert's on a MoE layer. Attention with MHA or GQA is ``6·(h·(q + 2·kv) + q·s + q·h)``:
    the projections and the two products of the core, halved by the causal mask. With
    multi-head latent attention (``r_q``, ``r_kv`` the latent ranks, ``d``, ``d_r``, ``d_v``
    a head's key, rotary and value widths) it is ``6·(r_q·(h + n·(d + d_r) + 1) + r_kv·(h +
    n·(d + d_v) + 1) + h·d_r + n·d_v·h + s·n·(d + d_r)/2 + s·n·d_v/2)``, the query term
    ``h·n·(d + d_r)`` without ``r_q``. Each MTP module adds ``6·(3·h + 2·h²)`` (its norms and
    projection) and the logits ``6·h·V`` once per head. A sliding window or an attention chunk
    does not enter: the count is the full causal square, as Megatron's is.

    A hybrid model is counted by ``hybrid_flops`` (the same file @d98e8a6): per token forward,
    an attention layer ``4·h·q·(1 + kv/q) + 2·s·q``, an MLP ``4·h·f·g``, a MoE layer
    ``4·h·g·(top_k·f_e + f_shared)``, a Mamba-2 layer ``2·h·(2·d + 2·G·N + H) + 7·d·N + 2·d·h``
    with ``d = 2·h`` whatever its heads (its own convention), and the logits ``2·h·V``; all ×3.

    >>> from commwall.workload.models import get_model
    >>> round(megatron_flops_per_token(get_model("deepseek-v3"), 4096) / 1e9, 2)
    249.81
    >>> round(megatron_flops_per_token(get_model("nemotron-3-nano-30b-a3b"), 8192) / 1e9, 2)
    22.28
    """
    if m.is_hybrid:
        return _megatron_hybrid_flops(m, seq_len)
    h, s = m.hidden, seq_len
    layers = m.n_layers + mtp_layers
    moe = 0
    if m.is_moe:
        moe = m.moe_layer_count + (mtp_layers if m.is_moe_layer(m.n_layers - 1) else 0)
    gated = 1.5 if m.gated_mlp else 1.0
    mlp = (
        12
        * h
        * gated
        * ((layers - moe) * m.ffn_hidden + moe * (m.expert_ffn * m.top_k + m.shared_ffn_hidden))
    )
    if m.mla:
        n, d, rope, d_v = m.n_heads, m.head_dim, m.qk_rope_head_dim, m.v_head
        q = (
            h * n * (d + rope)
            if m.q_lora_rank is None
            else m.q_lora_rank * (h + n * (d + rope) + 1)
        )
        kv = (m.kv_lora_rank or 0) * (h + n * (d + d_v) + 1)
        attn = q + kv + h * rope + n * d_v * h + s * n * (d + rope) / 2 + s * n * d_v / 2
    else:
        attn = h * (m.q_dim + 2 * m.kv_dim) + m.q_dim * s + m.q_dim * h
    mtp = mtp_layers * (3 * h + 2 * h * h)
    return float(6 * layers * attn + mlp + 6 * mtp + 6 * h * m.vocab * (mtp_layers + 1))


def _megatron_hybrid_flops(m: ModelSpec, seq_len: int) -> float:
    """:func:`megatron_flops_per_token` of a hybrid model (``hybrid_flops``)."""
    h, pattern = m.hidden, m.hybrid_pattern or ""
    gated = 1.5 if m.gated_mlp else 1.0
    attention = 4 * h * (m.q_dim + m.kv_dim) + 2 * seq_len * m.q_dim
    mlp = 4 * h * m.ffn_hidden * gated
    moe = 4 * h * gated * (m.top_k * m.expert_ffn + m.shared_ffn_hidden) if m.is_moe else 0
    d, state = 2 * h, m.mamba_state
    mamba = (
        2 * h * (2 * d + 2 * m.mamba_groups * state + m.mamba_heads)
        + MAMBA_SCAN_FLOPS * d * state
        + 2 * d * h
    )
    forward = (
        pattern.count("*") * attention
        + pattern.count("-") * mlp
        + pattern.count("E") * moe
        + pattern.count("M") * mamba
        + 2 * h * m.vocab
    )
    return float(3 * forward)


@dataclass(frozen=True)
class TrainingComparison:
    """A run with the model's step (kernel model and, for contrast, the flat 0.5 constant)."""

    run: TrainingRun
    measured: float
    predicted: float
    flat: float
    breakdown: dict[str, float]
    #: The measured evaluation step and the model's, where the run times one.
    eval_measured: float | None = None
    eval_predicted: float | None = None
    #: ``(setting, value, predicted step)`` at each value of the run's unstated settings
    #: (:attr:`TrainingRun.unstated`) other than the one its job takes, one setting at a time.
    alternatives: tuple[tuple[str, Any, float], ...] = ()

    @property
    def error(self) -> float:
        """Step-time error of the model: predicted / measured − 1."""
        return self.predicted / self.measured - 1.0

    @property
    def eval_error(self) -> float | None:
        """Evaluation-step (forward-only) error of the model, where the run times one."""
        if self.eval_measured is None or self.eval_predicted is None:
            return None
        return self.eval_predicted / self.eval_measured - 1.0

    @property
    def rest_error(self) -> float | None:
        """Error of what the step runs after its forwards — backward, gradient reduction,
        optimizer, a pipeline's backward bubble — where the run times an evaluation step: the
        model's step less its forward-only step over the measured step less the measured
        evaluation step, − 1. A step error near zero can hide a slow forward and a fast rest
        (or the reverse); this and :attr:`eval_error` show which. ``None`` without an
        evaluation step (the loader refuses one not shorter than the step)."""
        if self.eval_measured is None or self.eval_predicted is None:
            return None
        return (self.predicted - self.eval_predicted) / (self.measured - self.eval_measured) - 1.0

    def unstated_errors(self) -> dict[str, list[tuple[Any, float]]]:
        """For each unstated setting, ``(value, error)`` at each value the source allows, in
        the data file's order, the job's own value with the run's :attr:`error`."""
        out: dict[str, list[tuple[Any, float]]] = {}
        for name, values in self.run.unstated.items():
            at = [(v, p) for n, v, p in self.alternatives if n == name]
            taken = self.run.job[name]
            out[name] = [
                (v, self.error)
                if _same(v, taken)
                else (v, next(p for w, p in at if _same(w, v)) / self.measured - 1.0)
                for v in values
            ]
        return out

    @property
    def flat_error(self) -> float:
        """The same with the old flat ``compute_efficiency: 0.5``."""
        return self.flat / self.measured - 1.0


@functools.cache
def load_training_runs() -> tuple[TrainingRun, ...]:
    """Every run of the bundled data file."""
    text = importlib.resources.files("commwall.validation").joinpath(DATA_FILE).read_text("utf-8")
    data = yaml.safe_load(text)
    runs = []
    for row in data["runs"]:
        measured = row["measured"]
        if not any(k in measured for k in _METRICS) and "skip" not in row:
            raise ValidationDataError(f"{row['id']}: measured needs one of {', '.join(_METRICS)}")
        evaluation = measured.get("eval_step_time_s")
        if evaluation is not None and (
            isinstance(evaluation, bool)
            or not isinstance(evaluation, (int, float))
            or not 0 < evaluation < math.inf
        ):
            raise ValidationDataError(
                f"{row['id']}: measured.eval_step_time_s {evaluation!r}; allowed: a positive "
                "number of seconds"
            )
        assumed = row.get("assumed", ())
        if not all(isinstance(a, str) for a in assumed):
            raise ValidationDataError(
                f"{row['id']}: every assumed entry must be text (quote a ': ')"
            )
        unstated = _unstated(row)
        run = TrainingRun(
            id=row["id"],
            role=row.get("role", "dev"),
            source=row["source"],
            quote=row["quote"],
            preset=row["preset"] or "",
            nodes=int(row["nodes"]),
            model=dict(row["model"]),
            job=dict(row["job"]),
            measured=dict(measured),
            skip=row.get("skip"),
            assumed=tuple(assumed),
            cluster=dict(row.get("cluster") or {}),
            unstated=unstated,
        )
        if evaluation is not None and not evaluation < run.measured_step():
            raise ValidationDataError(
                f"{row['id']}: measured.eval_step_time_s {evaluation!r} is not shorter than the "
                f"step ({run.measured_step():.6g} s); an evaluation step runs the step's "
                "forwards alone"
            )
        runs.append(run)
    return tuple(runs)


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type (YAML's ``1``, ``1.0`` and ``true`` are three settings)."""
    return type(a) is type(b) and bool(a == b)


def _unstated(row: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """A row's ``unstated`` mapping, checked (:class:`ValidationDataError` naming the row, the
    setting and what is allowed): job settings other than :data:`_FIXED_SETTINGS`, each with
    two or more distinct numbers, strings or booleans, the job's own value among them."""
    raw = row.get("unstated")
    if raw is None:
        return {}
    rid = row.get("id")
    if not isinstance(raw, dict) or not raw:
        raise ValidationDataError(
            f"{rid}: unstated {raw!r}; allowed: a mapping of job settings to the values the "
            "source allows"
        )
    job = row.get("job") or {}
    out: dict[str, tuple[Any, ...]] = {}
    for name, values in raw.items():
        where = f"{rid}: unstated.{name}"
        if name in _FIXED_SETTINGS:
            raise ValidationDataError(
                f"{where}: it changes the GPUs or the tokens of the measured step; allowed: "
                f"any job setting but {', '.join(sorted(_FIXED_SETTINGS))}"
            )
        if name not in job:
            raise ValidationDataError(f"{where}: the row's job sets no {name!r} to vary")
        if (
            not isinstance(values, list)
            or len(values) < 2
            or not all(isinstance(v, (bool, int, float, str)) for v in values)
            or any(_same(a, b) for i, a in enumerate(values) for b in values[i + 1 :])
        ):
            raise ValidationDataError(
                f"{where} {values!r}; allowed: a list of two or more distinct numbers, strings "
                "or booleans"
            )
        if not any(_same(v, job[name]) for v in values):
            raise ValidationDataError(
                f"{where} {values!r} leaves out the job's own {name} {job[name]!r}"
            )
        out[str(name)] = tuple(values)
    return out


#: The flat constant the model replaced (``compute_efficiency: 0.5`` in every example until
#: issue 17), kept to show what the kernel model changes.
OLD_EFFICIENCY: Final = 0.5


def training_comparisons(
    runs: tuple[TrainingRun, ...] | None = None, workers: int = 1
) -> tuple[list[TrainingComparison], list[tuple[TrainingRun, str]]]:
    """Compared runs, and the runs not compared with the reason, in the runs' order.

    ``workers`` above 1 compares the runs on a local process pool of that many processes
    (:func:`commwall.sweep.runner.pool_context`), each run whole in one worker: the same
    comparisons, in the same order, as one process gives."""
    todo = runs if runs is not None else load_training_runs()
    compared: list[TrainingComparison] = []
    skipped: list[tuple[TrainingRun, str]] = []
    for run, result in zip(todo, _map_runs(list(todo), workers), strict=True):
        if isinstance(result, str):
            skipped.append((run, result))
        else:
            compared.append(result)
    return compared, skipped


#: The most worker processes :func:`default_jobs` gives: each builds whole clusters and steps,
#: and peaks at ~1.4 GB resident on the bundled table's largest runs.
MAX_DEFAULT_JOBS: Final = 4


def default_jobs() -> int:
    """Worker processes for the whole table when none are asked for (``commwall validate
    --training``, ``python -m commwall.validation.accuracy``): the CPUs this process may use,
    at most :data:`MAX_DEFAULT_JOBS`."""
    from commwall.measure.bench import usable_cpus

    return max(1, min(MAX_DEFAULT_JOBS, len(usable_cpus())))


def _map_runs(runs: list[TrainingRun], workers: int) -> list[TrainingComparison | str]:
    """:func:`_compare` of each run, in order: in this process, or on ``workers`` processes."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: {workers!r} is not allowed; allowed: an integer >= 1")
    if workers == 1 or len(runs) < 2:
        return [_compare(run) for run in runs]
    from concurrent.futures import ProcessPoolExecutor

    from commwall.sweep.lifeline import die_with_parent
    from commwall.sweep.runner import pool_context

    context = pool_context(["commwall.validation.training", "commwall.workload.simulate"])
    with ProcessPoolExecutor(
        max_workers=min(workers, len(runs)), mp_context=context, initializer=die_with_parent
    ) as pool:
        return list(pool.map(_compare, runs))


def _compare(run: TrainingRun) -> TrainingComparison | str:
    """``run`` compared, or why it is not: the data file's ``skip``, or why the model cannot
    run it (:func:`training_comparisons`)."""
    from commwall.workload.simulate import evaluation_step_time, simulate

    if run.skip:
        return run.skip
    try:
        scenario = parse_scenario(run.scenario(), run.id)
        report = simulate(scenario)
        flat = simulate(parse_scenario(run.scenario(OLD_EFFICIENCY), run.id))
    except ScenarioError as e:
        return "the model cannot run it: " + "; ".join(e.messages)
    eval_measured = run.measured_eval()
    eval_predicted = None if eval_measured is None else evaluation_step_time(scenario)
    return TrainingComparison(
        run,
        run.measured_step(),
        report.step_time,
        flat.step_time,
        dict(report.breakdown),
        eval_measured,
        eval_predicted,
        _alternatives(run),
    )


def _alternatives(run: TrainingRun) -> tuple[tuple[str, Any, float], ...]:
    """``run``'s step at each value of its unstated settings but its own, one at a time
    (:attr:`TrainingComparison.alternatives`); one the model cannot run is a data-file error."""
    from commwall.workload.simulate import simulate

    out = []
    for name, values in run.unstated.items():
        for value in values:
            if _same(value, run.job[name]):
                continue
            try:
                scenario = parse_scenario(run.scenario(**{name: value}), run.id)
                out.append((name, value, simulate(scenario).step_time))
            except ScenarioError as e:
                raise ValidationDataError(
                    f"{run.id}: unstated.{name} {value!r}: the model cannot run it: "
                    + "; ".join(e.messages)
                ) from e
    return tuple(out)


def summary(errors: list[float]) -> dict[str, float | int]:
    """Count, median |error|, worst |error| and median signed error."""
    if not errors:
        return {"n": 0}
    return {
        "n": len(errors),
        "median_abs": statistics.median(abs(e) for e in errors),
        "worst_abs": max(abs(e) for e in errors),
        "median": statistics.median(errors),
    }


def select_training_runs(
    role: str | None = None, source: str | None = None
) -> tuple[TrainingRun, ...]:
    """The bundled runs of one role (``dev``, ``held_out``) and of the sources whose key (the
    report's ``source`` group: the id up to its first ``-``, e.g. ``mlperf50``) starts with
    ``source``; ``None`` keeps all. An unknown role, a source no run has, or a pair no run
    has is a ValueError naming what is allowed."""
    every = runs = load_training_runs()
    if role is not None:
        roles = sorted({r.role for r in every})
        if role not in roles:
            raise ValueError(f"--role: {role!r} is not allowed; allowed: {', '.join(roles)}")
        runs = tuple(r for r in runs if r.role == role)
    if source is not None:
        keys = sorted({r.source_key for r in every})
        if not source or not any(k.startswith(source) for k in keys):
            raise ValueError(
                f"--source: {source!r} starts no source of the bundled runs; sources: "
                + ", ".join(keys)
            )
        runs = tuple(r for r in runs if r.source_key.startswith(source))
    if not runs:
        raise ValueError(f"--role {role} --source {source}: no bundled run is both")
    return runs


def training_report(
    runs: tuple[TrainingRun, ...] | None = None, workers: int = 1
) -> dict[str, Any]:
    """Every run compared (or those of ``runs``, on ``workers`` processes:
    :func:`training_comparisons`), grouped summaries, and the runs not compared (JSON-ready)."""
    compared, skipped = training_comparisons(runs, workers)

    def group(key: str) -> dict[str, dict[str, Any]]:
        out: dict[str, list[TrainingComparison]] = {}
        for c in compared:
            out.setdefault(_group_key(c, key), []).append(c)
        order = [label for _, label in SCALES] if key == "scale" else sorted(out)
        return {
            k: {
                "model": summary([c.error for c in out[k]]),
                "flat": summary([c.flat_error for c in out[k]]),
            }
            for k in order
            if k in out
        }

    evaluated = [c for c in compared if c.eval_error is not None]
    return {
        "overall": {
            "model": summary([c.error for c in compared]),
            "flat": summary([c.flat_error for c in compared]),
        },
        "evaluation": {
            "step": summary([c.error for c in evaluated]),
            "forward": summary([c.eval_error for c in evaluated if c.eval_error is not None]),
            "rest": summary([c.rest_error for c in evaluated if c.rest_error is not None]),
        },
        "by_role": group("role"),
        "by_gpu": group("gpu"),
        "by_precision": group("precision"),
        "by_source": group("source"),
        "by_size": group("size"),
        "by_layers": group("layers"),
        "by_scale": group("scale"),
        "runs": [
            {
                "id": c.run.id,
                "role": c.run.role,
                "gpus": c.run.n_gpus,
                "measured_s": c.measured,
                "predicted_s": c.predicted,
                "error": c.error,
                "flat_s": c.flat,
                "flat_error": c.flat_error,
                "eval_measured_s": c.eval_measured,
                "eval_predicted_s": c.eval_predicted,
                "eval_error": c.eval_error,
                "rest_error": c.rest_error,
                "unstated": [
                    {"setting": name, "taken": c.run.job[name], "errors": [list(e) for e in errs]}
                    for name, errs in c.unstated_errors().items()
                ],
                "breakdown": c.breakdown,
                "assumed": list(c.run.assumed),
                "source": c.run.source,
            }
            for c in compared
        ],
        "not_compared": [{"id": r.id, "reason": why} for r, why in skipped],
    }


def _group_key(c: TrainingComparison, key: str) -> str:
    run = c.run
    if key == "role":
        return run.role
    if key == "gpu":
        return run.preset
    if key == "precision":
        return str(run.job["precision"])
    if key == "source":
        return run.source_key
    if key == "scale":
        return next(label for most, label in SCALES if run.n_gpus <= most)
    if key == "layers":  # dense or mixture-of-experts, and the MoE runs' EP overlap
        if not run.spec.is_moe:
            return "dense"
        return "MoE, EP overlapped" if run.job.get("moe_a2a_overlap") else "MoE"
    params = run.spec.total_params()
    return "< 20B" if params < 20e9 else ("20-200B" if params < 200e9 else ">= 200B")


#: The job scales the reports group runs by: (most GPUs, label) — one node of 8, up to a rack
#: or pod of 64, a few hundred, thousands, and beyond 4,096.
SCALES: Final = (
    (8, "1-8 GPUs"),
    (64, "9-64 GPUs"),
    (512, "65-512 GPUs"),
    (4096, "513-4,096 GPUs"),
    (math.inf, "> 4,096 GPUs"),
)

#: The summary groups of :func:`training_report`, in the order the reports print them: dev runs
#: (seen while the compute model was built) apart from held-out ones first.
TRAINING_GROUPS: Final = (
    "by_role",
    "by_gpu",
    "by_precision",
    "by_size",
    "by_layers",
    "by_scale",
    "by_source",
)


def training_markdown(data: dict[str, Any], regimes: Sequence[str] = ()) -> str:
    """``docs/validation-training.md``: summaries, ``regimes`` (the lines of the per-regime
    section, :func:`commwall.validation.accuracy.regime_markdown`), every run, and the runs
    not compared."""

    def cell(s: dict[str, Any]) -> str:
        if not s.get("n"):
            return "-"
        return f"{s['median_abs']:.1%} / {s['worst_abs']:.0%} ({s['n']}, median {s['median']:+.0%})"

    lines = [
        "# Validation: training steps against published measured runs",
        "",
        "Generated by `commwall validate --training --markdown > docs/validation-training.md` (a",
        "slow test keeps it current). Each run (`src/commwall/validation/training_public.yaml`: its",
        "source, one verbatim line, what the source leaves unstated and the file assumes) is built",
        "as a scenario on the catalog preset of its GPU and simulated with the analytic engine.",
        "Error = predicted / measured step time − 1; negative means the model is faster than the",
        "run. **model** is the kernel compute model (docs/compute-model.md), **flat** the constant",
        "`compute_efficiency: 0.5` it replaced. No run was used to fit a constant: the compute",
        "model's constants come from kernel benchmarks, each cited in `commwall.workload.compute`;",
        "how two of them combine on power-capped GPUs (the GEMM share times the capped rate) was",
        "chosen with Megatron-LM's timers of one GPT 7B run and after the B200/B300 rows had been",
        "compared (docs/compute-model.md), so those rows are not blind to that choice.",
        "",
        "Cells: median |error| / worst |error| (runs, median signed error).",
        "",
        "| group | model | flat 0.5 |",
        "|---|---:|---:|",
        f"| all | {cell(data['overall']['model'])} | {cell(data['overall']['flat'])} |",
    ]
    for section in TRAINING_GROUPS:
        for key, per in data[section].items():
            lines.append(f"| {section[3:]} {key} | {cell(per['model'])} | {cell(per['flat'])} |")
    lines += regimes
    lines += [
        "",
        "## Every run",
        "",
        "| run | GPUs | measured s | model s | error | flat s | flat error | assumed |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in data["runs"]:
        assumed = "; ".join(r["assumed"]) or "-"
        lines.append(
            f"| {r['id']} | {r['gpus']:,} | {r['measured_s']:.3f} | {r['predicted_s']:.3f} | "
            f"{r['error']:+.1%} | {r['flat_s']:.3f} | {r['flat_error']:+.1%} | {assumed} |"
        )
    lines += _evaluation_markdown(data, cell)
    lines += _unstated_markdown(data)
    lines += ["", "## Not compared", ""]
    lines += [f"- `{x['id']}`: {x['reason']}" for x in data["not_compared"]]
    return "\n".join(lines) + "\n"


def unstated_rows(data: dict[str, Any]) -> list[tuple[str, str, Any, list[list[Any]]]]:
    """``(run, setting, the value taken, [[value, error], ...])`` of every unstated setting in
    a :func:`training_report` (older reports without the field: none)."""
    return [
        (r["id"], u["setting"], u["taken"], u["errors"])
        for r in data["runs"]
        for u in r.get("unstated", ())
    ]


def setting_text(v: Any) -> str:
    """A setting's value as the data file writes it (YAML's `true`, not Python's `True`)."""
    return "true" if v is True else "false" if v is False else str(v)


def _unstated_markdown(data: dict[str, Any]) -> list[str]:
    """The section of :func:`training_markdown` on settings the sources leave unstated."""
    rows = unstated_rows(data)
    if not rows:
        return []
    lines = [
        "",
        "## Settings the source leaves unstated",
        "",
        "Rows whose source does not state a setting that moves the prediction (`unstated` in",
        "the data file: the values the source allows; the row takes the one its `assumed` entry",
        "defends, and the tables above use only that one). Each is priced again at every other",
        "value, one setting at a time, with nothing else changed: where the measured step lies",
        "inside the span, what decides the row's error is a setting nobody published, not the",
        "model alone.",
        "",
        "| run | setting | taken | error at each value | span holds the measured step |",
        "|---|---|---:|---|:---:|",
    ]
    for rid, name, taken, errors in rows:
        each = ", ".join(f"{setting_text(v)}: {e:+.1%}" for v, e in errors)
        low, high = min(e for _, e in errors), max(e for _, e in errors)
        lines.append(
            f"| {rid} | `{name}` | {setting_text(taken)} | {each} | "
            f"{'yes' if low <= 0.0 <= high else 'no'} |"
        )
    return lines


def _evaluation_markdown(data: dict[str, Any], cell: Callable[[dict[str, Any]], str]) -> list[str]:
    """The section of :func:`training_markdown` on runs that time an evaluation step too."""
    rows = [r for r in data["runs"] if r.get("eval_error") is not None]
    if not rows:
        return []
    ev = data["evaluation"]
    lines = [
        "",
        "## Forward only: evaluation steps",
        "",
        "Runs that also time an evaluation step (`measured.eval_step_time_s`: MLPerf Training",
        "logs' `validation_step_time`, the forwards of one global batch) against",
        "`commwall.workload.simulate.evaluation_step_time`, the step's forwards alone on the same",
        "engine. Where the forward is close and the step is not, the step's error lies in the",
        "backward, the gradient reduction or the optimizer, not in the forward's kernels. *After",
        "the forward* is the error of the rest alone: the model's step less its forward-only step",
        "over the measured step less the measured evaluation step. A small step error with a",
        "forward and a rest of opposite signs is two errors cancelling, not one small one. On a",
        "pipelined run the split is approximate: the forward-only step's own pipeline fill and",
        "sends, which a training step hides under its backward, are in the forward's price.",
        "",
        "| | step | forward only | after the forward |",
        "|---|---:|---:|---:|",
        f"| these runs | {cell(ev['step'])} | {cell(ev['forward'])} | {cell(ev['rest'])} |",
        "",
        "| run | GPUs | measured eval s | model eval s | forward error | after the forward "
        "| step error |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['id']} | {r['gpus']:,} | {r['eval_measured_s']:.4f} | "
            f"{r['eval_predicted_s']:.4f} | {r['eval_error']:+.1%} | {r['rest_error']:+.1%} | "
            f"{r['error']:+.1%} |"
        )
    return lines
