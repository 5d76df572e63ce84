"""Time from ``ppdp ui`` to a released synthetic table with its report, by a scripted user.

A 30,000-row, 15-column table (Adult's first 30,000 training rows, 10 features and the
label, plus four columns: a date, a skewed amount declared on a log scale, a weight and a
score) is written as CSV. ``ppdp ui --no-browser`` is started in a child process and
headless Chromium (Playwright, Debian's package) walks the flow as a user would: type the
path and the label, draft, confirm every column with the bulk edit, create the ledger,
check the plan, release, make the report (the label as the column to predict, the form's
default) and open the ledger's history. The clock starts before the process is started and
stops when the report's verdict is on the screen; each step's wall time is printed too.

Run::

    PYTHONPATH=src python benchmarks/ui/bench_ui_flow.py [--repeats 3] [--out FILE.md]

A scripted user types nothing slowly: the figures are the app's and the library's time, the
floor under a person's.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
STEPS = ("start", "draft", "schema", "ledger", "plan", "release", "report", "history")


def make_table(path: Path, rows: int = 30_000) -> None:
    """Adult's first ``rows`` training rows and four more columns: 15 columns in all."""
    from ppdp.datasets import load_adult

    df, _ = load_adult("train")
    df = df.head(rows).reset_index(drop=True)
    rng = np.random.default_rng(0)
    days = rng.integers(0, 3 * 365, len(df))
    df["visited"] = (pd.Timestamp("2021-01-01") + pd.to_timedelta(days, "D")).strftime("%Y-%m-%d")
    df["amount"] = np.round(rng.lognormal(9, 1.2, len(df)), 2)
    df["weight"] = np.round(rng.normal(75, 12, len(df)).clip(35, 180), 1)
    df["score"] = rng.integers(0, 101, len(df))
    assert df.shape == (rows, 15), df.shape
    df.to_csv(path, index=False)


def one_run(table: Path, work: Path) -> dict[str, float]:
    """One scripted walk; the seconds each step took (``total``: start to verdict)."""
    from playwright.sync_api import expect, sync_playwright

    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "ui", "--no-browser", "--workdir", str(work)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=work.parent,
    )  # fmt: skip
    try:
        url = re.search(r"http://\S+", proc.stdout.readline()).group(0)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            expect.set_options(timeout=600_000)
            page.goto(url)
            marks["start"] = time.perf_counter()
            page.get_by_label("Table (CSV or Parquet file)").fill(str(table))
            page.get_by_label("Label column").fill("income")
            page.get_by_role("button", name="Draft the schema").click()
            expect(page.locator("#leak-warning")).to_be_visible()
            marks["draft"] = time.perf_counter()
            page.get_by_label("scale of amount").select_option("log")
            page.get_by_role("button", name="Select shown").click()
            page.locator("#bulk-public").check()
            page.get_by_role("button", name="Apply to selected").click()
            page.get_by_label("these classes are public knowledge").check()
            page.get_by_role("button", name="Save and continue").click()
            expect(page.get_by_role("button", name="Create the ledger")).to_be_visible()
            marks["schema"] = time.perf_counter()
            page.get_by_role("button", name="Create the ledger").click()
            expect(page.get_by_role("button", name="Create the ledger")).to_have_count(0)
            marks["ledger"] = time.perf_counter()
            page.get_by_role("button", name="Check the plan").click()
            expect(page.locator(".words")).to_be_visible()
            marks["plan"] = time.perf_counter()
            page.get_by_role("button", name="Release (spends the budget above)").click()
            expect(page.get_by_role("button", name="Make the report")).to_be_visible()
            marks["release"] = time.perf_counter()
            page.get_by_role("button", name="Make the report").click()
            expect(page.locator("#verdict")).to_contain_text("verdict:")
            marks["report"] = time.perf_counter()
            page.get_by_role("link", name="6. Ledger history").click()
            expect(page.locator("pre.ledger")).to_contain_text("TableSynthesizer")
            marks["history"] = time.perf_counter()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out, last = {}, t0
    for step in STEPS:
        out[step], last = marks[step] - last, marks[step]
    out["total"] = marks["report"] - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["PPDP_ANCHOR_DIR"] = str(root / "anchors")
        table = root / "survey.csv"
        make_table(table)
        for i in range(args.repeats):
            runs.append(one_run(table, root / f"runs-{i}"))
    lines = [
        "| step | " + " | ".join(f"run {i + 1} (s)" for i in range(len(runs))) + " | median (s) |",
        "|---|" + "---:|" * (len(runs) + 1),
    ]
    for step in (*STEPS, "total"):
        values = [r[step] for r in runs]
        name = "**start to verdict**" if step == "total" else step
        lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in values)
                     + f" | {statistics.median(values):.1f} |")  # fmt: skip
    text = "\n".join(lines)
    print(text)
    if args.out:
        command = "PYTHONPATH=src python benchmarks/ui/bench_ui_flow.py --repeats "
        args.out.write_text(
            "# `ppdp ui`: from the command to a released synthetic table with its report\n\n"
            "30,000 rows x 15 columns (Adult's training rows + a date, a log-scale amount, a "
            "weight and a score), walked by a scripted Playwright user in headless Chromium; "
            "`total` runs from starting `ppdp ui` to the report's verdict on screen "
            "(`history` is after it).\n\n"
            f"Reproduce: `{command}{args.repeats} --out {args.out}`\n\n{text}\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
