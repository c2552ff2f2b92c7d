"""Shared helpers for the seed article's claims: catalog look-ups with their sources, formatting.

Each claim script imports this module as ``_common`` (the script's own folder is on ``sys.path``
when it runs; the tests put it there too).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from commwall.catalog import Catalog, Part, load_catalog


@dataclass(frozen=True)
class Cited:
    """One catalog value and where it comes from."""

    label: str
    value: float
    unit: str
    source: str
    estimate: bool = False

    def line(self) -> str:
        mark = " [estimate]" if self.estimate else ""
        return f"{self.label} = {fmt(self.value, self.unit)}{mark}  ({self.source})"


def catalog() -> Catalog:
    """The catalog shipped with commwall."""
    return load_catalog()


def cite(part: Part, field: str, label: str | None = None, unit: str = "") -> Cited:
    """``part.field`` with its citation; ``field`` may be ``'field.key'`` for a mapping entry."""
    base, _, key = field.partition(".")
    value = getattr(part, base)
    if key:
        value = value[key]
    return Cited(
        label or f"{part.part_kind} {part.name}.{field}",
        float(value),
        unit,
        part.source_for(field),
        part.is_estimate(field),
    )


def fmt(value: float, unit: str) -> str:
    """A number with an SI prefix for bytes/s (``B/s``), watts (``W``) or a plain unit.

    ``b/s`` takes bytes/s (the catalog's unit) and shows bits/s, as line rates are quoted.
    """
    if unit == "b/s":
        value *= 8
    if unit in ("B/s", "b/s", "W"):
        for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= scale:
                return f"{value / scale:,.4g} {prefix}{unit}"
        return f"{value:,.4g} {unit}"
    if unit == "x":
        return f"{value:.3g}x"
    if unit == "s":
        if value >= 1:
            return f"{value:.3g} s"
        if value >= 1e-3:
            return f"{value * 1e3:.3g} ms"
        return f"{value * 1e6:.3g} us"
    return f"{value:,.6g}{(' ' + unit) if unit else ''}"


def verdict(holds: bool, detail: str) -> str:
    """``HOLDS`` / ``DOES NOT HOLD`` followed by the numbers behind it."""
    return f"{'HOLDS' if holds else 'DOES NOT HOLD'}: {detail}"


def report(
    title: str,
    claim: str,
    inputs: Iterable[Cited],
    answers: Sequence[tuple[str, str]],
    verdict_line: str,
    notes: Sequence[str] = (),
) -> str:
    """The text a claim's ``main()`` prints: claim, inputs with sources, answers, verdict."""
    lines = [f"== {title} ==", f'claim:    "{claim}"', "inputs (catalog, with sources):"]
    lines += [f"  {c.line()}" for c in inputs]
    lines.append("commwall:")
    width = max((len(k) for k, _ in answers), default=0)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in answers]
    lines += [f"note:     {n}" for n in notes]
    lines.append(f"verdict:  {verdict_line}")
    return "\n".join(lines)


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain left/right-aligned text table (first column left, the rest right)."""
    body = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in body) for i in range(len(header))]

    def row(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([row(body[0]), rule, *[row(r) for r in body[1:]]])
