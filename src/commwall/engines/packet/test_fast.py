"""The compiled kernel (fast.py) against the pure-Python reference: bit-identical results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from commwall.engines.base import InvariantError
from commwall.engines.packet import aot, fast, run_packet_traffic
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.network import Network, Task, graph_from_topology, route_maps
from commwall.engines.packet.result import summarise
from commwall.engines.packet.test_golden import CASES
from commwall.engines.packet.traffic import topology_routes, with_cable_latency
from commwall.topology import fat_tree, leaf_spine
from commwall.transport import TransportError, fabric_profile

pytest.importorskip("numba")

KIB = 1024
#: Golden cases: the compiled kernel covers them all (every fabric, any routing, bit errors).
GOLDEN = sorted(CASES)


def _fat_tree(k: int) -> Any:
    return with_cable_latency(fat_tree(k, link_rate=12.5e9), 1e-6)


def _leaf_spine() -> Any:
    return with_cable_latency(leaf_spine(8, 32, link_rate=12.5e9), 1e-6)


def _permutation(n: int, seed: int) -> tuple[list[int], list[int]]:
    order = np.random.default_rng(seed).permutation(n)
    dst = np.empty(n, dtype=np.int64)
    dst[order] = np.roll(order, -1)
    return list(range(n)), [int(x) for x in dst]


def _both(topology: Any, config: PacketConfig | None = None, fabric: str = "ib", **kw: Any) -> None:
    """Run with both kernels; every figure but the wall-clock ones must match exactly."""
    base = config or PacketConfig()
    out = {}
    for kernel in ("python", "numba"):
        cfg = PacketConfig(**{**base.__dict__, "kernel": kernel})
        result = run_packet_traffic(topology, config=cfg, fabric=fabric, **kw)
        assert result.kernel == kernel
        d = result.to_dict()
        assert d.pop("kernel", "python") == kernel
        for key in ("wall_s", "events_per_s"):
            d.pop(key)
        d["fct"] = result.fct.tolist()
        d["start"] = result.start.tolist()
        out[kernel] = d
    assert out["numba"] == out["python"]


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_cases(name: str) -> None:
    kw = dict(CASES[name])
    _both(kw.pop("topology")(), **kw)


def test_incast15_fat_tree4() -> None:
    _both(_fat_tree(4), src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=3)


def test_permutation_fat_tree4() -> None:
    src, dst = _permutation(16, 5)
    _both(_fat_tree(4), src=src, dst=dst, nbytes=300_000, seed=5)


def test_permutation_leaf_spine() -> None:
    src, dst = _permutation(32, 9)
    _both(_leaf_spine(), src=src, dst=dst, nbytes=200 * KIB, seed=9)


def test_incast127_fat_tree8_odd_config() -> None:
    odd = PacketConfig(cut_through=False, credit_period_s=0.3e-6, ack_every=4)
    _both(_fat_tree(8), odd, src=list(range(1, 128)), dst=[0] * 127, nbytes=64 * KIB, seed=1)


def test_window_and_uneven_sizes() -> None:
    """A window (max_inflight), sizes not a multiple of the MTU, a coarse sample interval."""
    cfg = PacketConfig(max_inflight=20 * KIB, mtu=1024, sample_s=3e-6, ack_every=3)
    sizes = [1, 4097, 70_001, 123_457]
    _both(_fat_tree(4), cfg, src=[1, 2, 3, 4], dst=[0, 0, 9, 9], nbytes=sizes, seed=2)


def test_timeouts_fire() -> None:
    """A tiny RTO: timers fire, go-back-N resends, duplicates and discards, NACKs."""
    kw: dict[str, Any] = dict(src=list(range(1, 8)), dst=[0] * 7, nbytes=64 * KIB, seed=4)
    _both(_fat_tree(4), rto_s=2e-6, **kw)
    numba = PacketConfig(kernel="numba")
    r = run_packet_traffic(_fat_tree(4), fabric="ib", rto_s=2e-6, config=numba, **kw)
    assert r.kernel == "numba"
    assert r.counters["timeouts"] > 0 and r.counters["retransmitted"] > 0


def test_a_run_without_progress_stops_as_in_python() -> None:
    """A link too slow for one packet per retransmission timeout: the compiled loop stops after
    64 fruitless timeouts in a row with the Python loop's error."""
    slow = with_cable_latency(leaf_spine(4, 8, link_rate=125.0), 1e-6)  # 1 kb/s
    for routing in ("ecmp", "spray"):
        with pytest.raises(InvariantError, match="made no progress over 64"):
            run_packet_traffic(
                slow, [2], [6], 100_000, "ib", routing=routing, config=PacketConfig(kernel="numba")
            )


def test_auto_falls_back_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    topo = _fat_tree(4)
    kw: dict[str, Any] = dict(src=[1, 2], dst=[0, 0], nbytes=64 * KIB)
    # small runs stay in Python (importing numba costs more than they take) ...
    assert run_packet_traffic(topo, fabric="ib", **kw).kernel == "python"
    # ... large ones in the subset compile
    monkeypatch.setattr(fast, "AUTO_MIN_EVENTS", 0)
    assert run_packet_traffic(topo, fabric="ib", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="roce", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="ib", routing="spray", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="uec", routing="spray", **kw).kernel == "numba"
    assert run_packet_traffic(topo, fabric="roce-nopfc", **kw).kernel == "numba"
    ber = PacketConfig(ber=1e-7)
    assert run_packet_traffic(topo, fabric="roce", config=ber, **kw).kernel == "numba"


def _chained_network() -> Network:
    """Three flows on a k=4 fat tree in tasks that wait for one another, with delays (as the
    packet engine's collective phases do), and an empty task between them."""
    topo = _fat_tree(4)
    profile = fabric_profile("ib", 12.5e9, 4096)
    net = Network(graph_from_topology(topo), profile, PacketConfig(),
                  switch_latency=0.0, routing="ecmp")  # fmt: skip
    flows = []
    for s, d in ((1, 0), (2, 0), (3, 5)):
        fwd = topology_routes(topo, [s], [d], "ecmp", 0)[0]
        rev = topology_routes(topo, [d], [s], "ecmp", 1)[0]
        flows.append(
            net.add_flow(s, d, 20_000, route_maps(fwd, net.ports), route_maps(rev, net.ports))
        )
    a = net.add_task(Task("a", 1000, [flows[0]]))
    b = net.add_task(Task("b", 0, [], after=(a,)))
    c = net.add_task(Task("c", 5_000_000, [flows[1]], after=(b,)))
    net.add_task(Task("d", 0, [flows[2]], after=(a, c)))
    return net


def test_tasks_that_wait_match_python() -> None:
    nets = [_chained_network(), _chained_network()]
    nets[0].run()
    fast.run_fast(nets[1])
    out = [
        [(t.ready, t.start, t.end, t.left, t.waiting) for t in net.tasks]
        + [summarise(net, wall_s=0.0, invariants=net.check()).to_dict()]
        for net in nets
    ]
    assert out[0] == out[1]
    ready = [t.ready for t in nets[1].tasks]
    assert ready[0] == 0 and ready[2] == nets[1].tasks[1].end
    assert nets[1].tasks[2].start == ready[2] + 5_000_000


def test_numba_outside_the_subset_raises() -> None:
    net = _chained_network()
    net.run()
    with pytest.raises(TransportError, match=r"kernel='numba'.*the network has already run"):
        fast.pick_kernel(net, "numba")
    assert fast.pick_kernel(net, "auto") == "python"


def test_bit_errors_and_link_retry_match_python() -> None:
    """Bit errors on the compiled loop: FCS drops recovered end to end, or link-level replays
    (``link_retry``) that delay everything behind them in the pipe — the draws from the
    network's own generator, event for event."""
    src, dst = _permutation(16, 13)
    kw: dict[str, Any] = dict(src=src, dst=dst, nbytes=256 * KIB, seed=13)
    for retry in (False, True):
        cfg = PacketConfig(ber=3e-7, link_retry=retry)
        for fabric in ("ib", "roce", "uec"):
            _both(_fat_tree(4), cfg, fabric=fabric, **kw)
        numba = PacketConfig(ber=3e-7, link_retry=retry, kernel="numba")
        r = run_packet_traffic(_fat_tree(4), fabric="ib", config=numba, **kw)
        assert r.kernel == "numba" and r.counters["corrupt_packets"] > 0
        assert (r.counters["link_replays"] > 0) == retry


@pytest.mark.parametrize("fabric", ["roce", "roce-nopfc"])
@pytest.mark.parametrize("routing", ["ecmp", "spray"])
def test_roce_pfc_ecn_cnps_and_dcqcn_match_python(fabric: str, routing: str) -> None:
    """RoCE on the compiled loop: PFC pauses and resumes (with PFC) or drops (without), ECN
    marks, CNPs at most one per flow per 50 µs, DCQCN's cuts, ticks and byte counter and the
    pacing they set — event for event."""
    small = PacketConfig(buffer=4096 * KIB)  # marks, pauses (or drops and timeouts): all of it
    kw: dict[str, Any] = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=512 * KIB, seed=7)
    _both(_fat_tree(4), config=small, fabric=fabric, routing=routing, **kw)
    numba = PacketConfig(buffer=4096 * KIB, kernel="numba")
    r = run_packet_traffic(_fat_tree(4), fabric=fabric, routing=routing, config=numba, **kw)
    assert r.kernel == "numba"
    assert r.counters["cnps_received"] > 0 and r.counters["ecn_marks"] > 0
    if fabric == "roce":
        assert r.counters["pause_frames_sent"] > 0 and r.counters["resume_frames_sent"] > 0
    else:
        assert r.counters["drop_packets"] > 0 and r.counters["timeouts"] > 0


def test_rate_caps_pace_as_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flows with a rate cap (Network.add_flow's ``cap``, as the packet engine gives a
    collective's chains) are paced by their own timer, with or without DCQCN."""
    add_flow = Network.add_flow

    def capped(self: Network, *args: Any, **kwargs: Any) -> Any:
        kwargs["cap"] = 3e9 if len(self.flows) % 2 == 0 else 0.0
        return add_flow(self, *args, **kwargs)

    monkeypatch.setattr(Network, "add_flow", capped)
    src, dst = _permutation(16, 3)
    for fabric in ("ib", "roce"):
        _both(_fat_tree(4), fabric=fabric, src=src, dst=dst, nbytes=200_000, seed=3)
    numba = PacketConfig(kernel="numba")
    r = run_packet_traffic(_fat_tree(4), src, dst, 200_000, "ib", config=numba)
    assert r.kernel == "numba"
    rates = 200_000 / r.fct  # bytes/s of each flow, started together
    assert np.all(rates[0::2] < 3e9) and np.all(rates[1::2] > 3e9)


@pytest.mark.parametrize("routing", ["spray", "adaptive"])
def test_per_packet_routing_matches_python(routing: str) -> None:
    """Spraying and adaptive routing on the compiled loop: every switch's choice, every
    out-of-order arrival at the selective receivers, event for event."""
    src, dst = _permutation(32, 11)
    _both(_leaf_spine(), src=src, dst=dst, nbytes=200_000, seed=11, routing=routing)
    _both(_fat_tree(4), src=list(range(1, 16)), dst=[0] * 15, nbytes=128 * KIB, seed=2,
          routing=routing)  # fmt: skip


@pytest.mark.parametrize("routing", ["ecmp", "spray"])
def test_lossy_drops_and_newreno_match_python(routing: str) -> None:
    """Lossy Ethernet on the compiled loop: switches drop what α × the free buffer refuses,
    NewReno halves on three duplicate ACKs and restarts on timeouts — event for event."""
    small = PacketConfig(buffer=256 * KIB)
    kw: dict[str, Any] = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=6)
    _both(_fat_tree(4), config=small, fabric="lossy", routing=routing, **kw)
    numba = PacketConfig(buffer=256 * KIB, kernel="numba")
    r = run_packet_traffic(_fat_tree(4), fabric="lossy", routing=routing, config=numba, **kw)
    assert r.kernel == "numba"
    assert r.counters["drop_packets"] > 0 and r.counters["retransmitted"] > 0


def test_uec_trims_marks_and_nscc_match_python() -> None:
    """UEC on the compiled loop: trimmed headers as control and their NACKs, ECN marks drawn
    from the network's own Mersenne Twister (handed back afterwards), NSCC — event for event."""
    kw: dict[str, Any] = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=256 * KIB, seed=8)
    _both(_fat_tree(4), fabric="uec", **kw)
    _both(_fat_tree(4), config=PacketConfig(buffer=192 * KIB), fabric="uec", **kw)
    src, dst = _permutation(32, 12)
    _both(_leaf_spine(), fabric="uec", src=src, dst=dst, nbytes=300_000, seed=12)
    r = run_packet_traffic(_fat_tree(4), fabric="uec", config=PacketConfig(kernel="numba"), **kw)
    assert r.kernel == "numba"
    assert r.counters["trim_packets"] > 0 and r.counters["ecn_marks"] > 0
    assert r.counters["repaths"] > 0


def test_selective_timeouts_resend_only_what_is_missing() -> None:
    """A tiny RTO under spraying: the selective sender queues only unacknowledged packets for
    retransmission (Sender._resend), as the Python loop does."""
    kw: dict[str, Any] = dict(src=list(range(1, 8)), dst=[0] * 7, nbytes=64 * KIB, seed=4)
    _both(_fat_tree(4), rto_s=2e-6, routing="spray", **kw)
    numba = PacketConfig(kernel="numba")
    r = run_packet_traffic(
        _fat_tree(4), fabric="ib", rto_s=2e-6, routing="spray", config=numba, **kw
    )
    assert r.kernel == "numba"
    assert r.counters["timeouts"] > 0 and r.counters["retransmitted"] > 0


def test_kernel_is_validated() -> None:
    with pytest.raises(TransportError, match=r"kernel='cuda'.*'auto', 'python', 'numba'"):
        PacketConfig(kernel="cuda")


@pytest.mark.parametrize(
    ("preset", "op", "algo"),
    [("dgx-h100", "all_reduce", "ring"), ("dgx-h100-roce", "all_gather", "ring"),
     ("dgx-h100", "all_reduce", "tree")],
)  # fmt: skip
def test_packet_engine_collectives_match_python(preset: str, op: str, algo: str) -> None:
    """The packet engine's collectives (phases that wait for one another, NVLink and PCIe
    credits, PXN legs, chains capped at their rate) on the compiled loop: the same result."""
    from commwall.cluster import cluster_from_option
    from commwall.collectives.ops import Op
    from commwall.collectives.schedule import CollectiveTask, Schedule
    from commwall.engines.communicators import world_group
    from commwall.engines.packet.engine import PacketEngine

    cl = cluster_from_option(preset, nodes=2, sharp=None, gdr=None)
    task = CollectiveTask(Op(op), 4e6, world_group(cl, cl.world(None)), algo, None)
    out = {}
    for kernel in ("python", "numba"):
        engine = PacketEngine(config=PacketConfig(kernel=kernel))
        result = engine.run(Schedule.single(task), cl, seed=5)
        packet = dict(result.details["packet"])
        assert packet.pop("kernel", "python") == kernel
        for volatile in ("wall_s", "events_per_s"):
            packet.pop(volatile)
        out[kernel] = (result.phases, result.makespan, result.counters, packet)
    assert out["numba"] == out["python"]


def _tiny_pools(net: Network) -> fast._Pools:
    """Pools just over the kernel's ROOM: every pool must grow while the run goes on."""
    room = fast._kernel().ROOM + 1
    return fast._Pools(heap=room, packets=room, timers=room, credits=room)


def _packings(monkeypatch: pytest.MonkeyPatch) -> list[fast._Pools]:
    """Start every run from tiny pools; the returned list gets the pools of each packing."""
    packs: list[fast._Pools] = []
    pack = fast._pack

    def counting(net: Network, pools: fast._Pools) -> tuple[Any, ...]:
        packs.append(fast._Pools(**pools.__dict__))  # (run_fast doubles one in place)
        return pack(net, pools)

    monkeypatch.setattr(fast, "_pools", _tiny_pools)
    monkeypatch.setattr(fast, "_pack", counting)
    return packs


@pytest.mark.parametrize("fabric", ["ib", "uec", "roce"])
def test_pools_grow_in_place(monkeypatch: pytest.MonkeyPatch, fabric: str) -> None:
    """Pools far too small grow as the run goes (ERR_ROOM, then on from where it stopped):
    one packing only, and the same results as the Python loop."""
    packs = _packings(monkeypatch)
    grown = []
    grow = fast._grow
    monkeypatch.setattr(fast, "_grow", lambda st, k: grown.append(1) or grow(st, k))
    src, dst = _permutation(16, 5)
    _both(_fat_tree(4), src=src, dst=dst, nbytes=300_000, seed=5, fabric=fabric,
          routing="spray")  # fmt: skip
    assert len(packs) == 1 and len(grown) >= 4


def test_pool_dry_mid_event_reruns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task starting more flows than the heap holds runs it dry halfway through one event:
    the run starts again with a larger heap, with the same results."""
    packs = _packings(monkeypatch)
    _both(_fat_tree(8), src=list(range(1, 128)), dst=[0] * 127, nbytes=16 * KIB, seed=2)
    assert len(packs) >= 2 and packs[-1].heap > packs[0].heap


def test_jit_loop_compiles_under_a_file_lock(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """numba writes its cache unlocked (numba#4807): the JIT loop's first compile or cache load
    in a process holds :data:`fast.COMPILE_LOCK`, so a sweep's workers on a cold cache take
    turns; a loop compiled already takes no lock."""
    import fcntl

    lock = tmp_path / "kernel.lock"
    monkeypatch.setattr(fast, "COMPILE_LOCK", lock)
    held = []

    class Dispatcher:
        def __init__(self) -> None:
            self.signatures: list[Any] = []

        def compile(self, signature: Any) -> None:
            # a second open file of the lock: blocked while the first holds it
            with open(lock, "a+b") as other, pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(signature)
            self.signatures = [signature]

    run = Dispatcher()

    class Kernel:
        def jit_all(self) -> Dispatcher:
            return run

    monkeypatch.setattr(fast, "_kernel", Kernel)
    st = (np.zeros((2, 3), dtype=np.int64), np.zeros(4))
    assert fast._jit_loop(st) is run
    assert len(held) == 1 and lock.exists()
    with open(lock, "a+b") as after:  # released
        fcntl.flock(after, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fast._jit_loop(st)  # compiled already: nothing to do
    assert len(held) == 1


def test_the_jit_loop_runs_where_the_module_cannot_be_built(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed build is remembered with its reason and the JIT loop runs; no second build is
    tried in later runs."""
    monkeypatch.setenv("COMMWALL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("COMMWALL_PACKET_AOT", raising=False)
    monkeypatch.setattr(fast, "_runner", None)
    builds = []

    def fail(directory: Any = None) -> str:
        builds.append(directory)
        where = aot.build_dir()
        where.mkdir(parents=True)
        (where / aot.FAILED).write_text("no C compiler\n")
        return "no C compiler"

    monkeypatch.setattr(aot, "build", fail)
    jit = object()
    monkeypatch.setattr(fast, "_jit_loop", lambda st: jit)
    assert fast.compiled_loop(()) == (jit, "jit")
    assert aot.failure() == "no C compiler"
    monkeypatch.setattr(fast, "_runner", None)  # a later process
    assert fast.compiled_loop(()) == (jit, "jit") and len(builds) == 1
    monkeypatch.setattr(fast, "_runner", None)
    monkeypatch.setenv("COMMWALL_PACKET_AOT", "0")  # asked for
    monkeypatch.setattr(aot, "load", lambda: pytest.fail("the module was looked for"))
    assert fast.compiled_loop(()) == (jit, "jit")


def test_a_failed_build_leaves_its_reason(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def child(*args: Any, **kw: Any) -> Any:
        return subprocess.CompletedProcess(args, 1, "", "error: command 'gcc' failed\n")

    monkeypatch.setattr(aot.subprocess, "run", child)
    why = aot.build(tmp_path)
    assert why is not None and "exited with 1" in why and "gcc" in why
    assert aot.failure(tmp_path) == why and aot.load(tmp_path) is None


def test_cache_directory_and_key(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMMWALL_CACHE_DIR", str(tmp_path / "c"))
    assert aot.build_dir().parent == tmp_path / "c" / "packet-kernel"
    monkeypatch.delenv("COMMWALL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert aot.cache_root() == tmp_path / "x" / "commwall"
    key = aot.cache_key()
    assert key == aot.cache_key() and len(key) == 24
    monkeypatch.setattr(aot, "_version", lambda dist: "9.9" if dist == "numba" else "1")
    aot.cache_key.cache_clear()
    try:
        assert aot.cache_key() != key  # another numba: another module
    finally:
        aot.cache_key.cache_clear()


def test_the_built_loop_runs_without_numba() -> None:
    """Where the module builds (a C compiler and Python's headers), a compiled run in a fresh
    process loads it and never imports numba, with the Python loop's results; the build (once
    per kernel version, ~1 minute) happens here if no earlier test made it."""
    import subprocess
    import sys

    if fast._locked(lambda: aot.failure() or aot.build()) is not None:
        pytest.skip(f"the ahead-of-time module cannot be built here: {aot.failure()}")
    code = (
        "import sys\n"
        "from commwall.engines.packet import PacketConfig, fast, run_packet_traffic\n"
        "from commwall.engines.packet.traffic import with_cable_latency\n"
        "from commwall.topology import fat_tree\n"
        "net = with_cable_latency(fat_tree(4, link_rate=12.5e9), 1e-6)\n"
        "kw = dict(src=list(range(1, 16)), dst=[0] * 15, nbytes=65536, fabric='uec', seed=1)\n"
        "a = run_packet_traffic(net, config=PacketConfig(kernel='numba'), **kw)\n"
        "b = run_packet_traffic(net, config=PacketConfig(kernel='python'), **kw)\n"
        "assert a.kernel == 'numba' and a.events == b.events and list(a.fct) == list(b.fct)\n"
        "print(fast._runner[1], 'numba' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["aot", "False"]


def test_the_built_loop_refuses_arrays_it_was_not_built_for() -> None:
    """numba's JIT compiles another version for other array types; the built module cannot, and
    would read them as the types it was built for: it refuses them (with what differs)."""
    ran = []
    checked = aot._Checked(lambda st: ran.append(st) or 0, [("<i8", 2), ("<f8", 1)])
    ints, floats = np.zeros((3, 2), dtype=np.int64), np.zeros(4)
    assert checked((ints, floats)) == 0 and len(ran) == 1
    with pytest.raises(aot.LayoutError, match=r"state array 1: \('<i8', 1\).*\('<f8', 1\)"):
        checked((ints, np.zeros(4, dtype=np.int64)))
    with pytest.raises(aot.LayoutError, match="state array 1: missing"):
        checked((ints,))
    with pytest.raises(aot.LayoutError, match="state array 0: not a writeable C-contiguous"):
        checked((np.zeros((2, 3), dtype=np.int64).T, floats))
    assert len(ran) == 1


def test_a_module_without_its_layout_is_not_loaded(tmp_path: Any) -> None:
    import importlib.machinery

    (tmp_path / f"{aot.MODULE_NAME}{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert aot.load(tmp_path) is None  # no layout.json beside it: rebuilt, never guessed
