"""Optics model against the catalog, the reference sheets' claims and the SuperPOD link counts."""

from __future__ import annotations

import math
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from commwall.catalog import Catalog, Optic, load_catalog
from commwall.cluster import Cluster, build_cluster
from commwall.phy.optics import (
    COPPER_REACH_BY_LANE,
    KINDS,
    LONGEST_FIBRE_BY_GPUS,
    OpticsError,
    cluster_optics,
    compare_interconnect,
    interconnect_power,
    media_options,
    medium_for_length,
    optic_choice,
    parse_speed,
)
from commwall.scenario import ClusterSpec
from commwall.units import UnitError

G = 1e9 / 8  # 1 Gb/s in bytes/s


def optic(name: str) -> Optic:
    return load_catalog().optic(name)


def cluster(**fields: Any) -> Cluster:
    return build_cluster(ClusterSpec.model_validate(fields))


# ---- the seed article's claim ------------------------------------------------------------------


def test_50k_dsp_transceivers_draw_075_to_1_mw_and_lpo_saves_about_half() -> None:
    # "50,000 DSP transceivers at 15–20 W ≈ 0.75–1 MW; LPO ≈ 50% less" — from catalog values.
    dsp_part, lpo_part = optic("dsp-800g"), optic("lpo-800g")
    assert 15 <= dsp_part.power <= 20
    dsp = interconnect_power(50_000, "800G", "dsp")
    lpo = interconnect_power(50_000, "800G", "lpo")
    assert dsp.total_power_w == pytest.approx(50_000 * dsp_part.power)
    assert 0.75e6 <= dsp.total_power_w <= 1.0e6
    assert lpo.total_power_w == pytest.approx(50_000 * lpo_part.power)
    assert lpo.saving_vs_dsp == pytest.approx(1 - lpo_part.power / dsp_part.power)
    assert lpo.saving_vs_dsp == pytest.approx(0.5, abs=0.05)
    assert dsp.saving_vs_dsp == 0.0


def test_every_catalog_optic_energy_per_bit_is_power_over_rate() -> None:
    for part in load_catalog().parts("optic"):
        assert isinstance(part, Optic)
        choice = optic_choice(part.kind, part.rate)
        assert choice.part == part.name
        assert choice.energy_per_bit == pytest.approx(part.power / (part.rate * 8), rel=1e-12)
        assert choice.energy_per_bit == pytest.approx(part.energy_per_bit, rel=1e-12)
    # hardware.md §6.1: MMS4X00-NS 17 W at 800G ≈ 21 pJ/bit
    assert optic_choice("dsp", "800G").energy_per_bit * 1e12 == pytest.approx(21.25)


def test_choice_cites_the_part_for_each_field_and_flags_estimates() -> None:
    part = optic("lpo-800g")
    choice = optic_choice("lpo", "800 Gb/s")
    for f in ("rate", "power", "reach", "latency", "cost_usd"):
        assert choice.sources[f] == part.source_for(f)
    assert choice.cost_is_estimate == part.is_estimate("cost_usd")
    assert (choice.power_w, choice.reach_m, choice.latency_s, choice.cost_usd) == (
        part.power,
        part.reach,
        part.latency,
        part.cost_usd,
    )
    assert choice.scaled_from is None


# ---- choosing a part by speed --------------------------------------------------------------------


def test_missing_speed_lists_the_speeds_of_each_kind() -> None:
    with pytest.raises(OpticsError) as e:
        optic_choice("lpo", "400G")
    msg = str(e.value)
    assert msg.startswith("speed: no lpo part at 400 Gb/s")
    assert "lpo speeds: 800 Gb/s" in msg
    assert "dsp: 400 Gb/s, 800 Gb/s, 1.6 Tb/s" in msg


def test_kind_errors_name_the_allowed_values() -> None:
    with pytest.raises(OpticsError, match="kind: unknown technology 'sr4'; allowed: dsp, lpo"):
        optic_choice("sr4", "800G")
    with pytest.raises(OpticsError, match="the catalog has no lro part"):
        optic_choice("lro", "800G")


def test_scaled_choice_keeps_energy_and_cost_per_bit_and_says_so() -> None:
    cpo = optic("cpo-1.6t")
    half = optic_choice("cpo", "800G", scale=True)
    assert half.scaled_from == "cpo-1.6t"
    assert half.power_w == pytest.approx(cpo.power / 2)
    assert half.energy_per_bit == pytest.approx(cpo.energy_per_bit)
    assert half.cost_usd == pytest.approx((cpo.cost_usd or 0) / 2)
    assert half.reach_m == cpo.reach
    assert {"power", "cost_usd"} <= set(half.estimates)
    assert "scaled" in half.sources["power"]
    # an exact part wins over scaling
    assert optic_choice("dsp", "400G", scale=True).scaled_from is None


def test_parse_speed_reads_optics_shorthand_through_units() -> None:
    assert parse_speed("800G") == parse_speed("800 Gb/s") == 800 * G
    assert parse_speed("1.6T") == pytest.approx(1600 * G)
    assert parse_speed("400g") == 400 * G
    assert parse_speed(50e9) == 50e9
    with pytest.raises(UnitError):
        parse_speed("fast")
    with pytest.raises(OpticsError, match="speed: must be a positive bandwidth"):
        parse_speed("0G")


# ---- fleets and comparisons -------------------------------------------------------------------


def test_compare_800g_has_dsp_lpo_cpo_and_copper_rows() -> None:
    cmp = compare_interconnect(1000, "800G")
    kinds = [r.choice.kind for r in cmp.rows]
    assert kinds == [k for k in KINDS if k != "lro"]
    assert "lro" in cmp.unavailable
    dsp = cmp.row("dsp")
    for r in cmp.rows:
        assert r.total_power_w == pytest.approx(1000 * r.choice.power_w)
        assert r.saving_vs_dsp == pytest.approx(1 - r.choice.power_w / dsp.choice.power_w)
    # hardware.md §6.2: CPO and LPO below DSP; passive copper draws almost nothing
    assert cmp.row("cpo").total_power_w < cmp.row("lpo").total_power_w < dsp.total_power_w
    assert cmp.row("dac").choice.power_w <= 0.1


def test_compare_exact_drops_scaled_kinds_and_never_rescales_copper() -> None:
    exact = compare_interconnect(10, "800G", scale=False)
    assert "cpo" in exact.unavailable and "1.6 Tb/s" in exact.unavailable["cpo"]
    scaled = compare_interconnect(10, "400G")
    assert {"dac", "acc", "aec"} <= set(scaled.unavailable)
    assert "lane rate" in scaled.unavailable["dac"]
    assert scaled.row("lpo").choice.scaled_from == "lpo-800g"
    with pytest.raises(OpticsError, match="kind: no dac row at 400 Gb/s"):
        scaled.row("dac")


def test_fleet_input_errors() -> None:
    for bad in (-1, True, 2.5):
        with pytest.raises(
            OpticsError, match=r"n_transceivers: .* is not allowed; allowed: a whole number >= 0"
        ):
            interconnect_power(bad, "800G", "dsp")  # type: ignore[arg-type]
    with pytest.raises(OpticsError, match="kinds: unknown technology 'fr4'"):
        compare_interconnect(1, "800G", kinds=["dsp", "fr4"])
    assert interconnect_power(0, "800G", "lpo").total_power_w == 0


# ---- reach --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "lane", "medium"),
    [
        (0.5, "100 Gb/s", "dac"),
        (2.0, "100 Gb/s", "dac"),  # NVIDIA NDR DAC up to 2 m (catalog dac-800g)
        (2.01, "100 Gb/s", "acc"),
        (5.0, "100 Gb/s", "acc"),
        (5.01, "100 Gb/s", "aec"),
        (7.0, "100 Gb/s", "aec"),
        (7.01, "100 Gb/s", "sr"),
        (50.0, "100 Gb/s", "sr"),
        (50.1, "100 Gb/s", "dr"),
        (500.0, "100 Gb/s", "dr"),
        (500.1, "100 Gb/s", "fr"),
        (2000.0, "100 Gb/s", "fr"),
        (3.0, "50 Gb/s", "dac"),  # phy.md §4: ~3 m @50G PAM4
        (3.1, "50 Gb/s", "sr"),  # no active copper at 50G/lane in the catalog
        (1.0, "200 Gb/s", "dac"),  # ~1 m @200G PAM4
        (1.01, "200 Gb/s", "sr"),
        (5.0, "25 Gb/s", "dac"),
        ("3 m", "100G", "acc"),
    ],
)
def test_medium_for_length_boundaries(length: float | str, lane: str, medium: str) -> None:
    assert medium_for_length(length, lane).name == medium


def test_copper_reach_rule_halves_roughly_with_each_lane_generation() -> None:
    reaches = list(COPPER_REACH_BY_LANE.values())
    assert reaches == sorted(reaches, reverse=True)
    assert COPPER_REACH_BY_LANE[100 * G] == 2.0 and COPPER_REACH_BY_LANE[200 * G] == 1.0


def test_catalog_copper_reach_takes_precedence_over_the_rule() -> None:
    dac = medium_for_length(1.0, "100G")
    assert dac.part == "dac-800g" and dac.reach_m == optic("dac-800g").reach
    text = files("commwall.catalog").joinpath("data", "optics.yaml").read_text(encoding="utf-8")
    longer = text.replace("  reach: 2 m\n", "  reach: 2.5 m\n")
    assert longer != text
    cat = Catalog.from_yaml_texts({"optics.yaml": longer})
    assert medium_for_length(2.4, "100G", catalog=cat).name == "dac"
    # without a catalog DAC at 200G/lane the phy.md §4 rule gives the reach
    assert medium_for_length(0.5, "200G").part is None


def test_too_long_copper_raises_naming_length_rate_and_options() -> None:
    with pytest.raises(OpticsError) as e:
        medium_for_length(3.0, "200 Gb/s", allowed={"dac", "acc", "aec"})
    msg = str(e.value)
    assert msg.startswith("length_m: copper link longer than its reach: 3 m at 200 Gb/s per lane")
    assert "dac ≤ 1 m" in msg and "fr ≤ 2 km" in msg
    with pytest.raises(OpticsError, match=r"link longer than its reach: 3 km .* fr ≤ 2 km"):
        medium_for_length(3000, "100G")


def test_medium_input_errors() -> None:
    with pytest.raises(OpticsError, match="lane_rate: 400 Gb/s is not a known lane rate; allowed"):
        medium_for_length(1, "400G")
    with pytest.raises(OpticsError, match="length_m: must be a positive length"):
        medium_for_length(0, "100G")
    with pytest.raises(OpticsError, match="allowed: unknown medium 'aoc'"):
        medium_for_length(1, "100G", allowed={"aoc"})


@given(
    length=st.floats(min_value=0.01, max_value=2000.0, allow_nan=False),
    lane=st.sampled_from(sorted(COPPER_REACH_BY_LANE)),
)
def test_medium_is_the_shortest_reach_that_covers_the_length(length: float, lane: float) -> None:
    chosen = medium_for_length(length, lane)
    assert chosen.reach_m >= length
    shorter = [m for m in media_options(lane) if m.reach_m < chosen.reach_m]
    assert all(m.reach_m < length for m in shorter)


# ---- cluster links and power ------------------------------------------------------------------


def test_dgx_h100_4_su_link_counts_match_the_superpod_ra() -> None:
    # topology.md §2.1 (DGX H100 SuperPOD RA Table 4): 4 SU → cables leaf→spine 1024.
    co = cluster_optics(cluster(preset="dgx-h100", nodes=128))
    assert [t.name for t in co.tiers] == ["host-leaf", "leaf-spine"]
    assert co.tier("host-leaf").links == 128 * 8 == 1024
    assert co.tier("leaf-spine").links == 1024
    assert co.transceivers == 4096
    assert co.transceivers_per_gpu == 4.0  # topology.md §1: ~4 per endpoint for 2 tiers


def test_127_nodes_counts_used_ports_not_whole_leaves() -> None:
    # The RA's 127-node row cables all 1024 leaf uplinks; this model counts one per host link.
    co = cluster_optics(cluster(preset="dgx-h100", nodes=127))
    assert co.tier("host-leaf").links == co.tier("leaf-spine").links == 1016


def test_16_su_is_three_tiers_with_one_link_per_gpu_per_tier() -> None:
    # topology.md §2.2 (B200 SuperPOD, same SU shape): 512 nodes → 4096 / 4096 / 4096.
    co = cluster_optics(cluster(preset="dgx-h100", nodes=512))
    assert [(t.name, t.links) for t in co.tiers] == [
        ("host-leaf", 4096),
        ("leaf-spine", 4096),
        ("spine-core", 4096),
    ]
    assert co.transceivers_per_gpu == 6.0


def test_oversubscription_and_faster_uplinks_cut_the_uplink_count() -> None:
    tapered = cluster_optics(
        cluster(preset="dgx-h100", nodes=128, topology={"oversubscription": 3.0})
    )
    assert tapered.tier("leaf-spine").links == math.ceil(1024 / 3)
    roce = cluster_optics(cluster(preset="dgx-h100-roce", nodes=128))  # SN5600: 800G ports
    assert roce.tier("host-leaf").rate == 400 * G
    assert roce.tier("leaf-spine").rate == 800 * G
    assert roce.tier("leaf-spine").links == 512


def test_technology_totals_from_catalog_parts() -> None:
    co = cluster_optics(cluster(preset="dgx-h100", nodes=128))
    assert [t.kind for t in co.technologies] == ["dsp", "lpo", "cpo"]
    dsp = co.technology("dsp")
    assert dsp.parts == ("dsp-400g",) and not dsp.scaled
    assert dsp.total_power_w == pytest.approx(4096 * optic("dsp-400g").power)
    assert dsp.saving_vs_dsp == 0.0
    lpo = co.technology("lpo")
    assert lpo.scaled  # no 400G LPO in the catalog: 800G part per bit
    assert lpo.total_power_w == pytest.approx(4096 * optic("lpo-800g").power / 2)
    assert lpo.saving_vs_dsp == pytest.approx(1 - lpo.total_power_w / dsp.total_power_w)
    assert co.technology("cpo").total_power_w < lpo.total_power_w
    with pytest.raises(OpticsError, match="no 'aoc' total"):
        co.technology("aoc")


def test_fat_tree_host_links_are_in_rack_copper() -> None:
    co = cluster_optics(cluster(preset="dgx-h100", nodes=128, topology={"kind": "fat-tree"}))
    host = co.tier("host-leaf")
    assert host.length_m == 2.0 and host.medium.name == "dac" and host.transceivers == 0
    assert co.transceivers == 2 * co.tier("leaf-spine").links
    dsp = co.technology("dsp")
    assert dsp.copper_power_w == pytest.approx(2 * 1024 * optic("dac-800g").power / 2)
    no_copper = cluster_optics(
        cluster(preset="dgx-h100", nodes=128, topology={"kind": "fat-tree"}), allow_copper=False
    )
    assert no_copper.tier("host-leaf").medium.name == "sr"


def test_lengths_override_defaults_and_reach_is_checked() -> None:
    cl = cluster(preset="dgx-h100", nodes=128)
    co = cluster_optics(cl, lengths={"host-leaf": "3 m", "leaf-spine": 1500})
    assert co.tier("host-leaf").medium.name == "acc"  # 3 m > 2 m DAC at 100G/lane
    assert co.tier("leaf-spine").medium.name == "fr"
    assert any("leaf-spine" in w for w in co.technology("lpo").warnings)  # LPO ≤ 500 m
    with pytest.raises(OpticsError, match="lengths: dgx-h100 has no tier 'spine-core'"):
        cluster_optics(cl, lengths={"spine-core": 100})
    with pytest.raises(OpticsError, match="leaf-spine tier: length_m: link longer than its reach"):
        cluster_optics(cl, lengths={"leaf-spine": "3 km"})
    with pytest.raises(OpticsError, match="technologies: 'dac' is not an optical technology"):
        cluster_optics(cl, technologies=["dsp", "dac"])
    with pytest.raises(
        OpticsError, match=r"lanes_per_port: .* is not allowed; allowed: a whole number >= 1"
    ):
        cluster_optics(cl, lanes_per_port=0)


def test_default_top_tier_length_grows_with_cluster_size() -> None:
    assert LONGEST_FIBRE_BY_GPUS[2] == (16384, 500.0)
    co = cluster_optics(cluster(preset="dgx-h100", nodes=4000))  # 32,000 GPUs, 3 tiers
    assert co.tier("spine-core").length_m == 500.0
    assert co.tier("leaf-spine").length_m == 100.0
    assert any("dsp-400g reaches 100 m" in w for w in co.technology("dsp").warnings)
    assert all(a for a in co.assumptions)


def test_one_tier_cluster_has_only_host_links() -> None:
    co = cluster_optics(cluster(preset="dgx-h100", nodes=2, topology={"kind": "fat-tree"}))
    assert [t.name for t in co.tiers] == ["host-leaf"] and co.links == 16
    # rail-optimized, even this small, has spines joining its rails (as its builder makes it)
    rail = cluster_optics(cluster(preset="dgx-h100", nodes=2))
    assert [t.name for t in rail.tiers] == ["host-leaf", "leaf-spine"]
    data = co.to_dict()
    assert data["tiers"][0]["links"] == 16 and data["technologies"][0]["kind"] == "dsp"


def test_one_node_has_no_scale_out_links() -> None:
    """No traffic leaves one node: no links, transceivers, power or cost (as `commwall run`)."""
    co = cluster_optics(cluster(preset="dgx-h100", nodes=1))
    assert co.tiers == () and co.links == 0 and co.transceivers == 0
    assert all(t.total_power_w == 0.0 and t.cost_usd == 0.0 for t in co.technologies)
    assert any("one node" in a for a in co.assumptions)
    with pytest.raises(OpticsError, match="one node has no scale-out tiers"):
        cluster_optics(cluster(preset="dgx-h100", nodes=1), lengths={"host-leaf": "5 m"})
