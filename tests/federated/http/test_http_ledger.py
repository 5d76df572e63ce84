"""Replicas fetched over HTTP and checked by ``ppdp ledger verify``: tamper, truncate, roll back."""

from __future__ import annotations

import shutil
import sqlite3

import httpx
import pandas as pd
import pytest
from toy_roles import ServedNode, build_toy

from ppdp.cli import main as cli_main
from ppdp.data import Schema
from ppdp.exceptions import LedgerIntegrityError
from ppdp.federated.http import (
    Timeouts,
    entry_from_wire,
    load_config,
    prepare_deployment,
    sync_replica,
)
from ppdp.ledger import Ledger, Signer, checkpoint_path_for, load_private_key

SCHEMA = Schema.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}]})


@pytest.fixture
def served_ledger(tmp_path):
    """A publisher ledger (publisher and owner-1 pinned) served at GET /ledger/entries."""
    dep = prepare_deployment(
        tmp_path / "dep",
        parts=[pd.DataFrame({"a": [0.5]})] * 2,
        schema=SCHEMA,
        session={"session_id": "led-1"},
        timeouts=Timeouts(phase=60.0, round=60.0, linger=0.0),
        dealer=False,
    )
    keys = tmp_path / "dep" / "keys"
    pub = Signer("publisher", load_private_key(keys / "publisher.key"))
    own = Signer("owner-1", load_private_key(keys / "owner-1.key"))
    ledger = Ledger.create(
        tmp_path / "pub.ledger",
        signer=pub,
        dataset_id="adult-split",
        purpose="multi-party publishing",
        signers={"publisher": pub.public_key, "owner-1": own.public_key},
    )
    for i in range(5):
        ledger.append("message", {"n": i})
    config = load_config(dep.configs["publisher"])
    parts = build_toy(config)
    parts.node.ledger = ledger
    served = ServedNode(config, parts)
    yield served, ledger, own, tmp_path
    served.close()
    ledger.close()


def _fetch(url, since=0):
    data = httpx.get(f"{url}/ledger/entries", params={"since": since}, timeout=5).json()
    return data["length"], [entry_from_wire(e) for e in data["entries"]]


def _replica(served, own, path):
    length, entries = _fetch(served.url)
    rep = Ledger.create_replica(path, entries[0], signer=own)
    sync_replica(rep, entries[1:])
    assert len(rep) == length
    return rep


def _verify(path, *extra):
    return cli_main(["ledger", "verify", str(path), *extra])


def test_replica_over_http_verifies(served_ledger):
    served, ledger, own, tmp = served_ledger
    rep = _replica(served, own, tmp / "owner-1.ledger")
    assert rep.head == ledger.head
    # only the tail is sent when asked
    length, tail = _fetch(served.url, since=4)
    assert length == 6 and [e.index for e in tail] == [4, 5]
    # a second sync of the same entries changes nothing; new entries are added
    assert sync_replica(rep, tail) == 0
    ledger.append("release", {"ok": True})
    _, tail = _fetch(served.url, since=len(rep))
    assert sync_replica(rep, tail) == 1
    rep.close()
    assert _verify(tmp / "owner-1.ledger") == 0


def test_tampered_replica_entry_is_detected(served_ledger, capsys):
    served, _, own, tmp = served_ledger
    path = tmp / "owner-1.ledger"
    _replica(served, own, path).close()
    with sqlite3.connect(path) as conn:
        (body,) = conn.execute('SELECT body FROM entries WHERE "index" = 3').fetchone()
        forged = body.replace(b'"n":2', b'"n":9')
        assert forged != body
        conn.execute('UPDATE entries SET body = ? WHERE "index" = 3', (forged,))
    assert _verify(path) == 1
    assert "entry 3" in capsys.readouterr().err


@pytest.mark.parametrize("k", [1, 3])
def test_truncated_replica_is_detected(served_ledger, capsys, k):
    served, _, own, tmp = served_ledger
    path = tmp / "owner-1.ledger"
    _replica(served, own, path).close()
    with sqlite3.connect(path) as conn:
        conn.execute('DELETE FROM entries WHERE "index" >= ?', (6 - k,))
    assert _verify(path) == 1
    assert "checkpoint" in capsys.readouterr().err


def test_rolled_back_replica_is_detected(served_ledger, capsys):
    served, ledger, own, tmp = served_ledger
    path = tmp / "owner-1.ledger"
    rep = _replica(served, own, path)
    backup = tmp / "backup"
    backup.mkdir()
    rep.close()
    shutil.copy(path, backup / path.name)
    shutil.copy(checkpoint_path_for(path), backup / checkpoint_path_for(path).name)
    rep = Ledger.open(path, signer=own)
    ledger.append("release", {"ok": True})
    _, tail = _fetch(served.url, since=len(rep))
    sync_replica(rep, tail)
    rep.close()
    kept_elsewhere = tmp / "kept.checkpoint"
    shutil.copy(checkpoint_path_for(path), kept_elsewhere)
    # the ledger file alone restored from the backup: its own checkpoint catches it
    shutil.copy(backup / path.name, path)
    assert _verify(path) == 1
    # both files restored: only a checkpoint kept elsewhere catches it
    shutil.copy(backup / checkpoint_path_for(path).name, checkpoint_path_for(path))
    assert _verify(path) == 0
    assert _verify(path, "--checkpoint", str(kept_elsewhere)) == 1
    assert "checkpoint" in capsys.readouterr().err


def test_forked_publisher_ledger_is_refused_by_the_replica(served_ledger, tmp_path):
    served, ledger, own, tmp = served_ledger
    rep = _replica(served, own, tmp / "owner-1.ledger")
    # another chain from the same genesis: entry 6 differs from what the replica will hold
    ledger.append("release", {"ok": True})
    _, tail = _fetch(served.url, since=6)
    sync_replica(rep, tail)
    other = Ledger.create_replica(tmp / "fork.ledger", ledger.genesis, signer=own)
    sync_replica(other, ledger.entries(1)[:5])
    other.append("note", {"forked": True}, signer=own)
    with pytest.raises(LedgerIntegrityError, match="entry 6"):
        sync_replica(rep, other.entries(6))
    rep.close()
    other.close()
