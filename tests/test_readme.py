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
