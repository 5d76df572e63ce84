"""Benchmark: collector ingest rate over loopback, in signed batches.

Starts ``ppdp local serve`` (uvicorn, one worker) in a subprocess on 127.0.0.1, registers
one client, perturbs the reports *before* timing (perturbation happens on respondents'
devices, not in the collector), then posts them in batches and reports reports/s:

* additive Gaussian reports (σ = 1 on [0, 1], one float each; the collector bins them
  into its fine histogram, 21,002 counts), and characteristic-vector reports (k = 30
  lattice integers each);
* batch sizes 500, 2,000, 10,000.

The baseline in the same run is the collector's own work without HTTP: signature check,
validation, aggregation and the SQLite transaction (WAL, synchronous=FULL), i.e.
``Collector.ingest`` called in-process on the same signed bodies. The ratio shows what
HTTP + JSON transport costs. Target: ≥ 20,000 reports/s over loopback.

Run: ``.venv/bin/python benchmarks/bench_local_collector.py [--reports 200000]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import httpx
import numpy as np

from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorConfig
from ppdp.local.collector._app import Collector
from ppdp.local.collector._wire import encode_batch, read_headers, sign_body

warnings.simplefilter("ignore", InsecureRandomnessWarning)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(folder: Path, randomizer, name: str) -> tuple[Path, object]:
    key = generate_key()
    save_private_key(key, folder / f"{name}.key")
    cfg = {
        "survey": f"bench-{name}",
        "randomizer": randomizer.to_dict(),
        "store": f"{name}.sqlite",
        "clients": {"bench": encode_public_key(key.public_key())},
        "client": {"id": "bench", "key": f"{name}.key"},
        "max_batch": 20_000,
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path, key


def bodies(reports: np.ndarray, key, survey: str, batch: int, first_seq: int) -> list[tuple]:
    out = []
    for i, start in enumerate(range(0, len(reports), batch)):
        body = encode_batch(survey=survey, client="bench", seq=first_seq + i,
                            reports=reports[start : start + batch])  # fmt: skip
        out.append((body, sign_body(body, key)))
    return out


def over_http(config_path: Path, signed: list[tuple], n: int, key) -> float:
    port = free_port()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "local", "serve", "--config", str(config_path),
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/info", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(proc.stderr.read().decode())
            time.sleep(0.1)
        with httpx.Client(base_url=url, timeout=120) as http:
            t0 = time.perf_counter()
            for body, sig in signed:
                headers = {"X-PPDP-Client": "bench", "X-PPDP-Signature": sig}
                r = http.post("/v1/batches", content=body, headers=headers)
                r.raise_for_status()
            elapsed = time.perf_counter() - t0
            signed_read = read_headers("bench", key, "/v1/totals")
            assert http.get("/v1/totals", headers=signed_read).json()["count"] == n
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    return n / elapsed


def in_process(config_path: Path, signed: list[tuple], n: int) -> float:
    collector = Collector(CollectorConfig.from_file(config_path))
    try:
        t0 = time.perf_counter()
        for body, sig in signed:
            collector.ingest(body, sig)
        elapsed = time.perf_counter() - t0
        assert collector.store.snapshot().count == n
    finally:
        collector.close()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=200_000, help="reports per run")
    parser.add_argument("--batches", type=int, nargs="+", default=[500, 2_000, 10_000])
    args = parser.parse_args()
    n = args.reports
    rng = np.random.default_rng(0)
    designs = {
        "additive-gaussian": AdditiveRandomizer(noise="gaussian", scale=1.0, domain=(0.0, 1.0)),
        "cv-k30": CharacteristicVectorRandomizer(regions=30, noise="discrete-normal", sigma=1.0),
    }
    values = {
        "additive-gaussian": rng.beta(2, 5, n),
        "cv-k30": rng.integers(0, 30, n),
    }
    print(f"collector ingest over loopback: {n:,} reports per run, one client, sequential posts")
    print(f"{'design':<18} {'batch':>7} {'HTTP reports/s':>15} {'in-process/s':>13} {'ratio':>6}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, randomizer in designs.items():
            reports = randomizer.randomise(values[name], random_state=1)
            for batch in args.batches:
                tag = f"{name}-{batch}"
                path_http, key = write_config(folder, randomizer, tag + "-http")
                signed = bodies(reports, key, f"bench-{tag}-http", batch, 1)
                rate_http = over_http(path_http, signed, n, key)
                path_proc, key2 = write_config(folder, randomizer, tag + "-proc")
                signed2 = bodies(reports, key2, f"bench-{tag}-proc", batch, 1)
                rate_proc = in_process(path_proc, signed2, n)
                results.append((name, batch, rate_http, rate_proc))
                print(f"{name:<18} {batch:>7,} {rate_http:>15,.0f} {rate_proc:>13,.0f} "
                      f"{rate_http / rate_proc:>6.2f}")  # fmt: skip
    for batch in args.batches:
        worst = min(r[2] for r in results if r[1] == batch)
        verdict = "meets" if worst >= 20_000 else "MISSES"
        print(f"batches of {batch:,}: slowest design {worst:,.0f} reports/s over HTTP "
              f"({verdict} the 20,000/s target)")  # fmt: skip
    print("each batch costs one fsync of the WAL (synchronous=FULL): small batches are fsync-bound")


if __name__ == "__main__":
    main()
