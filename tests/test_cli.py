"""End-to-end checks of the command line: the README's commands and clean failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _flat(text: str) -> str:
    """``text`` with the console's line wrapping undone."""
    return " ".join(text.split())


def test_run_default_prints_breakdown_and_bottleneck() -> None:
    result = runner.invoke(app, ["run"])
    assert result.exit_code == 0, result.output
    assert "1,024 x h100-sxm" in result.output
    assert "waiting on communication" in result.output
    assert "Top collectives" in result.output


def _run_job(tmp_path: Path, name: str, job: str) -> tuple[Path, str]:
    """``commwall run`` on two DGX H100 nodes with ``job`` (the YAML mapping's inside): the
    scenario file and the flattened output of a run that must succeed."""
    scenario = tmp_path / f"{name}.yaml"
    scenario.write_text(f"cluster: {{preset: dgx-h100, nodes: 2}}\njob: {{{job}}}\n")
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 0, result.output
    return scenario, _flat(result.output)


def test_run_says_how_gradients_and_weights_travel(tmp_path: Path) -> None:
    """The job line names fp32 gradient reductions and FP8 weights, which change DP bytes."""
    result = runner.invoke(app, ["run"])
    assert "bf16 (gradients reduced in fp32), ZeRO-1" in _flat(result.output)
    base = "model: llama3-8b, tp: 1, global_batch: 16, seq_len: 2048, grad_reduce_in_fp32: false"
    _, fp8 = _run_job(tmp_path, "fp8", f"{base}, precision: fp8, fp8_param_gather: true")
    assert "fp8 (FP8 weights), ZeRO-1" in fp8
    assert "gradients reduced in fp32" not in fp8
    aware, out = _run_job(
        tmp_path, "aware",
        f"{base}, precision_aware_optimizer: true, exp_avg_dtype: bf16, exp_avg_sq_dtype: bf16",
    )  # fmt: skip
    assert "bf16 (precision-aware Adam, 6 B of state a parameter), ZeRO-1" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(aware.read_text().replace("precision_aware_optimizer: true", "zero_stage: 1"))
    refused = runner.invoke(app, ["run", str(bad)])
    assert refused.exit_code != 0 and "Traceback" not in refused.output
    assert "job.exp_avg_dtype: bf16 needs precision_aware_optimizer: true" in _flat(refused.output)


def test_run_names_the_attention_kernel_it_prices(tmp_path: Path) -> None:
    """The job line says which measured attention kernel the step is priced with: cuDNN's on
    Hopper by default, FlashAttention-2 under job.attention: flash2, none for the flat model."""
    assert "ZeRO-1, cuDNN fused attention" in _flat(runner.invoke(app, ["run"]).output)
    base = "cluster: {preset: dgx-h100, nodes: 1}\njob: {model: llama3-8b, tp: 1, global_batch: 8"
    flash2 = tmp_path / "flash2.yaml"
    flash2.write_text(base + ", attention: flash2}\n")
    out = runner.invoke(app, ["run", str(flash2)])
    assert out.exit_code == 0, out.output
    assert "ZeRO-1, FlashAttention-2" in _flat(out.output)
    flat = tmp_path / "flat.yaml"
    flat.write_text(base + ", compute_efficiency: 0.5}\n")
    out = runner.invoke(app, ["run", str(flat)])
    assert out.exit_code == 0, out.output
    assert "ZeRO-1 fabric" in _flat(out.output)  # nothing after ZeRO-1 on the job line


def test_a_fabric_that_cannot_be_cabled_still_has_a_step_but_no_energy(tmp_path: Path) -> None:
    """An 800G NIC under 400G switch ports: the bill of materials (and so power, energy and
    cost) cannot be priced, which the run says; the step itself is still computed."""
    scenario = tmp_path / "cx8.yaml"
    scenario.write_text(
        "cluster: {preset: dgx-h100, nodes: 2, nic: connectx-8}\n"
        "job: {model: llama3-8b, tp: 8, global_batch: 16, seq_len: 2048}\n"
    )
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 0, result.output
    text = _flat(result.output)
    assert "power not computed: switch='quantum-2-qm9700'" in text
    assert "energy not computed" in text and "waiting on communication" in text
    data = json.loads(runner.invoke(app, ["run", str(scenario), "--json"]).stdout)
    assert data["energy"]["kwh_per_million_tokens"] is None and data["step_time_s"] > 0
    both = runner.invoke(app, ["compare", "--default", str(scenario)])
    assert both.exit_code == 0, both.output


def test_run_quotes_the_published_runs_of_its_regime(tmp_path: Path) -> None:
    """Under a step, the model's error on the published runs of the job's regime (GPU family,
    dense or MoE and whether its dispatch waits on the host, scale: text and JSON); a regime
    that misses often (fewer than four in five within 10 %) asks for a measured step."""
    moe = EXAMPLES / "deepseek-v3-gb300-nvl72.yaml"
    text = _flat(runner.invoke(app, ["run", str(moe)]).output)
    assert "accuracy on 15 published host-synced MoE GB200/GB300 runs of 65-512 GPUs" in text
    assert "within 10% on 13" in text and "calibrate" not in text  # 13 of 15: well met
    data = json.loads(runner.invoke(app, ["run", str(moe), "--json"]).stdout)
    assert data["accuracy"]["layers"] == "MoE, host-synced" and data["accuracy"]["runs"] == 15
    assert data["job"]["experts"] == 256
    dense = json.loads(runner.invoke(app, ["run", "--json"]).stdout)["accuracy"]
    assert (dense["family"], dense["layers"], dense["scale"]) == (
        "H100/H200",
        "dense",
        "513-4,096 GPUs",
    )
    assert (dense["runs"], dense["within_10"]) == (16, 13)  # 13 of 16: well met
    assert "calibrate" not in dense["note"]
    big = tmp_path / "big.yaml"
    big.write_text(
        "cluster: {preset: dgx-h100, nodes: 640}\n"
        "job: {model: llama3-70b, tp: 8, pp: 4, global_batch: 1280, seq_len: 8192}\n"
    )
    wide = json.loads(runner.invoke(app, ["run", str(big), "--json"]).stdout)["accuracy"]
    assert (wide["family"], wide["layers"], wide["scale"]) == ("H100/H200", "dense", "> 4,096 GPUs")
    assert (wide["runs"], wide["within_10"]) == (12, 9)  # 9 of 12: asks for a measured step
    assert "commwall calibrate step" in wide["note"]


def test_run_names_a_known_compute_bias_where_the_validation_found_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the validation finds a GPU family's runs all missing one way, the run says so
    next to the step (commwall.validation.known_bias); none does now, so the note is GB200's
    as it read before its power bound was measured: on GB200 only, never once the job carries
    a measured compute_scale."""
    from commwall.validation import known_bias

    scenario = tmp_path / "gb200.yaml"
    scenario.write_text(
        "cluster: {preset: gb200-nvl72, nodes: 18}\n"
        "job: {model: llama3-8b, tp: 1, global_batch: 72, seq_len: 2048}\n"
    )
    assert "compute model has been" not in _flat(runner.invoke(app, ["run", str(scenario)]).output)
    bias = known_bias.KnownBias(
        ("gb200",), ("gb200-nvl72",), runs=23, within=17, low=-0.2148, high=-0.1142, median=-0.154
    )
    monkeypatch.setattr(known_bias, "COMPUTE_BIAS", (bias,))
    assert "compute model has been" not in _flat(runner.invoke(app, ["run"]).output)
    gb200 = _flat(runner.invoke(app, ["run", str(scenario)]).output)
    assert "note on gb200 the kernel compute model has been 11%–21% faster than 17 of 23" in gb200
    assert "commwall calibrate step" in gb200
    data = json.loads(runner.invoke(app, ["run", str(scenario), "--json"]).stdout)
    assert "17 of 23" in data["known_compute_bias"]
    assert json.loads(runner.invoke(app, ["run", "--json"]).stdout)["known_compute_bias"] is None
    b200 = scenario.read_text().replace("gb200-nvl72, nodes: 18", "dgx-b200, nodes: 1")
    (tmp_path / "b200.yaml").write_text(b200.replace("72,", "8,"))
    b200_run = runner.invoke(app, ["run", str(tmp_path / "b200.yaml")])
    assert "compute model has been" not in _flat(b200_run.output)
    scaled = scenario.read_text().replace("seq_len: 2048}", "seq_len: 2048, compute_scale: 1.2}")
    scenario.write_text(scaled)
    assert "compute model has been" not in _flat(runner.invoke(app, ["run", str(scenario)]).output)


def test_run_json_is_complete() -> None:
    result = runner.invoke(app, ["run", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["cluster"]["gpus"] == 1024
    parts = sum(data["breakdown_s"].values())
    assert abs(parts - data["step_time_s"]) < 1e-9 * data["step_time_s"]
    assert 0 < data["comm_wait_share"] < 1
    assert data["timeline"]["phases"]


def test_collective_table_has_nccl_tests_columns() -> None:
    result = runner.invoke(app, ["collective", "all_reduce", "--min", "8B", "--max", "1KiB"])
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.output.splitlines() if not ln.startswith("#")]
    assert len(lines) == 8  # 8 B … 1 KiB by ×2
    first = lines[0].split()
    assert first[:5] == ["8", "2", "float", "sum", "-1"]


def test_collective_header_names_the_channels_nccl_would_log() -> None:
    """The second line is NCCL's init line (init.cc) for the communicator the model built: one
    node of 8 H100 as NCCL 2.28 logs it (24 coll, 16 nvls, 32 p2p channels), one H100 on each
    of two nodes as the graph search doubles it (4), with no NVLS for a lone GPU in a node."""
    result = runner.invoke(app, ["collective", "all_reduce", "--min", "1MiB", "--max", "1MiB"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1] == (
        "# NCCL init as modelled: 24 coll channels, 24 collnet channels, 16 nvls channels, "
        "32 p2p channels, 32 p2p channels per peer"
    )
    args = ["collective", "sendrecv", "--nodes", "2", "--gpus-per-node", "1", "--json"]
    result = runner.invoke(app, [*args, "--min", "1MiB", "--max", "1MiB"])
    data = json.loads(result.stdout)
    assert data["nccl_channels"] == {
        "coll": 4,
        "collnet": 4,
        "nvls": 0,
        "p2p": 4,
        "p2p_per_peer": 4,
    }


def test_collective_env_applies_the_nccl_settings_the_model_reads() -> None:
    """--env NCCL_NAME=VALUE: channel limits (and the p2p channels with them), algorithm and
    protocol; a setting the model does not read is listed, a malformed one is an error."""
    base = ["collective", "all_reduce", "--nodes", "2", "--min", "64MiB", "--max", "64MiB"]
    env = ["--env", "NCCL_MAX_NCHANNELS=4", "--env", "NCCL_ALGO=Ring", "--env", "NCCL_IB_HCA=mlx5"]
    data = json.loads(runner.invoke(app, [*base, *env, "--json"]).stdout)
    assert data["nccl_channels"]["coll"] == 4 and data["nccl_channels"]["p2p"] == 4
    assert data["rows"][0]["algo"] == "ring"
    assert any("does not read" in n and "NCCL_IB_HCA" in n for n in data["notes"])
    default = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    assert default["nccl_channels"]["coll"] == 16
    assert data["rows"][0]["time_us"] > default["rows"][0]["time_us"]
    odd = runner.invoke(app, [*base, "--env", "NCCL_ALGO=^NVLS", "--json"])
    notes = json.loads(odd.stdout)["notes"]
    assert any("cannot use" in n and "NCCL_ALGO=^NVLS" in n for n in notes)
    for bad, says in [
        (["--env", "NCCL_MAX_NCHANNELS"], "--env: 'NCCL_MAX_NCHANNELS' is not a setting"),
        (["--env", "NCCL_ALGO=Ring", "--engine", "flow"], "--env needs --engine analytic"),
    ]:
        result = runner.invoke(app, [*base, *bad])
        assert result.exit_code == 2 and says in result.output, result.output


def test_collective_json() -> None:
    result = runner.invoke(app, ["collective", "all_gather", "--nodes", "4", "--min", "1MiB",
                                 "--max", "1MiB", "--json"])  # fmt: skip
    data = json.loads(result.stdout)
    assert data["ranks"] == 32 and data["rows"][0]["size"] == 2**20


def test_bad_inputs_exit_2_without_traceback() -> None:
    cases = [
        ["collective", "allsum"],
        ["collective", "all_reduce", "--max", "8GB/s"],
        ["collective", "all_reduce", "--cluster", "dgx-h1000"],
        ["collective", "all_reduce", "--algo", "butterfly"],
        ["collective", "all_reduce", "--algo", "nvls", "--proto", "LL"],
        ["catalog", "gpus"],
        ["run", "does-not-exist.yaml"],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
        assert "error" in result.output.lower()


def test_catalog_and_schema() -> None:
    assert "dgx-h100" in runner.invoke(app, ["catalog", "preset"]).output
    models = _flat(runner.invoke(app, ["catalog", "model"]).output)
    assert "llama3-70b" in models
    assert "256 experts top-8 from 4 of 8 groups" in models  # DeepSeek-V3's routing limit
    schema = json.loads(runner.invoke(app, ["schema"]).stdout)
    assert "cluster" in schema["properties"]


def test_gpudirect_off_lowers_multinode_busbw() -> None:
    def busbw(*flags: str) -> float:
        args = ["collective", "all_reduce", "--nodes", "8", "--min", "8GiB", "--max", "8GiB"]
        result = runner.invoke(app, [*args, *flags, "--json"])
        assert result.exit_code == 0, result.output
        return float(json.loads(result.stdout)["rows"][0]["busbw_GBps"])

    with_gdr, without = busbw("--gdr"), busbw("--no-gdr")
    # the host bounce halves PCIe Gen5 x16 (63 GB/s) per direction: 8 × 31.5 GB/s per node
    assert without < 0.75 * with_gdr
    assert without <= 8 * 31.6


def test_gpus_per_node_selects_ranks_not_hardware() -> None:
    args = ["collective", "all_reduce", "--nodes", "4", "--min", "1GiB", "--max", "1GiB", "--json"]
    one = json.loads(runner.invoke(app, [*args, "--gpus-per-node", "1"]).stdout)
    assert one["ranks"] == 4 and one["ranks_per_domain"] == 1
    # one H100 keeps its one 400G NIC: busbw cannot pass ~47 GB/s (nccl-tests#290: 46–48)
    assert one["rows"][0]["busbw_GBps"] <= 48.0
    bad = runner.invoke(app, [*args, "--gpus-per-node", "16"])
    assert bad.exit_code == 2 and "allowed: 1 to 8" in bad.output


def test_partial_nvl72_rack_is_one_nvlink_domain() -> None:
    args = ["collective", "all_reduce", "--cluster", "gb200-nvl72", "--nodes", "2", "--json"]
    data = json.loads(runner.invoke(app, [*args, "--min", "1GiB", "--max", "1GiB"]).stdout)
    assert data["domains"] == 1 and data["ranks_per_domain"] == 8


def test_run_reports_the_fabric() -> None:
    data = json.loads(runner.invoke(app, ["run", "--json"]).stdout)
    assert data["fabric"]["switches"] == 48 and data["fabric"]["cables"] == 2048
    # bisection of a non-blocking fabric: half the NICs at 400 Gb/s
    assert data["fabric"]["bisection_Bps"] == 512 * 50e9


def test_run_reports_fabric_power_and_optics_choice(tmp_path: object) -> None:
    from pathlib import Path

    dsp = json.loads(runner.invoke(app, ["run", "--json"]).stdout)["fabric"]
    assert dsp["transceivers"] == 4096  # 2 per optical cable, 2,048 cables (SuperPOD: 4 per GPU)
    assert dsp["power_w"]["gpus"] == 1024 * 700.0  # H100 SXM TDP (catalog)
    scenario = Path(str(tmp_path)) / "lpo.yaml"
    scenario.write_text(
        "cluster:\n  preset: dgx-h100\n  nodes: 128\n  optics:\n    technology: lpo\n"
    )
    lpo = json.loads(runner.invoke(app, ["run", str(scenario), "--json"]).stdout)["fabric"]
    assert lpo["power_w"]["optics"] < 0.6 * dsp["power_w"]["optics"]  # LPO: about half (catalog)
