"""Hostile input against the local collector (issue 12, items 1 and 8): each test sends
what the reliability test sent and checks the hardened answer.

The app is driven in process through ASGI with a body that is produced on demand, so the
tests see exactly how many bytes the app pulled; one test runs the real uvicorn server
on loopback with raw sockets. The collector is configured with a 1 MiB body cap (the
100 MB loads are in ``benchmarks/bench_hostile_http.py``).
"""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest
from hostile_helpers import CHUNK, Uvicorn, asgi_request, body_chunks, free_port, raw_post

from ppdp.exceptions import ParameterError
from ppdp.ledger import encode_public_key, generate_key, save_private_key
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorClient, CollectorConfig, generate_operator_token
from ppdp.local.collector._app import create_app
from ppdp.local.collector._guard import bind_is_loopback, check_plain_http_bind
from ppdp.local.collector._wire import (
    CLIENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    encode_batch,
    read_headers,
    sign_body,
    sign_read,
)

CAP = 1 << 20
CV = CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", gamma=0.5, sigma=1.0)
ADD = AdditiveRandomizer(noise="gaussian", scale=0.5, domain=(0.0, 1.0))
BIG = 100 * 1024 * 1024  # what an attacker announces or streams; never produced in full


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    out = {}
    for cid in ("app-1", "app-2"):
        key = generate_key()
        save_private_key(key, folder / f"{cid}.key")
        out[cid] = (key, folder / f"{cid}.key")
    return out


def _config(tmp_path, keys, randomizer=CV, *, survey="hostile", **extra):
    token, digest = generate_operator_token()
    data = {
        "survey": survey,
        "randomizer": randomizer.to_dict(),
        "store": str(tmp_path / "store.sqlite"),
        "clients": {c: encode_public_key(k.public_key()) for c, (k, _) in keys.items()},
        "client": {"id": "app-1", "key": str(keys["app-1"][1])},
        "max_body_bytes": CAP,
        "operator_token_sha256": digest,
        **extra,
    }
    path = tmp_path / "collector.json"
    path.write_text(json.dumps(data))
    return CollectorConfig.from_file(path), token


@pytest.fixture
def app(tmp_path, keys):
    config, token = _config(tmp_path, keys)
    application = create_app(config)
    application.state.token = token
    yield application
    application.state.collector.close()


def _signed(keys, body, client="app-1", signer=None):
    key = keys[signer or client][0]
    return {CLIENT_HEADER: client, SIGNATURE_HEADER: sign_body(body, key)}


def _post(app, keys, body, **kw):
    return asgi_request(app, "POST", "/v1/batches", headers=_signed(keys, body, **kw), chunks=body)


def _count(app):
    return app.state.collector.store.snapshot().count


# ----------------------------------------------------------------- bounded body, chunked or not


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_oversize_body_gets_413_without_reading_beyond_the_cap(app, keys, chunked):
    headers = {CLIENT_HEADER: "app-1", SIGNATURE_HEADER: sign_body(b"x", keys["app-1"][0])}
    if not chunked:
        headers["content-length"] = str(BIG)
    r = asgi_request(app, "POST", "/v1/batches", headers=headers, chunks=body_chunks(BIG))
    assert r.status == 413 and "exceeds 1048576 bytes" in r.error
    assert r.headers.get("connection") == "close"  # the rest of the body is not wanted
    if chunked:  # read up to the cap, then stop: never more than the cap held
        assert CAP - CHUNK < r.bytes_pulled <= CAP + CHUNK and not r.pulled_all
    else:  # the declared length alone decides: not a byte read
        assert r.bytes_pulled == 0
    assert _count(app) == 0


def test_a_body_at_the_cap_is_read_whole_and_one_byte_more_is_not(app, keys):
    reports = CV.randomise([0, 1, 2], random_state=1).tolist()
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=reports)
    padded = body[:-1] + b" " * (CAP - len(body)) + b"}"  # valid JSON of exactly CAP bytes
    assert len(padded) == CAP
    assert _post(app, keys, padded).status == 200
    over = body[:-1] + b" " * (CAP + 1 - len(body)) + b"}"
    r = _post(app, keys, over)
    assert r.status == 413 and r.bytes_pulled <= CAP + CHUNK


def test_malformed_content_length_is_400(app, keys):
    headers = {**_signed(keys, b"{}"), "content-length": "12abc"}
    r = asgi_request(app, "POST", "/v1/batches", headers=headers, chunks=b"{}")
    assert r.status == 400 and "Content-Length" in r.error and r.bytes_pulled == 0


# ----------------------------------------------------------- authenticate from headers, first


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({}, "no X-PPDP-Client header"),
        ({CLIENT_HEADER: "mallory", SIGNATURE_HEADER: "AA=="}, "64 bytes"),
        ({CLIENT_HEADER: "app-1"}, "no X-PPDP-Signature"),
        ({CLIENT_HEADER: "app-1", SIGNATURE_HEADER: "not base64!"}, "base64"),
        ({CLIENT_HEADER: "app-1", SIGNATURE_HEADER: "AA=="}, "64 bytes"),
    ],
    ids=["no-headers", "unknown-client", "no-signature", "junk-signature", "short-signature"],
)
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_unsigned_big_bodies_are_refused_before_a_byte_is_read(app, headers, fragment, chunked):
    h = dict(headers) if chunked else {**headers, "content-length": str(BIG)}
    r = asgi_request(app, "POST", "/v1/batches", headers=h, chunks=body_chunks(BIG))
    assert r.status == 401 and fragment in r.error
    assert r.bytes_pulled == 0 and r.headers.get("connection") == "close"


def test_a_bad_signature_is_refused_before_the_json_is_parsed(app, keys, monkeypatch):
    """A registered id with a forged signature: the body (up to the cap) is read and the
    signature checked over the raw bytes; the JSON parser never runs."""
    import ppdp.local.collector._app as app_module

    parsed = []
    real = app_module.parse_body
    monkeypatch.setattr(app_module, "parse_body", lambda b: parsed.append(len(b)) or real(b))
    reports = [[0, 1, 0, 0, 0]] * 2000
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=reports)
    r = _post(app, keys, body, signer="app-2")  # app-1's id, app-2's key
    assert r.status == 401 and "does not verify" in r.error
    deep = b"[" * 100_000 + b"]" * 100_000
    r = _post(app, keys, deep, signer="app-2")
    assert r.status == 401
    assert parsed == [] and _count(app) == 0
    assert _post(app, keys, body).status == 200 and parsed == [len(body)]


def test_an_old_client_without_the_id_header_is_told_why(app, keys):
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=[[0, 1, 0, 0, 0]])
    headers = {SIGNATURE_HEADER: sign_body(body, keys["app-1"][0])}  # the first wire version
    r = asgi_request(app, "POST", "/v1/batches", headers=headers, chunks=body)
    assert r.status == 401 and "X-PPDP-Client" in r.error and "too old" in r.error


# ------------------------------------------------------------------- malformed: 400, never 500


@pytest.mark.parametrize("depth", [9, 500, 100_000])
def test_deep_json_is_400(app, keys, depth):
    body = b'{"v":1,"survey":"hostile","client":"app-1","seq":1,"reports":'
    body += b"[" * depth + b"]" * depth + b"}"
    r = _post(app, keys, body)
    assert r.status == 400 and "deeper than 8 levels" in r.error
    assert _count(app) == 0


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{oops", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"v":1,"survey":"hostile","client":"app-1","seq":1,"reports":[NaN]}', "not valid"),
        (b'{"v":true,"survey":"hostile","client":"app-1","seq":1,"reports":[[0]]}', "v (True)"),
        (b'{"v":1,"survey":"hostile","client":"app-2","seq":1,"reports":[[0]]}', "differs"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_signed_bodies_are_400(app, keys, body, fragment):
    r = _post(app, keys, body)
    assert r.status == 400 and fragment in r.error


@pytest.mark.parametrize(
    "reports", [[[True, 0, 0, 0, 0]], [[0, 0, 0, 0, 0], [1, 0, False, 0, 0]]], ids=["true", "false"]
)
def test_booleans_are_not_reports(app, keys, reports):
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=reports)
    r = _post(app, keys, body)
    assert r.status == 400 and "true/false are not reports" in r.error
    assert _count(app) == 0


def test_booleans_are_not_additive_reports_and_true_in_a_name_is_fine(tmp_path, keys):
    config, _ = _config(tmp_path, keys, ADD, survey="true-or-false")
    app = create_app(config)
    try:
        for seq, reports, status in ((1, [0.5, True], 400), (1, [False], 400), (1, [0.5, 1], 200)):
            body = encode_batch(survey="true-or-false", client="app-1", seq=seq, reports=reports)
            assert _post(app, keys, body).status == status
        assert _count(app) == 2
    finally:
        app.state.collector.close()


# ------------------------------------------------------------------- nothing echoed unbounded


def test_a_long_client_id_is_not_echoed(app, keys):
    long_id = "x" * 100_000
    r = asgi_request(
        app, "POST", "/v1/batches", headers={CLIENT_HEADER: long_id, SIGNATURE_HEADER: "AA=="}
    )
    assert r.status == 401 and "x" * 50 not in r.error and "100000 characters" in r.error
    assert len(r.body) < 300
    # in a signed body, and as the survey: cut as well
    body = encode_batch(survey="hostile", client=long_id, seq=1, reports=[[0, 0, 0, 0, 0]])
    r = _post(app, keys, body)
    assert r.status == 400 and len(r.body) < 300
    body = encode_batch(survey="s" * 100_000, client="app-1", seq=1, reports=[[0, 0, 0, 0, 0]])
    r = _post(app, keys, body)
    assert r.status == 409 and len(r.body) < 300 and "s" * 50 not in r.error
    for field in ({"seq": 10**4000}, {"v": "v" * 10**5}, {"z" * 10**5: 1}):
        obj = {"v": 1, "survey": "hostile", "client": "app-1", "seq": 1, "reports": [[0] * 5]}
        obj.update(field)
        r = _post(app, keys, json.dumps(obj).encode())
        assert r.status == 400 and len(r.body) < 400, r.body[:400]
    huge = b'{"v":1,"survey":"hostile","client":"app-1","seq":' + b"9" * 5000 + b',"reports":[]}'
    r = _post(app, keys, huge)  # beyond Python's int-parsing limit: malformed, not a 500
    assert r.status == 400 and len(r.body) < 300


# ----------------------------------------------------------------- reads need authentication


def test_participation_endpoints_need_a_signed_read_or_the_operator_token(app, keys):
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=[[0, 1, 0, 0, 0]])
    assert _post(app, keys, body).status == 200
    key1, key2 = keys["app-1"][0], keys["app-2"][0]

    def get(path, headers=None):
        return asgi_request(app, "GET", path, headers=headers or {})

    # anybody: refused, and the id in the path is not echoed
    for path in ("/v1/totals", "/v1/clients/app-1", "/v1/clients/" + "y" * 5000):
        r = get(path)
        assert r.status == 401 and "signed read" in r.error and "y" * 20 not in r.error
    # the info a client needs to perturb stays public (it says nothing about who took part)
    assert get("/v1/info").status == 200
    # the operator token reads everything; a wrong one nothing
    assert get("/v1/totals", {"authorization": f"Bearer {app.state.token}"}).json()["count"] == 1
    r = get("/v1/clients/app-1", {"authorization": f"Bearer {app.state.token}"})
    assert r.json() == {"client": "app-1", "last_seq": 1}
    assert get("/v1/totals", {"authorization": "Bearer guess"}).status == 401
    assert get("/v1/totals", {"authorization": "Basic abc"}).status == 401
    # a client's signed read: its own state, and the totals
    assert get("/v1/totals", read_headers("app-2", key2, "/v1/totals")).status == 200
    own = "/v1/clients/app-1"
    assert get(own, read_headers("app-1", key1, own)).json()["last_seq"] == 1
    r = get(own, read_headers("app-2", key2, own))  # another client's state: no
    assert r.status == 401 and "only its own" in r.error
    # a signature for another path, a stale timestamp, a forged key: no
    assert get(own, read_headers("app-1", key1, "/v1/totals")).status == 401
    old = int(time.time()) - 3600
    stale = {
        CLIENT_HEADER: "app-1",
        TIMESTAMP_HEADER: str(old),
        SIGNATURE_HEADER: sign_read(key1, own, old),
    }
    r = get(own, stale)
    assert r.status == 401 and "clock" in r.error
    assert get(own, read_headers("app-1", key2, own)).status == 401
    # a batch signature is not a read signature (domain separation)
    ts = str(int(time.time()))
    batch_sig = sign_body(f"GET {own}\n{ts}".encode(), key1)
    h = {CLIENT_HEADER: "app-1", TIMESTAMP_HEADER: ts, SIGNATURE_HEADER: batch_sig}
    assert get(own, h).status == 401


def test_the_clients_sign_their_reads_and_split_batches_over_the_cap(tmp_path, keys):
    import warnings

    from ppdp.local.collector import fetch_totals

    with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from fastapi.testclient import TestClient

    config, token = _config(tmp_path, keys, max_body_bytes=4096)
    with TestClient(create_app(config)) as http:
        with CollectorClient(config, "http://testserver", http=http) as client:
            assert client.max_body == 4096
            reports = CV.randomise(np.arange(1000) % 5, random_state=2)
            assert client.send(reports, batch_size=1000) == 1000  # ~12 KB: split to fit
            assert client._seq > 1
        _, totals = fetch_totals(config, "http://testserver", transport=http._transport)
        assert totals.count == 1000
        bare = CollectorConfig.from_dict({**_as_dict(config), "client": None})
        with pytest.raises(ParameterError, match="operator token"):
            fetch_totals(bare, "http://testserver", transport=http._transport)
        _, totals = fetch_totals(bare, "http://testserver", transport=http._transport, token=token)
        assert totals.count == 1000


def _as_dict(config):
    return {
        "survey": config.survey,
        "randomizer": config.randomizer,
        "store": str(config.store),
        "clients": config.clients,
        "max_body_bytes": config.max_body_bytes,
        "operator_token_sha256": config.operator_token_sha256,
    }


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"max_body_bytes": 10}, "max_body_bytes (10)"),
        ({"max_body_bytes": True}, "max_body_bytes (True)"),
        ({"operator_token_sha256": "abc"}, "operator_token_sha256"),
    ],
)
def test_config_limits_are_checked(tmp_path, keys, change, fragment):
    with pytest.raises(ParameterError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        _config(tmp_path, keys, **change)


# ----------------------------------------------------------------- the real server, raw sockets


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_real_server_closes_the_connection_on_an_oversize_body(tmp_path, keys, chunked):
    config, _ = _config(tmp_path, keys)
    app = create_app(config)
    total = 40 * CAP
    with Uvicorn(app) as server:
        headers = {CLIENT_HEADER: "app-1", SIGNATURE_HEADER: sign_body(b"x", keys["app-1"][0])}
        got = raw_post(server.port, "/v1/batches", headers, total, chunked=chunked)
        assert got.status in (413, None), got.text[:200]  # None: reset before we read it
        assert got.sent < total // 2  # the server stopped us early
        unsigned = raw_post(server.port, "/v1/batches", {}, total, chunked=chunked)
        assert unsigned.status in (401, None) and unsigned.sent < total // 2
        # and a genuine client still gets through
        with CollectorClient(config, server.url) as client:
            assert client.send(CV.randomise([0, 1, 2], random_state=3)) == 3
    app.state.collector.close()


# ----------------------------------------------------------------- plain HTTP beyond loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("collector.example", False)],
)  # fmt: skip
def test_loopback_is_recognised(host, loopback):
    assert bind_is_loopback(host) is loopback


def test_non_loopback_plain_http_is_refused_without_the_flag(tmp_path, keys, capsys):
    from ppdp.cli import main
    from ppdp.local.collector import serve

    config, _ = _config(tmp_path, keys)
    with pytest.raises(ParameterError, match="--insecure-plain-http"):
        serve(config=config, host="0.0.0.0", port=free_port())
    assert check_plain_http_bind("0.0.0.0", tls=True, insecure_plain_http=False) is None
    assert "unencrypted" in check_plain_http_bind("0.0.0.0", tls=False, insecure_plain_http=True)
    path = str(tmp_path / "collector.json")
    assert main(["local", "serve", "--config", path, "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--insecure-plain-http" in err
    assert main(["local", "serve", "--config", path, "--tls-cert", path]) == 2
    assert "together" in capsys.readouterr().err


def test_non_loopback_plain_http_with_the_flag_warns_at_start_up(
    tmp_path, keys, monkeypatch, caplog
):
    import uvicorn

    from ppdp.local.collector import serve

    config, _ = _config(tmp_path, keys)
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.update(kw))
    with caplog.at_level(logging.WARNING, logger="ppdp.local.collector"):
        port = free_port("0.0.0.0")  # serve checks that nothing listens there
    serve(config=config, host="0.0.0.0", port=port, insecure_plain_http=True)
    assert started["host"] == "0.0.0.0" and "ssl_certfile" not in started
    assert any("plain HTTP on 0.0.0.0" in r.getMessage() for r in caplog.records)
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("-"), key.write_text("-")
    caplog.clear()
    serve(config=config, host="0.0.0.0", port=port, tls_cert=cert, tls_key=key)
    assert started["ssl_certfile"] == str(cert) and not caplog.records
    # the server's limits reach uvicorn
    assert started["limit_concurrency"] == 256 and started["timeout_keep_alive"] == 5.0
    assert started["http"].__name__ == "GuardedH11Protocol"


def test_serve_logs_nothing_on_loopback(caplog):
    with caplog.at_level(logging.WARNING):
        assert check_plain_http_bind("127.0.0.1", tls=False, insecure_plain_http=False) is None
    assert not caplog.records


def test_the_default_body_cap_follows_the_design_and_stays_small():
    from ppdp.local.collector._aggregate import Aggregator
    from ppdp.local.collector._app import DEFAULT_MAX_BODY_CEILING, default_max_body

    assert default_max_body(Aggregator.create(ADD), 20_000) == 20_000 * 26 + 4096
    assert default_max_body(Aggregator.create(CV), 500) == 500 * (21 * 5 + 3) + 4096
    cv30 = CharacteristicVectorRandomizer(regions=30, noise="discrete-normal", sigma=1.0)
    assert default_max_body(Aggregator.create(cv30), 20_000) == DEFAULT_MAX_BODY_CEILING
    # a full batch of typical k = 30 reports fits the ceiling
    reports = cv30.randomise(np.arange(20_000) % 30, random_state=4)
    body = encode_batch(survey="hostile", client="app-1", seq=1, reports=reports)
    assert len(body) < DEFAULT_MAX_BODY_CEILING
