"""Run one benchmark case in a fresh interpreter (so its peak RSS is its own) and read back the
JSON line its ``--child`` mode prints: the runner the ``bench_*.py`` scripts share."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_child(script: str, name: str, *args: str) -> dict[str, Any] | None:
    """``python SCRIPT --child NAME ARGS...``'s figures, or None (its stderr passed on) when the
    case failed."""
    proc = subprocess.run(
        [sys.executable, script, "--child", name, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        return None
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures
