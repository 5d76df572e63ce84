"""What slow and unregistered clients can make the collector hold (issue 29).

Before the fix a body was read with no deadline and no limit on how many at once (1,000
slow connections held 2.2 GB), a connection that never finished its headers was held for
ever, the 401 said whether a client id was registered, and a full disk gave plain-text
500s with a traceback each. Each test below failed on that code: the stalled body was never
answered, the sixth body was read like the first five, the 401s differed, the server's
memory grew by the bodies' full size, the full disk was a 500.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile_helpers import Uvicorn, asgi_request, free_port

from ppdp._http_guard import ServerLimits
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorConfig
from ppdp.local.collector._app import create_app
from ppdp.local.collector._wire import (
    CLIENT_HEADER,
    SIGNATURE_HEADER,
    encode_batch,
    read_headers,
    sign_body,
)

CV = CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", gamma=0.5, sigma=1.0)
LIMITS = ServerLimits(
    body_seconds=1.0, header_seconds=1.0, bodies=4, connections=64, keep_alive_seconds=1.0
)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    out = {}
    for cid in ("app-1", "app-2"):
        key = generate_key()
        save_private_key(key, folder / f"{cid}.key")
        out[cid] = key
    return out


def _config_file(tmp_path, keys, **extra) -> Path:
    data = {
        "survey": "limits",
        "randomizer": CV.to_dict(),
        "store": str(tmp_path / "store.sqlite"),
        "clients": {c: encode_public_key(k.public_key()) for c, k in keys.items()},
        **extra,
    }
    path = tmp_path / "collector.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def app(tmp_path, keys):
    application = create_app(CollectorConfig.from_file(_config_file(tmp_path, keys)), limits=LIMITS)
    yield application
    application.state.collector.close()


def _batch(seq=1, client="app-1"):
    return encode_batch(survey="limits", client=client, seq=seq, reports=[[0, 1, 0, 0, 0]])


def _post(app, body, client, key):
    headers = {CLIENT_HEADER: client, SIGNATURE_HEADER: sign_body(body, key)}
    return asgi_request(app, "POST", "/v1/batches", headers=headers, chunks=body)


# ------------------------------------------------------------------ the same 401 for everyone


def test_an_unknown_id_and_a_bad_signature_get_the_same_401(app, keys):
    mallory = generate_key()
    body = _batch()
    forged = _post(app, body, "app-1", keys["app-2"])  # registered id, another's key
    unknown = _post(app, body, "mallory", mallory)  # an id nobody registered
    assert forged.status == unknown.status == 401
    assert forged.body == unknown.body and forged.headers == unknown.headers
    assert forged.bytes_pulled == unknown.bytes_pulled == len(body)  # the same work
    assert b"mallory" not in unknown.body and b"registered" not in unknown.body
    assert _post(app, body, "app-1", keys["app-1"]).status == 200


def test_signed_reads_of_an_unknown_id_and_a_forged_one_get_the_same_401(app, keys):
    mallory = generate_key()
    replies = [
        asgi_request(app, "GET", "/v1/totals", headers=read_headers(cid, key, "/v1/totals"))
        for cid, key in (("app-1", keys["app-2"]), ("mallory", mallory))
    ]
    assert replies[0].status == replies[1].status == 401
    assert replies[0].body == replies[1].body


# ------------------------------------------------------------------ a full disk


@pytest.mark.parametrize(
    ("error", "status", "fragment"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), 507, "its disk is full"),
        (sqlite3.OperationalError("database or disk is full"), 507, "its disk is full"),
        (OSError(errno.EIO, "Input/output error"), 503, "its store failed"),
    ],
    ids=["ENOSPC", "SQLITE_FULL", "EIO"],
)
def test_a_store_that_cannot_write_gives_a_json_error_and_one_log_line(
    app, keys, monkeypatch, caplog, error, status, fragment
):
    store = app.state.collector.store

    def fail(**_kw):
        raise error

    monkeypatch.setattr(store, "add_batch", fail)
    with caplog.at_level(logging.INFO, logger="ppdp.local.collector"):
        replies = [_post(app, _batch(seq), "app-1", keys["app-1"]) for seq in (1, 2, 3)]
    for r in replies:
        assert r.status == status and r.headers["content-type"] == "application/json"
        assert fragment in r.error and "nothing was added" in r.error
    errors = [rec for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert len(errors) == 1 and errors[0].exc_info is None and fragment in errors[0].getMessage()
    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ppdp.local.collector"):
        assert _post(app, _batch(1), "app-1", keys["app-1"]).status == 200
    assert [r.getMessage() for r in caplog.records] == ["the collector stores batches again"]
    assert store.snapshot().count == 1


# ------------------------------------------------------------------ slow clients, real server


def _open(port: int, head: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(head)
    return sock


def _post_head(client: str, length: int, extra: bytes = b"") -> bytes:
    sig = sign_body(b"x", generate_key())
    return (
        f"POST /v1/batches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{CLIENT_HEADER}: {client}\r\n{SIGNATURE_HEADER}: {sig}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode() + extra


def _answer(sock: socket.socket, timeout: float) -> tuple[int | None, float]:
    """(the reply's status or None when the server just closed, seconds waited)."""
    start = time.monotonic()
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            piece = sock.recv(4096)
            if not piece:
                break
            data += piece
    except TimeoutError:
        return -1, time.monotonic() - start
    except OSError:
        pass
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
    return status, time.monotonic() - start


def test_a_trickled_body_gets_408_at_the_whole_body_deadline(app):
    with Uvicorn(app, **LIMITS.uvicorn_options()) as server:
        sock = _open(server.port, _post_head("app-1", 1000, b"["))
        start = time.monotonic()
        status = None
        while time.monotonic() - start < 6:  # one byte every 0.2 s: never idle for long
            try:
                sock.sendall(b" ")
            except OSError:
                break
            status, _ = _answer(sock, 0.2)
            if status != -1:
                break
        elapsed = time.monotonic() - start
        sock.close()
    assert status == 408 and 0.9 < elapsed < 3.0


def test_unfinished_headers_are_closed_at_the_header_deadline(app):
    with Uvicorn(app, **LIMITS.uvicorn_options()) as server:
        sock = _open(server.port, b"POST /v1/batches HTTP/1.1\r\nHost: 127.")
        status, waited = _answer(sock, 6)
        sock.close()
    assert status is None and 0.9 < waited < 3.0  # closed, not answered and not held


def test_bodies_beyond_the_gate_get_503_at_once_and_the_gate_reopens(app, keys):
    with Uvicorn(app, **LIMITS.uvicorn_options()) as server:
        stalled = [_open(server.port, _post_head("app-1", 1000, b"[")) for _ in range(4)]
        time.sleep(0.2)
        extra = _open(server.port, _post_head("app-2", 1000, b"["))
        status, waited = _answer(extra, 5)
        assert status == 503 and waited < 0.8
        assert [_answer(s, 5)[0] for s in stalled] == [408] * 4
        for s in [*stalled, extra]:
            s.close()
        import httpx

        body = _batch()
        headers = {CLIENT_HEADER: "app-1", SIGNATURE_HEADER: sign_body(body, keys["app-1"])}
        assert httpx.post(server.url + "/v1/batches", content=body, headers=headers).is_success


def _vm(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    raise AssertionError(field)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_two_hundred_slow_connections_hold_bounded_memory(tmp_path, keys):
    """200 connections, each a registered id, a 2 MiB ``Content-Length`` and 1 MiB of body,
    then silence: the real ``ppdp local serve`` (default limits: 16 bodies at once) grows by
    at most 16 MiB of bodies and overhead, where the code before the fix held all 200 MiB."""
    config = _config_file(tmp_path, keys, max_body_bytes=2 << 20)
    port = free_port()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    cmd = [sys.executable, "-m", "ppdp", "local", "serve", "--config", str(config)]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)], env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/info", timeout=1).is_success:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        idle = _vm(proc.pid, "VmRSS:")
        chunk = b"[" + b" " * ((1 << 20) - 1)

        def slow() -> socket.socket:
            sock = _open(port, _post_head("app-1", 2 << 20))
            sock.settimeout(2)
            with contextlib.suppress(OSError):  # refused (503) and closed: not wanted
                sock.sendall(chunk)
            return sock

        with ThreadPoolExecutor(16) as pool:
            socks = list(pool.map(lambda _: slow(), range(200)))
        time.sleep(1.0)
        peak = _vm(proc.pid, "VmHWM:")
        for s in socks:
            s.close()
    finally:
        proc.terminate()
        proc.wait(20)
    assert peak - idle < 60, (idle, peak)
