"""``commwall packet incast|permutation``: tables, JSON, the flow-engine cross-check, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from commwall.cli import app
from commwall.commands.packet import _fat_tree_radix, _sparkline

runner = CliRunner()
SMALL = ("--size", "256KB", "--link", "100Gb/s")


def invoke(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_incast_every_fabric_json() -> None:
    data = invoke("packet", "incast", "--senders", "16", *SMALL, "--buffer", "1MiB", "--json")
    assert data["pattern"] == "incast" and data["flows"] == 16
    assert data["topology"].startswith("fat-tree k=6")  # smallest fat tree with 17 hosts
    by = {f["fabric"]: f for f in data["fabrics"]}
    assert set(by) == {"ib", "roce", "roce-nopfc", "uec", "lossy"}
    assert by["ib"]["counters"]["drop_packets"] == 0
    assert by["roce"]["counters"]["drop_packets"] == 0
    assert by["roce"]["counters"]["pause_frames"] > 0
    assert by["roce-nopfc"]["counters"]["drop_packets"] > 0
    assert by["uec"]["counters"]["trim_packets"] > 0
    assert by["uec"]["routing"] == "spray" and by["ib"]["routing"] == "ecmp"
    for f in data["fabrics"]:
        # nothing finishes before the receiver's link could carry every byte
        assert f["fct_s"]["max"] >= f["ideal_completion_s"] * 0.999
        assert "no buffer above its size" in f["invariants_checked"]


def test_incast_table_names_what_the_packets_did() -> None:
    result = runner.invoke(app, ["packet", "incast", "--senders", "8", *SMALL, "--fabric", "roce"])
    assert result.exit_code == 0, result.output
    for text in ("incast 8:1", "Completion", "What the packets did", "roce hottest ports",
                 "invariants checked", "events/s", "Python event loop"):  # fmt: skip
        assert text in result.output


def test_kernel_option_picks_the_event_loop_and_both_agree() -> None:
    """``--kernel python|numba`` forces an event loop (auto compiles only large runs): the same
    figures either way; an unknown loop is a clear error."""
    pytest.importorskip("numba")
    args = ("packet", "incast", "--senders", "8", *SMALL, "--fabric", "roce", "--json")
    runs = {k: invoke(*args, "--kernel", k)["fabrics"][0] for k in ("python", "numba")}
    assert runs["python"]["kernel"] == "python" and runs["numba"]["kernel"] == "numba"
    for run in runs.values():
        for volatile in ("kernel", "wall_s", "events_per_s"):
            run.pop(volatile)
    assert runs["python"] == runs["numba"]
    bad = runner.invoke(app, ["packet", "incast", "--senders", "2", "--kernel", "cuda"])
    assert bad.exit_code != 0 and "kernel='cuda'" in bad.output and "'numba'" in bad.output


def test_permutation_with_flow_engine_cross_check() -> None:
    data = invoke(
        "packet", "permutation", "--radix", "4", *SMALL, "--fabric", "ib", "--flow", "--json"
    )
    assert data["flows"] == 16 and data["endpoints"] == 16
    packet = data["fabrics"][0]
    flow = data["flow_engine"][0]
    assert flow["routing"] == packet["routing"] == "ecmp"
    assert packet["fct_s"]["max"] == pytest.approx(flow["fct_s"]["max"], rel=0.15)


def test_pre_fec_ber_sets_packet_errors_and_fec_latency() -> None:
    base = ("packet", "permutation", "--radix", "4", *SMALL, "--fabric", "roce", "--json")
    clean = invoke(*base)
    noisy = invoke(*base, "--pre-fec-ber", "1e-3", "--fec", "kp4")  # KP4 near its threshold
    links = noisy["link_errors"]
    assert links["fec"] == "kp4" and 0 < links["packet_error"] < 0.01
    assert links["fec_latency_s"] > 0
    assert noisy["fabrics"][0]["counters"]["corrupt_packets"] > 0
    # every hop pays the FEC latency: the fastest flow finishes later than on clean links
    assert noisy["fabrics"][0]["fct_s"]["min"] > clean["fabrics"][0]["fct_s"]["min"]


def test_ecn_thresholds_and_timeout_reach_the_fabric() -> None:
    base = ("packet", "incast", "--senders", "8", *SMALL, "--fabric", "roce", "--json")
    default = invoke(*base)["fabrics"][0]["counters"]
    low = invoke(*base, "--ecn", "20KB,200KB,1")["fabrics"][0]["counters"]
    assert low["ecn_marks"] > default["ecn_marks"]  # marking starts far below 400 KB
    assert invoke(*base, "--rto", "1ms")["fabrics"][0]["counters"]["drop_packets"] == 0


def test_catalog_switch_sets_buffer_and_latency() -> None:
    base = ("packet", "incast", "--senders", "4", *SMALL, "--fabric", "lossy", "--json")
    spectrum = invoke(*base, "--switch", "spectrum-4-sn5600")
    assert spectrum["buffer_bytes"] == 128_000_000  # the part's shared buffer
    plain = invoke(*base)
    assert plain["buffer_bytes"] == 16 * 2**20
    # 600 ns per switch instead of the builder's 150 ns: one flow alone finishes later
    one = ("packet", "incast", "--senders", "1", *SMALL, "--fabric", "ib", "--json")
    slow = invoke(*one, "--switch", "spectrum-4-sn5600")["fabrics"][0]["fct_s"]["max"]
    fast = invoke(*one)["fabrics"][0]["fct_s"]["max"]
    assert slow - fast == pytest.approx(450e-9, rel=0.01)  # one switch between two hosts
    explicit = invoke(*base, "--switch", "spectrum-4-sn5600", "--buffer", "4MiB")
    assert explicit["buffer_bytes"] == 4 * 2**20


def test_link_retry_replays_on_the_link() -> None:
    base = ("packet", "permutation", "--radix", "4", *SMALL, "--fabric", "roce", "--json",
            "--ber", "1e-6")  # fmt: skip
    dropped = invoke(*base)["fabrics"][0]["counters"]
    replayed = invoke(*base, "--link-retry")["fabrics"][0]["counters"]
    assert dropped["retransmitted"] > 0 and dropped["link_replays"] == 0
    assert replayed["link_replays"] > 0 and replayed["retransmitted"] == 0


def test_same_seed_same_output() -> None:
    args = ("packet", "permutation", "--radix", "4", *SMALL, "--fabric", "uec", "--seed", "3")
    one, two = invoke(*args, "--json"), invoke(*args, "--json")
    for d in (one, two):
        for f in d["fabrics"]:
            f.pop("wall_s")
            f.pop("events_per_s")
    assert one == two


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("incast", "--fabric", "fddi"), "--fabric: 'fddi' is not allowed"),
        (("incast", "--routing", "cells"), "--routing: 'cells' is not allowed"),
        (("incast", "--size", "0B"), "--size"),
        (("incast", "--size", "2 parsecs"), "2 parsecs"),
        (("incast", "--mtu", "100"), "mtu=100"),
        (("incast", "--buffer", "4KB", "--fabric", "ib"), "buffer"),
        (("incast", "--senders", "16", "--radix", "4", "--nodes", "8"), "senders=16"),
        (("permutation", "--radix", "16", "--size", "1GB"), "at most"),
        (("permutation", "--cable", "-1us"), "-1us"),
        (("permutation", "--topology", "torus"), "torus"),
        (("permutation", "--fec", "kp4"), "--fec needs --pre-fec-ber"),
        (("permutation", "--ber", "1e-9", "--pre-fec-ber", "1e-5"), "give one"),
        (("permutation", "--pre-fec-ber", "1e-2"), "would fail their FCS"),
        (("permutation", "--pre-fec-ber", "1e-5", "--fec", "rs999"), "rs999"),
        (("incast", "--ecn", "1MB,2MB"), "KMIN,KMAX,PMAX"),
        (("incast", "--ecn", "2MB,1MB,0.2"), "kmin=2000000"),
        (("incast", "--ecn", "1MB,2MB,x"), "PMAX 'x'"),
        (("incast", "--rto", "soon"), "soon"),
        (("incast", "--switch", "nope"), "unknown switch 'nope'"),
        (("incast", "--link-retry"), "--link-retry needs --ber or --pre-fec-ber"),
        (("incast", "--lane", "200G"), "--lane needs --pre-fec-ber"),
        (("incast", "--rto", "1ns"), "must be at least 1e-06 s"),
        (("incast", "--buffer", "20KB", "--fabric", "uec"), "one packet at the dynamic share"),
    ],
)
def test_bad_input_is_one_clear_line(args: tuple[str, ...], message: str) -> None:
    result = runner.invoke(app, ["packet", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_helpers() -> None:
    assert [_fat_tree_radix(n) for n in (2, 16, 17, 65, 129, 1001)] == [4, 4, 6, 8, 10, 16]
    assert _sparkline([]) == ""
    assert _sparkline([5, 5, 5], width=3) == "███"


def test_adversarial_dragonfly_traffic_meets_the_flow_engine_where_queues_do_not_matter() -> None:
    """Issue 20, item 2: every host of group i sends to group i+1; with minimal routes a group's
    8 hosts share one global link, so RoCE, UEC and the flow engine all take ~8x the ideal."""
    result = CliRunner().invoke(app, ["packet", "adversarial", "--a", "4", "--p", "2", "--h", "2",
                                      "--size", "256KB", "--fabric", "roce", "--flow", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["pattern"] == "adversarial" and data["flows"] == 72
    packet, flow = data["fabrics"][0]["makespan_s"], data["flow_engine"][0]["makespan_s"]
    assert flow / data["ideal_completion_s"] == pytest.approx(8.0, rel=0.05)
    assert packet == pytest.approx(flow, rel=0.05)
    bad = CliRunner().invoke(
        app, ["packet", "adversarial", "--topology", "fat-tree", "--radix", "4"]
    )
    assert bad.exit_code == 2 and "2 or more equal groups" in bad.output


def test_a_matrix_of_your_own_flows_runs_packet_by_packet(tmp_path: Path) -> None:
    cm = tmp_path / "flows.cm"
    cm.write_text("Nodes 16\nConnections 3\n0->5 id 1 start 0 size 200000\n"
                  "3->9 id 2 start 0 size 100000\n7->5 id 3 start 0 size 200000\n")  # fmt: skip
    result = CliRunner().invoke(app, ["packet", "matrix", str(cm), "--radix", "4", "--fabric",
                                      "uec", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["flows"] == 3 and data["total_bytes"] == 500_000 and data["bytes_per_flow"] is None
    # host 5 receives 400 kB: the ideal is its wire bytes at line rate
    wire = 2 * (200_000 + 49 * 82)
    assert data["ideal_completion_s"] == pytest.approx(wire / data["link_Bps"])
    csv = tmp_path / "bad.csv"
    csv.write_text("0,99,1MB\n")
    bad = CliRunner().invoke(app, ["packet", "matrix", str(csv), "--radix", "4"])
    assert bad.exit_code == 2 and "FLOWS: endpoint 99 is out of range" in bad.output
