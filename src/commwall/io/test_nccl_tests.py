"""nccl-tests logs: every layout, several runs per file, bad lines reported with their number,
and no input that makes the parser crash (hypothesis)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commwall.io import nccl_tests
from commwall.io.nccl_tests import (
    SAMPLE,
    NcclTestsError,
    parse_nccl_tests,
    read_nccl_tests,
)

# The layout before redop/root columns had a root (2017-2019 builds): size count type time ...
OLDEST = """\
./build/broadcast_perf -b 64K -e 128K -f 2 -g 2
# nThread 1 nGpus 2 minBytes 65536 maxBytes 131072 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  40001 on    box device  0 [0x3b] Tesla V100-PCIE-32GB
#   Rank  1 Pid  40001 on    box device  1 [0xd8] Tesla V100-PCIE-32GB
#
       65536          8192   float    16.00    4.10    4.10  0e+00    15.00    4.37    4.37  0e+00
      131072         16384   float    24.00    5.46    5.46  0e+00    23.00    5.70    5.70  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 4.9
"""

# redop but no root column, ``error`` as a float (2019-2021 builds); two runs in one file
TWO_RUNS = """\
# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
#                                                     out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum    30.00    0.00    0.00  0e+00    29.00    0.00    0.00  0e+00
          16             4     float     sum    30.50    0.00    0.00  1e-07    29.50    0.00    0.00  0e+00
# Avg bus bandwidth    : 0.0001
# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_gather_perf
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576         32768     float    none      -1    20.00   52.43   45.88    N/A    19.00   55.19   48.29    N/A
"""


def test_current_layout_sample() -> None:
    run = parse_nccl_tests(SAMPLE).runs[0]
    assert run.op == "all_reduce" and run.ranks == 2 and run.hosts == 2
    assert run.devices[0] == (0, "node1", "NVIDIA H100 80GB HBM3")
    assert run.nccl_version == "2.18.3" and run.avg_busbw_GBps == 11.62
    first = run.rows[0]
    assert (first.size, first.count, first.dtype, first.redop, first.root) == (
        1048576, 262144, "float", "sum", -1,
    )  # fmt: skip
    assert first.out_of_place.busbw_GBps == 10.49 and first.out_of_place.check == 0
    assert first.in_place is not None and first.in_place.time_us == 101.0


def test_oldest_layout_binary_from_command_line() -> None:
    log = parse_nccl_tests(OLDEST)
    assert not log.problems
    run = log.runs[0]
    assert run.op == "broadcast" and run.ranks == 2 and run.hosts == 1
    assert [r.size for r in run.rows] == [65536, 131072]
    assert run.rows[0].redop is None and run.rows[0].root is None
    assert run.rows[1].out_of_place.time_us == 24.0


def test_several_runs_old_and_new_layouts_and_versions() -> None:
    log = parse_nccl_tests(TWO_RUNS, op="all_reduce")
    assert not log.problems
    first, second = log.runs
    assert first.op == "all_reduce" and first.ranks == 8  # 1 thread x 8 GPUs, no device list
    assert first.rows[1].out_of_place.check == pytest.approx(1e-7)  # older: an error, not a count
    assert second.op == "all_gather" and second.nccl_version == "2.19.3"
    assert second.rows[0].redop == "none" and second.rows[0].root == -1
    assert second.rows[0].out_of_place.check is None  # validation off: N/A


def test_bad_lines_are_reported_with_their_number() -> None:
    lines = SAMPLE.splitlines()
    lines[12] = lines[12][:40]  # a row cut short (the job was killed)
    lines.append(
        "     4194304       1048576     float     sum      -1    abc   1.0   1.0   0   1.0 1.0 1.0 0"
    )
    log = parse_nccl_tests("\n".join(lines), source="job.out")
    assert [r.size for r in log.runs[0].rows] == [1048576]  # the 2 MiB row was cut
    reasons = {p.line: p.reason for p in log.problems}
    assert set(reasons) == {13, len(lines)}
    assert "fields" in reasons[13] and "unreadable" in reasons[len(lines)]
    assert str(log.problems[0]).startswith("job.out:13: ")


def test_files_name_their_op_and_missing_files_are_errors(tmp_path: Path) -> None:
    body = SAMPLE.replace("# Collective test starting: all_reduce_perf\n", "")
    path = tmp_path / "reduce_scatter_perf.log"
    path.write_text(body)
    assert read_nccl_tests([path]).runs[0].op == "reduce_scatter"
    assert read_nccl_tests([path], op="all_gather").runs[0].op == "all_gather"
    with pytest.raises(NcclTestsError, match="cannot read"):
        read_nccl_tests([tmp_path / "nope.log"])


def test_logs_pasted_into_markdown_lose_their_hashes() -> None:
    """Issue threads often show logs whose leading '#' Markdown ate (e.g. NVIDIA/nccl#583)."""
    stripped = "\n".join(line[1:] if line.startswith("#") else line for line in SAMPLE.splitlines())
    run = parse_nccl_tests(stripped).runs[0]
    assert run.op == "all_reduce" and run.ranks == 2 and len(run.rows) == 2
    assert run.avg_busbw_GBps == 11.62


def test_duplicated_headers_of_a_misconfigured_launch() -> None:
    """nccl-tests built without MPI under mpirun: every process prints its own header as rank
    0 of a 1-rank job (NVIDIA/nccl-tests#107 shows the shape): one rank each, said plainly."""
    header = SAMPLE.splitlines()[1]
    text = "\n".join([
        header, "# Using devices", "#  Rank  0 Group  0 Pid 11 on a device  0 [0x0] GPU",
        header, "# Using devices", "#  Rank  0 Group  0 Pid 22 on b device  0 [0x0] GPU",
        *SAMPLE.splitlines()[9:13],
    ])  # fmt: skip
    runs = parse_nccl_tests(text, op="all_reduce").runs
    assert [r.ranks for r in runs] == [1, 1]
    assert runs[0].rows == [] and len(runs[1].rows) == 2


def test_library_version_codes() -> None:
    assert nccl_tests._library_version("22703") == "2.27.3"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_crashes_the_parser(text: str) -> None:
    log = parse_nccl_tests(text)
    for p in log.problems:
        assert 1 <= p.line <= max(1, len(text.splitlines()))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 120), st.text(max_size=6)), max_size=6)
)
def test_garbled_sample_never_crashes(edits: list[tuple[int, int, str]]) -> None:
    lines = SAMPLE.splitlines()
    for row, col, junk in edits:
        if row < len(lines):
            lines[row] = lines[row][:col] + junk + lines[row][col + len(junk) :]
    log = parse_nccl_tests("\n".join(lines))
    for run in log.runs:
        for r in run.rows:
            assert r.size >= 0 and r.out_of_place.time_us >= 0


def test_doctests() -> None:
    assert doctest.testmod(nccl_tests).failed == 0


# One 4-rank run whose binary is not named, in the current layout; {redop}, {root}, {count} and
# {busbw} are filled in per operation (nccl-tests src/*.cu print these layouts).
UNNAMED = """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid 1 on a device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 2 on a device  1 [0x2b] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid 3 on b device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid 4 on b device  1 [0x2b] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576       {c1}     float    {redop}    {root}    100.0   10.49   {b1}      0    100.0   10.49   {b1}      0
     2097152       {c2}     float    {redop}    {root}    180.0   11.65   {b2}      0    180.0   11.65   {b2}      0
"""


def _unnamed(redop: str, root: int, per_rank: bool, factor: float) -> str:
    div = 4 * (4 if per_rank else 1)
    return UNNAMED.format(
        redop=redop, root=root, c1=1048576 // div, c2=2097152 // div,
        b1=f"{10.49 * factor:.2f}", b2=f"{11.65 * factor:.2f}",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("redop", "root", "per_rank", "factor", "op"),
    [
        ("sum", -1, False, 1.5, "all_reduce"),  # busbw/algbw = 2(n-1)/n
        ("sum", -1, True, 0.75, "reduce_scatter"),
        ("none", -1, True, 0.75, "all_gather"),  # alltoall prints the same: said in the note
        ("none", 0, False, 1.0, "broadcast"),
        ("sum", 0, False, 1.0, "reduce"),
        ("sum", -1, False, 1.0, "sendrecv"),
    ],
)
def test_an_unnamed_run_gets_its_operation_from_its_rows(
    redop: str, root: int, per_rank: bool, factor: float, op: str
) -> None:
    run = parse_nccl_tests(_unnamed(redop, root, per_rank, factor)).runs[0]
    assert run.op == op
    assert run.op_inferred and op in run.op_inferred
    named = parse_nccl_tests(_unnamed(redop, root, per_rank, factor), op="alltoall").runs[0]
    assert named.op == "alltoall" and named.op_inferred is None


def test_rows_that_do_not_tell_leave_the_operation_unknown() -> None:
    # A reduction, one count per rank's full buffer, but busbw/algbw fits no operation.
    run = parse_nccl_tests(_unnamed("sum", -1, False, 1.2)).runs[0]
    assert run.op is None and run.op_inferred is None


@pytest.mark.parametrize(
    "prefix",
    [
        "[1,0]<stdout>:",  # mpirun --tag-output
        "(head, rank=0, pid=2353) ",  # Ray / SkyPilot
        "(worker1, rank=1, pid=977, ip=10.0.0.2) ",
        "  0: ",  # srun --label
        "[pod/nccl-test-worker-0/main] ",  # kubectl logs --prefix
        "2026-03-01T12:00:01.123456Z ",  # kubectl --timestamps, docker logs -t
        "gpu-node-17: ",  # pdsh / clush
        "2026-03-01T12:00:01Z [1,0]<stdout>:",  # stacked
    ],
)
def test_launcher_prefixes_are_stripped_and_the_log_reads_the_same(prefix: str) -> None:
    text = _unnamed("sum", -1, False, 1.5)
    plain = parse_nccl_tests(text).runs[0]
    tagged = parse_nccl_tests("".join(prefix + line + "\n" for line in text.splitlines()))
    assert not tagged.problems
    run = tagged.runs[0]
    assert run.op == plain.op == "all_reduce"
    assert run.ranks == 4 and run.hosts == 2
    assert [r.size for r in run.rows] == [1048576, 2097152]
    assert run.rows[1].out_of_place.busbw_GBps == pytest.approx(17.48)


def test_a_bare_prefix_or_a_data_row_is_left_alone() -> None:
    assert nccl_tests.strip_launcher_prefix("[1,0]<stdout>:") == "[1,0]<stdout>:"
    row = "     1048576        262144     float     sum      -1    100.0   10.49   15.73      0"
    assert nccl_tests.strip_launcher_prefix(row) == row
    assert nccl_tests.strip_launcher_prefix("# Avg bus bandwidth    : 12.5") == (
        "# Avg bus bandwidth    : 12.5"
    )


def test_nccl_channel_counts_are_read_from_its_info_line() -> None:
    """init.cc logs "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels,
    %d p2p channels per peer"; older NCCL left out collnet and nvls. The first line of a run
    counts (every rank prints one), and a later run keeps its own."""
    version = "node1:1001:1001 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    info = "node{}:1001:1010 [0] NCCL INFO {} coll channels, {}{} p2p channels, {} p2p channels per peer\n"
    new = info.format(1, 4, "4 collnet channels, 0 nvls channels, ", 4, 4)
    other_rank = info.format(2, 8, "8 collnet channels, 0 nvls channels, ", 8, 8)
    old = info.format(1, 16, "", 16, 2)
    first_run = SAMPLE.replace(version, version + new + other_rank)
    log = parse_nccl_tests(first_run + SAMPLE.replace(version, old))
    first, later = log.runs
    assert first.nccl_channels == {"coll": 4, "collnet": 4, "nvls": 0, "p2p": 4, "p2p_per_peer": 4}
    assert later.nccl_channels == {"coll": 16, "p2p": 16, "p2p_per_peer": 2}
    assert parse_nccl_tests(SAMPLE).runs[0].nccl_channels is None


def test_the_settings_nccl_read_are_kept_per_run() -> None:
    """NCCL_DEBUG=INFO logs "NCCL_X set by environment to V" (with a trailing period for
    numeric parameters); the first value of each counts, and a setting logged before a run's
    header belongs to that run."""
    version = "node1:1001:1001 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    note = "node1:1001:1010 [0] NCCL INFO {} set by environment to {}\n"
    first = SAMPLE.replace(
        version,
        version
        + note.format("NCCL_MIN_NCHANNELS", "32.")
        + note.format("NCCL_MIN_NCHANNELS", "8.")
        + note.format("NCCL_SOCKET_IFNAME", "ens6f0np0"),
    )
    later = note.format("NCCL_ALGO", "Ring") + SAMPLE
    one, two = parse_nccl_tests(first + later).runs
    assert one.nccl_env == {"NCCL_MIN_NCHANNELS": "32", "NCCL_SOCKET_IFNAME": "ens6f0np0"}
    assert two.nccl_env == {"NCCL_ALGO": "Ring"}
    assert parse_nccl_tests(SAMPLE).runs[0].nccl_env == {}
