"""Write files atomically: a reader sees the old file or the whole new one, never half of it.

The content goes to a temporary file in the target's directory (same file system), is flushed
to disk, and only then replaces the target (``os.replace``, atomic on POSIX and Windows); a
failed write removes the temporary file and leaves any previous target as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write in full; it replaces ``path`` when the block ends cleanly.

    For writers that want a file name (pyarrow, numpy) rather than an open handle.
    """
    target = Path(path)
    if target.exists() and not target.is_file():
        raise IsADirectoryError(  # an OSError the commands already report as one line
            f"{str(target)!r} is not a regular file; an output replaces a file, never a "
            "directory, device or pipe"
        )
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); give it the mode a plain open() would have
        # (the target's own when it exists)
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (read by setting it and restoring it at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(
    path: str | Path, write: Callable[[IO[Any]], None], *, binary: bool = False
) -> None:
    """Call ``write(handle)`` on a temporary file that then replaces ``path`` (module doc)."""
    with (
        atomic_path(path) as tmp,
        tmp.open("wb" if binary else "w", encoding=None if binary else "utf-8") as handle,
    ):
        write(handle)
        handle.flush()


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""

    def write(handle: IO[Any]) -> None:
        handle.write(text)

    write_atomic(path, write)


def output_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be written as an output file, or None: checked before a long run so
    that nothing computed is lost to a typo in the output path."""
    p = Path(path)
    if p.is_dir():
        return "is a directory"
    if p.exists() and not p.is_file():  # a device or pipe: an atomic write would replace it
        return "is not a regular file (a device, pipe or socket); give a file path"
    parent = p.parent
    if not parent.is_dir():
        return f"its folder {str(parent)!r} does not exist"
    if not os.access(parent, os.W_OK):
        return f"its folder {str(parent)!r} is not writable"
    if p.exists() and not os.access(p, os.W_OK):
        return "the file exists and is not writable"
    return None
