"""Benchmark: ``ppdp report`` (the library call and the command) on Adult and on 10⁶ rows.

Cases, each in a fresh Python process:

* ``adult-lib`` / ``adult-cli``: the original is all of Adult (train + test, 45,222 rows), the
  release a seeded DP-LDA synthetic table (ε = 2) of the same size; target ``income``, no
  holdout (30 % of the original is held out), HTML and JSON written;
* ``1e6-lib`` / ``1e6-cli``: the original is Adult resampled with replacement to 1,000,000
  rows (seeded), the release the same DP-LDA synthetic table resampled with replacement to
  1,000,000 rows (post-processing; the greedy sampler would take minutes to draw 10⁶ rows,
  and the report's cost depends on the table's size, not on where its rows came from).
  Above ``MAX_ROWS`` (100,000) rows the report draws a seeded sample of each table for the
  association maps and the classifiers (and for the held-out test rows), and says so in the
  HTML; the marginals, total-variation distances and bound shares use every row.

The time is the report alone: ``quality_report(...)`` plus ``to_html``/``to_json`` for the
library, the whole ``python -m ppdp report ...`` process (start-up and reading the CSV files
included) for the command. Peak RSS is that of the process that made the report (for the
library it includes the tables themselves, for the command everything it read). Targets
(issue 14): < 15 s on Adult, < 2 min on 10⁶ rows.

Run: ``.venv/bin/python benchmarks/report/bench_report_scale.py [--cases adult-lib,1e6-lib]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

CASES = ("adult-lib", "adult-cli", "1e6-lib", "1e6-cli")
N_BIG = 1_000_000


def _tables(case: str) -> tuple[pd.DataFrame, pd.DataFrame, object, dict]:
    from ppdp.datasets import load_adult
    from ppdp.exceptions import InsecureRandomnessWarning
    from ppdp.publish import DPLDASynthesizer

    train, schema = load_adult("train")
    test, _ = load_adult("test")
    original = pd.concat([train, test], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        release = DPLDASynthesizer(2.0, schema, random_state=1).fit(original).release_
    sidecar = {"method": "lda-synth", "guarantee": release.guarantee.to_dict(), "seeded": True}
    data = release.data
    if case.startswith("1e6"):
        rows = np.random.default_rng(0).integers(0, len(original), N_BIG)
        original = original.iloc[rows].reset_index(drop=True)
        rows = np.random.default_rng(1).integers(0, len(data), N_BIG)
        data = data.iloc[rows].reset_index(drop=True)
    return original, data, schema, sidecar


def _peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def run_case(case: str) -> dict:
    from ppdp.evaluate import quality_report

    original, release, schema, sidecar = _tables(case)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if case.endswith("-lib"):
            rss_before = _peak_mib(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            report = quality_report(original, release, schema, target="income", guarantee=sidecar)
            report.to_html(root / "r.html")
            (root / "r.json").write_text(report.to_json(), encoding="utf-8")
            seconds = time.perf_counter() - t0
            peak = _peak_mib(resource.RUSAGE_SELF)
            verdict = report.verdict
        else:
            original.to_csv(root / "orig.csv", index=False)
            release.to_csv(root / "rel.csv", index=False)
            (root / "rel.csv.guarantee.json").write_text(json.dumps(sidecar), encoding="utf-8")
            schema.to_file(root / "s.json")
            del original, release
            rss_before = 0.0
            argv = [
                sys.executable, "-m", "ppdp", "report", str(root / "rel.csv"),
                "--original", str(root / "orig.csv"), "--schema", str(root / "s.json"),
                "--target", "income", "-o", str(root / "r.html"), "--json", str(root / "r.json"),
            ]  # fmt: skip
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            seconds = time.perf_counter() - t0
            peak = _peak_mib(resource.RUSAGE_CHILDREN)
            verdict = done.stdout.split("(")[0].removeprefix("verdict: ").strip()
        html = (root / "r.html").read_text(encoding="utf-8")
        return {
            "case": case,
            "seconds": seconds,
            "peak_rss_mib": peak,
            "rss_before_mib": rss_before,
            "verdict": verdict,
            "html_kib": len(html.encode()) / 1024,
            "sampled_note": "seeded random sample" in html,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    rows = []
    for case in args.cases.split(","):
        done = subprocess.run(
            [sys.executable, __file__, "--case", case], capture_output=True, text=True, check=True
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"done {case}", file=sys.stderr, flush=True)
    print(
        "| case | rows | seconds | peak RSS (MiB) | RSS before the report (MiB) | HTML (KiB) "
        "| sample noted in HTML | verdict |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        n = "45,222" if r["case"].startswith("adult") else f"{N_BIG:,}"
        before = f"{r['rss_before_mib']:.0f}" if r["rss_before_mib"] else "–"
        print(
            f"| {r['case']} | {n} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | {before} "
            f"| {r['html_kib']:.0f} | {'yes' if r['sampled_note'] else 'no'} | {r['verdict']} |"
        )


if __name__ == "__main__":
    main()
