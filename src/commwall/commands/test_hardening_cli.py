"""Bad input found by hand (issue 19's table): each gets one clear line and exit 2, or works —
never a traceback, a silent default or a runaway allocation."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.io.scenario import MAX_EXPANDED_VALUES, ScenarioError, expanded_size, read_text_file

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
        (["traffic", "permutation", "--topology", "fat-tree", "--radix", "0"], "k=0: must be >= 4"),
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
