"""The HTML quality report in a real browser: headless Debian Chromium driven by Playwright.

Three seeded releases of a 12,000-row sample of Adult (test rows: 3,000 others), each reported
against its rows and opened in Chromium: a DP-LDA synthetic table at ε = 2 (verdict "weak":
its classifier keeps the real data's AUC gain, but its marginals and pairs do not hold, see
``benchmarks/report/verdict.md``), LDA-DP noisy projections at ε = 0.5 ("no better than
the trivial baseline") and a LAP (per-record Laplace) table at ε = 1 ("no better than the
trivial baseline"). In each page every figure (inline ``<svg>``, its embedded images, any
``<img>``) must have a non-zero rendered size, no console error or page error may be logged,
the verdict line must read as expected, and the page must not scroll sideways on a
phone-wide viewport.

The noise is seeded, so the verdicts are deterministic; they hold with margins (the
synthetic table's marginals are 0.13 from the real ones where 0.10 is "useful", and its
target part keeps 86 % of the real AUC gain where 75 % is needed; the other two keep less
than 5 % where 25 % is the line).

Needs Chromium (``apt-get install chromium``; ``.ci/run`` installs it) and the ``playwright``
package (the ``dev`` extra); no browser is downloaded. Skipped, saying why, when either is
missing. ``PPDP_REPORT_SCREENSHOT=docs/img/report-adult.png`` also saves the top of the
DP-LDA page as the guide's screenshot.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium, as .ci/run does): the "
        "real-browser test of the HTML report is skipped",
        allow_module_level=True,
    )
pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is not installed (pip install -e '.[dev]'): the "
    "real-browser test of the HTML report is skipped",
)
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from playwright.sync_api import sync_playwright  # noqa: E402

from ppdp.datasets import load_adult  # noqa: E402
from ppdp.evaluate import VERDICTS, lda_projection_report, quality_report  # noqa: E402
from ppdp.exceptions import LowUtilityWarning  # noqa: E402
from ppdp.publish import DPLDASynthesizer, LaplacePublisher, LDAProjectionPublisher  # noqa: E402

_, WEAK, TRIVIAL = VERDICTS
#: Screenshot width and the height kept from the top of the page (CSS pixels).
SHOT_WIDTH, SHOT_HEIGHT = 900, 1600


def _write(report, path):
    report.to_html(path)
    return path


def _sidecar(method, release):
    return {"method": method, "guarantee": release.guarantee.to_dict(), "seeded": release.seeded}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Three HTML reports: {name: (path, expected verdict)}."""
    root = tmp_path_factory.mktemp("browser")
    df, schema = load_adult()
    rows = np.sort(np.random.default_rng(0).choice(len(df), 15_000, replace=False))
    df = df.iloc[rows].reset_index(drop=True)
    train, test = df.iloc[:12_000].reset_index(drop=True), df.iloc[12_000:]
    out = {}

    synth = DPLDASynthesizer(2.0, schema, random_state=1).fit(train).release_
    report = quality_report(
        train, synth.data, schema, holdout=test, target="income",
        guarantee=_sidecar("lda-synth", synth),
    )  # fmt: skip
    out["dp-lda"] = (_write(report, root / "dp-lda.html"), WEAK)

    counts = train["income"].value_counts().reindex(list(schema.label.classes)).tolist()
    pub = LDAProjectionPublisher(0.5, 1e-6, schema, class_counts=counts, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowUtilityWarning)  # the release is useless on purpose
        proj = pub.fit(train).release_
    side = {
        **_sidecar("lda-projection", proj),
        "directions": proj.statistics["directions"].tolist(),
        "features": list(schema.feature_names),
        "row_scale": float(proj.statistics["scale"][0]),
    }
    report = lda_projection_report(train, proj.data, schema, side, holdout=test)
    out["lda-dp"] = (_write(report, root / "lda-dp.html"), TRIVIAL)

    lap = LaplacePublisher(1.0, schema, random_state=1).fit(train).release_
    report = quality_report(
        train, lap.data, schema, holdout=test, target="income",
        guarantee=_sidecar("laplace", lap),
    )  # fmt: skip
    out["lap"] = (_write(report, root / "lap.html"), TRIVIAL)
    return out


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


_FIGURE_SIZES = """() => {
  const out = [];
  for (const el of document.querySelectorAll('.fig svg, svg image, img')) {
    const r = el.getBoundingClientRect();
    out.push({tag: el.tagName, w: r.width, h: r.height,
              natural: el.tagName === 'IMG' ? el.naturalWidth : null});
  }
  return out;
}"""


def _open(browser, path, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri(), wait_until="load")
    return page, errors


@pytest.mark.parametrize("name", ["dp-lda", "lda-dp", "lap"])
def test_the_report_renders_in_chromium(reports, browser, name):
    path, verdict = reports[name]
    page, errors = _open(browser, path, SHOT_WIDTH)
    try:
        figures = page.evaluate(_FIGURE_SIZES)
        n_svg = page.evaluate("document.querySelectorAll('.fig svg').length")
        line = page.inner_text(".verdict strong")
        if name == "dp-lda" and os.environ.get("PPDP_REPORT_SCREENSHOT"):
            page.screenshot(
                path=os.environ["PPDP_REPORT_SCREENSHOT"],
                full_page=True,
                clip={"x": 0, "y": 0, "width": SHOT_WIDTH, "height": SHOT_HEIGHT},
            )
    finally:
        page.close()
    assert errors == []
    # Adult has 11 columns; the 10 pairs that moved most have a figure each
    assert n_svg == (2 if name == "lda-dp" else 11 + 10 + 3 + 3 + 1)
    assert len(figures) >= n_svg
    empty = [f for f in figures if not (f["w"] > 0 and f["h"] > 0)]
    assert empty == []
    assert all(f["natural"] > 0 for f in figures if f["tag"] == "IMG")
    assert line == f"Verdict: {verdict}."


def test_the_report_fits_a_phone(reports, browser):
    path, _ = reports["dp-lda"]
    page, errors = _open(browser, path, 390)
    try:
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    finally:
        page.close()
    assert errors == []
    assert overflow <= 0


def test_the_numbers_behind_the_verdicts(reports):
    """The HTML states the verdict's numbers (one check that the pages are the reports)."""
    text = {name: path.read_text(encoding="utf-8") for name, (path, _) in reports.items()}
    assert "the released rows" in text["lda-dp"] and "the released direction" in text["lda-dp"]
    assert "Laplace" in text["lap"]
    assert all("For the custodian only" in t for t in text.values())
