"""``commwall megatron``: the job a launch script is, as YAML that loads back and as JSON; bad
files end in one line (exit 2); ``commwall run`` names the flags it does not price."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from commwall.cli import app
from commwall.scenario import parse_scenario

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCRIPT = EXAMPLES / "megatron" / "train_llama3_70b.sh"


def test_the_reading_is_a_job_that_loads() -> None:
    result = runner.invoke(app, ["megatron", str(SCRIPT)])
    assert result.exit_code == 0, result.output
    job = yaml.safe_load(result.stdout)["job"]
    assert (job["tp"], job["pp"], job["virtual_stages"], job["recompute"]) == (8, 4, 4, "selective")
    assert job["model"]["vocab"] == 129024  # 128,256 padded to a multiple of 128 x TP 8
    assert "#   --lr" in result.stdout
    scenario = parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 8}, "job": job})
    assert scenario.job.tp_comm_overlap and scenario.job.grad_reduce_in_fp32 is False


def test_json_lists_what_is_not_priced(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT.read_text().replace("--no-check-for-nan-in-loss-and-grad", "--foo 3"))
    result = runner.invoke(app, ["megatron", str(script), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert any("check-for-nan" in line for line in data["not_priced"])
    assert data["unread"] == ["--foo"] and data["vocab_multiple"] == 1024


def test_bad_files_end_in_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "x.sh"
    binary.write_bytes(b"\x00\xff\x00--seq-length 8")
    for path, words in (
        (tmp_path / "missing.sh", "missing.sh"),
        (binary, "not UTF-8 text"),
    ):
        result = runner.invoke(app, ["megatron", str(path)])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and words in result.output


def test_run_names_the_flags_it_does_not_price(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT.read_text().replace("--hidden-dropout 0.0", "--foo 1"))
    (tmp_path / "s.yaml").write_text(
        "cluster: {preset: dgx-h100, nodes: 8}\njob: {megatron_args: run.sh}\n"
    )
    result = runner.invoke(app, ["run", str(tmp_path / "s.yaml")])
    assert result.exit_code == 0, result.output
    assert "not priced: --hidden-dropout" in result.output
    assert "not read" in result.output and "--foo" in result.output


def test_a_megatron_bridge_run_config_reads_and_runs(tmp_path: Path) -> None:
    """A checkpoint's run_config.yaml (Megatron-Bridge's saved ConfigContainer): read by its
    Bridge field names, and runnable from a scenario that names it."""
    saved = EXAMPLES / "megatron-bridge" / "qwen3_8b_16gpu_h100_run_config.yaml"
    result = runner.invoke(app, ["megatron", str(saved)])
    assert result.exit_code == 0, result.output
    assert "read as a Megatron-Bridge configuration" in result.stdout
    assert "#   model.apply_rope_fusion" in result.stdout  # by its Bridge path
    assert "more (--json lists them all)" in result.stdout  # the 20 first of 53 shown
    job = yaml.safe_load(result.stdout)["job"]
    assert (job["global_batch"], job["model"]["vocab"]) == (1024, 151936)
    data = json.loads(runner.invoke(app, ["megatron", str(saved), "--json"]).stdout)
    assert data["source"] == "megatron-bridge" and data["unread"] == []
    assert "model.moe_router_topk" in data["ignored"]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "cluster": {"preset": "dgx-h100", "nodes": 2},
                "job": {"megatron_args": str(saved), "micro_batch": 2},
            }
        )
    )
    ran = runner.invoke(app, ["run", str(scenario)])
    assert ran.exit_code == 0, ran.output
    assert "micro-batch 2" in ran.stdout  # a field beside the file wins


def test_a_hybrid_launch_with_shared_mtp_depths_runs(tmp_path: Path) -> None:
    """Nemotron 3.5 Lightning's flags (Megatron-Core's unified hybrid pattern with two '*E'
    MTP depths and --mtp-use-repeated-layer) read as a job that runs: the report names the
    depths of one module and the JSON job says so."""
    script = tmp_path / "lightning.sh"
    script.write_text(
        "torchrun pretrain_mamba.py --hidden-size 2688 --ffn-hidden-size 1856 \\\n"
        " --num-attention-heads 32 --group-query-attention --num-query-groups 2 \\\n"
        " --kv-channels 128 --mamba-num-heads 64 --mamba-head-dim 64 --num-experts 128 \\\n"
        " --moe-router-topk 6 --moe-ffn-hidden-size 1856 \\\n"
        " --moe-shared-expert-intermediate-size 3712 --moe-token-dispatcher-type alltoall \\\n"
        " --position-embedding-type none --untie-embeddings-and-output-weights \\\n"
        " --normalization RMSNorm --vocab-size 131072 --make-vocab-size-divisible-by 128 \\\n"
        " --hybrid-layer-pattern 'MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME/*E/*E' \\\n"
        " --mtp-use-repeated-layer --seq-length 8192 --micro-batch-size 2 \\\n"
        " --global-batch-size 64 --expert-model-parallel-size 8 --bf16\n"
    )
    read = runner.invoke(app, ["megatron", str(script)])
    assert read.exit_code == 0, read.output
    job = yaml.safe_load(read.stdout)["job"]
    assert (job["model"]["mtp_pattern"], job["mtp_layers"], job["mtp_shared"]) == ("*E", 2, True)
    scenario = tmp_path / "run.yaml"
    scenario.write_text(yaml.safe_dump({"cluster": {"preset": "gb200-nvl72", "nodes": 2,
                                                    "scale_up_domain": 8}, "job": job}))  # fmt: skip
    text = runner.invoke(app, ["run", str(scenario)])
    assert text.exit_code == 0, text.output
    assert "with 2 MTP depths of one module" in text.output
    out = json.loads(runner.invoke(app, ["run", str(scenario), "--json"]).stdout)
    assert (out["job"]["mtp_layers"], out["job"]["mtp_shared"]) == (2, True)
