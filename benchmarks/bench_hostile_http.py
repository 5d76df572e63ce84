"""Benchmark: what unauthenticated bodies cost the collector and a federated owner, and
the collector's throughput under concurrent honest clients, before and after hardening.

Two implementations run side by side in the same run: the current tree, and a baseline
tree exported with ``git archive`` (``--baseline-ref``, default the commit before the
HTTP hardening of issue 12) and put first on ``PYTHONPATH`` of its server processes.

1. **Peak RSS under hostile bodies.** For each server — ``ppdp local serve`` (a
   characteristic-vector survey, k = 30, ``max_batch`` 20,000 as by default) and
   ``ppdp federate owner`` (a prepared two-owner deployment; the other parties never
   start) — and each case, a fresh server process gets ``--attackers`` (4) concurrent
   raw-socket posts of ``--body-mb`` (100) MB each, with ``Content-Length`` or chunked:

   * ``no-auth``: no authentication headers at all;
   * ``forged``: a registered client id / pinned sender and a 64-byte signature that does
     not verify;
   * ``forged-cap``: the same, with a body of exactly the server's cap (the most that an
     unauthenticated request may make a server read: ``max_body`` from ``/v1/info``, or
     the baseline collector's 4 KB per report; an owner's 64 MiB);
   * ``json-78MB`` (collector only): the issue's case, a 78 MB valid-JSON batch with a
     registered id and a forged signature (the baseline parsed it before checking).

   Reported: the server's peak resident set (``VmHWM`` of the process, which includes the
   interpreter and the imported libraries; ``idle`` is the same right after start-up),
   the statuses the attackers got and how many MB the server let them send. Target:
   below 200 MB.

2. **Throughput.** ``--clients`` (20) registered clients post pre-perturbed, pre-signed
   additive batches (Gaussian σ = 1 on [0, 1], as ``bench_local_collector.py``) of
   ``--batch`` (2,000) reports concurrently over loopback, one thread and one keep-alive
   connection each, ``--reports`` in all; reports/s from the first post to the last
   reply, the count checked exactly afterwards, and the server's CPU time per 1,000
   reports (user + system, from ``/proc``: far less sensitive than wall time to the other
   jobs on a shared machine). ``--repeats`` (3) runs alternating the two implementations.
   Target: current ≥ baseline (the issue quotes about 144,000/s).

Run: ``.venv/bin/python benchmarks/bench_hostile_http.py`` (about 5 minutes on 2 cores);
``--skip-baseline-rss`` avoids the baseline's multi-GB hostile cases.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import warnings
from io import BytesIO
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.federated.http import Timeouts, prepare_deployment
from ppdp.federated.http._demo import session_for
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector._wire import encode_batch, read_headers, sign_body

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_local_collector import free_port  # the same loopback approach

warnings.simplefilter("ignore", InsecureRandomnessWarning)

REPO = Path(__file__).resolve().parents[1]
#: The tree before issue 12's HTTP hardening (the parent of the collector commit).
BASELINE_REF = "295a72b"
MB = 1024 * 1024


# ------------------------------------------------------------------ implementations


def export_tree(ref: str, dest: Path) -> Path:
    """``git archive REF src`` unpacked under ``dest``; returns the ``src`` folder."""
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def server_env(src: Path | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def start(cmd: list[str], env: dict[str, str], url: str, probe: str) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(url + probe, timeout=1).status_code in (200, 401, 404):
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(proc.stderr.read().decode()[-2000:])
        time.sleep(0.1)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, amount, _unit = line.split()
            values[key] = int(amount) / 1024
    return values["VmRSS:"], values["VmHWM:"]


# ------------------------------------------------------------------ hostile posts


def hostile_post(port: int, path: str, headers: dict[str, str], body: bytes | int,
                 chunked: bool, out: list) -> None:  # fmt: skip
    """POST a body over a raw socket until the server answers or closes; append
    (status or None, bytes sent)."""
    total = body if isinstance(body, int) else len(body)
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    sent, step = 0, 256 * 1024
    filler = b"x" * step
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        while sent < total:
            readable, writable, _ = select.select([sock], [sock], [], 30)
            if readable:
                break  # the server answered (or closed) before the body was complete
            if not writable:
                break
            n = min(step, total - sent)
            piece = filler[:n] if isinstance(body, int) else body[sent : sent + n]
            sock.sendall(b"%x\r\n%s\r\n" % (n, piece) if chunked else piece)
            sent += n
        else:
            if chunked:
                sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    status = None
    try:
        sock.settimeout(120)
        reply = sock.recv(4096)
        if reply.startswith(b"HTTP/1.1 "):
            status = int(reply.split()[1])
    except OSError:
        pass
    sock.close()
    out.append((status, sent))


def attack(proc: subprocess.Popen, port: int, path: str, headers: dict[str, str],
           body: bytes | int, chunked: bool, attackers: int) -> dict:  # fmt: skip
    _, idle = memory(proc.pid)
    out: list = []
    threads = [
        threading.Thread(target=hostile_post, args=(port, path, headers, body, chunked, out))
        for _ in range(attackers)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    seconds = time.perf_counter() - t0
    time.sleep(0.5)  # let the server finish whatever it was doing with the bodies
    _, peak = memory(proc.pid)
    statuses = sorted({str(s) if s is not None else "reset" for s, _ in out})
    return {
        "idle_mb": idle,
        "peak_mb": peak,
        "statuses": "/".join(statuses),
        "let_in_mb": max(n for _, n in out) / MB,
        "seconds": seconds,
    }


def json_body(megabytes: float) -> bytes:
    """A valid characteristic-vector batch (k = 30) of about ``megabytes`` MB."""
    row = "[" + ",".join(["12"] * 30) + "]"
    n = int(megabytes * MB) // (len(row) + 1)
    text = '{"v":1,"survey":"hostile","client":"app-0","seq":1,"reports":['
    return (text + ",".join([row] * n) + "]}").encode()


def collector_rss(folder: Path, impls: dict, args) -> list[tuple]:
    cv = CharacteristicVectorRandomizer(regions=30, noise="discrete-normal", sigma=1.0)
    key = generate_key()
    forged = base64.b64encode(os.urandom(64)).decode()
    claimed = {"X-PPDP-Client": "app-0", "X-PPDP-Signature": forged}
    cases = [
        ("no-auth", {}, args.body_mb * MB),
        ("forged", claimed, args.body_mb * MB),
        ("forged-cap", claimed, None),  # exactly the server's body cap: read, then refused
        ("json-78MB", claimed, json_body(78)),
    ]
    rows = []
    for impl, src in impls.items():
        for name, headers, body in cases:
            for chunked in (False, True):
                if name in ("json-78MB", "forged-cap") and chunked:
                    continue
                store = folder / f"rss-{impl}-{name}-{chunked}.sqlite"
                cfg = {
                    "survey": "hostile",
                    "randomizer": cv.to_dict(),
                    "store": str(store),
                    "clients": {"app-0": encode_public_key(key.public_key())},
                }
                path = folder / f"rss-{impl}-{name}-{chunked}.json"
                path.write_text(json.dumps(cfg))
                port = free_port()
                cmd = [sys.executable, "-m", "ppdp", "local", "serve", "--config", str(path),
                       "--port", str(port)]  # fmt: skip
                url = f"http://127.0.0.1:{port}"
                proc = start(cmd, server_env(src), url, "/v1/info")
                if body is None:  # older collectors announce no cap: theirs was 4 KB a report
                    info = httpx.get(url + "/v1/info", timeout=10).json()
                    body = info.get("max_body", info["max_batch"] * 4096 + 4096)
                try:
                    res = attack(proc, port, "/v1/batches", headers, body, chunked, args.attackers)
                finally:
                    stop(proc)
                mode = "chunked" if chunked else "length"
                rows.append(("collector", impl, name, mode, res))
                print_rss_row(rows[-1])
    return rows


def owner_rss(folder: Path, impls: dict, args) -> list[tuple]:
    schema = Schema.from_dict(
        {
            "columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}],
            "label": {"name": "cls", "classes": ["no", "yes"]},
        }
    )
    rows_per = 20
    parts = [
        pd.DataFrame({"a": np.linspace(0, 1, rows_per), "cls": ["no", "yes"] * (rows_per // 2)})
        for _ in range(2)
    ]
    forged = base64.b64encode(os.urandom(64)).decode()
    claimed = {"X-PPDP-Sender": "publisher", "X-PPDP-Body-Signature": forged}
    cases = [
        ("no-auth", {}, args.body_mb * MB),
        ("forged", claimed, args.body_mb * MB),
        ("forged-cap", claimed, 64 * MB),  # exactly the body cap: read, then refused
    ]
    slow = Timeouts(request=5.0, retries=0, startup=600.0, phase=600.0, round=1200.0, linger=0.0)
    rows = []
    n = 0
    for impl, src in impls.items():
        for name, headers, size in cases:
            for chunked in (False, True):
                if name == "forged-cap" and chunked:
                    continue
                n += 1
                session = session_for(parts, schema, session_id=f"h-{n}", epsilon=1.0,
                                      delta=1e-5, dealer="trusted",
                                      release="direction")  # fmt: skip
                dep = prepare_deployment(folder / f"dep-{n}", parts=parts, schema=schema,
                                         session=session, timeouts=slow)  # fmt: skip
                url = dep.urls["owner-1"]
                port = int(url.rsplit(":", 1)[1])
                cmd = [sys.executable, "-m", "ppdp", "federate", "owner", "--config",
                       str(dep.configs["owner-1"])]  # fmt: skip
                proc = start(cmd, server_env(src), url, "/health")
                try:
                    res = attack(proc, port, "/messages", headers, size, chunked,
                                 args.attackers)  # fmt: skip
                finally:
                    stop(proc)
                mode = "chunked" if chunked else "length"
                rows.append(("owner", impl, name, mode, res))
                print_rss_row(rows[-1])
    return rows


def print_rss_row(row: tuple) -> None:
    server, impl, name, mode, r = row
    verdict = "ok" if r["peak_mb"] < 200 else "OVER"
    print(f"{server:<10} {impl:<9} {name:<10} {mode:<8} {r['idle_mb']:>8.0f} {r['peak_mb']:>8.0f} "
          f"{r['let_in_mb']:>8.1f} {r['seconds']:>6.1f}  {r['statuses']:<12} {verdict}",
          flush=True)  # fmt: skip


# ------------------------------------------------------------------ throughput


def throughput(folder: Path, impl: str, src: Path | None, args, rep: int) -> tuple[float, float]:
    """(reports/s, server CPU ms per 1,000 reports) of one run."""
    randomizer = AdditiveRandomizer(noise="gaussian", scale=1.0, domain=(0.0, 1.0))
    keys = {f"app-{i}": generate_key() for i in range(args.clients)}
    tag = f"tp-{impl}-{rep}"
    for cid, key in keys.items():
        save_private_key(key, folder / f"{tag}-{cid}.key")
    cfg = {
        "survey": "bench",
        "randomizer": randomizer.to_dict(),
        "store": str(folder / f"{tag}.sqlite"),
        "clients": {cid: encode_public_key(k.public_key()) for cid, k in keys.items()},
    }
    path = folder / f"{tag}.json"
    path.write_text(json.dumps(cfg))
    per_client = args.reports // args.clients
    rng = np.random.default_rng(rep)
    plan = {}
    for cid, key in keys.items():
        reports = randomizer.randomise(rng.beta(2, 5, per_client), random_state=rep)
        batches = []
        for i, s in enumerate(range(0, per_client, args.batch)):
            body = encode_batch(survey="bench", client=cid, seq=i + 1,
                                reports=reports[s : s + args.batch])  # fmt: skip
            headers = {"X-PPDP-Client": cid, "X-PPDP-Signature": sign_body(body, key),
                       "content-type": "application/json"}  # fmt: skip
            batches.append((body, headers))
        plan[cid] = batches
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "ppdp", "local", "serve", "--config", str(path),
           "--port", str(port)]  # fmt: skip
    proc = start(cmd, server_env(src), url, "/v1/info")
    errors: list[str] = []
    go = threading.Barrier(args.clients + 1)

    def client(cid: str) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            http.get("/v1/info")  # open the keep-alive connection before the clock starts
            go.wait()
            for body, headers in plan[cid]:
                r = http.post("/v1/batches", content=body, headers=headers)
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    return

    try:
        threads = [threading.Thread(target=client, args=(cid,)) for cid in plan]
        for t in threads:
            t.start()
        go.wait()
        t0, c0 = time.perf_counter(), cpu_seconds(proc.pid)
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(proc.pid) - c0
        if errors:
            raise RuntimeError(f"{impl}: {errors[0]}")
        first = next(iter(keys))
        signed = read_headers(first, keys[first], "/v1/totals")  # the baseline ignores it
        count = httpx.get(f"{url}/v1/totals", headers=signed, timeout=30).json()["count"]
        assert count == per_client * args.clients, (count, per_client * args.clients)
    finally:
        stop(proc)
    n = per_client * args.clients
    return n / elapsed, 1000 * cpu / (n / 1000)


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline-ref",
        default=BASELINE_REF,
        help="git ref of the baseline tree ('none' to skip the baseline)",
    )
    parser.add_argument("--body-mb", type=int, default=100, help="MB per hostile body")
    parser.add_argument("--attackers", type=int, default=4, help="concurrent hostile posts")
    parser.add_argument(
        "--skip-baseline-rss",
        action="store_true",
        help="run the hostile cases against the current tree only",
    )
    parser.add_argument("--skip-rss", action="store_true", help="throughput only")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--batch", type=int, default=2_000)
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ppdp-bench-hostile-") as tmp:
        folder = Path(tmp)
        impls: dict[str, Path | None] = {"current": None}
        if args.baseline_ref.lower() != "none":
            base = export_tree(args.baseline_ref, folder / "baseline")
            impls = {"baseline": base, "current": None}
            print(f"baseline: git archive {args.baseline_ref} (first on PYTHONPATH of its servers)")
        if not args.skip_rss:
            rss_impls = {"current": None} if args.skip_baseline_rss else dict(impls)
            print(f"\n1. server peak RSS under {args.attackers} concurrent {args.body_mb} MB "
                  "unauthenticated bodies (fresh process per case; target < 200 MB)")  # fmt: skip
            print(f"{'server':<10} {'tree':<9} {'case':<10} {'framing':<8} {'idle MB':>8} "
                  f"{'peak MB':>8} {'let in':>8} {'s':>6}  statuses")  # fmt: skip
            collector_rss(folder, rss_impls, args)
            owner_rss(folder, rss_impls, args)
        print(f"\n2. collector throughput: {args.clients} concurrent clients, "
              f"{args.batch:,} additive reports per batch, {args.reports:,} reports per run, "
              "loopback")  # fmt: skip
        rates: dict[str, list[float]] = {k: [] for k in impls}
        costs: dict[str, list[float]] = {k: [] for k in impls}
        for rep in range(args.repeats):
            for impl, src in impls.items():
                rate, cost = throughput(folder, impl, src, args, rep)
                rates[impl].append(rate)
                costs[impl].append(cost)
                print(f"   run {rep + 1} {impl:<9} {rate:>10,.0f} reports/s, server CPU "
                      f"{cost:.2f} ms per 1,000 reports", flush=True)  # fmt: skip
        print(f"{'tree':<10} {'best reports/s':>15} {'median':>10} {'CPU ms/1k (median)':>19}")
        for impl, values in rates.items():
            print(f"{impl:<10} {max(values):>15,.0f} {float(np.median(values)):>10,.0f} "
                  f"{float(np.median(costs[impl])):>19.2f}")  # fmt: skip
        if len(rates) == 2:
            bv, cv = rates["baseline"], rates["current"]
            print(f"current / baseline: best {max(cv) / max(bv):.2f}, median "
                  f"{np.median(cv) / np.median(bv):.2f}; server CPU per report "
                  f"{np.median(costs['current']) / np.median(costs['baseline']):.2f}")  # fmt: skip
        print(f"load average at the end: {os.getloadavg()[0]:.1f} (2-core machine shared)")


if __name__ == "__main__":
    main()
