"""Whole Mul-LDA-DP rounds over HTTP with the real roles: completion, refusals, concurrency."""

from __future__ import annotations

import base64
import math
import sqlite3
import struct

import httpx
import pytest
import yaml
from fed_helpers import FAST, Served, deploy, join, post_message, run_in_threads

from ppdp.budget import PrivacyBudget
from ppdp.cli import main as cli_main
from ppdp.federated.config import RoundConfig
from ppdp.federated.http import Timeouts, load_config
from ppdp.federated.http._parties import build_parts
from ppdp.federated.messages import Kind, MessageFields, encode_array, sign
from ppdp.federated.roles import FederatedPublisher, create_publishing_accountant
from ppdp.ledger import Ledger, Signer, load_private_key
from ppdp.random import resolve_random_state


def _kinds(path):
    with Ledger.open(path) as led:
        return [e.kind for e in led.entries()]


def _spends(path):
    with Ledger.open(path) as led:
        return [e.payload for e in led.entries() if e.kind == "spend"]


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.InsecureRandomnessWarning")
@pytest.mark.parametrize("allow", [False, True])
def test_a_seeded_owner_is_reported_over_http(tmp_path, allow):
    """The owners' seeded flag travels in their commitments (issue 29): a seeded owner-1
    makes the round seeded, or aborts it before the spend without allow_seeded."""
    dep = deploy(tmp_path, owners=2, dealer="none", timeouts=FAST)

    def build(config):
        parts = build_parts(config)
        role = parts.node.role
        if config.party == "owner-1":  # as DataOwner(random_state=5) would draw
            role._rng = resolve_random_state(5)
        if config.role == "publisher":
            role.allow_seeded = allow
        return parts

    threads, out = run_in_threads(dep, list(dep.roles), build=build)
    join(threads)
    if allow:
        assert out["publisher"].state == "done"
        (spend,) = _spends(dep.ledger)
        assert spend["seeded"] is True and spend["details"]["seeded_owners"] == ["owner-1"]
    else:
        assert out["publisher"].state == "aborted"
        assert "['owner-1'] report seeded noise" in out["publisher"].reason
        assert _spends(dep.ledger) == []


@pytest.mark.parametrize(
    ("dealer", "release", "owners"),
    [("trusted", "noisy-projections", 3), ("none", "direction", 3)],
)
def test_round_completes_over_http(tmp_path, capsys, dealer, release, owners):
    dep = deploy(tmp_path, owners=owners, dealer=dealer, release=release)
    threads, out = run_in_threads(dep, list(dep.roles))
    join(threads)
    assert {p: o.state for p, o in out.items()} == dict.fromkeys(dep.roles, "done")
    assert cli_main(["ledger", "verify", str(dep.ledger)]) == 0
    with Ledger.open(dep.ledger) as led:
        head, n = led.head, len(led)
    for p, path in dep.replicas.items():
        assert cli_main(["ledger", "verify", str(path)]) == 0
        with Ledger.open(path) as rep:
            assert (rep.head, len(rep)) == (head, n), p
    kinds = _kinds(dep.ledger)
    assert kinds.count("spend") == 1 and kinds[-1] == "release"
    assert _spends(dep.ledger)[0]["seeded"] is False  # every owner said so (issue 29)
    if dealer == "trusted":  # every dealer share travelled sealed, and was opened
        assert out["dealer"].stats["sealed_out"] == owners
        assert all(out[o].stats["sealed_in"] == 1 for o in dep.owners)
    result = (tmp_path / "result.json").read_text()
    assert '"state": "done"' in result
    # a replica from the real round with its result entry edited: caught at that index
    path = dep.replicas["owner-1"]
    i = kinds.index("fed-result")
    with sqlite3.connect(path) as conn:
        (body,) = conn.execute('SELECT body FROM entries WHERE "index" = ?', (i,)).fetchone()
        conn.execute('UPDATE entries SET body = ? WHERE "index" = ?', (body[:-2] + b"0}", i))
    capsys.readouterr()
    assert cli_main(["ledger", "verify", str(path)]) == 1
    assert f"entry {i}" in capsys.readouterr().err


# --------------------------------------------------------------------- refusals over HTTP


@pytest.fixture
def owner_and_publisher(tmp_path):
    """Owner-1 served over HTTP; the test plays the publisher with a genuine role."""
    dep = deploy(tmp_path, owners=2, timeouts=FAST)
    config = load_config(dep.configs["owner-1"])
    served = Served(config)
    keys_dir = tmp_path / "keys"
    signer = Signer("publisher", load_private_key(keys_dir / "publisher.key"))
    keys = {**config.known_keys(), "owner-1": served.node.role.signer.public_key}
    rc = RoundConfig.from_dict(dict(config.session))
    acct = create_publishing_accountant(
        None, publisher=signer, parties=keys, dataset_id="t", total=PrivacyBudget(5.0, 1e-3)
    )
    pub = FederatedPublisher(
        rc, signer=signer, keys={**keys, "publisher": signer.public_key}, accountant=acct
    )
    msgs = [m for m in pub.start() if m.recipient == "owner-1"]
    yield served, signer, msgs
    served.close()


def _post(url, message, signer):
    """POST ``message`` to owner-1 in a request authenticated by ``signer``'s key (the
    transport headers a party adds; :func:`ppdp.federated.http.transport_headers`)."""
    body = message if isinstance(message, str | bytes) else message.to_json()
    return post_message(
        url, body, key=signer.private_key, sender=signer.id, session="s-1", recipient="owner-1"
    )


def _means(signer, seq, data=None, shape=(2, 4)):
    arr = encode_array([[0.1] * shape[1]] * shape[0])
    if data is not None:
        arr["data"] = data
    payload = {"means": arr, "ledger_index": 3}
    return sign(MessageFields("s-1", signer.id, "owner-1", seq, Kind.NOISY_MEANS, payload), signer)


def test_forged_request_is_refused_from_its_headers(owner_and_publisher):
    """A stranger with the publisher's id but not its key: refused from the transport
    headers (401) before the body is decoded; the round goes on."""
    served, signer, msgs = owner_and_publisher
    forger = Signer("publisher", Signer.generate("x").private_key)
    r = _post(served.url, sign(msgs[0].fields, forger), forger)
    assert r.status_code == 401 and "does not verify" in r.json()["reason"]
    unsigned = httpx.post(f"{served.url}/messages", content=msgs[0].to_json(), timeout=10)
    assert unsigned.status_code == 401
    assert served.node.state == "waiting" and served.node.stats.received == 0
    assert _post(served.url, msgs[0], signer).status_code == 200


def test_forged_signature_is_refused_and_dropped(owner_and_publisher):
    """A forged message inside a genuine request (a peer forwarding it)."""
    served, signer, msgs = owner_and_publisher
    forger = Signer("publisher", Signer.generate("x").private_key)
    forged = sign(msgs[0].fields, forger)
    r = _post(served.url, forged, signer)
    assert r.status_code == 422 and "invalid signature" in r.json()["reason"]
    # anybody can send it: dropped and logged, the round goes on (RELIABILITY (f))
    assert served.node.state == "waiting" and served.node.abort_reason is None
    assert "invalid signature" in served.node.stats.rejections[-1]
    # the genuine message is still taken
    assert _post(served.url, msgs[0], signer).status_code == 200
    assert served.node.state == "preparing"


def test_unknown_sender_is_refused(owner_and_publisher):
    served, _, msgs = owner_and_publisher
    mallory = Signer.generate("mallory")
    fields = MessageFields("s-1", "mallory", "owner-1", 0, Kind.ROUND_START, msgs[0].payload)
    r = _post(served.url, sign(fields, mallory), mallory)
    assert r.status_code == 401 and "not a peer" in r.json()["reason"]
    assert served.node.state == "waiting"


def test_nan_share_is_refused_and_aborts(owner_and_publisher):
    served, signer, _ = owner_and_publisher
    nan = base64.b64encode(struct.pack("<8d", 0.1, math.nan, *[0.1] * 6)).decode()
    r = _post(served.url, _means(signer, 0, data=nan), signer)
    assert r.status_code == 422 and "NaN" in r.json()["reason"]
    assert served.node.state == "aborted"
    assert served.node.stats.rejections and "NaN" in served.node.stats.rejections[-1]


def test_wrong_shape_is_refused(owner_and_publisher):
    served, signer, _ = owner_and_publisher
    r = _post(served.url, _means(signer, 0, shape=(3, 4)), signer)
    assert r.status_code == 422 and "shape" in r.json()["reason"]


def test_reordered_replayed_and_foreign_session_messages(owner_and_publisher):
    served, signer, msgs = owner_and_publisher
    start, entries = msgs  # round-start (seq 0), ledger-entries (seq 1: the genesis)
    assert (start.kind, entries.kind) == (Kind.ROUND_START, Kind.LEDGER_ENTRIES)
    # another session: refused, the round goes on
    other = sign(MessageFields("s-2", "publisher", "owner-1", 0, start.kind, start.payload), signer)
    r = _post(served.url, other, signer)
    assert r.status_code == 422 and "session" in r.json()["reason"]
    assert served.node.state == "waiting"
    # seq 1 before seq 0: held, then both processed in order
    assert _post(served.url, entries, signer).status_code == 200
    assert served.node.state == "waiting"
    assert _post(served.url, start, signer).status_code == 200
    # the config is agreed; no dealer share (masks) yet, so no commitment either
    assert served.node.state == "preparing"
    assert [e.kind for e in served.node.role.replica.entries()] == ["genesis", "fed-start"]
    # replays: a byte-identical copy (idempotent redelivery), and another message
    # reusing seq 0: both refused with 409, neither counted
    r = _post(served.url, start, signer)
    assert r.status_code == 409 and r.headers["x-ppdp-duplicate"] == "1"
    payload = {"config": {**start.payload["config"], "epsilon": 9.0}}
    reuse = sign(MessageFields("s-1", "publisher", "owner-1", 0, start.kind, payload), signer)
    r = _post(served.url, reuse, signer)
    assert r.status_code == 409 and "replayed" in r.json()["reason"]
    assert "x-ppdp-duplicate" not in r.headers
    assert served.node.stats.received == 2
    assert served.node.state == "preparing"


# --------------------------------------------------------------------- concurrent writers


def _share_ledger(dep_a, dep_b, tmp_path, total):
    """Point round B's publisher at round A's publisher key and ledger (one ledger, two rounds)."""
    pa = yaml.safe_load(dep_a.configs["publisher"].read_text())
    pb_path = dep_b.configs["publisher"]
    pb = yaml.safe_load(pb_path.read_text())
    pb["key_file"] = str((dep_a.configs["publisher"].parent / pa["key_file"]).resolve())
    pb["ledger"] = str(dep_a.ledger.resolve())
    pb_path.write_text(yaml.safe_dump(pb))
    signer = Signer("publisher", load_private_key(pb["key_file"]))
    for p in dep_b.roles:
        if p == "publisher":
            continue
        cfg = yaml.safe_load(dep_b.configs[p].read_text())
        for peer in cfg["peers"]:
            if peer["id"] == "publisher":
                from ppdp.ledger import encode_public_key

                peer["public_key"] = encode_public_key(signer.public_key)
        dep_b.configs[p].write_text(yaml.safe_dump(cfg))
    parties = {}
    for dep in (dep_a, dep_b):
        for p in dep.roles:
            if p != "publisher":
                parties[p] = load_private_key(dep.workdir / "keys" / f"{p}.key").public_key()
    acct = create_publishing_accountant(
        dep_a.ledger, publisher=signer, parties=parties, dataset_id="shared", total=total
    )
    acct.close()


def test_two_rounds_write_one_ledger_concurrently(tmp_path):
    """Two publishers (one key) run rounds at once on one ledger: check-and-charge serialised."""
    # the losing publisher aborts at start, nothing spent; its owners may only learn it by
    # a phase timeout after the start-up grace: keep both short
    quick = Timeouts(request=2.0, retries=2, startup=5.0, phase=1.5, round=30.0, linger=0.0)
    a = deploy(tmp_path / "a", owners=2, dealer="none", session_id="round-a", timeouts=quick)
    b = deploy(
        tmp_path / "b",
        owners=2,
        dealer="none",
        session_id="round-b",
        timeouts=quick,
        owner_prefix="clinic",
    )
    _share_ledger(a, b, tmp_path, PrivacyBudget(1.5, 1e-3))
    ta, oa = run_in_threads(a, list(a.roles))
    tb, ob = run_in_threads(b, list(b.roles))
    join(ta)
    join(tb)
    states = sorted([oa["publisher"].state, ob["publisher"].state])
    assert states == ["aborted", "done"]  # only one round fits the budget
    loser = oa if oa["publisher"].state == "aborted" else ob
    assert "budget" in loser["publisher"].reason
    kinds = _kinds(a.ledger)
    assert kinds.count("spend") == 1 and kinds.count("release") == 1
    assert cli_main(["ledger", "verify", str(a.ledger)]) == 0
