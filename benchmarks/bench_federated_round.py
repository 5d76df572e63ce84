"""Benchmark: one Mul-LDA-DP round over HTTP on loopback, each owner its own process.

Setup: Adult (45,222 rows) split into ``--owners`` parts (10 by default, ~4,522 rows each),
encoded with the shipped schema and divided by its declared row-norm bound; a publisher,
a dealer and the owners run as separate ``python -m ppdp federate ROLE`` processes
(FastAPI + uvicorn servers, httpx clients, Ed25519-signed messages, dealer shares sealed
with X25519 + ChaCha20-Poly1305, the publisher's ledger and every owner's replica in
SQLite with fsync). ``--release noisy-projections`` (default) runs all phases: round
start and spend, dealer shares, mean shares, noisy means, scatter shares, result,
projections (45,222 noisy rows), release.

Measured per round, after start-up (the publisher's clock from ``start()`` — every peer
already answering ``/health`` — to its release):

* ``round``: wall time of the round;
* ``compute``: time inside the roles' ``start()``/``handle()`` (noise, statistics,
  the Fisher direction, ledger appends and replica writes), summed over all parties, and
  on an estimated critical path (publisher + dealer + slowest owner);
* ``codec``: message decoding, signature and payload checks (``role.check``),
  encoding and sealing, summed over all parties;
* ``transport``: round − critical-path compute − publisher codec: HTTP, the event
  loops, scheduling of 12 processes on the machine's cores.

Baseline (same run): :func:`ppdp.federated.simulate_round`, the same roles routed through
an in-process queue (no HTTP, no processes), with the ledger and replicas in memory and,
like the deployment, in SQLite files (durable appends); the ratio to the latter shows what
the deployment (processes, HTTP, signatures checked at every hop) costs on top of the
protocol. Every party process, and the baseline,
uses one BLAS thread (``start_parties`` sets ``OMP/OPENBLAS/MKL_NUM_THREADS=1``).

Run: ``.venv/bin/python benchmarks/bench_federated_round.py [--owners 10] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ppdp.datasets import load_adult
from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.federated import simulate_round
from ppdp.federated.http import Timeouts, prepare_deployment, start_parties, wait_parties
from ppdp.federated.http._demo import constant_blocks, session_for, split_table


def http_round(parts, schema, owners: int, release: str, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ppdp-bench-fed-") as tmp:
        session = session_for(
            parts,
            schema,
            session_id=f"bench-{seed}",
            epsilon=1.0,
            delta=1e-5,
            dealer="trusted",
            release=release,
        )
        dep = prepare_deployment(
            Path(tmp),
            parts=parts,
            schema=schema,
            session=session,
            timeouts=Timeouts(
                request=10.0, retries=3, startup=120.0, phase=60.0, round=120.0, linger=0.2
            ),
        )
        t0 = time.perf_counter()
        procs = start_parties(dep)
        codes = wait_parties(procs, timeout=300.0)
        total = time.perf_counter() - t0
        if any(codes.values()):
            logs = {p: procs[p].last_line() for p, c in codes.items() if c}
            raise SystemExit(f"round failed: exit codes {codes}: {logs}")
        out = {p: json.loads((Path(tmp) / f"{p}.outcome.json").read_text()) for p in dep.roles}
    st = {p: o["stats"] for p, o in out.items()}
    pub = st["publisher"]
    wall = pub["finished_at"] - pub["started_at"]

    def codec(s):
        return s["decode_s"] + s["validate_s"] + s["encode_s"]

    owner_ids = [p for p in st if p.startswith("owner-")]
    compute_sum = sum(s["handle_s"] for s in st.values())
    crit = pub["handle_s"] + st["dealer"]["handle_s"] + max(st[o]["handle_s"] for o in owner_ids)
    crit_codec = codec(pub) + codec(st["dealer"]) + max(codec(st[o]) for o in owner_ids)
    return {
        "round": wall,
        "processes_total": total,
        "compute_sum": compute_sum,
        "compute_crit": crit,
        "publisher_compute": pub["handle_s"],
        "max_owner_compute": max(st[o]["handle_s"] for o in owner_ids),
        "codec_sum": sum(codec(s) for s in st.values()),
        "codec_crit": crit_codec,
        "transport": wall - crit - crit_codec,
        "messages": sum(s["sent"] for s in st.values()),
        "bytes": sum(s["bytes_out"] for s in st.values()),
    }


def in_process_round(parts, schema, release: str, *, on_disk: bool) -> dict:
    xy = []
    bound = schema.max_row_l2_norm
    for part in parts:
        X, y = schema.encode(part, include_label=False)
        xy.append((X / bound, y))
    with warnings.catch_warnings(), threadpool_limits(1):  # like each party process
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        with tempfile.TemporaryDirectory(prefix="ppdp-bench-sim-") as tmp:
            t0 = time.perf_counter()
            res = simulate_round(
                xy,
                epsilon=1.0,
                delta=1e-5,
                dealer="trusted",
                release=release,
                constant_blocks=constant_blocks(schema),
                workdir=tmp if on_disk else None,
            )
            wall = time.perf_counter() - t0
    assert res.state == "done", res.abort_reason
    return {"round": wall, "compute": res.timings.get("compute", float("nan"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--owners", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--release", default="noisy-projections", choices=("direction", "noisy-projections")
    )
    args = ap.parse_args()
    df, schema = load_adult()
    parts = split_table(df, args.owners)
    print(
        f"Mul-LDA-DP round, {args.owners} owners x ~{len(df) // args.owners} rows of Adult "
        f"(d = {schema.layout().n_features}), release {args.release}; "
        f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}"
    )
    http, local, disk = [], [], []
    for r in range(args.repeats):
        http.append(http_round(parts, schema, args.owners, args.release, r))
        local.append(in_process_round(parts, schema, args.release, on_disk=False))
        disk.append(in_process_round(parts, schema, args.release, on_disk=True))

    def med(rows, key):
        return statistics.median(row[key] for row in rows)

    rows = [
        ("HTTP round after start-up (s)", med(http, "round")),
        ("  compute on the critical path (s)", med(http, "compute_crit")),
        ("    publisher role (s)", med(http, "publisher_compute")),
        ("    slowest owner role (s)", med(http, "max_owner_compute")),
        ("  message codec + signatures, critical path (s)", med(http, "codec_crit")),
        ("  transport, event loops, scheduling (s)", med(http, "transport")),
        ("compute summed over all 12 parties (s)", med(http, "compute_sum")),
        ("codec summed over all parties (s)", med(http, "codec_sum")),
        ("start-up + round + shutdown of all processes (s)", med(http, "processes_total")),
        ("messages / MB sent", None),
        ("in-process simulate_round, ledgers in memory (s)", med(local, "round")),
        ("in-process simulate_round, ledgers on disk (s)", med(disk, "round")),
        ("HTTP round / in-process round on disk", med(http, "round") / med(disk, "round")),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"{'median of ' + str(args.repeats) + ' rounds':<{width}}  value")
    for k, v in rows:
        if v is None:
            msgs = med(http, "messages")
            mb = med(http, "bytes") / 1e6
            print(f"{k:<{width}}  {msgs:.0f} / {mb:.2f}")
        else:
            print(f"{k:<{width}}  {v:.3f}")
    each = ", ".join(f"{h['round']:.3f}" for h in http)
    print(f"HTTP rounds (s): {each}; target < 2 s after start-up")
    print(
        f"share of the round in compute (critical path): "
        f"{med(http, 'compute_crit') / med(http, 'round'):.0%}"
    )
    _ = np


if __name__ == "__main__":
    main()
