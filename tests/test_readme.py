"""The README's two set-up commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- setup -->\s*```(?:bash|sh)?\n(.*?)```", text, re.S)
    assert block, "README.md lost its setup block"
    return [
        ln.strip() for ln in block.group(1).splitlines() if ln.strip() and not ln.startswith("#")
    ]


def test_readme_has_exactly_two_commands_and_ci_runs_them() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    assert commands[0].endswith("commwall run")
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in commands:
        assert command in ci, command


def test_readme_python_snippets_run() -> None:
    import os

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    snippets = re.findall(r"```python\n(.*?)```", text, re.S)
    assert snippets
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for code in snippets:
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)


def test_readme_sweep_spec_is_valid_and_its_constraint_skips() -> None:
    import yaml

    from commwall.sweep.runner import plan
    from commwall.sweep.spec import parse_sweep

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (spec_text,) = re.findall(r"```yaml\n(name: .*?)```", text, re.S)
    spec = parse_sweep(yaml.safe_load(spec_text), root=ROOT)
    p = plan(spec, ROOT / "no-such-sweep-directory")
    assert p.total == 300 and 0 < len(p.skipped) < p.total


def test_the_test_extra_pins_torch_and_the_readme_says_how_to_get_the_cpu_build() -> None:
    """Issue 19, row 16: a torch range in the test extra takes PyPI's newest CUDA build (GBs) on
    a machine without a local CPU wheel; an exact pin plus PyTorch's CPU index avoids it."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch = [r for r in project["optional-dependencies"]["test"] if r.startswith("torch")]
    assert torch == ["torch==2.13.0"]  # exact: "2.13.0+cpu" satisfies it, a newer CUDA build not
    readme = (ROOT / "README.md").read_text()
    assert "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu" in readme


def test_the_readme_shows_what_commwall_run_prints() -> None:
    """The block under "`commwall run` with no argument" is that command's output at 120
    columns, line for line: a model change that moves the default step, its breakdown or the
    accuracy note quoted under it must update the README in the same commit."""
    from typer.testing import CliRunner

    from commwall.cli import app

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"`commwall run` with no argument.*?```\n(.*?)```", text, re.S)
    assert block, "README.md lost its `commwall run` block"
    result = CliRunner().invoke(app, ["run"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    expected = [ln.rstrip() for ln in block.group(1).strip().splitlines()]
    assert [ln.rstrip() for ln in out.strip().splitlines()] == expected
