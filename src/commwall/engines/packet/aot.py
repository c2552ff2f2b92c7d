"""The packet engine's compiled event loop, built ahead of time into an extension module.

:mod:`commwall.engines.packet.fast_kernel` is numba code. Run as numba compiles it at run time
(JIT), the process carries numba and LLVM: ~65 MiB resident once numba is imported and ~64 MiB
more once the cached kernel's objects are loaded, before any network exists. numba can also
compile the same functions ahead of time into an ordinary CPython extension module (its
``numba.pycc``), which needs neither numba nor LLVM to import; the loop then runs in a process
that holds only Python, NumPy and the network. This module builds that extension once per
kernel source, numba, NumPy and Python version, into a per-user cache directory, and loads it.

* **Build**: in a child process (``python -m commwall.engines.packet.aot_build BUILD_DIR``), so the
  ~750 MiB the compiler peaks at is not the caller's; under ``fast.COMPILE_LOCK``, so parallel
  sweep workers build it once; into a temporary name renamed into place, so a killed build
  leaves nothing half-written. It takes 40–70 s on this project's 2-core machine, once.
  The build uses the same options as the JIT loop (no reference counting, the host CPU's
  instructions), so the two run at the same speed and give identical results event for event.
* **Where**: ``$COMMWALL_CACHE_DIR``, else ``$XDG_CACHE_HOME/commwall``, else
  ``~/.cache/commwall``, in ``packet-kernel/<key>/``; the key hashes the kernel's and the
  packer's source and the versions above, so any change builds anew.
* **Fallback**: where it cannot be built (no C compiler or Python headers, a numba without
  ``pycc``) the failure is remembered in that directory (``failed.txt``, with the reason) and
  the loop runs under numba's JIT as before; ``COMMWALL_PACKET_AOT=0`` asks for the JIT loop.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Final

#: The extension module's name (its ``PyInit_`` symbol).
MODULE_NAME: Final = "commwall_packet_kernel"
#: What the build leaves where it could not build the module: the reason, kept so later runs
#: go straight to the JIT loop instead of retrying a build that fails.
FAILED: Final = "failed.txt"
#: Seconds a build may take before it is given up on (it takes 40–70 s on 2 cores).
BUILD_TIMEOUT_S: Final = 1800.0

_HERE = Path(__file__).resolve().parent
#: Sources whose change changes the compiled loop or the arrays it is called with.
_SOURCES: Final = ("fast_kernel.py", "fast.py", "aot.py", "aot_build.py")

Runner = Callable[[tuple[Any, ...]], int]
#: The arrays the module was built for, written beside it: (dtype, dimensions) of each.
LAYOUT: Final = "layout.json"


class LayoutError(RuntimeError):
    """The state handed to the built loop is not the arrays it was built for."""


def layout(st: tuple[Any, ...]) -> list[tuple[str, int]]:
    """Each state array's dtype and number of dimensions (what the built loop's signature
    fixes; numba's JIT would compile another version for others, the built module cannot)."""
    return [(a.dtype.str, a.ndim) for a in st]


class _Checked:
    """The built ``run_kernel``, refusing a state of other arrays (or non-contiguous, read-only
    ones), which it would read as the arrays it was built for."""

    def __init__(self, native: Runner, expected: list[tuple[str, int]]) -> None:
        self.native = native
        self.expected = expected

    def __call__(self, st: tuple[Any, ...]) -> int:
        got = layout(st)
        if got != self.expected:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, self.expected, strict=False)) if a != b),
                min(len(got), len(self.expected)),
            )
            raise LayoutError(
                f"state array {first}: {got[first] if first < len(got) else 'missing'}, where "
                f"the built loop takes {self.expected[first] if first < len(self.expected) else 'none'}"
            )
        for i, a in enumerate(st):
            if not (a.flags.c_contiguous and a.flags.writeable):
                raise LayoutError(f"state array {i}: not a writeable C-contiguous array")
        return self.native(st)


def enabled() -> bool:
    """Whether the ahead-of-time loop is wanted (``COMMWALL_PACKET_AOT=0`` turns it off)."""
    return os.environ.get("COMMWALL_PACKET_AOT", "1").strip().lower() not in ("0", "no", "false")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "none"


@functools.cache
def cache_key() -> str:
    """Hash of everything the built module depends on: the kernel's, the packer's and the
    build's source, numba, llvmlite and NumPy versions, the Python build and the CPU
    (computed once per process, so its build and its load look in the same place)."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((_HERE / name).read_bytes())
    for dist in ("numba", "llvmlite", "numpy"):
        h.update(f"{dist}={_version(dist)};".encode())
    h.update(f"{sys.implementation.cache_tag};{sys.version};{platform.machine()};".encode())
    h.update(_cpu().encode())  # built for this CPU's instructions (target_cpu="host")
    return h.hexdigest()[:24]


def _cpu() -> str:
    """The CPU model and instruction-set flags (Linux ``/proc/cpuinfo``), so a cache shared by
    machines with other CPUs (a network home directory) holds one module per CPU kind; else the
    host's name."""
    try:
        lines = Path("/proc/cpuinfo").read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return platform.node()
    wanted = ("model name", "flags", "Features", "CPU part")  # x86; ARM reports the last two
    seen = {}
    for line in lines:
        key, _, value = line.partition(":")
        key = key.strip()
        if key in wanted and key not in seen:
            seen[key] = value.strip()
    return ";".join(f"{k}={seen[k]}" for k in sorted(seen)) or platform.node()


def cache_root() -> Path:
    """The per-user cache directory (module doc)."""
    explicit = os.environ.get("COMMWALL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "commwall"
    return Path.home() / ".cache" / "commwall"


def build_dir() -> Path:
    """Where the module for this :func:`cache_key` lives."""
    return cache_root() / "packet-kernel" / cache_key()


def module_file(directory: Path) -> Path | None:
    """The built module in ``directory`` under this Python's extension suffix, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = directory / f"{MODULE_NAME}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def load(directory: Path | None = None) -> Runner | None:
    """The built loop's ``run_kernel``, or None when it has not been built (or fails to load)."""
    where = build_dir() if directory is None else directory
    path = module_file(where)
    if path is None:
        return None
    try:
        expected = [(str(d), int(n)) for d, n in json.loads((where / LAYOUT).read_text("utf-8"))]
    except (OSError, ValueError, TypeError):
        return None
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        return None
    module: ModuleType = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    return _Checked(module.run_kernel, expected)


def failure(directory: Path | None = None) -> str | None:
    """Why the module could not be built here (None: no failed build is remembered)."""
    marker = (build_dir() if directory is None else directory) / FAILED
    try:
        return marker.read_text("utf-8").strip() or "unknown"
    except OSError:
        return None


def build(directory: Path | None = None) -> str | None:
    """Build the module into ``directory`` in a child process; None on success, else why not
    (also written to ``failed.txt`` there). The caller holds ``fast.COMPILE_LOCK``."""
    where = build_dir() if directory is None else directory
    if module_file(where) is not None:
        return None
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        return f"cannot create {where}: {e}"
    command = [sys.executable, "-m", "commwall.engines.packet.aot_build", str(where)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        why = f"the build did not finish: {e}"
    else:
        if done.returncode == 0 and module_file(where) is not None:
            return None
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        why = f"the build exited with {done.returncode}: " + " | ".join(tail)
    with contextlib.suppress(OSError):
        (where / FAILED).write_text(why + "\n", "utf-8")
    return why
