"""Benchmark: a 400,000-report ``ppdp local report`` interrupted by a SIGKILLed collector, then
finished by rerunning the same command; the collector must hold exactly 400,000 reports.

Setup (a fresh temporary folder): an additive Laplace randomizer on [0, 1] (scale 0.5), one
client key, ``values.csv`` with ``--n`` values. The collector is a real
``python -m ppdp local serve`` process on loopback; the respondent is a real
``python -m ppdp local report`` process (batches of ``--batch-size``), which keeps its
journal beside the input (``values.csv.report-journal``).

Steps, each timed:

1. start the collector; start the report; a watcher reads the collector's store (SQLite,
   read-only) every millisecond and SIGKILLs the collector as soon as it holds at least
   ``--kill-at`` reports. The report must exit 2 with one line saying how many were
   delivered and how many wait in the journal;
2. rerun the same command while the collector is still down (exit 2, the same counts);
3. restart the collector on the same store; rerun the same command: it must resend exactly
   the unacknowledged batches and exit 0;
4. rerun once more: nothing is sent.

Step 0 times a bare ``python -c "import ..."`` of the report command's modules: each run's
wall time includes that start-up. Checked at the end: the store counts exactly ``--n``
reports; its running totals equal the aggregates of the journal's reports (every report
counted once, none perturbed twice: the journal holds the one perturbation, and the
collector holds exactly it).

Run: ``.venv/bin/python benchmarks/bench_resumable_report.py [--n 400000] [--kill-at 260000]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _store_count(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)
        try:
            row = conn.execute("SELECT reports FROM state WHERE id = 0").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return 0 if row is None else int(row[0])


def _serve(folder: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    import httpx

    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "local", "serve", "--config",
         str(folder / "collector.json"), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/info", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the collector did not start")
        time.sleep(0.05)


def _report(argv: list[str], env: dict[str, str]) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return done.returncode, done.stdout.strip(), done.stderr.strip(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400_000, help="reports (one per value)")
    parser.add_argument("--kill-at", type=int, default=260_000, help="SIGKILL the collector here")
    parser.add_argument("--batch-size", type=int, default=5_000, help="reports per batch")
    args = parser.parse_args()

    from ppdp.ledger import encode_public_key, generate_key, save_private_key
    from ppdp.local import AdditiveRandomizer
    from ppdp.local.collector import CollectorConfig, CollectorStore, ReportJournal
    from ppdp.local.collector._aggregate import Aggregator

    folder = Path(tempfile.mkdtemp(prefix="ppdp-resume-"))
    key = generate_key()
    save_private_key(key, folder / "app.key")
    randomizer = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    config = {
        "survey": "resume-bench",
        "randomizer": randomizer.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": encode_public_key(key.public_key())},
        "client": {"id": "app", "key": "app.key"},
    }
    (folder / "collector.json").write_text(json.dumps(config))
    values = np.random.default_rng(0).beta(2.0, 5.0, args.n)
    (folder / "values.csv").write_text("x\n" + "\n".join(f"{v:.6f}" for v in values) + "\n")
    store = folder / "store.sqlite"
    journal = folder / "values.csv.report-journal"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    report = [sys.executable, "-m", "ppdp", "local", "report", str(folder / "values.csv"),
              "--config", str(folder / "collector.json"), "--server", url,
              "--batch-size", str(args.batch_size)]  # fmt: skip
    print(f"folder {folder}; {args.n:,} values; batches of {args.batch_size:,}; "
          f"kill the collector at >= {args.kill_at:,} reports")  # fmt: skip

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import ppdp.cli._local, ppdp.local.collector._client"],
                   env=env, check=True)  # fmt: skip
    t0 = time.perf_counter() - start
    print(f"0. start-up baseline (python + the report command's imports): {t0:.2f} s")
    collector = _serve(folder, port, env)
    killed: dict[str, float] = {}

    def watch() -> None:
        while collector.poll() is None:
            count = _store_count(store)
            if count >= args.kill_at:
                os.kill(collector.pid, signal.SIGKILL)
                collector.wait()
                killed["count"] = count
                killed["at"] = time.perf_counter()
                return
            time.sleep(0.001)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rc1, _, err1, t1 = _report(report, env)
    watcher.join(10)
    if collector.poll() is None:
        collector.kill()
        collector.wait()
        raise SystemExit(f"the upload finished before the kill (rc {rc1}): lower --kill-at")
    after_kill = _store_count(store)
    held = killed.get("count", after_kill)
    print(f"1. first run: exit {rc1} after {t1:.2f} s; the collector was SIGKILLed holding "
          f"{held:,} reports ({after_kill:,} in its store afterwards)")  # fmt: skip
    print(f"   stderr: {err1}")
    with ReportJournal.open(journal) as jr:
        acked_1 = jr.delivered
    rc2, _, err2, t2 = _report(report, env)
    print(f"2. rerun while the collector is down: exit {rc2} after {t2:.2f} s")
    print(f"   stderr: {err2}")
    collector = _serve(folder, port, env)
    try:
        rc3, out3, _, t3 = _report(report, env)
        print(f"3. rerun after the restart: exit {rc3} after {t3:.2f} s")
        print(f"   stdout: {out3}")
        rc4, out4, _, t4 = _report(report, env)
        print(f"4. rerun once more: exit {rc4} after {t4:.2f} s: {out4}")
    finally:
        collector.terminate()
        collector.wait(10)
    cfg = CollectorConfig.from_file(folder / "collector.json")
    with CollectorStore.open(store, create=False) as st:
        snap = st.snapshot()
    with ReportJournal.open(journal) as jr:
        reports = jr.reports()
        acked = jr.delivered
    expected = Aggregator.from_config(cfg).aggregate(reports)
    same = all(np.array_equal(snap.totals[k], expected[k]) for k in snap.totals)
    print(f"journal: {len(reports):,} reports (perturbed once), {acked:,} acknowledged; "
          f"{acked_1:,} were acknowledged when the collector died")  # fmt: skip
    print(f"collector: {snap.count:,} reports in {snap.batches} batches; running totals equal "
          f"the journal's aggregates: {same}")  # fmt: skip
    ok = (
        rc1 == 2 and rc2 == 2 and rc3 == 0 and rc4 == 0 and snap.count == args.n
        and acked == args.n and same and "nothing sent" in out4
    )  # fmt: skip
    print(f"RESULT: {'OK' if ok else 'FAILED'}: exactly {snap.count:,} of {args.n:,} reports "
          f"counted; first run {t1:.2f} s, resumed run {t3:.2f} s")  # fmt: skip
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
