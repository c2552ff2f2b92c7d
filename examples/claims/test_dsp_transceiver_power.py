"""dsp_transceiver_power: totals and the LPO saving equal their closed forms from the catalog."""

import dsp_transceiver_power as claim
import pytest

from commwall.catalog import load_catalog

CAT = load_catalog()
DSP = CAT.optic("dsp-800g")
LPO = CAT.optic("lpo-800g")
COUNT = 50_000


@pytest.fixture(scope="module")
def n() -> claim.Numbers:
    return claim.numbers()


def test_parts_are_comparable() -> None:
    assert DSP.kind == "dsp" and LPO.kind == "lpo"
    assert DSP.rate == LPO.rate  # same 800G class: the saving is like for like


def test_dsp_module_power_is_in_the_articles_range(n: claim.Numbers) -> None:
    assert n.dsp_power == DSP.power
    assert 15 <= n.dsp_power <= 20
    assert n.dsp_in_article_range


def test_total_for_50000_plugs(n: claim.Numbers) -> None:
    assert n.total == pytest.approx(COUNT * DSP.power)
    assert n.article_band == pytest.approx((COUNT * 15.0, COUNT * 20.0))
    assert n.article_band[0] <= n.total <= n.article_band[1]  # 0.75 .. 1.0 MW
    assert n.total_ratio == pytest.approx(COUNT * DSP.power / 1e6)
    assert 0.7 <= n.total_ratio <= 1.0  # "1 MW" is the top of the band, not the middle


def test_lpo_saving(n: claim.Numbers) -> None:
    assert n.saving == pytest.approx(1 - LPO.power / DSP.power)
    assert 0.4 <= n.saving <= 0.6  # "50% less"
    assert n.lpo_total == pytest.approx(COUNT * LPO.power)
    assert n.saved == pytest.approx(n.total - n.lpo_total)
    assert n.holds


def test_energy_per_bit_rows(n: claim.Numbers) -> None:
    by_name = {r.name: r for r in n.rows}
    assert {"dsp-800g", "lpo-800g"} <= set(by_name)
    for r in n.rows:
        assert r.pj_per_bit == pytest.approx(r.power / (r.rate * 8) * 1e12)
        assert r.total_for_count == pytest.approx(COUNT * r.power)
    assert by_name["lpo-800g"].pj_per_bit < by_name["dsp-800g"].pj_per_bit


def test_main_prints_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    claim.main()
    out = capsys.readouterr().out
    assert "verdict:  HOLDS" in out
    assert "850 kW" in out and "50.0%" in out
