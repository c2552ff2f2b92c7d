"""``commwall topology``: figures for each kind, JSON, and clean failures (exit 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()


def _json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["topology", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_fat_tree_table() -> None:
    result = runner.invoke(app, ["topology", "fat-tree", "--radix", "64"])
    assert result.exit_code == 0, result.output
    for text in ("65,536", "2,048 leaf, 2,048 spine, 1,024 core (total 5,120)", "1.638 PB/s"):
        assert text in result.output
    assert "same pod 32, different pods 1,024" in result.output


def test_fat_tree_json() -> None:
    s = _json("fat-tree", "--radix", "8", "--oversubscription", "3,1")
    assert s["endpoints"] == 8 * 6 * 4
    assert s["switches"] == {"leaf": 32, "spine": 16, "core": 8}
    assert s["oversubscription"] == {"leaf": 3.0, "spine": 1.0}
    assert s["diameter"] == 6


def test_leaf_spine_and_switch_from_catalog() -> None:
    s = _json("leaf-spine", "--switch", "quantum-hdr-qm8700")
    assert s["endpoints"] == 800 and s["switches"] == {"leaf": 40, "spine": 20}
    assert s["params"]["link_rate"] == 25e9
    assert s["bisection_bandwidth"] == 400 * 25e9


def test_rail_optimized_superpod() -> None:
    s = _json("rail-optimized", "--nodes", "127", "--rails", "8")
    assert s["switches"] == {"leaf": 32, "spine": 16}
    assert s["cables"] == {"leaf": 1016, "spine": 1024}


def test_rail_only_mentions_nvlink() -> None:
    result = runner.invoke(app, ["topology", "rail-only", "--nodes", "32"])
    assert result.exit_code == 0, result.output
    assert "NVLink" in result.output


def test_dragonfly() -> None:
    s = _json("dragonfly", "--a", "8", "--p", "4", "--h", "4", "--link-rate", "200Gb/s")
    assert s["params"]["g"] == 33 and s["endpoints"] == 8 * 4 * 33
    assert s["params"]["router_radix"] == 15 and s["params"]["balanced"] is True
    assert s["cables"]["global"] == 33 * 32 // 2
    assert s["diameter"] == 5
    result = runner.invoke(app, ["topology", "dragonfly", "--a", "4", "--p", "2", "--h", "2"])
    assert result.exit_code == 0 and "MIN routes" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fat-tree", "--radix", "63"], "k must be even"),
        (["torus"], "KIND 'torus' is not allowed"),
        (["dragonfly", "--a", "4"], "dragonfly needs --p, --h"),
        (["dragonfly", "--a", "4", "--p", "2", "--h", "2", "--g", "10"], "g=10"),
        (["rail-optimized"], "needs --nodes"),
        (["fat-tree", "--oversubscription", "x"], "--oversubscription: 'x' is not a ratio"),
        (["fat-tree", "--oversubscription", "0.5"], "must be >= 1"),
        (["leaf-spine", "--link-rate", "400Gb"], "link_rate='400Gb'"),
        (["leaf-spine", "--switch", "nope"], "nope"),
        (["leaf-spine", "--nodes", "5000"], "at most 2,048"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["topology", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
