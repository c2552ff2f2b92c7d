"""``commwall phy``: pre-FEC BER from SNR, every FEC option on a lane, and the Goldilocks pick."""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

DEFAULT_PRE_FEC_BER = 2.4e-4
"""KP4 design pre-FEC BER at the PMD (phy.md §5.1, unverified clause value)."""


def _sci(log10_value: float) -> str:
    """Format 10**log10_value as a.bcde±N without underflow (values reach 1e-1000)."""
    if log10_value == -math.inf:
        return "0"
    exponent = math.floor(log10_value)
    mantissa = 10.0 ** (log10_value - exponent)
    if mantissa >= 9.995:
        mantissa, exponent = 1.0, exponent + 1
    return f"{mantissa:.2f}e{exponent:+d}"


def phy(
    lane: Annotated[str, typer.Option(help="Lane generation: 25G, 50G, 100G, 200G.")] = "100G",
    snr_db: Annotated[
        float | None, typer.Option("--snr-db", help="Slicer SNR in dB; sets the pre-FEC BER.")
    ] = None,
    pre_fec_ber: Annotated[
        float | None,
        typer.Option("--pre-fec-ber", help="Pre-FEC BER (default 2.4e-4, KP4's design point)."),
    ] = None,
    target_ber: Annotated[
        float, typer.Option("--target-ber", help="Post-FEC BER the link must meet.")
    ] = 1e-15,
    modulation: Annotated[
        str | None,
        typer.Option(help="nrz, pam4, pam6, pam8 (default: the lane's) for --snr-db."),
    ] = None,
    snr_basis: Annotated[
        str, typer.Option("--snr-basis", help="es_n0 (Es/N0) or snr (Es/sigma^2).")
    ] = "es_n0",
    lanes: Annotated[
        int, typer.Option(min=1, max=64, help="Lanes a codeword is striped over (4 for 400GbE).")
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Pre-FEC BER, every FEC code's post-FEC BER and latency, and the least-latency fit."""
    from commwall.console import fail as _fail
    from commwall.console import out
    from commwall.phy import PhyError, ber_pam, choose_fec, parse_lane, parse_modulation
    from commwall.phy.signaling import SNR_DB_RANGE

    try:
        lane_gen = parse_lane(lane)
    except PhyError:
        _fail(f"--lane: {lane!r} is not a known lane generation; allowed: 25G, 50G, 100G, 200G")
    if snr_db is not None and pre_fec_ber is not None:
        _fail("--snr-db and --pre-fec-ber: give one, not both")
    if snr_basis not in ("es_n0", "snr"):
        _fail(f"--snr-basis: {snr_basis!r} is not allowed; allowed: es_n0, snr")
    if not (math.isfinite(target_ber) and 0.0 < target_ber < 0.5):
        _fail(f"--target-ber: {target_ber!r} is out of range; allowed: 0 < BER < 0.5")
    try:
        levels = parse_modulation(modulation) if modulation else lane_gen.levels
    except PhyError:
        _fail(f"--modulation: {modulation!r} is not known; allowed: nrz, pam2, pam4, pam6, pam8")
    source = "given"
    if snr_db is not None:
        lo, hi = SNR_DB_RANGE
        if not (math.isfinite(snr_db) and lo <= snr_db <= hi):
            _fail(f"--snr-db: {snr_db!r} is out of range; allowed: {lo:g} to {hi:g} dB")
        ber = ber_pam(levels, snr_db, basis="snr" if snr_basis == "snr" else "es_n0")
        source = f"PAM{levels} at {snr_db:g} dB ({snr_basis}), Gray BER = SER/log2 M"
        if not 0.0 < ber < 0.5:
            _fail(
                f"--snr-db: {snr_db:g} dB gives a pre-FEC BER of {ber:.3g}, outside (0, 0.5); "
                "allowed: an SNR whose BER is at least 1e-300"
            )
    elif pre_fec_ber is not None:
        ber = pre_fec_ber
        if not (math.isfinite(ber) and 0.0 < ber < 0.5):
            _fail(f"--pre-fec-ber: {ber!r} is out of range; allowed: 0 < BER < 0.5")
    else:
        ber = DEFAULT_PRE_FEC_BER
        source = "default: KP4 design point (phy.md §5.1)"
    choice = choose_fec(ber, lane_gen, target_ber, lanes=lanes)
    if as_json:
        data: dict[str, Any] = {
            **choice.to_dict(),
            "pre_fec_ber_source": source,
            "modulation_levels": levels,
            "snr_db": snr_db,
            "lanes": lanes,
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    _print_choice(choice, source, lanes, out, levels)


def _signalling(lane: Any, levels: int) -> str:
    """The lane's signalling, or the forced modulation and the symbol rate it would need."""
    if levels == lane.levels:
        return f"{lane.modulation.upper()} {lane.baud_rate / 1e9:g} GBd"
    name = "NRZ" if levels == 2 else f"PAM{levels}"
    baud = lane.line_rate_bps / math.log2(levels)
    return (
        f"{name} (forced; the standard lane is {lane.modulation.upper()} at "
        f"{lane.baud_rate / 1e9:g} GBd, {name} needs {baud / 1e9:g} GBd)"
    )


def _print_choice(choice: Any, source: str, lanes: int, out: Any, levels: int) -> None:
    lane = choice.lane
    out.print(
        f"lane     {lane.name} {_signalling(lane, levels)}, line "
        f"{lane.line_rate_bps / 1e9:g} Gb/s, payload {lane.payload_rate_bps / 1e9:g} Gb/s, "
        f"standard FEC {lane.fec} ({lane.standard})"
        + (f", codeword striped over {lanes} lanes" if lanes > 1 else "")
    )
    out.print(f"pre-FEC BER {choice.pre_fec_ber:.3e} ({source}); target {choice.target_ber:.0e}")
    table = Table(title="FEC options", title_justify="left")
    for col in ("code", "n,k,m,t", "P(uncorr. cw)", "post-FEC BER", "latency", "rate", "meets"):
        table.add_column(col, justify="left" if col in ("code", "meets") else "right")
    for o in choice.options:
        c = o.code
        name = c.label + (" *" if o.standard_for_lane else "")
        if choice.best is not None and o.code.key == choice.best.code.key:
            name = f"[bold green]{name}[/]"
        table.add_row(
            name,
            f"{c.n},{c.k},{c.symbol_bits},{c.t}",
            _sci(o.log10_uncorrectable_ratio),
            _sci(o.log10_post_fec_ber),
            f"{o.latency * 1e9:.1f} ns",
            f"{o.code_rate:.4f} (+{o.overhead:.1%})",
            "yes" if o.meets_target else "no",
        )
    out.print(table)
    out.print("* standard FEC for this lane")
    if choice.best is None:
        out.print(f"[bold red]no code meets {choice.target_ber:.0e} at this pre-FEC BER[/]")
    else:
        b = choice.best
        out.print(
            f"least-latency code meeting {choice.target_ber:.0e}: [bold]{b.code.label}[/] "
            f"({b.latency * 1e9:.1f} ns, post-FEC BER {_sci(b.log10_post_fec_ber)})"
        )


def register(app: typer.Typer) -> None:
    """Add ``commwall phy`` to the CLI."""
    app.command(name="phy")(phy)
