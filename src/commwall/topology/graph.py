"""The ``Topology`` type: nodes and directed links as compact numpy arrays, a networkx view outside.

Conventions (engines rely on them):

* Nodes are numbered ``0 .. n_nodes-1``. Structured builders put the endpoints (GPUs or NICs,
  tier 0) first, then switches tier by tier.
* Every cable is two directed links: links ``2c`` and ``2c + 1`` are the two directions of cable
  ``c``; link ``2c`` goes up (from the lower tier) where the tiers differ.
* Quantities are SI floats: capacity in bytes/s (per direction), latency in s (propagation along
  the cable), length in m. Switch forwarding latency is ``params["switch_latency"]`` (s).
* ``path_fn`` (optional) answers, without searching the graph, how many equal-cost routes join two
  endpoints and which links the i-th one uses: structured builders know this analytically.

>>> import numpy as np
>>> t = Topology.from_cables(
...     "pair", node_kind=[NodeKind.GPU, NodeKind.SWITCH, NodeKind.GPU], node_tier=[0, 1, 0],
...     cable_a=[0, 2], cable_b=[1, 1], capacity=50e9)
>>> t.n_nodes, t.n_links, t.endpoints().tolist()
(3, 4, [0, 2])
>>> t.counts().switches
{1: 1}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from commwall.errors import CommwallError

if TYPE_CHECKING:  # networkx is imported where it is used: it is not needed to build or route
    import networkx as nx  # type: ignore[import-untyped]  # no stubs in the venv

__all__ = [
    "IntArray",
    "LinkKind",
    "Medium",
    "NodeKind",
    "PathOracle",
    "Topology",
    "TopologyCounts",
    "TopologyError",
]

IntArray = npt.NDArray[np.int64]


class TopologyError(CommwallError, ValueError):
    """A topology parameter or graph is wrong; the message names it, its value and the fix."""


class NodeKind(StrEnum):
    """What a node is. Stored in ``Topology.node_kind`` as its position in this enum (int8)."""

    GPU = "gpu"
    NIC = "nic"
    NVSWITCH = "nvswitch"
    PCIE_SWITCH = "pcie_switch"
    CPU = "cpu"
    SWITCH = "switch"

    @property
    def code(self) -> int:
        """The int8 code stored in ``node_kind``."""
        return _NODE_KINDS.index(self)

    @classmethod
    def from_code(cls, code: int) -> NodeKind:
        """The kind stored as ``code``."""
        return _NODE_KINDS[code]


_NODE_KINDS: tuple[NodeKind, ...] = tuple(NodeKind)


class Medium(IntEnum):
    """What a cable is made of (``Topology.link_medium``)."""

    COPPER = 0
    FIBRE = 1
    BOARD = 2  # traces / NVLink spine / PCIe on a board or backplane


class LinkKind(IntEnum):
    """The role of a cable (``Topology.link_kind``)."""

    ACCESS = 0  # endpoint (GPU/NIC) to its first switch
    UP = 1  # switch to a switch one tier up (Clos)
    LOCAL = 2  # switch to switch inside a group (dragonfly)
    GLOBAL = 3  # between groups (dragonfly)
    SCALE_UP = 4  # inside a scale-up domain (NVLink, PCIe)


@runtime_checkable
class PathOracle(Protocol):
    """Equal-cost routes between two endpoints, known from a builder's structure.

    ``count(src, dst)`` is the number of routes (0 when the graph joins them by no route the
    builder routes on); ``links(src, dst, i)`` the link indices of route ``i`` in order.
    """

    def count(self, src: int, dst: int) -> int:
        """Number of routes from endpoint ``src`` to endpoint ``dst``."""
        ...

    def links(self, src: int, dst: int, index: int) -> IntArray:
        """Link indices, in order, of route ``index`` (``0 <= index < count``)."""
        ...


@dataclass(frozen=True)
class TopologyCounts:
    """Bill of switches and cables: keys of ``switches``/``cables`` are tiers; cables are counted
    once (not per direction), in the tier of their upper end; ``by_kind`` counts cables by role."""

    endpoints: int
    switches: dict[int, int]
    cables: dict[int, int]
    by_kind: dict[str, int]

    @property
    def total_switches(self) -> int:
        """All network switches (tier >= 1)."""
        return sum(self.switches.values())

    @property
    def total_cables(self) -> int:
        """All cables."""
        return sum(self.cables.values())


def _array(values: Any, dtype: type[np.generic], n: int | None = None) -> npt.NDArray[Any]:
    arr = np.asarray(values, dtype=dtype)
    if arr.ndim == 0 and n is not None:
        arr = np.full(n, arr, dtype=dtype)
    return arr


@dataclass(frozen=True, eq=False)
class Topology:
    """A network: nodes with kind/tier/group, and directed links with their physical properties.

    Build one with a builder (:func:`commwall.topology.fat_tree`, ...) or
    :meth:`Topology.from_cables`. Arrays are owned by the topology: do not modify them.
    """

    name: str
    node_kind: npt.NDArray[np.int8]
    node_tier: npt.NDArray[np.int8]
    node_group: npt.NDArray[np.int32]
    link_src: npt.NDArray[np.int32]
    link_dst: npt.NDArray[np.int32]
    link_capacity: npt.NDArray[np.float64]
    link_latency: npt.NDArray[np.float64]
    link_length_m: npt.NDArray[np.float64]
    link_tier: npt.NDArray[np.int8]
    link_medium: npt.NDArray[np.int8]
    link_kind: npt.NDArray[np.int8]
    params: Mapping[str, Any] = field(default_factory=dict)
    path_fn: PathOracle | None = None

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_cables(
        cls,
        name: str,
        *,
        node_kind: Sequence[NodeKind | str | int] | npt.NDArray[np.integer[Any]],
        node_tier: npt.ArrayLike,
        cable_a: npt.ArrayLike,
        cable_b: npt.ArrayLike,
        capacity: npt.ArrayLike,
        latency: npt.ArrayLike = 0.0,
        length_m: npt.ArrayLike = 0.0,
        medium: npt.ArrayLike = Medium.COPPER,
        kind: npt.ArrayLike | None = None,
        node_group: npt.ArrayLike = -1,
        params: Mapping[str, Any] | None = None,
        path_fn: PathOracle | None = None,
    ) -> Topology:
        """Build from cables ``a[c] <-> b[c]`` (each becomes links ``2c: a->b`` and ``2c+1: b->a``).

        Per-cable values (capacity, latency, length, medium, kind) may be scalars. ``kind``
        defaults to ACCESS for cables touching a tier-0 node and UP otherwise.
        """
        if isinstance(node_kind, np.ndarray):
            kinds = node_kind.astype(np.int8, copy=False)
        else:
            kinds = np.asarray(
                [NodeKind(k).code if isinstance(k, str) else int(k) for k in node_kind],
                dtype=np.int8,
            )
        n = len(kinds)
        tier = _array(node_tier, np.int8, n)
        a = _array(cable_a, np.int32)
        b = _array(cable_b, np.int32)
        c = len(a)
        if len(b) != c:
            raise TopologyError(
                f"cable_a has {c} entries but cable_b has {len(b)}: give one pair per cable"
            )
        if c and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
            raise TopologyError(f"cable end out of range: nodes are 0..{n - 1}")
        src = np.empty(2 * c, dtype=np.int32)
        dst = np.empty(2 * c, dtype=np.int32)
        src[0::2], src[1::2] = a, b
        dst[0::2], dst[1::2] = b, a
        if kind is None:
            kind_arr = np.where((tier[a] == 0) | (tier[b] == 0), LinkKind.ACCESS, LinkKind.UP)
        else:
            kind_arr = _array(kind, np.int8, c)
        return cls(
            name=name,
            node_kind=kinds,
            node_tier=tier,
            node_group=_array(node_group, np.int32, n),
            link_src=src,
            link_dst=dst,
            link_capacity=np.repeat(_array(capacity, np.float64, c), 2),
            link_latency=np.repeat(_array(latency, np.float64, c), 2),
            link_length_m=np.repeat(_array(length_m, np.float64, c), 2),
            link_tier=np.repeat(np.maximum(tier[a], tier[b]).astype(np.int8), 2),
            link_medium=np.repeat(_array(medium, np.int8, c), 2),
            link_kind=np.repeat(kind_arr.astype(np.int8), 2),
            params=dict(params or {}),
            path_fn=path_fn,
        )

    # ---- sizes and views -------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return len(self.node_kind)

    @property
    def n_links(self) -> int:
        """Number of directed links (twice the number of cables)."""
        return len(self.link_src)

    @property
    def n_cables(self) -> int:
        """Number of cables."""
        return len(self.link_src) // 2

    def endpoints(self) -> IntArray:
        """Indices of the endpoints (tier-0 nodes: GPUs or NICs facing the fabric), ascending."""
        return np.flatnonzero(self.node_tier == 0).astype(np.int64)

    def counts(self) -> TopologyCounts:
        """Endpoints, switches per tier and cables per tier (and per kind)."""
        tiers, n = np.unique(self.node_tier[self.node_tier >= 1], return_counts=True)
        ctiers, cn = np.unique(self.link_tier[0::2], return_counts=True)
        kinds, kn = np.unique(self.link_kind[0::2], return_counts=True)
        return TopologyCounts(
            endpoints=int(np.count_nonzero(self.node_tier == 0)),
            switches={int(t): int(c) for t, c in zip(tiers, n, strict=True)},
            cables={int(t): int(c) for t, c in zip(ctiers, cn, strict=True)},
            by_kind={LinkKind(int(k)).name.lower(): int(c) for k, c in zip(kinds, kn, strict=True)},
        )

    def to_networkx(self) -> nx.MultiDiGraph:
        """A ``networkx.MultiDiGraph``: node attributes ``kind``, ``tier``, ``group``; edge key =
        link index, attributes ``capacity`` (bytes/s), ``latency`` (s), ``length_m``, ``medium``,
        ``tier``, ``kind``."""
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name, **dict(self.params))
        for i in range(self.n_nodes):
            g.add_node(
                i,
                kind=_NODE_KINDS[int(self.node_kind[i])].value,
                tier=int(self.node_tier[i]),
                group=int(self.node_group[i]),
            )
        for i in range(self.n_links):
            g.add_edge(
                int(self.link_src[i]),
                int(self.link_dst[i]),
                key=i,
                capacity=float(self.link_capacity[i]),
                latency=float(self.link_latency[i]),
                length_m=float(self.link_length_m[i]),
                medium=Medium(int(self.link_medium[i])).name.lower(),
                tier=int(self.link_tier[i]),
                kind=LinkKind(int(self.link_kind[i])).name.lower(),
            )
        return g

    # ---- routes ----------------------------------------------------------------------------

    def path_count(self, src: int, dst: int) -> int:
        """Number of equal-cost routes from endpoint ``src`` to endpoint ``dst`` (analytic)."""
        return self._oracle().count(src, dst)

    def path_links(self, src: int, dst: int, index: int = 0) -> IntArray:
        """Link indices of route ``index`` from endpoint ``src`` to endpoint ``dst`` (analytic)."""
        oracle = self._oracle()
        n = oracle.count(src, dst)
        if not 0 <= index < n:
            raise TopologyError(
                f"index={index}: route index out of range; {src} -> {dst} has {n} route(s)"
            )
        return oracle.links(src, dst, index)

    def _oracle(self) -> PathOracle:
        if self.path_fn is None:
            raise TopologyError(
                f"topology {self.name!r} has no analytic routes (path_fn is None); use "
                "to_networkx() and networkx.all_shortest_paths on small graphs"
            )
        return self.path_fn

    # ---- checks ----------------------------------------------------------------------------

    def validate(self) -> Topology:
        """Check the arrays (O(links)): shapes, indices in range, capacity > 0 (0 allowed on the
        cables ``params["failed_cables"]`` declares failed), latency and
        length >= 0, and that links ``2c``/``2c+1`` are the two directions of one cable with equal
        capacity. Returns ``self``; raises :class:`TopologyError` naming the first problem."""
        n, m = self.n_nodes, self.n_links
        for nm in ("node_tier", "node_group"):
            if len(getattr(self, nm)) != n:
                raise TopologyError(f"{nm} has {len(getattr(self, nm))} entries, need {n}")
        for nm in (
            "link_dst",
            "link_capacity",
            "link_latency",
            "link_length_m",
            "link_tier",
            "link_medium",
            "link_kind",
        ):
            if len(getattr(self, nm)) != m:
                raise TopologyError(f"{nm} has {len(getattr(self, nm))} entries, need {m}")
        if m % 2:
            raise TopologyError(f"{m} directed links: every cable must give two (2c and 2c+1)")
        if m:
            lo = min(int(self.link_src.min()), int(self.link_dst.min()))
            hi = max(int(self.link_src.max()), int(self.link_dst.max()))
            if lo < 0 or hi >= n:
                raise TopologyError(f"link end {lo if lo < 0 else hi} out of range 0..{n - 1}")
        bad = np.flatnonzero(~(self.link_capacity > 0) & ~self._declared_failed())
        if len(bad):
            raise TopologyError(
                f"link {bad[0]} has capacity {self.link_capacity[bad[0]]}: must be > 0 bytes/s"
            )
        for nm in ("link_latency", "link_length_m"):
            bad = np.flatnonzero(~(getattr(self, nm) >= 0))
            if len(bad):
                raise TopologyError(
                    f"link {bad[0]} has {nm} {getattr(self, nm)[bad[0]]}: need >= 0"
                )
        asym = (
            (self.link_src[0::2] != self.link_dst[1::2])
            | (self.link_dst[0::2] != self.link_src[1::2])
            | (self.link_capacity[0::2] != self.link_capacity[1::2])
        )
        bad = np.flatnonzero(asym)
        if len(bad):
            c = int(bad[0])
            raise TopologyError(
                f"links {2 * c} and {2 * c + 1} are not the two directions of one cable "
                f"({self.link_src[2 * c]}->{self.link_dst[2 * c]} vs "
                f"{self.link_src[2 * c + 1]}->{self.link_dst[2 * c + 1]}, capacity "
                f"{self.link_capacity[2 * c]} vs {self.link_capacity[2 * c + 1]})"
            )
        self_loop = np.flatnonzero(self.link_src == self.link_dst)
        if len(self_loop):
            i = int(self_loop[0])
            raise TopologyError(f"link {i} is a self-loop on node {self.link_src[i]}")
        return self

    def _declared_failed(self) -> npt.NDArray[np.bool_]:
        """Links of the cables in ``params["failed_cables"]`` whose capacity is 0 (a failed cable
        keeps its index so builders' numbering and oracles still hold; see commwall.faults)."""
        failed = np.asarray(self.params.get("failed_cables", ()), dtype=np.int64)
        mask = np.zeros(self.n_cables, dtype=bool)
        if len(failed):
            if failed.min() < 0 or failed.max() >= self.n_cables:
                raise TopologyError(
                    f"params['failed_cables'] holds cable {int(failed.max())}: cables are "
                    f"0..{self.n_cables - 1}"
                )
            mask[failed] = True
        declared: npt.NDArray[np.bool_] = np.repeat(mask, 2) & (self.link_capacity == 0)
        return declared

    def __repr__(self) -> str:
        c = self.counts()
        return (
            f"Topology({self.name!r}, endpoints={c.endpoints}, switches={c.switches}, "
            f"cables={c.cables})"
        )
