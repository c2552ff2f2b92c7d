"""The issue's acceptance: a report opens offline in headless Chromium with no console errors and
no failed requests, every chart renders a plotly SVG, a hostile name runs nothing, and the page
is not blank. Skipped (with the reason) where Chromium or playwright is missing."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from commwall.report import build_report, load_input, write_report
from commwall.report.fixtures import EXAMPLE, HOSTILE, make_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"{CHROMIUM} not installed (apt-get install chromium)"
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright not installed"
    ),
    pytest.mark.skipif(importlib.util.find_spec("plotly") is None, reason="plotly not installed"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium (a fresh profile) for the module: a launch costs seconds."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def _open(browser: Any, page_file: Path, shot: Path) -> dict[str, Any]:
    """Load ``page_file`` from a file:// URL in a new tab; what the browser saw."""
    seen: dict[str, Any] = {"console": [], "failed": [], "dialogs": [], "requests": []}
    page = browser.new_page()
    try:
        page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: seen["console"].append(f"pageerror: {e}"))
        page.on("requestfailed", lambda r: seen["failed"].append(r.url))
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        page.wait_for_function(
            "Array.from(document.querySelectorAll('.chart'))"
            ".every(d => d.querySelector('.main-svg'))",
            timeout=15_000,
        )
        seen["charts"] = page.evaluate("document.querySelectorAll('.chart').length")
        seen["rendered"] = page.evaluate(
            "Array.from(document.querySelectorAll('.chart'))"
            ".filter(d => d.querySelector('svg.main-svg')).length"
        )
        seen["scripts"] = page.evaluate("document.scripts.length")
        seen["title"] = page.title()
        page.screenshot(path=str(shot), full_page=False)
    finally:
        page.close()
    return seen


def _check(seen: dict[str, Any], shot: Path, charts: int) -> None:
    import matplotlib.image as mpimg

    assert seen["console"] == [] and seen["failed"] == [] and seen["dialogs"] == []
    assert all(url.startswith("file://") for url in seen["requests"])  # offline: the file only
    assert seen["charts"] == seen["rendered"] == charts
    assert seen["scripts"] == 2
    pixels = mpimg.imread(shot)
    distinct = {tuple(p) for p in pixels[::4, ::4].reshape(-1, pixels.shape[-1]).tolist()}
    assert len(distinct) > 50, "the screenshot is blank"


def test_result_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    scenario = tmp_path / "hostile.yaml"
    scenario.write_text(
        EXAMPLE.read_text().replace('name: "Llama-3-8B pure DP', f'name: "{HOSTILE}" #')
    )
    report = build_report(load_input(scenario))
    out, _ = write_report(report, tmp_path / "report.html")
    seen = _open(browser, out, tmp_path / "shot.png")
    _check(seen, tmp_path / "shot.png", len(report.charts()))
    assert "</script><script>alert(1)</script>" in seen["title"]  # shown as text


def test_sweep_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    report = build_report(load_input(make_sweep(tmp_path / "sweep", name=HOSTILE)))
    out, _ = write_report(report, tmp_path / "sweep.html")
    seen = _open(browser, out, tmp_path / "shot.png")
    _check(seen, tmp_path / "shot.png", len(report.charts()))
