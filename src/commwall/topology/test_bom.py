"""Bill of materials: SuperPOD reference counts, closed forms from catalog values, media by reach."""

from __future__ import annotations

import json
import math

import pytest

from commwall.catalog import load_catalog
from commwall.phy.optics import medium_for_length, optic_choice
from commwall.topology import dragonfly, leaf_spine, rail_optimized
from commwall.topology.bom import (
    RAIL_ACCESS_LENGTH_M,
    SUPERPOD_UFM_LINKS,
    BomError,
    bill_of_materials,
    compare_optics,
)

CAT = load_catalog()
RATE = 50e9  # 400 Gb/s, the builders' default link rate

# DGX H100 SuperPOD RA Table 4 (topology.md §2.1): SUs -> (nodes, leaf, spine, node+UFM->leaf,
# leaf->spine)
SUPERPOD = {
    1: (31, 8, 4, 252, 256),
    2: (63, 16, 8, 508, 512),
    3: (95, 24, 16, 764, 768),
    4: (127, 32, 16, 1020, 1024),
}


@pytest.mark.parametrize("sus", sorted(SUPERPOD))
def test_dgx_h100_superpod_counts(sus: int) -> None:
    nodes, leaves, spines, node_ufm_leaf, leaf_spine_cables = SUPERPOD[sus]
    b = bill_of_materials(rail_optimized(nodes))
    assert b.switches_by_tier == {"leaf": leaves, "spine": spines}
    assert b.cables_in("leaf-spine") == leaf_spine_cables
    host = b.cables_in("access")
    assert host == nodes * 8  # 248 / 1,016 compute-node links
    # the RA column also counts the UFM links: 4 in all, at 1 SU and at 4 SU (not 4 per SU)
    assert node_ufm_leaf - host == SUPERPOD_UFM_LINKS
    # 2-tier all-optical rail design: ≈ 4 transceivers per GPU (2 per tier)
    assert b.cables_by_medium() == {"sr": host + leaf_spine_cables}
    assert b.total_transceivers == 2 * (host + leaf_spine_cables)
    assert 4.0 <= b.transceivers_per_gpu < 4.1


def test_three_tiers_give_five_to_six_transceivers_per_gpu() -> None:
    t = rail_optimized(512)  # 16 SU: 128 leaves need a core tier at radix 64
    assert t.params["tiers"] == 3
    b = bill_of_materials(t)
    assert set(b.switches_by_tier) == {"leaf", "spine", "core"}
    # NVIDIA: 655,000 transceivers / 128,000 GPUs ≈ 5.1 (topology.md §1): between 2L-1 and 2L
    assert 5.0 <= 655_000 / 128_000 <= b.transceivers_per_gpu <= 6.0 + 1e-9
    # spine–core runs (300 m) need single-mode DR, longer than the 100 m DSP part: flagged
    assert b.cables_by_medium("spine-core") == {"dr": b.cables_in("spine-core")}
    assert any("spine-core" in w and "reaches" in w for w in b.warnings)


def test_power_and_cost_closed_forms() -> None:
    t = rail_optimized(127)
    b = bill_of_materials(t, gpu="h100-sxm")
    sw, nic, gpu = CAT.switch("quantum-2-qm9700"), CAT.nic("connectx-7"), CAT.gpu("h100-sxm")
    dsp = optic_choice("dsp", RATE)
    n_sw, n_cables, n_ep = 48, 1016 + 1024, 1016
    assert sw.power is not None and sw.cost_usd is not None and dsp.cost_usd is not None
    assert b.watts == pytest.approx(
        {
            "switches": n_sw * sw.power,
            "optics": 2 * n_cables * dsp.power_w,
            "cables": 0.0,
            "nics": n_ep * nic.power,
            "gpus": n_ep * gpu.tdp,
        }
    )
    assert b.total_power_w == pytest.approx(sum(b.watts.values()))
    assert b.cost_usd == pytest.approx(
        {"switches": n_sw * sw.cost_usd, "optics": 2 * n_cables * dsp.cost_usd, "cables": 0.0}
    )
    # every number cites its catalog source
    assert b.sources["quantum-2-qm9700.power"] == sw.source_for("power")
    assert b.sources["connectx-7.power"] == nic.source_for("power")
    assert b.sources["h100-sxm.tdp"] == gpu.source_for("tdp")
    assert b.sources["dsp-400g.power"] == CAT.optic("dsp-400g").source_for("power")
    assert b.sources["length.access"].startswith("estimate (ours)")
    d = json.loads(json.dumps(b.to_dict()))
    assert d["totals"]["cost_is_estimate"] is True
    assert all(s["cost_is_estimate"] for s in d["switches"])
    assert any("UFM" in a for a in d["assumptions"])


def test_lpo_and_cpo_cut_optics_power_by_the_catalog_ratio() -> None:
    t = leaf_spine(8)  # 32 hosts, 8 leaves, 4 spines; all-optical with 20 m access runs
    kw = {"lengths": {"access": 20}}
    dsp, lpo, cpo = (bill_of_materials(t, optics=o, **kw) for o in ("dsp", "lpo", "cpo"))  # type: ignore[arg-type]
    p = {k: optic_choice(k, RATE, scale=True).power_w for k in ("dsp", "lpo", "cpo")}
    assert lpo.watts["optics"] / dsp.watts["optics"] == pytest.approx(p["lpo"] / p["dsp"])
    assert p["lpo"] == pytest.approx(8.5 / 2)  # lpo-800g per bit at 400G
    # CPO: switch-side ends co-packaged, NIC-side ends stay DSP pluggables
    nic_ends, ends = 32, 2 * (32 + 32)
    assert cpo.co_packaged_ports == ends - nic_ends and cpo.pluggable_transceivers == nic_ends
    assert cpo.total_transceivers == dsp.total_transceivers == ends
    assert cpo.watts["optics"] == pytest.approx((ends - nic_ends) * p["cpo"] + nic_ends * p["dsp"])
    assert cpo.watts["optics"] < lpo.watts["optics"] < dsp.watts["optics"]
    c = compare_optics(t, **kw)  # type: ignore[arg-type]
    assert [r.optics for r in c.rows] == ["dsp", "lpo", "cpo"]
    assert c.row("lpo").saving_vs_dsp == pytest.approx(1 - p["lpo"] / p["dsp"])
    assert c.row("cpo").interconnect_w == pytest.approx(cpo.interconnect_power_w)
    assert c.row("dsp").switches_w == c.row("cpo").switches_w  # same boxes


def test_copper_beyond_reach_is_optics_not_dac() -> None:
    # 800G links on 4 lanes are 200G/lane: passive copper reaches ~1 m, the 3 m access run
    # the builder calls copper needs optics
    b = bill_of_materials(leaf_spine(8, link_rate="800 Gb/s"))
    assert medium_for_length(3.0, 25e9).name == "sr"
    assert b.cables_by_medium("access") == {"sr": 32}
    assert b.transceivers_by_technology("access") == {"dsp": 64}
    assert any("access" in w and "copper" in w for w in b.warnings)
    assert "dac" not in b.cables_by_medium()


def test_copper_within_reach_draws_cable_power_only() -> None:
    t = leaf_spine(8)  # 400G, 100G/lane: 3 m access -> ACC (≤ 5 m), 1 m -> DAC (≤ 2 m)
    acc = bill_of_materials(t)
    assert acc.cables_by_medium("access") == {"acc": 32}
    assert acc.transceivers_by_technology("access") == {}
    per_end = optic_choice("acc", RATE, scale=True).power_w
    assert per_end == pytest.approx(CAT.optic("acc-800g").power / 2)  # 4 of its 8 lanes
    assert acc.watts["cables"] == pytest.approx(2 * 32 * per_end)
    dac = bill_of_materials(t, lengths={"access": "1 m"})
    assert dac.cables_by_medium("access") == {"dac": 32}
    assert not dac.warnings


def test_switch_choice_and_breakout() -> None:
    assert bill_of_materials(rail_optimized(31)).switches[0].part == "quantum-2-qm9700"
    b = bill_of_materials(rail_optimized(31), switch="spectrum-4-sn5600")
    assert b.switches[0].ports_available == 128  # 64 × 800G split into 2 × 400G
    assert any("breakout" in a for a in b.assumptions)
    hdr = bill_of_materials(dragonfly(4, 2, 2, link_rate="200 Gb/s"))
    assert hdr.switches_by_tier == {"router": 36} and hdr.switches[0].part == "quantum-hdr-qm8700"
    assert set(hdr.cables_by_segment) == {"access", "local", "global"}
    assert hdr.nics.part == "connectx-6"  # lowest-power NIC at 200G


def test_rail_access_default_and_given_lengths() -> None:
    t = rail_optimized(31)
    assert bill_of_materials(t).cables[0].length_m == RAIL_ACCESS_LENGTH_M
    b = bill_of_materials(t, lengths={"access": 2})
    assert b.cables_by_medium("access") == {"dac": 248}
    assert math.isclose(b.transceivers_per_gpu, 512 / 248)


def test_gpus_per_endpoint() -> None:
    b = bill_of_materials(leaf_spine(8), gpu="b200", gpus_per_endpoint=8)
    assert b.gpus.count == 256 and b.watts["gpus"] == pytest.approx(256 * 1000.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"optics": "aoc"}, "optics='aoc': allowed: dsp, lpo, cpo"),
        ({"nic_optics": "cpo"}, "NIC-side co-packaged"),
        ({"lengths": {"core": 10}}, "no segment 'core'"),
        ({"lengths": {"access": -1}}, "lengths['access']=-1"),
        ({"lengths": {"access": 0}}, "must be a positive length"),
        ({"switch": "quantum-hdr-qm8700"}, "do not split into whole 400 Gb/s"),
        ({"switch": "jericho3-ai"}, "36 ports at 400 Gb/s, but a box in this fabric uses 64"),
        ({"nic": "connectx-6"}, "slower than the 400 Gb/s access links"),
        ({"gpus_per_endpoint": 0}, "must be a number > 0"),
        ({"gpus_per_endpoint": 0.3}, "whole number"),
        ({"lanes_per_port": 3}, "not a known lane rate"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(BomError, match=None) as e:
        bill_of_materials(rail_optimized(31), **kwargs)
    assert message in str(e.value)
