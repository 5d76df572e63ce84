"""Group statistics with private keys on a Parquet dataset via Dask: time and peak memory.

Writes a synthetic Parquet dataset to a temporary folder: ``--rows`` rows, a key column
``code`` of ``--keys`` distinct codes drawn from a Zipf law (rank r with probability
∝ 1/r^1.1: a few codes hold most rows, most codes a handful), a declared ``sex`` and a
length of stay ``los`` (gamma, declared [1, 365]). Then runs, as the custodian would::

    ppdp publish groupby DATA --schema s.json --by code --keys private --delta 1e-6 \\
        --means los --quantiles los --epsilon 1 -o OUT --seed 0

in a child process (a ``LocalCluster`` on this machine: its workers are processes) and
samples the resident memory of the whole process tree every 0.1 s. Prints one table row per
size: seconds, peak RSS (MB), keys in the data, keys released; the last line is the ratio
of the largest size's seconds to the smallest's. The dataset is written before the timer
starts and removed afterwards.

Reproduce (about 6 minutes on the shared 2-core machine)::

    PYTHONPATH=src nice .venv/bin/python benchmarks/groupby_scale.py --rows 1e6,1e7

``--unit K`` adds a privacy unit, ``--selection dp-sips`` (or another method) the
selection; the commands of each table are in ``groupby_scale.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = {
    "columns": [
        {"name": "code", "type": "categorical", "open": True},
        {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
        {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
    ]
}
FILE_ROWS = 1_000_000
ROW_GROUP = 250_000


def write_dataset(
    folder: Path,
    rows: int,
    keys: int,
    decimals: int | None = 1,
    persons: bool = False,
    seed: int = 0,
) -> int:
    """Write ``rows`` rows in files of at most ``FILE_ROWS``; return the distinct codes.
    ``los`` is rounded to ``decimals`` (None: unrounded, nearly every value distinct).
    With ``persons``, a ``pid`` column: about ``rows / 3`` persons drawn uniformly, so
    each person's rows are spread over every file."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, keys + 1) ** 1.1)
    cdf /= cdf[-1]
    names = np.array([f"K{r:06d}" for r in range(keys)], dtype=object)
    seen = np.zeros(keys, dtype=bool)
    folder.mkdir()
    for i, start in enumerate(range(0, rows, FILE_ROWS)):
        n = min(FILE_ROWS, rows - start)
        rank = np.minimum(np.searchsorted(cdf, rng.random(n)), keys - 1)
        seen[rank] = True
        part = pd.DataFrame(
            {
                "code": names[rank],
                "sex": np.where(rng.random(n) < 0.5, "F", "M"),
                "los": 1.0 + rng.gamma(1.5, 4.0, n),
            }
        )
        if persons:
            part["pid"] = rng.integers(0, max(1, rows // 3), n)
        if decimals is not None:
            part["los"] = part["los"].round(decimals)
        table = pa.Table.from_pandas(part, preserve_index=False)
        pq.write_table(table, folder / f"part-{i:05d}.parquet", row_group_size=ROW_GROUP)
    return int(seen.sum())


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def run_publish(
    data: Path, schema: Path, out: Path, quantile: bool = True, selection: str = "laplace"
) -> tuple[float, int, int]:
    """Run ``ppdp publish groupby``; return seconds, peak RSS of its process tree, exit."""
    argv = [sys.executable, "-m", "ppdp", "publish", "groupby", str(data)]
    argv += ["--schema", str(schema), "--by", "code", "--keys", "private", "--delta", "1e-6"]
    argv += ["--means", "los", "--epsilon", "1", "-o", str(out), "--selection", selection]
    if quantile:
        argv += ["--quantiles", "los"]
    argv += ["--seed", "0"]
    peak = 0
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = psutil.Process(child.pid)
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                peak = max(peak, _tree_rss(proc))
            except psutil.NoSuchProcess:
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, err = child.communicate()
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    if child.returncode != 0:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return seconds, peak, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1e6,1e7", help="comma-separated dataset sizes")
    parser.add_argument("--keys", type=float, default=1e5, help="distinct codes to draw from")
    parser.add_argument(
        "--decimals",
        default="1",
        help="decimals of los (days to a tenth), or 'none': unrounded, the quantile "
        "histograms' worst case (one grid point per row of a rare key)",
    )
    parser.add_argument(
        "--unit",
        type=int,
        default=None,
        help="declare a privacy unit (pid) of at most this many rows per person: each "
        "person's rows, spread over every file, are shuffled together and bounded first",
    )
    parser.add_argument(
        "--no-quantile", action="store_true", help="release counts, sums and means only"
    )
    parser.add_argument(
        "--selection",
        default="laplace",
        choices=("laplace", "gaussian", "truncated-geometric", "dp-sips"),
        help="the private selection (dp-sips under a unit also gathers each person's "
        "distinct keys)",
    )
    args = parser.parse_args()
    decimals = None if args.decimals == "none" else int(args.decimals)
    sizes = [int(float(r)) for r in args.rows.split(",")]
    what = "counts, sums, means" + ("" if args.no_quantile else ", median")
    print(f"ppdp publish groupby --keys private ({what}), {os.cpu_count()}")
    unit = "none" if args.unit is None else f"pid, max_rows {args.unit}"
    print(
        f"CPU(s), a LocalCluster; peak RSS of the whole process tree; los decimals: "
        f"{decimals}; privacy unit: {unit}; selection: {args.selection}\n"
    )
    print("| rows | keys in the data | keys released | seconds | peak RSS (MB) |")
    print("|---:|---:|---:|---:|---:|")
    times = []
    for rows in sizes:
        with tempfile.TemporaryDirectory(prefix="ppdp-groupby-scale-") as tmp:
            tmp_path = Path(tmp)
            persons = args.unit is not None
            distinct = write_dataset(tmp_path / "data", rows, int(args.keys), decimals, persons)
            schema = dict(SCHEMA)
            if persons:
                schema["privacy_unit"] = {"column": "pid", "max_rows": args.unit}
            (tmp_path / "s.json").write_text(json.dumps(schema))
            seconds, peak, rc = run_publish(
                tmp_path / "data",
                tmp_path / "s.json",
                tmp_path / "o",
                not args.no_quantile,
                args.selection,
            )
            if rc != 0:
                print(
                    f"| {rows:,} | {distinct:,} | failed (exit {rc}) | {seconds:.1f} | "
                    f"{peak / 2**20:,.0f} |"
                )
                continue
            released = len(pd.read_parquet(tmp_path / "o"))
            times.append(seconds)
            print(
                f"| {rows:,} | {distinct:,} | {released:,} | {seconds:.1f} | {peak / 2**20:,.0f} |",
                flush=True,
            )
    if len(times) > 1:
        print(f"\ntime ratio, {sizes[-1]:,} rows over {sizes[0]:,}: {times[-1] / times[0]:.1f}")


if __name__ == "__main__":
    main()
