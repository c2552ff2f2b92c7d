"""Chakra traces: the codec round-trips, commwall steps survive ET and back, PyTorch-shaped traces
become schedules, and no bytes make the reader raise anything but ChakraError (hypothesis)."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commwall.cluster import build_cluster
from commwall.collectives.constants import Proto
from commwall.collectives.ops import Op
from commwall.collectives.schedule import (
    CollectiveTask,
    ComputeTask,
    Group,
    Phase,
    Placement,
    Schedule,
)
from commwall.engines import get_engine
from commwall.errors import CommwallError
from commwall.io import chakra
from commwall.io.chakra import (
    ATTR_KINDS,
    Attr,
    ChakraError,
    ChakraWriteError,
    CommType,
    IOInfo,
    Node,
    NodeType,
    Trace,
    decode_trace,
    encode_trace,
    find_traces,
    read_traces,
)
from commwall.io.chakra_sample import pytorch_sample, write_sample
from commwall.scenario import load_scenario
from commwall.workload.chakra_step import schedule_to_traces, traces_to_schedule, write_schedule
from commwall.workload.job import resolve_job
from commwall.workload.step import build_step

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).parent / "testdata" / "chakra" / "pytorch"


def _roundtrip(traces: list[Trace]) -> list[Trace]:
    return [decode_trace(encode_trace(t), f"mem.{t.rank}.et", t.rank) for t in traces]


def test_doctests() -> None:
    assert doctest.testmod(chakra).failed == 0


def test_committed_fixture_is_the_generator_output() -> None:
    for t in pytorch_sample():
        assert Path(f"{FIXTURE}.{t.rank}.et").read_bytes() == encode_trace(t)


# ---- the codec --------------------------------------------------------------------------------

_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1), "sint32": (-(2**31), 2**31 - 1),
    "sfixed32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "sint64": (-(2**63), 2**63 - 1), "sfixed64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
    "fixed64": (0, 2**64 - 1),
}  # fmt: skip


def _scalar(t: str) -> st.SearchStrategy[object]:
    if t in _INT_RANGES:
        return st.integers(*_INT_RANGES[t])
    return {
        "double": st.floats(allow_nan=False),
        "float": st.floats(allow_nan=False, width=32),
        "bool": st.booleans(),
        "string": st.text(max_size=8),
        "bytes": st.binary(max_size=8),
    }[t]


@st.composite
def attrs(draw: st.DrawFn) -> Attr:
    kind = draw(st.sampled_from(ATTR_KINDS))
    base = _scalar(kind.rsplit("_", 1)[0])
    value = draw(st.lists(base, max_size=4).map(tuple) if kind.endswith("_list") else base)
    return Attr(draw(st.text(max_size=6)), kind, value, draw(st.text(max_size=3)))  # type: ignore[arg-type]


io_infos = st.none() | st.builds(IOInfo, *(st.text(max_size=5) for _ in range(4)))
u64 = st.integers(0, 2**64 - 1)
nodes = st.builds(
    Node, u64, st.text(max_size=8), st.integers(0, 12),
    st.lists(u64, max_size=3).map(tuple), st.lists(u64, max_size=3).map(tuple), u64, u64,
    io_infos, io_infos, st.lists(attrs(), max_size=4).map(tuple),
).filter(lambda n: n.id or n.name or n.type or n.attrs or n.data_deps or n.ctrl_deps
         or n.inputs or n.outputs or n.start_time_micros or n.duration_micros)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(nodes, max_size=5), st.lists(attrs(), max_size=3), st.text(min_size=1, max_size=5))
def test_any_trace_roundtrips(ns: list[Node], meta: list[Attr], version: str) -> None:
    trace = Trace(3, version, tuple(meta), tuple(ns))
    assert decode_trace(encode_trace(trace), "x", 3) == trace


def test_gzip_and_framing_errors(tmp_path: Path) -> None:
    import gzip

    data = encode_trace(pytorch_sample()[0])
    assert decode_trace(gzip.compress(data), "z") == decode_trace(data, "z")
    for blob, message in (
        (b"", "empty file"),
        (data[:-3], "truncated"),
        (data + b"\x00\x05", "zero-length message"),
        (b"\x1f\x8b\x00", "gzip"),
        (b"\x80" * 11, "longer than 10 bytes"),
        (data[:200] + b"\x0b\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" + data[200:], "node"),
    ):
        with pytest.raises(ChakraError, match=message) as info:
            decode_trace(blob, "bad.0.et")
        assert str(info.value).startswith("bad.0.et:")
    with pytest.raises(ChakraError, match="byte 0: truncated"):
        decode_trace(b"\x05ab", "f")
    with pytest.raises(ChakraWriteError, match="zero bytes") as info:
        encode_trace(Trace(0, "v", (), (Node(0, "", 0),)))
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_no_bytes_crash_the_reader(blob: bytes) -> None:
    _read_all_or_chakra_error([blob])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 3),
    st.lists(st.tuples(st.integers(0, 3200), st.integers(0, 255), st.sampled_from("fid")),
             min_size=1, max_size=4),
    st.integers(0, 3200),
)  # fmt: skip
def test_corrupted_traces_never_crash(rank: int, edits: list[tuple[int, int, str]],
                                      cut: int) -> None:  # fmt: skip
    blobs = [encode_trace(t) for t in pytorch_sample()]
    b = bytearray(blobs[rank])
    for pos, value, how in edits:
        pos %= len(b) + 1
        if how == "f" and pos < len(b):
            b[pos] = value
        elif how == "i":
            b.insert(pos, value)
        elif pos < len(b):
            del b[pos]
    blobs[rank] = bytes(b[: max(cut, 1)] if cut < len(b) // 2 else b)
    _read_all_or_chakra_error(blobs)


def _read_all_or_chakra_error(blobs: list[bytes]) -> None:
    try:
        traces = [decode_trace(b, f"f.{i}.et", i) for i, b in enumerate(blobs)]
        traces_to_schedule(traces, scale_up_domain=8, n_gpus=64)
    except ChakraError as e:
        assert str(e).startswith(("f.", "rank ", "(no traces)"))


# ---- commwall steps -> ET -> steps -------------------------------------------------------------


def _plan(name: str):  # type: ignore[no-untyped-def]
    sc = load_scenario(ROOT / "examples" / name)
    cluster = build_cluster(sc.cluster)
    job = resolve_job(sc.job, cluster)
    return cluster, job, build_step(job, cluster).schedule


@pytest.mark.parametrize(
    "name", ["llama3-8b-ddp-pcie.yaml", "llama3-70b-dgx-h100.yaml", "mixtral-8x7b-h200-roce.yaml"]
)
def test_example_steps_roundtrip_and_replay_alike(name: str) -> None:
    cluster, job, schedule = _plan(name)
    k = job.tp * job.dp
    traces = schedule_to_traces(schedule, world=job.n_gpus, ranks=range(0, job.n_gpus, k),
                                scale_up_domain=cluster.scale_up_domain)  # fmt: skip
    back = traces_to_schedule(_roundtrip(traces), scale_up_domain=cluster.scale_up_domain,
                              n_gpus=cluster.n_gpus)  # fmt: skip
    assert back == schedule
    engine = get_engine("analytic")
    assert engine.run(back, cluster).makespan == engine.run(schedule, cluster).makespan


def test_flow_replay_of_an_exported_step(tmp_path: Path) -> None:
    cluster, job, schedule = _plan("llama3-8b-ddp-pcie.yaml")
    write_schedule(str(tmp_path / "ddp"), schedule, world=job.n_gpus, ranks=[0, 5],
                   scale_up_domain=cluster.scale_up_domain)  # fmt: skip
    back = traces_to_schedule(read_traces([str(tmp_path / "ddp")]),
                              scale_up_domain=cluster.scale_up_domain)  # fmt: skip
    flow = get_engine("flow")
    assert flow.run(back, cluster, cluster.routing).makespan == pytest.approx(
        flow.run(schedule, cluster, cluster.routing).makespan, rel=1e-12
    )


def test_every_rank_holds_what_chakra_tools_read() -> None:
    """All 64 ranks of a DDP step: valid graphs, et_feeder's attribute names and types, each
    rank a member of its own process groups; the full set reads back too."""
    cluster, job, schedule = _plan("llama3-8b-ddp-pcie.yaml")
    traces = _roundtrip(schedule_to_traces(schedule, world=job.n_gpus))
    assert len(traces) == 64
    for t in traces:
        config = json.loads(str(t.value("pg_config")))
        mine = {c["pg_name"] for c in config if t.rank in c["ranks"]}
        for n in t.nodes:
            assert n.value("is_cpu_op") is False
            if n.type == NodeType.COMM_COLL_NODE:
                assert n.attr("comm_type").kind == "int64_val"  # type: ignore[union-attr]
                assert n.attr("comm_size").kind == "int64_val"  # type: ignore[union-attr]
                assert n.value("pg_name") in mine
            assert all(d < n.id for d in n.data_deps)
    assert traces_to_schedule(traces, scale_up_domain=cluster.scale_up_domain) == schedule


def test_sends_and_receives_pair_up_and_reshape_on_another_domain() -> None:
    cluster, job, schedule = _plan("llama3-70b-dgx-h100.yaml")
    traces = schedule_to_traces(schedule, world=job.n_gpus, ranks=[0, 256, 512, 768],
                                scale_up_domain=cluster.scale_up_domain)  # fmt: skip
    sends = [n for n in traces[0].nodes if n.type == NodeType.COMM_SEND_NODE]
    recvs = [n for n in traces[1].nodes
             if n.type == NodeType.COMM_RECV_NODE and n.value("comm_src") == 0]  # fmt: skip
    assert sends and [n.id for n in sends] == [n.id for n in recvs]
    assert {(n.value("comm_src"), n.value("comm_dst")) for n in sends} == {(0, 256)}
    # a cluster with 4-GPU domains reshapes the 8-rank TP group as 2 x 4
    small = traces_to_schedule(traces, scale_up_domain=4)
    tp = next(p.task for p in small.phases if p.category == "tp")
    assert isinstance(tp, CollectiveTask) and (tp.group.n_domains, tp.group.ranks_per_domain) == (
        2, 4)  # fmt: skip
    with pytest.raises(ChakraError, match=r"phases .* give at least one rank of every"):
        traces_to_schedule(traces[:1], scale_up_domain=8)  # stage 1 missing: phases gone


@st.composite
def schedules(draw: st.DrawFn) -> Schedule:
    """Small schedules on 8 ranks: compute on two lanes, collectives with canonical placements."""
    s = Schedule()
    for i in range(draw(st.integers(1, 8))):
        after = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        lane = draw(st.sampled_from(["a", "b"]))
        repeat = draw(st.integers(0, 3))
        if draw(st.booleans()):
            share = draw(st.none() | st.floats(0, 1))  # the SM-bound share, or none
            task: ComputeTask | CollectiveTask = ComputeTask(draw(st.floats(0, 1e-2)), share)
            stream = f"{lane}.compute"
        else:
            op = draw(st.sampled_from(list(Op)))
            if op is Op.SENDRECV:
                src, dst = draw(st.sampled_from([(0, 4), (4, 0), (1, 5)]))
                placement = Placement(2, dst - src, 1, (src,) if src != 1 else (1,))
            else:
                placement = draw(st.sampled_from([
                    Placement(4, 1, 1, (0, 4)), Placement(2, 4, 1, (0, 1, 2, 3)),
                    Placement(4, 4, 2, (0,)), Placement(8), None]))  # fmt: skip
            size = placement.size if placement else 8
            group = Group(draw(st.sampled_from(["tp", "dp"])), 1, size, placement)
            proto = draw(st.none() | st.sampled_from(list(Proto)))
            algo = draw(st.none() | st.just("ring"))
            task = CollectiveTask(op, draw(st.floats(0, 1e9)), group, algo, proto)
            stream = f"{lane}.{draw(st.sampled_from(['comm', 'compute']))}"
        s.add(Phase(f"p{i}", task, draw(st.sampled_from(["compute", "dp", "tp"])), stream,
                    after, repeat))  # fmt: skip
    return s


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_random_schedules_roundtrip(schedule: Schedule) -> None:
    traces = _roundtrip(schedule_to_traces(schedule, world=8, scale_up_domain=8))
    assert traces_to_schedule(traces, scale_up_domain=8) == schedule


def test_writing_a_schedule_refuses_bad_ranks() -> None:
    s = Schedule()
    s.add(Phase("ar", CollectiveTask(Op.ALL_REDUCE, 1e6, Group("dp", 1, 8, Placement(8))), "dp"))
    with pytest.raises(ChakraWriteError, match=r"ranks \[9\] are outside the job's 8 ranks"):
        schedule_to_traces(s, world=8, ranks=[0, 9])
    with pytest.raises(ChakraWriteError, match="beyond a world of 4") as info:
        schedule_to_traces(s, world=4)
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)


# ---- PyTorch-shaped traces --------------------------------------------------------------------


def test_pytorch_sample_becomes_a_schedule() -> None:
    s = traces_to_schedule(read_traces([str(FIXTURE)]), scale_up_domain=8, n_gpus=8)
    kinds = [(p.category, p.stream) for p in s.phases]
    assert ("compute", "r0.stream7") in kinds and ("p2p", "p2p0-2") in kinds
    assert len([p for p in s.phases if p.category == "compute"]) == 8  # host ops folded away
    world = next(p.task for p in s.phases if p.stream == "pg0")
    assert isinstance(world, CollectiveTask) and world.group.placement == Placement(4)
    assert world.group.name == "default_pg" and world.nbytes == 64 * 2**20
    tp = next(p for p in s.phases if p.stream == "pg2")
    recv = next(i for i, p in enumerate(s.phases) if p.stream == "p2p0-2")
    gemm2 = next(i for i, p in enumerate(s.phases) if p.stream == "r2.stream7")
    assert recv in s.phases[gemm2].after  # rank 2's GEMM waits for the activations
    assert isinstance(tp.task, CollectiveTask) and tp.task.group.placement == Placement(2, 1, 1,
                                                                                        (2,))  # fmt: skip


def _canonical(traces: list[Trace]) -> list[list[tuple[object, ...]]]:
    """Per rank, the modelled fields of the kept nodes, deps as positions among them."""
    out = []
    for t in traces:
        kept = [n for n in t.nodes if n.type in (4, 5, 6, 7) and n.value("is_cpu_op") is not True]
        pos = {n.id: i for i, n in enumerate(kept)}
        rows = []
        for n in kept:
            peer = n.value("comm_dst") if n.type == 5 else n.value("comm_src")
            rows.append((n.type, n.name, n.duration_micros if n.type == 4 else 0,
                         n.value("comm_type"), n.value("comm_size"), peer))  # fmt: skip
            rows[-1] += (tuple(sorted(pos[d] for d in n.data_deps if d in pos)),)
        out.append(rows)
    return out


def test_et_to_schedule_to_et_keeps_every_modelled_field() -> None:
    original = pytorch_sample()
    schedule = traces_to_schedule(original, scale_up_domain=8)
    again = schedule_to_traces(schedule, world=4, scale_up_domain=8)
    a, b = _canonical(original), _canonical(again)
    for rank in range(4):  # peers the converter left out are filled in; deps may only tighten
        assert [r[:5] for r in a[rank]] == [r[:5] for r in b[rank]]
        assert all(x[5] in (None, y[5]) for x, y in zip(a[rank], b[rank], strict=True))
    assert traces_to_schedule(again, scale_up_domain=8) == schedule
    assert _canonical(schedule_to_traces(traces_to_schedule(again, scale_up_domain=8),
                                         world=4)) == b  # fmt: skip


def _mutate(rank: int, index: int, **changes: object) -> list[Trace]:
    from dataclasses import replace

    traces = pytorch_sample()
    t = traces[rank]
    nodes = list(t.nodes)
    nodes[index] = replace(nodes[index], **changes)  # type: ignore[arg-type]
    traces[rank] = replace(t, nodes=tuple(nodes), source=f"pytorch.{rank}.et")
    return traces


@pytest.mark.parametrize(
    ("rank", "index", "changes", "message"),
    [
        (0, 3, {"id": 2}, "node id 2 is used again"),
        (0, 3, {"data_deps": (99,)}, "data_dep 99 names no node"),
        (0, 2, {"data_deps": (4,)}, "cycle"),
        (0, 5, {"attrs": (Attr.int64("comm_type", CommType.GATHER), Attr.int64("comm_size", 8),
                          Attr.string("pg_name", "1"))}, "comm_type 3 is not modelled"),
        (0, 5, {"attrs": (Attr.int64("comm_type", 0), Attr.int64("comm_size", 9),
                          Attr.string("pg_name", "1"))}, "but all_reduce of 9 bytes"),
        (0, 7, {"attrs": (Attr.int64("comm_size", 8), Attr.string("pg_name", "0"))},
         "peer is unknown"),
    ],
)  # fmt: skip
def test_bad_traces_name_file_node_and_reason(rank: int, index: int,
                                              changes: dict[str, object], message: str) -> None:  # fmt: skip
    with pytest.raises(ChakraError, match=message) as info:
        traces_to_schedule(_mutate(rank, index, **changes), scale_up_domain=8)
    assert "node " in str(info.value) and str(info.value).startswith(("pytorch.", "rank "))


@pytest.mark.parametrize("value", [Attr.double("commwall_sm_bound", 1.5),
                                   Attr.string("commwall_sm_bound", "most")])  # fmt: skip
def test_a_bad_sm_bound_is_named(value: Attr) -> None:
    from dataclasses import replace

    s = Schedule([Phase("c", ComputeTask(1e-3, sm_bound=0.5), "compute", "s0.compute")])
    (trace,) = schedule_to_traces(s, world=1, scale_up_domain=1)
    node = trace.nodes[0]
    attrs = tuple(value if a.name == "commwall_sm_bound" else a for a in node.attrs)
    assert attrs != node.attrs
    bad = replace(trace, nodes=(replace(node, attrs=attrs), *trace.nodes[1:]))
    with pytest.raises(ChakraError, match="commwall_sm_bound must be a share from 0 to 1"):
        traces_to_schedule(_roundtrip([bad]), scale_up_domain=1)


def test_more_ranks_than_gpus_and_odd_groups_are_refused() -> None:
    with pytest.raises(ChakraError, match="cluster has only 2 GPUs"):
        traces_to_schedule(pytorch_sample(), n_gpus=2)
    traces = pytorch_sample()
    odd = [{"pg_name": "0", "ranks": [0, 1, 3]}]
    from dataclasses import replace

    traces = [replace(t, attrs=(Attr.string("pg_config", json.dumps(odd)),)) for t in traces]
    with pytest.raises(ChakraError, match=r"ranks \[0, 1, 3\]: not expressible"):
        traces_to_schedule(traces)


def test_find_traces_by_prefix_directory_and_files(tmp_path: Path) -> None:
    paths = write_sample(tmp_path / "run")
    assert list(find_traces([str(tmp_path / "run")]).values()) == paths
    assert list(find_traces([str(tmp_path)])) == [0, 1, 2, 3]
    assert find_traces([str(paths[2])]) == {2: paths[2]}
    loose = tmp_path / "one.et"
    loose.write_bytes(paths[0].read_bytes())
    assert find_traces([str(paths[1]), str(loose)]) == {1: paths[1], 0: loose}
    (tmp_path / "other.0.et").write_bytes(b"")
    with pytest.raises(ChakraError, match="traces of 2 runs"):
        find_traces([str(tmp_path)])
    with pytest.raises(ChakraError, match="no such file"):
        find_traces([str(tmp_path / "missing")])
