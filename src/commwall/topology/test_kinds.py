"""A fabric from its kind's name: the same topology as calling its builder, for every kind."""

from __future__ import annotations

import doctest

import pytest

from commwall.topology import kinds
from commwall.topology.dragonfly import dragonfly, dragonfly_plus
from commwall.topology.fat_tree import fat_tree, leaf_spine, rail_only, rail_optimized
from commwall.topology.graph import Topology, TopologyError
from commwall.topology.kinds import FABRIC_KINDS, build_fabric


def test_doctests() -> None:
    assert doctest.testmod(kinds).failed == 0


def _same(a: Topology, b: Topology) -> bool:
    return a.name == b.name and a.counts() == b.counts() and (a.link_src == b.link_src).all()


@pytest.mark.parametrize(
    ("kind", "options", "direct"),
    [
        ("fat-tree", {"radix": 8}, lambda: fat_tree(8)),
        ("fat-tree", {"radix": 8, "tiers": 2, "nodes": 20, "oversubscription": 3.0},
         lambda: leaf_spine(8, 20, 3.0)),
        ("leaf-spine", {"radix": 8, "nodes": 12}, lambda: leaf_spine(8, 12)),
        ("rail-optimized", {"nodes": 40, "oversubscription": (2.0, 1.0), "tiers": 3},
         lambda: rail_optimized(40, 8, 64, (2.0, 1.0), 3)),
        ("rail-only", {"nodes": 16, "rails": 4}, lambda: rail_only(16, 4, 64)),
        ("dragonfly", {"a": 4, "p": 2, "h": 2}, lambda: dragonfly(4, 2, 2)),
        ("dragonfly-plus", {"p": 2, "l_leaves": 2, "s_spines": 2, "h": 2},
         lambda: dragonfly_plus(2, 2, 2, 2)),
    ],
)  # fmt: skip
def test_a_kind_builds_what_its_builder_builds(kind: str, options: dict, direct: object) -> None:  # type: ignore[type-arg]
    assert kind in FABRIC_KINDS
    assert _same(build_fabric(kind, **options), direct())  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kind", "options", "needle"),
    [("torus", {}, "kind: 'torus' is unknown"), ("rail-only", {}, "nodes is required"),
     ("dragonfly", {"a": 4}, "a, p and h are required")],
)  # fmt: skip
def test_what_a_kind_needs_is_named(kind: str, options: dict, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(TopologyError, match=needle):
        build_fabric(kind, **options)
