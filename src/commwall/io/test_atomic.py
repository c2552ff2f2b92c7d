"""Atomic outputs never replace what is not a regular file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from commwall.io.atomic import output_problem, write_text_atomic


def test_an_output_replaces_a_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert output_problem(target) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_or_device_is_refused_not_replaced(tmp_path: Path) -> None:
    """os.replace would swap a device node or pipe for a regular file (as root, /dev/null)."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert output_problem(pipe) == (
        "is not a regular file (a device, pipe or socket); give a file path"
    )
    with pytest.raises(OSError, match="is not a regular file"):
        write_text_atomic(pipe, "data")
    assert stat.S_ISFIFO(pipe.stat().st_mode)  # still the pipe
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    assert output_problem(tmp_path) == "is a directory"
