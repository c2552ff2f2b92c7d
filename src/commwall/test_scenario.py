"""Malformed scenarios: each fails with one message naming the field, the bad value and what is allowed.

Every case is YAML text run through the path the CLI takes (``load_scenario_text`` then
``build_cluster`` and ``resolve_job``); the test asserts the exact fragment of the message that
names the field path, the value and the allowed values.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.cluster import build_cluster
from commwall.scenario import (
    ScenarioError,
    ScenarioFieldError,
    load_scenario,
    load_scenario_text,
    parse_scenario,
)
from commwall.workload.job import resolve_job


def errors_of(text: str) -> str:
    """The error message ``text`` produces on its way to a simulation (fails if there is none)."""
    try:
        scenario = load_scenario_text(text)
        resolve_job(scenario.job, build_cluster(scenario.cluster))
    except ScenarioError as err:
        return str(err)
    pytest.fail(f"no error for:\n{text}")


SMALL_JOB = "job: {model: llama3-8b, tp: 8, global_batch: 8}\n"

# (id, YAML text, fragments that must all appear in the message)
CASES: list[tuple[str, str, list[str]]] = [
    # ---- YAML and the shape of the document ----
    (
        "yaml-syntax",
        "cluster:\n  nodes: [1, 2\njob: {}\n",
        ["YAML syntax error at line 3, column 4: expected ',' or ']', but got ':'"],
    ),
    (
        "yaml-tab",
        "cluster:\n\tnodes: 2\n",
        [
            "YAML syntax error at line 2, column 1: found character '\\t' that cannot start any token"
        ],
    ),
    (
        "yaml-duplicate-key",
        "cluster:\n  nodes: 2\n  nodes: 4\n",
        ["YAML syntax error at line 3, column 3: duplicate key 'nodes' (each key may appear once)"],
    ),
    (
        "yaml-too-deep",
        "job: " + "[" * 1000 + "]" * 1000 + "\n",
        ["nests too deeply for the YAML parser"],
    ),
    (
        "yaml-huge-integer",
        "cluster: {nodes: " + "9" * 4400 + "}\n",
        ["an integer with more digits than Python reads (4,300)"],
    ),
    (
        "yaml-1.1-scalars",
        "cluster: {nodes: 1:30}\njob: {model: llama3-8b, tp: 8, overlap: yes}\n",
        [
            "cluster.nodes: Input should be a valid integer (got '1:30')",
            "job.overlap: Input should be a valid boolean (got 'yes')",
        ],
    ),
    (
        "bidi-override-in-name",
        'name: "safe\u202eexe.txt"\n' + SMALL_JOB,
        ["name: control character '\\u202e' at position 5; allowed: printable text"],
    ),
    (
        "calibration-source-escape",
        'cluster: {calibration: {source: "fit \\e[31m"}}\n' + SMALL_JOB,
        ["cluster.calibration.source: control character '\\x1b' at position 5"],
    ),
    (
        "stragglers-empirical-unread",
        "faults: {stragglers: {distribution: normal, empirical: [1.0, 2.0]}}\n" + SMALL_JOB,
        ["faults.stragglers: empirical: 2 measured time(s) given with distribution 'normal'"],
    ),
    (
        "calibration-bool",
        "cluster: {calibration: {network: {latency: true, bandwidth_factor: '2'}}}\n" + SMALL_JOB,
        [
            "cluster.calibration.network.latency: Input should be a valid number (got True)",
            "cluster.calibration.network.bandwidth_factor",
        ],
    ),
    (
        "top-level-list",
        "- cluster\n- job\n",
        ["the top level must be a mapping of sections (cluster:, job:, ...), got list"],
    ),
    (
        "top-level-scalar",
        "42\n",
        ["the top level must be a mapping of sections (cluster:, job:, ...), got int"],
    ),
    (
        "section-not-mapping",
        "cluster: 5\n",
        ["cluster: Input should be a valid dictionary", "(got 5)"],
    ),
    # ---- unknown keys ----
    ("unknown-top-key", "clustr: {nodes: 2}\n", ["clustr: unknown key (got {'nodes': 2})"]),
    ("unknown-cluster-key", "cluster:\n  nodez: 4\n", ["cluster.nodez: unknown key (got 4)"]),
    (
        "unknown-job-key",
        "job:\n  tensor_parallel: 8\n",
        ["job.tensor_parallel: unknown key (got 8)"],
    ),
    (
        "unknown-topology-key",
        "cluster:\n  topology:\n    radix: 64\n",
        ["cluster.topology.radix: unknown key (got 64)"],
    ),
    # ---- types and bounds ----
    (
        "nodes-boolean",
        "cluster:\n  nodes: true\n",
        ["cluster.nodes: Input should be a valid integer (got True)"],
    ),
    (
        "too-many-pipeline-slots",
        "cluster:\n  preset: dgx-h100\n  nodes: 1\njob:\n  model: llama3-8b\n  tp: 8\n"
        "  global_batch: 100000000\n",
        ["job.global_batch: 100000000 micro-batches", "allows at most 50,000"],
    ),
    (
        "nodes-wrong-type",
        "cluster:\n  nodes: many\n",
        ["cluster.nodes: Input should be a valid integer (got 'many')"],
    ),
    (
        "nodes-fractional",
        "cluster:\n  nodes: 2.5\n",
        ["cluster.nodes: Input should be a valid integer (got 2.5)"],
    ),
    (
        "nodes-zero",
        "cluster:\n  nodes: 0\n",
        ["cluster.nodes: Input should be greater than or equal to 1 (got 0)"],
    ),
    (
        "oversubscription-below-one",
        "cluster:\n  topology:\n    oversubscription: 0.5\n",
        ["cluster.topology.oversubscription: Input should be greater than or equal to 1 (got 0.5)"],
    ),
    (
        "compute-efficiency-above-one",
        "job:\n  compute_efficiency: 1.5\n",
        ["job.compute_efficiency: Input should be less than or equal to 1 (got 1.5)"],
    ),
    (
        "zero-stage-4",
        "job:\n  zero_stage: 4\n",
        ["job.zero_stage: Input should be less than or equal to 3 (got 4)"],
    ),
    (
        "tiers-4",
        "cluster:\n  topology:\n    tiers: 4\n",
        ["cluster.topology.tiers: Input should be less than or equal to 3 (got 4)"],
    ),
    (
        "fabric-not-allowed",
        "cluster:\n  fabric: infiniband\n",
        ["cluster.fabric: allowed values are 'ib', 'roce' or 'ethernet' (got 'infiniband')"],
    ),
    (
        "precision-not-allowed",
        "job:\n  precision: int4\n",
        ["job.precision: allowed values are 'bf16', 'fp16', 'fp8', 'fp4' or 'tf32' (got 'int4')"],
    ),
    (
        "engine-not-allowed",
        "simulation:\n  engine: packet\n",
        ["simulation.engine: allowed values are 'analytic' or 'flow' (got 'packet')"],
    ),
    # ---- units ----
    (
        "bucket-is-a-rate",
        "job:\n  ddp_bucket: 25 MB/s\n",
        [
            "job.ddp_bucket: cannot read '25 MB/s' as a size: that is a rate, not a size",
            "accepted forms: '8 B', '25 MiB', '1 GB'",
            "(got '25 MB/s')",
        ],
    ),
    (
        "bucket-unknown-unit",
        "job:\n  ddp_bucket: 25 furlongs\n",
        [
            "job.ddp_bucket: cannot read '25 furlongs' as a size: unknown unit 'furlongs'",
            "accepted forms: '8 B', '25 MiB'",
        ],
    ),
    (
        "bucket-negative",
        "job:\n  ddp_bucket: -1 MiB\n",
        ["job.ddp_bucket: cannot read '-1 MiB' as a size: negative values are not allowed"],
    ),
    # ---- catalog names ----
    (
        "unknown-preset",
        "cluster:\n  preset: dgx-h1000\n",
        [
            "cluster.preset: unknown preset 'dgx-h1000' (did you mean 'dgx-h100'",
            "known preset names: dgx-a100, dgx-a100-roce,",
        ],
    ),
    (
        "unknown-gpu",
        "cluster:\n  gpu: h100\n",
        [
            "cluster.gpu: unknown gpu 'h100' (did you mean 'h100-sxm'",
            "known gpu names: a100-sxm, b200, b300, gb200, gb300, h100-sxm, h200",
        ],
    ),
    (
        "unknown-nic",
        "cluster:\n  nic: connectx7\n",
        [
            "cluster.nic: unknown nic 'connectx7' (did you mean 'connectx-7'",
            "known nic names: bluefield-3, connectx-6, connectx-7, connectx-8",
        ],
    ),
    (
        "unknown-switch",
        "cluster:\n  switch: qm9700\n",
        [
            "cluster.switch: unknown switch 'qm9700' (did you mean 'quantum-2-qm9700'?)",
            "known switch names:",
        ],
    ),
    (
        "unknown-pcie",
        "cluster:\n  pcie: gen7\n",
        [
            "cluster.pcie: unknown pcie 'gen7' (did you mean 'gen6'",
            "known pcie names: gen3, gen4, gen5, gen6",
        ],
    ),
    (
        "unknown-model",
        "job:\n  model: llama3-70\n",
        [
            "job.model: unknown model 'llama3-70'. Did you mean 'llama3-70b'",
            "Known models: deepseek-v3, glm-4.5, gpt-oss-120b, gpt-oss-20b, gpt3-13b, gpt3-175b,",
        ],
    ),
    (
        "no-preset-no-parts",
        "cluster:\n  preset: null\n",
        [
            "cluster.gpu: required when no preset is given",
            "cluster.fabric: required when no preset is given (ib, roce or ethernet)",
        ],
    ),
    # ---- parallelism ----
    (
        "tp-beyond-domain",
        "cluster:\n  nodes: 2\njob:\n  model: llama3-8b\n  tp: 16\n",
        [
            "job.tp: 16 does not fit the scale-up domain of 8 GPUs",
            "allowed: 1, 2, 4, 8",
        ],
    ),
    (
        "tp-not-dividing-heads",
        "cluster:\n  preset: gb200-nvl72\n  nodes: 18\n"
        "job:\n  model: llama3-8b\n  tp: 24\n  global_batch: 3\n",
        ["job.tp: 24 does not divide llama3-8b's 32 attention heads; allowed here: 1, 2, 4, 8"],
    ),
    (
        "degrees-do-not-multiply",
        "cluster:\n  nodes: 4\njob:\n  model: llama3-8b\n  tp: 8\n  pp: 2\n  dp: 4\n",
        [
            "job.dp: tp × cp × pp × dp = 8 × 1 × 2 × 4 = 64 but the cluster has 32 GPUs; "
            "the degrees must multiply to the GPU count"
        ],
    ),
    (
        "tp-pp-do-not-divide-gpus",
        "cluster:\n  nodes: 3\njob:\n  model: llama3-8b\n  tp: 8\n  pp: 2\n",
        ["job.tp × job.cp × job.pp = 16 does not divide the cluster's 24 GPUs"],
    ),
    (
        "pp-beyond-layers",
        "cluster:\n  nodes: 8\njob:\n  model: llama3-8b\n  tp: 1\n  pp: 64\n",
        ["job.pp: 64 stages exceed llama3-8b's 32 layers; allowed: 1 to 32"],
    ),
    (
        "global-batch-not-multiple",
        "cluster:\n  nodes: 4\njob:\n  model: llama3-8b\n  tp: 8\n  global_batch: 10\n",
        ["job.global_batch: 10 is not a multiple of dp × micro_batch = 4 × 1 = 4"],
    ),
    (
        "ep-on-dense-model",
        "job:\n  model: llama3-8b\n  tp: 4\n  ep: 2\n  global_batch: 8\n",
        ["job.ep: 2 needs a mixture-of-experts model; llama3-8b is dense"],
    ),
    (
        "ep-not-dividing",
        "cluster:\n  preset: hgx-h200\njob:\n  model: mixtral-8x7b\n  tp: 2\n  ep: 3\n  global_batch: 8\n",
        [
            "job.ep: 3 must divide the 8 experts, and ep × expert_tp = 3 × 2 must divide tp × cp × dp = 2 × 1 × 4"
        ],
    ),
    (
        "fp8-on-a100",
        "cluster:\n  preset: dgx-a100\njob:\n  model: llama3-8b\n  tp: 8\n  precision: fp8\n"
        "  global_batch: 8\n",
        ["job.precision: a100-sxm has no fp8 peak; allowed: bf16, fp16, tf32"],
    ),
    (
        "seq-len-over-context",
        "job:\n  model: gpt3-175b\n  tp: 8\n  seq_len: 4096\n  global_batch: 8\n",
        ["job.seq_len: 4096 exceeds gpt3-175b's context of 2048 tokens"],
    ),
    # ---- parts that do not fit together ----
    (
        "ib-switch-on-roce",
        "cluster:\n  fabric: roce\n" + SMALL_JOB,
        [
            "cluster.switch: quantum-2-qm9700 is an ib switch but the fabric is roce; "
            "pick an ethernet switch"
        ],
    ),
    (
        "nic-without-the-fabric",
        "cluster:\n  preset: dgx-h100-roce\n  overrides:\n    nic: {fabrics: [ib]}\n" + SMALL_JOB,
        ["cluster.nic: connectx-7 does not speak roce (it supports ib)"],
    ),
    (
        "sharp-on-roce",
        "cluster:\n  preset: dgx-h100-roce\n  sharp: true\n" + SMALL_JOB,
        [
            "cluster.sharp: in-network reduction needs an InfiniBand switch with SHARP; "
            "spectrum-4-sn5600 on roce has none"
        ],
    ),
    (
        "nvswitch-of-another-generation",
        "cluster:\n  nvswitch: nvswitch2\n" + SMALL_JOB,
        [
            "cluster.nvswitch: nvswitch2 has nvlink3 ports but h100-sxm uses nvlink4; allowed: nvswitch3"
        ],
    ),
    (
        "gpu-without-nvlink",
        "cluster:\n  overrides:\n    gpu: {nvlink_links: 0}\n" + SMALL_JOB,
        [
            "cluster.scale_up: h100-sxm has no NVLink links (nvlink_links = 0), so it cannot form "
            "an NVLink domain of 8; use scale_up: pcie"
        ],
    ),
    # ---- shapes ----
    (
        "nvl72-partial-rack",
        "cluster:\n  preset: gb200-nvl72\n  nodes: 20\n",
        [
            "cluster.nodes: 20 nodes do not fill whole scale-up domains of 72 GPUs (18 nodes each); "
            "use a multiple of 18"
        ],
    ),
    (
        "domain-not-multiple-of-node",
        "cluster:\n  gpus_per_node: 6\n  scale_up_domain: 8\n",
        ["cluster.scale_up_domain: 8 GPUs must be a multiple or a divisor of gpus_per_node (6)"],
    ),
    (
        "pcie-domain-across-nodes",
        "cluster:\n  nodes: 2\n  scale_up: pcie\n  scale_up_domain: 16\n",
        [
            "cluster.scale_up_domain: a PCIe-only domain cannot span nodes (got 16 with 8 GPUs per "
            "node); allowed: 8 or a divisor of it"
        ],
    ),
    (
        "rail-only-too-many-nodes",
        "cluster:\n  nodes: 100\n  topology:\n    kind: rail-only\n",
        [
            "cluster.topology.kind: rail-only puts each rail on one switch of 64 ports, so at most "
            "64 nodes (got 100); use rail-optimized"
        ],
    ),
    (
        "too-many-endpoints-for-3-tiers",
        "cluster:\n  nodes: 9000\n",
        [
            "cluster.nodes: 72000 NIC ports exceed a 3-tier fat tree of radix 64 (65536); "
            "use a larger-radix switch"
        ],
    ),
    (
        "tiers-too-few-rail",
        "cluster:\n  nodes: 128\n  topology: {tiers: 1}\n",
        [
            "cluster.topology.tiers: 1; a rail-optimized fabric joins its rails through spines, "
            "so it has 2 or 3 tiers (allowed: 2 to 3"
        ],
    ),
    (
        "tiers-too-few",
        "cluster:\n  nodes: 512\n  topology: {kind: fat-tree, tiers: 2}\n",
        [
            "cluster.topology.tiers: 2 tier(s) of radix 64 hold at most 2048 NIC ports but the "
            "cluster has 4096; allowed: 3, or leave it out"
        ],
    ),
    # ---- overrides ----
    (
        "override-unknown-part",
        "cluster:\n  overrides:\n    cpu: {cores: 4}\n",
        [
            "cluster.overrides.cpu: unknown part (got 'cpu'); allowed: gpu, nvlink, nvswitch, pcie, "
            "nic, switch"
        ],
    ),
    (
        "override-unknown-field",
        "cluster:\n  overrides:\n    gpu: {tdpp: 800 W}\n",
        [
            "cluster.overrides.gpu: gpu 'h100-sxm' override: unknown field 'tdpp' (did you mean "
            "'tdp'?); valid fields:",
            "(got tdpp: '800 W')",
        ],
    ),
    (
        "override-bad-value",
        "cluster:\n  overrides:\n    nic: {rate: fast}\n",
        [
            "cluster.overrides.nic: nic 'connectx-7' override: rate: cannot read 'fast' as a "
            "bandwidth",
            "accepted forms: '400 Gb/s', '50 GB/s'",
            "(got rate: 'fast')",
        ],
    ),
    (
        "override-out-of-bounds",
        "cluster:\n  overrides:\n    nvlink: {per_link_bandwidth: 0}\n",
        [
            "cluster.overrides.nvlink: nvlink 'nvlink4' override: per_link_bandwidth: Input should "
            "be greater than 0 (got per_link_bandwidth: 0)"
        ],
    ),
    (
        "override-not-a-mapping",
        "cluster:\n  overrides:\n    nic: 5\n",
        ["cluster.overrides.nic: Input should be a valid dictionary (got 5)"],
    ),
]


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("text", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_scenario_names_field_value_and_allowed(text: str, fragments: list[str]) -> None:
    message = errors_of(text)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    assert "Traceback" not in message


def test_every_line_starts_with_the_origin() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario_text("cluster: {nodez: 1}\njob: {tpp: 8}\n", origin="mine.yaml")
    assert info.value.origin == "mine.yaml"
    assert info.value.messages == [
        "cluster.nodez: unknown key (got 1)",
        "job.tpp: unknown key (got 8)",
    ]
    assert str(info.value).splitlines() == [
        "mine.yaml: cluster.nodez: unknown key (got 1)",
        "mine.yaml: job.tpp: unknown key (got 8)",
    ]


def test_job_problems_are_reported_together() -> None:
    message = errors_of(
        "cluster: {preset: dgx-a100, nodes: 4}\n"
        "job: {model: gpt3-175b, tp: 16, seq_len: 4096, precision: fp8, global_batch: 7}\n"
    )
    for field in ("job.tp:", "job.seq_len:", "job.precision:", "job.global_batch:"):
        assert field in message


def test_yaml_merge_keys_still_work() -> None:
    scenario = load_scenario_text(
        "cluster: &c {preset: dgx-h100, nodes: 2}\n"
        "job:\n  <<: {model: llama3-8b, tp: 4}\n  tp: 8\n"  # a key beside '<<' overrides it
    )
    assert scenario.job.model == "llama3-8b" and scenario.job.tp == 8


def test_an_empty_file_is_an_error_and_an_empty_mapping_the_defaults() -> None:
    # an empty or comment-only file is a mistake, not the 8-GPU field defaults (issue 19);
    # `commwall run` without a file runs the built-in default
    for text in ("", "# nothing yet\n"):
        with pytest.raises(ScenarioError, match=r"empty \(or only comments\)"):
            load_scenario_text(text)
    assert load_scenario_text("{}") == parse_scenario({})


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"cannot read the file: No such file or directory"):
        load_scenario(tmp_path / "nope.yaml")


# ---- through the command line ------------------------------------------------------------------

CLI_CASES = [
    "yaml-syntax",
    "unknown-cluster-key",
    "bucket-is-a-rate",
    "unknown-gpu",
    "tp-beyond-domain",
    "fp8-on-a100",
    "sharp-on-roce",
    "gpu-without-nvlink",
    "override-unknown-field",
]


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_run_exits_2_with_one_clear_error(case: str, tmp_path: Path) -> None:
    text, fragments = next((c[1], c[2]) for c in CASES if c[0] == case)
    path = tmp_path / f"{case}.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output
    assert "Traceback" not in result.output
    assert fragments[0] in " ".join(result.output.split())


def test_faults_section_parses_units_and_counts() -> None:
    from commwall.scenario import load_scenario_text, parse_count

    s = load_scenario_text(
        "faults:\n"
        "  stragglers: {jitter: 0.02, message_tail: 2us, distribution: empirical,\n"
        "               empirical: [1.0, 1.1]}\n"
        "  goodput: {checkpoint: 2min, restart: 1h, tokens: 15.6T}\n"
        "  failures: {switches: ['spine:0'], random_cables: {leaf-spine: 3}}\n"
    )
    assert s.faults is not None and s.faults.stragglers is not None
    assert s.faults.stragglers.message_tail == 2e-6
    assert s.faults.goodput is not None and s.faults.goodput.restart == 3600.0
    assert s.faults.goodput.tokens == 15.6e12
    assert s.faults.failures is not None and s.faults.failures.random_cables == {"leaf-spine": 3}
    assert parse_count("405B") == 405e9 and parse_count("1,000") == 1000.0
    with pytest.raises(ScenarioFieldError, match="not a count"):
        parse_count("many")


def test_a_field_reader_raises_scenario_field_error_which_pydantic_still_wraps() -> None:
    from commwall.errors import CommwallError
    from commwall.scenario import parse_routing_name

    with pytest.raises(ScenarioFieldError, match=r"'\+pxn' given 2 times") as info:
        parse_routing_name("spray+pxn+pxn")
    assert isinstance(info.value, CommwallError) and isinstance(info.value, ValueError)
    with pytest.raises(ScenarioError) as wrapped:  # inside a scenario: one line, field named
        parse_scenario({"cluster": {"routing": "spray+pxn+pxn"}})
    assert wrapped.value.messages == [
        "cluster.routing: 'spray+pxn+pxn': '+pxn' given 2 times; give it once (got 'spray+pxn+pxn')"
    ]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("faults:\n  stragglers: {jitter: -0.1}\n", "faults.stragglers.jitter"),
        ("faults:\n  stragglers: {message_tail: 2 parsecs}\n", "faults.stragglers.message_tail"),
        ("faults:\n  goodput: {tokens: lots}\n", "faults.goodput.tokens"),
        ("faults:\n  goodput: {when: now}\n", "faults.goodput.when"),
        ("faults:\n  failures: {cables: [one]}\n", "faults.failures.cables"),
    ],
)
def test_bad_faults_section_names_the_field(text: str, field: str) -> None:
    from commwall.scenario import load_scenario_text

    with pytest.raises(ScenarioError) as info:
        load_scenario_text(text)
    assert any(m.startswith(field) for m in info.value.messages), info.value.messages


@pytest.mark.parametrize("routing", ["spray+pxn", "pxn", "ECMP + PXN", "adaptive", "cells+pxn"])
def test_every_routing_the_engine_takes_round_trips_through_a_saved_scenario(routing: str) -> None:
    """Issue 18: `commwall run --routing spray+pxn` made a design whose saved file failed its own
    validation (the scenario's list had no '+pxn' grammar)."""
    import yaml

    from commwall.engines.flow.engine import parse_routing
    from commwall.scenario import cluster_routing

    sc = parse_scenario({"cluster": {"routing": routing}})
    again = parse_scenario(yaml.safe_load(yaml.safe_dump(sc.model_dump(mode="json"))))
    assert again.cluster.routing == sc.cluster.routing == cluster_routing(routing)
    parse_routing(sc.cluster.routing)  # and the flow engine reads it


@pytest.mark.parametrize(
    ("routing", "needle"),
    [("spray+pxn+pxn", "'+pxn' given 2 times"), ("valiant", "is not allowed; allowed: ecmp"),
     ("nope", "add '+pxn' to any")],
)  # fmt: skip
def test_a_routing_the_cluster_cannot_take_is_named(routing: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(needle)):
        parse_scenario({"cluster": {"routing": routing}})


def test_scenarios_read_yaml_1_2_scalars() -> None:
    """Booleans and integers as YAML 1.2 reads them: no sexagesimal, octal or yes/on; floats
    keep PyYAML's dotted forms and text that only looks numeric stays text."""
    import yaml

    from commwall.scenario import _UniqueKeyLoader

    text = "a: 1:30\nb: 010\nc: yes\nd: 0x10\ne: -.5\nf: 1.0e+20\ng: .inf\nh: .\ni: 1e9\nj: TRUE\n"
    got = yaml.load(text, Loader=_UniqueKeyLoader)
    assert got == {
        "a": "1:30", "b": "010", "c": "yes", "d": 16, "e": -0.5, "f": 1e20,
        "g": float("inf"), "h": ".", "i": "1e9", "j": True,
    }  # fmt: skip
    assert yaml.safe_load("a: 1:30") == {"a": 90}  # PyYAML's own loader is left as it was
