"""The HTTP transport with a toy protocol: delivery, rejection codes, sealing, timeouts."""

from __future__ import annotations

import math
import ssl
import threading

import httpx
import pandas as pd
import pytest
from fed_helpers import post_message
from toy_roles import ServedNode, build_toy

from ppdp.data import Schema
from ppdp.exceptions import ProtocolError
from ppdp.federated.http import (
    SEALED_CONTENT_TYPE,
    Timeouts,
    generate_box_key,
    load_config,
    open_sealed,
    prepare_deployment,
    run_party,
    seal,
)
from ppdp.federated.messages import MessageFields, encode_array, sign
from ppdp.ledger import Signer, load_private_key

SCHEMA = Schema.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}]})
FAST = Timeouts(request=2.0, retries=1, startup=10.0, phase=1.5, round=20.0, linger=0.0)


def _deploy(tmp_path, owners=2, timeouts=FAST, dealer=False):
    parts = [pd.DataFrame({"a": [0.5]}) for _ in range(owners)]
    return prepare_deployment(
        tmp_path,
        parts=parts,
        schema=SCHEMA,
        session={"session_id": "toy-1"},
        timeouts=timeouts,
        dealer=dealer,
    )


def _run_threads(dep, parties):
    results = {}

    def go(p):
        results[p] = run_party(load_config(dep.configs[p]), build=build_toy)

    threads = [threading.Thread(target=go, args=(p,)) for p in parties]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_toy_round_completes_over_http(tmp_path):
    dep = _deploy(tmp_path)
    out = _run_threads(dep, ["owner-1", "owner-2", "publisher"])
    assert {p: o.state for p, o in out.items()} == dict.fromkeys(out, "done")
    assert out["publisher"].stats["received"] == 2
    assert (tmp_path / "publisher.outcome.json").is_file()


def test_missing_owner_aborts_at_startup(tmp_path):
    dep = _deploy(tmp_path, timeouts=Timeouts(startup=0.5, phase=1.0, round=5.0, linger=0.0))
    out = _run_threads(dep, ["owner-1", "publisher"])  # owner-2 never starts
    assert out["publisher"].state == "aborted"
    assert "owner-2" in out["publisher"].reason
    assert out["owner-1"].state == "aborted"  # never pinged: phase timeout
    assert "timeout" in out["owner-1"].reason


@pytest.fixture
def owner_server(tmp_path):
    dep = _deploy(tmp_path, timeouts=Timeouts(phase=30.0, round=60.0, linger=0.0), dealer=True)
    served = ServedNode(load_config(dep.configs["owner-1"]))
    pub = Signer("publisher", load_private_key(tmp_path / "keys" / "publisher.key"))
    yield served, pub, dep
    served.close()


def _ping(signer, seq, x=(1.0, 2.0), session="toy-1", to="owner-1", raw=None):
    payload = {"x": raw if raw is not None else encode_array(list(x))}
    return sign(MessageFields(session, signer.id, to, seq, "ping", payload), signer)


def _post(url, body, ctype="application/json", *, signer, sender="publisher"):
    """POST as ``sender`` with transport headers signed by ``signer``'s key."""
    return post_message(
        url,
        body,
        key=signer.private_key,
        sender=sender,
        session="toy-1",
        recipient="owner-1",
        content_type=ctype,
    )


def test_rejections_over_http(owner_server):
    served, pub, _ = owner_server
    url = served.url
    # forged: a stranger's key in the publisher's name is refused from the headers (401),
    # before the body is decoded; the round is not touched
    forger = Signer("publisher", Signer.generate("x").private_key)
    r = _post(url, _ping(forger, 0).to_json(), signer=forger)
    assert r.status_code == 401 and "does not verify" in r.json()["reason"]
    # a forged message inside a genuine request (a peer forwarding it): the validator
    r = _post(url, _ping(forger, 0).to_json(), signer=pub)
    assert r.status_code == 422 and "invalid signature" in r.json()["reason"]
    # unknown sender: not a peer, refused from the headers
    mallory = Signer.generate("mallory")
    r = _post(url, _ping(mallory, 0).to_json(), signer=mallory, sender="mallory")
    assert r.status_code == 401 and "not a peer" in r.json()["reason"]
    # a request without transport headers at all
    r = httpx.post(f"{url}/messages", content=_ping(pub, 0).to_json(), timeout=5)
    assert r.status_code == 401 and "X-PPDP-Sender" in r.json()["reason"]
    # wrong session
    r = _post(url, _ping(pub, 0, session="other").to_json(), signer=pub)
    assert r.status_code == 422 and "session" in r.json()["reason"]
    # NaN share: the encoder refuses NaN, so write the bytes by hand
    nan = {"shape": [2], "data": encode_array([1.0, 2.0])["data"]}
    import base64
    import struct

    nan["data"] = base64.b64encode(struct.pack("<2d", math.nan, 1.0)).decode()
    r = _post(url, _ping(pub, 0, raw=nan).to_json(), signer=pub)
    assert r.status_code == 422 and "NaN" in r.json()["reason"]
    # wrong shape
    r = _post(url, _ping(pub, 0, x=(1.0, 2.0, 3.0)).to_json(), signer=pub)
    assert r.status_code == 422 and "shape" in r.json()["reason"]
    # not a message at all
    r = _post(url, b"{not json", signer=pub)
    assert r.status_code == 400
    # out of order: seq 1 before seq 0
    r = _post(url, _ping(pub, 1).to_json(), signer=pub)
    assert r.status_code == 422 and "out of order" in r.json()["reason"]
    # nothing so far reached the role
    assert served.parts.node.role.state == "waiting"
    # the real one is accepted; its replay is refused and not counted twice
    good = _ping(pub, 0).to_json()
    r = _post(url, good, signer=pub)
    assert r.status_code == 200, r.text
    r = _post(url, good, signer=pub)
    assert r.status_code == 409 and r.headers.get("x-ppdp-duplicate") == "1"
    assert served.parts.node.stats.received == 1


def test_sealed_bodies(owner_server):
    served, pub, dep = owner_server
    url = served.url
    # sealed to the wrong key: refused before decoding
    blob = seal(_ping(pub, 0).to_json().encode(), generate_box_key().public_key())
    r = _post(url, blob, SEALED_CONTENT_TYPE, signer=pub)
    assert r.status_code == 400 and "does not open" in r.json()["reason"]
    # the owner's key but a different session (associated data) is refused too
    owner_box = load_config(dep.configs["owner-1"]).box_key_file
    from ppdp.federated.http import load_box_key

    key = load_box_key(owner_box)
    blob = seal(_ping(pub, 0).to_json().encode(), key.public_key(), aad=b"other")
    assert _post(url, blob, SEALED_CONTENT_TYPE, signer=pub).status_code == 400
    # properly sealed: accepted
    aad = b"ppdp-federated|toy-1|owner-1"
    blob = seal(_ping(pub, 0).to_json().encode(), key.public_key(), aad=aad)
    assert _post(url, blob, SEALED_CONTENT_TYPE, signer=pub).status_code == 200


def test_dealer_messages_must_be_sealed(owner_server):
    served, _, dep = owner_server
    dealer = Signer("dealer", load_private_key(dep.workdir / "keys" / "dealer.key"))
    r = _post(served.url, _ping(dealer, 0).to_json(), signer=dealer, sender="dealer")
    assert r.status_code == 400 and "sealed" in r.json()["reason"]


def test_seal_roundtrip_and_tamper():
    k = generate_box_key()
    blob = seal(b"secret share", k.public_key(), aad=b"a")
    assert b"secret share" not in blob
    assert open_sealed(blob, k, aad=b"a") == b"secret share"
    bad = bytearray(blob)
    bad[-1] ^= 1
    with pytest.raises(ProtocolError):
        open_sealed(bytes(bad), k, aad=b"a")
    with pytest.raises(ProtocolError):
        open_sealed(blob[:20], k, aad=b"a")


def test_health_and_status(owner_server):
    served, _, _ = owner_server
    h = httpx.get(f"{served.url}/health").json()
    assert h == {"party": "owner-1", "role": "owner", "session": "toy-1", "state": "waiting"}
    assert "stats" in httpx.get(f"{served.url}/status").json()
    assert httpx.get(f"{served.url}/ledger/entries").status_code == 404


def test_toy_round_over_mutual_tls(tmp_path):
    parts = [pd.DataFrame({"a": [0.5]}) for _ in range(2)]
    dep = prepare_deployment(
        tmp_path,
        parts=parts,
        schema=SCHEMA,
        session={"session_id": "toy-1"},
        timeouts=FAST,
        dealer=False,
        tls=True,
    )
    assert all(u.startswith("https://") for u in dep.urls.values())
    served = ServedNode(load_config(dep.configs["owner-1"]))
    try:
        # no client certificate: the TLS handshake fails before HTTP
        with pytest.raises(httpx.TransportError):
            ctx = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.pem"))
            httpx.get(f"{served.url}/health", verify=ctx)
        # an unknown server certificate is refused by the client
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{served.url}/health")
    finally:
        served.close()
    out = _run_threads(dep, ["owner-1", "owner-2", "publisher"])
    assert {p: o.state for p, o in out.items()} == dict.fromkeys(out, "done")


def test_publisher_refuses_peers_that_answer_as_someone_else(tmp_path):
    quick = Timeouts(request=2.0, retries=1, startup=1.0, phase=1.0, round=10.0, linger=0.0)
    dep = _deploy(tmp_path, timeouts=quick)
    import yaml

    cfg = yaml.safe_load(dep.configs["publisher"].read_text())
    urls = {p["id"]: p["url"] for p in cfg["peers"]}
    for p in cfg["peers"]:  # owner-1's URL leads to owner-2 and back
        p["url"] = urls["owner-2" if p["id"] == "owner-1" else "owner-1"]
    dep.configs["publisher"].write_text(yaml.safe_dump(cfg))
    out = _run_threads(dep, ["owner-1", "owner-2", "publisher"])
    assert out["publisher"].state == "aborted"
    assert "answers as" in out["publisher"].reason
