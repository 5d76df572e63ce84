"""Time and size of the quality report of a 150-column table (every fifth of 200 codes).

The seeded wide table of ``wide_table.py`` (150 columns, 69 of them categorical: an encoding
wider than the 400-feature cap of the correlation map) at 20,000 and 100,000 rows, against an
independent sample of the same size: the library call (``quality_report``), the HTML page
(``to_html``) and the JSON numbers (``to_json``), in seconds, and the sizes of the page and
of the JSON. Prints a Markdown table.

    PYTHONPATH=src python benchmarks/report/bench_report_wide.py > benchmarks/report/wide.md
"""

from __future__ import annotations

import importlib.util
import resource
import time
from pathlib import Path

from ppdp.evaluate import quality_report

_spec = importlib.util.spec_from_file_location(
    "wide_table", Path(__file__).with_name("wide_table.py")
)
wide = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(wide)  # type: ignore[union-attr]


def main() -> None:
    print("| rows | columns | report (s) | HTML (s) | JSON (s) | page (MB) | JSON (MB) | verdict |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for rows in (20_000, 100_000):
        df, schema = wide.wide_table(rows, 150, 200, seed=0)
        other, _ = wide.wide_table(rows, 150, 200, seed=1)
        t = time.perf_counter()
        report = quality_report(df, other, schema)
        t_report = time.perf_counter() - t
        t = time.perf_counter()
        html = report.to_html()
        t_html = time.perf_counter() - t
        t = time.perf_counter()
        js = report.to_json()
        t_json = time.perf_counter() - t
        print(
            f"| {rows:,} | {len(schema.column_names)} | {t_report:.1f} | {t_html:.1f} | "
            f"{t_json:.1f} | {len(html.encode()) / 1e6:.2f} | {len(js.encode()) / 1e6:.2f} | "
            f"{report.verdict} |",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of the whole run: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
