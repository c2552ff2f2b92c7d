"""Tests for the parts catalog: data loads, every number is sourced, published values hold."""

from __future__ import annotations

import importlib.resources
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from commwall import units
from commwall.catalog import (
    GPU,
    KIND_FILES,
    KIND_MODELS,
    NIC,
    Catalog,
    CatalogError,
    ClusterPreset,
    Part,
    Switch,
    load_catalog,
)
from commwall.collectives.constants import Gen, gen_for_sm

GB = 1e9  # bytes
Gbps = 1e9 / 8  # bytes/s per Gb/s


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def data_texts() -> dict[str, str]:
    root = importlib.resources.files("commwall.catalog").joinpath("data")
    return {name: root.joinpath(name).read_text(encoding="utf-8") for name in KIND_FILES.values()}


def all_parts(cat: Catalog) -> list[Part]:
    return [p for kind in cat.kinds() for p in cat.parts(kind)]


def edited(filename: str, entry: str, **changes: object) -> dict[str, str]:
    """The shipped YAML texts with fields of one entry changed (None deletes the field)."""
    texts = data_texts()
    entries = yaml.safe_load(texts[filename])
    target = next(e for e in entries if e["name"] == entry)
    for key, value in changes.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    texts[filename] = yaml.safe_dump(entries, allow_unicode=True)
    return texts


# ---- loading --------------------------------------------------------------------------------


def test_kinds_and_every_file_loads(cat: Catalog) -> None:
    assert cat.kinds() == ["gpu", "nvlink", "nvswitch", "pcie", "nic", "switch", "optic", "preset"]
    for kind in cat.kinds():
        assert cat.names(kind), f"no {kind} parts"
        for part in cat.parts(kind):
            assert isinstance(part, KIND_MODELS[kind])
            assert part.part_kind == kind


def test_required_names_present(cat: Catalog) -> None:
    required = {
        "gpu": {"a100-sxm", "h100-sxm", "h200", "b200", "gb200"},
        "nvlink": {"nvlink3", "nvlink4", "nvlink5"},
        "nvswitch": {"nvswitch2", "nvswitch3", "nvlink-switch-5"},
        "pcie": {"gen3", "gen4", "gen5", "gen6"},
        "nic": {"connectx-6", "connectx-7", "connectx-8", "bluefield-3"},
        "switch": {
            "quantum-hdr-qm8700",
            "quantum-2-qm9700",
            "quantum-x800-q3400",
            "spectrum-4-sn5600",
            "tomahawk-5",
            "tomahawk-6",
            "jericho3-ai",
        },
        "optic": {
            "dsp-400g",
            "dsp-800g",
            "dsp-1.6t",
            "lpo-800g",
            "cpo-1.6t",
            "dac-800g",
            "acc-800g",
            "aec-800g",
            "aoc-800g",
        },
        "preset": {
            "dgx-a100",
            "dgx-a100-roce",
            "dgx-h100",
            "dgx-h100-roce",
            "hgx-h200",
            "dgx-b200",
            "dgx-b200-roce",
            "gb200-nvl72",
        },
    }
    for kind, names in required.items():
        assert names <= set(cat.names(kind)), names - set(cat.names(kind))


def test_load_catalog_is_cached(cat: Catalog) -> None:
    assert load_catalog() is cat


def test_parts_are_frozen(cat: Catalog) -> None:
    with pytest.raises(ValidationError):
        cat.gpu("h100-sxm").tdp = 1.0  # type: ignore[misc]


def test_from_directory_matches_package_data(tmp_path: Path, cat: Catalog) -> None:
    root = tmp_path
    for name, text in data_texts().items():
        (root / name).write_text(text, encoding="utf-8")
    other = Catalog.from_directory(root)
    for kind in cat.kinds():
        assert other.parts(kind) == cat.parts(kind)


# ---- provenance -----------------------------------------------------------------------------


def test_every_numeric_field_has_a_source(cat: Catalog) -> None:
    for part in all_parts(cat):
        assert part.unsourced_fields() == []
        for field in part.numeric_fields():
            value = getattr(part, field)
            if value is None:
                continue
            keys = [f"{field}.{k}" for k in value] if isinstance(value, dict) else [field]
            for key in keys:
                assert part.source_for(key).strip(), f"{part.name}.{key} has an empty source"


def test_estimates_name_real_fields(cat: Catalog) -> None:
    for part in all_parts(cat):
        for ref in part.estimate:
            assert ref.split(".", 1)[0] in type(part).model_fields, (part.name, ref)


def test_every_model_field_describes_itself() -> None:
    for model in KIND_MODELS.values():
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
        model.model_json_schema()  # exportable for editors


def test_unsourced_number_fails_loudly() -> None:
    texts = edited("gpus.yaml", "a100-sxm", source={"tdp": "x"})
    with pytest.raises(CatalogError) as err:
        Catalog.from_yaml_texts(texts)
    msg = str(err.value)
    assert "gpus.yaml" in msg and "a100-sxm" in msg and "no source for" in msg and "hbm" in msg


def test_estimate_of_unknown_field_fails() -> None:
    texts = edited("nics.yaml", "connectx-7", estimate=["latncy"])
    with pytest.raises(CatalogError, match=r"nics\.yaml.*connectx-7.*'latncy'.*did you mean"):
        Catalog.from_yaml_texts(texts)


# ---- cross references -----------------------------------------------------------------------


def test_cross_references_resolve(cat: Catalog) -> None:
    for part in all_parts(cat):
        for field, kind in type(part).references.items():
            assert getattr(part, field) in cat.names(kind), (part.name, field)
    for name in cat.names("preset"):
        parts = cat.resolve(name)
        assert parts.nvswitch.nvlink == parts.gpu.nvlink == parts.nvlink.name
        assert parts.preset.fabric in parts.nic.fabrics


def test_broken_reference_names_file_entry_and_choices() -> None:
    texts = edited("presets.yaml", "dgx-h100", gpu="h100")
    with pytest.raises(CatalogError) as err:
        Catalog.from_yaml_texts(texts)
    msg = str(err.value)
    for fragment in ("presets.yaml", "'dgx-h100'", "field 'gpu'", "unknown gpu 'h100'", "h100-sxm"):
        assert fragment in msg


def test_bad_value_names_file_entry_and_field() -> None:
    texts = edited("gpus.yaml", "h100-sxm", tdp="700 V")
    with pytest.raises(CatalogError) as err:
        Catalog.from_yaml_texts(texts)
    msg = str(err.value)
    assert "gpus.yaml" in msg and "h100-sxm" in msg and "tdp" in msg and "as a power" in msg


def test_unknown_field_in_yaml_fails() -> None:
    texts = edited("switches.yaml", "tomahawk-5", radix=64)
    with pytest.raises(CatalogError, match=r"switches\.yaml.*tomahawk-5.*radix"):
        Catalog.from_yaml_texts(texts)


def test_duplicate_and_malformed_files_fail() -> None:
    texts = data_texts()
    entries = yaml.safe_load(texts["pcie.yaml"])
    texts["pcie.yaml"] = yaml.safe_dump([*entries, entries[0]], allow_unicode=True)
    with pytest.raises(CatalogError, match=r"pcie\.yaml.*duplicate name 'gen3'"):
        Catalog.from_yaml_texts(texts)
    with pytest.raises(CatalogError, match=r"nics\.yaml: not valid YAML"):
        Catalog.from_yaml_texts({**data_texts(), "nics.yaml": "- name: [unclosed"})
    with pytest.raises(CatalogError, match=r"optics\.yaml: expected a list"):
        Catalog.from_yaml_texts({**data_texts(), "optics.yaml": "name: dac"})
    with pytest.raises(CatalogError, match=r"unknown catalog file"):
        Catalog.from_yaml_texts({"gpu.yaml": ""})


def test_preset_consistency_checked_at_load() -> None:
    texts = edited("presets.yaml", "dgx-h100", switch="tomahawk-5")
    with pytest.raises(CatalogError, match=r"fabric 'ib' needs an ib switch"):
        Catalog.from_yaml_texts(texts)
    texts = edited("presets.yaml", "dgx-h100", nvswitch_count=2)
    with pytest.raises(CatalogError, match=r"144 links.*only 128 ports"):
        Catalog.from_yaml_texts(texts)
    texts = edited("presets.yaml", "dgx-h100", nvswitch="nvswitch2")
    with pytest.raises(CatalogError, match=r"nvlink3 ports but gpu 'h100-sxm' uses nvlink4"):
        Catalog.from_yaml_texts(texts)


# ---- published values -----------------------------------------------------------------------


def test_h100_spot_values(cat: Catalog) -> None:
    h100 = cat.gpu("h100-sxm")
    assert h100.peak_flops("bf16") == pytest.approx(989.4e12)
    assert h100.peak_flops("fp8") == pytest.approx(1978.9e12)
    assert h100.hbm == 81559 * 2**20  # the driver's total for an "H100 80GB HBM3"
    assert h100.hbm_bandwidth == pytest.approx(3.35e12)
    assert h100.tdp == 700
    assert h100.sm == 90
    assert h100.nvlink_links == 18
    assert cat.nvlink_bandwidth(h100) == pytest.approx(450 * GB)  # per direction
    assert cat.nccl_nvlink_bandwidth(h100) == pytest.approx(370.8 * GB)  # 18 × 20.6


def test_a100_spot_values(cat: Catalog) -> None:
    a100 = cat.gpu("a100-sxm")
    assert a100.peak_flops("bf16") == pytest.approx(312e12)
    assert a100.peak_flops("tf32") == pytest.approx(156e12)
    assert "fp8" not in a100.precisions
    assert cat.nvlink_bandwidth(a100) == pytest.approx(300 * GB)
    assert cat.nccl_nvlink_bandwidth(a100) == pytest.approx(240 * GB)  # 12 × 20


def test_blackwell_spot_values(cat: Catalog) -> None:
    b200, gb200 = cat.gpu("b200"), cat.gpu("gb200")
    for gpu in (b200, gb200):
        assert cat.nvlink_bandwidth(gpu) == pytest.approx(900 * GB)
        assert cat.nccl_nvlink_bandwidth(gpu) == pytest.approx(721.8 * GB)  # 18 × 40.1
        assert gpu.sm == 100
    assert b200.peak_flops("bf16") == pytest.approx(2250e12)
    assert b200.tdp == 1000
    assert gb200.peak_flops("fp4") == pytest.approx(10000e12)
    assert gb200.tdp == 1200


def test_blackwell_ultra_spot_values(cat: Catalog) -> None:
    """B300 and GB300 (Blackwell Ultra, sm 10.3): Blackwell's BF16/FP8 peaks and NVLink5, more
    dense FP4 and HBM; their presets take ConnectX-8 at 800G on Quantum-X800 XDR."""
    b300, gb300 = cat.gpu("b300"), cat.gpu("gb300")
    for gpu, base in ((b300, cat.gpu("b200")), (gb300, cat.gpu("gb200"))):
        assert gpu.sm == 103 and gen_for_sm(gpu.sm) is Gen.BLACKWELL
        assert gpu.peak_flops("bf16") == base.peak_flops("bf16")
        assert gpu.peak_flops("fp8") == base.peak_flops("fp8")
        assert gpu.peak_flops("fp4") > base.peak_flops("fp4")
        assert gpu.hbm > 1.4 * base.hbm and gpu.hbm_bandwidth == 8e12
        assert cat.nccl_nvlink_bandwidth(gpu) == pytest.approx(721.8 * GB)
    # B200's bus is 7,680 bits as its driver reports (pytorch/ao #4002): 7.67 TB/s, not 8
    assert cat.gpu("b200").hbm_bandwidth == pytest.approx(7680 / 8 * 3996e6 * 2, rel=1e-3)
    assert cat.gpu("gb200").hbm_bandwidth == 8e12
    assert gb300.peak_flops("fp4") == pytest.approx(15000e12) and gb300.tdp == 1400
    for name, gpu, domain in (("dgx-b300", "b300", 8), ("gb300-nvl72", "gb300", 72)):
        parts = cat.resolve(name)
        assert parts.gpu.name == gpu and parts.preset.scale_up_domain == domain
        assert parts.nic.name == "connectx-8" and parts.nic.rate == pytest.approx(100e9)  # B/s
        assert parts.switch.name == "quantum-x800-q3400"
        # the Spectrum-X RoCE variants (Oracle's and Google's GB300 and B300 shapes)
        roce = cat.resolve(f"{name}-roce")
        assert roce.preset.fabric == "roce" and roce.switch.name == "spectrum-4-sn5600"
        assert roce.gpu.name == gpu and roce.preset.scale_up_domain == domain
        assert (
            roce.nic.name == "connectx-8"
            and roce.preset.nics_per_node == parts.preset.nics_per_node
        )


def test_dense_fp8_is_twice_bf16(cat: Catalog) -> None:
    for gpu in cat.parts("gpu"):
        assert isinstance(gpu, GPU)
        if "fp8" in gpu.peak_tflops:
            assert gpu.peak_tflops["fp8"] == pytest.approx(2 * gpu.peak_tflops["bf16"], rel=1e-3)


def test_nccl_nvlink_constants(cat: Catalog) -> None:
    expected = {"nvlink3": 20.0, "nvlink4": 20.6, "nvlink5": 40.1}
    for name, gbs in expected.items():
        assert cat.nvlink(name).nccl_link_bandwidth == pytest.approx(gbs * GB)


def test_nvlink_lanes_add_up(cat: Catalog) -> None:
    for name in cat.names("nvlink"):
        gen = cat.nvlink(name)
        assert gen.signalling_bandwidth == pytest.approx(gen.per_link_bandwidth)
        assert gen.nccl_link_bandwidth < gen.per_link_bandwidth


def test_nvswitch_bandwidth_is_ports_times_bidirectional_link(cat: Catalog) -> None:
    for name in cat.names("nvswitch"):
        sw = cat.nvswitch(name)
        link = cat.nvlink(sw.nvlink).per_link_bandwidth
        assert sw.bandwidth == pytest.approx(sw.ports * 2 * link)
    assert [cat.nvswitch(n).nvls for n in ("nvswitch2", "nvswitch3", "nvlink-switch-5")] == [
        False,
        True,
        True,
    ]


def test_pcie_values(cat: Catalog) -> None:
    assert cat.pcie("gen5").nccl_x16_bandwidth == pytest.approx(48 * GB)
    for name, nccl in {"gen3": 12, "gen4": 24, "gen5": 48, "gen6": 96}.items():
        gen = cat.pcie(name)
        assert gen.nccl_x16_bandwidth == pytest.approx(nccl * GB)
        # NCCL: width × (GT/s × 7.5) / 80 GB/s
        assert gen.nccl_x16_bandwidth == pytest.approx(16 * gen.transfer_rate_gt_s * 7.5 / 80 * GB)
        efficiency = 128 / 130 if "128b/130b" in gen.encoding else 1.0
        raw = gen.transfer_rate_gt_s * 16 / 8 * GB * efficiency
        assert gen.x16_bandwidth == pytest.approx(raw, rel=0.01)
    assert cat.pcie("gen4").bandwidth(8) == pytest.approx(cat.pcie("gen4").x16_bandwidth / 2)
    with pytest.raises(CatalogError, match="must be one of"):
        cat.pcie("gen5").bandwidth(3)


def test_nic_rate_fits_its_pcie(cat: Catalog) -> None:
    for nic in cat.parts("nic"):
        assert isinstance(nic, NIC)
        assert nic.aggregate_rate <= cat.nic_host_bandwidth(nic), nic.name
    cx7 = cat.nic("connectx-7")
    assert cx7.rate == pytest.approx(400 * Gbps)
    assert cx7.pcie == "gen5"
    # CX-7 at 400G needs Gen5: a Gen4 x16 slot is too slow
    assert cat.nic_host_bandwidth(cx7, "gen4") < cx7.rate <= cat.nic_host_bandwidth(cx7, "gen5")
    assert cat.nic("connectx-8").rate == pytest.approx(800 * Gbps)
    assert cat.nic("connectx-6").rate == pytest.approx(200 * Gbps)


def test_switch_capacity_is_ports_times_port_rate(cat: Catalog) -> None:
    for sw in cat.parts("switch"):
        assert isinstance(sw, Switch)
        assert sw.ports * sw.port_rate == pytest.approx(sw.capacity, rel=0.01), sw.name
        assert sw.sharp == (sw.fabric == "ib"), sw.name
        assert sw.cell_fabric == (sw.name == "jericho3-ai")


def test_quantum2_qm9700(cat: Catalog) -> None:
    qm = cat.switch("quantum-2-qm9700")
    assert qm.ports == 64 and qm.port_rate == pytest.approx(400 * Gbps)
    # NVIDIA quotes "51.2 Tb/s": bidirectional, 25.6 Tb/s per direction
    assert qm.bidirectional_capacity == pytest.approx(units.parse_bandwidth("51.2 Tb/s"))
    assert cat.switch("tomahawk-5").capacity == pytest.approx(units.parse_bandwidth("51.2 Tb/s"))
    assert cat.switch("quantum-x800-q3400").ports == 144


def test_optics_power_per_bit(cat: Catalog) -> None:
    assert cat.optic("dsp-800g").energy_per_bit == pytest.approx(21.25e-12)
    assert cat.optic("dsp-400g").energy_per_bit == pytest.approx(22.5e-12)
    pluggable = cat.optic("dsp-1.6t").energy_per_bit
    assert cat.optic("cpo-1.6t").energy_per_bit < cat.optic("lpo-800g").energy_per_bit < pluggable
    copper = [cat.optic(n).reach for n in ("dac-800g", "acc-800g", "aec-800g", "aoc-800g")]
    assert copper == sorted(copper)


def test_dgx_h100_preset(cat: Catalog) -> None:
    p = cat.resolve("dgx-h100")
    assert p.preset.nics_per_node == 8
    assert p.nic.rate == pytest.approx(400 * Gbps)
    assert p.preset.gpus_per_node == p.preset.scale_up_domain == 8
    assert p.preset.nvswitch_count == 4 and p.nvswitch.name == "nvswitch3"
    assert p.switch.name == "quantum-2-qm9700" and p.preset.fabric == "ib"
    assert p.preset.topology == "rail-optimized" and p.preset.gpudirect_rdma
    roce = cat.resolve("dgx-h100-roce")
    assert roce.preset.fabric == "roce" and roce.switch.name == "spectrum-4-sn5600"


def test_gb200_nvl72_preset(cat: Catalog) -> None:
    p = cat.resolve("gb200-nvl72")
    assert p.preset.scale_up_domain == 72 and p.preset.gpus_per_node == 4
    assert p.preset.nodes_per_scale_up_domain == 18
    assert p.preset.nvswitch_count == 18 and p.nvswitch.ports == 72
    assert p.preset.nics_per_gpu == 1 and p.nic.name == "connectx-7"  # NDR 400G per GPU
    assert p.gpu.tdp == 1200
    # every GPU has one link to each of the 18 switch chips
    assert p.preset.nvswitch_count * p.nvswitch.ports == 72 * p.gpu.nvlink_links


def test_presets_fit_their_pcie(cat: Catalog) -> None:
    for p in cat.parts("preset"):
        assert isinstance(p, ClusterPreset)
        nic = cat.nic(p.nic)
        assert cat.nic_host_bandwidth(nic, p.pcie) >= nic.aggregate_rate, p.name
        assert p.nics_per_node * nic.aggregate_rate >= p.gpus_per_node * 25 * GB  # ≥ 200G/GPU


# ---- helpful errors -------------------------------------------------------------------------


def test_unknown_name_error(cat: Catalog) -> None:
    with pytest.raises(CatalogError) as err:
        cat.get("gpu", "h100")
    msg = str(err.value)
    assert "unknown gpu 'h100'" in msg
    assert "did you mean 'h100-sxm'" in msg
    assert "a100-sxm, b200, b300, gb200, gb300, h100-sxm, h200" in msg
    with pytest.raises(CatalogError, match=r"unknown preset 'dgx-h100-ib'.*'dgx-h100'"):
        cat.preset("dgx-h100-ib")
    with pytest.raises(CatalogError, match=r"unknown switch 'qm9700'.*quantum-2-qm9700"):
        cat.switch("qm9700")


def test_unknown_kind_error(cat: Catalog) -> None:
    with pytest.raises(CatalogError) as err:
        cat.names("gpus")
    msg = str(err.value)
    assert "unknown part kind 'gpus'" in msg and "did you mean 'gpu'" in msg
    assert "gpu, nvlink, nvswitch, pcie, nic, switch, optic, preset" in msg


def test_unknown_precision_error(cat: Catalog) -> None:
    with pytest.raises(CatalogError) as err:
        cat.gpu("h100-sxm").peak_flops("fp4")
    msg = str(err.value)
    assert "'h100-sxm'" in msg and "'fp4'" in msg and "bf16, fp16, fp8, tf32" in msg
    with pytest.raises(ValueError, match=r"did you mean 'bf16'"):
        cat.gpu("b200").peak_flops("bf61")


def test_catalog_errors_are_value_errors() -> None:
    assert issubclass(CatalogError, ValueError)


# ---- overrides ------------------------------------------------------------------------------


def test_override_with_units(cat: Catalog) -> None:
    h100 = cat.gpu("h100-sxm")
    hot = cat.with_overrides(h100, {"tdp": "800 W", "hbm_bandwidth": "4 TB/s"})
    assert isinstance(hot, GPU)
    assert hot.tdp == 800 and hot.hbm_bandwidth == pytest.approx(4e12)
    assert hot.source_for("tdp") == "user override"
    assert hot.source_for("hbm") == h100.source_for("hbm")
    assert h100.tdp == 700  # the original is untouched
    fast = cat.with_overrides(cat.nic("connectx-7"), {"latency": "300 ns"})
    assert fast.latency == pytest.approx(300e-9)
    assert not fast.is_estimate("latency") and fast.is_estimate("power")


def test_override_mapping_field(cat: Catalog) -> None:
    b200 = cat.gpu("b200")
    assert b200.is_estimate("peak_tflops.tf32")
    new = cat.with_overrides(b200, {"peak_tflops": {"bf16": 2000}})
    assert new.peak_flops("bf16") == pytest.approx(2000e12)
    assert new.precisions == ["bf16"]
    assert not new.is_estimate("peak_tflops.tf32")


def test_override_unknown_field(cat: Catalog) -> None:
    with pytest.raises(CatalogError) as err:
        cat.with_overrides(cat.gpu("h100-sxm"), {"tdpp": 800})
    msg = str(err.value)
    assert "unknown field 'tdpp'" in msg and "did you mean 'tdp'" in msg
    assert "valid fields:" in msg and "hbm_bandwidth" in msg


def test_override_bad_values(cat: Catalog) -> None:
    h100 = cat.gpu("h100-sxm")
    with pytest.raises(CatalogError, match=r"tdp: .*cannot read '800 V' as a power"):
        cat.with_overrides(h100, {"tdp": "800 V"})
    with pytest.raises(CatalogError, match=r"tdp: Input should be greater than 0"):
        cat.with_overrides(h100, {"tdp": 0})
    with pytest.raises(CatalogError, match=r"hbm_bandwidth: .*bits or bytes"):
        cat.with_overrides(h100, {"hbm_bandwidth": "3 T/s"})
    with pytest.raises(CatalogError, match=r"peak_tflops\.fp3"):
        cat.with_overrides(h100, {"peak_tflops": {"fp3": 1.0}})


def test_override_preset_checks_references(cat: Catalog) -> None:
    preset = cat.preset("dgx-h100")
    with pytest.raises(CatalogError, match=r"field 'nic'.*unknown nic 'cx7'.*connectx-7"):
        cat.with_overrides(preset, {"nic": "cx7"})
    with pytest.raises(CatalogError, match=r"needs an ethernet switch"):
        cat.with_overrides(preset, {"fabric": "roce"})
    with pytest.raises(CatalogError, match=r"whole number of nodes"):
        cat.with_overrides(preset, {"scale_up_domain": 12})
    xdr = cat.with_overrides(preset, {"nic": "connectx-8", "switch": "quantum-x800-q3400"})
    assert xdr.nic == "connectx-8" and cat.resolve(xdr).switch.ports == 144
    assert xdr.source_for("gpus_per_node") == preset.source_for("gpus_per_node")


@given(watts=st.floats(min_value=1.0, max_value=1e4, allow_nan=False))
def test_override_round_trips(watts: float) -> None:
    cat = load_catalog()
    gpu = cat.gpu("gb200")
    assert cat.with_overrides(gpu, {"tdp": watts}).tdp == watts
    assert cat.with_overrides(gpu, {"tdp": f"{watts!r} W"}).tdp == pytest.approx(watts)
    assert math.isclose(cat.with_overrides(gpu, {"tdp": f"{watts / 1e3!r} kW"}).tdp, watts)


def test_cached_catalog_cannot_be_changed_through_a_part() -> None:
    cat = load_catalog()
    gpu = cat.gpu("h100-sxm")
    gpu.peak_tflops["bf16"] = 1.0  # a caller's own copy
    assert load_catalog().gpu("h100-sxm").peak_tflops["bf16"] == pytest.approx(989.4)
