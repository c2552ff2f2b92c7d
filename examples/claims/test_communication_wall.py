"""communication_wall: ~80% waiting on the bad network, little on the good one, same job."""

import communication_wall as claim
import pytest

from commwall.catalog import load_catalog
from commwall.cluster import HEADER_BYTES, NET_TRANSPORT_EFFICIENCY
from commwall.workload.models import get_model
from commwall.workload.simulate import COMM_CATEGORIES

CAT = load_catalog()
H100 = CAT.gpu("h100-sxm")
CX6, CX7 = CAT.nic("connectx-6"), CAT.nic("connectx-7")
GPT3 = get_model("gpt3-175b")
GPUS_PER_NODE = CAT.preset("dgx-h100").gpus_per_node
NETWORK_FIELDS = {"nic", "nics_per_node", "fabric", "switch"}


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_bad_network_waits_about_80_percent(n: claim.Numbers) -> None:
    assert n.bad.comm_wait_share >= 0.7
    assert n.bad.comm_wait_share == pytest.approx(0.8, abs=0.1)


def test_good_network_waits_little(n: claim.Numbers) -> None:
    assert n.good.comm_wait_share <= 0.3
    assert n.holds


def test_only_the_scale_out_network_differs(n: claim.Numbers) -> None:
    bad_s, good_s, _ = n.scenarios
    assert bad_s.job == good_s.job
    bad_c, good_c = bad_s.cluster.model_dump(), good_s.cluster.model_dump()
    changed = {k for k in bad_c if bad_c[k] != good_c[k]}
    assert changed <= NETWORK_FIELDS
    summary_changed = {k for k in n.bad.cluster if n.bad.cluster[k] != n.good.cluster[k]}
    assert summary_changed <= {
        "nic",
        "nic_rate_per_gpu",
        "net_bw_per_gpu",
        "fabric",
        "switch",
        "tiers",
    }
    assert n.bad.job == n.good.job
    assert n.bad.n_gpus == n.good.n_gpus == claim.NODES * GPUS_PER_NODE
    assert n.bad.tokens_per_step == n.good.tokens_per_step
    assert n.bad.memory.fits(n.bad.hbm_bytes) and n.good.memory.fits(n.good.hbm_bytes)


def test_compute_is_identical_and_matches_the_closed_form(n: claim.Numbers) -> None:
    job = claim.JOB
    tokens_per_gpu = job["global_batch"] * job["seq_len"] / n.bad.n_gpus
    flops = GPT3.training_flops_per_token(job["seq_len"]) * tokens_per_gpu
    # full recomputation: the layers' forward once more (1/3 of their fwd+bwd), not the LM head's
    head = 6 * GPT3.vocab * GPT3.hidden * tokens_per_gpu
    seconds = (flops + (flops - head) / 3) / (H100.peak_flops("bf16") * job["compute_efficiency"])
    assert n.bad.breakdown["compute"] == pytest.approx(seconds, rel=1e-6)
    assert n.good.breakdown["compute"] == pytest.approx(seconds, rel=1e-6)


def test_net_bandwidth_per_gpu_from_the_catalog(n: claim.Numbers) -> None:
    def closed_form(nic_rate: float, nics: int, fabric: str) -> float:
        wire = 4096 / (4096 + HEADER_BYTES[fabric])
        return nics * nic_rate / GPUS_PER_NODE * wire * NET_TRANSPORT_EFFICIENCY

    assert n.bad.cluster["net_bw_per_gpu"] == pytest.approx(closed_form(CX6.rate, 1, "roce"))
    assert n.good.cluster["net_bw_per_gpu"] == pytest.approx(closed_form(CX7.rate, 8, "ib"))


def test_the_wall_follows_from_the_line_rate_floor(n: claim.Numbers) -> None:
    nodes = claim.NODES
    moved = 3 * 2 * GPT3.total_params() * (nodes - 1) / nodes
    assert n.fsdp_bytes_per_node == pytest.approx(moved)
    assert n.bad_floor == pytest.approx(moved / (1 * CX6.rate))
    assert n.good_floor == pytest.approx(moved / (8 * CX7.rate))
    # no schedule beats the floor, so the step is at least that long ...
    assert n.bad.step_time >= n.bad_floor
    assert n.good.step_time >= n.good_floor
    # ... and the floor alone already puts the bad network's wall above 70%
    assert n.bad_wall_from_floor >= 0.7
    assert n.bad.comm_wait_share >= n.bad_wall_from_floor - 1e-9
    # on the good network the traffic fits under the compute, so it can hide
    assert n.good_floor < n.good.breakdown["compute"]


def test_breakdown_accounts_for_the_whole_step(n: claim.Numbers) -> None:
    for r in (n.bad, n.good, n.bad_megatron):
        assert sum(r.breakdown.values()) == pytest.approx(r.step_time, rel=1e-9)
        wait = sum(r.breakdown[c] for c in COMM_CATEGORIES)
        assert r.comm_wait_share == pytest.approx(wait / r.step_time)
    # pure data parallelism: no TP, EP, pipeline traffic or bubble
    for r in (n.bad, n.good):
        assert r.breakdown["tp"] == r.breakdown["ep"] == r.breakdown["bubble"] == 0


def test_keeping_traffic_on_nvlink_helps_but_does_not_fix_the_bad_network(
    n: claim.Numbers,
) -> None:
    mega = n.bad_megatron
    assert mega.n_gpus == n.bad.n_gpus and mega.tokens_per_step == n.bad.tokens_per_step
    assert n.good.comm_wait_share < mega.comm_wait_share < n.bad.comm_wait_share


def test_main_prints_both_breakdowns(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "waiting on communication" in out and "exposed data-parallel comm" in out
