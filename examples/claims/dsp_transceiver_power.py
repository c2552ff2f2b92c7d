"""Claim: "DSPs consume a lot of power -- about 15-20 W per transceiver. When you have 50,000
transceivers in a cluster, that's 1 Megawatt just for the plugs. ... LPO: 50% less power."

From the catalog's optics: the 800G DSP module (NVIDIA MMS4X00-NS twin-port OSFP, the switch-side
plug of an NDR/XDR fabric) against the 800G linear-drive pluggable (LPO) of the same rate:

* power of 50,000 DSP plugs = 50,000 x P(dsp-800g), and the band the article's 15-20 W implies;
* the LPO saving = 1 - P(lpo-800g) / P(dsp-800g), and the megawatts it saves over 50,000 plugs.

The other DSP modules (400G, 1.6T) and co-packaged optics are shown per bit for context.

Run: ``python examples/claims/dsp_transceiver_power.py``
"""

from __future__ import annotations

from dataclasses import dataclass

from _common import Cited, catalog, cite, fmt, report, table, verdict

CLAIM = (
    "DSPs consume about 15-20W per transceiver. 50,000 transceivers in a cluster: 1 Megawatt "
    "just for the plugs. LPO: 50% less power."
)
COUNT = 50_000
ARTICLE_RANGE_W = (15.0, 20.0)
ARTICLE_TOTAL_W = 1e6
ARTICLE_SAVING = 0.5
DSP = "dsp-800g"
LPO = "lpo-800g"
#: "about 1 MW" holds if the catalog total falls in the band the article's own 15-20 W gives,
#: and "50% less" if the saving is within 10 points of it.
SAVING_TOLERANCE = 0.10


@dataclass(frozen=True)
class OpticRow:
    name: str
    kind: str
    rate: float  # bytes/s
    power: float  # W per module
    pj_per_bit: float
    total_for_count: float  # W for COUNT modules


@dataclass(frozen=True)
class Numbers:
    dsp_power: float  # W per module
    lpo_power: float
    total: float  # W, COUNT DSP modules
    article_band: tuple[float, float]  # W, COUNT x 15 W .. COUNT x 20 W
    lpo_total: float  # W, COUNT LPO modules
    saving: float  # 1 - lpo / dsp
    saved: float  # W over COUNT modules
    rows: tuple[OpticRow, ...]
    inputs: tuple[Cited, ...]

    @property
    def dsp_in_article_range(self) -> bool:
        return ARTICLE_RANGE_W[0] <= self.dsp_power <= ARTICLE_RANGE_W[1]

    @property
    def total_ratio(self) -> float:
        """Catalog total over the article's 1 MW."""
        return self.total / ARTICLE_TOTAL_W

    @property
    def holds(self) -> bool:
        in_band = self.article_band[0] <= self.total <= self.article_band[1]
        return in_band and abs(self.saving - ARTICLE_SAVING) <= SAVING_TOLERANCE


def numbers() -> Numbers:
    cat = catalog()
    dsp, lpo = cat.optic(DSP), cat.optic(LPO)
    rows = tuple(
        OpticRow(o.name, o.kind, o.rate, o.power, o.energy_per_bit * 1e12, COUNT * o.power)
        for o in map(cat.optic, cat.names("optic"))
        if o.kind in ("dsp", "lpo", "cpo")
    )
    inputs = (
        cite(dsp, "power", unit="W"),
        cite(dsp, "rate", unit="b/s"),
        cite(lpo, "power", unit="W"),
        cite(lpo, "rate", unit="b/s"),
    )
    return Numbers(
        dsp_power=dsp.power,
        lpo_power=lpo.power,
        total=COUNT * dsp.power,
        article_band=(COUNT * ARTICLE_RANGE_W[0], COUNT * ARTICLE_RANGE_W[1]),
        lpo_total=COUNT * lpo.power,
        saving=1 - lpo.power / dsp.power,
        saved=COUNT * (dsp.power - lpo.power),
        rows=rows,
        inputs=inputs,
    )


def main() -> None:
    n = numbers()
    lo, hi = n.article_band
    answers = [
        (f"{DSP} per module", fmt(n.dsp_power, "W")),
        (f"{COUNT:,} x {DSP}", fmt(n.total, "W")),
        (f"{COUNT:,} x 15-20 W (article)", f"{fmt(lo, 'W')} .. {fmt(hi, 'W')}"),
        ("catalog total / 1 MW", fmt(n.total_ratio, "x")),
        (f"{COUNT:,} x {LPO}", fmt(n.lpo_total, "W")),
        ("LPO saving per module", f"{n.saving:.1%}"),
        (f"saved over {COUNT:,} plugs", fmt(n.saved, "W")),
    ]
    print(
        report(
            "dsp_transceiver_power",
            CLAIM,
            n.inputs,
            answers,
            verdict(
                n.holds,
                f"{DSP} draws {n.dsp_power:g} W (inside 15-20 W); {COUNT:,} of them draw "
                f"{n.total / 1e6:.2f} MW ({n.total_ratio:.2f}x the article's 1 MW, which needs "
                f"the 20 W top of its range); {LPO} at {n.lpo_power:g} W is "
                f"{n.saving:.0%} less, saving {n.saved / 1e6:.2f} MW.",
            ),
            notes=(
                "1 MW is the plugs alone: no switch ASICs, no NICs, no cooling overhead.",
                "Both modules are 800G; at 400G (dsp-400g, 9 W) 50,000 plugs would be 0.45 MW.",
            ),
        )
    )
    print()
    print(f"per-module power of the catalog's DSP, LPO and CPO optics, and {COUNT:,} of each:")
    print(
        table(
            ("optic", "kind", "rate", "power", "pJ/bit", f"x {COUNT:,}"),
            (
                (
                    r.name,
                    r.kind,
                    fmt(r.rate, "b/s"),
                    fmt(r.power, "W"),
                    f"{r.pj_per_bit:.2f}",
                    fmt(r.total_for_count, "W"),
                )
                for r in n.rows
            ),
        )
    )


if __name__ == "__main__":
    main()
