"""``commwall measure``: time real collectives on this machine with torch.distributed.

>>> # commwall measure --backend gloo --nprocs 4 --op all_reduce --min 1KiB --max 64MiB
>>> # commwall measure --nprocs 2 --cpus 0 --out gloo.log      (then: commwall calibrate nccl-tests gloo.log)

Prints nccl-tests' table (size, count, time, algbw, busbw, #wrong) and, with ``--out``, writes
it in nccl-tests' layout, which ``commwall nccl-tests`` and ``commwall calibrate nccl-tests``
read. Needs the optional extra: ``pip install 'commwall[torch]'``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from commwall.console import fail, friendly, out


def register(app: typer.Typer) -> None:
    """Add ``commwall measure`` to ``app``."""
    app.command("measure")(friendly(measure_command))


def measure_command(
    backend: Annotated[
        str, typer.Option(help="torch.distributed backend: gloo (CPU) or nccl (GPUs).")
    ] = "gloo",
    nprocs: Annotated[
        int | None,
        typer.Option(min=1, help="Processes (ranks). Default: 4, or the cores if fewer."),
    ] = None,
    op: Annotated[
        str,
        typer.Option(
            help="all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv; "
            "several comma-separated, or 'all'."
        ),
    ] = "all_reduce",
    min_size: Annotated[str, typer.Option("--min", help="Smallest size (nccl-tests -b).")] = "1KiB",
    max_size: Annotated[str, typer.Option("--max", help="Largest size (nccl-tests -e).")] = "64MiB",
    factor: Annotated[int, typer.Option(help="Size multiplier per step (nccl-tests -f).")] = 2,
    warmup: Annotated[int, typer.Option(help="Untimed calls per size (nccl-tests -w).")] = 5,
    iters: Annotated[int, typer.Option(help="Timed calls per size (nccl-tests -n).")] = 20,
    stat: Annotated[
        str,
        typer.Option(
            help="median: each call timed, the median kept (robust on shared CPUs); "
            "mean: nccl-tests' elapsed time over the back-to-back calls."
        ),
    ] = "median",
    cpus: Annotated[
        str | None,
        typer.Option(
            help="Pin rank i to CPU cpus[i mod n], e.g. '0' (all on one core) or '0,1,2,3'."
        ),
    ] = None,
    check: Annotated[bool, typer.Option(help="Check results (#wrong column).")] = True,
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Write the table in nccl-tests' layout here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Time real collectives on this machine (torch.distributed, like nccl-tests) and print
    nccl-tests' table; --out writes a log that `commwall calibrate nccl-tests` reads."""
    from commwall._version import __version__
    from commwall.collectives.ops import Op, parse_op
    from commwall.io.atomic import write_text_atomic
    from commwall.io.nccl_tests import format_nccl_tests
    from commwall.measure import MeasureConfig, MeasureError, measure
    from commwall.measure.bench import default_nprocs
    from commwall.units import parse_size

    try:
        names = [o for o in op.split(",") if o.strip()]
        ops = tuple(Op) if op.strip() == "all" else tuple(parse_op(o) for o in names)
    except ValueError as e:
        fail(f"--op: {e}")
    sizes = {}
    for name, text in (("--min", min_size), ("--max", max_size)):
        try:
            sizes[name] = int(parse_size(text))
        except ValueError as e:
            fail(f"{name}: {e}")
    try:
        pinned = tuple(int(c) for c in cpus.split(",")) if cpus else ()
    except ValueError:
        fail(f"--cpus: {cpus!r} is not a comma-separated list of CPU numbers, e.g. 0,1")
    try:
        config = MeasureConfig(
            backend=backend, nprocs=nprocs or default_nprocs(), ops=ops,
            min_bytes=sizes["--min"], max_bytes=sizes["--max"], factor=factor, warmup=warmup,
            iters=iters, check=check, timeout_s=timeout, stat=stat, cpus=pinned,
        )  # fmt: skip
    except ValueError as e:
        fail(_option_names(str(e)))
    if out_file is not None:  # before minutes of measuring, not after
        parent = out_file.resolve().parent
        if out_file.is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
            fail(f"--out: cannot write {str(out_file)!r} (no such writable directory, or a "
                 "directory)")  # fmt: skip
    try:
        runs = measure(config)
    except MeasureError as e:
        fail(str(e))
    import torch

    preamble = (
        f"commwall measure {__version__}: backend {config.backend}, {config.nprocs} processes, "
        f"torch {torch.__version__}, python {platform.python_version()}\n"
        f"time: {config.stat} of {config.iters} calls after {config.warmup} warm-up"
        + (f"; ranks pinned to CPUs {','.join(map(str, pinned))}" if pinned else "")
    )
    text = "".join(format_nccl_tests(run, preamble=preamble) for run in runs)
    if out_file is not None:
        try:
            write_text_atomic(out_file, text)
        except OSError as e:
            fail(f"--out: cannot write {str(out_file)!r}: {e.strerror or e}")
    if as_json:
        data = {
            "backend": config.backend,
            "nprocs": config.nprocs,
            "stat": config.stat,
            "device": runs[0].devices[0][2] if runs[0].devices else None,
            "runs": [
                {
                    "op": run.op,
                    "rows": [
                        {
                            "size": r.size,
                            "count": r.count,
                            "time_us": r.out_of_place.time_us,
                            "algbw_GBps": r.out_of_place.algbw_GBps,
                            "busbw_GBps": r.out_of_place.busbw_GBps,
                            "wrong": r.out_of_place.check,
                        }
                        for r in run.rows
                    ],
                    "avg_busbw_GBps": run.avg_busbw_GBps,
                }
                for run in runs
            ],
            "log": None if out_file is None else str(out_file),
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    out.print(text, end="", markup=False)
    wrong = sum(r.out_of_place.check or 0 for run in runs for r in run.rows)
    if wrong:
        out.print(f"[bold red]{wrong:g} wrong values: the collective returned wrong results[/]")
    if out_file is not None:
        out.print(
            f"wrote {out_file}; fit the model to it: commwall calibrate nccl-tests {out_file}"
        )


#: MeasureConfig fields and the options that set them.
_OPTIONS = {"backend": "--backend", "nprocs": "--nprocs", "op": "--op", "min": "--min",
            "max": "--max", "factor": "--factor", "warmup": "--warmup", "iters": "--iters",
            "stat": "--stat", "cpus": "--cpus", "timeout": "--timeout"}  # fmt: skip


def _option_names(message: str) -> str:
    """A MeasureConfig message with its field names spelled as the command's options."""
    return re.sub(
        r"(^|; )(\w+)(?=[: /])",
        lambda m: m.group(1) + _OPTIONS.get(m.group(2), m.group(2)),
        message,
    )
