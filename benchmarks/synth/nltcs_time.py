"""Benchmark: a seeded NLTCS fit + sample of ``TableSynthesizer``, before and after a change.

Issue 30 asks that ours fit and sample in at most a tenth of MST's time; on NLTCS (shipped,
15,101 training rows, 16 binary items) MST took 14.1 s in the suite and ours 9–19 s, all of
it in the explicit joint fit (``method="auto"`` takes ``"pairs"`` on a 65,536-cell domain).

Each run is the suite's call (``benchmarks/synth/suite.py``: the 70/30 split with seed 0,
ε = 1, δ = 1e-9, add/remove) timed from construction to the released rows, in a fresh
process per run; the trees given with ``--src`` (``git archive REV src``) take turns run by
run, so both see the same load. Run ``r`` uses ``random_state=r``. Prints one table: the
median, fastest and slowest seconds per tree, whether each seed's released rows (the CSV's
sha256) are the same bytes in every tree, and the largest difference between the trees'
fitted tables (expected counts, n = 15,101).

Run::

    git archive bce16bb src | tar -x -C /tmp/before
    nice .venv/bin/python benchmarks/synth/nltcs_time.py --src /tmp/before/src src --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

WORKER = """
import hashlib, json, sys, time, warnings
import numpy as np
from sklearn.model_selection import train_test_split
from ppdp.datasets import load_nltcs
from ppdp.publish import TableSynthesizer

seed, out = int(sys.argv[1]), sys.argv[2]
df, schema = load_nltcs()
train, _ = train_test_split(df[list(schema.column_names)], test_size=0.3, random_state=0)
warnings.simplefilter("ignore")  # random_state's reproducibility warning
t0 = time.perf_counter()
synth = TableSynthesizer(1.0, schema, delta=1e-9, relation="add/remove", random_state=seed)
data = synth.fit(train).release_.data
seconds = time.perf_counter() - t0
np.save(out, synth._model.counts)
digest = hashlib.sha256(data.to_csv(index=False).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "digest": digest, "method": synth.plan().method}))
"""


def _run(src: str, seed: int, counts: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(seed), str(counts)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", nargs="+", default=["src"], help="source trees to time")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {s: [] for s in args.src}
    same, largest, methods = [], 0.0, set()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.runs):
            digests, tables = [], []
            for k, src in enumerate(args.src):
                path = Path(tmp) / f"{k}.npy"
                row = _run(src, seed, path)
                times[src].append(row["seconds"])
                digests.append(row["digest"])
                methods.add(row["method"])
                tables.append(np.load(path))
            same.append(len(set(digests)) == 1)
            largest = max(largest, max(float(np.abs(t - tables[0]).max()) for t in tables))
    print(f"NLTCS, ε = 1, method {'/'.join(sorted(methods))}, seeds 0–{args.runs - 1}\n")
    print("| source | median (s) | fastest (s) | slowest (s) |")
    print("|---|---:|---:|---:|")
    for src, ts in times.items():
        print(f"| {src} | {statistics.median(ts):.2f} | {min(ts):.2f} | {max(ts):.2f} |")
    print(f"\nreleased rows the same bytes in every tree: {sum(same)} of {len(same)} seeds")
    print(f"largest difference between the fitted tables (counts): {largest:.2g}")


if __name__ == "__main__":
    main()
