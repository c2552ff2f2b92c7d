"""Bad input found by hand (issue 19's table): each gets one clear line and exit 2, or works —
never a traceback, a silent default or a runaway allocation."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.scenario import MAX_EXPANDED_VALUES, ScenarioError, expanded_size, read_text_file

runner = CliRunner()

BOMB = "\n".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_packet_collective_of_a_few_bytes_runs() -> None:
    code, output = invoke("collective", "all_reduce", "--nodes", "2", "--engine", "packet",
                          "--max", "64B")  # fmt: skip
    assert code == 0, output
    assert "tree/LL" in output and "Warning" not in output


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\xff\xfe\x00binary", "not UTF-8 text (byte 0xff at offset 0)"),
        (b"", "empty (or only comments)"),
        (b"# only a comment\n", "empty (or only comments)"),
        (b'name: "a\\x1b[31mred"\n', "control character '\\x1b' at position 2"),
        (b"a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\n" + BOMB.encode(), "expands to more than"),
        (b"root:x:0:0:root:/root:/bin/bash\n", "got str"),
    ],
)
def test_bad_scenario_files_are_one_line(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_bytes(content)
    code, output = invoke("run", str(f))
    assert code == 2, output
    assert needle in output
    assert "root:/root" not in output  # a file that is not a scenario is not echoed


def test_markup_in_a_scenario_name_is_printed_as_text(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text('name: "a[/]b [bold]c"\ncluster: {preset: dgx-h100, nodes: 1}\n'
                 "job: {model: llama3-8b, global_batch: 64}\n")  # fmt: skip
    code, output = invoke("run", str(f))
    assert code == 0, output
    assert "a[/]b [bold]c" in output


def test_an_endless_file_is_refused_by_size() -> None:
    with pytest.raises(ScenarioError, match="larger than 16 MiB"):
        read_text_file("/dev/zero", "scenario")


def test_the_expansion_count_follows_shared_subtrees_without_walking_them() -> None:
    leaf = list(range(9))
    level = [leaf] * 9
    for _ in range(8):
        level = [level] * 9  # 9^10 leaves, ten distinct lists
    assert expanded_size(level) > MAX_EXPANDED_VALUES
    assert expanded_size({"a": [1, 2], "b": {"c": 3}}) == 9  # 2 mappings, 1 list, 3 keys, 3 values
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert expanded_size(cyclic) > MAX_EXPANDED_VALUES


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["collective", "all_reduce", "--nodes", "10000000"], "--nodes: Input should be less than"),
        (["traffic", "permutation", "--topology", "fat-tree", "--radix", "100000"],
         "at most 1,024 ports per switch"),
        (["traffic", "permutation", "--topology", "fat-tree", "--radix", "0"], "k: 0 is not allowed; allowed: a whole number >= 4"),
        (["traffic", "permutation", "--topology", "fat-tree", "--radix", "16", "--tiers", "0"],
         "tiers=0: must be 2"),
        (["traffic", "permutation", "--topology", "fat-tree", "--radix", "512"],
         "holds 33,554,432 hosts; commwall builds at most 4,194,304"),
        (["collective", "all_reduce", "--nodes", "2", "--engine", "flow", "--routing",
          "spray+pxn+pxn", "--max", "1MiB"], "'+pxn' given 2 times"),
        (["run", "--engine", "flow", "--trace", "/nonexistent-dir/x.json"],
         "--trace: cannot write '/nonexistent-dir/x.json': its folder"),
        (["collective", "all_reduce", "--nodes", "2", "--engine", "flow", "--max", "1MiB",
          "--trace", "/nonexistent-dir/x.json"], "its folder '/nonexistent-dir' does not exist"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line(args: list[str], needle: str) -> None:
    code, output = invoke(*args)
    assert code == 2, output
    assert needle in output


def test_a_sweep_spec_that_is_not_text_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_bytes(b"\x00\x01\x02\xff")
    code, output = invoke("sweep", "run", str(spec), "--out", str(tmp_path / "out"))
    assert code == 2, output
    assert "not UTF-8 text" in output


def test_compare_names_the_default_once() -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "llama3-8b-ddp-pcie.yaml"
    code, output = invoke("compare", "--default", str(example))
    assert code == 0, output
    assert "default: default:" not in output and "default: Llama-3-70B" in output


def test_phy_says_when_the_modulation_is_forced() -> None:
    code, output = invoke("phy", "--lane", "100G", "--modulation", "nrz")
    assert code == 0, output
    assert "NRZ (forced; the standard lane is PAM4 at 53.125 GBd, NRZ needs 106.25 GBd)" in output
    code, output = invoke("phy", "--lane", "100G")
    assert "100G PAM4 53.125 GBd" in output


def test_a_rail_optimized_cluster_reports_the_tiers_it_builds() -> None:
    """Row 15: the summary said 1 tier while the builder made 2 (rail leaves and spines)."""
    from commwall.cluster import build_cluster
    from commwall.scenario import ClusterSpec

    for nodes in (1, 4, 256, 257):
        cluster = build_cluster(ClusterSpec.model_validate({"preset": "dgx-h100", "nodes": nodes}))
        built = max(cluster.scale_out_topology().counts().switches)
        assert cluster.tiers == built == (3 if nodes > 256 else 2), nodes
    with pytest.raises(ScenarioError, match=r"cluster\.topology\.kind: rail-only"):
        build_cluster(ClusterSpec.model_validate(
            {"preset": "dgx-h100", "nodes": 4, "topology": {"kind": "rail-optimized", "tiers": 1}}
        ))  # fmt: skip


def test_a_one_node_cluster_buys_no_fabric(tmp_path: Path) -> None:
    """Row 15: one node got 12 switches and a ~$1M network; no traffic leaves it."""
    import json

    path = tmp_path / "one.yaml"
    path.write_text("cluster: {preset: dgx-h100, nodes: 1}\njob: {model: llama3-8b, tp: 8}\n")
    code, output = invoke("run", str(path), "--json")
    assert code == 0, output
    fabric = json.loads(output)["fabric"]
    assert (fabric["switches"], fabric["cables"], fabric["transceivers"]) == (0, 0, 0)
    assert fabric["network_cost_usd_estimate"] == 0.0 and fabric["power_w"]["switches"] == 0.0
    assert fabric["network_power_w"] == fabric["power_w"]["nics"] > 0  # the node's own NICs
    code, output = invoke("run", str(path))
    assert "fabric   none: one node" in output and "no switches (one node)" in output
    two = tmp_path / "two.yaml"
    two.write_text(path.read_text().replace("nodes: 1", "nodes: 2"))
    assert json.loads(invoke("run", str(two), "--json")[1])["fabric"]["switches"] == 12


def test_a_host_file_without_a_job_says_which_job_ran(tmp_path: Path) -> None:
    """Row 15: a cluster-only file (what calibrate writes for a host) silently ran Llama-3-70B on
    two GPUs; now the default job is named, and a job that cannot fit is called out."""
    host = tmp_path / "host.yaml"
    host.write_text("cluster: {preset: dgx-h100, nodes: 1, gpus_per_node: 2, scale_up: pcie, "
                    "scale_up_domain: 2}\n")  # fmt: skip
    code, output = invoke("run", str(host))
    assert code == 0, output
    flat = " ".join(output.split())
    assert "describes no job, so this is the default job (llama3-70b" in flat
    assert "it cannot run as described" in flat
    fits = tmp_path / "fits.yaml"
    fits.write_text("cluster: {preset: dgx-h100, nodes: 1}\njob: {model: llama3-8b, tp: 8}\n")
    code, output = invoke("run", str(fits))
    assert "default job" not in output and "cannot run" not in output


def test_a_long_packet_run_shows_its_progress_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Row 17: ``commwall packet permutation ... --size 2MB`` ran minutes with nothing shown."""
    import io

    from rich.console import Console

    from commwall import console
    from commwall.engines.packet import network

    monkeypatch.setattr(network, "PROGRESS_EVENTS", 2_000)
    args = ("packet", "permutation", "--topology", "fat-tree", "--radix", "4", "--size", "64KB",
            "--fabric", "uec", "--routing", "spray")  # fmt: skip
    for quiet, terminal in ((False, True), (True, True), (False, False)):
        screen = io.StringIO()
        monkeypatch.setattr(console, "err", Console(file=screen, force_terminal=terminal,
                                                    width=200))  # fmt: skip
        code, output = invoke(*args, *(("--json",) if quiet else ()))
        assert code == 0, output
        drawn = screen.getvalue()
        if terminal and not quiet:
            assert "permutation on uec" in drawn and "events/s" in drawn
            assert "simulated" in drawn and "of 16 flows done" in drawn
        else:
            assert "events/s" not in drawn
