"""The build of :mod:`commwall.engines.packet.aot`'s extension module, run in a child process.

``python -m commwall.engines.packet.aot_build DIR`` imports numba, makes the kernel's functions
numba functions (:func:`~commwall.engines.packet.fast_kernel.jit_all`), types the state of a
tiny network packed as every run packs one, and has ``numba.pycc`` compile ``run_kernel`` for
that signature with the JIT loop's options into ``DIR`` — the state's layout first, then the
module, each renamed into place from a scratch directory.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numba
from numba.pycc import CC  # type: ignore[attr-defined]

from commwall.engines.packet import fast, fast_kernel
from commwall.engines.packet.aot import LAYOUT, MODULE_NAME, layout, module_file
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.traffic import build_traffic_network
from commwall.topology import fat_tree


def _sample_state() -> tuple[Any, ...]:
    """A packed state of a tiny network: the array types every run calls the loop with."""
    net = build_traffic_network(
        fat_tree(4, link_rate=12.5e9), [1], [0], 10_000, "uec", seed=0,
        config=PacketConfig(kernel="numba"), routing="spray",
    )  # fmt: skip
    return fast.pack_state(net)


def build_here(target: Path) -> None:
    """Compile the loop into ``target`` (run in the child process)."""
    fast_kernel.jit_all()
    sample = _sample_state()
    signature = (numba.typeof(sample),)  # type: ignore[no-untyped-call]
    with tempfile.TemporaryDirectory(dir=target, prefix=".build-") as scratch:
        cc = CC(MODULE_NAME)  # type: ignore[no-untyped-call]
        cc.output_dir = scratch
        cc.target_cpu = "host"  # as numba's JIT compiles
        cc.use_nrt = False  # as the JIT loop (fast_kernel._jit): it allocates nothing
        export = cc.export("run_kernel", signature)  # type: ignore[no-untyped-call]
        export(fast_kernel.run_kernel.py_func)  # type: ignore[attr-defined]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba.pycc's pending-deprecation notice
            cc.compile()
        built = module_file(Path(scratch))
        if built is None:
            raise RuntimeError(f"numba.pycc wrote no {MODULE_NAME} module")
        partial = Path(scratch) / LAYOUT
        partial.write_text(json.dumps(layout(sample)), "utf-8")
        os.replace(partial, target / LAYOUT)  # before the module: a module is never without it
        final = target / built.name
        shutil.move(str(built), str(final.with_suffix(".partial")))
        os.replace(final.with_suffix(".partial"), final)


if __name__ == "__main__":  # pragma: no cover - runs in the build's child process
    build_here(Path(sys.argv[1]))
