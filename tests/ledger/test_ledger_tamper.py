"""Tampering is detected at the right index: byte flips, truncation, rollback, forks.

RELIABILITY.md (d): tampered entry, tail truncated, rolled back to an old backup, forked or
foreign ledger, key revoked. All deterministic (the flip masks come from the seed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import build_small_ledger, execute, vacuum_copy
from ppdp.exceptions import LedgerIntegrityError
from ppdp.ledger import (
    Ledger,
    Signer,
    canonical_dumps,
    checkpoint_path_for,
    verify,
    verify_entries,
)
from ppdp.ledger._chain import ENTRY_DOMAIN, entry_hash


def _record_span(data: bytes, entry) -> tuple[int, int]:
    """Byte range of the entry's stored columns: prev_hash, kind, body, signer, signature, hash.

    SQLite stores a row's columns back to back in its record (the INTEGER PRIMARY KEY is
    the b-tree key, not a column), so the range is found from the body, which is unique.
    """
    assert data.count(entry.body) == 1
    body_at = data.find(entry.body)
    start = body_at - len(entry.kind) - 32
    end = body_at + len(entry.body) + len(entry.signer) + 64 + 32
    expected = (
        entry.prev_hash
        + entry.kind.encode()
        + entry.body
        + entry.signer.encode()
        + entry.signature
        + entry.hash
    )
    assert data[start:end] == expected, "record layout assumption broken"
    return start, end


def _verify_bytes(path: Path, data: bytes, checkpoint):
    path.write_bytes(data)
    return verify_entries(path, checkpoint=checkpoint)


def _verify_flipped(path: Path, offset: int, mask: int, data: bytes, checkpoint):
    """Flip one byte of the file at ``path`` (holding ``data``) in place, verify, restore."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, bytes([data[offset] ^ mask]), offset)
        try:
            return verify_entries(path, checkpoint=checkpoint)
        finally:
            os.pwrite(fd, data[offset : offset + 1], offset)
    finally:
        os.close(fd)


def test_every_byte_flip_in_an_entry_record_is_detected_at_that_index(tmp_path, seed):
    small = build_small_ledger(tmp_path)
    data = vacuum_copy(small.path, tmp_path / "copy.db")
    # the untouched copy verifies, against the original's checkpoint
    _, entries = _verify_bytes(tmp_path / "flip.db", data, small.checkpoint)
    assert [e.as_row() for e in entries] == [e.as_row() for e in small.entries]

    rng = np.random.default_rng(seed)
    flips = 0
    for entry in small.entries:
        start, end = _record_span(data, entry)
        for offset in range(start, end):
            mask = int(rng.integers(1, 256))
            with pytest.raises(LedgerIntegrityError) as info:
                _verify_flipped(tmp_path / "flip.db", offset, mask, data, small.checkpoint)
            assert info.value.index == entry.index, (offset, str(info.value))
            assert f"entry {entry.index}" in str(info.value)
            flips += 1
    assert flips > 1500


def test_byte_flips_elsewhere_are_detected_or_change_nothing(tmp_path, seed):
    small = build_small_ledger(tmp_path)
    data = vacuum_copy(small.path, tmp_path / "copy.db")
    record_bytes = set()
    for entry in small.entries:
        record_bytes.update(range(*_record_span(data, entry)))
    others = np.array([i for i in range(len(data)) if i not in record_bytes])
    rng = np.random.default_rng(seed)
    original = [e.as_row() for e in small.entries]
    detected = unchanged = 0
    _verify_bytes(tmp_path / "flip.db", data, small.checkpoint)
    for offset in rng.choice(others, size=400, replace=False):
        mask = int(rng.integers(1, 256))
        try:
            _, entries = _verify_flipped(
                tmp_path / "flip.db", int(offset), mask, data, small.checkpoint
            )
        except LedgerIntegrityError:
            detected += 1
        else:
            assert [e.as_row() for e in entries] == original, int(offset)
            unchanged += 1
    # most of a compact file is slack (unused page space), which may change freely
    assert detected + unchanged == 400 and unchanged > 0


@pytest.mark.parametrize("k", [1, 2, 5])
def test_truncated_tail_is_detected_by_the_checkpoint(small_ledger, k):
    n = len(small_ledger.entries)
    execute(small_ledger.path, ('DELETE FROM entries WHERE "index" >= ?', (n - k,)))
    with pytest.raises(LedgerIntegrityError, match="truncated") as info:
        verify(small_ledger.path)
    assert info.value.index == n - k
    with pytest.raises(LedgerIntegrityError):
        Ledger.open(small_ledger.path, signer=small_ledger.custodian)


def test_deleting_a_middle_row_is_an_index_gap(small_ledger):
    execute(small_ledger.path, ('DELETE FROM entries WHERE "index" = 2', ()))
    with pytest.raises(LedgerIntegrityError, match="index gap") as info:
        verify(small_ledger.path)
    assert info.value.index == 2


def test_rollback_to_an_old_copy_is_detected(small_ledger, tmp_path):
    backup = tmp_path / "backup.db"
    vacuum_copy(small_ledger.path, backup)  # 6 entries
    with Ledger.open(small_ledger.path, signer=small_ledger.custodian) as led:
        led.append("spend", {"epsilon": 1.0})
        led.append("spend", {"epsilon": 1.0})
    # restore the old file, keep the (newer) checkpoint beside it
    for suffix in ("-wal", "-shm"):
        small_ledger.path.with_name(small_ledger.path.name + suffix).unlink(missing_ok=True)
    shutil.copyfile(backup, small_ledger.path)
    with pytest.raises(LedgerIntegrityError, match="truncated") as info:
        verify(small_ledger.path)
    assert info.value.index == 6


def test_rollback_then_rewritten_history_is_detected(small_ledger, tmp_path):
    """Restore an old copy and append different entries past the checkpoint's length."""
    fork_dir = tmp_path / "fork"
    fork_dir.mkdir()
    fork = fork_dir / "ledger.db"
    vacuum_copy(small_ledger.path, fork)
    shutil.copyfile(checkpoint_path_for(small_ledger.path), checkpoint_path_for(fork))
    with Ledger.open(small_ledger.path, signer=small_ledger.custodian) as led:
        led.append("spend", {"epsilon": 1.0})
        led.append("spend", {"epsilon": 1.0})  # the checkpoint now records 8 entries
    with Ledger.open(fork, signer=small_ledger.custodian) as other:
        for _ in range(3):
            other.append("spend", {"epsilon": 0.01})  # a different history, 9 entries
    with pytest.raises(LedgerIntegrityError, match="rolled back") as info:
        verify(fork, checkpoint=checkpoint_path_for(small_ledger.path))
    assert info.value.index == 7


def test_foreign_ledger_is_rejected(small_ledger, tmp_path):
    other = build_small_ledger(tmp_path / "other")
    with pytest.raises(LedgerIntegrityError, match="another ledger") as info:
        verify(other.path, checkpoint=checkpoint_path_for(small_ledger.path))
    assert info.value.index == 0
    # swapped into place: the checkpoint beside it belongs to the first ledger
    for suffix in ("", "-wal", "-shm"):
        small_ledger.path.with_name(small_ledger.path.name + suffix).unlink(missing_ok=True)
    vacuum_copy(other.path, small_ledger.path)
    with pytest.raises(LedgerIntegrityError) as info:
        verify(small_ledger.path)
    assert info.value.index == 0


def test_foreign_ledger_with_its_own_checkpoint_is_caught_by_pinned_keys(small_ledger, tmp_path):
    other = build_small_ledger(tmp_path / "other")
    trusted = {
        "custodian": small_ledger.custodian.public_key,
        "party-1": small_ledger.party.public_key,
    }
    verify(small_ledger.path, trusted_keys=trusted)
    with pytest.raises(LedgerIntegrityError, match="trusted keys") as info:
        verify(other.path, trusted_keys=trusted)
    assert info.value.index == 0


def test_forged_entry_without_the_key_is_rejected(small_ledger):
    """Someone with write access to the file but no key appends a well-chained entry."""
    last = small_ledger.entries[-1]
    body = canonical_dumps(
        {
            "index": 6,
            "kind": "spend",
            "payload": {"epsilon": 2.0**-10},
            "signer": "custodian",
            "time": "2030-01-01T00:00:00.000000Z",
        }
    )
    forged_hash = entry_hash(last.hash, body)
    mallory = Signer.generate("custodian")
    row = (
        6,
        last.hash,
        "spend",
        body,
        "custodian",
        mallory.sign(ENTRY_DOMAIN + forged_hash),
        forged_hash,
    )
    execute(small_ledger.path, ("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)", row))
    with pytest.raises(LedgerIntegrityError, match="signature") as info:
        verify(small_ledger.path)
    assert info.value.index == 6


def test_entry_signed_after_revocation_is_rejected(small_ledger):
    with Ledger.open(small_ledger.path, signer=small_ledger.custodian) as led:
        led.revoke("party-1", reason="key lost")
        prev = led.head
    # party-1 still has its key and writes straight into the file
    from ppdp.ledger._chain import make_entry

    entry = make_entry(7, prev, "round", {"share": [1.0]}, small_ledger.party)
    execute(small_ledger.path, ("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)", entry.as_row()))
    with pytest.raises(LedgerIntegrityError, match="revoked") as info:
        verify(small_ledger.path)
    assert info.value.index == 7


def test_metadata_and_schema_tampering(small_ledger, tmp_path):
    copy = tmp_path / "meta.db"
    vacuum_copy(small_ledger.path, copy)
    execute(copy, ("UPDATE meta SET value = ? WHERE key = 'ledger_id'", ("0" * 32,)))
    with pytest.raises(LedgerIntegrityError) as info:
        verify(copy, checkpoint=small_ledger.checkpoint)
    assert info.value.index == 0

    vacuum_copy(small_ledger.path, copy.with_name("trigger.db"))
    execute(
        copy.with_name("trigger.db"),
        ("CREATE TRIGGER t AFTER INSERT ON entries BEGIN SELECT 1; END", ()),
    )
    with pytest.raises(LedgerIntegrityError, match="schema") as info:
        verify(copy.with_name("trigger.db"), checkpoint=small_ledger.checkpoint)
    assert info.value.index is None


@pytest.mark.parametrize(
    "content", [b"", b"not a database at all" * 100, b"SQLite format 3\x00" + bytes(200)]
)
def test_unreadable_files_fail_with_index_none(tmp_path, content):
    path = tmp_path / "junk.db"
    path.write_bytes(content)
    with pytest.raises(LedgerIntegrityError) as info:
        verify(path)
    assert info.value.index is None


def test_missing_checkpoint_is_refused_unless_one_is_given(small_ledger, tmp_path):
    cp = checkpoint_path_for(small_ledger.path)
    kept = tmp_path / "elsewhere.checkpoint"
    shutil.move(cp, kept)
    with pytest.raises(LedgerIntegrityError, match="missing") as info:
        verify(small_ledger.path)
    assert info.value.index is None
    assert verify(small_ledger.path, checkpoint=kept).length == 6


def test_tampered_checkpoint_is_rejected(small_ledger):
    cp = checkpoint_path_for(small_ledger.path)
    data = cp.read_bytes().replace(b'"length":6', b'"length":5')
    cp.write_bytes(data)
    with pytest.raises(LedgerIntegrityError, match="signature") as info:
        verify(small_ledger.path)
    assert info.value.index is None
    cp.write_bytes(b"{garbage")
    with pytest.raises(LedgerIntegrityError, match="unreadable"):
        verify(small_ledger.path)


def test_a_writer_notices_history_changed_under_it(small_ledger):
    with Ledger.open(small_ledger.path, signer=small_ledger.custodian) as led:
        execute(
            small_ledger.path, ('UPDATE entries SET signature = ? WHERE "index" = 5', (bytes(64),))
        )
        with pytest.raises(LedgerIntegrityError) as info:
            led.append("note", {})
        assert info.value.index == 5
        with pytest.raises(LedgerIntegrityError):  # stays refused
            led.entries()


def test_recreating_a_deleted_ledger_is_refused(small_ledger):
    for suffix in ("", "-wal", "-shm"):
        small_ledger.path.with_name(small_ledger.path.name + suffix).unlink(missing_ok=True)
    with pytest.raises(LedgerIntegrityError, match="deleted"):
        Ledger.create(small_ledger.path, signer=small_ledger.custodian, dataset_id="adult")
