"""Claim: "If that nervous system is slow, the brain spends 80% of its time waiting for data."

One training job, two networks. The job: GPT-3 175B (the article's "175 billion parameters"),
pure data parallelism with fully sharded parameters (ZeRO-3 / FSDP, full activation
recomputation, so it fits in 80 GB) on 1,024 H100 in 128 eight-GPU NVLink nodes; 2 sequences
of 2,048 tokens per GPU, 4.2 M tokens per step (GPT-3 itself used 3.2 M).

* **bad** -- the "GPUs plus a network" cluster: one 200 GbE ConnectX-6 RoCE NIC per 8-GPU node
  into Spectrum-4 Ethernet switches (3.1 GB/s of line rate per GPU).
* **good** -- the DGX H100 SuperPOD design: eight 400G NDR ConnectX-7 per node, one per GPU,
  rail-optimized non-blocking Quantum-2 fat tree (50 GB/s of line rate per GPU).

Only the scale-out network differs (NIC, NICs per node, fabric, switch). FSDP all-gathers every
layer's 3.6 GB of bf16 weights before its forward and again before its backward and
reduce-scatters its gradients: ~1 TB per GPU per step through the network. On the bad network that
takes longer than the math, so the GPUs wait; on the good one it hides under the math.

Also shown: the bad network with a Megatron-style layout instead (TP 8 inside NVLink x PP 4 x DP
32, ZeRO-1) -- what changing the parallelism alone buys.

Run: ``python examples/claims/communication_wall.py``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _common import Cited, catalog, cite, fmt, report, table, verdict

from commwall.scenario import Scenario, parse_scenario
from commwall.workload.models import get_model
from commwall.workload.simulate import CATEGORIES, COMM_CATEGORIES, StepReport, simulate

CLAIM = (
    "If that nervous system is slow, the brain spends 80% of its time waiting for data, "
    "effectively turning a $500 million cluster into the world's most expensive space heater."
)
NODES = 128
JOB: dict[str, Any] = {
    "model": "gpt3-175b",
    "tp": 1,
    "pp": 1,
    "zero_stage": 3,
    "recompute": "full",
    "global_batch": 2048,
    "micro_batch": 2,
    "seq_len": 2048,
    "precision": "bf16",
    "compute_efficiency": 0.5,
}
BAD_CLUSTER: dict[str, Any] = {
    "preset": "dgx-h100",
    "nodes": NODES,
    "nic": "connectx-6",
    "nics_per_node": 1,
    "fabric": "roce",
    "switch": "spectrum-4-sn5600",
}
GOOD_CLUSTER: dict[str, Any] = {"preset": "dgx-h100", "nodes": NODES}
MEGATRON_JOB: dict[str, Any] = {
    **JOB,
    "tp": 8,
    "pp": 4,
    "zero_stage": 1,
    "recompute": "selective",
    "micro_batch": 1,
}
#: The article's 80%, and the band this example calls "about 80%".
ARTICLE_SHARE = 0.80
BAD_AT_LEAST = 0.70
GOOD_AT_MOST = 0.30

_LABELS = {
    "compute": "compute",
    "tp": "tensor-parallel comm",
    "cp": "context-parallel K/V",
    "ep": "expert-parallel all-to-all",
    "pp": "pipeline sends",
    "bubble": "pipeline bubble",
    "imbalance": "slower stages",
    "dp": "exposed data-parallel comm",
    "optimizer": "optimizer step",
}


@dataclass(frozen=True)
class Numbers:
    bad: StepReport
    good: StepReport
    bad_megatron: StepReport  # the bad network, Megatron-style parallelism instead of FSDP
    scenarios: tuple[Scenario, Scenario, Scenario]
    fsdp_bytes_per_node: float  # bytes each node must move in or out per step (closed form)
    bad_floor: float  # s: fsdp_bytes_per_node at the node's NIC line rate, bad network
    good_floor: float  # s: the same on the good network
    inputs: tuple[Cited, ...]

    @property
    def bad_wall_from_floor(self) -> float:
        """Least wait share the bad network's floor alone implies: 1 - busy / floor.

        (The step lasts at least the floor; the GPU is busy for compute + optimizer of it.)
        """
        busy = self.bad.breakdown["compute"] + self.bad.breakdown["optimizer"]
        return 1 - busy / self.bad_floor

    @property
    def holds(self) -> bool:
        return self.bad.comm_wait_share >= BAD_AT_LEAST and self.good.comm_wait_share <= (
            GOOD_AT_MOST
        )


def scenario(name: str, cluster: dict[str, Any], job: dict[str, Any]) -> Scenario:
    return parse_scenario({"name": name, "cluster": cluster, "job": job}, name)


def fsdp_bytes_per_node(nodes: int) -> float:
    """Bytes each node must receive (all-gather) or send (reduce-scatter) per FSDP step.

    Every bf16 parameter is all-gathered before forward and before backward and its gradient
    reduce-scattered: 3 x 2 bytes x params, of which the share held by other nodes,
    (nodes - 1) / nodes, has to cross the node's NICs whatever the algorithm.
    """
    params = get_model(JOB["model"]).total_params()
    return 3 * 2 * params * (nodes - 1) / nodes


def node_line_rate(cluster: dict[str, Any]) -> float:
    """Scale-out line rate of one node, bytes/s per direction, from the catalog."""
    cat = catalog()
    preset = cat.preset(cluster["preset"])
    nic = cat.nic(cluster.get("nic", preset.nic))
    nics = int(cluster.get("nics_per_node", preset.nics_per_node))
    return nics * nic.rate


def numbers() -> Numbers:
    cat = catalog()
    bad_s = scenario("bad: FSDP over 1 x 200GbE RoCE per node", BAD_CLUSTER, JOB)
    good_s = scenario("good: FSDP over 8 x 400G NDR per node", GOOD_CLUSTER, JOB)
    mega_s = scenario("bad network, TP8 x PP4 x DP32", BAD_CLUSTER, MEGATRON_JOB)
    inputs = (
        cite(cat.nic("connectx-6"), "rate", unit="b/s"),
        cite(cat.nic("connectx-7"), "rate", unit="b/s"),
        cite(cat.preset("dgx-h100"), "nics_per_node", unit="NICs"),
        cite(cat.gpu("h100-sxm"), "peak_tflops.bf16", unit="TFLOPS"),
        cite(cat.switch("spectrum-4-sn5600"), "latency", unit="s"),
        cite(cat.switch("quantum-2-qm9700"), "latency", unit="s"),
    )
    return Numbers(
        bad=simulate(bad_s),
        good=simulate(good_s),
        bad_megatron=simulate(mega_s),
        scenarios=(bad_s, good_s, mega_s),
        fsdp_bytes_per_node=fsdp_bytes_per_node(NODES),
        bad_floor=fsdp_bytes_per_node(NODES) / node_line_rate(BAD_CLUSTER),
        good_floor=fsdp_bytes_per_node(NODES) / node_line_rate(GOOD_CLUSTER),
        inputs=inputs,
    )


def breakdown_table(reports: tuple[StepReport, ...]) -> str:
    rows = []
    for cat in CATEGORIES:
        if all(r.breakdown[cat] <= 0 for r in reports):
            continue
        mark = " (wait)" if cat in COMM_CATEGORIES else ""
        cells = [_LABELS[cat] + mark]
        for r in reports:
            v = r.breakdown[cat]
            cells.append(f"{fmt(v, 's')} {v / r.step_time:6.1%}" if v > 0 else "-")
        rows.append(cells)
    rows.append(["step", *(fmt(r.step_time, "s") for r in reports)])
    rows.append(["waiting on communication", *(f"{r.comm_wait_share:.1%}" for r in reports)])
    rows.append(["MFU", *(f"{r.mfu:.1%}" for r in reports)])
    rows.append(["tokens/s", *(f"{r.tokens_per_second:,.0f}" for r in reports)])
    rows.append(
        [
            "memory per GPU",
            *(f"{r.memory.total / 1e9:.0f} / {r.hbm_bytes / 1e9:.0f} GB" for r in reports),
        ]
    )
    return table(("", "bad", "good", "bad net, TP8xPP4"), rows)


def collectives_table(r: StepReport) -> str:
    return table(
        ("collective", "size", "ranks", "calls", "total", "algo/proto", "busbw"),
        (
            (
                c.name,
                f"{c.nbytes / 2**20:,.0f} MiB",
                str(c.nranks),
                f"{c.calls:,}",
                fmt(c.total, "s"),
                f"{c.algo}/{c.proto}",
                fmt(c.busbw, "B/s"),
            )
            for c in r.collectives[:4]
        ),
    )


def main() -> None:
    n = numbers()
    bad, good, mega = n.bad, n.good, n.bad_megatron
    answers = [
        ("bad: waiting on communication", f"{bad.comm_wait_share:.1%} of the step"),
        ("good: waiting on communication", f"{good.comm_wait_share:.1%} of the step"),
        ("bad / article's 80%", fmt(bad.comm_wait_share / ARTICLE_SHARE, "x")),
        ("net bandwidth per GPU, bad", fmt(bad.cluster["net_bw_per_gpu"], "B/s")),
        ("net bandwidth per GPU, good", fmt(good.cluster["net_bw_per_gpu"], "B/s")),
        ("step time bad / good", fmt(bad.step_time / good.step_time, "x")),
        ("FSDP bytes in/out per node/step", f"{n.fsdp_bytes_per_node / 1e12:.2f} TB"),
        ("... at line rate, bad / good", f"{fmt(n.bad_floor, 's')} / {fmt(n.good_floor, 's')}"),
        ("wall the bad floor alone implies", f">= {n.bad_wall_from_floor:.1%}"),
        ("bad network, TP8 x PP4 instead", f"{mega.comm_wait_share:.1%} waiting"),
    ]
    print(
        report(
            "communication_wall",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"GPT-3 175B FSDP on 1,024 H100 waits {bad.comm_wait_share:.0%} of the step with "
                f"one 200GbE NIC per node (MFU {bad.mfu:.0%}) and {good.comm_wait_share:.0%} with "
                f"8 x 400G NDR (MFU {good.mfu:.0%}); same GPUs, same job, "
                f"{bad.step_time / good.step_time:.1f}x the step time.",
            ),
            notes=(
                "Exposed FSDP all-gathers count as data-parallel wait; 'waiting' = every second "
                "the GPU is not computing, its optimizer step and pipeline bubble aside.",
                "The share depends on compute per GPU: halve the tokens per GPU and both rise.",
            ),
        )
    )
    print()
    print(breakdown_table((bad, good, mega)))
    for label, r in (("bad", bad), ("good", good)):
        print()
        print(f"top collectives, {label} ({r.cluster['nic']}, {r.cluster['fabric']}):")
        print(collectives_table(r))


if __name__ == "__main__":
    main()
