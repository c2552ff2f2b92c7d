"""Chakra execution traces ↔ commwall step schedules (:class:`~commwall.collectives.schedule.Schedule`).

**Reading** (:func:`traces_to_schedule`), one set of per-rank traces; rank ``r`` runs on GPU ``r``:

* **Kept nodes.** ``COMP_NODE`` → :class:`ComputeTask` of ``duration_micros``, unless the node
  says ``is_cpu_op = true`` (the PyTorch converter marks every host operator so; a node without
  the attribute counts as GPU work). ``COMM_COLL_NODE`` → :class:`CollectiveTask`: the op from
  ``comm_type`` (``REDUCE_SCATTER_BLOCK`` → reduce_scatter, ``BARRIER`` → all_reduce, as NCCL
  runs a barrier; ``GATHER``/``SCATTER`` are refused), the bytes from ``comm_size`` read as
  nccl-tests' size of the op. ``COMM_SEND_NODE``/``COMM_RECV_NODE`` → one ``sendrecv`` on the
  two-rank group ``[src, dst]``; a send and a receive pair up by ``(comm_src, comm_dst,
  comm_tag)`` in order (the peer may come from a two-rank process group when the converter wrote
  no ``comm_src``/``comm_dst``).
* **Folded nodes.** Everything else (host operators, ``METADATA_NODE``, memory, storage, …) is
  dropped and its ``data_deps`` pass through to the nodes that wait for it. ``ctrl_deps`` are the
  PyTorch call tree and, as in Chakra's ``et_feeder``, do not order execution.
* **Calls.** The k-th collective of process group ``pg_name`` on every member rank is one call
  (NCCL issues a communicator's collectives in the same order on every rank): one phase whose
  dependencies are every member's. Its members come from the process-group table — the
  ``## process_group:init ##`` metadata node of PyTorch traces (PyTorch's ``pg_config_info``:
  ``ranks`` empty means every rank) or commwall's ``pg_config`` metadata attribute, the same
  JSON — or, failing both, from the ranks whose traces use that ``pg_name`` (Chakra
  ``pg_extractor``'s rule). Members must form a :class:`Placement` (equal blocks at a fixed
  stride), else :class:`ChakraError`.
* **Streams.** Compute on ``r<rank>.stream<n>`` from the converter's ``stream`` attribute (else
  ``r<rank>.compute``); a process group's calls share stream ``pg<name>`` (PyTorch runs each
  communicator on its own NCCL stream); point-to-point on ``p2p<src>-<dst>``.
* **Shape.** ``n_domains × ranks_per_domain`` from the members and the cluster's scale-up domain
  of ``D`` consecutive GPUs (the most members in one domain per domain, as
  :func:`commwall.workload.layout.group_shape`).

**Writing** (:func:`schedule_to_traces`): every phase becomes nodes on the ranks that take part —
members of a collective's placement (a collective without one: ranks ``0…n−1``), the two ends of a
``sendrecv`` (``COMM_SEND_NODE`` on the source, ``COMM_RECV_NODE`` on the destination, tag = the
phase index), and for compute the ranks of its *lane* (the stream up to its first ``.``, as
``s0`` of ``s0.compute``): the members of the lane's collectives and senders of its sends;
rank ``n`` for a lane ``r<n>`` without collectives (the reader's per-rank streams); else every
rank. A phase of ``repeat`` n is n nodes, each waiting for the one
before. ``data_deps`` hold the phase's ``after`` dependencies present on that rank plus the
previous node of the same stream (Chakra has no streams). Written per node: ``is_cpu_op``
(false), ``duration_micros`` (compute), ``comm_type``/``comm_size``/``pg_name``/``pg_desc``,
``comm_src``/``comm_dst``/``comm_tag`` — the attribute names and value types ``et_feeder``
reads. What Chakra cannot say (seconds and bytes below a µs or a byte, repeat, stream names,
categories, the exact ``after`` list, group shape and placement, algorithm and protocol, the
SM-bound share of compute that collectives beside it slow) goes in
``commwall_*`` attributes, which other tools ignore; a trace that carries them is read back
exactly, from any set of ranks that covers every lane (one rank per pipeline stage).
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from commwall._version import __version__
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
from commwall.io.chakra import (
    SCHEMA_VERSION,
    Attr,
    ChakraError,
    ChakraWriteError,
    CommType,
    Node,
    NodeType,
    Trace,
    encode_metadata,
    encode_node,
)

__all__ = [
    "COMM_OPS",
    "OP_COMM",
    "check_graph",
    "pg_table",
    "schedule_to_traces",
    "traces_to_schedule",
    "write_schedule",
]

#: commwall operation → ``CollectiveCommType`` (sendrecv is a send/recv node pair).
OP_COMM: Final = {
    Op.ALL_REDUCE: CommType.ALL_REDUCE,
    Op.REDUCE: CommType.REDUCE,
    Op.ALL_GATHER: CommType.ALL_GATHER,
    Op.BROADCAST: CommType.BROADCAST,
    Op.ALLTOALL: CommType.ALL_TO_ALL,
    Op.REDUCE_SCATTER: CommType.REDUCE_SCATTER,
}
#: ``CollectiveCommType`` → commwall operation (GATHER and SCATTER have none).
COMM_OPS: Final = {
    **{c: op for op, c in OP_COMM.items()},
    CommType.REDUCE_SCATTER_BLOCK: Op.REDUCE_SCATTER,
    CommType.BARRIER: Op.ALL_REDUCE,
}
_PG_INIT = "process_group:init"
_COMM_TYPES: Final = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


# ==== writing ====================================================================================


@dataclass
class _Role:
    kind: str  # "c" compute, "m" collective member, "s" send, "r" receive
    pg: str = ""
    peer: int = -1


def _members(task: CollectiveTask) -> list[list[int]]:
    p = task.group.placement
    if p is None:
        return [list(range(task.group.nranks))]
    return [[int(x) for x in row] for row in p.members().tolist()]


def _lane(stream: str) -> str:
    return stream.split(".", 1)[0]


class _Writer:
    def __init__(self, schedule: Schedule, world: int | None, domain: int | None) -> None:
        self.schedule, self.domain = schedule, domain
        self.pgs: dict[tuple[int, ...], tuple[str, str]] = {}  # members -> (pg_name, desc)
        self.pg_ranks: dict[str, tuple[int, ...]] = {}
        self.roles: list[dict[int, _Role]] = []
        lanes: dict[str, set[int]] = defaultdict(set)
        for phase in schedule.phases:
            if isinstance(phase.task, CollectiveTask):
                rows = _members(phase.task)
                if phase.task.op is Op.SENDRECV and len(rows[0]) != 2:
                    raise ChakraWriteError(
                        f"phase {phase.name!r}: sendrecv needs a two-rank group, got {len(rows[0])}"
                    )
                senders = [r[0] for r in rows] if phase.task.op is Op.SENDRECV else None
                lanes[_lane(phase.stream)].update(senders or (x for r in rows for x in r))
        top = max((max(v) for v in lanes.values() if v), default=-1)
        self.world = world if world is not None else top + 1 or 1
        if top >= self.world:
            raise ChakraWriteError(
                f"the schedule reaches rank {top}, beyond a world of {self.world}"
            )
        for phase in schedule.phases:
            self.roles.append(self._roles(phase, lanes))
        self.first_id: list[int] = []
        n = 0
        for phase in schedule.phases:
            self.first_id.append(n)
            n += max(1, phase.repeat)
        self.cache: dict[tuple[Any, ...], Node] = {}

    def _roles(self, phase: Phase, lanes: dict[str, set[int]]) -> dict[int, _Role]:
        task = phase.task
        if isinstance(task, ComputeTask):
            lane = _lane(phase.stream)
            own = re.fullmatch(r"r(\d+)", lane)  # the reader's per-rank lanes
            ranks = sorted(lanes.get(lane) or ([int(own[1])] if own else range(self.world)))
            return {r: _Role("c") for r in ranks}
        roles: dict[int, _Role] = {}
        for row in _members(task):
            key = tuple(sorted(row))
            pg = self.pgs.setdefault(key, (str(len(self.pgs)), task.group.name))[0]
            self.pg_ranks[pg] = key
            if task.op is Op.SENDRECV:
                pairs = [(row[0], _Role("s", pg, row[1])), (row[1], _Role("r", pg, row[0]))]
            else:
                pairs = [(r, _Role("m", pg)) for r in row]
            for r, role in pairs:
                if r in roles:
                    raise ChakraWriteError(
                        f"phase {phase.name!r}: rank {r} appears twice in its placement"
                    )
                roles[r] = role
        return roles

    def last_id(self, index: int) -> int:
        return self.first_id[index] + max(1, self.schedule.phases[index].repeat) - 1

    def trace(self, rank: int) -> Trace:
        nodes: list[Node] = []
        stream_last: dict[str, int] = {}
        used_pgs: dict[str, tuple[int, ...]] = {}
        for i, phase in enumerate(self.schedule.phases):
            role = self.roles[i].get(rank)
            if role is None:
                continue
            deps = [self.last_id(j) for j in phase.after if rank in self.roles[j]]
            owns_stream = role.kind != "r"
            if owns_stream and phase.stream in stream_last:
                deps.append(stream_last[phase.stream])
            deps = list(dict.fromkeys(deps))
            if role.pg:
                used_pgs[role.pg] = self.pg_ranks[role.pg]
            for k in range(max(1, phase.repeat)):
                key = (i, k, role.kind, role.pg, role.peer, tuple(deps) if k == 0 else ())
                node = self.cache.get(key)
                if node is None:
                    node = self._node(i, k, role, rank, deps)
                    self.cache[key] = node
                nodes.append(node)
            if owns_stream:
                stream_last[phase.stream] = self.last_id(i)
        config = [
            {"pg_name": pg, "pg_desc": self.pgs[m][1], "ranks": list(m), "group_size": len(m)}
            for pg, m in sorted(used_pgs.items(), key=lambda kv: int(kv[0]))
        ]
        attrs = [
            Attr.string("generator", f"commwall {__version__}"),
            Attr.int64("rank", rank),
            Attr.int64("world_size", self.world),
            Attr.string("pg_config", json.dumps(config, separators=(",", ":"))),
            Attr.int64("commwall_phases", len(self.schedule.phases)),
        ]
        if self.domain is not None:
            attrs.append(Attr.int64("commwall_scale_up_domain", self.domain))
        return Trace(rank, SCHEMA_VERSION, tuple(attrs), tuple(nodes))

    def _node(self, i: int, k: int, role: _Role, rank: int, deps: list[int]) -> Node:
        phase = self.schedule.phases[i]
        task = phase.task
        node_id = self.first_id[i] + k
        data_deps = tuple(deps) if k == 0 else (node_id - 1,)
        attrs: list[Attr] = [Attr.boolean("is_cpu_op", False), Attr.int64("commwall_phase", i)]
        if k == 0:
            attrs += [
                Attr.int64("commwall_repeat", phase.repeat),
                Attr.string("commwall_stream", phase.stream),
                Attr.string("commwall_category", phase.category),
                Attr.int64_list("commwall_after", phase.after),
            ]
        if isinstance(task, ComputeTask):
            if k == 0:
                attrs.append(Attr.double("commwall_seconds", task.seconds))
                if task.sm_bound is not None:
                    attrs.append(Attr.double("commwall_sm_bound", task.sm_bound))
            micros = max(0, round(task.seconds * 1e6))
            return Node(node_id, phase.name, NodeType.COMP_NODE, (), data_deps, 0, micros,
                        attrs=tuple(attrs))  # fmt: skip
        size = max(0, round(task.nbytes))
        if task.op is Op.SENDRECV:
            src, dst = (rank, role.peer) if role.kind == "s" else (role.peer, rank)
            kind = NodeType.COMM_SEND_NODE if role.kind == "s" else NodeType.COMM_RECV_NODE
            attrs += [Attr.int32("comm_src", src), Attr.int32("comm_dst", dst),
                      Attr.int32("comm_tag", i)]  # fmt: skip
        else:
            kind = NodeType.COMM_COLL_NODE
            attrs.append(Attr.int64("comm_type", OP_COMM[task.op]))
        attrs += [
            Attr.int64("comm_size", size),
            Attr.string("pg_name", role.pg),
            Attr.string("pg_desc", task.group.name),
        ]
        if k == 0:
            group, p = task.group, task.group.placement
            attrs += [
                Attr.double("commwall_nbytes", task.nbytes),
                Attr.int64_list("commwall_group", (group.n_domains, group.ranks_per_domain)),
            ]
            if p is not None:
                spec = (p.size, p.stride, p.per_block, *p.bases)
                attrs.append(Attr.int64_list("commwall_placement", spec))
            if task.algo is not None:
                attrs.append(Attr.string("commwall_algo", task.algo))
            if task.proto is not None:
                attrs.append(Attr.string("commwall_proto", task.proto.value))
        return Node(node_id, phase.name, kind, (), data_deps, attrs=tuple(attrs))


def _rank_list(writer: _Writer, ranks: Iterable[int] | None) -> list[int]:
    chosen = list(range(writer.world)) if ranks is None else sorted(set(ranks))
    bad = [r for r in chosen if not 0 <= r < writer.world]
    if bad:
        raise ChakraWriteError(f"ranks {bad} are outside the job's {writer.world} ranks")
    return chosen


def schedule_to_traces(
    schedule: Schedule,
    *,
    world: int | None = None,
    ranks: Iterable[int] | None = None,
    scale_up_domain: int | None = None,
) -> list[Trace]:
    """Per-rank Chakra traces of ``schedule`` (see the module docstring).

    ``world``: ranks of the job (default: one past the highest rank any placement names);
    ``ranks``: which ranks to write (default all); ``scale_up_domain``: the domain size the
    group shapes were computed for, recorded so a reader on another cluster reshapes them.
    Nodes shared by several ranks are the same objects. Raises ValueError for a schedule that
    cannot be written (a rank twice in one placement, a sendrecv that is not two ranks).
    """
    writer = _Writer(schedule, world, scale_up_domain)
    return [writer.trace(r) for r in _rank_list(writer, ranks)]


def write_schedule(
    prefix: str,
    schedule: Schedule,
    *,
    world: int | None = None,
    ranks: Iterable[int] | None = None,
    scale_up_domain: int | None = None,
) -> list[str]:
    """Write ``<prefix>.<rank>.et`` for every chosen rank; the paths written."""
    from pathlib import Path

    writer = _Writer(schedule, world, scale_up_domain)
    encoded: dict[int, bytes] = {}  # a node shared by many ranks is encoded once
    paths = []
    for r in _rank_list(writer, ranks):
        trace = writer.trace(r)
        parts = [encode_metadata(trace)]
        for node in trace.nodes:
            blob = encoded.get(id(node))
            if blob is None:
                blob = encoded[id(node)] = encode_node(node)
            parts.append(blob)
        path = Path(f"{prefix}.{r}.et")
        path.write_bytes(b"".join(parts))
        paths.append(str(path))
    return paths


# ==== reading ====================================================================================


@dataclass
class _Instance:
    """One kept node of one rank."""

    trace: Trace
    index: int  # position in the file
    node: Node
    pos: int  # position among the rank's kept nodes
    deps: list[tuple[Any, ...]] = field(default_factory=list)  # keys, filled later


@dataclass
class _Call:
    key: tuple[Any, ...]
    instances: list[_Instance] = field(default_factory=list)


def _err(inst: _Instance, reason: str) -> ChakraError:
    return ChakraError(inst.trace.source or f"rank {inst.trace.rank}", reason, node=inst.index)


def _int(node: Node, name: str) -> int | None:
    v = node.value(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(node: Node, name: str) -> str | None:
    v = node.value(name)
    return v if isinstance(v, str) else None


def pg_table(traces: Sequence[Trace]) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Process-group members and descriptions from PyTorch's init node or commwall's attribute."""
    members: dict[str, list[int]] = {}
    desc: dict[str, str] = {}
    for t in traces:
        world = _int_meta(t, "world_size") or len(traces)
        blobs: list[tuple[str, int | None]] = []
        cfg = t.value("pg_config")
        if isinstance(cfg, str):
            blobs.append((cfg, None))
        for i, n in enumerate(t.nodes):
            if _PG_INIT in n.name and n.inputs is not None:
                blobs.append((n.inputs.values, i))
        for text, index in blobs:
            for entry in _pg_entries(text):
                name = str(entry.get("pg_name", ""))
                ranks = entry.get("ranks")
                size = entry.get("group_size", entry.get("pg_size"))
                if not isinstance(ranks, list) or not all(
                    isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in ranks
                ):
                    where = t.source or f"rank {t.rank}"
                    raise ChakraError(where, f"process group {name!r}: bad ranks", node=index)
                if not ranks:  # PyTorch: every rank
                    n_all = size if isinstance(size, int) and size > 0 else world
                    ranks = list(range(n_all))
                members.setdefault(name, list(ranks))
                if isinstance(entry.get("pg_desc"), str):
                    desc.setdefault(name, entry["pg_desc"])
    return members, desc


def _int_meta(t: Trace, name: str) -> int | None:
    v = t.value(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _pg_entries(text: str) -> list[dict[str, Any]]:
    """The dicts of a pg_config JSON, also as the converter prints it (``['[{...}]']``)."""
    import ast

    candidates: list[Any] = []
    for parse in (json.loads, ast.literal_eval):
        try:
            candidates.append(parse(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    out: list[dict[str, Any]] = []
    stack = candidates
    depth = 0
    while stack and depth < 4:
        nxt: list[Any] = []
        for c in stack:
            if isinstance(c, dict) and "pg_name" in c:
                out.append(c)
            elif isinstance(c, list | tuple):
                nxt.extend(c)
            elif isinstance(c, str) and c[:1] in "[{":
                try:
                    nxt.append(json.loads(c))
                except ValueError:
                    continue
        if out:
            return out
        stack, depth = nxt, depth + 1
    return out


def check_graph(t: Trace) -> list[int]:
    """Node indices in a dependency order; raises on duplicate ids, missing deps or a cycle."""
    where = t.source or f"rank {t.rank}"
    index: dict[int, int] = {}
    for i, n in enumerate(t.nodes):
        if n.id in index:
            raise ChakraError(where, f"node id {n.id} is used again (first at node {index[n.id]})",
                              node=i)  # fmt: skip
        index[n.id] = i
    indegree = [0] * len(t.nodes)
    users: list[list[int]] = [[] for _ in t.nodes]
    for i, n in enumerate(t.nodes):
        for d in dict.fromkeys(n.data_deps):
            if d not in index:
                raise ChakraError(where, f"data_dep {d} names no node of this trace", node=i)
            if d == n.id:
                raise ChakraError(where, f"node {n.id} waits for itself", node=i)
            indegree[i] += 1
            users[index[d]].append(i)
    ready = [i for i, k in enumerate(indegree) if k == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(t.nodes):
        stuck = next(i for i, k in enumerate(indegree) if k > 0)
        raise ChakraError(where, "data_deps form a cycle through this node", node=stuck)
    return order


def _kept(n: Node) -> bool:
    if n.type in _COMM_TYPES:
        return True
    return n.type == NodeType.COMP_NODE and n.value("is_cpu_op") is not True


class _Reader:
    def __init__(self, traces: Sequence[Trace], domain: int | None, n_gpus: int | None) -> None:
        self.traces, self.domain, self.n_gpus = traces, domain, n_gpus
        self.pg_members, self.pg_desc = pg_table(traces)
        self.calls: dict[tuple[Any, ...], _Call] = {}
        self.recorded_domain: dict[int, int | None] = {
            t.rank: _int_meta(t, "commwall_scale_up_domain") for t in traces
        }
        ranks = [t.rank for t in traces]
        if len(set(ranks)) != len(ranks):
            raise ChakraError(traces[0].source, "two traces claim the same rank")
        self.scan: dict[str, set[int]] = defaultdict(set)
        for t in traces:
            for n in t.nodes:
                pg = _str(n, "pg_name")
                if pg is not None and n.type in _COMM_TYPES:
                    self.scan[pg].add(t.rank)

    # ---- per rank: kept nodes, their deps through folded nodes, their call keys -------------

    def load(self, t: Trace) -> None:
        order = check_graph(t)
        index = {n.id: i for i, n in enumerate(t.nodes)}
        through: dict[int, tuple[int, ...]] = {}  # node index -> kept node indices it stands for
        kept_deps: dict[int, tuple[int, ...]] = {}
        for i in order:
            n = t.nodes[i]
            acc: dict[int, None] = {}
            for d in n.data_deps:
                acc.update(dict.fromkeys(through[index[d]]))
            kept_deps[i] = tuple(acc)
            through[i] = (i,) if _kept(n) else kept_deps[i]
        counters: dict[tuple[Any, ...], int] = defaultdict(int)
        keys: dict[int, tuple[Any, ...]] = {}
        pos = 0
        mine: list[_Instance] = []
        for i, n in enumerate(t.nodes):
            if not _kept(n):
                continue
            inst = _Instance(t, i, n, pos)
            pos += 1
            key = self._key(inst, counters)
            keys[i] = key
            inst.deps = [] if key[0] == "phase" else [("dep", d) for d in kept_deps[i]]
            self.calls.setdefault(key, _Call(key)).instances.append(inst)
            mine.append(inst)
        for inst in mine:  # this rank's deps, as call keys
            inst.deps = [keys[d[1]] for d in inst.deps if d[0] == "dep"]

    def _key(self, inst: _Instance, counters: dict[tuple[Any, ...], int]) -> tuple[Any, ...]:
        n, rank = inst.node, inst.trace.rank
        phase = _int(n, "commwall_phase")
        if phase is not None:
            return ("phase", phase)
        if n.type == NodeType.COMP_NODE:
            return ("node", rank, n.id)
        pg = _str(n, "pg_name") or ""
        c: tuple[Any, ...]
        if n.type == NodeType.COMM_COLL_NODE:
            c = ("coll", pg)
        else:
            src, dst = self._peers(inst, pg)
            c = ("p2p", src, dst, _int(n, "comm_tag") or 0, n.type == NodeType.COMM_SEND_NODE)
        k = counters[c]
        counters[c] += 1
        return ("coll", pg, k) if c[0] == "coll" else ("p2p", *c[1:4], k)

    def _peers(self, inst: _Instance, pg: str) -> tuple[int, int]:
        n, rank = inst.node, inst.trace.rank
        send = n.type == NodeType.COMM_SEND_NODE
        peer = _int(n, "comm_dst" if send else "comm_src")
        if peer is None:
            members = self.pg_members.get(pg) or sorted(self.scan.get(pg, ()))
            others = [m for m in members if m != rank]
            if len(members) != 2 or len(others) != 1:
                what = "comm_dst" if send else "comm_src"
                raise _err(inst, f"{n.type_name} without {what}, and process group {pg!r} has "
                                 f"{len(members)} ranks, not 2: the peer is unknown")  # fmt: skip
            peer = others[0]
        if peer < 0 or peer == rank:
            raise _err(inst, f"{n.type_name}: peer rank {peer} is not another rank")
        return (rank, peer) if send else (peer, rank)

    # ---- calls -> phases ------------------------------------------------------------------

    def schedule(self) -> Schedule:
        for t in self.traces:
            self.load(t)
        self._check_complete()
        specs = {key: self._phase(call) for key, call in self.calls.items()}
        deps: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for key, call in self.calls.items():
            if key[0] == "phase":
                after = specs[key][1]
                missing = [j for j in after if ("phase", j) not in self.calls]
                if missing:
                    raise _err(call.instances[0], f"waits for commwall phase {missing[0]}, "
                                                  "which no given trace holds")  # fmt: skip
                deps[key] = [("phase", j) for j in after]
            else:
                acc: dict[tuple[Any, ...], None] = {}
                for inst in call.instances:
                    acc.update(dict.fromkeys(d for d in inst.deps if d != key))
                deps[key] = list(acc)
        order = self._order(deps)
        where = {key: i for i, key in enumerate(order)}
        out = Schedule()
        for key in order:
            phase, _ = specs[key]
            after = tuple(where[d] for d in deps[key]) if key[0] != "phase" else phase.after
            out.add(Phase(phase.name, phase.task, phase.category, phase.stream, after,
                          phase.repeat))  # fmt: skip
        return out

    def _check_complete(self) -> None:
        phases = sorted(k[1] for k in self.calls if k[0] == "phase")
        expected = max((_int_meta(t, "commwall_phases") or 0 for t in self.traces), default=0)
        expected = max(expected, phases[-1] + 1 if phases else 0)
        if phases and len(phases) != expected:
            gap = next(i for i in range(expected) if ("phase", i) not in self.calls)
            t = self.traces[0]
            raise ChakraError(
                t.source or f"rank {t.rank}",
                f"these traces hold {len(phases)} of the step's {expected} commwall phases "
                f"(phase {gap} is on no given rank): give at least one rank of every "
                "pipeline stage",
            )

    def _order(self, deps: dict[tuple[Any, ...], list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
        def priority(key: tuple[Any, ...]) -> tuple[int, int, int]:
            if key[0] == "phase":
                return (int(key[1]), 0, 0)
            first = min(self.calls[key].instances, key=lambda x: (x.pos, x.trace.rank))
            return (first.pos, first.trace.rank, first.index)

        users: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
        waiting = {k: len(v) for k, v in deps.items()}
        for k, v in deps.items():
            for d in v:
                users[d].append(k)
        ready = [(priority(k), k) for k, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        order: list[tuple[Any, ...]] = []
        while ready:
            _, k = heapq.heappop(ready)
            order.append(k)
            for u in users[k]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, (priority(u), u))
        if len(order) < len(deps):
            stuck = next(k for k, n in waiting.items() if n > 0)
            raise _err(self.calls[stuck].instances[0], "the ranks wait for each other in a "
                       "cycle here (collectives issued in different orders?)")  # fmt: skip
        return order

    def _phase(self, call: _Call) -> tuple[Phase, tuple[int, ...]]:
        """The phase of a call (``after`` filled later) and, for commwall phases, ``after``."""
        first = min(call.instances, key=lambda x: (x.trace.rank, x.index))
        if call.key[0] == "phase":
            return self._commwall_phase(call, first)
        n, rank = first.node, first.trace.rank
        if call.key[0] == "node":
            stream = _int(n, "stream")
            name = f"r{rank}.compute" if stream is None else f"r{rank}.stream{stream}"
            return Phase(n.name, ComputeTask(n.duration_micros * 1e-6), "compute", name), ()
        size = _int(n, "comm_size")
        if size is None or size < 0:
            raise _err(first, f"{n.type_name} without a comm_size of 0 or more bytes")
        if call.key[0] == "p2p":
            _, src, dst, _, _ = call.key
            send = next((x for x in call.instances if x.node.type == NodeType.COMM_SEND_NODE),
                        first)  # fmt: skip
            group = self._group(f"p2p{src}-{dst}", [[src, dst]], first, None)
            task = CollectiveTask(Op.SENDRECV, float(size), group)
            return Phase(send.node.name, task, "p2p", f"p2p{src}-{dst}"), ()
        pg = call.key[1]
        op = self._op(first)
        for inst in call.instances:
            if self._op(inst) is not op or _int(inst.node, "comm_size") != size:
                raise _err(inst, f"call {call.key[2]} of process group {pg!r} is "
                           f"{self._op(inst).value} of {_int(inst.node, 'comm_size')} bytes here "
                           f"but {op.value} of {size} bytes on rank {rank}")  # fmt: skip
        members = self.pg_members.get(pg) or sorted(
            {x.trace.rank for x in call.instances} | self.scan.get(pg, set())
        )
        name = self.pg_desc.get(pg) or _str(n, "pg_desc") or f"pg{pg}"
        group = self._group(name, [members], first, pg)
        return Phase(n.name, CollectiveTask(op, float(size), group), "collective", f"pg{pg}"), ()

    def _op(self, inst: _Instance) -> Op:
        code = _int(inst.node, "comm_type")
        try:
            return COMM_OPS[CommType(code if code is not None else -1)]
        except (ValueError, KeyError):
            allowed = ", ".join(c.name for c in COMM_OPS)
            raise _err(inst, f"comm_type {code} is not modelled by commwall (allowed: "
                       f"{allowed})") from None  # fmt: skip

    def _group(self, name: str, rows: list[list[int]], inst: _Instance, pg: str | None) -> Group:
        top = max(max(r) for r in rows)
        if self.n_gpus is not None and top >= self.n_gpus:
            raise _err(inst, f"rank {top} takes part, but the cluster has only {self.n_gpus} "
                       "GPUs (rank r runs on GPU r)")  # fmt: skip
        placement = _placement(rows)
        if placement is None:
            what = f"process group {pg!r}" if pg is not None else "the group"
            raise _err(inst, f"{what} has ranks {rows[0]}: not expressible as a commwall "
                       "Placement (equal blocks of consecutive ranks at a fixed stride)")  # fmt: skip
        n_domains, per = _shape(rows, self.domain)
        return Group(name, n_domains, per, placement)

    def _commwall_phase(self, call: _Call, first: _Instance) -> tuple[Phase, tuple[int, ...]]:
        head = next((x for x in call.instances if x.node.attr("commwall_repeat") is not None),
                    None)  # fmt: skip
        if head is None:
            raise _err(first, "commwall node without its phase's first node on this rank")
        n = head.node
        repeat, stream = _int(n, "commwall_repeat"), _str(n, "commwall_stream")
        category, after = _str(n, "commwall_category"), n.value("commwall_after")
        if repeat is None or repeat < 0 or stream is None or category is None:
            raise _err(head, "commwall node without commwall_repeat/stream/category")
        if not isinstance(after, tuple) or not all(
            isinstance(j, int) and 0 <= j < call.key[1] for j in after
        ):
            raise _err(head, "commwall_after must list earlier phase indices")
        if n.type == NodeType.COMP_NODE:
            seconds = n.value("commwall_seconds")
            if not isinstance(seconds, float) or not seconds >= 0:
                seconds = n.duration_micros * 1e-6
            share = n.value("commwall_sm_bound")
            if share is not None and not (isinstance(share, float) and 0.0 <= share <= 1.0):
                raise _err(head, "commwall_sm_bound must be a share from 0 to 1")
            task: CollectiveTask | ComputeTask = ComputeTask(seconds, sm_bound=share)
        else:
            task = self._commwall_task(head)
        return Phase(n.name, task, category, stream, after, repeat), after

    def _commwall_task(self, head: _Instance) -> CollectiveTask:
        n = head.node
        op = self._op(head) if n.type == NodeType.COMM_COLL_NODE else Op.SENDRECV
        nbytes = n.value("commwall_nbytes")
        if not isinstance(nbytes, float) or not nbytes >= 0:
            nbytes = float(_int(n, "comm_size") or 0)
        shape, spec = n.value("commwall_group"), n.value("commwall_placement")
        if not (isinstance(shape, tuple) and len(shape) == 2 and all(
                isinstance(x, int) and x >= 1 for x in shape)):  # fmt: skip
            raise _err(head, "commwall_group must be [n_domains, ranks_per_domain]")
        placement = None
        if spec is not None:
            try:
                assert isinstance(spec, tuple) and len(spec) >= 4
                placement = Placement(spec[0], spec[1], spec[2], tuple(spec[3:]))
            except (AssertionError, ValueError, TypeError, OverflowError):
                raise _err(head, f"commwall_placement {spec!r} is not a placement") from None
            rows = placement.members().tolist()
            if self.n_gpus is not None and max(max(r) for r in rows) >= self.n_gpus:
                raise _err(head, f"rank {max(max(r) for r in rows)} takes part, but the "
                           f"cluster has only {self.n_gpus} GPUs")  # fmt: skip
        recorded = self.recorded_domain.get(head.trace.rank)
        n_domains, per = shape
        if placement is not None and self.domain is not None and recorded != self.domain:
            n_domains, per = _shape(placement.members().tolist(), self.domain)
        name = _str(n, "pg_desc") or "group"
        algo = _str(n, "commwall_algo")
        proto_name = _str(n, "commwall_proto")
        try:
            proto = Proto(proto_name) if proto_name is not None else None
        except ValueError:
            raise _err(head, f"commwall_proto {proto_name!r} is not a protocol") from None
        try:
            group = Group(name, n_domains, per, placement)
        except ValueError as e:
            raise _err(head, str(e)) from None
        return CollectiveTask(op, nbytes, group, algo, proto)


def _placement(rows: list[list[int]]) -> Placement | None:
    """The canonical placement whose copies are ``rows`` (fewest per block), or None."""
    first = rows[0]
    size = len(first)
    offsets = [m - first[0] for m in first]
    for per_block in (d for d in range(1, size + 1) if size % d == 0):
        stride = offsets[per_block] if size > per_block else 1
        if stride == 0:
            continue
        if any(offsets[i] != (i // per_block) * stride + i % per_block for i in range(size)):
            continue
        try:
            p = Placement(size, stride, per_block, tuple(r[0] for r in rows))
        except ValueError:
            return None
        return p if p.members().tolist() == rows else None
    return None


def _shape(rows: list[list[int]], domain: int | None) -> tuple[int, int]:
    """``(n_domains, ranks_per_domain)`` of a group over domains of ``domain`` GPUs (None: every
    rank its own domain)."""
    size = len(rows[0])
    if domain is None:
        return size, 1
    per = max(max(sum(1 for r in row if r // domain == d) for d in {r // domain for r in row})
              for row in rows)  # fmt: skip
    return math.ceil(size / per), per


def traces_to_schedule(
    traces: Sequence[Trace],
    *,
    scale_up_domain: int | None = None,
    n_gpus: int | None = None,
) -> Schedule:
    """One step schedule from per-rank traces (rank ``r`` on GPU ``r``; module docstring).

    ``scale_up_domain``: GPUs per scale-up domain of the cluster to replay on (group shapes);
    ``n_gpus``: the cluster's GPUs, to refuse traces that need more. Raises :class:`ChakraError`.
    """
    if not traces:
        raise ChakraError("(no traces)", "no traces given")
    return _Reader(traces, scale_up_domain, n_gpus).schedule()
