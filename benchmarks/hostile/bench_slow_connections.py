"""Benchmark: what many slow connections make the collector (or a federated owner) hold.

A fresh server process (``ppdp local serve``, or ``ppdp federate owner`` of a prepared
two-owner deployment) gets ``--connections`` sockets, opened ``--parallel`` at a time; each
sends the headers of a ``POST`` with a registered id (the collector) or a pinned sender (the
owner), a forged signature, a ``Content-Length`` of the server's body cap, then
``--body-kb`` KB of body, and stalls. After ``--hold`` seconds the server's peak resident
set (``VmHWM``), its resident set now, the bytes of the temporary files it holds open
(where the owner spools bodies) and the replies the sockets got are read; then every
socket closes and the resident set is read again ``--after`` seconds later.

``--src`` puts another tree's ``src`` first on the server's ``PYTHONPATH`` (the code
before a change: ``git archive COMMIT src | tar -x -C /tmp/before``).

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/hostile/bench_slow_connections.py``
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

MB = 1 << 20


def _vm(pid: int) -> tuple[float, float]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            values[line.split(":")[0]] = int(line.split()[1]) / 1024
    return values["VmRSS"], values["VmHWM"]


def _spooled_mb(pid: int, folder: Path) -> float:
    """MB in the files under ``folder`` that process ``pid`` holds open (unlinked or not)."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).startswith(str(folder)):
                total += os.stat(fd).st_size
        except OSError:
            continue
    return total / MB


def _collector(folder: Path, port: int) -> tuple[list[str], str, dict[str, str], int]:
    from ppdp.ledger import encode_public_key, generate_key
    from ppdp.local import CharacteristicVectorRandomizer

    cv = CharacteristicVectorRandomizer(regions=30, noise="discrete-normal", sigma=1.0)
    key = generate_key()
    cfg = {
        "survey": "slow",
        "randomizer": cv.to_dict(),
        "store": str(folder / "store.sqlite"),
        "clients": {"app-0": encode_public_key(key.public_key())},
    }
    path = folder / "collector.json"
    path.write_text(json.dumps(cfg))
    cmd = ["local", "serve", "--config", str(path), "--port", str(port)]
    forged = base64.b64encode(os.urandom(64)).decode()
    headers = {"X-PPDP-Client": "app-0", "X-PPDP-Signature": forged}
    return cmd, f"http://127.0.0.1:{port}/v1/info", headers, 4 * MB


def _owner(folder: Path) -> tuple[list[str], str, dict[str, str], int]:
    import numpy as np
    import pandas as pd

    from ppdp.data import Schema
    from ppdp.federated.http import Timeouts, prepare_deployment
    from ppdp.federated.http._demo import session_for

    schema = Schema.from_dict(
        {
            "columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}],
            "label": {"name": "cls", "classes": ["no", "yes"]},
        }
    )
    parts = [
        pd.DataFrame({"a": np.linspace(0, 1, 20), "cls": ["no", "yes"] * 10}) for _ in range(2)
    ]
    session = session_for(parts, schema, session_id="slow", epsilon=1.0, delta=1e-5,
                          dealer="trusted", release="direction")  # fmt: skip
    slow = Timeouts(request=5.0, retries=0, startup=600.0, phase=600.0, round=1200.0, linger=0.0)
    dep = prepare_deployment(folder / "dep", parts=parts, schema=schema, session=session,
                             timeouts=slow)  # fmt: skip
    url = dep.urls["owner-1"]
    cmd = ["federate", "owner", "--config", str(dep.configs["owner-1"])]
    forged = base64.b64encode(os.urandom(64)).decode()
    headers = {"X-PPDP-Sender": "publisher", "X-PPDP-Body-Signature": forged}
    return cmd, url + "/health", headers, 64 * MB


def _slow(port: int, path: str, headers: dict[str, str], length: int, body: bytes):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {length}"]
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.settimeout(5)
        sock.sendall(body)
    except OSError:
        pass  # the server answered and closed
    return sock


def _reply(sock: socket.socket) -> str:
    sock.setblocking(False)
    try:
        data = sock.recv(64)
    except BlockingIOError:
        return "no reply yet"
    except OSError as exc:
        return type(exc).__name__
    if not data:
        return "closed"
    return data.split(b"\r\n")[0].decode(errors="replace")[9:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("collector", "owner"), default="collector")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--body-kb", type=int, default=2048)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--src", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spool = folder / "tmp"
        spool.mkdir()
        if args.server == "collector":
            port = _free_port()
            cmd, probe, headers, length = _collector(folder, port)
            path = "/v1/batches"
        else:
            cmd, probe, headers, length = _owner(folder)
            port = int(probe.rsplit(":", 1)[1].split("/")[0])
            path = "/messages"
        env = {**os.environ, "PYTHONWARNINGS": "ignore", "TMPDIR": str(spool)}
        if args.src is not None:
            env["PYTHONPATH"] = f"{args.src}{os.pathsep}{env.get('PYTHONPATH', '')}"
        proc = subprocess.Popen([sys.executable, "-m", "ppdp", *cmd], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            _wait(probe, proc)
            idle, _ = _vm(proc.pid)
            body = b"[" + b" " * (args.body_kb * 1024 - 1)
            start = time.monotonic()
            with ThreadPoolExecutor(args.parallel) as pool:
                socks = list(
                    pool.map(
                        lambda _: _slow(port, path, headers, length, body), range(args.connections)
                    )
                )
            opened = time.monotonic() - start
            time.sleep(args.hold)
            rss, peak = _vm(proc.pid)
            spooled = _spooled_mb(proc.pid, spool)
            replies = Counter(_reply(s) for s in socks)
            for s in socks:
                s.close()
            time.sleep(args.after)
            after, _ = _vm(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    tree = args.src or "this tree"
    print(f"{args.server} ({tree}): {args.connections} connections x {args.body_kb} KB of a "
          f"{length // MB} MiB body, opened in {opened:.1f} s, held {args.hold:g} s")  # fmt: skip
    print(f"  RSS idle {idle:.0f} MB, peak {peak:.0f} MB, while held {rss:.0f} MB, "
          f"{args.after:g} s after closing {after:.0f} MB; "
          f"temporary files {spooled:.0f} MB")  # fmt: skip
    print(f"  replies: {dict(replies)}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(url, timeout=1).status_code in (200, 401):
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.1)


if __name__ == "__main__":
    main()
