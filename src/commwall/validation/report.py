"""The collective model against the bundled public measurements: errors per regime, op and scale.

:func:`validation_report` compares every bundled nccl-tests table (:mod:`commwall.validation.published`)
and summarises the busbw error ``(predicted − measured) / measured`` per message-size regime (below
1 MiB, 1–256 MiB, 256 MiB–1 GiB, from 1 GiB), per operation, per scale (nodes) and per role — the
``dev`` tables the model's structure was checked against and the ``held_out`` tables nobody
looked at until it was finished. No point was used to fit a constant. :func:`markdown_page` renders
``docs/validation.md``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Final

from commwall.validation.published import Measurement, compare, load_measurements

#: Size regimes, bytes: [low, high).
REGIMES: Final = (
    ("< 1 MiB", 0, 1 << 20),
    ("1–256 MiB", 1 << 20, 1 << 28),
    ("256 MiB–1 GiB", 1 << 28, 1 << 30),
    ("≥ 1 GiB", 1 << 30, 1 << 62),
)
#: Node-count bands for the per-scale table.
SCALES: Final = (("1 node", 1, 1), ("2 nodes", 2, 2), ("3–8 nodes", 3, 8), ("9+ nodes", 9, 1 << 30))
#: Measured busbw below this (GB/s) is too coarsely printed (two decimals) to score.
MIN_MEASURED_GBPS: Final = 0.5


#: How the run drove its GPUs: nccl-tests' ``-g 1`` (one process or thread per GPU, as training
#: jobs run) or ``-g N`` (one thread launching N GPUs' kernels in turn).
LAUNCH_ONE: Final = "1 GPU per process"
LAUNCH_MANY: Final = "several GPUs per process (-g N)"


def launch_of(gpus_per_process: int) -> str:
    """The launch-mode label of a run with ``gpus_per_process`` GPUs per process."""
    return LAUNCH_ONE if gpus_per_process <= 1 else LAUNCH_MANY


def regime_of(size: int) -> str:
    """The regime label of ``size`` bytes."""
    return next(name for name, lo, hi in REGIMES if lo <= size < hi)


def scale_of(nodes: int) -> str:
    """The scale label of ``nodes`` nodes."""
    return next(name for name, lo, hi in SCALES if lo <= nodes <= hi)


def stats(errors: Iterable[float]) -> dict[str, Any]:
    """Count, median |error|, 90th percentile |error|, worst, share within 10%, share
    optimistic (predicted above measured), median signed error."""
    values = list(errors)
    if not values:
        return {"n": 0}
    mags = sorted(abs(e) for e in values)
    p90 = mags[min(len(mags) - 1, int(0.9 * len(mags)))]
    return {
        "n": len(values),
        "median_abs": statistics.median(mags),
        "p90_abs": p90,
        "worst_abs": mags[-1],
        "within_10pct": sum(m <= 0.10 for m in mags) / len(mags),
        "optimistic": sum(e > 0 for e in values) / len(values),
        "median": statistics.median(values),
    }


def _status(m: Measurement) -> str | None:
    if not m.healthy:
        return "the source reports the run as broken or degraded"
    return m.not_compared


def validation_report(
    *, min_size: float = 0.0, max_size: float | None = None, op: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Every comparison as plain data, per-measurement summaries, the summaries per regime, op,
    scale and role, and the tables not compared with the reason."""
    rows: list[dict[str, Any]] = []
    measurements: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for m in load_measurements():
        if (op is not None and m.op != op) or (role is not None and m.role != role):
            continue
        why = _status(m)
        if why is not None:
            skipped.append({"id": m.id, "role": m.role, "source": m.source, "why": why})
            continue
        scored: list[dict[str, Any]] = []
        for c in compare(m):
            if c.size < min_size or (max_size is not None and c.size > max_size):
                continue
            measured = None if c.measured_busbw is None else c.measured_busbw / 1e9
            scorable = measured is not None and measured >= MIN_MEASURED_GBPS and not c.outlier
            error = c.busbw_error if scorable else None
            scored.append({
                "id": m.id, "role": m.role, "op": m.op, "gpu": m.gpu, "nodes": m.nodes,
                "ranks_per_node": m.gpus_per_node, "ranks": m.nodes * m.gpus_per_node,
                "fabric": m.fabric, "size": c.size, "regime": regime_of(c.size),
                "scale": scale_of(m.nodes), "launch": launch_of(m.gpus_per_process),
                "measured_busbw_GBps": measured,
                "predicted_busbw_GBps": c.predicted_busbw / 1e9, "error": error,
                "algo": f"{c.algo}/{c.proto}", "source": m.source, "outlier": c.outlier,
            })  # fmt: skip
        if not scored:
            skipped.append({"id": m.id, "role": m.role, "source": m.source,
                            "why": "no size the model runs this way falls in the range asked"})  # fmt: skip
            continue
        rows += scored
        per = {
            name: stats(
                r["error"] for r in scored if r["regime"] == name and r["error"] is not None
            )
            for name, _, _ in REGIMES
        }
        measurements.append({
            "id": m.id, "role": m.role, "system": m.system, "gpu": m.gpu, "op": m.op,
            "nodes": m.nodes, "ranks_per_node": m.gpus_per_node, "fabric": m.fabric,
            "nccl_version": m.nccl_version, "source": m.source, "points": len(scored),
            "median_error": {k: v.get("median") for k, v in per.items()},
        })  # fmt: skip
    return {
        "rows": rows,
        "measurements": measurements,
        "skipped": skipped,
        "summary": summarise(rows),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Error statistics per regime (all, and per role), per op × regime, per scale × regime,
    per launch mode × regime, and per op × regime for one-GPU-per-process runs alone."""
    scored = [r for r in rows if r["error"] is not None]
    one_gpu = [r for r in scored if r["launch"] == LAUNCH_ONE]
    return {
        "regime": {
            name: stats(r["error"] for r in scored if r["regime"] == name) for name, _, _ in REGIMES
        },
        "role": per_group(scored, "role"),
        "op": per_group(scored, "op"),
        "scale": per_group(scored, "scale"),
        "launch": per_group(scored, "launch"),
        "op_one_gpu_per_process": per_group(one_gpu, "op"),
        "points": len(scored),
        "measurements": len({r["id"] for r in scored}),
        "outliers": sum(1 for r in rows if r.get("outlier")),
    }


def per_group(scored: list[dict[str, Any]], key: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Error statistics per value of ``key`` × regime of already-scored rows."""
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in scored:
        groups[str(r[key])][r["regime"]].append(r["error"])
    return {k: {name: stats(v[name]) for name, _, _ in REGIMES} for k, v in sorted(groups.items())}


#: Where the model is known to miss, with what the data show (kept beside the tables so a
#: reader of docs/validation.md sees both).
KNOWN_GAPS: Final = (
    "**nccl-tests `-g N`** (one thread driving N GPUs): 1–256 MiB runs measure 20–60% slower "
    "than the model, which prices `-g N` only by its launch floor; the gap differs by system "
    "(small on H100 and on MGHPCC's one-node B200 run, large on A100 with 2020-era NCCL and on "
    "MIT ORCD's B200 nodes), so no constant is fitted.",
    "**All-to-all below ~16 MiB**: measured floors of 50–90 µs (8 A100 or B200 in one node, 16 "
    "ranks over two nodes) where the model's p2p pipeline gives 10–35 µs; the per-peer cost of "
    "grouped sends is not modelled.",
    "**Tree and ring LL128 between 4 and 64 MiB across nodes**: A100 over HDR and B200/H200 over "
    "400G RoCE run 20–40% below the model (NCCL's own tuner keeps an empirical mid-size tree "
    "correction for this); H100 over NDR is within ~15%.",
    "**GB200 at scale**: 20 NVL72 racks over InfiniBand (1,440 ranks) measured 406 GB/s at "
    "16 GiB where the model gives ~0.9 TB/s, as it does for 2 racks (810 measured); one rack's "
    "NVLS is within 10%.",
    "**Two MIT ORCD B200 nodes** (`-g 8`, two OS images; not compared since their runs' "
    "all_reduce fails the bandwidth rule): 2–8x slower than the model at 1–64 MiB and within "
    "6% from 1 GiB; the two images differ by 2x from each other, and the source traces it to "
    "a per-operation cost in the software stack it could not pin down.",
    "**Ring LL128 at 16 MiB in one B200 node**: MGHPCC's all-gather and reduce-scatter "
    "(`-g 8`, NCCL 2.29) measure 141–147 GB/s where the model's LL128 gives 297 and the sizes "
    "either side are within 19%.",
    "**All-to-all inside an NVLink domain**: eight H100 8–17% faster in the model from 32 MiB "
    "to 1 GiB (the model reaches the NVLink rate, runs 0.81 of it at 128–256 MiB and 0.94 at "
    "16 GiB); 64 GB300 of one NVL72 rack (16 trays) 2.4–3.8x faster at 0.5–16 MiB, where the "
    "run's busbw stays at 114–130 GB/s from 8 to 16 MiB. One B200 node and one or two GB300 trays are within ~20% from "
    "8 MiB. Every Blackwell table (B200 nodes, one and two GB300 trays, the 16-tray rack) "
    "misses most at 512 KiB a peer (+36 to +196%) and is within 30% at its next size (1 or "
    "2 MiB a peer), where NCCL has stopped sending with LL: `addP2pToPlan` takes LL up to `p2pnChannelsPerPeer` × "
    "`NCCL_P2P_LL_THRESHOLD` (32 × 16 KiB on these nodes), not 16 KiB per channel the send "
    "takes, as the model reads it; moving the model's threshold there makes it worse (its LL "
    "p2p copy, half the Simple rate, is ~2x faster than these runs' ~5 GB/s a channel), and "
    "no public LL p2p rate was found to price it.",
    "**Eight A100 in one node on LL and LL128 (1–16 MiB)**: 30–108% faster in the model, "
    "whose time there equals NCCL's own tuning estimate (4 MiB all_reduce: 73.8 µs against "
    "about 112 µs measured); from 32 MiB (Simple) 1–22% faster.",
)


def _cell(s: dict[str, Any]) -> str:
    if not s.get("n"):
        return "—"
    return f"{s['median_abs']:.1%} / {s['worst_abs']:.0%} ({s['n']})"


def _summary_lines(title: str, table: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    head = "| " + title + " | " + " | ".join(name for name, _, _ in REGIMES) + " |"
    lines = [head, "|---|" + "---:|" * len(REGIMES)]
    for key, per in table.items():
        lines.append(f"| {key} | " + " | ".join(_cell(per[name]) for name, _, _ in REGIMES) + " |")
    return lines


def markdown_page(data: dict[str, Any]) -> str:
    """``docs/validation.md``: summaries, one line per measurement, every point, the skipped."""
    from commwall.units import format_size

    s = data["summary"]
    lines = [
        "# Validation: commwall's collective model against public nccl-tests results",
        "",
        "Generated by `commwall validate --markdown > docs/validation.md` (a test keeps it current).",
        "Each table is one published nccl-tests run (`src/commwall/validation/nccl_tests_public.yaml`",
        "holds its numbers, its source and one verbatim row); commwall rebuilds the system from the",
        "catalog presets and what the source says of its NICs and NCCL settings, and predicts every",
        "measured size as `commwall collective` would (analytic engine, NCCL's algorithm choice).",
        "Error = (predicted − measured) / measured busbw; positive is optimistic.",
        "",
        "**What informed the model.** No measured point was used to fit a constant: the model's",
        "constants come from NCCL's source (v2.30.7) and maintainers' statements, each cited where it",
        "is used (`commwall.collectives`). Tables marked `dev` were looked at while the model's",
        "structure was chosen (which mechanisms matter: channel counts, chunking, per-slice",
        "synchronisation, the ring's slowest-hop pacing, NVLS volumes and the tuner's NVLS cap,",
        "trees' per-SM network rate, streaming broadcast chains); `held_out` tables were gathered",
        "the same way and compared once the model's structure stood. Looking at them added the",
        "per-launch-mode split below (a reporting change) and one mechanism, so the `held_out`",
        "figures are no longer blind: their two-node rings over IB and RoCE were 15–50% optimistic",
        "at 4–64 MiB on every table, which led to NCCL's proxy code, where a network step is sent",
        "only once the GPU has written all of it (store-and-forward; `net_hop` in",
        "`commwall.collectives.cost`). That mechanism adds no constant; it moved the held-out",
        "median at 1–256 MiB from 30.1% to 25.3% (dev: 11.8% to 12.1%). A second came the",
        "same way: multi-node tree all-reduces were 15–70% optimistic at 1–64 MiB on every dev and",
        "held-out table, where NCCL's tuner divides the tree's bandwidth by its measured",
        "`treeCorrectionFactor`; the model now does so for the time it reports too (`tree` in",
        "`commwall.collectives.tree`; held-out 1–256 MiB 22.9% to 18.9%, dev 12.1% to 11.6%).",
        "Eight `held_out` tables were added with it (ALCF Sophia's second two-node run of",
        "all_gather, all_reduce and alltoall, which were looked at first and show the same tree",
        "pattern; three single-node H100 tables of a second xxrjun cluster; AWS p5 over EFA and",
        "NERSC Perlmutter over Slingshot, listed but not compared). Five more `held_out` tables",
        "came later with the model unchanged, to cover what only `-g N` runs covered: broadcast,",
        "reduce and all_gather on four H100 nodes over NDR (Voltage Park) and a third ALCF",
        "two-node alltoall and all_gather, one GPU per process. Broadcast and reduce there are",
        "1.3-2x fast on LL128 at 4-16 MiB and 15-25% fast on Simple from 32 MiB; the whole set",
        "moved from 14.8% to 15.3% at 1-256 MiB. That pointed at the broadcast/reduce chain,",
        "which streamed through every hop: its network hops are now store-and-forward like every",
        "ring's (NCCL's proxy sends a step once it is written), which adds no constant and moved",
        "broadcast from 31.3% to 19.2% and reduce from 37.0% to 21.0% at 1-256 MiB (held-out",
        "20.0% to 16.9%; the whole set back to 14.8%). Reading NCCL 2.22's p2p code for the",
        "two-node all-to-all gap then showed that a send to another node runs Simple at any size",
        "(no LL buffers on network p2p connections) on buffers shared by the peers one node apart",
        "(2 steps each for 8 peers): all-to-all below 1 MiB moved from 272% to 162%, nothing",
        "else; its 1-16 MiB gap remains (the proxy's per-message work is not modelled).",
        "Last, every two-node ring on LL128 (dev and held-out: A100 over HDR, H100 over NDR,",
        "H200 and B200 over 400G RoCE) was 15-25% slow at 0.5-16 MiB: a 16-GPU all-gather's",
        "floor was 95-100 us where they measure 77-82. NCCL's per-step network latencies already",
        "hold the protocol's GPU work (ring LL128 minus LL is 1.3 us across nodes, as inside a",
        "node), and the model added that work to each network step again; it no longer does",
        "(`net_hop`). No constant: all_gather 16.9% to 14.8% and all_reduce 10.8% to 9.9% at",
        "1-256 MiB, two nodes 16.8% to 13.4%; but the four-node H100 all-gather, fine at 4-16 MiB",
        "before, is now 27-29% fast there, and the already fast broadcast/reduce chains and trees",
        "moved 2-5 points further (broadcast 19.2% to 23.8%; three to eight nodes 8.8% to 11.4%).",
        "Six `held_out` tables found after that were added with the model unchanged (Voltage",
        "Park's four-node H100 all_reduce, a two-node Azure A100 all_reduce under AKS, a",
        "three-node A100 all_reduce over four HDR NICs per node at 22-85 MiB from nccl-tests#119,",
        "a third MIT ORCD B200 node pair's all_reduce and reduce_scatter with `-g 8`, and a",
        "two-node H200 all_gather from dranet; that all_reduce and that all_gather fail the 75%",
        "rule): 1-256 MiB 13.0% to 13.9%, held-out 16.7% to 17.1%. They repeat the known gaps:",
        "multi-node tree/LL128 all-reduces fast at 2-128 MiB (+19% to +40% on the A100 and H100",
        "tables), two-node `-g 8` B200 collectives 4-6x slow at 1-64 MiB; and the three-node A100",
        "ring is 20-25% slow at 22-33 MiB. A second search then added five more `held_out`",
        "tables, model unchanged: two two-node GKE H200 all_gathers over Google's gIB plugin",
        "(NCCL 2.26), which run rings faster than any model here (LL 35-44 us for 16 ranks, 20-35%",
        "below the model at 1-8 MiB) and reach 7-8% less than it from 1 GiB, and three more ALCF",
        "A100 runs (two all_gathers within 17%, an alltoall with the known gap): 1-256 MiB 14.1%,",
        "held-out 15.7%, from 1 GiB 5.0%. One entry was then corrected: a Together AI H100",
        'reduce_scatter run with `-g 8` (its log reads "nThread 1 nGpus 8") had been entered as one',
        "GPU per process; with the launch floor its rows below 4 MiB went from +83-142% to +4-29%",
        "(reduce_scatter below 1 MiB 100% to 8.3%, at 1-256 MiB 25.0% to 21.5%). Fourteen",
        "GB300 NVL72 and B300 tables (Oracle's OCI quickstarts and Google Cloud's A4X Max, NCCL",
        "2.28) followed, ten compared blind: inside a GB300 rack the NVLink all-to-alls are",
        "13-238% fast at 1-64 MiB and the all-reduces up to 41% on one or two trays, 12-111% on",
        "64 GPUs (1-256 MiB 12.7% to 13.9%). Four more `held_out` tables, model unchanged, came",
        "from MIT ORCD's DGX H100 summary (NCCL 2.29; mean busbw over six nodes or three node",
        "pairs, 1 MiB to 16 GiB): one node with `-g 8` within 2% (all_reduce) and 11% (sendrecv)",
        "at 1-256 MiB; two nodes with one GPU each, all_reduce within 1-10% and sendrecv 18-21%",
        "slow at every size: the model gives that peer two p2p channels (its reading of NCCL's",
        "`ncclTopoComputeP2pChannels` for a communicator of one rank per node) at half an SM's",
        "copy rate each, where the run reaches the 400G line rate (1-256 MiB 13.9% to 13.8%).",
        "Five more `held_out` tables, model unchanged, came from MGHPCC's AICR benchmarks: one",
        "B200 node with `-g 8` (NCCL 2.29), reduce_scatter, all_gather, alltoall, broadcast and",
        "reduce from 1 MiB to 16 GiB. Broadcast and reduce are within 11% at every size (1-256",
        "MiB: broadcast 23.8% to 15.3%, reduce 21.0% to 12.9% over all tables), the ring",
        "all-gather and reduce-scatter within 19% but at 16 MiB, where they measure half the",
        "model's LL128 rate, and the all-to-all 17-36% fast at 1 MiB-1 GiB (the known gap);",
        "1-256 MiB 13.8% to 13.6%. Three two-node tables of the same cluster are listed but",
        "not compared: its own diagnosis (`diag-aicr-gdrdma.md`) finds GPUDirect RDMA degraded",
        "on those nodes. The in-node all-to-all gap on Blackwell then led to the p2p copy rate:",
        "the model copied a p2p channel at half of NCCL's one-node Simple tree cap, 70 GB/s on",
        "Blackwell, where B200 `sendrecv_perf` tables (dev: Together AI at 16-32 GiB; held-out,",
        "so no longer blind: MIT ORCD at 64-256 MiB) move 20-21 GB/s a channel, as H100s do. A",
        "block's p2p copy over NVLink on Blackwell is now Hopper's cap times NCCL's per-channel",
        "LL128 ring caps (40.0 / 36.7), 21.1 GB/s a send half (`p2p_block_bw` in",
        "`commwall.collectives.cost`; no constant fitted), and an all-to-all whose parts outnumber",
        "the p2p channels (8 a peer from 128 MiB in a node) splits the channels' warps instead of",
        "dropping parts; network sends keep the old rate (their copy is local). All-to-all at",
        "1-256 MiB 22.3% to 15.0%, sendrecv 8.7% to 8.5%, all 13.6% to 12.6%, from 1 GiB 5.3%",
        "to 4.4%; no table moved more than 5 points the wrong way.",
        "Last, a data rule, not a model change: tables logged by one run now share its",
        "all_reduce's verdict under the 75% bandwidth rule, which checks the run's fabric. It",
        "takes out nine tables of three MIT ORCD two-node B200 jobs (`-g 8`) whose all_reduce",
        "already failed the rule and whose source finds a per-operation cost of unknown origin in",
        "every channel-split collective (2-8x slow at 1-64 MiB, 2x apart between two OS images",
        "on the same hardware): 1-256 MiB 12.6% to 11.8%, reduce_scatter 20.3% to 12.7%,",
        "broadcast 15.3% to 13.3%, all-to-all 15.0% to 13.7%, from 1 GiB 4.4% to 4.3%. The",
        "model's predictions did not move.",
        "Then the channels a communicator runs across nodes, read from NCCL's graph search",
        "(`search.cc` v2.29.2, `commwall.collectives.nccl.inter_node_ring_channels`): the model",
        "gave every NIC two, where `ncclTopoDupChannels` doubles a search's channels once more",
        "when a node's ranks drive at most four 400G NICs (or any 800G NIC), so a communicator of",
        "one H100 a node runs four channels and four p2p channels to its peer. MIT ORCD's two-node",
        "sendrecv went from 16-21% slow at every size to 1-3% from 16 MiB (6-11% at 1-4 MiB) and",
        "its all_reduce from -10..+8% to -7..+11%; the GKE B200 all_gather of one GPU a node over",
        "RoCE, already 20-74% optimistic from 2 MiB, moved 3-4 points further from 16 MiB and",
        "35-42 at 256-512 KiB, its 1 MiB point from -36% to -9%:",
        "sendrecv at 1-256 MiB 8.6% to 6.8%, all 11.8% to 11.5%, below 1 MiB 22.2% to 23.4%,",
        "from 1 GiB 4.3% to 4.2%. No other table moved.",
        "",
        f"{s['points']} points from {s['measurements']} tables. Cells: median |error| / worst |error|",
        "(points).",
        "",
        "## Per size regime",
        "",
        "| | " + " | ".join(name for name, _, _ in REGIMES) + " |",
        "|---|" + "---:|" * len(REGIMES),
        "| all | " + " | ".join(_cell(s["regime"][name]) for name, _, _ in REGIMES) + " |",
    ]
    lines += _summary_lines("role", s["role"])[2:]
    lines += ["", "## Per operation", "", *_summary_lines("op", s["op"])]
    lines += ["", "## Per scale", "", *_summary_lines("nodes", s["scale"])]
    lines += [
        "",
        "## Per launch mode",
        "",
        "nccl-tests `-g N` runs one thread that launches N GPUs' kernels in turn; training jobs",
        "run one process per GPU (`-g 1`). The model prices `-g N` only by its launch floor",
        "(`commwall.collectives.nccl.nccl_tests_time`), and such runs measure slower than that",
        "between 1 and 256 MiB, so both are shown, and the operations again for `-g 1` alone.",
        "",
    ]
    lines += _summary_lines("launch", s["launch"])
    lines += ["", "", *_summary_lines("op, 1 GPU per process", s["op_one_gpu_per_process"])]
    lines += [
        "",
        "## Per table",
        "",
        "Median signed error per regime; every point follows in the details.",
        "",
        "| table | role | op | GPU | nodes × ranks | fabric | < 1 MiB | 1–256 MiB | 256 MiB–1 GiB | ≥ 1 GiB | source |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for m in data["measurements"]:
        med = m["median_error"]
        cells = " | ".join(
            "—" if med[name] is None else f"{med[name]:+.0%}" for name, _, _ in REGIMES
        )
        lines.append(
            f"| {m['id']} | {m['role']} | {m['op']} | {m['gpu']} | {m['nodes']} × "
            f"{m['ranks_per_node']} | {m['fabric']} | {cells} | {m['source']} |"
        )
    lines += ["", "<details><summary>Every point</summary>", "",
              "| table | size | measured busbw (GB/s) | predicted (GB/s) | error | algo/proto |",
              "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in data["rows"]:
        measured = "—" if r["measured_busbw_GBps"] is None else f"{r['measured_busbw_GBps']:.2f}"
        error = "—" if r["error"] is None else f"{r['error']:+.0%}"
        if r.get("outlier"):
            error = "outlier†"
        lines.append(
            f"| {r['id']} | {format_size(r['size'])} | {measured} | "
            f"{r['predicted_busbw_GBps']:.2f} | {error} | {r['algo']} |"
        )
    lines += ["", "</details>", ""]
    outliers = [r for r in data["rows"] if r.get("outlier")]
    if outliers:
        lines += [
            f"† {len(outliers)} points are not scored: each is over 20% slower than a larger size "
            "of the same table, which a collective cannot be (a hiccup during the run), so the "
            "data file records why and the report leaves them out.",
            "",
        ]
    lines += ["## Known gaps", ""] + [f"- {g}" for g in KNOWN_GAPS] + [""]
    if data["skipped"]:
        lines += ["## Not compared", ""]
        lines += [
            f"- {x['id']} ({x['role']}): {x['why']}. Source: {x['source']}" for x in data["skipped"]
        ]
        lines.append("")
    return "\n".join(lines)
