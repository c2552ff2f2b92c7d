"""Run a scenario's training step through an engine and account for every second of it.

The step time is when the slowest pipeline stage finishes (its optimizer step, or the ZeRO
parameter all-gather that cannot hide under the next step's first forward). For that stage the
step splits, with nothing left over, into:

* ``compute`` — forward/backward kernels; ``optimizer`` — the Adam step;
* ``tp`` / ``ep`` — tensor- and expert-parallel collectives, which block the compute stream;
* ``cp`` — the part of context parallelism's K/V ring the overlapped compute did not hide;
* ``pp`` — waits on pipeline sends, as long as the send being waited for took;
* ``bubble`` — the schedule's fill and drain, ``(pp−1)/v`` micro-batch slots (Narayanan et al.
  SC'21 §2.2: 1F1B, and the interleaved schedule's ``v``-fold smaller bubble);
* ``imbalance`` — the rest of the stage's pipeline idle: waiting for stages with more work
  (uneven layer splits; not communication);
* ``dp`` — exposed data-parallel communication: what still runs after the last backward, plus
  (ZeRO-3/FSDP) the time the compute stream waits for a layer's parameter all-gather.

**Communication wait share** = (tp + cp + ep + pp + dp) / step: the share of the step the GPUs sit
waiting on the network or NVLink — the "communication wall". MFU = model FLOPs per step /
(step × GPUs × dense peak) (Chowdhery et al. 2022, PaLM appendix B).
"""

from __future__ import annotations

import copy
import functools
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from commwall.cluster import Cluster, build_cluster
from commwall.engines import get_engine
from commwall.engines.base import PhaseResult, Result
from commwall.errors import CommwallError
from commwall.scenario import Scenario
from commwall.workload.compute import cached_weight_bytes
from commwall.workload.contention import UB_STREAM, Contention, run_job
from commwall.workload.job import Job, recompute_modules, resolve_job
from commwall.workload.memory import MemoryBreakdown, memory_per_gpu
from commwall.workload.step import StepPlan, build_step, param_gather_exposure

CATEGORIES = ("compute", "host", "tp", "cp", "ep", "pp", "bubble", "imbalance", "dp", "optimizer")
COMM_CATEGORIES = ("tp", "cp", "ep", "pp", "dp")
#: Human names of the breakdown categories.
CATEGORY_LABELS = {
    "compute": "compute",
    "host": "waiting on the host (MoE token counts)",
    "tp": "tensor-parallel communication",
    "cp": "exposed context-parallel exchange",
    "ep": "expert-parallel all-to-all",
    "pp": "pipeline sends",
    "bubble": "pipeline bubble",
    "imbalance": "waiting on slower pipeline stages",
    "dp": "exposed data-parallel communication",
    "optimizer": "optimizer step",
}


@dataclass(frozen=True)
class CollectiveStat:
    """One kind of collective call in the step, on the critical stage."""

    name: str
    category: str
    op: str
    nbytes: float
    nranks: int
    calls: int
    time_each: float
    total: float
    algo: str
    proto: str
    busbw: float


@dataclass(frozen=True)
class StepReport:
    """Where one training step's time goes."""

    scenario: str
    cluster: dict[str, Any]
    job: dict[str, Any]
    step_time: float
    breakdown: dict[str, float]
    critical_stage: int
    collectives: tuple[CollectiveStat, ...]
    memory: MemoryBreakdown
    hbm_bytes: float
    fabric: dict[str, Any]
    model_flops_per_step: float
    n_gpus: int
    peak_flops: float
    tokens_per_step: int
    result: Result
    electricity_price: float = 0.0806
    pue: float = 1.56
    #: Seconds the critical stage's compute took longer because collective kernels beside it
    #: held SMs and HBM bandwidth (:mod:`commwall.workload.contention`); part of
    #: ``breakdown["compute"]``.
    compute_slowed_by_comm: float = 0.0

    @property
    def comm_wait(self) -> float:
        """Seconds of the step spent waiting on communication."""
        return sum(self.breakdown[c] for c in COMM_CATEGORIES)

    @property
    def comm_wait_share(self) -> float:
        """Share of the step the GPUs wait on communication (0–1)."""
        return self.comm_wait / self.step_time

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation."""
        return self.model_flops_per_step / (self.step_time * self.n_gpus * self.peak_flops)

    @property
    def tokens_per_second(self) -> float:
        """Training throughput of the whole job."""
        return self.tokens_per_step / self.step_time

    @property
    def energy_per_step(self) -> float | None:
        """Facility energy of one step, joules: the power model's GPUs and network at full
        power for the step, times the PUE (servers' CPUs, memory and fans are not in the power
        model). None when the fabric has no power figure (``fabric["bom_error"]``: parts that
        cannot be cabled, such as a NIC faster than the switch ports)."""
        watts = self.fabric.get("total_power_w")
        return None if watts is None else float(watts) * self.step_time * self.pue

    @property
    def kwh_per_million_tokens(self) -> float | None:
        """Facility kWh per million tokens trained (None without a power figure)."""
        joules = self.energy_per_step
        return None if joules is None else joules / 3.6e6 * 1e6 / self.tokens_per_step

    @property
    def usd_per_million_tokens(self) -> float | None:
        """Electricity cost per million tokens trained, $ (None without a power figure)."""
        kwh = self.kwh_per_million_tokens
        return None if kwh is None else kwh * self.electricity_price

    @property
    def fits_in_memory(self) -> bool:
        """Whether the worst stage fits HBM with a 10% reserve."""
        return self.memory.fits(self.hbm_bytes)

    def bottleneck(self) -> str:
        """One sentence naming what bounds the step."""
        parts = {k: v for k, v in self.breakdown.items() if v > 0}
        top = max(parts, key=lambda k: parts[k])
        share = parts[top] / self.step_time
        wall = self.comm_wait_share
        if top == "compute":
            lead = f"The step is compute-bound: {share:.0%} of it is forward/backward math"
        else:
            lead = f"The largest cost is {CATEGORY_LABELS[top]}: {share:.0%} of the step"
        detail = ""
        if top in COMM_CATEGORIES and self.collectives:
            worst = max(
                (c for c in self.collectives if c.category == top),
                key=lambda c: c.total,
                default=None,
            )
            if worst is not None:
                detail = (
                    f" (mostly {worst.name}, {worst.busbw / 1e9:.0f} GB/s busbw with "
                    f"{worst.algo}/{worst.proto} over {worst.nranks} ranks)"
                )
        return f"{lead}{detail}; the GPUs wait on communication {wall:.0%} of the step."

    def metrics(self) -> dict[str, Any]:
        """The step's figures as flat columns, those a sweep stores (the names are listed in
        :mod:`commwall.sweep.evaluate`)."""
        # read off the report, not self.to_dict(): that serialises every phase of the timeline
        c, f = self.cluster, self.fabric
        out: dict[str, Any] = {
            "step_time_s": self.step_time,
            "comm_wait_s": self.comm_wait,
            "comm_wait_share": self.comm_wait_share,
            "compute_slowed_by_comm_s": self.compute_slowed_by_comm,
            "tokens_per_s": self.tokens_per_second,
            "mfu": self.mfu,
            "kwh_per_million_tokens": self.kwh_per_million_tokens,
            "usd_per_million_tokens": self.usd_per_million_tokens,
        }
        out.update({f"breakdown.{k}_s": float(v) for k, v in self.breakdown.items()})
        out.update(
            {
                "gpus": c["gpus"],
                "nodes": c["nodes"],
                "gpu": c["gpu"],
                "fabric": c["fabric"],
                "topology": c["topology"],
                "tiers": c["tiers"],
                "oversubscription": float(c["oversubscription"]),
                "routing": c["routing"],
                "net_bw_per_gpu_Bps": float(c["net_bw_per_gpu"]),
                "scale_up_bw_per_gpu_Bps": float(c["scale_up_bw_per_gpu"]),
                "switches": f["switches"],
                "cables": f["cables"],
                "transceivers": f.get("transceivers"),
                "bisection_Bps": float(f["bisection_Bps"]),
                "power_w": _maybe_float(f.get("total_power_w")),
                "network_power_w": _maybe_float(f.get("network_power_w")),
                "network_cost_usd": _maybe_float(f.get("network_cost_usd_estimate")),
                "memory_per_gpu_bytes": float(self.memory.total),
                "fits_in_memory": bool(self.fits_in_memory),
                "bottleneck": self.bottleneck(),
                "engine": self.result.engine,
            }
        )
        return out

    def to_frame(self) -> Any:
        """A one-row pandas DataFrame of the step's figures (the sweep's metric columns,
        :meth:`metrics`), with the scenario's name."""
        import pandas as pd

        return pd.DataFrame([{"scenario": self.scenario, **self.metrics()}])

    def timeline_frame(self) -> Any:
        """The step's timeline as a pandas DataFrame, one row per phase (name, category,
        stream, start/end seconds, collective op, bytes, ranks, algorithm, busbw)."""
        import pandas as pd

        from commwall.io.parquet import phase_records

        return pd.DataFrame(phase_records(self.result.phases))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "scenario": self.scenario,
            "cluster": self.cluster,
            "job": self.job,
            "step_time_s": self.step_time,
            "breakdown_s": self.breakdown,
            "compute_slowed_by_comm_s": self.compute_slowed_by_comm,
            "comm_wait_s": self.comm_wait,
            "comm_wait_share": self.comm_wait_share,
            "mfu": self.mfu,
            "tokens_per_s": self.tokens_per_second,
            "energy": {
                "joules_per_step": self.energy_per_step,
                "kwh_per_million_tokens": self.kwh_per_million_tokens,
                "usd_per_million_tokens": self.usd_per_million_tokens,
                "electricity_usd_per_kwh": self.electricity_price,
                "pue": self.pue,
            },
            "critical_stage": self.critical_stage,
            "fabric": self.fabric,
            "bottleneck": self.bottleneck(),
            "memory_bytes": {
                "weights": self.memory.weights,
                "gradients": self.memory.gradients,
                "optimizer": self.memory.optimizer,
                "activations": self.memory.activations,
                "total": self.memory.total,
                "hbm": self.hbm_bytes,
                "fits": self.fits_in_memory,
            },
            "collectives": [
                {
                    "name": c.name,
                    "category": c.category,
                    "op": c.op,
                    "bytes": c.nbytes,
                    "ranks": c.nranks,
                    "calls": c.calls,
                    "time_each_s": c.time_each,
                    "total_s": c.total,
                    "algo": c.algo,
                    "proto": c.proto,
                    "busbw_Bps": c.busbw,
                }
                for c in self.collectives
            ],
            "timeline": self.result.to_dict(),
        }


@functools.lru_cache(maxsize=4096)
def _stage_of(stream: str) -> int:
    """The pipeline stage of a stream (``s3.compute``: 3); a step has a few dozen streams."""
    return int(stream.split(".", 1)[0][1:])


def account(plan: StepPlan, result: Result, job: Job) -> tuple[int, float, dict[str, float]]:
    """(critical stage, step time, breakdown by category) — see the module docstring."""
    phases = result.phases
    best: tuple[float, int] = (-1.0, 0)
    for s, marks in enumerate(plan.marks):
        end = phases[marks.optimizer].end
        chained = dict(marks.param_chain) if plan.hide_param_gather > 0 else {}
        if chained:  # the first chunk's, waited for where the next step's first forward uses them
            chain = [(phases[i].duration, at) for i, at in chained.items()]
            end += param_gather_exposure(chain, aligned=plan.param_gather_aligned)
        for i in marks.param_gather:
            if i not in chained:
                end = max(end, phases[i].end - plan.hide_param_gather)
        best = max(best, (end, -s))
    step, stage = best[0], -best[1]
    marks = plan.marks[stage]
    last_bwd = phases[marks.last_backward_end].end
    busy = dict.fromkeys(CATEGORIES, 0.0)
    busy_before = 0.0
    pipe_wait = 0.0  # compute-stream idle until the inputs other than DP were ready
    send_wait = 0.0  # ... the part of it a pipeline transfer itself took
    dp_wait = 0.0  # ... and the rest of it, spent waiting on DP (ZeRO-3 gathers)
    cp_wait = 0.0  # ... or on the context-parallel K/V ring
    tp_wait = 0.0  # ... or on tensor-parallel communication overlapped with the GEMMs
    free = 0.0
    compute = f"s{stage}.compute"
    for i, p in enumerate(phases):
        if p.stream != compute:
            continue
        busy[p.category] += p.duration
        if p.end <= last_bwd:
            busy_before += p.duration
            if p.start > free:
                ready = min(max(free, _ready_without_dp(plan, result, i)), p.start)
                pipe_wait += ready - free
                send_wait += min(ready - free, _transfer_before(plan, result, i, ready))
                side_wait = _last_side_wait(plan, result, i)
                if side_wait == "cp":
                    cp_wait += p.start - ready
                elif side_wait == "tp":
                    tp_wait += p.start - ready
                else:
                    dp_wait += p.start - ready
            free = p.end
    slot = busy_before / job.micro_batches
    idle = max(0.0, last_bwd - busy_before)
    # keep the sum exact: without pipeline waits all idle is DP/CP; never more than the idle
    side = dp_wait + cp_wait + tp_wait
    if side > 0 and (pipe_wait == 0.0 or side > idle):
        dp_wait, cp_wait, tp_wait = (w * idle / side for w in (dp_wait, cp_wait, tp_wait))
    elif pipe_wait == 0.0:
        dp_wait = idle
    # (never below zero: the scaled waits can exceed the idle time by a rounding error)
    idle_pipeline = max(0.0, idle - dp_wait - cp_wait - tp_wait)
    # Pipeline idle is split three ways: the transfers themselves (a wait that ends with a
    # pipeline send, for as long as that send took), the schedule's fill and drain (1F1B:
    # (pp − 1) slots, interleaving v chunks shrinks that v-fold), and the rest — the critical
    # stage waiting for stages with more work (uneven layers, the LM head).
    sends = min(send_wait, idle_pipeline)
    bubble = min(idle_pipeline - sends, (job.pp - 1) * slot / job.virtual_stages)
    breakdown = {
        "compute": busy["compute"],
        "host": busy["host"],
        "tp": busy["tp"] + tp_wait,
        "cp": busy["cp"] + cp_wait,
        "ep": busy["ep"],
        "pp": sends,
        "bubble": bubble,
        "imbalance": idle_pipeline - sends - bubble,
        "dp": dp_wait + max(0.0, step - last_bwd - busy["optimizer"]),
        "optimizer": busy["optimizer"],
    }
    return stage, step, breakdown


def _transfer_before(plan: StepPlan, result: Result, index: int, ready: float) -> float:
    """How long the pipeline send that made phase ``index`` ready at ``ready`` took (0 when
    what it waited for last was not a pipeline send)."""
    for d in plan.schedule.phases[index].after:
        dep = result.phases[d]
        if dep.category == "pp" and dep.end >= ready:
            return dep.duration
    return 0.0


def _side(phase: PhaseResult) -> bool:
    """Whether ``phase`` is side-stream communication the compute stream may wait for: DP,
    the context-parallel ring, or TP communication overlapped with the GEMMs."""
    if phase.category == "tp":  # NCCL's beside the backward (.tp) or Userbuffers' (.ub)
        return phase.stream.endswith((".tp", UB_STREAM))
    return phase.category == "dp" or (phase.category == "cp" and phase.stream.endswith(".cp"))


def _last_side_wait(plan: StepPlan, result: Result, index: int) -> str:
    """The category (``dp``, ``cp`` or ``tp``) of the side-stream input of phase ``index``
    that ended last; ``dp`` when there is none."""
    best, category = -1.0, "dp"
    for d in plan.schedule.phases[index].after:
        dep = result.phases[d]
        if _side(dep) and dep.end > best:
            best, category = dep.end, dep.category
    return category


def _ready_without_dp(plan: StepPlan, result: Result, index: int) -> float:
    """When phase ``index``'s inputs other than DP (or CP) communication were ready.

    A DP dependency (an FSDP gather) counts by its own inputs, so a gather that only waited for a
    pipeline receive leaves the wait to the pipeline; so does the context-parallel ring.
    """
    ready = 0.0
    for d in plan.schedule.phases[index].after:
        if _side(result.phases[d]):
            ready = max(ready, _ready_without_dp(plan, result, d))
        else:
            ready = max(ready, result.phases[d].end)
    return ready


def collective_stats(result: Result, stage: int) -> tuple[CollectiveStat, ...]:
    """Aggregate the critical stage's collective phases by kind (sizes averaged over calls)."""
    table: dict[str, list[PhaseResult]] = {}
    for p in result.phases:
        if p.op is not None and _stage_of(p.stream) == stage:
            table.setdefault(_strip_tags(p.name), []).append(p)
    stats = []
    for name, rows in table.items():
        calls = sum(r.repeat for r in rows)
        total = sum(r.duration for r in rows)
        moved = sum(r.nbytes * r.repeat for r in rows)
        main = max(rows, key=lambda r: r.duration)
        stats.append(
            CollectiveStat(
                name, main.category, main.op or "", moved / calls, main.nranks, calls,
                total / calls, total, main.algo or "", main.proto or "", main.busbw,
            )
        )  # fmt: skip
    return tuple(sorted(stats, key=lambda c: -c.total))


_MICRO_BATCH_TAG = re.compile(r"^[FB]\d+(c\d+)?$")


@functools.lru_cache(maxsize=65536)
def _strip_tags(name: str) -> str:
    """A phase's name without its stage and micro-batch tags: what its calls are grouped by
    (a step's phases repeat a few thousand names, so each is parsed once)."""
    words = name.split()[1:]  # drop the stage tag
    keep = [w for w in words if not _MICRO_BATCH_TAG.match(w) and w != "B-last"]
    text = " ".join(keep)
    if text.startswith("layer "):
        text = " ".join(text.split()[2:])
    return text


def fabric_summary(cluster: Cluster) -> dict[str, Any]:
    """The cluster's scale-out fabric (topology builders) and its bill of materials: switches,
    cables, transceivers, bisection, and power by category for the scenario's optics; a
    one-node cluster has none (:func:`_one_node`)."""
    from commwall.topology.bom import bill_of_materials
    from commwall.topology.graph import TopologyError
    from commwall.topology.metrics import bisection_bandwidth, diameter

    # the fabric as built: failed parts (Cluster.scale_out) are reported by commwall.faults
    topo = replace(cluster, scale_out=None).scale_out_topology()
    counts = topo.counts()
    summary: dict[str, Any] = {
        "topology": topo.name,
        "endpoints": counts.endpoints,
        "switches_per_tier": counts.switches,
        "cables_per_tier": counts.cables,
        "switches": sum(counts.switches.values()),
        "cables": sum(counts.cables.values()),
        "bisection_Bps": bisection_bandwidth(topo),
        "diameter_links": diameter(topo),
        "optics": cluster.optics,
    }
    try:
        bom = bill_of_materials(
            topo,
            optics=cluster.optics,
            switch=cluster.switch.name,
            nic=cluster.nic.name,
            gpu=cluster.gpu.name,
            gpus_per_endpoint=cluster.gpus_per_node / cluster.nics_per_node,
        )
    except TopologyError as err:  # parts that cannot be cabled (a NIC faster than the ports)
        summary["bom_error"] = str(err)
        return summary
    summary.update(
        transceivers=bom.total_transceivers,
        power_w=bom.watts,
        network_power_w=bom.network_power_w,
        total_power_w=bom.total_power_w,
        network_cost_usd_estimate=sum(bom.cost_usd.values()),
        network_cost_usd_by_part={str(k): float(v) for k, v in bom.cost_usd.items()},
    )
    return _one_node(summary) if cluster.n_nodes == 1 else summary


#: fabric_summary by cluster spec (its JSON): a sweep's points share a few clusters
_FABRICS: OrderedDict[str, dict[str, Any]] = OrderedDict()
_FABRICS_KEPT: Final = 256


def _fabric_of(scenario: Scenario, cluster: Cluster) -> dict[str, Any]:
    """:func:`fabric_summary` of ``cluster``, built from ``scenario.cluster``: computed once per
    cluster spec in this process (a sweep's points differ mostly in the job, and the bill of
    materials of a large fabric takes longer than an analytic step) and copied out."""
    key = scenario.cluster.model_dump_json()
    summary = _FABRICS.pop(key, None)
    if summary is None:
        summary = fabric_summary(cluster)
    _FABRICS[key] = summary  # most recently used last
    while len(_FABRICS) > _FABRICS_KEPT:
        _FABRICS.popitem(last=False)
    return copy.deepcopy(summary)


def _maybe_float(value: Any) -> float | None:
    """``value`` as a float, None kept (a fabric without a bill of materials)."""
    return None if value is None else float(value)


def _one_node(summary: dict[str, Any]) -> dict[str, Any]:
    """A one-node cluster's fabric: none. No traffic leaves the node, so no switch, cable or
    transceiver is bought or powered; the node's own NICs and GPUs still draw power."""
    watts = {k: (float(v) if k in ("nics", "gpus") else 0.0) for k, v in summary["power_w"].items()}
    return {
        **summary,
        "topology": f"none: one node, no traffic leaves it (not built: {summary['topology']})",
        "needed": False,
        "switches_per_tier": {},
        "cables_per_tier": {},
        "switches": 0,
        "cables": 0,
        "bisection_Bps": 0.0,
        "diameter_links": 0,
        "transceivers": 0,
        "power_w": watts,
        "network_power_w": watts.get("nics", 0.0),
        "total_power_w": sum(watts.values()),
        "network_cost_usd_estimate": 0.0,
        "network_cost_usd_by_part": {},
    }


def inflight_micro_batches(job: Job) -> float:
    """Micro-batches of activations stage 0 holds at its peak, in whole-stage micro-batches.

    1F1B: ``min(pp, m)``. Interleaved (Megatron-LM): the warm-up forwards plus one, each a
    ``1/v`` chunk: ``(2(pp−1) + (v−1)·pp + 1) / v`` (a chunk's activations are ``1/v`` of
    the stage's, so the count need not be whole), at most ``m``.
    """
    pp, v, m = job.pp, job.virtual_stages, job.micro_batches
    if v == 1:
        return min(pp, m)
    chunks = min(2 * (pp - 1) + (v - 1) * pp + 1, m * v)
    return min(float(m), chunks / v)


def simulate(
    scenario: Scenario,
    cluster: Cluster | None = None,
    *,
    progress: Callable[[int, float, int, int], None] | None = None,
) -> StepReport:
    """Simulate one training step of ``scenario`` (raises ScenarioError on bad input);
    ``progress(events, simulated s, flows done, flows)`` hears how far a flow or packet run is."""
    cl, job, plan, result, contention = _run(scenario, cluster, progress=progress)
    stage, step, breakdown = account(plan, result, job)
    spec = job.spec
    memory = memory_per_gpu(
        job.model,
        tp=job.tp,
        pp=job.pp,
        dp=job.dp_shard,  # the ranks ZeRO shards over (all dp x cp unless job.dp_replicate)
        ep=job.ep,
        expert_tp=job.expert_tp,
        zero_stage=spec.zero_stage,
        micro_batch=spec.micro_batch,
        seq_len=spec.seq_len // job.cp,  # each context-parallel rank holds s/cp tokens
        param_bytes=job.param_bytes,
        # gradients are held as reduced: Megatron's main-grad buffer is fp32 for bf16 params
        # (docs/user-guide/features/dist_optimizer.md: 18 bytes a parameter, 6 + 12/d sharded)
        grad_bytes=job.grad_reduce_bytes,
        sequence_parallel=spec.sequence_parallel,
        recompute=spec.recompute,
        recompute_modules=recompute_modules(spec),
        recompute_num_layers=spec.recompute_num_layers,
        recompute_method=spec.recompute_method,
        virtual_stages=job.virtual_stages,
        eager_experts=not spec.te_op_fuser,
        inflight_microbatches=inflight_micro_batches(job),
        flash_attention=spec.attention != "unfused",
        # NVFP4 saves its GEMM inputs in under a byte (9/16 a copy): counted as FP8's byte
        fp8=spec.precision in ("fp8", "fp4"),
        quantized_weight_bytes=cached_weight_bytes(
            cl.gpu.name, spec.precision, spec.fp8_recipe, spec.fp8_param_gather
        ),
        adam=job.adam,
    )
    return StepReport(
        fabric=_fabric_of(scenario, cl) if cluster is None else fabric_summary(cl),
        scenario=scenario.name,
        cluster=cl.summary(),
        job=job.summary,
        step_time=step,
        breakdown=breakdown,
        critical_stage=stage,
        collectives=collective_stats(result, stage),
        memory=memory,
        hbm_bytes=cl.gpu.hbm,
        model_flops_per_step=job.model_flops_per_step,
        n_gpus=job.n_gpus,
        peak_flops=job.peak_flops,
        tokens_per_step=job.tokens_per_step,
        result=result,
        electricity_price=scenario.economics.electricity_price,
        pue=scenario.economics.pue,
        compute_slowed_by_comm=contention.stage_seconds(plan.schedule, stage),
    )


def evaluation_step_time(scenario: Scenario, cluster: Cluster | None = None) -> float:
    """Seconds of one evaluation step of ``scenario``: the step's forwards alone, every
    micro-batch through every pipeline stage in the order the schedule runs them, with their
    tensor-, context- and expert-parallel collectives and pipeline sends, and no backward,
    gradient reduction, optimizer or parameter gather (Megatron-Core's ``forward_only``
    pass, which NeMo's and Megatron-LM's validation steps run). The makespan of that
    schedule on the scenario's engine, collectives beside compute slowing it as in a step.
    MLPerf Training logs time these (``validation_step_time``); ``commwall validate
    --training`` compares them where a run records one."""
    result = _run(scenario, cluster, forward_only=True)[3]
    return max((p.end for p in result.phases), default=0.0)


def _run(
    scenario: Scenario,
    cluster: Cluster | None,
    *,
    forward_only: bool = False,
    progress: Callable[[int, float, int, int], None] | None = None,
) -> tuple[Cluster, Job, StepPlan, Result, Contention]:
    """``scenario``'s step plan (``forward_only``: its forwards alone) run on its engine."""
    cl = cluster or build_cluster(scenario.cluster)
    job = resolve_job(scenario.job, cl)
    plan = build_step(job, cl, forward_only=forward_only)
    options: dict[str, Any] = {"policy": scenario.simulation.policy}
    if progress is not None and scenario.simulation.engine != "analytic":
        options["progress"] = progress
    engine = get_engine(scenario.simulation.engine, **options)
    result, contention = run_job(
        engine,
        plan.schedule,
        cl,
        job,
        policy=scenario.simulation.policy,
        seed=scenario.simulation.seed,
    )
    return cl, job, plan, result, contention


class StepFitError(CommwallError, ValueError):
    """A measured step the fitted field (compute scale, host wait) cannot reach (one line
    naming the value)."""


def _check_measured(measured: float) -> None:
    if not measured > 0 or measured != measured or measured == float("inf"):
        raise StepFitError(f"measured step: {measured!r} s; need a positive, finite time")


def _step_with(scenario: Scenario, field: str, value: float) -> float:
    """``scenario``'s step time with job field ``field`` set to ``value``."""
    job = scenario.job.model_copy(update={field: value})
    return simulate(scenario.model_copy(update={"job": job})).step_time


def fit_host_wait(
    scenario: Scenario, measured: float, *, high: float = 0.1
) -> tuple[float, float, float]:
    """``job.moe_host_wait`` (seconds a host-synchronised MoE layer forward idles the GPU) that
    makes ``scenario``'s step last ``measured`` seconds, with the step before and after:
    ``(wait, step_before, step_after)``.

    The step grows with the wait (each MoE layer forward outside a paired pass, and on a Grace
    host inside one too, adds it to its stage's compute stream) and piecewise linearly, so
    false position with the Illinois correction (Dowell and Jarratt 1971) finds it in a few
    steps, to 0.05 % of the step. Only the wait moves: a measured step shorter than the
    model's with no wait cannot be reached.
    """
    _check_measured(measured)
    spec = scenario.job
    report = simulate(scenario)
    if report.job["moe_host_wait"] is None or spec.moe_sync_free:
        why = "moe_sync_free is true" if spec.moe_sync_free else "the model is dense"
        raise StepFitError(
            f"job.moe_host_wait: {why}, so no layer waits on the host and there is no wait to "
            "fit; fit compute_scale instead"
        )

    def step(wait: float) -> float:
        return _step_with(scenario, "moe_host_wait", wait)

    before = report.step_time
    lo, hi = 0.0, high
    f_lo, f_hi = step(lo) - measured, step(hi) - measured
    if f_lo == f_hi:
        raise StepFitError(
            "the step does not change with job.moe_host_wait (moe_a2a_overlap pairs every MoE "
            "pass, and on an x86 host a paired pass does not wait): nothing to fit; fit "
            "compute_scale instead"
        )
    if not f_lo <= 0.0 <= f_hi:
        raise StepFitError(
            f"measured step: {measured:.4g} s is outside what a host wait of 0-{high * 1e3:g} ms "
            f"a MoE layer gives ({f_lo + measured:.4g}-{f_hi + measured:.4g} s); check the "
            "scenario matches the run, or fit compute_scale"
        )
    wait, side = lo, 0
    for _ in range(60):
        wait = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        f = step(wait) - measured
        if abs(f) <= 5e-4 * measured:
            break
        if f < 0.0:
            lo, f_lo = wait, f
            if side == -1:
                f_hi /= 2.0
            side = -1
        else:
            hi, f_hi = wait, f
            if side == 1:
                f_lo /= 2.0
            side = 1
    return wait, before, step(wait)


def fit_compute_scale(
    scenario: Scenario, measured: float, *, low: float = 0.05, high: float = 20.0
) -> tuple[float, float, float]:
    """``compute_scale`` that makes ``scenario``'s step last ``measured`` seconds, with the step
    before and after: ``(scale, step_before, step_after)``.

    The step never shortens when compute takes longer, so bisection on the scale finds it (to
    0.1 % of the step). Only compute is scaled: communication, bubbles and the optimizer keep
    the model's times, so a measured step shorter than those alone cannot be reached.
    """
    _check_measured(measured)

    def step(scale: float) -> float:
        return _step_with(scenario, "compute_scale", scale)

    before = simulate(scenario).step_time
    lo_step, hi_step = step(low), step(high)
    if not lo_step <= measured <= hi_step:
        raise StepFitError(
            f"measured step: {measured:.4g} s is outside what scaling compute by {low:g}-{high:g} "
            f"gives ({lo_step:.4g}-{hi_step:.4g} s); check the scenario matches the run"
        )
    for _ in range(60):
        mid = (low * high) ** 0.5
        if step(mid) < measured:
            low = mid
        else:
            high = mid
        if high / low < 1.0005:
            break
    scale = (low * high) ** 0.5
    return scale, before, step(scale)
