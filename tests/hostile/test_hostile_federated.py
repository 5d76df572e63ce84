"""Hostile input against a federated party's HTTP face (issue 12, items 1 and 8): a real
owner (its role, validator and replica built from a prepared deployment) driven in process
through ASGI, with bodies produced on demand so the tests see how much the app pulled;
one test serves it with uvicorn and posts over raw sockets. The body cap is set to 1 MiB
on the node (the 100 MB loads are in ``benchmarks/bench_hostile_http.py``).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import yaml
from hostile_helpers import CHUNK, Uvicorn, asgi_request, body_chunks, raw_post

from ppdp._http_guard import ServerLimits
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.federated.http import (
    BODY_SIGNATURE_HEADER,
    SENDER_HEADER,
    Timeouts,
    create_app,
    load_config,
    prepare_deployment,
    run_party,
    transport_headers,
)
from ppdp.federated.http._demo import session_for
from ppdp.federated.http._guard import bind_is_loopback, json_too_deep
from ppdp.federated.http._parties import build_parts
from ppdp.federated.messages import MessageFields, encode_array, sign
from ppdp.ledger import Signer, load_private_key

CAP = 1 << 20
BIG = 100 * 1024 * 1024
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
        ],
        "label": {"name": "cls", "classes": ["no", "yes"]},
    }
)
SLOW = Timeouts(request=2.0, retries=0, startup=60.0, phase=60.0, round=120.0, linger=0.0)


def _parts(n_owners=2, rows=20):
    rng = np.random.default_rng(0)
    return [
        pd.DataFrame(
            {
                "a": rng.uniform(size=rows),
                "b": rng.uniform(size=rows),
                "cls": np.where(np.arange(rows) % 2 == 0, "yes", "no"),
            }
        )
        for _ in range(n_owners)
    ]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    root = tmp_path_factory.mktemp("round")
    parts = _parts()
    session = session_for(parts, SCHEMA, session_id="s-1", epsilon=1.0, delta=1e-5,
                          dealer="trusted", release="direction")  # fmt: skip
    return prepare_deployment(root, parts=parts, schema=SCHEMA, session=session, timeouts=SLOW)


@pytest.fixture
def owner(deployment):
    """Owner-1's real node and app; its replica in a fresh file per test."""
    parts = build_parts(load_config(deployment.configs["owner-1"]))
    parts.node.max_body = CAP
    yield parts.node, create_app(parts.node)
    if parts.close is not None:
        parts.close()
    for p in deployment.replicas.values():
        for f in p.parent.glob(p.name + "*"):
            f.unlink()


def _key(deployment, party):
    return Signer(party, load_private_key(deployment.workdir / "keys" / f"{party}.key"))


def _message(signer, *, seq=0, to="owner-1", session="s-1"):
    payload = {"means": encode_array([[0.1, 0.2], [0.3, 0.4]]), "ledger_index": 3}
    return sign(MessageFields(session, signer.id, to, seq, "noisy-means", payload), signer)


def _headers(body, signer, *, session="s-1", to="owner-1", sender=None):
    return transport_headers(
        body, sender=sender or signer.id, key=signer.private_key, session_id=session, recipient=to
    )


def _untouched(node):
    assert node.state == "waiting" and node.abort_reason is None and node.stats.received == 0


# ----------------------------------------------------------------- bounded body, chunked or not


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_oversize_body_gets_413_without_reading_beyond_the_cap(deployment, owner, chunked):
    node, app = owner
    pub = _key(deployment, "publisher")
    headers = _headers(b"x", pub)  # a pinned sender, a signature for another body
    if not chunked:
        headers["content-length"] = str(BIG)
    r = asgi_request(app, "POST", "/messages", headers=headers, chunks=body_chunks(BIG))
    assert r.status == 413 and "too large" in r.error
    assert r.headers.get("connection") == "close"
    if chunked:
        assert CAP - CHUNK < r.bytes_pulled <= CAP + CHUNK and not r.pulled_all
    else:
        assert r.bytes_pulled == 0
    _untouched(node)


# ----------------------------------------------------------- authenticate from headers, first


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({}, "no X-PPDP-Sender header"),
        ({SENDER_HEADER: "mallory", BODY_SIGNATURE_HEADER: "AA=="}, "not a peer"),
        ({SENDER_HEADER: "publisher"}, "no X-PPDP-Body-Signature"),
        ({SENDER_HEADER: "publisher", BODY_SIGNATURE_HEADER: "%%%"}, "base64"),
        ({SENDER_HEADER: "publisher", BODY_SIGNATURE_HEADER: "AA=="}, "64 bytes"),
    ],
    ids=["no-headers", "unknown-sender", "no-signature", "junk-signature", "short-signature"],
)
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_unsigned_big_bodies_are_refused_before_a_byte_is_read(owner, headers, fragment, chunked):
    node, app = owner
    h = dict(headers) if chunked else {**headers, "content-length": str(BIG)}
    r = asgi_request(app, "POST", "/messages", headers=h, chunks=body_chunks(BIG))
    assert r.status == 401 and fragment in r.error
    assert r.bytes_pulled == 0 and r.headers.get("connection") == "close"
    _untouched(node)


def test_a_bad_transport_signature_is_refused_before_decoding(deployment, owner, monkeypatch):
    node, app = owner
    decoded = []
    real = node._decode
    monkeypatch.setattr(node, "_decode", lambda b: decoded.append(len(b)) or real(b))
    pub, dealer = _key(deployment, "publisher"), _key(deployment, "dealer")
    body = _message(pub).to_json().encode()
    cases = [
        _headers(body, dealer, sender="publisher"),  # another party's key
        _headers(body, pub, to="owner-2"),  # meant for another owner
        _headers(body, pub, session="s-2"),  # another session
        _headers(body + b" ", pub),  # for another body
    ]
    for headers in cases:
        r = asgi_request(app, "POST", "/messages", headers=headers, chunks=body)
        assert r.status == 401 and "does not verify" in r.error
    deep = b"[" * 100_000 + b"]" * 100_000
    r = asgi_request(app, "POST", "/messages", headers=_headers(b"", pub), chunks=deep)
    assert r.status == 401
    assert decoded == []
    _untouched(node)


def test_a_message_must_come_from_the_party_that_signed_the_request(deployment, owner):
    node, app = owner
    pub, dealer = _key(deployment, "publisher"), _key(deployment, "dealer")
    body = _message(pub).to_json().encode()
    r = asgi_request(app, "POST", "/messages", headers=_headers(body, dealer), chunks=body)
    assert r.status == 400 and "signed by 'dealer'" in r.error
    _untouched(node)


# ------------------------------------------------------------------- malformed: 400, never 500


@pytest.mark.parametrize("depth", [33, 900, 100_000])
def test_deep_json_is_400(deployment, owner, depth):
    node, app = owner
    pub = _key(deployment, "publisher")
    body = b'{"payload":' + b"[" * depth + b"]" * depth + b"}"
    r = asgi_request(app, "POST", "/messages", headers=_headers(body, pub), chunks=body)
    assert r.status == 400 and "nested over 32 deep" in r.error
    _untouched(node)


@pytest.mark.parametrize(
    "body", [b"{not json", b"\xff\xfe", b"[]", b'{"seq":' + b"9" * 5000 + b"}"]
)
def test_malformed_authenticated_bodies_are_400(deployment, owner, body):
    node, app = owner
    pub = _key(deployment, "publisher")
    r = asgi_request(app, "POST", "/messages", headers=_headers(body, pub), chunks=body)
    assert r.status == 400 and len(r.body) < 400
    _untouched(node)


def test_a_real_message_still_goes_through(deployment, owner):
    """The positive control: genuine transport headers, a genuine (early) message."""
    node, app = owner
    pub = _key(deployment, "publisher")
    body = _message(pub, seq=5).to_json().encode()
    r = asgi_request(app, "POST", "/messages", headers=_headers(body, pub), chunks=body)
    assert r.status == 200, r.body
    assert node.state == "waiting" and node.abort_reason is None


# ------------------------------------------------------------------- nothing echoed unbounded


def test_a_long_sender_is_not_echoed(owner):
    node, app = owner
    headers = {SENDER_HEADER: "x" * 100_000, BODY_SIGNATURE_HEADER: "AA=="}
    r = asgi_request(app, "POST", "/messages", headers=headers)
    assert r.status == 401 and "x" * 50 not in r.error and len(r.body) < 300
    r = asgi_request(app, "GET", "/ledger/entries", query=b"since=" + b"z" * 5000)
    assert r.status in (400, 404) and b"z" * 50 not in r.body
    assert all(len(x) < 300 for x in node.stats.rejections)


def test_rejections_kept_for_status_are_bounded(owner):
    node, app = owner
    for _ in range(300):
        asgi_request(app, "POST", "/messages", headers={})
    assert node.stats.rejected == 300 and len(node.stats.rejections) <= 100


# ----------------------------------------------------------------- the real server, raw sockets


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_real_server_stops_an_oversize_or_unsigned_body_early(deployment, owner, chunked):
    node, app = owner
    pub = _key(deployment, "publisher")
    total = 40 * CAP
    with Uvicorn(app) as server:
        got = raw_post(server.port, "/messages", _headers(b"x", pub), total, chunked=chunked)
        assert got.status in (413, None) and got.sent < total // 2, got.text[:200]
        got = raw_post(server.port, "/messages", {}, total, chunked=chunked)
        assert got.status in (401, None) and got.sent < total // 2
    _untouched(node)


def test_slow_senders_get_408_and_the_gate_bounds_the_spool(deployment, owner):
    """Issue 29: before, every unfinished body was spooled with no deadline and no limit
    (40 connections, 2.5 GB in /tmp). Now at most ``bodies`` are read at once, each within
    ``body_seconds``; one more gets 503 before a byte is read."""
    import socket

    node, _ = owner
    limits = ServerLimits(body_seconds=1.0, header_seconds=1.0, bodies=2, connections=16)
    app = create_app(node, limits=limits)
    pub = _key(deployment, "publisher")
    headers = {**_headers(b"x", pub), "Content-Length": str(CAP)}
    head = "POST /messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"

    def stall(port):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(head.encode() + b"{")
        return sock

    def status(sock):
        start = time.monotonic()
        data = sock.recv(64)
        return int(data.split(b" ")[1]) if data else None, time.monotonic() - start

    with Uvicorn(app, **limits.uvicorn_options()) as server:
        held = [stall(server.port) for _ in range(2)]
        time.sleep(0.2)
        extra = stall(server.port)
        code, waited = status(extra)
        assert code == 503 and waited < 0.8
        assert [status(s)[0] for s in held] == [408, 408]
        for s in [*held, extra]:
            s.close()
    _untouched(node)


def test_party_limits_follow_the_peers(owner):
    node, app = owner
    limits = app.state.limits
    assert limits.bodies == max(4, 2 * len(node.peers)) and limits.body_seconds == 60.0
    assert limits.keep_alive_seconds == 30.0


# ----------------------------------------------------------------- plain HTTP beyond loopback


def test_non_loopback_plain_http_is_refused_without_the_flag(
    deployment, tmp_path, capsys, monkeypatch
):
    from ppdp.cli import main

    raw = yaml.safe_load(deployment.configs["owner-2"].read_text())
    raw["listen"]["host"] = "0.0.0.0"
    path = deployment.configs["owner-2"].parent / "owner-2-open.yaml"
    path.write_text(yaml.safe_dump(raw))
    config = load_config(path)
    built = []
    with pytest.raises(ParameterError, match="--insecure-plain-http"):
        run_party(config, build=lambda c: built.append(c))
    assert built == []  # refused before anything is built or bound
    assert main(["federate", "owner", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--insecure-plain-http" in err
    # with the flag: a warning on stderr at start-up, then the party runs
    import ppdp.federated.http as fh

    class Done:
        ok, state, reason, extra = True, "done", None, {}

        def to_dict(self):
            return {}

    monkeypatch.setattr(fh, "run_party", lambda c, **kw: Done())
    assert main(["federate", "owner", "--config", str(path), "--insecure-plain-http"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "plain HTTP on 0.0.0.0" in err
    assert not bind_is_loopback("0.0.0.0") and bind_is_loopback("127.0.0.1")


def test_depth_guard_agrees_with_the_parser():
    import json

    for text in ['{"a":"[[[["}', '{"a":"\\\\\\"[["}', "[[[]]]", '{"x":[{"y":[1]}]}']:
        obj = json.loads(text)

        def depth(o):
            if isinstance(o, dict | list):
                inner = o.values() if isinstance(o, dict) else o
                return 1 + max((depth(v) for v in inner), default=0)
            return 0

        d = depth(obj)
        assert json_too_deep(text.encode(), d) is False
        assert json_too_deep(text.encode(), d - 1) is True
