"""Sweep specs: axes, zips, seeds, sampling, paths checked against the scenario, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from commwall.sweep.spec import SweepError, SweepSpec, load_sweep, parse_sweep

BASE = "examples/llama3-8b-ddp-pcie.yaml"
ROOT = Path(__file__).parents[3]


def spec(**fields: object) -> SweepSpec:
    return parse_sweep({"base": BASE, **fields}, root=ROOT)


def test_grid_order_is_the_axes_order_last_fastest() -> None:
    s = spec(axes={"cluster.nics_per_node": [1, 2], "cluster.topology.oversubscription": [1, 2, 4]})
    points = list(s.points())
    assert len(points) == s.size == 6
    assert [(p.axes["cluster.nics_per_node"], p.axes["cluster.topology.oversubscription"])
            for p in points] == [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)]  # fmt: skip
    assert points[4].config["cluster"]["topology"]["oversubscription"] == 2
    assert points[4].config["job"]["model"] == "llama3-8b"  # the base is kept


def test_ranges_zips_and_seeds() -> None:
    s = spec(
        axes={"cluster.nodes": {"range": [2, 8, 2]}, "cluster.topology.oversubscription":
              {"geometric": [1, 8, 2]}},
        zip=[{"job.tp": [1, 8], "job.dp": [16, 2]}],
        seeds=[0, 7],
    )  # fmt: skip
    assert s.axis_names == ["cluster.nodes", "cluster.topology.oversubscription", "job.tp",
                            "job.dp", "simulation.seed"]  # fmt: skip
    assert s.size == 4 * 4 * 2 * 2
    first = next(iter(s.points()))
    assert first.axes == {"cluster.nodes": 2, "cluster.topology.oversubscription": 1,
                          "job.tp": 1, "job.dp": 16, "simulation.seed": 0}  # fmt: skip
    zipped = {(p.axes["job.tp"], p.axes["job.dp"]) for p in s.points()}
    assert zipped == {(1, 16), (8, 2)}


def test_random_sampling_is_seeded_and_distinct() -> None:
    axes = {"cluster.nodes": list(range(1, 41)), "cluster.nics_per_node": [1, 2, 4, 8]}
    a = [p.axes for p in spec(axes=axes, sampling="random", samples=25, seed=3).points()]
    b = [p.axes for p in spec(axes=axes, sampling="random", samples=25, seed=3).points()]
    c = [p.axes for p in spec(axes=axes, sampling="random", samples=25, seed=4).points()]
    assert a == b and a != c and len({tuple(x.values()) for x in a}) == 25


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"axes": {"cluster.nodez": [1]}}, "'nodez' is not a field of cluster"),
     ({"axes": {"job.tp.name": ["x"]}}, "job.tp is a value, not a section"),
     ({"axes": {"cluster.nodes": []}}, "no values"),
     ({"axes": {"cluster.nodes": {"range": [4, 2, 1]}}}, "stop >= start"),
     ({"axes": {"cluster.nodes": "8"}}, "allowed: a list of values"),
     ({"zip": [{"job.tp": [1, 2], "job.dp": [1]}]}, "must be equal"),
     ({"axes": {"simulation.seed": [1]}, "seeds": [2]}, "swept twice"),
     ({"sampling": "sobol"}, "allowed: grid, random"),
     ({"sampling": "random"}, "samples"),
     ({"seeds": [-1]}, "seeds"),
     ({"bogus": 1}, "bogus: unknown key"),
     ({"base": "missing.yaml"}, "cannot read the file"),
     ({"axes": {"cluster.nodes": {"range": [1, 10**12, 1]}}}, "at most 100,000"),
     ({"axes": {"cluster.nodes": {"geometric": [1, float("inf"), 2]}}}, "finite"),
     ({"axes": {"cluster.nodes": {"range": [float("nan"), 3, 1]}}}, "finite"),
     ({"axes": {"job.dp": [64, [1]]}}, "is a list; allowed: single values"),
     ({"axes": {"cluster.overrides": [{}]}}, "is a dict"),
     ({"axes": {"faults.stragglers.jitter": [0.01]}}, "not the faults section")],
)  # fmt: skip
def test_bad_specs_name_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(SweepError, match=message.replace("(", r"\(").replace(")", r"\)")):
        spec(**fields)


def test_free_form_sections_accept_any_key_and_huge_grids_need_sampling() -> None:
    spec(axes={"cluster.overrides.nic.rate": ["200 Gb/s", "400 Gb/s"]})
    many = {f"cluster.{k}": list(range(40)) for k in ("nodes", "nics_per_node", "gpus_per_node",
                                                       "scale_up_domain", "mtu")}  # fmt: skip
    with pytest.raises(SweepError, match="use sampling: random"):
        spec(axes=many)
    spec(axes=many, sampling="random", samples=10)


def test_load_reads_relative_bases_and_reports_yaml_errors(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text((ROOT / BASE).read_text())
    good = tmp_path / "s.yaml"
    good.write_text("base: base.yaml\naxes:\n  cluster.nodes: [2, 4]\n")
    assert load_sweep(good).size == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("axes: [\n")
    with pytest.raises(SweepError, match="YAML syntax error at line"):
        load_sweep(bad)


def test_null_restores_a_fields_default() -> None:
    s = spec(set={"job.seq_len": None, "job.dp": None}, axes={"cluster.nodes": [8]})
    (point,) = s.points()
    assert "seq_len" not in point.config["job"] and "dp" not in point.config["job"]


def test_random_sampling_over_a_grid_beyond_64_bits() -> None:
    axes = {f"cluster.{k}": list(range(1, 100_001)) for k in
            ("nodes", "nics_per_node", "gpus_per_node", "scale_up_domain")}  # fmt: skip
    axes["cluster.mtu"] = list(range(256, 100_256))
    s = spec(axes=axes, sampling="random", samples=5, seed=1)
    assert s.grid_size > 2**64 and len({tuple(p.axes.values()) for p in s.points()}) == 5
