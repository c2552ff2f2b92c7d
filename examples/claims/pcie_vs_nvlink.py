"""Claim: "PCIe Gen 5 x16: ~64 GB/s. NVIDIA NVLink (Blackwell era): 1.8 TB/s per GPU. The delta is
nearly 30x."

Two ratios from the catalog:

* the article's: NVLink5 per GPU *bidirectional* (18 links x 50 GB/s x 2) over PCIe Gen5 x16 *one
  way* (32 GT/s x 16 lanes x 128/130 / 8 bits) -- 1,800 / 63 = 28.6x;
* like for like (both one way, or both bidirectional): 900 / 63 = 14.3x.

And what it does to a collective: an 8 x B200 node (preset ``dgx-b200``) whose GPUs talk over
NVLink vs over PCIe Gen5 only (``scale_up: pcie``), a 1 GiB all-reduce, chosen by commwall's
NCCL-like tuner (the number ``commwall collective all_reduce --cluster dgx-b200`` prints).

Run: ``python examples/claims/pcie_vs_nvlink.py``
"""

from __future__ import annotations

from dataclasses import dataclass

from _common import Cited, catalog, cite, fmt, report, table, verdict

from commwall.cluster import build_cluster
from commwall.collectives import Op, choose
from commwall.scenario import ClusterSpec

CLAIM = (
    "PCIe Gen 5 x16: ~64 GB/s. NVIDIA NVLink (Blackwell era): 1.8 TB/s per GPU. "
    "The delta is nearly 30x."
)
GPU = "b200"
PCIE = "gen5"
PRESET = "dgx-b200"
SIZE = 2**30  # 1 GiB, the all-reduce the collective comparison uses
NEARLY_30 = (25.0, 32.0)  # what "nearly 30x" admits


@dataclass(frozen=True)
class AllReduce:
    """One all-reduce row as ``commwall collective`` prints it."""

    scale_up: str
    nranks: int
    intra_bw: float  # NCCL's per-GPU scale-up bandwidth, bytes/s per direction
    algo: str
    proto: str
    time: float
    algbw: float
    busbw: float


@dataclass(frozen=True)
class Numbers:
    pcie_x16: float  # bytes/s, one direction
    pcie_x16_bidir: float
    nvlink_per_gpu: float  # bytes/s, one direction (links x per-link)
    nvlink_per_gpu_bidir: float
    article_ratio: float  # nvlink bidirectional / pcie one way (what the article compares)
    like_for_like_ratio: float  # same direction convention on both sides
    nccl_ratio: float  # NCCL's own bandwidth constants (what its tuner sees)
    nvlink: AllReduce
    pcie: AllReduce
    inputs: tuple[Cited, ...]

    @property
    def busbw_ratio(self) -> float:
        return self.nvlink.busbw / self.pcie.busbw

    @property
    def holds(self) -> bool:
        return NEARLY_30[0] <= self.article_ratio <= NEARLY_30[1]


def all_reduce(scale_up: str) -> AllReduce:
    """A 1 GiB all-reduce on one 8-GPU dgx-b200 node, GPUs over NVLink or over PCIe Gen5 only."""
    spec = {"preset": PRESET, "nodes": 1, "scale_up": scale_up, "pcie": PCIE}
    cluster = build_cluster(ClusterSpec.model_validate(spec))
    fabric = cluster.world()
    best = choose(Op.ALL_REDUCE, SIZE, fabric).best
    return AllReduce(
        scale_up,
        fabric.nranks,
        cluster.intra_bw,
        best.algo,
        best.proto.value,
        best.time,
        best.algbw,
        best.busbw,
    )


def numbers() -> Numbers:
    cat = catalog()
    gpu = cat.gpu(GPU)
    link = cat.nvlink(gpu.nvlink)
    pcie = cat.pcie(PCIE)
    nvlink_per_gpu = cat.nvlink_bandwidth(gpu)
    inputs = (
        cite(pcie, "transfer_rate_gt_s", unit="GT/s"),
        cite(pcie, "x16_bandwidth", unit="B/s"),
        cite(pcie, "nccl_x16_bandwidth", unit="B/s"),
        cite(gpu, "nvlink_links", unit="links"),
        cite(link, "per_link_bandwidth", unit="B/s"),
        cite(link, "nccl_link_bandwidth", unit="B/s"),
    )
    return Numbers(
        pcie_x16=pcie.bandwidth(16),
        pcie_x16_bidir=2 * pcie.bandwidth(16),
        nvlink_per_gpu=nvlink_per_gpu,
        nvlink_per_gpu_bidir=2 * nvlink_per_gpu,
        article_ratio=2 * nvlink_per_gpu / pcie.bandwidth(16),
        like_for_like_ratio=nvlink_per_gpu / pcie.bandwidth(16),
        nccl_ratio=cat.nccl_nvlink_bandwidth(gpu) / pcie.nccl_bandwidth(16),
        nvlink=all_reduce("nvlink"),
        pcie=all_reduce("pcie"),
        inputs=inputs,
    )


def main() -> None:
    n = numbers()
    answers = [
        ("PCIe Gen5 x16, one way", fmt(n.pcie_x16, "B/s")),
        ("PCIe Gen5 x16, both ways", fmt(n.pcie_x16_bidir, "B/s")),
        ("NVLink5 per B200, one way", fmt(n.nvlink_per_gpu, "B/s")),
        ("NVLink5 per B200, both ways", fmt(n.nvlink_per_gpu_bidir, "B/s")),
        ("article's ratio (bidir / one way)", fmt(n.article_ratio, "x")),
        ("like-for-like ratio", fmt(n.like_for_like_ratio, "x")),
        ("NCCL's constants (18 x 40.1 / 48)", fmt(n.nccl_ratio, "x")),
        ("1 GiB all-reduce busbw ratio", fmt(n.busbw_ratio, "x")),
    ]
    rows = [
        (
            r.scale_up,
            str(r.nranks),
            fmt(r.intra_bw, "B/s"),
            f"{r.algo}/{r.proto}",
            fmt(r.time, "s"),
            fmt(r.algbw, "B/s"),
            fmt(r.busbw, "B/s"),
        )
        for r in (n.nvlink, n.pcie)
    ]
    print(
        report(
            "pcie_vs_nvlink",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"the article's arithmetic gives {n.article_ratio:.1f}x, inside "
                f"[{NEARLY_30[0]:g}, {NEARLY_30[1]:g}] for 'nearly 30x' -- but it divides a "
                f"bidirectional figure by a one-way one; like for like NVLink5 is "
                f"{n.like_for_like_ratio:.1f}x PCIe Gen5 x16, and a 1 GiB all-reduce on 8 "
                f"B200 runs {n.busbw_ratio:.1f}x faster over NVLink.",
            ),
            notes=(
                "~64 GB/s is the raw 32 GT/s x 16 lanes / 8; after 128b/130b encoding it is 63 GB/s.",
                "The PCIe-only node is a what-if: dgx-b200 GPUs with scale_up: pcie (Gen5 x16, "
                "NCCL's 48 GB/s); B200 itself has a Gen6 host interface.",
            ),
        )
    )
    print()
    print(f"all_reduce of 1 GiB on one {PRESET} node ({n.nvlink.nranks} x {GPU}):")
    print(
        table(
            ("scale-up", "ranks", "NCCL bw/GPU", "algo/proto", "time", "algbw", "busbw"),
            rows,
        )
    )


if __name__ == "__main__":
    main()
