"""Read the output of NVIDIA's nccl-tests (``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf``, ``alltoall_perf``, ``broadcast_perf``, ``reduce_perf``,
``sendrecv_perf``): the header, the devices, and every size's out-of-place and in-place time,
algbw and busbw.

Layouts, told apart by the column header (or, without one, by the row's token count):

* since nccl-tests 2.10: ``size count type redop root time algbw busbw #wrong time algbw busbw
  #wrong`` (``#wrong`` may be ``N/A`` when validation is off);
* older: ``size count type redop time algbw busbw error ...`` (``error`` a float such as
  ``0e+00``), and the oldest ``size count type time algbw busbw error ...`` (broadcast and
  friends printed ``root`` in place of ``redop``).

One file may hold several runs (each starts at a ``# nThread`` header). The operation comes from
``# Collective test starting: X_perf``, a command line naming ``X_perf``, or the caller; failing
those it is inferred from the rows' layout (:func:`infer_op`: the ``redop``/``root`` columns, the
``count``/``size`` ratio and the ``busbw``/``algbw`` ratio) and the run says so
(:attr:`NcclTestsRun.op_inferred`).

Launchers' line prefixes are removed before a line is read (:func:`strip_launcher_prefix`):
``[1,0]<stdout>:`` (``mpirun --tag-output``), ``(head, rank=0, pid=42)`` (Ray and SkyPilot
workers), ``0: `` (``srun --label``), ``host: `` (pdsh/clush), ``[pod/name/container] ``
(``kubectl logs --prefix``) and ISO-8601 timestamps (``kubectl logs --timestamps``, journald).
Lines that look like a result row but do not parse are reported with their line number and the
reason, never raised (:attr:`NcclTestsLog.problems`); of NCCL's own ``INFO`` lines the version,
the channel counts (``N coll channels, ... N p2p channels per peer``,
:attr:`NcclTestsRun.nccl_channels`) and the settings it read (``NCCL_X set by environment to
V``, :attr:`NcclTestsRun.nccl_env`) are kept; anything else is skipped. Format: nccl-tests
``src/common.cu`` (``PRINT`` of the header and rows) and ``doc/PERFORMANCE.md`` (algbw = size /
time; busbw = algbw × the op's factor).

>>> log = parse_nccl_tests(SAMPLE)
>>> run = log.runs[0]
>>> run.op, run.ranks, run.nccl_version, [r.size for r in run.rows]
('all_reduce', 2, '2.18.3', [1048576, 2097152])
>>> run.rows[1].out_of_place.busbw_GBps, run.rows[1].in_place.time_us
(12.5, 160.0)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from commwall.errors import CommwallError

__all__ = [
    "SAMPLE",
    "LogProblem",
    "NcclTestsError",
    "NcclTestsLog",
    "NcclTestsRow",
    "NcclTestsRun",
    "Timing",
    "format_nccl_tests",
    "infer_op",
    "parse_nccl_tests",
    "read_nccl_tests",
    "strip_launcher_prefix",
]

#: nccl-tests binaries and the operation each measures.
BINARIES: Final = {
    "all_reduce_perf": "all_reduce",
    "all_gather_perf": "all_gather",
    "reduce_scatter_perf": "reduce_scatter",
    "alltoall_perf": "alltoall",
    "broadcast_perf": "broadcast",
    "reduce_perf": "reduce",
    "sendrecv_perf": "sendrecv",
}

#: A small two-rank all_reduce_perf log in the current layout (for examples and tests).
SAMPLE: Final = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on      node1 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1002 on      node2 device  0 [0x07] NVIDIA H100 80GB HBM3
node1:1001:1001 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    101.0   10.38   10.38      0
     2097152        524288     float     sum      -1    168.0   12.48   12.50      0    160.0   13.11   13.11      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 11.62
#
"""

# the leading "#" is optional: logs pasted into Markdown lose it
_HEADER = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_DEVICE = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$")  # fmt: skip
_STARTING = re.compile(r"Collective test starting:\s*(\w+)")
_BINARY = re.compile(r"\b(" + "|".join(BINARIES) + r")\b")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_LIBRARY = re.compile(r"nccl-library=(\d+)")
#: NCCL's channel line once a communicator is built (``init.cc``; the collnet and nvls fields
#: appeared over the 2.1x releases): coll, collnet, nvls, p2p, p2p per peer.
_CHANNELS = re.compile(
    r"NCCL INFO (\d+) coll channels,(?: (\d+) collnet channels,)?(?: (\d+) nvls channels,)?"
    r" (\d+) p2p channels, (\d+) p2p channels per peer"
)
#: NCCL's note of each setting it reads (``NCCL_DEBUG=INFO``): ``NCCL_X set by environment to V``.
_ENV = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S.*?)\.?\s*$")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_COLUMNS = re.compile(r"^#?\s+size\s+count\s+type\b")
_NUMBER_START = re.compile(r"^\s*\d")
# written by `commwall measure` (torch.distributed instead of NCCL's own benchmark)
_MEASURE = re.compile(r"^#\s*commwall measure\b.*?\bbackend\s+(\w+)")


#: Launcher prefixes, tried in turn at the start of a line (module doc); each needs the rest of
#: the line, so a bare prefix is left alone.
_PREFIXES: Final = (
    re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:"),  # mpirun --tag-output
    re.compile(r"^\((?:[^()]*\b(?:pid|rank)=\d+[^()]*)\)\s+"),  # Ray / SkyPilot workers
    re.compile(r"^\s*\d{1,6}:\s"),  # srun --label
    re.compile(r"^\[(?:pod|job|deployment)/[^\]]+\]\s"),  # kubectl logs --prefix
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s"),
    re.compile(r"^[A-Za-z][\w.-]*:\s+(?=[#\d\s])"),  # pdsh / clush "host: "
)


def strip_launcher_prefix(line: str) -> str:
    """``line`` without the prefixes job launchers add (module doc), up to three stacked.

    >>> strip_launcher_prefix("[1,0]<stdout>:     1048576        262144     float     sum")
    '     1048576        262144     float     sum'
    >>> strip_launcher_prefix("(head, rank=0, pid=2353) # nThread 1 nGpus 1")
    '# nThread 1 nGpus 1'
    >>> strip_launcher_prefix("  3: # Avg bus bandwidth    : 12.5")
    '# Avg bus bandwidth    : 12.5'
    """
    for _ in range(3):
        for pattern in _PREFIXES:
            m = pattern.match(line)
            if m and m.end() < len(line):
                line = line[m.end() :]
                break
        else:
            return line
    return line


class NcclTestsError(CommwallError, ValueError):
    """A log could not be read at all (no file, no result rows); the message says which."""


@dataclass(frozen=True)
class Timing:
    """One measurement of one size: time (µs), algbw and busbw (GB/s), and the validation
    column: wrong values (``#wrong``) or the largest error (older ``error``); None when the run
    did not validate (``N/A``)."""

    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    check: float | None


@dataclass(frozen=True)
class NcclTestsRow:
    """One message size: bytes, elements, data type, reduction, root and both timings."""

    line: int
    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Timing
    in_place: Timing | None


@dataclass(frozen=True)
class LogProblem:
    """A line that looked like a result and was not one."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


@dataclass
class NcclTestsRun:
    """One run of one binary: its header facts and its rows."""

    source: str
    line: int
    op: str | None
    threads: int
    gpus_per_thread: int
    devices: list[tuple[int, str, str]] = field(default_factory=list)  # (rank, host, device)
    nccl_version: str | None = None
    avg_busbw_GBps: float | None = None
    rows: list[NcclTestsRow] = field(default_factory=list)
    #: The torch.distributed backend of a ``commwall measure`` log (None: nccl-tests itself).
    backend: str | None = None
    #: How the operation was inferred when the log did not name it (None: it was named).
    op_inferred: str | None = None
    #: NCCL's own channel counts from its ``INFO`` line (``NCCL_DEBUG=INFO``), the first one
    #: logged for the run: ``coll``, ``collnet``, ``nvls`` (absent from older NCCL's line),
    #: ``p2p`` and ``p2p_per_peer``; None when the log has no such line.
    nccl_channels: dict[str, int] | None = None
    #: The ``NCCL_*`` settings NCCL says it read from the environment (``NCCL_DEBUG=INFO``:
    #: ``NCCL_X set by environment to V``), the first value of each.
    nccl_env: dict[str, str] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        """Ranks in the run (distinct rank numbers in ``# Using devices``; else threads × GPUs)."""
        seen = {r for r, _, _ in self.devices}
        return len(seen) if seen else self.threads * self.gpus_per_thread

    @property
    def hosts(self) -> int:
        """Distinct host names among the devices (1 when none were listed)."""
        return len({h for _, h, _ in self.devices}) or 1


@dataclass
class NcclTestsLog:
    """Every run in one or more logs, and every line that did not parse."""

    runs: list[NcclTestsRun]
    problems: list[LogProblem]


def read_nccl_tests(paths: list[str | Path], *, op: str | None = None) -> NcclTestsLog:
    """Parse the nccl-tests logs at ``paths`` (``op`` for runs that do not name their binary;
    else a file name such as ``all_gather_perf.log`` names it)."""
    runs: list[NcclTestsRun] = []
    problems: list[LogProblem] = []
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise NcclTestsError(f"{p}: cannot read it ({e.strerror or e})") from None
        named = _BINARY.search(p.name)
        guess = op or (BINARIES[named.group(1)] if named else None)
        log = parse_nccl_tests(text, source=str(p), op=guess)
        runs += log.runs
        problems += log.problems
    return NcclTestsLog(runs, problems)


def parse_nccl_tests(text: str, *, source: str = "<log>", op: str | None = None) -> NcclTestsLog:
    """Parse nccl-tests output ``text`` (module doc). Never raises on malformed lines."""
    runs: list[NcclTestsRun] = []
    problems: list[LogProblem] = []
    run: NcclTestsRun | None = None
    columns: list[str] | None = None
    pending_op = op
    version = None
    backend = None
    pending_env: dict[str, str] = {}  # settings logged before a run's header
    for number, raw in enumerate(text.splitlines(), start=1):
        line = strip_launcher_prefix(raw.rstrip())
        if m := _MEASURE.match(line):
            backend = m.group(1)
            if run is not None and not run.rows:
                run.backend = backend
            continue
        if (m := _STARTING.search(line)) or (m := _BINARY.search(line)):
            name = m.group(1)
            pending_op = BINARIES.get(name, BINARIES.get(f"{name}_perf", pending_op))
            if run is not None and not run.rows:
                run.op = pending_op
            continue
        if (m := _VERSION.search(line)) or (m := _LIBRARY.search(line)):
            version = m.group(1) if "." in m.group(1) else _library_version(m.group(1))
            if run is not None:
                run.nccl_version = version
            continue
        if m := _HEADER.match(line):
            run = NcclTestsRun(source, number, pending_op, int(m.group(1)), int(m.group(2)))
            run.nccl_version, run.backend = version, backend
            run.nccl_env, pending_env = pending_env, {}
            runs.append(run)
            columns = None
            continue
        if m := _ENV.search(line):
            if run is not None and not run.rows:
                run.nccl_env.setdefault(m.group(1), m.group(2))
            else:
                pending_env.setdefault(m.group(1), m.group(2))
            continue
        if m := _CHANNELS.search(line):
            if run is not None and run.nccl_channels is None and not run.rows:
                names = ("coll", "collnet", "nvls", "p2p", "p2p_per_peer")
                run.nccl_channels = {k: int(v) for k, v in zip(names, m.groups(), strict=True) if v}
            continue
        if m := _DEVICE.match(line):
            if run is not None:
                run.devices.append((int(m.group(1)), m.group(2), m.group(3)))
            continue
        if _COLUMNS.match(line):
            columns = line.lstrip("#").split()
            continue
        if m := _AVG.match(line):
            try:
                avg = float(m.group(1))
            except ValueError:
                problems.append(
                    LogProblem(source, number, f"average {m.group(1)!r} is not a number")
                )
                continue
            if run is not None:
                run.avg_busbw_GBps = avg
            continue
        if line.lstrip().startswith("#") or not _NUMBER_START.match(line):
            continue  # comments, NCCL INFO lines, shell prompts
        if run is None:  # rows with no header before them: a run of unknown shape
            run = NcclTestsRun(source, number, pending_op, 1, 0)
            run.nccl_version = version
            run.nccl_env, pending_env = pending_env, {}
            runs.append(run)
        row = _row(line, number, columns)
        if isinstance(row, str):
            problems.append(LogProblem(source, number, row))
        else:
            run.rows.append(row)
    kept = [r for r in runs if r.rows or r.devices]
    for r in kept:
        if r.op is None and r.rows:
            r.op, r.op_inferred = infer_op(r)
    return NcclTestsLog(kept, problems)


#: Bytes per element of nccl-tests' data type names (``-d``; nccl-tests ``src/common.cu``).
TYPE_SIZES: Final = {
    "int8": 1, "char": 1, "uint8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1,
    "half": 2, "float16": 2, "bfloat16": 2, "int32": 4, "int": 4, "uint32": 4, "float": 4,
    "float32": 4, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}  # fmt: skip


def infer_op(run: NcclTestsRun) -> tuple[str | None, str | None]:
    """The operation of a run whose log does not name it, read off its rows, and how.

    nccl-tests prints ``redop none`` for all_gather, alltoall and broadcast (``root`` >= 0 for
    broadcast); ``count`` is ``size / (type size x ranks)`` for all_gather, reduce_scatter and
    alltoall and ``size / type size`` otherwise; ``busbw / algbw`` is ``2(n-1)/n`` for all_reduce
    and 1 for sendrecv, broadcast and reduce (``src/*.cu``, ``doc/PERFORMANCE.md``). all_gather
    and alltoall print the same layout: such a run is taken as all_gather, and says so.
    Returns ``(None, None)`` when the rows do not tell.
    """
    rows = [r for r in run.rows if r.size > 0 and r.count > 0]
    if not rows:
        return None, None
    first = rows[-1]
    type_size = TYPE_SIZES.get(first.dtype.lower())
    n = run.ranks
    per_rank = (
        type_size is not None
        and n > 1
        and all(abs(r.count * type_size * n - r.size) < type_size * n for r in rows)
    )
    ratios = [r.out_of_place.busbw_GBps / r.out_of_place.algbw_GBps for r in rows
              if r.out_of_place.algbw_GBps >= 0.1]  # fmt: skip
    ratio = sorted(ratios)[len(ratios) // 2] if ratios else None
    rooted = first.root is not None and first.root >= 0
    if first.redop == "none":
        if rooted:
            return "broadcast", "redop none with a root: broadcast"
        if per_rank or n <= 1:
            return (
                "all_gather",
                "redop none, count = size / (type size x ranks): all_gather (alltoall prints the same layout; give --op alltoall if it was one)",
            )
        return None, None
    if first.redop is None:
        return None, None
    if rooted:
        return "reduce", f"redop {first.redop} with a root: reduce"
    if per_rank:
        return (
            "reduce_scatter",
            "count = size / (type size x ranks) with a reduction: reduce_scatter",
        )
    if ratio is not None and n > 2 and abs(ratio - 1.0) < 0.02:
        return "sendrecv", "busbw = algbw with a reduction column and no root: sendrecv"
    if ratio is None or n <= 2 or abs(ratio - 2 * (n - 1) / n) < 0.05:
        return "all_reduce", f"redop {first.redop}, count = size / type size: all_reduce"
    return None, None


def format_nccl_tests(run: NcclTestsRun, *, preamble: str = "") -> str:
    """``run`` in nccl-tests' current layout (``src/common.cu``), which :func:`parse_nccl_tests`
    reads back: header, devices, one row per size with its out-of-place (and in-place) timing,
    and the average bus bandwidth. ``preamble`` lines (each without its ``#``) come first.

    >>> again = parse_nccl_tests(format_nccl_tests(parse_nccl_tests(SAMPLE).runs[0])).runs[0]
    >>> [r.out_of_place.time_us for r in again.rows]
    [100.0, 168.0]
    """
    lines = [f"# {p}" for p in preamble.splitlines()]
    binary = next((b for b, o in BINARIES.items() if o == run.op), None)
    if binary:
        lines.append(f"# Collective test starting: {binary}")
    lines.append(f"# nThread {run.threads} nGpus {run.gpus_per_thread}")
    if run.nccl_version:
        lines.append(f"# NCCL version {run.nccl_version}")
    lines += ["#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Group  0 Pid      0 on {h:>10} device  0 [0x00] {d}"
              for r, h, d in run.devices]  # fmt: skip
    both = any(r.in_place is not None for r in run.rows)
    head = f"#{'size':>11} {'count':>13} {'type':>9} {'redop':>7} {'root':>7}"
    timing = f" {'time':>8} {'algbw':>7} {'busbw':>7} {'#wrong':>6}"
    units = f"#{'(B)':>11} {'(elements)':>13} {'':>9} {'':>7} {'':>7}"
    unit = f" {'(us)':>8} {'(GB/s)':>7} {'(GB/s)':>7} {'':>6}"
    lines += ["#", head + timing + (timing if both else ""), units + unit + (unit if both else "")]

    def cells(t: Timing) -> str:
        check = "N/A" if t.check is None else f"{t.check:g}"
        return f" {t.time_us:8.2f} {t.algbw_GBps:7.2f} {t.busbw_GBps:7.2f} {check:>6}"

    for r in run.rows:
        lead = f" {r.size:11d} {r.count:13d} {r.dtype:>9} {r.redop or 'none':>7} "
        lead += f"{-1 if r.root is None else r.root:7d}"
        tail = cells(r.in_place) if both and r.in_place is not None else ""
        lines.append(lead + cells(r.out_of_place) + tail)
    if run.avg_busbw_GBps is not None:
        lines.append(f"# Avg bus bandwidth    : {run.avg_busbw_GBps:g}")
    lines.append("#")
    return "\n".join(lines) + "\n"


def _library_version(code: str) -> str:
    """NCCL's integer version (``21903``) as text (``2.19.3``).

    >>> _library_version("21903"), _library_version("2708")
    ('2.19.3', '2.7.8')
    """
    n = int(code)
    if n >= 10000:
        return f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    return f"{n // 1000}.{n // 100 % 10}.{n % 100}"


def _row(line: str, number: int, columns: list[str] | None) -> NcclTestsRow | str:
    """One result row, or the reason it is not one."""
    tokens = line.split()
    lead = _lead_columns(columns, len(tokens))
    if lead is None:
        return f"{len(tokens)} fields: not a result row of any nccl-tests layout (truncated?)"
    fields = dict(zip(lead, tokens, strict=False))
    try:
        size, count = int(fields["size"]), int(fields["count"])
        redop = fields.get("redop")
        root = int(fields["root"]) if "root" in fields else None
        rest = tokens[len(lead) :]
        out = _timing(rest[:4])
        inp = _timing(rest[4:8]) if len(rest) >= 8 else None
    except (ValueError, KeyError) as e:
        return f"unreadable result row ({e})"
    if size < 0 or count < 0:
        return f"negative size or count ({size}, {count})"
    if fields.get("type", "").replace("_", "").isalnum() is False:
        return f"data type {fields.get('type')!r} is not a word"
    return NcclTestsRow(number, size, count, fields["type"], redop, root, out, inp)


def _lead_columns(columns: list[str] | None, n: int) -> list[str] | None:
    """The columns before the timings, from the header, else from the token count."""
    if columns is not None:
        lead = columns[: columns.index("time")] if "time" in columns else None
        if lead is not None and n in (len(lead) + 4, len(lead) + 8):
            return lead
    for lead in (["size", "count", "type", "redop", "root"], ["size", "count", "type", "redop"],
                 ["size", "count", "type"]):  # fmt: skip
        if n in (len(lead) + 8, len(lead) + 4):
            return lead
    return None


def _timing(cells: list[str]) -> Timing:
    if len(cells) != 4:
        raise ValueError(f"{len(cells)} timing fields, need 4")
    time_us, algbw, busbw = (float(c) for c in cells[:3])
    for name, value in (("time", time_us), ("algbw", algbw), ("busbw", busbw)):
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"{name}={value}")
    check = None if cells[3] == "N/A" else float(cells[3])
    if check is not None and not check >= 0:
        raise ValueError(f"validation column {cells[3]!r}")
    return Timing(time_us, algbw, busbw, check)
