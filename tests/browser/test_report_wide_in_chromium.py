"""The report of a wide table is readable in a real browser: 150 columns, 200-code columns.

A seeded table of 150 columns (every fifth of 200 codes; ``benchmarks/report/wide_table.py``)
and 6,000 rows, against an independent sample of the same population whose column num_000 is
shuffled (its associations lost: verdict "weak"), reported and opened in headless Debian
Chromium (Playwright). The page must log no error, draw every figure, not
scroll sideways on a phone, and stay readable: the correlation maps show at most 30 features
and the Cramér's V maps at most 20 columns, each with labels at least 5 CSS pixels tall on a
900-pixel page; a 200-code column's chart has at most 20 bars (its commonest codes and
"other") whose labels do not overlap; the pairs that moved most are a table of 10 and 10
small figures.

``PPDP_REPORT_SCREENSHOT_DIR=docs/img`` also saves the screenshots of the guide
(``report-wide-*.png``). Skipped, saying why, without Chromium or playwright.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium, as .ci/run does): the "
        "real-browser test of the wide report is skipped",
        allow_module_level=True,
    )
pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is not installed (pip install -e '.[dev]'): the "
    "real-browser test of the wide report is skipped",
)
pytest.importorskip("matplotlib")

from playwright.sync_api import sync_playwright  # noqa: E402

from ppdp.evaluate import quality_report  # noqa: E402

_WIDE = Path(__file__).resolve().parents[2] / "benchmarks" / "report" / "wide_table.py"
WIDTH = 900


def _wide_module():
    spec = importlib.util.spec_from_file_location("wide_table", _WIDE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    wide = _wide_module()
    df, schema = wide.wide_table(6_000, 150, 200, seed=0)
    other, _ = wide.wide_table(6_000, 150, 200, seed=1)
    report = quality_report(df, wide.shuffled(other, 2, ["num_000"]), schema)
    path = tmp_path_factory.mktemp("wide") / "wide.html"
    report.to_html(path)
    return path, report


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, path, width, scale=1):
    page = browser.new_page(viewport={"width": width, "height": 900}, device_scale_factor=scale)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri(), wait_until="load")
    return page, errors


_MEASURE = """() => {
  const figs = [...document.querySelectorAll('.fig svg')].map(s => {
    const r = s.getBoundingClientRect(); return {w: r.width, h: r.height};
  });
  const heat = [...document.querySelectorAll('.heat .fig svg')]
    .filter(s => s.querySelector('image'));
  // the rendered size of a label: its font size times the figure's scale on the page
  const size = t => {
    const m = t.getScreenCTM();
    return parseFloat(getComputedStyle(t).fontSize) * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
  };
  const heatLabels = heat.map(s => [...s.querySelectorAll('text')].map(size));
  const code = [...document.querySelectorAll('svg[aria-label^="code_004"]')][0];
  const bars = code ? code.querySelectorAll('rect[fill="#1f77b4"]:not([fill-opacity])').length : -1;
  const ticks = code ? [...code.querySelectorAll('text[transform^="rotate"]')]
    .map(t => t.getBoundingClientRect()) : [];
  return {figs, heatLabels, bars, ticks: ticks.map(r => ({x: r.x, w: r.width, y: r.y}))};
}"""


def test_the_wide_report_is_readable_in_chromium(page_path, browser):
    path, report = page_path
    shots = os.environ.get("PPDP_REPORT_SCREENSHOT_DIR")
    page, errors = _open(browser, path, WIDTH, 2 if shots else 1)
    try:
        m = page.evaluate(_MEASURE)
        pair_rows = page.evaluate(
            "[...document.querySelectorAll('h3')].find(h => h.textContent.includes("
            "'pairs that moved most')).nextElementSibling.querySelectorAll('tr').length"
        )
        joint_figs = page.evaluate(
            "document.querySelectorAll('svg[aria-label$=\"joint shares\"]').length"
        )
        if shots:
            _screenshots(page, Path(shots))
    finally:
        page.close()
    assert errors == []
    assert m["figs"] and all(f["w"] > 0 and f["h"] > 0 for f in m["figs"])
    # 3 correlation maps of at most 30 features and 3 Cramér's V maps of at most 20 columns
    assert len(report.feature_names) > 300 and len(m["heatLabels"]) == 6
    for labels in m["heatLabels"]:
        assert 0 < len(labels) <= 2 * 30 + 12  # two axes, the colour bar's ticks, a title
        assert min(labels) >= 5, min(labels)
    assert 0 < m["bars"] <= 20
    ends = sorted(r["x"] + r["w"] for r in m["ticks"])
    assert len(ends) == m["bars"]
    # labels rotated about their right ends: those ends at least 5 pixels apart
    gaps = [b - a for a, b in itertools.pairwise(ends)]
    assert min(gaps) > 5, gaps
    assert pair_rows == 11 and joint_figs == 10
    assert report.verdict == "weak" and "num_000" in report.verdict_basis
    assert all("num_000" in d["columns"] for d in report.pairs["worst"][:3])


def test_the_wide_report_fits_a_phone(page_path, browser):
    path, _ = page_path
    page, errors = _open(browser, path, 390)
    try:
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    finally:
        page.close()
    assert errors == [] and overflow <= 0


def _screenshots(page, folder):
    folder.mkdir(parents=True, exist_ok=True)
    top = page.locator("h1").bounding_box()
    pairs = page.locator("h2", has_text="Pairs of columns")
    page.screenshot(
        path=str(folder / "report-wide-verdict.png"),
        clip={"x": 0, "y": top["y"] - 10, "width": WIDTH, "height": 700},
    )
    box = pairs.bounding_box()
    page.screenshot(
        path=str(folder / "report-wide-pairs.png"),
        full_page=True,
        clip={"x": 0, "y": box["y"] - 10, "width": WIDTH, "height": 1200},
    )
    page.locator(".fig.wide svg").first.screenshot(path=str(folder / "report-wide-heat.png"))
    page.locator('svg[aria-label^="code_004"]').first.screenshot(
        path=str(folder / "report-wide-codes.png")
    )
