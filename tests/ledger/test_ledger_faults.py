"""Faults from RELIABILITY.md (d): disk full, torn write-ahead log, clock skew."""

from __future__ import annotations

import shutil

import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import LedgerIntegrityError
from ppdp.ledger import Ledger, LedgerIOError, Signer, _chain, checkpoint_path_for, verify


def test_disk_full_records_nothing_and_releases_nothing(tmp_path):
    path = tmp_path / "b.db"
    acct = Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0))
    acct.spend(PrivacyBudget(0.1), mechanism="m")
    # cap the file at its current size: the next page SQLite needs cannot be had
    conn = acct.ledger._conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(LedgerIOError, match="full"):
        acct.spend(PrivacyBudget(0.1), mechanism="m", padding="x" * 20000)
    assert isinstance(LedgerIOError("x"), OSError)
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert acct.spent == PrivacyBudget(0.1)  # the failed spend charged nothing
    acct.spend(PrivacyBudget(0.2), mechanism="m")
    acct.close()
    assert verify(path).length == 3


def test_torn_write_ahead_log_leaves_each_entry_whole_or_absent(tmp_path):
    """A crash mid-commit: cut the log at many points inside the last transaction.

    The copy is taken before the writer checkpoints the log into the database and with the
    ledger's checkpoint one entry behind (as after a crash between commit and checkpoint).
    """
    signer = Signer.generate("custodian")
    path = tmp_path / "l.db"
    led = Ledger.create(path, signer=signer, dataset_id="d")
    led.append("note", {"n": 1})
    old_cp = checkpoint_path_for(path).read_bytes()
    led.append("note", {"n": 2, "pad": "y" * 500})
    wal = path.with_name(path.name + "-wal").read_bytes()
    db = path.read_bytes()
    led.close()
    page = int.from_bytes(wal[8:12], "big")
    frame = 24 + page
    # frames whose header holds a non-zero database size end a transaction (a commit)
    commit_ends = [
        32 + (i + 1) * frame
        for i in range((len(wal) - 32) // frame)
        if int.from_bytes(wal[32 + i * frame + 4 : 32 + i * frame + 8], "big") != 0
    ]
    last_start = commit_ends[-2]  # the last transaction is everything after this
    assert commit_ends[-1] == len(wal)
    cuts = sorted(
        {
            *range(last_start, len(wal) + 1, 97),
            last_start + 1,
            last_start + 24,
            len(wal) - 1,
            len(wal),
        }
    )
    seen = set()
    for cut in cuts:
        case = tmp_path / f"cut-{cut}"
        case.mkdir()
        (case / "l.db").write_bytes(db)
        (case / "l.db-wal").write_bytes(wal[:cut])
        (case / "l.db.checkpoint").write_bytes(old_cp)
        report = verify(case / "l.db")
        assert report.length in (2, 3)
        seen.add(report.length)
        with Ledger.open(case / "l.db", signer=signer) as again:  # no manual step
            assert [e.payload.get("n") for e in again.entries()[1:]] == [1, 2][: report.length - 1]
        shutil.rmtree(case)
    assert seen == {2, 3}


def test_clock_skew_does_not_matter(tmp_path, monkeypatch):
    times = iter(
        [
            "2031-01-02T00:00:00.000000Z",
            "2029-12-31T00:00:00.000000Z",
            "2030-06-01T00:00:00.000000Z",
            "1999-01-01T00:00:00.000000Z",
        ]
    )
    monkeypatch.setattr(_chain, "utc_now", lambda: next(times))
    with Ledger.create(tmp_path / "l.db", signer=Signer.generate("c"), dataset_id="d") as led:
        led.append("note", {"n": 1})
        led.append("note", {"n": 2})
    monkeypatch.undo()
    entries = Ledger.open(tmp_path / "l.db").entries()
    assert [e.payload.get("n") for e in entries] == [None, 1, 2]  # order from index alone
    assert verify(tmp_path / "l.db").length == 3


def test_open_waits_for_a_first_checkpoint_being_written(tmp_path):
    """A reader arriving between a writer's commit and its first checkpoint must not fail."""
    import threading
    import time

    path = tmp_path / "race.db"
    with Accountant.open(path, dataset_id="race", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.1), mechanism="first")
    cp = checkpoint_path_for(path)
    saved = cp.read_bytes()
    cp.unlink()  # as if the writer had not written it yet
    writer = threading.Timer(0.3, cp.write_bytes, args=(saved,))
    writer.start()
    start = time.monotonic()
    with Ledger.open(path) as led:
        assert len(led) == 2
    writer.join()
    assert time.monotonic() - start >= 0.25
    cp.unlink()  # and if it never comes, the rollback check still fires
    with pytest.raises(LedgerIntegrityError, match="checkpoint"):
        Ledger.open(path)
