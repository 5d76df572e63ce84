"""The Ledger API: create, append, reopen, signers, revocation, replicas, checkpoints, keys."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sqlite3
import stat

import pytest

from conftest import execute
from ppdp.exceptions import LedgerIntegrityError, ParameterError, ParameterTypeError
from ppdp.ledger import (
    Checkpoint,
    Ledger,
    LedgerExistsError,
    Signer,
    checkpoint_path_for,
    decode_public_key,
    encode_public_key,
    load_private_key,
    load_public_key,
    save_private_key,
    save_public_key,
    verify,
)
from ppdp.ledger._chain import GENESIS_PREV_HASH, entry_hash


@pytest.fixture
def custodian():
    return Signer.generate("custodian")


def test_create_append_reopen(tmp_path, custodian):
    path = tmp_path / "l.db"
    with Ledger.create(
        path, signer=custodian, dataset_id="adult", purpose="p", metadata={"k": [1, 0.5]}
    ) as led:
        e1 = led.append("note", {"x": 0.1, "t": (1, 2)})
        assert (e1.index, e1.kind, e1.signer) == (1, "note", "custodian")
        assert e1.payload == {"x": 0.1, "t": [1, 2]}  # as it reads back
        assert len(led) == 2 and led.head == e1.hash
        assert led.metadata == {"k": [1, 0.5]} and led.dataset_id == "adult"
    with Ledger.open(path) as again:
        entries = again.entries()
        assert [e.as_row() for e in entries[1:]] == [e1.as_row()]
        assert entries[0].prev_hash == GENESIS_PREV_HASH
        assert entries[1].prev_hash == entries[0].hash
        assert all(e.hash == entry_hash(e.prev_hash, e.body) for e in entries)
        with pytest.raises(ParameterError, match="signer"):
            again.append("note", {})  # opened read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        e1.index = 5  # type: ignore[misc]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    report = verify(path)
    assert (report.length, report.dataset_id, report.kinds) == (
        2,
        "adult",
        {"genesis": 1, "note": 1},
    )


def test_refuses_to_overwrite_an_existing_ledger(tmp_path, custodian):
    path = tmp_path / "l.db"
    Ledger.create(path, signer=custodian, dataset_id="a").close()
    with pytest.raises(LedgerExistsError):
        Ledger.create(path, signer=custodian, dataset_id="a")


def test_open_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        Ledger.open(tmp_path / "absent.db")
    with pytest.raises(FileNotFoundError):
        verify(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


@pytest.mark.parametrize(
    "kind, payload, error",
    [
        ("Bad Kind", {}, ParameterError),
        ("genesis", {}, ParameterError),
        (3, {}, ParameterTypeError),
        ("note", [1], ParameterTypeError),
        ("note", {"x": float("nan")}, ParameterError),
        ("note", {"$f": 1}, ParameterError),
        ("note", {"x": object()}, ParameterTypeError),
    ],
)
def test_bad_appends_record_nothing(custodian, kind, payload, error):
    led = Ledger.in_memory(signer=custodian)
    with pytest.raises(error):
        led.append(kind, payload)
    assert len(led.entries()) == 1


def test_transaction_rolls_back_on_error(tmp_path, custodian):
    led = Ledger.create(tmp_path / "l.db", signer=custodian, dataset_id="a")
    with pytest.raises(RuntimeError), led.transaction() as txn:
        txn.append("note", {"n": 1})
        txn.append("note", {"n": 2})
        assert len(txn) == 3
        raise RuntimeError("decided not to")
    assert len(led) == 1 and len(led.entries()) == 1
    with led.transaction() as txn:
        txn.append("note", {"n": 1})
    assert [e.payload for e in led.entries()[1:]] == [{"n": 1}]
    led.close()
    assert verify(tmp_path / "l.db").length == 2


def test_several_signers_and_revocation(tmp_path, custodian):
    alice, bob = Signer.generate("alice"), Signer.generate("bob")
    keys = {s.id: s.public_key for s in (custodian, alice, bob)}
    with Ledger.create(tmp_path / "l.db", signer=custodian, dataset_id="mp", signers=keys) as led:
        led.append("share", {"v": 1.0}, signer=alice)
        led.append("share", {"v": 2.0}, signer=bob)
        with pytest.raises(ParameterError, match="not an admin"):
            led.revoke("alice", signer=bob)
        led.revoke("bob", signer=bob, reason="leaving")  # anyone may revoke itself
        with pytest.raises(ParameterError, match="revoked"):
            led.append("share", {"v": 3.0}, signer=bob)
        led.revoke("alice")  # the custodian is the admin
        with pytest.raises(ParameterError, match="revoked"):
            led.append("share", {"v": 4.0}, signer=alice)
        mallory = Signer.generate("mallory")
        with pytest.raises(ParameterError, match="not pinned"):
            led.append("share", {}, signer=mallory)
        with pytest.raises(ParameterError, match="different key"):
            led.append("share", {}, signer=Signer.generate("alice"))
        # key rotation: pin a new id for bob's new key
        bob2 = Signer.generate("bob-2")
        led.add_signer("bob-2", bob2.public_key)
        led.append("share", {"v": 5.0}, signer=bob2)
        with pytest.raises(ParameterError, match="never reused"):
            led.add_signer("bob", bob2.public_key)
    report = verify(tmp_path / "l.db", trusted_keys=keys)
    assert report.revoked == ("alice", "bob")
    assert report.signers == ("alice", "bob", "bob-2", "custodian")


def test_open_with_a_bare_private_key_finds_its_signer_id(tmp_path, custodian):
    Ledger.create(tmp_path / "l.db", signer=custodian, dataset_id="a").close()
    with Ledger.open(tmp_path / "l.db", signer=custodian.private_key) as led:
        assert led.signer.id == "custodian"
        led.append("note", {})
    with pytest.raises(ParameterError, match="not pinned"):
        Ledger.open(tmp_path / "l.db", signer=Signer.generate("x").private_key)


def test_replica_copies_verified_entries(tmp_path, custodian):
    party = Signer.generate("party")
    keys = {"custodian": custodian.public_key, "party": party.public_key}
    main = Ledger.create(tmp_path / "main.db", signer=custodian, dataset_id="mp", signers=keys)
    main.append("round", {"r": 1})
    main.append("share", {"v": [0.5]}, signer=party)
    replica = Ledger.create_replica(tmp_path / "replica.db", main.genesis, signer=party)
    for entry in main.entries(1):
        replica.append_entry(entry)
    assert [e.as_row() for e in replica.entries()] == [e.as_row() for e in main.entries()]
    # a forged copy of the next entry is refused and not stored
    nxt = main.append("round", {"r": 2})
    forged = dataclasses.replace(nxt, payload={"r": 3}, body=nxt.body.replace(b'"r":2', b'"r":3'))
    with pytest.raises(LedgerIntegrityError):
        replica.append_entry(forged)
    assert len(replica.entries()) == 3
    # an Entry object whose payload disagrees with its signed body: the body wins
    lying = dataclasses.replace(nxt, payload={"r": 99})
    assert replica.append_entry(lying).payload == {"r": 2}
    assert replica.entries()[-1].payload == {"r": 2}
    replica.close()
    replica = Ledger.open(tmp_path / "replica.db", signer=party)
    main.close()
    replica.close()
    assert verify(tmp_path / "replica.db").head_hash == verify(tmp_path / "main.db").head_hash


def test_in_memory_ledger_writes_no_files(tmp_path, custodian, monkeypatch):
    monkeypatch.chdir(tmp_path)
    led = Ledger.in_memory(signer=custodian, dataset_id="x")
    led.append("note", {"a": 1})
    assert led.path is None and led.checkpoint_path is None
    assert os.listdir(tmp_path) == []
    assert led.checkpoint().length == 2


def test_checkpoints_follow_the_head_and_an_older_checkpoint_is_fine(tmp_path, custodian):
    path = tmp_path / "l.db"
    cp_path = checkpoint_path_for(path)
    led = Ledger.create(path, signer=custodian, dataset_id="a")
    assert Checkpoint.load(cp_path).length == 1
    led.append("note", {})
    old = cp_path.read_bytes()
    led.append("note", {})
    cp = Checkpoint.load(cp_path)
    assert (cp.length, cp.head_hash) == (3, led.head)
    led.close()
    # a writer killed between commit and checkpoint leaves the ledger longer: accepted,
    # and the next writer brings the checkpoint up to date
    cp_path.write_bytes(old)
    assert verify(path).length == 3
    Ledger.open(path, signer=custodian).close()
    assert Checkpoint.load(cp_path).length == 3


def test_external_checkpoint(tmp_path, custodian):
    path = tmp_path / "l.db"
    with Ledger.create(path, signer=custodian, dataset_id="a") as led:
        led.append("note", {})
        kept = led.checkpoint().save(tmp_path / "safe" / "kept.checkpoint")
        led.append("note", {})
    assert verify(path, checkpoint=kept).checkpoints[0] == (f"checkpoint {kept}", 2)
    with pytest.raises(FileNotFoundError):
        verify(path, checkpoint=tmp_path / "nope.checkpoint")


def test_genesis_only_ledger_without_checkpoint_is_refused(tmp_path, custodian):
    """The one-entry waiver is gone: the genesis checkpoint exists before the file does, so
    a one-entry ledger without one had its later entries and its checkpoint deleted."""
    path = tmp_path / "l.db"
    with Ledger.create(path, signer=custodian, dataset_id="a") as led:
        kept = led.checkpoint()
    checkpoint_path_for(path).unlink()
    for attempt in (lambda: verify(path), lambda: Ledger.open(path, signer=custodian)):
        with pytest.raises(LedgerIntegrityError, match="1 entries") as info:
            attempt()
        assert info.value.index is None
    assert not checkpoint_path_for(path).exists()  # nothing was rewritten
    assert verify(path, checkpoint=kept).length == 1  # a checkpoint kept elsewhere still works


def test_leftover_files_from_a_crash_need_no_manual_step(tmp_path, custodian):
    path = tmp_path / "l.db"
    with Ledger.create(path, signer=custodian, dataset_id="a") as led:
        led.append("note", {})
    # a stale temporary checkpoint and an unfinished creation file from a killed process
    checkpoint_path_for(path).with_name(path.name + ".checkpoint.tmp").write_bytes(b"{half")
    (tmp_path / f".{path.name}.0123.creating").write_bytes(b"")
    with Ledger.open(path, signer=custodian) as led:
        led.append("note", {})
    assert verify(path).length == 3


def test_key_files(tmp_path):
    key = Signer.generate("k").private_key
    path = save_private_key(key, tmp_path / "keys" / "k.pem")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert encode_public_key(load_private_key(path).public_key()) == encode_public_key(
        key.public_key()
    )
    with pytest.raises(ParameterError, match="already exists"):
        save_private_key(Signer.generate("k").private_key, path)
    pub = save_public_key(key.public_key(), tmp_path / "k.pub")
    assert encode_public_key(load_public_key(pub)) == encode_public_key(key.public_key())
    assert encode_public_key(
        decode_public_key(encode_public_key(key.public_key()))
    ) == encode_public_key(key.public_key())
    (tmp_path / "bad.pem").write_text("not a key")
    with pytest.raises(ParameterError):
        load_private_key(tmp_path / "bad.pem")
    with pytest.raises(ParameterError):
        Signer("bad id!", key)


def test_copy_of_a_ledger_with_its_checkpoint_verifies(tmp_path, custodian):
    path = tmp_path / "l.db"
    with Ledger.create(path, signer=custodian, dataset_id="a") as led:
        led.append("note", {})
    (tmp_path / "copy").mkdir()
    execute(path, ("VACUUM INTO ?", (str(tmp_path / "copy" / "l.db"),)))
    shutil.copyfile(checkpoint_path_for(path), tmp_path / "copy" / "l.db.checkpoint")
    assert verify(tmp_path / "copy" / "l.db").length == 2
