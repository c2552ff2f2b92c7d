"""Claim: "[NVSwitch] allows every GPU in a single rack (like the GB200 NVL72) to talk to every other
GPU as if they were on the same chip, with massive 1.8 TB/s bidirectional bandwidth."

From the catalog (preset ``gb200-nvl72``):

* per GPU: 18 NVLink5 links x 50 GB/s per direction = 900 GB/s, 1.8 TB/s both ways;
* aggregate: 72 GPUs x 1.8 TB/s = 129.6 TB/s, the "130 TB/s" NVIDIA quotes for NVL72 -- and the
  switch side agrees: 18 NVLink Switch chips x 7.2 TB/s;
* "every GPU to every other": 1.8 TB/s is what one GPU has in total; when all 72 talk to all
  others at once each pair gets 900 GB/s / 71 per direction. commwall's all-to-all and
  all-reduce over the 72-GPU domain (1 GiB, NCCL-like tuner) show what a job sees.

Run: ``python examples/claims/nvlink_domain.py``
"""

from __future__ import annotations

from dataclasses import dataclass

from _common import Cited, catalog, cite, fmt, report, table, verdict

from commwall.cluster import build_cluster
from commwall.collectives import Op, choose
from commwall.scenario import ClusterSpec

CLAIM = (
    "NVSwitch allows every GPU in a single rack (like the GB200 NVL72) to talk to every other GPU "
    "as if they were on the same chip, with massive 1.8 TB/s bidirectional bandwidth."
)
PRESET = "gb200-nvl72"
SIZE = 2**30
PER_GPU_CLAIM = 1.8e12  # bytes/s, bidirectional
AGGREGATE_QUOTED = 130e12  # bytes/s, NVIDIA's NVL72 figure


@dataclass(frozen=True)
class Row:
    op: str
    algo: str
    proto: str
    time: float
    algbw: float
    busbw: float


@dataclass(frozen=True)
class Numbers:
    gpus: int  # GPUs in one NVLink domain
    per_gpu: float  # bytes/s one way
    per_gpu_bidir: float
    aggregate_bidir: float  # gpus x per_gpu_bidir
    switch_aggregate_bidir: float  # switch chips x chip bandwidth (bidirectional)
    per_pair_all_to_all: float  # bytes/s one way, every GPU to every other at once
    nccl_per_gpu: float  # NCCL's per-GPU NVLink constant, one way
    rows: tuple[Row, ...]
    inputs: tuple[Cited, ...]

    @property
    def aggregate_ratio(self) -> float:
        return self.aggregate_bidir / AGGREGATE_QUOTED

    @property
    def holds(self) -> bool:
        return abs(self.per_gpu_bidir / PER_GPU_CLAIM - 1) <= 0.05 and (
            abs(self.aggregate_ratio - 1) <= 0.05
        )


def collectives() -> tuple[tuple[Row, ...], float]:
    """1 GiB all-reduce and all-to-all over one whole NVL72 domain; NCCL's per-GPU bandwidth."""
    cat = catalog()
    preset = cat.preset(PRESET)
    nodes = preset.scale_up_domain // preset.gpus_per_node
    cluster = build_cluster(ClusterSpec(preset=PRESET, nodes=nodes))
    fabric = cluster.world()
    assert fabric.n_domains == 1 and fabric.nranks == preset.scale_up_domain
    rows = []
    for op in (Op.ALL_REDUCE, Op.ALLTOALL, Op.ALL_GATHER):
        best = choose(op, SIZE, fabric).best
        rows.append(Row(op.value, best.algo, best.proto.value, best.time, best.algbw, best.busbw))
    return tuple(rows), cluster.intra_bw


def numbers() -> Numbers:
    cat = catalog()
    preset = cat.preset(PRESET)
    gpu = cat.gpu(preset.gpu)
    link = cat.nvlink(gpu.nvlink)
    chip = cat.nvswitch(preset.nvswitch)
    per_gpu = cat.nvlink_bandwidth(gpu)
    gpus = preset.scale_up_domain
    rows, nccl_bw = collectives()
    inputs = (
        cite(preset, "scale_up_domain", unit="GPUs"),
        cite(gpu, "nvlink_links", unit="links"),
        cite(link, "per_link_bandwidth", unit="B/s"),
        cite(preset, "nvswitch_count", unit="chips"),
        cite(chip, "bandwidth", unit="B/s"),
        cite(link, "nccl_link_bandwidth", unit="B/s"),
    )
    return Numbers(
        gpus=gpus,
        per_gpu=per_gpu,
        per_gpu_bidir=2 * per_gpu,
        aggregate_bidir=gpus * 2 * per_gpu,
        switch_aggregate_bidir=preset.nvswitch_count * chip.bandwidth,
        per_pair_all_to_all=per_gpu / (gpus - 1),
        nccl_per_gpu=nccl_bw,
        rows=rows,
        inputs=inputs,
    )


def main() -> None:
    n = numbers()
    answers = [
        ("per GPU, one way", fmt(n.per_gpu, "B/s")),
        ("per GPU, both ways", fmt(n.per_gpu_bidir, "B/s")),
        (f"{n.gpus} GPUs x both ways", fmt(n.aggregate_bidir, "B/s")),
        ("NVLink Switch chips x chip bw", fmt(n.switch_aggregate_bidir, "B/s")),
        ("aggregate / quoted 130 TB/s", fmt(n.aggregate_ratio, "x")),
        ("per pair, all-to-all at once", fmt(n.per_pair_all_to_all, "B/s") + " one way"),
        ("NCCL's per-GPU NVLink (18 x 40.1)", fmt(n.nccl_per_gpu, "B/s") + " one way"),
    ]
    print(
        report(
            "nvlink_domain",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"each of the {n.gpus} GPUs has {fmt(n.per_gpu_bidir, 'B/s')} both ways "
                f"({fmt(n.per_gpu, 'B/s')} each way); the domain aggregates "
                f"{fmt(n.aggregate_bidir, 'B/s')} ({n.aggregate_ratio:.3f}x the quoted 130 TB/s), "
                f"matching the switch side. 'Every GPU to every other at 1.8 TB/s' is per GPU in "
                f"total, not per pair ({fmt(n.per_pair_all_to_all, 'B/s')} per pair each way "
                f"when all talk at once).",
            ),
        )
    )
    print()
    print(f"1 GiB collectives over the whole {n.gpus}-GPU NVLink domain ({PRESET}):")
    print(
        table(
            ("op", "algo/proto", "time", "algbw", "busbw"),
            (
                (
                    r.op,
                    f"{r.algo}/{r.proto}",
                    fmt(r.time, "s"),
                    fmt(r.algbw, "B/s"),
                    fmt(r.busbw, "B/s"),
                )
                for r in n.rows
            ),
        )
    )


if __name__ == "__main__":
    main()
