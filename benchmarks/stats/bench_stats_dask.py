"""Sufficient statistics of a 10^7 x 50 Parquet dataset through Dask on a LocalCluster.

Usage::

    .venv/bin/python benchmarks/stats/bench_stats_dask.py [--rows 10000000] [--workers N]

The dataset (50 float64 columns in [0, 1] plus a 2-class label) is written once, file by file
(never the whole table in memory), under ``benchmarks/.data/`` (git-ignored) and reused.
Then :meth:`SufficientStats.from_parquet` runs on a ``distributed.LocalCluster`` (or on
``--scheduler tcp://...``). Reported: rows/s, and the peak memory of this process plus every
cluster process (sum of RSS, sampled every 50 ms in a thread), against the data size
(10^7 x 50 x 8 B = 4 GB). Baseline in the same run: the same reduction done sequentially in
this process, one file at a time (pandas read, encode, in-memory kernel, ``+``); the two
results must agree to 1e-9 relative.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from ppdp.data import Schema, SufficientStats

DATA_ROOT = Path(__file__).resolve().parents[1] / ".data"


class PeakMemory:
    """Sample the summed RSS of this process and all its descendants in a thread."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._proc = psutil.Process()

    def sample(self) -> int:
        total = 0
        for p in [self._proc, *self._proc.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.sample())
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self.peak = self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.sample())


def schema_for(cols: int) -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": f"x{j:02d}", "type": "numeric", "lower": 0, "upper": 1}
                for j in range(cols)
            ],
            "label": {"name": "label", "classes": [0, 1]},
        }
    )


def ensure_dataset(rows: int, cols: int, rows_per_file: int, row_group: int, seed: int) -> Path:
    """Write the dataset file by file unless an identical one is cached; return its folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = {"rows": rows, "cols": cols, "rows_per_file": rows_per_file, "seed": seed}
    folder = DATA_ROOT / f"stats_{rows}x{cols}"
    marker = folder / "_ppdp_meta.json"
    if marker.exists() and json.loads(marker.read_text()) == meta:
        print(f"reusing {folder}")
        return folder
    DATA_ROOT.mkdir(parents=True, exist_ok=True)
    need = int(rows * (cols * 8 + 1) * 1.1) + (1 << 30)
    free = shutil.disk_usage(DATA_ROOT).free
    if free < need:
        sys.exit(
            f"not enough disk space under {DATA_ROOT}: need {need / 1e9:.1f} GB, "
            f"have {free / 1e9:.1f} GB"
        )
    tmp = folder.with_name(folder.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.mkdir(parents=True)
    names = [f"x{j:02d}" for j in range(cols)]
    t0 = time.perf_counter()
    for i, start in enumerate(range(0, rows, rows_per_file)):
        m = min(rows_per_file, rows - start)
        rng = np.random.default_rng([seed, i])
        block = rng.random((m, cols))
        label = (rng.random(m) < 0.3).astype(np.int8)
        arrays = [pa.array(block[:, j]) for j in range(cols)] + [pa.array(label)]
        table = pa.Table.from_arrays(arrays, names=[*names, "label"])
        pq.write_table(table, tmp / f"part-{i:05d}.parquet", row_group_size=row_group)
        del block, arrays, table
    (tmp / "_ppdp_meta.json").write_text(json.dumps(meta))
    tmp.rename(folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    print(f"wrote {folder} ({size / 1e9:.2f} GB on disk) in {time.perf_counter() - t0:.1f} s")
    return folder


def sequential_baseline(folder: Path, schema: Schema) -> SufficientStats:
    import pandas as pd

    total = SufficientStats.zeros(schema.n_features, classes=schema.classes)
    for f in sorted(folder.glob("*.parquet")):
        X, y = schema.encode(pd.read_parquet(f))
        total = total + SufficientStats.compute(X, y, classes=schema.classes)
    return total


def timed(fn: Callable[[], Any]) -> tuple[Any, float, int]:
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
    return out, dt, mem.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--cols", type=int, default=50)
    parser.add_argument("--rows-per-file", type=int, default=250_000)
    parser.add_argument("--row-group", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster n_workers")
    parser.add_argument("--threads-per-worker", type=int, default=None)
    parser.add_argument("--scheduler", default=None, help="address of a running scheduler")
    parser.add_argument("--no-baseline", action="store_true", help="skip the sequential baseline")
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    folder = ensure_dataset(args.rows, args.cols, args.rows_per_file, args.row_group, args.seed)
    schema = schema_for(args.cols)
    data_bytes = args.rows * args.cols * 8
    rows_out = []

    if args.scheduler:
        client = Client(args.scheduler)
        cluster = None
        where = args.scheduler
    else:
        kwargs: dict[str, Any] = {"dashboard_address": None, "silence_logs": 40}
        if args.workers is not None:
            kwargs["n_workers"] = args.workers
        if args.threads_per_worker is not None:
            kwargs["threads_per_worker"] = args.threads_per_worker
        t0 = time.perf_counter()
        cluster = LocalCluster(**kwargs)
        client = Client(cluster)
        info = client.scheduler_info()["workers"]
        threads = sum(w["nthreads"] for w in info.values())
        where = f"LocalCluster: {len(info)} workers, {threads} threads"
        print(f"{where}, started in {time.perf_counter() - t0:.1f} s")
    try:
        idle = PeakMemory().sample()
        stats, dt, peak = timed(
            lambda: SufficientStats.from_parquet(folder, schema=schema, scheduler=client)
        )
        rows_out.append((f"Dask from_parquet ({where})", dt, peak, idle))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    if not args.no_baseline:
        idle = PeakMemory().sample()
        ref, dt, peak = timed(lambda: sequential_baseline(folder, schema))
        rows_out.append(("sequential, one file at a time (baseline)", dt, peak, idle))
        rel = max(
            float(np.max(np.abs(stats.class_sum_xx - ref.class_sum_xx) / np.abs(ref.class_sum_xx))),
            float(np.max(np.abs(stats.sum_x - ref.sum_x) / np.abs(ref.sum_x))),
        )
        assert np.array_equal(stats.class_counts, ref.class_counts)
    print()
    print(
        f"n={args.rows:,} p={args.cols} (+ 2-class label); data {data_bytes / 1e9:.1f} GB as "
        f"float64; {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM"
    )
    print(
        f"{'engine':<56} {'seconds':>8} {'rows/s':>12} {'peak RSS':>9} {'idle RSS':>9} "
        f"{'peak/data':>9}"
    )
    for name, t, peak, idle in rows_out:
        print(
            f"{name:<56} {t:8.1f} {args.rows / t:12,.0f} {peak / 1e9:8.2f}G {idle / 1e9:8.2f}G "
            f"{peak / data_bytes:9.2f}"
        )
    print(f"class counts: {stats.class_counts.tolist()}")
    if not args.no_baseline:
        print(f"max relative difference Dask vs sequential: {rel:.1e} (must be <= 1e-9)")
        assert rel <= 1e-9


if __name__ == "__main__":
    main()
